//! `ukvs zipnum build`: arguments in, the engine's cluster job runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::zipnum::{self as job, BuildJob};
use ukvs::sorted::zipnum::DEFAULT_LINES_PER_BLOCK;

/// Build ZipNum clusters (compressed, sharded indexes that pywb and
/// Common Crawl serve).
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Build(BuildArgs),
}

/// Cut a sorted index into a ZipNum cluster in DIR.
///
/// Writes `index-NN.cdx.gz` shards (gzip members of N lines, the last line
/// of each block without LF), `index.idx` (one line per block:
/// `key datetime`, shard, offset, length, block number, tab-separated)
/// and `index.loc` (`shard<TAB>file`); with `--layout cc`, Common Crawl's
/// `cluster.idx` and `cdx-NNNNN.gz` shards, without a `.loc`. Header
/// lines are not part of a cluster and are left
/// out. The input must be sorted (it is checked); `ukvs lookup DIR` and
/// pywb (`zipnum+DIR/index.idx`) both serve the result. Files appear whole:
/// each is written to a temporary name and renamed. Two passes over the
/// input when `--shards` > 1 (to spread blocks evenly), so stdin then needs
/// `--shards 1`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The sorted index (plain, gzip or zstd; `-` = stdin).
    input: PathBuf,
    /// Output directory (created if missing).
    #[arg(short, long)]
    output: PathBuf,
    /// Lines per gzip block. The default, 3000, is pywb's and Common
    /// Crawl's layout. An exact lookup inflates half a block on average,
    /// so smaller blocks answer faster (300: about 4x the lookups per
    /// second of `ukvs serve`, for 2-3 % more bytes), while a pywb page of
    /// 10 blocks then holds fewer lines.
    #[arg(long, default_value_t = DEFAULT_LINES_PER_BLOCK)]
    lines_per_block: usize,
    /// Number of shard files the blocks are spread over.
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// gzip level 0-9.
    #[arg(long, default_value_t = 6)]
    level: u32,
    /// File names: `pywb` (`index.idx`, `index.loc`, `index-NN.cdx.gz`)
    /// or `cc`, Common Crawl's (`cluster.idx` naming `cdx-NNNNN.gz`
    /// shards beside it, no `.loc`). Both are read by every command that
    /// reads a cluster.
    #[arg(long, value_enum, default_value_t = LayoutArg::Pywb)]
    layout: LayoutArg,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LayoutArg {
    Pywb,
    Cc,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Build(args) => {
            job::build(&BuildJob {
                input: args.input,
                output: args.output,
                lines_per_block: args.lines_per_block,
                shards: args.shards,
                level: args.level,
                layout: match args.layout {
                    LayoutArg::Pywb => job::Layout::Pywb,
                    LayoutArg::Cc => job::Layout::Cc,
                },
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
