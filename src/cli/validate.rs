//! `ukvs validate`: arguments in, the engine checks each file.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::validate::{check_file, ValidateJob};

/// Check UKVS files and report every problem as `file:line: what`.
///
/// A file whose first line is a CDX legend (` CDX N b a ...`) is checked
/// as classic CDX: the legend, the columns of every line, and byte order
/// (not for a file keyed by URLs, wget's, which searches sort). A line
/// out of byte order is told with its byte offset and how to sort the
/// file.
///
/// Checks: headers before the first data line, the `!fields` arity of every
/// data line, quoting and escapes, JSON validity of headers and OSLJ blocks
/// (JSON5 accepted), byte order of data lines (`LC_ALL=C sort`), and, for
/// MementoMaps, the frequency and datetime-key syntax and unique keys.
/// Prints a summary per file (lines, keys, duplicates, problems). Input may
/// be gzip- or zstd-compressed; `-` reads stdin. One pass, memory O(longest line).
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
    let job = ValidateJob {
        max_problems: args.max_problems,
        quiet: args.quiet,
        no_mmap: args.no_mmap,
    };
    for path in &args.files {
        match check_file(path, &job, &mut out) {
            Ok(valid) => {
                all_valid &= valid;
                invalid += usize::from(!valid);
            }
            Err(err) => {
                // A broken pipe ends the run; other errors end this file.
                if is_pipe(&err) {
                    return Err(err.into());
                }
                out.flush()?;
                // The error and its causes, as the run's errors are told.
                let err = anyhow::Error::from(err);
                ukvs::report!("ukvs validate: {}: {err:#}", path.display());
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

/// Whether the output was closed (the reader went away): the run ends.
fn is_pipe(err: &ukvs::engine::validate::Error) -> bool {
    err.output_error()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
