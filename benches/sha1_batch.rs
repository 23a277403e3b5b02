//! SHA-1 one message at a time (the `sha1` crate) against
//! `capture::hash::sha1_batch` (four lanes in lockstep through the SHA
//! extensions, each refilled as its message is done), on the same messages: payload-sized ones drawn from a
//! heavy-tailed distribution like that of web captures, then equal 64 KiB
//! ones. Prints throughput and the ratio, and checks that the digests are
//! equal. Not a criterion bench: one timed pass, median of five.
//!
//! Usage: `cargo bench --bench sha1_batch [-- MEGABYTES]` (default 256).

use std::time::Instant;

use ukvs::capture::hash::{sha1, sha1_batch};

/// Messages of about `total` bytes: sizes from 200 bytes to 2 MB, most
/// small, most bytes in the large ones (x = 200 * 10^(4u^2)).
fn heavy_tailed(data: &[u8], total: usize) -> Vec<&[u8]> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    let mut used = 0;
    while used < total {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        let len = (200.0 * 10f64.powf(4.0 * u * u)) as usize;
        let start = (state as usize) % (data.len() - len);
        out.push(&data[start..start + len]);
        used += len;
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(label: &str, msgs: &[&[u8]]) {
    let bytes: usize = msgs.iter().map(|m| m.len()).sum();
    let (mut one, mut batch) = (Vec::new(), Vec::new());
    let mut digests = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let singles: Vec<[u8; 20]> = msgs.iter().map(|m| sha1(m)).collect();
        one.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        // Lanes refilled message after message, as `ukvs index` runs them.
        sha1_batch(msgs, &mut digests);
        batch.push(t.elapsed().as_secs_f64());
        assert!(digests == singles, "batch digests differ");
    }
    let (one, batch) = (median(one), median(batch));
    let gbs = |s: f64| bytes as f64 / s / 1e9;
    println!(
        "{label}: {} messages, {} MB: one at a time {:.2} GB/s, four lanes {:.2} GB/s: {:.2}x",
        msgs.len(),
        bytes >> 20,
        gbs(one),
        gbs(batch),
        one / batch
    );
}

fn main() {
    let mb: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    let data: Vec<u8> = (0..(64u32 << 20))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    measure("heavy-tailed sizes", &heavy_tailed(&data, mb << 20));
    let equal: Vec<&[u8]> = data
        .chunks(64 << 10)
        .cycle()
        .take((mb << 20) / (64 << 10))
        .collect();
    measure("64 KiB each", &equal);
}
