//! SHA-1 of many messages at once.
//!
//! One SHA-1 is a chain: each round waits for the one before, so a single
//! message keeps the CPU's SHA unit a fraction busy (`sha1rnds4` has a
//! latency of several cycles but starts one every cycle or two). Indexing
//! hashes one payload per record, and records are independent, so
//! [`Lanes`] runs four messages through the SHA extensions in lockstep;
//! a message leaves its lane as soon as it is done and the caller puts the
//! next one in, while the others go on, so a long message does not leave
//! three lanes idle. On a CPU with SHA extensions four full lanes have
//! about 2.5 times the throughput of one message at a time
//! (`cargo bench --bench sha1_batch`); elsewhere each message goes through
//! the `sha1` crate. [`sha1_batch`] hashes a list of messages that way.
//!
//! The lockstep compression is the standard SHA-NI block function with its
//! instructions interleaved across lanes; the final blocks (the tail and
//! its padding) go through the same code one lane wide. Every digest equals
//! the `sha1` crate's (tests below, on every length around the block and
//! padding boundaries, and a property test on random batches).

#![allow(unsafe_code)]

use sha1::{Digest as _, Sha1};

/// SHA-1 of `data`: the `sha1` crate, which uses the SHA extensions when
/// the CPU has them.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    Sha1::digest(data).into()
}

/// The SHA-1 of each message, in order, into `out` (cleared first).
pub fn sha1_batch(msgs: &[&[u8]], out: &mut Vec<[u8; 20]>) {
    out.clear();
    out.resize(msgs.len(), [0; 20]);
    let mut lanes = Lanes::new();
    let mut next = 0;
    let mut done = Vec::new();
    loop {
        while lanes.has_room() && next < msgs.len() {
            lanes.start(next);
            next += 1;
        }
        if lanes.is_empty() {
            return;
        }
        lanes.advance(|i| msgs[i], &mut done);
        for (i, digest) in done.drain(..) {
            out[i] = digest;
        }
    }
}

/// Messages being hashed together, four at most. The caller owns the
/// messages and names each by a number of its choice (its *slot*); it
/// passes their bytes to every [`Lanes::advance`], which must be the same
/// bytes from [`Lanes::start`] until the slot's digest comes out.
pub struct Lanes {
    lanes: Vec<Lane>,
    simd: bool,
}

/// A message in a lane: the caller's slot, the state, and how many of its
/// bytes have been compressed (a multiple of 64).
struct Lane {
    slot: usize,
    state: [u32; 5],
    done: usize,
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes::new()
    }
}

impl Lanes {
    /// Messages hashed in lockstep at most.
    pub const WIDTH: usize = 4;

    pub fn new() -> Lanes {
        #[cfg(target_arch = "x86_64")]
        let simd = x86::supported();
        #[cfg(not(target_arch = "x86_64"))]
        let simd = false;
        Lanes {
            lanes: Vec::with_capacity(Self::WIDTH),
            simd,
        }
    }

    /// Whether a message can start.
    pub fn has_room(&self) -> bool {
        self.lanes.len() < Self::WIDTH
    }

    /// Whether no message is being hashed.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Starts hashing the message of `slot` (the caller keeps its bytes
    /// until its digest comes out). Needs [`Lanes::has_room`].
    pub fn start(&mut self, slot: usize) {
        debug_assert!(self.has_room());
        self.lanes.push(Lane {
            slot,
            state: H0,
            done: 0,
        });
    }

