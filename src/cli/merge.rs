//! `ukvs merge`: arguments in, the engine's merge job runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::sort::{self as job, MergeJob};

/// Merge already sorted index files into one sorted file.
///
/// Streams: memory is one line per input whatever their sizes. Header
/// lines at the top of the inputs are combined on top of the output (byte
/// order, duplicates dropped). Every input is checked as it is read; the
/// merge stops with the file and line number at the first line out of
/// order, and no output file is left behind. Gzip- and zstd-compressed
/// inputs are read transparently; an archive given as an input is refused.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sorted input files (`-` for stdin).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output file (`-` for stdout).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
    /// Drop repeated identical lines.
    #[arg(short, long)]
    unique: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    job::merge(&MergeJob {
        inputs: args.inputs,
        output: args.output,
        unique: args.unique,
    })?;
    Ok(ExitCode::SUCCESS)
}
