//! `ukvs digests`: the digest file of existing indexes.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::digests::{ConvertJob, DigestOutput};

use super::sort::parse_size;

/// Write the digest file of sorted indexes: every capture keyed by its
/// payload digest.
///
/// Each INDEX is a UKVS, CDXJ or CDX file, a directory of them or a
/// ZipNum cluster; their lines become `digest surt datetime {url, mime,
/// status, length, offset, filename}` lines (FORMATS.md 11), keyed by
/// the digest in one spelling (`sha1:` and base32, other algorithms in
/// hex), sorted in byte order: the file `ukvs index --digests` writes of
/// the same index, byte for byte. Lines without a digest are left out.
/// Memory: --mem for the sort, then temporary files in --tmp-dir.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Index files, directories of them, or ZipNum clusters.
    #[arg(required = true, value_name = "INDEX")]
    inputs: Vec<PathBuf>,
    /// Output file (written whole or not at all); stdout when absent or `-`.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Memory for sorting before runs spill to disk (K, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size, value_name = "SIZE")]
    mem: u64,
    /// Directory for sort runs (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    tmp_dir: Option<PathBuf>,
    /// Read index files instead of mapping them into memory.
    #[arg(long)]
    no_mmap: bool,
    /// No summary.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let job = ConvertJob {
        inputs: args.inputs,
        output: DigestOutput {
            path: args.output.unwrap_or_else(|| PathBuf::from("-")),
            mem: args.mem,
            tmp_dir: args.tmp_dir,
        },
        no_mmap: args.no_mmap,
    };
    let s = job.run()?;
    if !args.quiet {
        ukvs::report!(
            "ukvs digests: {} captures, {} digest lines, {} without a digest, {} digests in no \
             known spelling",
            s.captures,
            s.lines,
            s.without,
            s.unreadable
        );
    }
    Ok(ExitCode::SUCCESS)
}
