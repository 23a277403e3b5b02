//! `ukvs index`: arguments in, the engine's indexing job
//! ([`ukvs::engine::index`]) runs, with a progress bar on a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use ukvs::capture::fields::{Custom, Records, Shape};
use ukvs::capture::Profile;
use ukvs::engine::digests::DigestOutput;
use ukvs::engine::index::{self as job, IndexJob, StatsOutput};
use ukvs::engine::mementomap::GenerateJob;
use ukvs::engine::progress::Progress;
use ukvs::engine::stats::ReportFormat;

use super::sort::parse_size;

/// Index ARC and WARC files into a sorted capture index.
///
/// Inputs: ARC (.arc, .arc.gz) and WARC 1.0/1.1 (.warc, .warc.gz one gzip
/// member per record, .warc.zst one zstd frame per record, with or without
/// a dictionary), in any mix; each file's format is told from its bytes,
/// not its name. Directories are searched recursively for `*.arc`,
/// `*.arc.gz`, `*.warc`, `*.warc.gz`, `*.warc.zst` and `*.wacz` (any
/// case). A WACZ package (or any ZIP) is read without unpacking: each WARC
/// under its `archive/`, in place, named as the package's index names it
/// (its path under `archive/`), offsets within the WARC. Sorted output needs about `--mem` of memory and, past that,
/// temporary space of the index's size in `--tmp-dir`; `--no-sort` holds
/// only the lines of files indexed ahead of the one being written, in
/// memory up to `--mem` and past that in `--tmp-dir`. Damaged records are
/// reported as `file: offset N: what` and skipped; the exit code is then
/// 2, with every good record indexed.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// ARC, WARC or WACZ files, directories, or `-` to read paths (one per line)
    /// from stdin. An archive piped in is read as `/dev/stdin` (its lines
    /// name the file `stdin`).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output file (written whole or not at all); stdout when absent or `-`.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Output profile.
    #[arg(long, value_enum, default_value_t = Format::Ukvs)]
    format: Format,
    /// Worker threads; 0 uses every core.
    #[arg(short = 'j', long = "threads", default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Write lines in input order instead of sorting them.
    #[arg(long)]
    no_sort: bool,
    /// Memory for sorting before runs spill to disk, or with --no-sort for
    /// lines held back to keep the files' order (K, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size, value_name = "SIZE")]
    mem: u64,
    /// Directory for sort runs (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    tmp_dir: Option<PathBuf>,
    /// Also index the records the profile leaves out: ARC filedesc records
    /// (and, for cdx11, DNS records and 304 responses), like CDX-Writer's
    /// --all-records; ARC revision-3.0 request and metadata records; every
    /// WARC record (request, warcinfo, ...), like cdxj-indexer's --records
    /// all.
    #[arg(long, conflicts_with = "records")]
    all_records: bool,
    /// The WARC records that make lines, as cdxj-indexer's --records:
    /// `all`, or WARC types separated by commas (`request`,
    /// `response,request,revisit`); the default is `response, revisit,
    /// resource, metadata` but the `application/warc-fields` ones. ARC
    /// records are `response`, the filedesc `warcinfo`. For --format ukvs,
    /// cdxj, cdx9 and cdxj-indexer-cdx11.
    #[arg(long, value_name = "LIST")]
    records: Option<String>,
    /// Fields to add after cdxj-indexer's default ones (url, mime, status,
    /// digest, length, offset, filename), as its --fields: WARC header
    /// names (`warc-type`, `content-type`, any case), `http:NAME` for a
    /// field of the HTTP head (`http:date`), `req.http:NAME` for one of
    /// the request paired with a response (`req.http:cookie`), and the
    /// short names `method`, `referrer`, `url`, `status`, `digest`,
    /// `recordDigest`; separated by commas. For --format cdxj, and ukvs
    /// (members the ukvs line lacks are added to it).
    #[arg(short = 'f', long, value_name = "LIST")]
    fields: Option<String>,
    /// Fields instead of cdxj-indexer's default ones (the names of
    /// --fields), as its --replace-fields. For --format cdxj.
    #[arg(long, value_name = "LIST", conflicts_with = "fields")]
    replace_fields: Option<String>,
    /// Add `recordDigest`, the SHA-256 of each record's stored bytes
    /// (`sha256:` and hex), as cdxj-indexer's --digest-records; reads each
    /// record twice, so the input must be a file, not a stream. For
    /// --format cdxj and ukvs.
    #[arg(short = 'd', long)]
    digest_records: bool,
    /// Name each file in the lines by its path from DIR (`../` where it
    /// lies outside), not by its base name, as cdxj-indexer's --dir-root.
    #[arg(long, value_name = "DIR")]
    dir_root: Option<PathBuf>,
    /// No progress bar and no summary.
    #[arg(short, long)]
    quiet: bool,
    /// Stop at the first damaged record or unreadable file (exit 2, no
    /// output file).
    #[arg(long)]
    strict: bool,
    /// Key each response of a WARC POST or PUT exchange by its URL with
    /// `__wb_method=post&<request body>` appended, as cdxj-indexer's
    /// --post-append and pywb do (the request and response must be
    /// adjacent records); cdxj and ukvs lines also give the method and
    /// body.
    #[arg(short = 'p', long)]
    post_append: bool,
    /// Recompute the payload of every WARC record that states a SHA-1
    /// WARC-Payload-Digest, and the checksum of every ARC revision-3.0
    /// record that has one, and report a mismatch as damage (exit 2).
    /// Each WARC of a WACZ package is also hashed whole and compared with
    /// the digest its datapackage.json states (sha256 or md5): a
    /// mismatch names the entry, which is still indexed.
    #[arg(long)]
    verify_digests: bool,
    /// Read input files instead of mapping them into memory (for files
    /// that another process may change or truncate while they are read).
    #[arg(long)]
    no_mmap: bool,
    /// Also write the MementoMap of the index to FILE, from the same scan:
    /// the map `ukvs mementomap generate INDEX -o FILE` makes (set
    /// SOURCE_DATE_EPOCH to fix its `updated_at`). Needs sorted output.
    #[arg(long, value_name = "FILE")]
    mementomap: Option<PathBuf>,
    /// Also write the statistics of the index to FILE, from the same scan:
    /// what `ukvs stats` reports of the index, as JSON (`.json`), CSV
    /// (`.csv`), an HTML page (`.html`) or text (any other name). Needs
    /// sorted output.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Also write the digest file of the index to FILE, from the same scan:
    /// every capture keyed by its payload digest (`digest surt datetime
    /// {url, mime, status, length, offset, filename}`), sorted, the file
    /// `ukvs digests INDEX -o FILE` makes, for `ukvs lookup --digest` and
    /// `ukvs serve`'s `/NAME/digest`. Its sort takes up to --mem more
    /// memory, spilling to --tmp-dir. Needs sorted output.
    #[arg(long, value_name = "FILE")]
    digests: Option<PathBuf>,
    /// Also write the capture table of the index, from the same scan: the
    /// Parquet table `ukvs table INDEX -o FILE|DIR` makes (a directory
    /// unless FILE ends in `.parquet`). Needs sorted output.
    #[arg(long, value_name = "FILE|DIR")]
    table: Option<PathBuf>,
    #[command(flatten)]
    table_naming: super::table::NamingArgs,
    /// How many of the largest hosts and domains --stats lists (0 = all).
    #[arg(long, default_value_t = 10, value_name = "N", requires = "stats")]
    stats_top: usize,
    #[command(
        flatten,
        next_help_heading = "SURT keys (recorded in the index's !meta)"
    )]
    surt: super::surt::ProfileArgs,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Format {
    /// UKVS capture index: `surt datetime offset digest {json}`.
    Ukvs,
    /// CDXJ as cdxj-indexer 1.5 writes it.
    Cdxj,
    /// 11-field CDX as CDX-Writer writes it.
    Cdx11,
    /// 9-field CDX (` CDX N b a m s k r V g`) as cdxj-indexer 1.5 writes it
    /// (its -9).
    #[value(alias = "cdxj-indexer-cdx9")]
    Cdx9,
    /// 11-field CDX as cdxj-indexer 1.5 writes it (its -11): the cdxj
    /// fields in columns, `r` and `M` always `-`.
    CdxjIndexerCdx11,
}

