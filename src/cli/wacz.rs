//! `ukvs wacz create`: arguments in, the engine's package job runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::wacz::{self as job, CreateJob};

use super::sort::parse_size;

/// WACZ packages (Webrecorder's web archive ZIPs). Reading them needs no
/// command of its own: `index`, `lookup`, `serve`, `validate`, `stats`,
/// `cat` and `mementomap generate` take `.wacz` files.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Create(CreateArgs),
}

/// Make a WACZ package of WARC files, as py-wacz's `wacz create` lays it
/// out.
///
/// Writes `indexes/index.cdx.gz` + `indexes/index.idx` (the
/// `cdxj-gzip-1.0` index of the WARCs, made with py-wacz's indexing
/// options and byte for byte the files `zipnum build --layout wacz`
/// writes), the WARCs stored (not deflated) under `archive/` by their
/// base names, `pages/pages.jsonl` (a page list without pages),
/// `datapackage.json` (WACZ 1.1.1, each entry's SHA-256 and size) and
/// `datapackage-digest.json`. The index is sorted in `--mem`, spilling to
/// `--tmp-dir`; the WARCs are copied once. A WARC with damage fails the
/// run (exit 2, no package). The package appears whole: written to a
/// temporary file beside OUTPUT and renamed.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// WARC files (`.warc`, `.warc.gz`).
    #[arg(required = true)]
    warcs: Vec<PathBuf>,
    /// The package to write.
    #[arg(short, long)]
    output: PathBuf,
    /// `title` of `datapackage.json` and of the page list.
    #[arg(long)]
    title: Option<String>,
    /// Worker threads for the index; 0 uses every core.
    #[arg(short = 'j', long = "threads", default_value_t = 0)]
    threads: usize,
    /// Memory for sorting the index before runs spill to disk (K, M, G).
    #[arg(long, default_value = "1G", value_parser = parse_size, value_name = "SIZE")]
    mem: u64,
    /// Directory for sort runs and the index files (default: the
    /// system's temporary directory).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Create(a) => Ok(job::create(&CreateJob {
            warcs: a.warcs,
            output: a.output,
            title: a.title,
            threads: a.threads,
            mem: a.mem,
            tmp_dir: a.tmp_dir,
        })?),
    }
}
