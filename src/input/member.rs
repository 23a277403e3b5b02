//! One gzip member decoded in a single call, when all its bytes are in
//! memory (a mapped file, or a buffer that holds it whole).
//!
//! A WARC or ARC file of one record per member is mostly small members,
//! and decoding each through a streaming decoder costs more than the
//! inflating itself: the output arrives in read-sized pieces, each ending
//! in the decoder's slow path and a copy into its window. libdeflate
//! decodes a whole member into one buffer (about twice as fast as zlib on
//! the literal-heavy text of web pages) and says how many input bytes the
//! deflate stream took, which is what gives the member's stored length.
//!
//! [`member`] handles only the clean case: a well-formed gzip header, a
//! deflate stream that ends within the bytes given, a trailer whose CRC-32
//! and size agree. Anything else (damage, a member cut off by the end of
//! the bytes, a header CRC, an output over the caller's limit) returns
//! `None` with nothing consumed, and the caller decodes the member the
//! streaming way, which tells damage apart and reports it.

// The `unsafe` blocks of this module call libdeflate's C API; each says
// why the call is sound.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ptr::NonNull;

use libdeflate_sys as ld;

/// Output room given to a member before its size is known; a member that
/// inflates to more is decoded again with twice the room.
const FIRST_ROOM: usize = 256 << 10;

/// A libdeflate decompressor: about 11 KB of tables, allocated once per
/// thread and reused for every member.
struct Decompressor(NonNull<ld::libdeflate_decompressor>);

impl Decompressor {
    fn new() -> Option<Decompressor> {
        // SAFETY: takes no arguments; returns null only when allocation
        // fails, which `NonNull::new` turns into `None`.
        NonNull::new(unsafe { ld::libdeflate_alloc_decompressor() }).map(Decompressor)
    }

    /// Inflates the raw deflate stream at the start of `input` into the
    /// spare capacity of `out` (which must be empty): the input bytes it
    /// took, or the libdeflate result code that stopped it.
    fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, ld::libdeflate_result> {
        debug_assert!(out.is_empty());
        let room = out.spare_capacity_mut();
        let room_len = room.len();
        let (mut used, mut made) = (0usize, 0usize);
        // SAFETY: the decompressor is live (freed only on drop). `input`
        // is read within its length; libdeflate writes at most
        // `room.len()` bytes into `room`, reading back only bytes it wrote
        // itself (matches copy from the output already made), so the
        // uninitialised capacity is never read. On success `made` bytes
        // from the start of `room` are written and `made <= room.len()`,
        // which makes `set_len(made)` sound; on failure the length stays 0.
        let rc = unsafe {
            ld::libdeflate_deflate_decompress_ex(
                self.0.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                room.as_mut_ptr().cast(),
                room.len(),
                &mut used,
                &mut made,
            )
        };
        if rc != ld::libdeflate_result_LIBDEFLATE_SUCCESS || made > room_len {
            return Err(rc);
        }
        // SAFETY: see above: `made` bytes were written by libdeflate.
        unsafe { out.set_len(made) };
        Ok(used)
    }
}

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: allocated by `libdeflate_alloc_decompressor`, freed once.
        unsafe { ld::libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

thread_local! {
    static DECOMPRESSOR: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
}

/// Length of the gzip header at the start of `b` (RFC 1952: the fixed 10
/// bytes, then the optional extra field, name and comment), or `None`
/// when it is not one this path takes (not deflate, reserved flags, a
/// header CRC) or does not end within `b`.
fn header_len(b: &[u8]) -> Option<usize> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if b.len() < 10 || b[..3] != [0x1f, 0x8b, 8] || b[3] & (0xe0 | FHCRC) != 0 {
        return None;
    }
    let flags = b[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let xlen = u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]) as usize;
        at += 2 + xlen;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += memchr::memchr(0, b.get(at..)?)? + 1;
        }
    }
    (at <= b.len()).then_some(at)
}

/// Decodes the gzip member at the start of `data` into `out` (empty on
/// entry), growing it as needed up to `max` bytes; returns the member's
/// length in `data`. `None` (and `out` empty again) when the member is not
/// a clean one held whole by `data` or inflates to more than `max`: decode
/// it with a streaming decoder instead, which reports what is wrong.
pub(crate) fn member(data: &[u8], out: &mut Vec<u8>, max: usize) -> Option<usize> {
    let head = header_len(data)?;
    let deflated = &data[head..];
    let used = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Decompressor::new();
        }
        let d = slot.as_mut()?;
        let mut room = out.capacity().max(FIRST_ROOM).min(max);
        loop {
            out.clear();
            out.reserve_exact(room);
            match d.deflate(deflated, out) {
                Ok(used) => return Some(used),
                Err(ld::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE) if room < max => {
                    room = room.saturating_mul(2).min(max);
                }
                Err(_) => return None,
            }
        }
    });
    let checked = used.and_then(|used| {
        let trailer = deflated.get(used..used + 8)?;
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let mut sum = flate2::Crc::new();
        sum.update(out);
        let whole = sum.sum() == crc && size == out.len() as u32 && out.len() <= max;
        whole.then_some(head + used + 8)
    });
    if checked.is_none() {
        out.clear();
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8], name: Option<&str>) -> Vec<u8> {
        let mut b = flate2::GzBuilder::new();
        if let Some(n) = name {
            b = b.filename(n).comment("c").extra(vec![1, 2, 3]);
        }
        let mut w = b.write(Vec::new(), flate2::Compression::default());
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    /// Text that compresses and does not: literals, matches and a large
    /// output that needs more than the first room.
    fn sample(n: usize) -> Vec<u8> {
        let mut x = 12345u32;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if i % 3 == 0 {
                    b"WARC/1.0\r\n"[i % 10]
                } else {
                    b'a' + (x >> 16) as u8 % 26
                }
            })
            .collect()
    }

    #[test]
    fn a_member_decodes_and_gives_its_length() {
        for (n, name) in [
            (0, None),
            (1000, Some("x.warc")),
            (FIRST_ROOM * 3 + 7, None),
        ] {
            let text = sample(n);
            let mut data = gzip(&text, name);
            let len = data.len();
            data.extend_from_slice(&gzip(b"next", None));
            let mut out = Vec::new();
            assert_eq!(member(&data, &mut out, usize::MAX), Some(len), "{n} bytes");
            assert_eq!(out, text);
        }
    }

    #[test]
    fn anything_but_a_clean_whole_member_is_left_to_the_stream_decoder() {
        let text = sample(5000);
        let good = gzip(&text, Some("n"));
        let mut out = Vec::new();
        // Cut short anywhere: in the header, the stream or the trailer.
        for cut in [5, 12, 40, good.len() / 2, good.len() - 4, good.len() - 1] {
            assert_eq!(
                member(&good[..cut], &mut out, usize::MAX),
                None,
                "cut at {cut}"
            );
            assert!(out.is_empty());
        }
        // A wrong CRC, a wrong size, a flipped bit in the stream.
        for at in [good.len() - 8, good.len() - 1, good.len() / 2] {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert_eq!(
                member(&bad, &mut out, usize::MAX),
                None,
                "byte {at} changed"
            );
        }
        // A header CRC (FHCRC) is not checked here.
        let mut hcrc = good.clone();
        hcrc[3] |= 2;
        assert_eq!(member(&hcrc, &mut out, usize::MAX), None);
        // Over the limit.
        assert_eq!(member(&good, &mut out, 4999), None);
        assert_eq!(member(&good, &mut out, 5000), Some(good.len()));
        assert_eq!(out, text);
    }
}
