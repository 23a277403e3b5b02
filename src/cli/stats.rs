//! `ukvs stats`: arguments in, the engine's statistics job runs, and the
//! report is written as text, JSON, CSV or an HTML page.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ukvs::engine::progress::Progress;
use ukvs::engine::stats::{self as job, ReportFormat, StatsJob};
use ukvs::stats::{self, Report};

use super::sort::parse_size;

/// Holdings statistics of capture indexes: captures, URLs, hosts, domains,
/// bytes, time, MIME types, status codes, top hosts and domains.
///
/// Reads any index ukvs reads: UKVS, CDXJ, classic CDX (with or without
/// its legend), plain, gzip or zstd, ZipNum clusters, directories of index
/// files, `-` for stdin. Several inputs make one report: a URL or host in
/// two of them counts once. One scan; on a sorted index (as every index
/// is) memory stays flat whatever its size, apart from one entry per
/// registered domain. Distinct counts are exact also on unsorted files,
/// which are read twice to sort their keys within --mem; unsorted stdin
/// needs --unsorted.
///
/// Figures cdxsummary also reports (`cdxsummary -r`): captures, urls
/// (cdxsummary counts a key again when it is not adjacent to itself: the
/// same on sorted input), hosts (likewise), bytes (sum of the length
/// column), first, last, mimestatus, pathquery (path segments `P` and
/// query parameters `Q` of the key) and tophosts; its yearmonth is our
/// months. cdxsummary reads only 11-field CDX and skips lines without `)`
/// in the key (dns:, filedesc:), which are counted here.
///
/// Exit code 2 when a line was not a capture (each is reported and
/// skipped; --strict stops at the first).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Index files, ZipNum clusters (local, or the URL of their
    /// directory: `http(s)://`, `s3://`) or directories (`-` = stdin); with
    /// --merge, JSON reports of `ukvs stats --json`.
    #[arg(required_unless_present = "data", value_name = "INDEX")]
    inputs: Vec<PathBuf>,
    /// A live collection's directory (`DIR/NAME` of `ukvs serve --data
    /// DIR`): its lines as the server serves them (the INDEX files are
    /// its bases, less the deleted lines, with the posted ones merged in;
    /// written to a temporary file first).
    #[arg(long, value_name = "DIR/NAME", conflicts_with = "merge")]
    data: Option<PathBuf>,
    /// Write the report as JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Write the report as CSV rows `figure,key,value`.
    #[arg(long)]
    csv: bool,
    /// Also write a self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The page's title (default: the inputs' names).
    #[arg(long, value_name = "TEXT", requires = "html")]
    title: Option<String>,
    /// Output file for the text, JSON or CSV report (written whole or not
    /// at all); stdout when absent or `-`.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Add up JSON reports of shards instead of reading indexes. Counts of
    /// captures, bytes, time, MIME types and status codes add up; distinct
    /// URLs add up when the shards hold disjoint key ranges; distinct hosts
    /// and domains are exact when each shard lists them all (--top 0).
    /// Figures that are not exact are listed under "inexact" and on stderr.
    #[arg(long)]
    merge: bool,
    /// How many of the largest hosts and domains to list (0 = all).
    #[arg(long, default_value_t = 10, value_name = "N")]
    top: usize,
    /// The keys are not sorted: sort them from the start (needed for
    /// unsorted stdin; unsorted files are found and read again anyway).
    #[arg(long)]
    unsorted: bool,
    /// Threads for one large plain file; 0 uses every core.
    #[arg(short = 'j', long = "threads", default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Memory for sorting the keys of unsorted input (K, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size, value_name = "SIZE")]
    mem: u64,
    /// Directory for sort runs (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    tmp_dir: Option<PathBuf>,
    /// Stop at the first line that is not a capture.
    #[arg(long)]
    strict: bool,
    /// Read input files and a ZipNum cluster's `.idx` instead of mapping
    /// them into memory (for files another process may change while they
    /// are read; compressed inputs are read in any case).
    #[arg(long)]
    no_mmap: bool,
    /// No progress bar and no notes on stderr.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let spill = match &args.data {
        Some(data) => {
            let live = ukvs::engine::merged::Live::open(&args.inputs, Some(data), args.no_mmap)?;
            Some(live.spill(args.tmp_dir.as_deref())?)
        }
        None => None,
    };
    let inputs = match &spill {
        Some(f) => vec![f.path().to_path_buf()],
        None => args.inputs.clone(),
    };
    let (report, skipped) = if args.merge {
        (merge_reports(&args)?, 0)
    } else {
        let bar = super::index::progress_bar(args.quiet);
        let outcome = job::run(
            &StatsJob {
                inputs,
                top: args.top,
                threads: args.threads,
                mem: args.mem,
                tmp_dir: args.tmp_dir.clone(),
                unsorted: args.unsorted,
                strict: args.strict,
                no_mmap: args.no_mmap,
                quiet: args.quiet,
            },
            bar.as_ref().map(|b| b as &dyn Progress),
        )?;
        (outcome.report, outcome.skipped)
    };
    let out_path = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let format = match (args.json, args.csv) {
        (true, _) => ReportFormat::Json,
        (_, true) => ReportFormat::Csv,
        _ => ReportFormat::Text,
    };
    job::write_report(&report, &format, &out_path)?;
    if let Some(path) = &args.html {
        let title = args.title.clone().unwrap_or_else(|| {
            let names: Vec<String> = args
                .inputs
                .iter()
                .chain(args.data.as_ref())
                .map(|p| p.display().to_string())
                .collect();
            format!("ukvs stats: {}", names.join(", "))
        });
        job::write_report(&report, &ReportFormat::Html(title), path)?;
    }
    if skipped > 0 {
        if !args.quiet {
            ukvs::report!("ukvs stats: {skipped} lines were not captures and were skipped");
        }
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn merge_reports(args: &Args) -> anyhow::Result<Report> {
    let mut parts = Vec::with_capacity(args.inputs.len());
    for p in &args.inputs {
        let text = match p.as_os_str() == "-" {
            true => std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?,
            false => std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?,
        };
        let r: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a report of `ukvs stats --json`", p.display()))?;
        if r.format != stats::FORMAT {
            anyhow::bail!(
                "{}: report format {} where {} is read",
                p.display(),
                r.format,
                stats::FORMAT
            );
        }
        parts.push(r);
    }
    let merged = Report::merge(parts, args.top);
    if !merged.inexact.is_empty() && !args.quiet {
        ukvs::report!(
            "ukvs stats --merge: not exact: {} (the shards overlap, or do not list every host \
             and domain: make them with --top 0)",
            merged.inexact.join(", ")
        );
    }
    Ok(merged)
}
