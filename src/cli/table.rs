//! `ukvs table`: indexes and collections in, the engine writes their
//! capture table ([`ukvs::engine::table`]) as Parquet.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ukvs::engine::merged::Live;
use ukvs::engine::table::{self as job, TableOutput};
use ukvs::table::Naming;

/// Write the capture table of indexes as Parquet, in Common Crawl's schema.
///
/// One row per capture line, with Common Crawl's 32 columns of its flat
/// capture table (url_surtkey, url, url_host_*, fetch_time, ...,
/// warc_filename, warc_record_offset, crawl, subset) and ukvs's own after
/// them; columns the index cannot fill are null. Reads UKVS, CDXJ and CDX
/// indexes, ZipNum clusters, directories of index files and live
/// collections (--data), several merged by key; a gzip or zstd index, or
/// `-` (stdin), alone.
///
/// `-o FILE.parquet` writes one file (with the crawl and subset columns);
/// any other name a directory partitioned as Hive writes it
/// (`crawl=C/subset=S/part-00000.parquet`), which DuckDB, Spark and
/// Athena read as one table. Rows are sorted by url_surtkey in row groups
/// of --group-rows; zstd, dictionaries, page statistics. Memory: one row
/// group per partition, whatever the input's size. Lines that make no row
/// (no 14-digit datetime) are reported and skipped: exit code 2.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Index files, ZipNum clusters or directories (`-` = stdin).
    #[arg(required_unless_present = "data", value_name = "INDEX")]
    inputs: Vec<PathBuf>,
    /// A live collection's directory (`DIR/NAME` of `ukvs serve --data
    /// DIR`): its lines as the server serves them (the INDEX files are
    /// its bases, less the deleted lines, with the posted ones merged in).
    #[arg(long, value_name = "DIR/NAME")]
    data: Option<PathBuf>,
    /// The table: FILE.parquet, `-` (stdout), or a directory.
    #[arg(short, long, value_name = "FILE|DIR")]
    output: PathBuf,
    #[command(flatten)]
    naming: NamingArgs,
    /// Read input files instead of mapping them into memory.
    #[arg(long)]
    no_mmap: bool,
    /// No summary on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// How rows name their crawl and subset (`ukvs table`, `ukvs index
/// --table`).
#[derive(Debug, Clone, clap::Args)]
pub struct NamingArgs {
    /// The `crawl` of every row (default: the collection's name: the
    /// index's file name up to its first dot, or the live collection's
    /// NAME; the table's name for stdin). Files named as Common Crawl's (`crawl-data/CRAWL/...`)
    /// give their own.
    #[arg(long, value_name = "NAME")]
    pub crawl: Option<String>,
    /// The `subset` of every row (default: per row as Common Crawl files
    /// captures: `robotstxt` for /robots.txt, `warc` for 2xx and
    /// revisits, `crawldiagnostics` for the rest).
    #[arg(long, value_name = "NAME")]
    pub subset: Option<String>,
    /// Rows per row group (0: 131072, sized for SURT-prefix range scans).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub group_rows: usize,
}

impl NamingArgs {
    /// The table output at `path`, for a collection named after `name`.
    pub fn output(&self, path: &Path, name: &Path) -> TableOutput {
        TableOutput {
            path: path.to_path_buf(),
            naming: Naming {
                crawl: self.crawl.clone().unwrap_or_else(|| collection_name(name)),
                subset: self.subset.clone(),
            },
            group_rows: self.group_rows,
        }
    }
}

/// A collection's name from a path: its last component up to the first
/// dot (`coll.cdxj.gz` -> `coll`).
pub fn collection_name(path: &Path) -> String {
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = base.split('.').next().unwrap_or_default();
    if stem.is_empty() || stem == "-" {
        "ukvs".into()
    } else {
        stem.to_owned()
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let named_by = match (&args.data, args.inputs.first()) {
        (Some(d), _) => d.clone(),
        // Stdin has no name: the table's is the collection's.
        (None, Some(first)) if first.as_os_str() != "-" => first.clone(),
        (None, _) => args.output.clone(),
    };
    let out = args.naming.output(&args.output, &named_by);
    let summary = match args.inputs.as_slice() {
        [one] if args.data.is_none() && job::is_stream(one) => job::from_stream(&out, one)?,
        inputs => {
            if let Some(s) = inputs
                .iter()
                .find(|p| inputs.len() > 1 && job::is_stream(p))
            {
                anyhow::bail!(
                    "{} is compressed or stdin: it can be converted alone, not merged with \
                     other inputs (decompress it, or build a cluster with `ukvs zipnum build`)",
                    s.display()
                );
            }
            let live = Live::open(inputs, args.data.as_deref(), args.no_mmap)?;
            let source = match inputs {
                [one] if args.data.is_none() => one.display().to_string(),
                _ => "the collection".to_string(),
            };
            job::from_collection(&out, live.merged(), live.value_names.clone(), &source)?
        }
    };
    if !args.quiet {
        ukvs::report!(
            "ukvs table: {} rows in {} files, {} lines skipped",
            summary.rows,
            summary.files,
            summary.skipped
        );
    }
    Ok(if summary.skipped > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