/// cdxj-indexer's options for the `cdxj` profile and its CDX shapes (and
/// the `ukvs` profile, whose lines take its records and added fields);
/// `None` for the default lines. The options a profile does not take are
/// refused there.
fn cdxj_options(args: &Args) -> anyhow::Result<Option<Arc<Custom>>> {
    let shape = match args.format {
        Format::Cdxj | Format::Ukvs => Shape::Json,
        Format::Cdx9 => Shape::Cdx9,
        Format::CdxjIndexerCdx11 => Shape::Cdx11,
        Format::Cdx11 => {
            let given = [
                (args.records.is_some(), "--records"),
                (args.fields.is_some(), "--fields"),
                (args.replace_fields.is_some(), "--replace-fields"),
                (args.digest_records, "--digest-records"),
            ];
            if let Some((_, name)) = given.iter().find(|(on, _)| *on) {
                anyhow::bail!(
                    "{name} is cdxj-indexer's: CDX-Writer's cdx11 has fixed columns and its own \
                     records (--format cdxj-indexer-cdx11 is cdxj-indexer's 11-field CDX)"
                );
            }
            return Ok(None);
        }
    };
    if matches!(args.format, Format::Ukvs) && args.replace_fields.is_some() {
        anyhow::bail!(
            "--replace-fields: the ukvs line has its own members; --fields adds to them \
             (or use --format cdxj)"
        );
    }
    if shape != Shape::Json {
        let given = [
            (args.fields.is_some(), "--fields"),
            (args.replace_fields.is_some(), "--replace-fields"),
            (args.digest_records, "--digest-records"),
        ];
        if let Some((_, name)) = given.iter().find(|(on, _)| *on) {
            anyhow::bail!(
                "{name} changes the fields of cdxj lines; the CDX columns of cdx9 and \
                 cdxj-indexer-cdx11 are fixed (cdxj-indexer refuses it with -9 and -11 too)"
            );
        }
    }
    // `--all-records` keeps its own meaning (the ARC filedesc stays out).
    let records = args
        .records
        .as_deref()
        .map_or(Records::Default, Records::parse);
    Ok(Custom::new(
        records,
        args.fields.as_deref(),
        args.replace_fields.as_deref(),
        args.digest_records,
        shape,
    )
    .map(Arc::new))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cdxj = cdxj_options(&args)?;
    let index_name = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let mementomap = args.mementomap.as_ref().map(|map| {
        let mut job = GenerateJob::new(vec![index_name.clone()], map.clone());
        job.out.tmp_dir = args.tmp_dir.clone();
        job.no_mmap = args.no_mmap;
        job
    });
    let stats = args.stats.as_ref().map(|path| StatsOutput {
        path: path.clone(),
        format: ReportFormat::for_path(path, &format!("ukvs stats: {}", index_name.display())),
        top: args.stats_top,
    });
    let digests = args.digests.clone().map(|path| DigestOutput {
        path,
        mem: args.mem,
        tmp_dir: args.tmp_dir.clone(),
    });
    let table = args.table.as_ref().map(|path| {
        let named_by = args.output.as_deref().unwrap_or(path);
        args.table_naming.output(path, named_by)
    });
    let job = IndexJob {
        inputs: args.inputs,
        output: args.output,
        profile: match args.format {
            Format::Ukvs => Profile::Ukvs,
            Format::Cdxj | Format::Cdx9 | Format::CdxjIndexerCdx11 => Profile::Cdxj,
            Format::Cdx11 => Profile::Cdx11,
        },
        cdxj,
        dir_root: args.dir_root,
        threads: args.threads,
        no_sort: args.no_sort,
        mem: args.mem,
        tmp_dir: args.tmp_dir,
        all_records: args.all_records,
        quiet: args.quiet,
        strict: args.strict,
        post_append: args.post_append,
        verify_digests: args.verify_digests,
        no_mmap: args.no_mmap,
        surt: args.surt.options(),
        mementomap,
        stats,
        digests,
        table,
    };
    let bar = progress_bar(args.quiet);
    Ok(job::run(&job, bar.as_ref().map(|b| b as &dyn Progress))?)
}

/// A progress bar on a terminal (none when quiet or not a terminal).
pub(super) struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total_bytes: u64) {
        self.0.set_length(total_bytes);
    }

    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn message(&self, text: String) {
        self.0.set_message(text);
    }

    fn print(&self, line: &str) {
        self.0.suspend(|| ukvs::report!("{line}"));
    }

    fn done(&self) {
        self.0.finish_and_clear();
    }
}

pub(super) fn progress_bar(quiet: bool) -> Option<Bar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(0);
    let style = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
    )
    .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        pb.set_style(style);
    }
    Some(Bar(pb))
}
