//! Batches of queries (`lookup --keys`, `mementomap lookup -`): read a
//! chunk of lines, answer its parts on every core, write the answers in
//! input order.

use std::io::BufRead;

/// Queries read per chunk.
pub(super) const CHUNK: usize = 1 << 16;

/// Up to `n` lines of `rdr` without their line ends; fewer at the end of
/// the input, none when it is exhausted.
pub(super) fn read_chunk(rdr: &mut dyn BufRead, n: usize) -> std::io::Result<Vec<String>> {
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
pub(super) fn answer_in_order<E: Send>(
    pool: &rayon::ThreadPool,
    queries: &[String],
    part: usize,
    answer: impl Fn(&[String], &mut Vec<u8>) -> Result<bool, E> + Sync,
) -> Result<(Vec<Vec<u8>>, bool), E> {
    use rayon::prelude::*;
    let parts: Vec<Result<(Vec<u8>, bool), E>> = pool.install(|| {
        queries
            .par_chunks(part.max(1))
            .map(|qs| {
                let mut buf = Vec::new();
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
