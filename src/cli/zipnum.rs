//! `ukvs zipnum build`: arguments in, the engine's cluster job runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::zipnum::{self as job, BuildJob, Layout};
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
    /// Crawl's layout (1024 for `--layout wacz`, py-wacz's). An exact
    /// lookup inflates half a block on average, so smaller blocks answer
    /// faster (300: about 4x the lookups per second of `ukvs serve`, for
    /// 2-3 % more bytes), while a pywb page of 10 blocks then holds fewer
    /// lines.
    #[arg(long)]
    lines_per_block: Option<usize>,
    /// Number of shard files the blocks are spread over.
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// gzip level 0-9.
    #[arg(long, default_value_t = 6)]
    level: u32,
    /// The files written: `pywb` (`index.idx`, `index.loc`,
    /// `index-NN.cdx.gz` shards), `cc`, Common Crawl's (`cluster.idx`
    /// naming `cdx-NNNNN.gz` shards beside it, no `.loc`; both are read by
    /// every command that reads a cluster), or `wacz`, the `cdxj-gzip-1.0` index of a WACZ package
    /// (`index.cdx.gz` + `index.idx` for its `indexes/`, byte-identical to
    /// py-wacz's for the same lines: give it `ukvs index --format cdxj
    /// --post-append --digest-records --fields referrer,req.http:cookie`,
    /// what py-wacz indexes with).
    #[arg(long, value_enum, default_value_t = LayoutArg::Pywb)]
    layout: LayoutArg,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LayoutArg {
    Pywb,
    Wacz,
    Cc,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Build(args) => {
            job::build(&BuildJob {
                input: args.input,
                output: args.output,
                lines_per_block: args.lines_per_block.unwrap_or(match args.layout {
                    LayoutArg::Pywb | LayoutArg::Cc => DEFAULT_LINES_PER_BLOCK,
                    LayoutArg::Wacz => ukvs::wacz::DEFAULT_LINES_PER_BLOCK,
                }),
                shards: args.shards,
                level: args.level,
                layout: match args.layout {
                    LayoutArg::Pywb => Layout::Pywb,
                    LayoutArg::Wacz => Layout::Wacz,
                    LayoutArg::Cc => Layout::Cc,
                },
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
