//! The record-reading driver shared by the archive formats.
//!
//! Every archive reader (ARC, WARC) is the same machine around a
//! different step: a buffered [`Src`] with exact offsets, settings, a queue
//! of non-fatal errors that follow the record they speak of, counters, and
//! a loop that hands out queued errors before it steps again. That machine
//! is written once here, as flate2 writes one reader over many codecs: a
//! format gives its step and its record, error and counter types through
//! [`Format`], and `arc::Reader` / `warc::Reader` are this [`Reader`] over
//! their format's step. A new container adds a step and nothing else.
//!
//! * [`Core`]: the state every format keeps (input, options, pending
//!   errors, [`Stats`], end flag), with the ways of skipping and
//!   reporting that every format has; the driver owns it and lends it to
//!   each step.
//! * [`Format`]: one format's own state and step (`Ok(true)` a record,
//!   `Ok(false)` something skipped or the end, `Err` an I/O failure).
//! * [`Reader`]: the public API (`new`, `with_options`, `from_shared`,
//!   `stats`, `position`, `read_record`).
//! * `read_errors!`: the methods every format's error enum shares
//!   (`offset`, `is_fatal`, the fatal `Io` variant the driver makes).
//!
//! Like the formats, this module knows no files, threads or front ends.

use std::collections::VecDeque;
use std::io::{self, Read};

use crate::input::{Input, SharedBytes, Src};

/// Reader settings, the same for every format.
#[derive(Clone, Debug)]
pub struct Options {
    /// Largest record block held in memory (decoded bytes). Larger records
    /// are skipped with the format's `Error::RecordTooLarge`. Default 1 GiB.
    pub max_block: u64,
    /// Size of the input buffer. Default 1 MiB.
    pub buffer_size: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_block: 1 << 30,
            buffer_size: 1 << 20,
        }
    }
}

/// What a reader has seen so far (the same counters for every format).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records returned.
    pub records: u64,
    /// Compressed units decoded (gzip members, zstd frames), empty and bad
    /// ones included.
    pub members: u64,
    /// Errors returned.
    pub errors: u64,
    /// Bytes of the file in no returned record and not separators: junk,
    /// undecodable members, members holding several records, oversized
    /// records.
    pub skipped_bytes: u64,
    /// Records seen but not returned (oversized, lost headers, or in a
    /// multi-record member, counted as one per member).
    pub skipped_records: u64,
    /// Whitespace between records (and, in WARC, empty members and
    /// skippable frames).
    pub separator_bytes: u64,
    /// ARC: gzip members that decode to nothing (WARC counts their bytes
    /// as separator bytes only).
    pub empty_members: u64,
    /// Plain records in a file whose first unit is compressed (returned,
    /// and reported with the format's `Error::UncompressedRecord`).
    pub uncompressed_records: u64,
    /// Whether the file was compressed as one stream (the format's
    /// `Error::SingleStream`).
    pub single_stream: bool,
}

/// What every format's reader keeps: the input, the settings, the errors
/// waiting to be returned, the counters and whether the input is done.
/// A format's step reads and reports through it.
pub struct Core<R, E> {
    pub(crate) src: Src<Input<R>>,
    pub(crate) opts: Options,
    /// Non-fatal errors waiting to be returned: a record and a warning
    /// about it come out of one step, and the warning follows the record.
    pub(crate) pending: VecDeque<E>,
    pub(crate) stats: Stats,
    pub(crate) done: bool,
}

impl<R: Read, E> Core<R, E> {
    /// Counts the bytes from `from` to the current position as skipped,
    /// with `records` records lost in them, and queues the error `err`
    /// makes of their length. Always `false` (nothing to return).
    pub(crate) fn skipped(&mut self, from: u64, records: u64, err: impl FnOnce(u64) -> E) -> bool {
        let length = self.src.pos() - from;
        self.stats.skipped_bytes += length;
        self.stats.skipped_records += records;
        self.pending.push_back(err(length));
        false
    }

    /// Goes back to just after `start`, the start of a unit that failed to
    /// decode, so that a scan finds a record that starts inside it (or
    /// steps over one byte when the bytes are no longer kept); what was
    /// decoded into `rec` is dropped.
    pub(crate) fn rescan_after(&mut self, start: u64, rec: &mut impl Clear) {
        rec.clear();
        if !self.src.rewind(start + 1) && self.src.pos() <= start {
            self.src.consume(1);
        }
        self.src.clear_mark();
    }

    /// Counts and reports a plain record found in a file of compressed
    /// records, when `got` (a record was read) and `compressed` (the file
    /// started compressed).
    pub(crate) fn plain_in_compressed(
        &mut self,
        got: bool,
        compressed: bool,
        err: impl FnOnce() -> E,
    ) {
        if got && compressed {
            self.stats.uncompressed_records += 1;
            self.pending.push_back(err());
        }
    }

    /// Skips the whitespace before the next unit (counted as separator
    /// bytes) and reports whether the input has ended, then marking the
    /// reader done; else at least `look` bytes (or all that is left) are
    /// in the buffer.
    pub(crate) fn next_unit(&mut self, look: usize) -> io::Result<bool> {
        self.skip_separators()?;
        if self.src.fill(look)? == 0 {
            self.done = true;
        }
        Ok(self.done)
    }

    /// Skips whitespace, counted as separator bytes.
    pub(crate) fn skip_separators(&mut self) -> io::Result<()> {
        self.stats.separator_bytes += self.src.skip_ws()?;
        Ok(())
    }

