//! A ZipNum block as the block cache holds it: packed, a few times smaller
//! than its text, and readable a chunk at a time.
//!
//! ```text
//! Packed::new(text)      the text cut after a line's LF every CHUNK bytes
//!   chunks[i]            its first line (bisected), its zstd frame, its size
//!   text()               every chunk inflated: the block's text, byte for byte
//!   covering(range, n)   the chunks from the one the range starts in to the
//!                        one it ends in, and the line past it (the next
//!                        chunk's first): what a lookup reads
//! ```
//!
//! Why: a cluster's blocks inflated are about five times its shards, so a
//! cache the size of the shards holds only a fifth of the blocks as text,
//! and traffic whose keys are spread over every block (a Zipf-shaped replay
//! workload: a few hot URLs, a long tail of others) keeps inflating whole
//! gzip members for the tail. Packed with zstd's fastest level (about 4.5
//! to 1 on CDXJ, whose digests and offsets do not compress) the same cache
//! holds them all, and a lookup inflates one chunk of 32 KiB (tens of
//! microseconds) where a gzip member is inflated whole from its start.
//! Packing costs about as much as inflating the member once, on the read
//! that brings the block in.

use std::cell::RefCell;
use std::io;

use crate::sorted::KeyRange;

/// Inflated bytes per chunk: one is what a lookup inflates.
pub const CHUNK: usize = 32 << 10;

/// zstd's level: its fastest of the positive ones, which packs CDXJ about
/// as well as gzip's default level does.
const LEVEL: i32 = 1;

struct Chunk {
    /// The chunk's first line, without its LF.
    first: Box<[u8]>,
    /// The chunk's text as one zstd frame.
    frame: Box<[u8]>,
    /// The chunk's text's length.
    size: usize,
}

/// A block's text, packed (see the module doc).
pub struct Packed {
    chunks: Vec<Chunk>,
    /// The text's length.
    len: usize,
}