    /// Moves the messages on; `data(slot)` gives a slot's bytes. The slots
    /// whose message is done are appended to `done` with their digests,
    /// and their lanes are free again. When some are done, nothing else is
    /// compressed in this call, so that the caller can fill the free lanes
    /// before the others go on.
    pub fn advance<'d>(
        &mut self,
        data: impl Fn(usize) -> &'d [u8],
        done: &mut Vec<(usize, [u8; 20])>,
    ) {
        let before = done.len();
        if !self.simd {
            done.extend(self.lanes.drain(..).map(|l| (l.slot, sha1(data(l.slot)))));
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            self.lanes.retain(|l| {
                let m = data(l.slot);
                let open = m.len() - l.done >= 64;
                if !open {
                    done.push((l.slot, x86::finish(l.state, &m[l.done..], m.len())));
                }
                open
            });
            if done.len() > before {
                return;
            }
            // SAFETY (every arm): `simd` says the CPU has the extensions.
            match self.lanes.len() {
                0 => {}
                1 => unsafe { x86::advance::<1>(&mut self.lanes, &data) },
                2 => unsafe { x86::advance::<2>(&mut self.lanes, &data) },
                3 => unsafe { x86::advance::<3>(&mut self.lanes, &data) },
                _ => unsafe { x86::advance::<{ Lanes::WIDTH }>(&mut self.lanes, &data) },
            }
        }
    }
}

