//! `ukvs lookup`: binary-search sorted indexes and ZipNum clusters.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context};
use ukvs::acl::{Access, Rules};
use ukvs::engine::batch::{self, Spill};
use ukvs::engine::format::{self, write_line, write_timemap, TimeMapLinks};
use ukvs::engine::lookup::{ordered, Collection, Hit, Order};
use ukvs::sorted::{lines, prefix_key_for_url, url_shortcut, KeyRange, MatchType, TimeFilter};

use super::sort::{open_input, thread_count};

/// Look up captures of a URL (or key) in sorted indexes.
///
/// Each INDEX is a sorted UKVS, CDXJ or CDX file (memory-mapped; a lookup
/// touches O(log n) pages) or a ZipNum cluster (its directory or its `.idx`
/// file). The last positional argument is the URL, canonicalised to its
/// SURT key, unless `--key`, `--keys` or `--urls` is given. Results from
/// several indexes are merged in byte order (ties in index order).
///
/// Matching follows pywb's CDX server: `--match exact|prefix|host|domain`,
/// or the shortcuts `*.example.com` (domain) and `example.com/*` (prefix);
/// `--from`/`--to` take partial datetimes padded low/high; `--closest`
/// orders by distance in time; `--reverse` gives the last matches first.
///
/// Batch: `--keys -` or `--urls -` read one query per line and print, for
/// each query in input order, its exact matches in index order.
///
/// Exit status: 0 when something matched, 1 when nothing did, 2 on error
/// (including an index found out of order on the search path).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Index files or ZipNum clusters, then the URL to look up.
    #[arg(required = true, value_name = "INDEX... [URL]")]
    positional: Vec<String>,
    /// Look up this raw key instead of a URL.
    #[arg(long, conflicts_with_all = ["keys", "urls"])]
    key: Option<String>,
    /// Batch: read one key per line from this file (`-` = stdin).
    #[arg(long, conflicts_with = "urls")]
    keys: Option<PathBuf>,
    /// Batch: read one URL per line from this file (`-` = stdin).
    #[arg(long)]
    urls: Option<PathBuf>,
    /// How the key selects lines.
    #[arg(long = "match", value_enum)]
    match_type: Option<Match>,
    /// Earliest datetime (a prefix like `2014` is padded to `20140101000000`).
    #[arg(long)]
    from: Option<String>,
    /// Latest datetime (a prefix like `2014` is padded to `20141231235959`).
    #[arg(long)]
    to: Option<String>,
    /// Order results by distance in time from this datetime.
    #[arg(long)]
    closest: Option<String>,
    /// Give the last matches first.
    #[arg(long)]
    reverse: bool,
    /// At most this many results (per query in batch mode).
    #[arg(long)]
    limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "ukvs")]
    output: Format,
    /// Prefix of memento URLs in `--output link` (`{prefix}{datetime}/{url}`).
    #[arg(long, default_value = "")]
    archive_prefix: String,
    /// Where the TimeMap of `--output link` is served: its `rel="self"`
    /// link (left out when not given, as a lookup cannot know it).
    #[arg(long, value_name = "URL")]
    timemap_url: Option<String>,
    /// The TimeGate of the URL, linked as `rel="timegate"` in `--output link`.
    #[arg(long, value_name = "URL")]
    timegate_url: Option<String>,
    /// First read every INDEX whole and check that its lines ascend (a
    /// full pass, O(n)); lines out of order are reported with file, line
    /// and byte offset, and the lookup fails (exit 2). A search alone only
    /// notices disorder on its own path. With a single INDEX and no query,
    /// only checks.
    #[arg(long)]
    check: bool,
    /// Access rules in pywb's `.aclj` format: captures an `exclude` rule
    /// covers are left out (the most specific rule wins, as in pywb);
    /// `block`ed ones are listed, as pywb's CDX API lists them. Applied
    /// before `--limit`.
    #[arg(long, value_name = "FILE")]
    acl: Option<PathBuf>,
    /// Read index files into memory instead of mapping them.
    #[arg(long)]
    no_mmap: bool,
    /// Threads for batch lookups (0 = all cores).
    #[arg(short = 'j', long, default_value_t = 0)]
    threads: usize,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Match {
    Exact,
    Prefix,
    Host,
    Domain,
}

