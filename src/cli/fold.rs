//! `ukvs fold`: arguments in, the engine's fold runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use ukvs::engine::fold;
use ukvs::engine::live::{is_delta_dir, Delta, Settings};

/// Fold a live collection's delta into a new base, offline.
///
/// Merges the collection's bases (the BASE paths as `ukvs serve` is given
/// them, or the base an earlier fold wrote in their place) and the lines
/// added to and deleted from its delta (`--data DIR/NAME`, the
/// collection's directory under `ukvs serve --data DIR`, as `lookup`,
/// `cat`, `stats` and `mementomap generate` take it) into one sorted
/// base, `DIR/NAME/base-N.EXT` (a ZipNum cluster `DIR/NAME/base-N/` when a
/// base is a cluster, or with `--into cluster`), and records it: a server
/// started again with the same arguments serves the folded base in place
/// of BASE... and the delta that is left. A fold killed at any point leaves the collection
/// as it was. A running server holds the store: fold through it instead
/// (`POST /NAME/fold`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The collection's directory (`DIR/NAME` of `ukvs serve --data DIR`).
    #[arg(long, value_name = "DIR/NAME")]
    data: PathBuf,
    /// The collection's bases, as `ukvs serve NAME=BASE` is given them.
    bases: Vec<PathBuf>,
    /// Read the bases without mapping them.
    #[arg(long)]
    no_mmap: bool,
    /// What the new base is: `cluster` (a ZipNum cluster, about 0.3x the
    /// text on disk) or `file` (a sorted file). Default: a cluster when a
    /// base is one, else a file.
    #[arg(long, value_name = "SHAPE")]
    into: Option<Shape>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Shape {
    File,
    Cluster,
}

/// `--into` as the engine takes it.
fn shape(into: Option<Shape>) -> fold::Shape {
    match into {
        None => fold::Shape::AsBases,
        Some(Shape::File) => fold::Shape::File,
        Some(Shape::Cluster) => fold::Shape::Cluster,
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = args.data;
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    if !is_delta_dir(&dir) {
        bail!(
            "{}: no live collection {name:?} there (no delta): give the directory \
             of one collection under a server's --data (DIR/NAME)",
            dir.display()
        );
    }
    // Opened for the fold alone: no compactions of the generations it
    // is about to drop (the next server to open the store runs those
    // of the generation left).
    let delta = Delta::open_with(&dir, Settings::one_job())?;
    let Some((report, _view)) = fold::fold(&delta, &args.bases, args.no_mmap, shape(args.into))
        .with_context(|| format!("folding {name}"))?
    else {
        bail!("a fold of {name} is running already");
    };
    println!(
        "Folded {} records into {} ({} from the delta, {} base lines deleted or replaced)",
        report.lines,
        report.base.display(),
        report.from_delta,
        report.hidden
    );
    Ok(ExitCode::SUCCESS)
}
