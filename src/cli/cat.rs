//! `ukvs cat`: arguments in, the engine converts the files.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::cat::{cat_all, CatJob, InputFormat};
use ukvs::engine::output::Output;

/// Print records as UKVS (default) or as one JSON object per line (--json).
///
/// Reads UKVS, CDXJ (`surt datetime {json}`, perhaps after `!meta 0 {...}`
/// lines, kept as `source_meta`) and classic CDX (the legend line
/// ` CDX N b a m s k ...` names the columns; wget's ` CDX a b a m s k r M
/// V g u`, keyed by URLs, is keyed by their SURTs; a file whose legend
/// repeats a letter or lacks N/A/a-first or b is skipped; with `--from cdx`
/// a file without a legend has pywb's columns for 9, 10 or 11 fields);
/// CDXJ and CDX become
/// capture-index records (`surt datetime offset digest {...}`). UKVS output
/// is normalised: headers first with strict JSON, one space between
/// fields, compact strict JSON blocks. With several files the headers of
/// the first are written and the others must declare the same `!fields`.
/// Line order is kept, except that converted captures with equal surt and
/// datetime are re-sorted, so sorted CDX/CDXJ input gives a sorted index.
/// Bad lines are reported as `file:line: what` and skipped; exit status 2
/// if any. Memory O(longest line), plus the captures of one tie.
///
/// `--data DIR/NAME` reads a live collection of `ukvs serve --data DIR`
/// as the server serves it: FILES are its bases (as given to the server;
/// none for a collection made by POSTs alone), less the deleted lines,
/// with the posted ones merged in, in byte order (written to a temporary
/// file first; CDX and CDXJ lines mixed are converted to capture records
/// there).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files to read (`-` for stdin; gzip and zstd content is decompressed),
    /// ZipNum clusters (a cluster's directory or its `.idx`, or the URL of
    /// either: `http(s)://`, `s3://`), whose lines
    /// are read block after block, or directories of index files (`*.cdx`,
    /// `*.cdxj`, `*.ukvs`), read in name order.
    #[arg(required_unless_present = "data")]
    files: Vec<PathBuf>,
    /// A live collection's directory (`DIR/NAME` of `ukvs serve --data
    /// DIR`), read with FILES as its bases.
    #[arg(long, value_name = "DIR/NAME")]
    data: Option<PathBuf>,
    /// Expand every record to one JSON object per line (NDJSON).
    #[arg(long)]
    json: bool,
    /// Input format; `auto` looks at the first line of each file.
    #[arg(long, value_enum, default_value_t = From::Auto)]
    from: From,
    /// Write to this file (atomically) instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum From {
    Auto,
    Ukvs,
    Cdxj,
    Cdx,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A live collection is read as one file of its lines.
    let spill = match &args.data {
        Some(data) => {
            let live = ukvs::engine::merged::Live::open(&args.files, Some(data), false)?;
            Some(live.spill(None)?)
        }
        None => None,
    };
    let files = match &spill {
        Some(f) => vec![f.path().to_path_buf()],
        None => args.files,
    };
    let job = CatJob {
        files,
        json: args.json,
        from: match args.from {
            From::Auto => InputFormat::Auto,
            From::Ukvs => InputFormat::Ukvs,
            From::Cdxj => InputFormat::Cdxj,
            From::Cdx => InputFormat::Cdx,
        },
    };
    match &args.output {
        None => {
            let stdout = io::stdout();
            let out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let (_, bad) = cat_all(&job, out)?;
            Ok(exit(bad))
        }
        Some(path) => {
            let (out, bad) = cat_all(&job, Output::create(path)?)?;
            out.commit()?;
            Ok(exit(bad))
        }
    }
}

fn exit(bad: u64) -> ExitCode {
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}
