//! Check UKVS files: headers, fields, quoting, JSON, byte order.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use ukvs::ukvs::{LineReader, Validator};

/// Check UKVS files and report every problem as `file:line: what`.
///
/// Checks: headers before the first data line, the `!fields` arity of every
/// data line, quoting and escapes, JSON validity of headers and OSLJ blocks
/// (JSON5 accepted), byte order of data lines (`LC_ALL=C sort`), and, for
/// MementoMaps, the frequency and datetime-key syntax and unique keys.
/// Prints a summary per file (lines, keys, duplicates, problems). Input may
/// be gzip-compressed; `-` reads stdin. One pass, memory O(longest line).
///
/// Exit status: 0 when every file is valid, 2 otherwise.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files to check (`-` for stdin; `.gz` or gzip content is decompressed).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print at most this many problems per file (all are counted).
    #[arg(long, default_value_t = 100)]
    max_problems: u64,
    /// Print only problems, no summaries.
    #[arg(short, long)]
    quiet: bool,
    /// Read plain files instead of memory-mapping them (for files that
    /// another process may change while they are checked).
    #[arg(long)]
    no_mmap: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut all_valid = true;
    let mut invalid = 0usize;
    for path in &args.files {
        match check_file(path, &args, &mut out) {
            Ok(valid) => {
                all_valid &= valid;
                invalid += usize::from(!valid);
            }
            Err(err) => {
                // A broken pipe ends the run; other errors end this file.
                if is_pipe(&err) {
                    return Err(err);
                }
                out.flush()?;
                eprintln!("ukvs validate: {}: {err:#}", path.display());
                all_valid = false;
                invalid += 1;
            }
        }
    }
    if args.files.len() > 1 && !args.quiet {
        writeln!(out, "{} files, {invalid} invalid", args.files.len())?;
    }
    out.flush()?;
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn is_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Validates one file; `Ok(false)` when it has problems.
fn check_file(path: &Path, args: &Args, out: &mut impl Write) -> anyhow::Result<bool> {
    let name = path.display().to_string();
    let mut v = Validator::new();
    let mut printed = 0u64;
    let mut feed = |line: &[u8], out: &mut dyn Write| -> io::Result<()> {
        for p in v.line(line) {
            if printed < args.max_problems {
                writeln!(out, "{name}:{}: {}", p.line, p.kind)?;
            }
            printed += 1;
        }
        Ok(())
    };
    if let Some(map) = map_plain_file(path, args.no_mmap)? {
        // Lines straight out of the map: no copy from the page cache.
        let data: &[u8] = &map;
        let mut pos = 0;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            feed(&data[pos..end], out)?;
            pos = end + 1;
        }
    } else {
        let rdr = open_input(path).with_context(|| format!("cannot open {name}"))?;
        let mut lines = LineReader::new(rdr);
        loop {
            let at = lines.offset();
            let Some(line) = lines
                .next_line()
                .with_context(|| format!("{name}: read error near byte {at}"))?
            else {
                break;
            };
            feed(line, out)?;
        }
    }
    let s = v.finish();
    if printed > args.max_problems {
        writeln!(
            out,
            "{name}: ... {} more problems not shown (--max-problems)",
            printed - args.max_problems
        )?;
    }
    if !args.quiet {
        writeln!(
            out,
            "{name}: {} lines ({} headers, {} records), {} keys, {} duplicate keys, {} identical lines, {}{}, {} problems: {}",
            s.lines,
            s.headers,
            s.records,
            s.keys,
            s.duplicate_keys,
            s.identical_lines,
            if s.sorted { "sorted" } else { "NOT sorted" },
            if s.mementomap { ", MementoMap" } else { "" },
            s.problems,
            if s.problems == 0 { "valid" } else { "INVALID" },
        )?;
    }
    Ok(s.problems == 0)
}

/// Maps a plain (not gzip), non-empty regular file read-only; `None` for
/// stdin, gzip, empty files, non-regular files and `--no-mmap`, which are
/// streamed instead.
fn map_plain_file(path: &Path, no_mmap: bool) -> anyhow::Result<Option<memmap2::Mmap>> {
    if no_mmap || path.as_os_str() == "-" {
        return Ok(None);
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let map = ukvs::engine::fs::map_file(&file, memmap2::Advice::Sequential)
        .with_context(|| format!("cannot map {}", path.display()))?;
    Ok(map.filter(|m| !m.starts_with(&[0x1f, 0x8b])))
}

/// Opens a file (or stdin for `-`) for reading, decompressing gzip content
/// (detected by its magic bytes, so `.gz` names and piped gzip both work;
/// concatenated members are read as one stream).
pub(crate) fn open_input(path: &Path) -> io::Result<Box<dyn Read>> {
    let raw: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path)?)
    };
    let mut buf = BufReader::with_capacity(1 << 20, raw);
    let is_gzip = buf.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if is_gzip {
        Box::new(flate2::bufread::MultiGzDecoder::new(buf))
    } else {
        Box::new(buf)
    })
}