/// The SHA-1 initial state.
const H0: [u32; 5] = [
    0x6745_2301,
    0xEFCD_AB89,
    0x98BA_DCFE,
    0x1032_5476,
    0xC3D2_E1F0,
];

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Lane;

    pub fn supported() -> bool {
        is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse2")
            && is_x86_feature_detected!("ssse3")
            && is_x86_feature_detected!("sse4.1")
    }

    /// Compresses the first `N` lanes as far as the shortest goes in whole
    /// blocks.
    ///
    /// # Safety
    /// As [`compress`].
    pub(super) unsafe fn advance<'d, const N: usize>(
        lanes: &mut [Lane],
        msg: &impl Fn(usize) -> &'d [u8],
    ) {
        let lanes = &mut lanes[..N];
        let blocks = lanes
            .iter()
            .map(|l| (msg(l.slot).len() - l.done) / 64)
            .min()
            .unwrap_or(0);
        let mut states = [[0; 5]; N];
        let mut data: [&[u8]; N] = [&[]; N];
        for ((st, d), l) in states.iter_mut().zip(&mut data).zip(&*lanes) {
            *st = l.state;
            *d = &msg(l.slot)[l.done..l.done + blocks * 64];
        }
        // SAFETY: passed on from the caller.
        unsafe { compress::<N>(&mut states, data) };
        for (l, st) in lanes.iter_mut().zip(states) {
            l.state = st;
            l.done += blocks * 64;
        }
    }

    /// Compresses the tail (under 64 bytes) and the padding of a message
    /// of `total` bytes, and returns the digest.
    pub(super) fn finish(state: [u32; 5], tail: &[u8], total: usize) -> [u8; 20] {
        let mut buf = [0u8; 128];
        buf[..tail.len()].copy_from_slice(tail);
        buf[tail.len()] = 0x80;
        let n = if tail.len() + 9 <= 64 { 64 } else { 128 };
        buf[n - 8..n].copy_from_slice(&((total as u64).wrapping_mul(8)).to_be_bytes());
        let mut st = [state];
        // SAFETY: only reached through `Lanes` when `supported()` held.
        unsafe { compress::<1>(&mut st, [&buf[..n]]) };
        let mut digest = [0; 20];
        for (d, w) in digest.chunks_exact_mut(4).zip(st[0]) {
            d.copy_from_slice(&w.to_be_bytes());
        }
        digest
    }

    /// Compresses `N` messages of the same whole number of blocks in
    /// lockstep, each into its own state.
    ///
    /// # Safety
    /// The CPU must have the SHA, SSE2, SSSE3 and SSE4.1 extensions.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn compress<const N: usize>(states: &mut [[u32; 5]; N], data: [&[u8]; N]) {
        let bswap = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
        let blocks = data.iter().map(|d| d.len() / 64).min().unwrap_or(0);
        let mut abcd = [_mm_setzero_si128(); N];
        let mut e0 = [_mm_setzero_si128(); N];
        for s in 0..N {
            let [a, b, c, d, e] = states[s].map(|w| w as i32);
            abcd[s] = _mm_set_epi32(a, b, c, d);
            e0[s] = _mm_set_epi32(e, 0, 0, 0);
        }
        for b in 0..blocks {
            let abcd_save = abcd;
            let e_save = e0;
            // The message schedule, four words per vector, a ring of four.
            let mut w = [[_mm_setzero_si128(); 4]; N];
            for s in 0..N {
                let block = &data[s][b * 64..b * 64 + 64];
                for (j, v) in w[s].iter_mut().enumerate() {
                    // SAFETY: `block` has 64 bytes; the load is unaligned.
                    let raw = unsafe { _mm_loadu_si128(block[16 * j..].as_ptr().cast()) };
                    *v = _mm_shuffle_epi8(raw, bswap);
                }
            }
            let mut prev = [_mm_setzero_si128(); N];
            for s in 0..N {
                let e = _mm_add_epi32(e0[s], w[s][0]);
                prev[s] = abcd[s];
                abcd[s] = _mm_sha1rnds4_epu32(abcd[s], e, 0);
            }
            // Four rounds per step; the function and constant change every
            // five steps (twenty rounds).
            macro_rules! step {
                ($i:literal, $f:literal) => {
                    for s in 0..N {
                        if $i >= 4 {
                            let x = _mm_sha1msg1_epu32(w[s][$i % 4], w[s][($i + 1) % 4]);
                            let x = _mm_xor_si128(x, w[s][($i + 2) % 4]);
                            w[s][$i % 4] = _mm_sha1msg2_epu32(x, w[s][($i + 3) % 4]);
                        }
                        let e = _mm_sha1nexte_epu32(prev[s], w[s][$i % 4]);
                        prev[s] = abcd[s];
                        abcd[s] = _mm_sha1rnds4_epu32(abcd[s], e, $f);
                    }
                };
            }
            step!(1, 0);
            step!(2, 0);
            step!(3, 0);
            step!(4, 0);
            step!(5, 1);
            step!(6, 1);
            step!(7, 1);
            step!(8, 1);
            step!(9, 1);
            step!(10, 2);
            step!(11, 2);
            step!(12, 2);
            step!(13, 2);
            step!(14, 2);
            step!(15, 3);
            step!(16, 3);
            step!(17, 3);
            step!(18, 3);
            step!(19, 3);
            for s in 0..N {
                e0[s] = _mm_sha1nexte_epu32(prev[s], e_save[s]);
                abcd[s] = _mm_add_epi32(abcd[s], abcd_save[s]);
            }
        }
        for s in 0..N {
            states[s] = [
                _mm_extract_epi32(abcd[s], 3) as u32,
                _mm_extract_epi32(abcd[s], 2) as u32,
                _mm_extract_epi32(abcd[s], 1) as u32,
                _mm_extract_epi32(abcd[s], 0) as u32,
                _mm_extract_epi32(e0[s], 3) as u32,
            ];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    #[test]
    fn every_length_around_the_block_and_padding_boundaries() {
        let data = bytes(1 << 12);
        let lens: Vec<usize> = (0..=200).chain([1000, 4095, 4096]).collect();
        // Lanes of different lengths, refilled at different times.
        let msgs: Vec<&[u8]> = lens.iter().map(|&n| &data[..n]).collect();
        let mut out = Vec::new();
        sha1_batch(&msgs, &mut out);
        for (m, d) in msgs.iter().zip(&out) {
            assert_eq!(*d, sha1(m), "length {}", m.len());
        }
        // The same lengths in reverse order, so long messages wait on short.
        let rev: Vec<&[u8]> = msgs.iter().rev().copied().collect();
        sha1_batch(&rev, &mut out);
        for (m, d) in rev.iter().zip(&out) {
            assert_eq!(*d, sha1(m), "length {}", m.len());
        }
    }

    #[test]
    fn empty_and_single_batches() {
        let mut out = vec![[1; 20]];
        sha1_batch(&[], &mut out);
        assert!(out.is_empty());
        sha1_batch(&[b"abc"], &mut out);
        assert_eq!(out, [sha1(b"abc")]);
    }

    proptest! {
        #[test]
        fn batch_equals_one_at_a_time(
            msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..700), 0..12),
        ) {
            let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
            let mut out = Vec::new();
            sha1_batch(&refs, &mut out);
            prop_assert_eq!(out, refs.iter().map(|m| sha1(m)).collect::<Vec<_>>());
        }
    }
}
