//! `ukvs merge`: k-way merge of sorted index files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ukvs::sorted::Merge;

use super::sort::{combine_headers, input_name, open_input};
use ukvs::engine::output::Output;

/// Merge already sorted index files into one sorted file.
///
/// Streams: memory is one line per input whatever their sizes. Header
/// lines at the top of the inputs are combined on top of the output (byte
/// order, duplicates dropped). Every input is checked as it is read; the
/// merge stops with the file and line number at the first line out of
/// order, and no output file is left behind. Gzipped inputs are read
/// transparently.
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
    let mut inputs = Vec::new();
    for path in &args.inputs {
        inputs.push((input_name(path), open_input(path)?));
    }
    let mut merge = Merge::new(inputs, true)?;
    let headers = combine_headers(merge.input_headers().to_vec())?;
    let mut out = Output::create(&args.output)?;
    for h in &headers {
        out.write_all_line(h)?;
    }
    // Only a file is left untouched by a failure; a stream has had lines.
    let stopped = match &out {
        Output::Temp { target, .. } => format!("merge stopped; {} not written", target.display()),
        _ => format!("merge stopped; the output to {} is incomplete", out.name()),
    };
    merge.write_to(&mut out, args.unique).context(stopped)?;
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}
