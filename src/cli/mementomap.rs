//! `ukvs mementomap generate|compact|merge|lookup|evaluate`: arguments in,
//! the engine's jobs ([`ukvs::engine::mementomap`]) run.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::mementomap as job;
use ukvs::mementomap::generate::Dimension;
use ukvs::mementomap::lookup::DatetimeRange;

/// Build, compact, merge, query and evaluate MementoMaps (archive holdings
/// summaries for routing lookups).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    Generate(Box<GenerateArgs>),
    Compact(Box<CompactArgs>),
    Merge(Box<MergeArgs>),
    Lookup(Box<LookupArgs>),
    Evaluate(Box<EvaluateArgs>),
}

/// Power-law rollup parameters (the reference tool's names and defaults).
#[derive(Debug, Clone, clap::Args)]
struct RollupArgs {
    /// Host compaction factor: smaller rolls up harder ("inf" = never).
    #[arg(long, value_parser = non_negative)]
    hcf: Option<f64>,
    /// Path compaction factor: smaller rolls up harder ("inf" = never).
    #[arg(long, value_parser = non_negative)]
    pcf: Option<f64>,
    /// Host power-law alpha.
    #[arg(long, default_value_t = job::Rollup::default().ha, value_parser = non_negative)]
    ha: f64,
    /// Host power-law k.
    #[arg(long, default_value_t = job::Rollup::default().hk)]
    hk: f64,
    /// Path power-law alpha.
    #[arg(long, default_value_t = job::Rollup::default().pa, value_parser = non_negative)]
    pa: f64,
    /// Path power-law k.
    #[arg(long, default_value_t = job::Rollup::default().pk)]
    pk: f64,
    /// Host levels tracked.
    #[arg(long, default_value_t = job::Rollup::default().hdepth, value_parser = clap::value_parser!(u16).range(1..))]
    hdepth: u16,
    /// Path levels tracked.
    #[arg(long, default_value_t = job::Rollup::default().pdepth, value_parser = clap::value_parser!(u16).range(1..))]
    pdepth: u16,
    /// Compact until the map has at most N data lines (100 % recall kept).
    #[arg(long, value_name = "N")]
    max_lines: Option<u64>,
    /// Compact until the map file, headers included, has at most N bytes
    /// (100 % recall kept); an error when even the map `*` (plus exclusion
    /// entries) is bigger.
    #[arg(long, value_name = "N")]
    max_bytes: Option<u64>,
}

/// Options shared by the commands that write a map.
#[derive(Debug, Clone, clap::Args)]
struct OutputArgs {
    /// Output map ("-" = stdout).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
    /// URI of the archive, written as `!id {"uri": ...}`.
    #[arg(long, value_name = "URI")]
    id: Option<String>,
    /// Name written into `!meta`.
    #[arg(long)]
    name: Option<String>,
    /// What the map summarises, written as the `source` of `!meta` in
    /// place of the inputs' names (repeatable): for inputs that are
    /// intermediate files, such as the parts of a larger map.
    #[arg(long = "source", value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    source: Vec<String>,
    /// Directory for temporary files (default: beside the output, or the
    /// system's).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// No summary on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// Build a MementoMap from sorted capture indexes.
///
/// Inputs: our UKVS capture index, CDXJ, CDX or a plain SURT list, plain
/// or gzip- or zstd-compressed, files or "-" for stdin; ZipNum clusters
/// (local, or the URL of their directory: `http(s)://`, `s3://`) and
/// directories of sorted files; each must be sorted in byte order
/// (LC_ALL=C). Several inputs are merged into one sorted stream first, so
/// a URL found in two of them counts once as URI-R (captures are lines: a
/// line present in two inputs counts twice as URI-M). One streaming pass;
/// memory O(key depth): rollups rewind a temporary file, never a buffer.
/// Without rollup options every URI key gets its own line (the
/// reference's `generate`); with --hcf/--pcf or a quota the power-law
/// rollup of `compact` is applied on the way.
///
/// `--data DIR/NAME` summarises a live collection of `ukvs serve --data
/// DIR` as the server serves it: the inputs are its bases, less the
/// deleted lines, with the posted ones merged in (written to a temporary
/// file first).
#[derive(Debug, clap::Args)]
struct GenerateArgs {
    /// Sorted capture indexes, ZipNum clusters or directories ("-" =
    /// stdin).
    #[arg(default_value = "-")]
    inputs: Vec<PathBuf>,
    /// A live collection's directory (`DIR/NAME` of `ukvs serve --data
    /// DIR`), read with the inputs as its bases.
    #[arg(long, value_name = "DIR/NAME")]
    data: Option<PathBuf>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    rollup: RollupArgs,
    /// Keep query strings in keys (the reference drops them).
    #[arg(long)]
    keep_query: bool,
    /// Decompose counts in the OSLJ: datetime:year, datetime:month,
    /// status, mime (repeatable).
    #[arg(long, value_name = "DIM", value_parser = parse_dimension)]
    by: Vec<Dimension>,
    /// File of SURT prefixes the archive cannot serve: their captures are
    /// not counted and `0/N` entries are written instead. pywb access
    /// rules (`.aclj`) are read too: their `exclude` and `block` rules
    /// (without user or date limits) are the prefixes, a `###` rule one
    /// exact key.
    #[arg(long, value_name = "FILE")]
    exclude: Option<PathBuf>,
    /// Stop at the first bad input line instead of reporting and skipping.
    #[arg(long)]
    strict: bool,
    /// Threads reading one large input file in parts; 0 uses every core.
    #[arg(short = 'j', long = "threads", default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Read a plain input file instead of mapping it into memory (for a
    /// file another process may change while it is read).
    #[arg(long)]
    no_mmap: bool,
    /// Where a decomposition goes: into the OSLJ, or as a second key column
    /// (one line per bucket plus a total line `key : freq`; needs exactly
    /// one --by).
    #[arg(long, value_enum, default_value_t = Layout::Oslj)]
    layout: Layout,
}

/// The two organisations of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Layout {
    /// `key frequency {"datetime":{...}}`.
    Oslj,
    /// `key bucket frequency`.
    Columns,
}

