//! K-way merge of sorted line streams.
//!
//! [`Merge`] reads one line ahead per input and repeatedly yields the
//! smallest, so memory is O(k) lines whatever the input sizes. Equal lines
//! come out in input order (the heap orders by `(line, input index)`),
//! which makes the output bytes independent of how the inputs were made.
//!
//! Every input is checked as it is read: a line smaller than the previous
//! line of the same input stops the merge with [`Error::OutOfOrder`] naming
//! the input and the line number, because merging an unsorted input would
//! silently produce an unsorted output.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, BufRead};

use super::lines::{is_header, Numbered};
use super::Error;

/// One input of a merge.
///
/// The line an input has ready lives in the heap, not here: the heap owns
/// the bytes it compares, and buffers move between the heap, the caller's
/// view and `spare` without being copied or reallocated.
#[derive(Debug)]
struct Input<R> {
    lines: Numbered<R>,
    /// Scratch buffer for the next line, recycled from the last output.
    spare: Vec<u8>,
}

impl<R: BufRead> Input<R> {
    /// Reads the next line into `buf` without its LF; false at the end.
    fn read(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        let lines = &mut self.lines;
        lines.read(buf).map_err(|err| Error::Io {
            name: lines.name().to_string(),
            line: lines.line(),
            at: lines.at(),
            err,
        })
    }
}

/// A streaming k-way merge of sorted inputs.
///
/// Not an `Iterator`: [`Merge::next`] lends a view into a buffer that the
/// next call recycles, so a merge of billions of lines allocates nothing
/// per line. A binary heap costs O(log k) comparisons a line, which for
/// the fan-ins used here (at most [`crate::sorted::MAX_FAN_IN`] runs, or a
/// handful of files) is as good as a loser tree and much simpler.
#[derive(Debug)]
pub struct Merge<R> {
    inputs: Vec<Input<R>>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    /// The line handed out last and the input it came from; its input is
    /// advanced on the next call.
    current: Option<(Vec<u8>, usize)>,
    headers: Vec<Vec<u8>>,
    /// Every input's headers, in input order, with the input's name.
    input_headers: Vec<(Vec<u8>, String)>,
}

impl<R: BufRead> Merge<R> {
    /// Starts a merge of `(name, reader)` inputs. With `split_headers`, the
    /// leading header lines of every input are set aside (see
    /// [`Merge::headers`]) instead of being merged as data.
    pub fn new(
        inputs: impl IntoIterator<Item = (String, R)>,
        split_headers: bool,
    ) -> Result<Merge<R>, Error> {
        let mut merge = Merge {
            inputs: Vec::new(),
            heap: BinaryHeap::new(),
            current: None,
            headers: Vec::new(),
            input_headers: Vec::new(),
        };
        // Prime every input with its first data line; headers are only
        // recognised above the data, as a `!` line further down is data
        // (and out of order, which the merge then reports).
        for (i, (name, rdr)) in inputs.into_iter().enumerate() {
            let mut input = Input {
                lines: Numbered::new(name, rdr),
                spare: Vec::new(),
            };
            let mut line = Vec::new();
            let mut more = input.read(&mut line)?;
            while more && split_headers && is_header(&line) {
                merge
                    .input_headers
                    .push((line.clone(), input.lines.name().to_string()));
                merge.headers.push(std::mem::take(&mut line));
                more = input.read(&mut line)?;
            }
            if more {
                merge.heap.push(Reverse((line, i)));
            }
            merge.inputs.push(input);
        }
        // Byte order keeps the combined file sorted (headers first) and
        // makes the header block independent of the order of the inputs.
        merge.headers.sort();
        merge.headers.dedup();
        Ok(merge)
    }

    /// Header lines of all inputs, in byte order, duplicates dropped.
    pub fn headers(&self) -> &[Vec<u8>] {
        &self.headers
    }

    /// The header lines of every input as read, in input order, each with
    /// the name of its input (to check that the inputs agree).
    pub fn input_headers(&self) -> &[(Vec<u8>, String)] {
        &self.input_headers
    }

    /// The next line in byte order (without LF), or `None` at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<&[u8]>, Error> {
        // The line handed out last is still borrowed by no one now: advance
        // its input, checking the new line against it, and keep its buffer
        // for that input's next read.
        if let Some((line, i)) = self.current.take() {
            if let Some(input) = self.inputs.get_mut(i) {
                let mut buf = std::mem::take(&mut input.spare);
                if input.read(&mut buf)? {
                    if buf < line {
                        return Err(Error::OutOfOrder {
                            name: input.lines.name().to_string(),
                            line: input.lines.line(),
                            previous: String::from_utf8_lossy(&line).into_owned(),
                            got: String::from_utf8_lossy(&buf).into_owned(),
                        });
                    }
                    self.heap.push(Reverse((buf, i)));
                }
                input.spare = line;
            }
        }
        match self.heap.pop() {
            Some(Reverse(item)) => {
                self.current = Some(item);
                Ok(self.current.as_ref().map(|(l, _)| &l[..]))
            }
            None => Ok(None),
        }
    }

    /// Writes every remaining line, LF-terminated, to `wtr`; with `unique`,
    /// a line equal to the one before it is dropped. Returns the number of
    /// lines written.
    pub fn write_to(&mut self, wtr: &mut impl io::Write, unique: bool) -> Result<u64, Error> {
        // `--unique` compares with the last line written, whatever input it
        // came from: equal lines from different inputs are adjacent here.
        let mut last: Option<Vec<u8>> = None;
        let mut count = 0;
        let out_err = |err| Error::Write {
            name: "the output".into(),
            err,
        };
        while let Some(line) = self.next()? {
            if unique {
                if last.as_deref() == Some(line) {
                    continue;
                }
                let l = last.get_or_insert_with(Vec::new);
                l.clear();
                l.extend_from_slice(line);
            }
            wtr.write_all(line).map_err(out_err)?;
            wtr.write_all(b"\n").map_err(out_err)?;
            count += 1;
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge_all(inputs: &[&[u8]]) -> Result<Vec<u8>, Error> {
        let mut m = Merge::new(
            inputs
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("in{i}"), *d)),
            true,
        )?;
        let mut out = Vec::new();
        for h in m.headers().to_vec() {
            out.extend_from_slice(&h);
            out.push(b'\n');
        }
        m.write_to(&mut out, false)?;
        Ok(out)
    }

    #[test]
    fn merges_and_combines_headers() {
        let out = merge_all(&[b"!h\na\nc", b"!g\n!h\nb\nd\n", b""]).unwrap();
        assert_eq!(out, b"!g\n!h\na\nb\nc\nd\n");
    }

    #[test]
    fn unsorted_input_names_file_and_line() {
        let err = merge_all(&[b"a\nb\n", b"x\nc\n"]).unwrap_err();
        match err {
            Error::OutOfOrder { name, line, .. } => {
                assert_eq!(name, "in1");
                assert_eq!(line, 2);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