    /// Whether only whitespace is left of the input, looking at most `max`
    /// bytes ahead. Consumes nothing.
    pub(crate) fn at_end_after_ws(&mut self, max: usize) -> io::Result<bool> {
        let i = self.src.ws_ahead(max)?;
        Ok(i <= max && self.src.fill(i + 1)? <= i)
    }
}

/// A record buffer: emptied before each step, its allocations kept.
pub trait Clear {
    fn clear(&mut self);
}

/// A format's error type, as far as the driver makes one: the fatal I/O
/// error at an offset (written by `read_errors!`).
pub trait ReadError {
    fn io(offset: u64, source: io::Error) -> Self;
}

/// One archive format: the state it keeps besides the [`Core`] (at its
/// start: `Default`) and its step, driven by [`Reader`].
pub trait Format: Default {
    /// What one call reads into (buffers reused across calls; a fresh
    /// one after a fatal error).
    type Record: Default + Clear;
    type Error: ReadError;
    /// Bytes a unit's kind is told from (a magic number, a version line's
    /// start): buffered before each step when the input has them.
    const LOOK: usize;

    /// One unit of the input, which starts at the current position (the
    /// whitespace before it skipped, `rec` cleared): `Ok(true)` when `rec`
    /// holds a record, `Ok(false)` when something was skipped (errors
    /// pending); `Err` when reading failed.
    fn step<R: Read>(step: &mut Step<'_, R, Self>, rec: &mut Self::Record) -> io::Result<bool>;
}

/// What one step works on: the reader's [`Core`] and the format's own
/// state. Each format writes its reading methods on its `Step`.
pub struct Step<'a, R, F: Format> {
    pub(crate) core: &'a mut Core<R, F::Error>,
    pub(crate) st: &'a mut F,
}

/// Reads the records of one format with exact offsets from any `Read`:
/// see `arc::Reader` and `warc::Reader`.
pub struct Reader<R, F: Format> {
    core: Core<R, F::Error>,
    fmt: F,
}

impl<F: Format> Reader<io::Empty, F> {
    /// A reader over an input held whole in memory, such as a
    /// memory-mapped file. Nothing is copied into a buffer, the block of a
    /// well-formed plain record is a range of `bytes`, and compressed
    /// records are decoded from `bytes` in place. Records are the same as
    /// from [`Reader::with_options`] over a reader of the same bytes.
    pub fn from_shared(bytes: SharedBytes, opts: Options) -> Reader<io::Empty, F> {
        Reader::over(Src::shared(Input::Raw(io::empty()), bytes), opts)
    }
}

impl<R: Read, F: Format> Reader<R, F> {
    /// A reader with default [`Options`].
    pub fn new(rdr: R) -> Reader<R, F> {
        Reader::with_options(rdr, Options::default())
    }

    pub fn with_options(rdr: R, opts: Options) -> Reader<R, F> {
        Reader::over(Src::new(Input::Raw(rdr), opts.buffer_size), opts)
    }

    fn over(src: Src<Input<R>>, opts: Options) -> Reader<R, F> {
        Reader {
            core: Core {
                src,
                opts,
                pending: VecDeque::new(),
                stats: Stats::default(),
                done: false,
            },
            fmt: F::default(),
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// Offset of the next byte to be read: in the file, or in the
    /// decompressed stream of a file compressed as one stream.
    pub fn position(&self) -> u64 {
        self.core.src.pos()
    }

    /// Reads the next record into `rec` (its buffers are reused).
    ///
    /// `Ok(true)`: `rec` holds a record. `Ok(false)`: end of file.
    /// `Err(e)`: a problem at `e.offset()`; unless `e.is_fatal()`, the
    /// reader has resynchronised and the next call continues (a warning
    /// about a record comes right after that record).
    pub fn read_record(&mut self, rec: &mut F::Record) -> Result<bool, F::Error> {
        loop {
            if let Some(e) = self.core.pending.pop_front() {
                self.core.stats.errors += 1;
                return Err(e);
            }
            if self.core.done {
                return Ok(false);
            }
            match self.step(rec) {
                Ok(true) => {
                    self.core.stats.records += 1;
                    return Ok(true);
                }
                Ok(false) => {}
                Err(source) => {
                    self.core.done = true;
                    self.core.stats.errors += 1;
                    *rec = F::Record::default();
                    return Err(F::Error::io(self.core.src.pos(), source));
                }
            }
        }
    }

    /// Clears `rec`, skips whitespace, and reads the next unit unless the
    /// input has ended.
    fn step(&mut self, rec: &mut F::Record) -> io::Result<bool> {
        rec.clear();
        if self.core.next_unit(F::LOOK)? {
            return Ok(false);
        }
        let mut step = Step {
            core: &mut self.core,
            st: &mut self.fmt,
        };
        F::step(&mut step, rec)
    }
}

/// Writes what every reader error enum shares: `offset()` over the listed
/// variants (each has an `offset` field), `is_fatal()` (only `Io`, the
/// failed read, is), and the driver's way of making `Io`.
macro_rules! read_errors {
    ($($variant:ident),+ $(,)?) => {
        impl Error {
            /// Byte offset in the stored file where the problem starts.
            pub fn offset(&self) -> u64 {
                match *self {
                    $(Error::$variant { offset, .. })|+ => offset,
                }
            }

            /// Whether reading cannot go on after this error.
            pub fn is_fatal(&self) -> bool {
                matches!(self, Error::Io { .. })
            }
        }

        impl $crate::reader::ReadError for Error {
            fn io(offset: u64, source: std::io::Error) -> Error {
                Error::Io { offset, source }
            }
        }
    };
}
pub(crate) use read_errors;