/// Roll up an existing MementoMap with the power-law cut-offs.
///
/// Input must be sorted; output has the same headers with a fresh `!meta`.
/// Memory O(depth); a smaller factor compacts harder, and a compacted map
/// can be compacted again.
#[derive(Debug, clap::Args)]
struct CompactArgs {
    /// Map to compact ("-" = stdin; .gz accepted).
    input: PathBuf,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    rollup: RollupArgs,
}

/// Merge sorted MementoMaps (e.g. of shards) into one.
///
/// A k-way streaming merge; equal keys are summed with the frequency
/// algebra. URI-R sums become upper bounds (`-`) unless --disjoint.
#[derive(Debug, clap::Args)]
struct MergeArgs {
    /// Maps to merge (.gz accepted).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    out: OutputArgs,
    /// The inputs share no URI (key-disjoint shards): URI-R sums stay exact.
    #[arg(long)]
    disjoint: bool,
}

/// Look URLs or SURTs up in a MementoMap.
///
/// Prints `key frequency steps query` for the most specific entry (steps =
/// generalisations needed, 0 = exact), or `- - - query` when nothing
/// covers it. A `0` entry means "not held". Exit 0 when at least one query
/// is covered, 1 when none is. Binary search in a memory map: no loading.
#[derive(Debug, clap::Args)]
struct LookupArgs {
    /// The map.
    map: PathBuf,
    /// URLs or SURTs; "-" or nothing = one per line from stdin.
    queries: Vec<String>,
    /// The map was generated with --keep-query.
    #[arg(long)]
    keep_query: bool,
    /// Worker threads for a batch; 0 uses every core.
    #[arg(short = 'j', long = "threads", default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Count only captures made during RANGE (`2014`, `2010:2012`,
    /// `:2009`, `201603:`), from the map's datetime buckets (a `datetime`
    /// key column or OSLJ member); buckets that only overlap the range, or
    /// entries without buckets, give upper bounds (`n-`). An entry with no
    /// bucket in the range answers `0` (not held then).
    #[arg(long, value_name = "RANGE", value_parser = parse_range)]
    datetime: Option<DatetimeRange>,
}

/// Measure a map: relative cost and the presence decisions on queries
/// (TP/FP/TN/FN, accuracy, precision, recall).
///
/// Builds the archive's uncompacted map from --index in memory as the
/// truth. With --sweep, prints one row per compaction factor instead of
/// evaluating MAP, so an archive can pick its size.
#[derive(Debug, clap::Args)]
struct EvaluateArgs {
    /// The map to evaluate (not needed with --sweep).
    map: Option<PathBuf>,
    /// The archive's sorted capture index.
    #[arg(long)]
    index: PathBuf,
    /// URLs or SURTs, one per line.
    #[arg(long)]
    queries: PathBuf,
    /// Evaluate the index compacted at a range of factors.
    #[arg(long)]
    sweep: bool,
    /// Factors for --sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [f64::INFINITY, 8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625, 0.0])]
    factors: Vec<f64>,
}