impl From<Match> for MatchType {
    fn from(m: Match) -> MatchType {
        match m {
            Match::Exact => MatchType::Exact,
            Match::Prefix => MatchType::Prefix,
            Match::Host => MatchType::Host,
            Match::Domain => MatchType::Domain,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// The index lines as they are.
    Ukvs,
    /// `key datetime {json}`.
    Cdxj,
    /// One JSON object per line.
    Json,
    /// An RFC 7089 TimeMap in link format.
    Link,
}

impl From<Format> for format::Format {
    fn from(f: Format) -> format::Format {
        match f {
            Format::Ukvs => format::Format::Ukvs,
            Format::Cdxj => format::Format::Cdxj,
            Format::Json => format::Format::Json,
            Format::Link => format::Format::Link,
        }
    }
}

/// Disorders reported per index by `--check` before the count.
const MAX_REPORTED: usize = 10;

/// `--check`: proves the order of every source, printing each disorder
/// found (the first few per index) and failing if there is any.
fn check_order(coll: &Collection) -> anyhow::Result<()> {
    let mut bad = Vec::new();
    for source in coll.sources() {
        let name = source.name();
        let report = source
            .check_order(MAX_REPORTED)
            .with_context(|| format!("checking {name}"))?;
        for d in &report.found {
            let place = match &d.block {
                Some((shard, no)) => format!(
                    "block {no} of shard {shard}, line {} (byte {} of the block)",
                    d.line_no, d.offset
                ),
                None => format!("line {} (byte {})", d.line_no, d.offset),
            };
            eprintln!(
                "ukvs: lookup: {name}: {place} is out of order: {:?} sorts before the line above it {:?}",
                String::from_utf8_lossy(&d.line),
                String::from_utf8_lossy(&d.previous)
            );
        }
        if report.count > 0 {
            bad.push(format!("{name} ({} lines out of order)", report.count));
        }
    }
    if !bad.is_empty() {
        bail!(
            "not sorted: {}; a binary search cannot trust it (sort it with `ukvs sort`)",
            bad.join(", ")
        );
    }
    Ok(())
}

/// A query after canonicalisation: the key range, and the URL it came from.
struct Query {
    range: KeyRange,
    url: Option<String>,
}

/// The query for a URL. A URL the canonicaliser rejects is looked up as
/// given (as cdxj-indexer keys it); `warn` says whether to say so here (a
/// batch counts them instead of printing one message per line).
fn url_query(
    url: &str,
    surt: &ukvs::surt::Options,
    match_type: Option<MatchType>,
    warn: bool,
) -> (Query, bool) {
    let (url, m) = url_shortcut(url, match_type);
    let (mut key, err) = ukvs::surt::key(url.as_bytes(), surt);
    let failed = err.is_some();
    if let (Some(err), true) = (err, warn) {
        eprintln!("ukvs: lookup: {url}: {err}; looking it up as given");
    }
    if m == MatchType::Prefix {
        key = prefix_key_for_url(url, key);
    }
    let query = Query {
        range: KeyRange::new(&key, m),
        url: Some(url.to_string()),
    };
    (query, failed)
}

/// The answer to one query: every source's lines in the range, merged in
/// byte order (ties in source order), filtered and ordered as asked, one
/// at a time. `at(i)` is the lower bound of the range in source `i` when
/// the caller found it already.
fn answer<'s>(
    coll: &'s Collection,
    range: &'s KeyRange,
    at: impl Fn(usize) -> Option<usize>,
    time: &'s TimeFilter,
    acl: Option<&'s Rules>,
    args: &Args,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Hit<'s>>> + 's> {
    let found = coll
        .lines(range, at)?
        .map(|h| h.map_err(anyhow::Error::from))
        .filter(move |h| match h {
            Ok(hit) => {
                let (key, datetime) = lines::key_datetime(&hit.line);
                (!time.is_active() || time.accepts(datetime))
                    && acl.map_or(true, |rules| rules.access(key, datetime) != Access::Exclude)
            }
            Err(_) => true,
        });
    let order = match (&args.closest, args.reverse) {
        (Some(c), _) => Order::Closest(c.as_bytes().to_vec()),
        (None, true) => Order::Reverse,
        (None, false) => Order::Index,
    };
    Ok(ordered(found, &order, args.limit, |h: &Hit| {
        lines::key_datetime(&h.line).1
    }))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let batch = args.keys.is_some() || args.urls.is_some();
    let mut paths = args.positional.clone();
    let url = if args.key.is_some() || batch || (args.check && paths.len() == 1) {
        None
    } else {
        if paths.len() < 2 {
            bail!("give INDEX... and a URL (or --key K, --keys FILE, --urls FILE)");
        }
        paths.pop()
    };
    if batch && args.output == Format::Link {
        bail!("--output link prints one TimeMap for one URL; it cannot answer --keys or --urls");
    }
    if args.output == Format::Link {
        let m = match (&args.key, &url) {
            (None, Some(url)) => url_shortcut(url, args.match_type.map(MatchType::from)).1,
            _ => args
                .match_type
                .map(MatchType::from)
                .unwrap_or(MatchType::Exact),
        };
        if m != MatchType::Exact {
            bail!("--output link prints the TimeMap of one URL: it needs an exact match");
        }
    }
    let mut coll = Collection::open(&paths, args.no_mmap)?;
    if args.check {
        check_order(&coll)?;
        if url.is_none() && args.key.is_none() && !batch {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let fields = coll.value_names();
    let surt = coll.surt_options()?;
    let format = format::Format::from(args.output);
    let time = TimeFilter::new(
        args.from.as_deref().map(str::as_bytes),
        args.to.as_deref().map(str::as_bytes),
    );
    let acl = match &args.acl {
        Some(path) => {
            let text =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            Some(Rules::parse(&text).with_context(|| format!("{}", path.display()))?)
        }
        None => None,
    };
    let acl = acl.as_ref();
    let match_type = args.match_type.map(MatchType::from);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());

    if batch {
        let (path, as_url) = match (&args.keys, &args.urls) {
            (Some(p), _) => (p, false),
            (None, Some(p)) => (p, true),
            (None, None) => unreachable!("batch needs --keys or --urls"),
        };
        let mut rdr = open_input(path)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(thread_count(args.threads))
            .build()
            .context("starting threads")?;
        let mut any = false;
        let mut sampled = false;
        let uncanonical = AtomicU64::new(0);
        // Sampling costs a page per step of each file: worth it from a few
        // thousand queries on.
        const SAMPLE_AFTER: usize = 4096;
        const SAMPLE_STEP: usize = 4 << 10;
        loop {
            let queries = batch::read_chunk(&mut rdr, batch::CHUNK).context("reading queries")?;
            if queries.is_empty() {
                break;
            }
            if !sampled && queries.len() >= SAMPLE_AFTER {
                // Many queries: keep the top of every search in memory.
                for source in coll.sources_mut() {
                    let name = source.name().to_string();
                    if let Some(search) = source.search_mut() {
                        search
                            .sample(SAMPLE_STEP)
                            .with_context(|| format!("reading {name}"))?;
                    }
                }
            }
            sampled = true;
            let coll = &coll;
            let (bufs, hit) =
                batch::answer_in_order(&pool, &queries, 1024, |qs, buf: &mut Spill| {
                    let ranges: Vec<KeyRange> = qs
                        .iter()
                        .map(|q| {
                            if as_url {
                                let (query, failed) =
                                    url_query(q, &surt, Some(MatchType::Exact), false);
                                if failed {
                                    uncanonical.fetch_add(1, Ordering::Relaxed);
                                }
                                query.range
                            } else {
                                KeyRange::new(q.as_bytes(), MatchType::Exact)
                            }
                        })
                        .collect();
                    // The lower bounds in each sampled index, found together.
                    let starts: Vec<&[u8]> = ranges.iter().map(|r| &r.start[..]).collect();
                    let mut bounds = Vec::with_capacity(coll.sources().len());
                    for source in coll.sources() {
                        bounds.push(match source.search() {
                            Some(search) if search.is_sampled() => Some(
                                search
                                    .lower_bounds(&starts)
                                    .with_context(|| format!("searching {}", source.name()))?,
                            ),
                            _ => None,
                        });
                    }
                    let mut hit = false;
                    for (i, range) in ranges.iter().enumerate() {
                        let at = |s: usize| bounds[s].as_ref().map(|b| b[i]);
                        for found in answer(coll, range, at, &time, acl, &args)? {
                            write_line(buf, &found?.line, format, &fields)?;
                            hit = true;
                        }
                    }
                    anyhow::Ok(hit)
                })?;
            any |= hit;
            for buf in bufs {
                buf.copy_to(&mut out)?;
            }
        }
        out.flush()?;
        let n = uncanonical.load(Ordering::Relaxed);
        if n > 0 {
            eprintln!(
                "ukvs: lookup: {n} URLs could not be canonicalised and were looked up as given"
            );
        }
        return Ok(if any {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }

    let query = match (&args.key, &url) {
        (Some(key), _) => Query {
            range: KeyRange::new(key.as_bytes(), match_type.unwrap_or(MatchType::Exact)),
            url: None,
        },
        (None, Some(url)) => url_query(url, &surt, match_type, true).0,
        (None, None) => bail!("nothing to look up"),
    };
    let mut any = false;
    if args.output == Format::Link {
        let links = TimeMapLinks {
            prefix: &args.archive_prefix,
            timemap: args.timemap_url.as_deref(),
            timegate: args.timegate_url.as_deref(),
        };
        let found = answer(&coll, &query.range, |_| None, &time, acl, &args)?
            .map(|h| h.map(|h| h.line))
            .collect::<anyhow::Result<Vec<_>>>()?;
        any = !found.is_empty();
        write_timemap(&mut out, &found, query.url.as_deref(), &links, &fields)?;
    } else {
        for found in answer(&coll, &query.range, |_| None, &time, acl, &args)? {
            write_line(&mut out, &found?.line, format, &fields)?;
            any = true;
        }
    }
    out.flush()?;
    Ok(if !any {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
