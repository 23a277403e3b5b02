//! Batches of queries (`lookup --keys`, `mementomap lookup -`): read a
//! chunk of lines, answer its parts on every core, write the answers in
//! input order.
//!
//! Answers wait for the parts before them to be written. A part's answers
//! go to a [`Spill`], which holds a little in memory and moves to an
//! unnamed temporary file past that, so the memory of a batch stays
//! bounded however large its answers are (a key with a million captures
//! costs a file, not a million lines of memory).

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Seek, Write};

/// Queries read per chunk.
pub const CHUNK: usize = 1 << 16;

/// Up to `n` lines of `rdr` without their line ends; fewer at the end of
/// the input, none when it is exhausted.
pub fn read_chunk(rdr: &mut dyn BufRead, n: usize) -> std::io::Result<Vec<String>> {
    let mut out = Vec::with_capacity(n.min(CHUNK));
    let mut line = String::new();
    while out.len() < n {
        line.clear();
        if rdr.read_line(&mut line)? == 0 {
            break;
        }
        out.push(line.trim_end_matches(['\n', '\r']).to_string());
    }
    Ok(out)
}

/// Answers `queries` on `pool`, `part` queries per task: `answer` appends
/// the answers of a run of queries to a buffer and says whether it found
/// something. Gives the buffers in input order and whether any query
/// found something.
pub fn answer_in_order<B: Default + Send, E: Send>(
    pool: &rayon::ThreadPool,
    queries: &[String],
    part: usize,
    answer: impl Fn(&[String], &mut B) -> Result<bool, E> + Sync,
) -> Result<(Vec<B>, bool), E> {
    use rayon::prelude::*;
    let parts: Vec<Result<(B, bool), E>> = pool.install(|| {
        queries
            .par_chunks(part.max(1))
            .map(|qs| {
                let mut buf = B::default();
                let hit = answer(qs, &mut buf)?;
                Ok((buf, hit))
            })
            .collect()
    });
    let mut any = false;
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let (buf, hit) = p?;
        any |= hit;
        out.push(buf);
    }
    Ok((out, any))
}

/// Bytes a [`Spill`] holds in memory before it moves to a file.
pub const SPILL_AT: usize = 1 << 20;

/// A buffer of answers waiting for their turn: in memory up to
/// [`SPILL_AT`] bytes, then in an unnamed temporary file (deleted by the
/// system when dropped, even if the process is killed).
#[derive(Default)]
pub struct Spill {
    mem: Vec<u8>,
    file: Option<BufWriter<File>>,
}

impl Spill {
    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.mem.is_empty() && self.file.is_none()
    }

    /// Copies everything written, in order, to `out`.
    pub fn copy_to(self, out: &mut (impl Write + ?Sized)) -> io::Result<()> {
        match self.file {
            None => out.write_all(&self.mem),
            Some(w) => {
                let mut f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
                f.rewind()?;
                io::copy(&mut f, out).map(drop)
            }
        }
    }
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(f) = &mut self.file {
            return f.write(buf);
        }
        if self.mem.len() + buf.len() <= SPILL_AT {
            self.mem.extend_from_slice(buf);
            return Ok(buf.len());
        }
        let mut f = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
        f.write_all(&self.mem)?;
        self.mem = Vec::new();
        f.write_all(buf)?;
        self.file = Some(f);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_keep_every_byte_in_order() {
        let mut s = Spill::default();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(SPILL_AT / 3 + 7).collect();
        let mut want = Vec::new();
        for _ in 0..5 {
            s.write_all(&chunk).unwrap();
            want.extend_from_slice(&chunk);
        }
        assert!(s.file.is_some(), "past the bound it is a file");
        assert!(s.mem.is_empty());
        let mut got = Vec::new();
        s.copy_to(&mut got).unwrap();
        assert_eq!(got, want);
        let mut small = Spill::default();
        small.write_all(b"abc").unwrap();
        assert!(small.file.is_none());
        let mut got = Vec::new();
        small.copy_to(&mut got).unwrap();
        assert_eq!(got, b"abc");
    }
}