/// A cut-off parameter: a number >= 0 or "inf" (negative cut-offs would
/// roll up nodes without children).
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 0.0 => Ok(x),
        _ => Err(format!("{s:?} is not a number >= 0 (or inf)")),
    }
}

fn parse_range(s: &str) -> Result<DatetimeRange, String> {
    DatetimeRange::parse(s.as_bytes())
        .ok_or_else(|| format!("{s:?} is not a datetime range (2014, 2010:2012, :2009, 201603:)"))
}

fn parse_dimension(s: &str) -> Result<Dimension, String> {
    Dimension::parse(s).ok_or_else(|| {
        format!("unknown dimension {s:?} (datetime:year, datetime:month, status, mime)")
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Sub::Generate(a) => match a.data.clone() {
            None => Ok(job::generate(a.into_job())?),
            Some(data) => {
                // The bases given, or none: `-` is the default of inputs.
                let bases: Vec<PathBuf> = a
                    .inputs
                    .iter()
                    .filter(|p| p.as_os_str() != "-")
                    .cloned()
                    .collect();
                let live = ukvs::engine::merged::Live::open(&bases, Some(&data), a.no_mmap)?;
                let spill = live.spill(a.out.tmp_dir.as_deref())?;
                let mut job = a.into_job();
                job.inputs = vec![spill.path().to_path_buf()];
                if job.out.source.is_empty() {
                    job.out.source = vec![data.display().to_string()];
                }
                Ok(job::generate(job)?)
            }
        },
        Sub::Compact(a) => Ok(job::compact(a.into_job())?),
        Sub::Merge(a) => Ok(job::merge(a.into_job())?),
        Sub::Lookup(a) => Ok(job::lookup(a.into_job())?),
        Sub::Evaluate(a) => Ok(job::run_evaluate(a.into_job())?),
    }
}

// ------------------------------------------------------- arguments -> jobs

impl RollupArgs {
    fn into_job(self) -> job::Rollup {
        job::Rollup {
            hcf: self.hcf,
            pcf: self.pcf,
            ha: self.ha,
            hk: self.hk,
            pa: self.pa,
            pk: self.pk,
            hdepth: self.hdepth,
            pdepth: self.pdepth,
            max_lines: self.max_lines,
            max_bytes: self.max_bytes,
        }
    }
}

impl OutputArgs {
    fn into_job(self) -> job::MapOutput {
        job::MapOutput {
            output: self.output,
            id: self.id,
            name: self.name,
            source: self.source,
            tmp_dir: self.tmp_dir,
            quiet: self.quiet,
        }
    }
}

impl GenerateArgs {
    fn into_job(self) -> job::GenerateJob {
        job::GenerateJob {
            inputs: self.inputs,
            out: self.out.into_job(),
            rollup: self.rollup.into_job(),
            keep_query: self.keep_query,
            by: self.by,
            exclude: self.exclude,
            strict: self.strict,
            threads: self.threads,
            no_mmap: self.no_mmap,
            layout: match self.layout {
                Layout::Oslj => job::Layout::Oslj,
                Layout::Columns => job::Layout::Columns,
            },
        }
    }
}

impl CompactArgs {
    fn into_job(self) -> job::CompactJob {
        job::CompactJob {
            input: self.input,
            out: self.out.into_job(),
            rollup: self.rollup.into_job(),
        }
    }
}

impl MergeArgs {
    fn into_job(self) -> job::MergeJob {
        job::MergeJob {
            inputs: self.inputs,
            out: self.out.into_job(),
            disjoint: self.disjoint,
        }
    }
}

impl LookupArgs {
    fn into_job(self) -> job::LookupJob {
        job::LookupJob {
            map: self.map,
            queries: self.queries,
            keep_query: self.keep_query,
            threads: self.threads,
            datetime: self.datetime,
        }
    }
}

impl EvaluateArgs {
    fn into_job(self) -> job::EvaluateJob {
        job::EvaluateJob {
            map: self.map,
            index: self.index,
            queries: self.queries,
            sweep: self.sweep,
            factors: self.factors,
        }
    }
}