thread_local! {
    /// A zstd decompression context per thread, made on first use: one
    /// made per chunk would cost as much as the chunk.
    static UNPACK: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

impl Packed {
    /// Packs `text`, a block's lines.
    pub fn new(text: &[u8]) -> io::Result<Packed> {
        Packed::with_chunk(text, CHUNK)
    }

    fn with_chunk(text: &[u8], chunk: usize) -> io::Result<Packed> {
        let mut z = zstd::bulk::Compressor::new(LEVEL)?;
        let mut chunks = Vec::with_capacity(text.len() / chunk + 1);
        let mut at = 0;
        while at < text.len() {
            let end = chunk_end(text, at, chunk);
            let part = &text[at..end];
            let first = memchr::memchr(b'\n', part).map_or(part, |i| &part[..i]);
            chunks.push(Chunk {
                first: first.into(),
                frame: z.compress(part)?.into(),
                size: part.len(),
            });
            at = end;
        }
        Ok(Packed {
            chunks,
            len: text.len(),
        })
    }

    /// The bytes it takes in memory.
    pub fn size(&self) -> usize {
        let per = std::mem::size_of::<Chunk>();
        std::mem::size_of::<Packed>()
            + self
                .chunks
                .iter()
                .map(|c| per + c.first.len() + c.frame.len())
                .sum::<usize>()
    }

    /// The block's text, whole.
    pub fn text(&self) -> io::Result<Vec<u8>> {
        self.unpack(0..self.chunks.len(), self.len)
    }

    /// The text a scan of `range` reads in this block: the chunks from
    /// the one holding the first line at or after the range's start (the
    /// lines before it are all below the start) up to the first whose
    /// next chunk starts past the range, then that next chunk's first line
    /// (it tells the scan to stop); or up to the block's end. Reading it
    /// gives the lines of the range that reading the whole block gives,
    /// and the line that ends them. `None` when that would be more than
    /// `up_to` bytes of text.
    pub fn covering(&self, range: &KeyRange, up_to: usize) -> io::Result<Option<Vec<u8>>> {
        // Chunks whose first line is below the start: the range can begin
        // in the last of them, not before; every later chunk starts at or
        // above the start.
        let below = self
            .chunks
            .partition_point(|c| c.first[..] < range.start[..]);
        let from = below.saturating_sub(1);
        let mut size = 0;
        let mut to = from;
        let mut stop = None;
        while to < self.chunks.len() {
            size += self.chunks[to].size;
            if size > up_to {
                return Ok(None);
            }
            to += 1;
            // A line past the range starts the next chunk: the range ends
            // in this one, or at that line.
            if let Some(next) = self.chunks.get(to) {
                if next.first[..] >= range.start[..] && range.is_past(&next.first) {
                    stop = Some(&next.first);
                    break;
                }
            }
        }
        let mut text = self.unpack(from..to, size)?;
        if let Some(line) = stop {
            // Chunks but the last end with an LF.
            text.extend_from_slice(line);
        }
        Ok(Some(text))
    }

    /// Chunks `which` inflated one after another (`size` bytes).
    fn unpack(&self, which: std::ops::Range<usize>, size: usize) -> io::Result<Vec<u8>> {
        let mut out = vec![0; size];
        UNPACK.with(|cell| {
            let mut cell = cell.borrow_mut();
            let z = match &mut *cell {
                Some(z) => z,
                None => cell.insert(zstd::bulk::Decompressor::new()?),
            };
            let mut at = 0;
            for c in &self.chunks[which] {
                let n = z.decompress_to_buffer(&c.frame[..], &mut out[at..at + c.size])?;
                if n != c.size {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a packed chunk inflated to the wrong size",
                    ));
                }
                at += n;
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// Where the chunk starting at `at` ends: after the last LF within
/// `chunk` bytes, else (one line longer than that) after the LF that ends
/// the line, else at the end of the text.
fn chunk_end(text: &[u8], at: usize, chunk: usize) -> usize {
    let limit = (at + chunk).min(text.len());
    if limit == text.len() {
        return limit;
    }
    match memchr::memrchr(b'\n', &text[at..limit]) {
        Some(i) => at + i + 1,
        None => memchr::memchr(b'\n', &text[limit..]).map_or(text.len(), |i| limit + i + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cluster::{piece, PIECE_UP_TO};
    use crate::sorted::MatchType;

    /// Lines with repeated keys, some longer than a chunk, the last with
    /// or without its LF.
    fn text(with_lf: bool) -> Vec<u8> {
        let mut lines: Vec<String> = (0..300)
            .map(|i| format!("k{:03} {i:04} {}", i / 4, "x".repeat(i % 7 * 5)))
            .collect();
        lines[100] = format!("k025 0100 {}", "y".repeat(300));
        let mut t = lines.join("\n").into_bytes();
        if with_lf {
            t.push(b'\n');
        }
        t
    }

    #[test]
    fn the_text_comes_back_byte_for_byte() {
        for with_lf in [true, false] {
            let t = text(with_lf);
            for chunk in [1, 7, 64, 200, 1 << 20] {
                let p = Packed::with_chunk(&t, chunk).unwrap();
                assert_eq!(p.text().unwrap(), t, "chunk {chunk}");
            }
        }
        assert_eq!(Packed::new(b"").unwrap().text().unwrap(), b"");
    }

    #[test]
    fn chunks_end_after_a_line() {
        let t = b"a\nbb\nccc\n";
        assert_eq!(chunk_end(t, 0, 3), 2);
        assert_eq!(chunk_end(t, 2, 1), 5);
        assert_eq!(chunk_end(t, 5, 100), 9);
        assert_eq!(chunk_end(b"abc", 0, 1), 3);
    }

    /// The oracle: the piece of the whole text, and of the chunks
    /// covering the range, are the same lines.
    #[test]
    fn the_covering_chunks_hold_the_piece_of_the_whole_text() {
        for with_lf in [true, false] {
            let t = text(with_lf);
            for chunk in [1, 30, 64, 500, 1 << 20] {
                let p = Packed::with_chunk(&t, chunk).unwrap();
                let keys = (0..80).map(|k| format!("k{k:03}")).chain([
                    "a".into(),
                    "z".into(),
                    "k025 0100".into(),
                ]);
                for key in keys {
                    for m in [MatchType::Exact, MatchType::Prefix] {
                        let range = KeyRange::new(key.as_bytes(), m);
                        let whole = piece(&t, &range).map(|r| t[r].to_vec());
                        let cover = p.covering(&range, PIECE_UP_TO).unwrap().unwrap();
                        let part = piece(&cover, &range).map(|r| cover[r].to_vec());
                        assert_eq!(part, whole, "{key} {m:?} chunk {chunk} lf {with_lf}");
                    }
                }
                let all = KeyRange::new(b"k", MatchType::Prefix);
                assert_eq!(p.covering(&all, PIECE_UP_TO).unwrap(), Some(t.clone()));
            }
        }
    }

    #[test]
    fn a_lookup_unpacks_a_chunk_or_two() {
        let t = text(true);
        let p = Packed::with_chunk(&t, 512).unwrap();
        let range = KeyRange::new(b"k040", MatchType::Exact);
        let cover = p.covering(&range, PIECE_UP_TO).unwrap().unwrap();
        assert!(cover.len() <= 3 * (512 + 330), "{}", cover.len());
        assert!(p.covering(&range, 10).unwrap().is_none());
        assert!(p.size() < t.len(), "{} {}", p.size(), t.len());
    }
}
