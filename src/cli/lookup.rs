//! `ukvs lookup`: binary-search sorted indexes and ZipNum clusters.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use ukvs::acl::Rules;
use ukvs::digest::{Digest, Entry};
use ukvs::engine::digests::{captures, Originals, Resolver};
use ukvs::engine::format::{self, write_line, write_timemap, TimeMapLinks};
use ukvs::engine::fs::open_queries;
use ukvs::engine::lookup::{url_range, Collection, Filters, Order};
use ukvs::sorted::{url_shortcut, KeyRange, MatchType, TimeFilter};

/// Look up captures of a URL (or key) in sorted indexes.
///
/// Each INDEX is a sorted UKVS, CDXJ or CDX file (memory-mapped; a lookup
/// touches O(log n) pages) or a ZipNum cluster (its directory or its `.idx`
/// file). The last positional argument is the URL, canonicalised to its
/// SURT key, unless `--key`, `--keys` or `--urls` is given. Results from
/// several indexes are merged in byte order (ties in index order). A CDX
/// file keyed by URLs (wget's `--warc-cdx`) is read whole when opened,
/// its lines keyed by the SURTs of their URLs and sorted in memory (O(n)),
/// and answered from as CDXJ lines.
///
/// Matching follows pywb's CDX server: `--match exact|prefix|host|domain`,
/// or the shortcuts `*.example.com` (domain) and `example.com/*` (prefix);
/// `--from`/`--to` take partial datetimes padded low/high; `--closest`
/// orders by distance in time; `--reverse` gives the last matches first.
///
/// Batch: `--keys -` or `--urls -` read one query per line and print, for
/// each query in input order, its exact matches in index order.
///
/// By digest: `--digest D` reads the INDEX arguments as digest files
/// (`ukvs index --digests`, `ukvs digests`) and prints every capture of
/// that payload, at any URL, oldest first (D in any spelling: `sha1:` and
/// base32, base32 alone or in lower case, 40 hex digits, `sha256:` and hex
/// or base32). `--resolve-revisits` adds pywb's `orig.length`,
/// `orig.offset` and `orig.filename` to each line: for a revisit, the
/// original's, found in the answer as pywb finds it, else at the URL and
/// date the revisit refers to, else by digest in the `--digests` files.
///
/// A live collection of `ukvs serve --data DIR` is read as the server
/// reads it with `--data DIR/NAME` (its delta), its files given as INDEX
/// as they are given to the server (none for a collection made by POSTs
/// alone): the files' lines less the deleted ones, with the posted ones
/// merged in. The store cannot be opened while the server runs. With
/// `--digest`, the INDEX arguments are the digest files of its files:
/// their captures less the deleted ones, with the posted captures of
/// that payload, which the delta keeps by digest (through folds too).
/// `--resolve-revisits` finds originals among the collection's lines.
///
/// Exit status: 0 when something matched, 1 when nothing did, 2 on error
/// (including an index found out of order on the search path, or in the
/// first or last 64 KiB of a file, checked when it is opened: a file
/// sorted in a locale's order, by `sort` without `LC_ALL=C`, fails).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Index files or ZipNum clusters (a directory, an `.idx`, or the URL
    /// of either: `http(s)://HOST/DIR/`, `s3://BUCKET/PREFIX/`), then the
    /// URL to look up.
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
    /// Memory for inflated ZipNum blocks, shared by every lookup (and
    /// every server thread): bytes, or with K, M, G (`0` = off: each
    /// lookup inflates no further into a block than it reads). Default: a
    /// sixteenth of the machine's memory, at most 4G.
    #[arg(long, value_name = "SIZE", value_parser = parse_cache)]
    cache: Option<u64>,
    /// Look up this payload digest in digest files (the INDEX arguments)
    /// instead of a URL: every capture of the payload, oldest first.
    #[arg(long, value_name = "DIGEST", conflicts_with_all = ["key", "keys", "urls", "closest", "reverse", "acl", "resolve_revisits"])]
    digest: Option<String>,
    /// Add `orig.length`, `orig.offset` and `orig.filename` to each line,
    /// the original capture's for a revisit (pywb's resolveRevisits, and
    /// revisits of another URL: by their refers-to URL and date, else by
    /// digest through --digests).
    #[arg(long, conflicts_with_all = ["keys", "urls"])]
    resolve_revisits: bool,
    /// Digest files where --resolve-revisits looks up by digest the
    /// originals it finds no other way.
    #[arg(long, value_name = "FILE", requires = "resolve_revisits")]
    digests: Vec<PathBuf>,
    /// Threads for batch lookups (0 = all cores).
    #[arg(short = 'j', long, default_value_t = 0)]
    threads: usize,
    /// A live collection's directory (`DIR/NAME` of `ukvs serve --data
    /// DIR`): its delta is read with the INDEX files as its bases.
    #[arg(long, value_name = "DIR/NAME")]
    data: Option<PathBuf>,
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
            ukvs::report!(
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

/// `--cache SIZE`.
pub(crate) fn parse_cache(s: &str) -> Result<u64, String> {
    ukvs::engine::blocks::parse_size(s)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(c) = args.cache {
        ukvs::engine::blocks::set_capacity(c);
    }
    if let Some(digest) = &args.digest {
        return by_digest(&args, digest);
    }
    let batch = args.keys.is_some() || args.urls.is_some();
    let mut paths = args.positional.clone();
    let url = if args.key.is_some() || batch || (args.check && paths.len() == 1) {
        None
    } else {
        if paths.len() < 2 && !(args.data.is_some() && paths.len() == 1) {
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
    if let Some(data) = &args.data {
        return run_live(&args, &paths, data, url);
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
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let filters = filters(&args)?;
    if batch {
        let (path, as_url) = match (&args.keys, &args.urls) {
            (Some(p), _) => (p, false),
            (None, Some(p)) => (p, true),
            (None, None) => unreachable!("batch needs --keys or --urls"),
        };
        let mut rdr = open_queries(path)?;
        let write = |w: &mut dyn Write, line: &[u8]| write_line(w, line, format, &fields);
        let (any, n) = coll.batch(&mut rdr, as_url, &filters, args.threads, &mut out, &write)?;
        out.flush()?;
        if n > 0 {
            ukvs::report!(
                "ukvs: lookup: {n} URLs could not be canonicalised and were looked up as given"
            );
        }
        let skipped: u64 = coll.sources().iter().map(|s| s.skipped()).sum();
        return Ok(if skipped > 0 {
            ExitCode::from(2)
        } else if any {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }

    let (range, url) = query_range(&args, url.as_deref(), &surt)?;
    let digests = digest_files(&args)?;
    let mut resolver = match args.resolve_revisits {
        true => {
            let mut r = Resolver::new(Originals {
                index: Some(&coll),
                value_names: fields.clone(),
                surt: surt.clone(),
                digests: digests.as_ref(),
            });
            r.scan(coll.lines(&range, |_| None)?)?;
            Some(r)
        }
        false => None,
    };
    let found = coll
        .answer(&range, |_| None, &filters)?
        .map(|h| h.map(|h| h.line));
    let any = write_answer(
        &args,
        &mut out,
        found,
        url.as_deref(),
        &fields,
        resolver.as_mut(),
    )?;
    out.flush()?;
    // Lines an index could not give (each reported when it was opened)
    // make the answer incomplete.
    let skipped: u64 = coll.sources().iter().map(|s| s.skipped()).sum();
    Ok(if skipped > 0 {
        ExitCode::from(2)
    } else if !any {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the lookup keeps and in which order.
fn filters(args: &Args) -> anyhow::Result<Filters> {
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
    Ok(Filters {
        time,
        acl,
        order: match (&args.closest, args.reverse) {
            (Some(c), _) => Order::Closest(c.as_bytes().to_vec()),
            (None, true) => Order::Reverse,
            (None, false) => Order::Index,
        },
        limit: args.limit,
    })
}

/// The key range of the one query (`--key` or the URL), and the URL.
fn query_range(
    args: &Args,
    url: Option<&str>,
    surt: &ukvs::surt::Options,
) -> anyhow::Result<(KeyRange, Option<String>)> {
    let match_type = args.match_type.map(MatchType::from);
    Ok(match (&args.key, url) {
        (Some(key), _) => (
            KeyRange::new(key.as_bytes(), match_type.unwrap_or(MatchType::Exact)),
            None,
        ),
        (None, Some(url)) => {
            let (range, url, err) = url_range(url, surt, match_type);
            if let Some(err) = err {
                ukvs::report!("ukvs: lookup: {url}: {err}; looking it up as given");
            }
            (range, Some(url))
        }
        (None, None) => bail!("nothing to look up"),
    })
}

/// A lookup over a live collection (`--data`): its bases and its delta
/// read as the server reads them. Batches are answered one query after
/// another.
fn run_live(
    args: &Args,
    paths: &[String],
    data: &std::path::Path,
    url: Option<String>,
) -> anyhow::Result<ExitCode> {
    let live = ukvs::engine::merged::Live::open(paths, Some(data), args.no_mmap)?;
    if args.check {
        if let Some(bases) = &live.bases {
            check_order(bases)?;
        }
    }
    let fields = live.value_names.clone();
    let surt = live.surt_options()?;
    let format = format::Format::from(args.output);
    let filters = filters(args)?;
    let merged = live.merged();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut any = false;
    let batch = match (&args.keys, &args.urls) {
        (Some(p), _) => Some((p, false)),
        (None, Some(p)) => Some((p, true)),
        (None, None) => None,
    };
    if let Some((path, as_url)) = batch {
        use std::io::BufRead;
        let rdr = open_queries(path)?;
        for q in rdr.lines() {
            let q = q.context("reading queries")?;
            let q = q.trim_end_matches('\r');
            if q.is_empty() {
                continue;
            }
            let range = match as_url {
                true => url_range(q, &surt, Some(MatchType::Exact)).0,
                false => KeyRange::new(q.as_bytes(), MatchType::Exact),
            };
            for found in merged.answer(&range, &filters)? {
                write_line(&mut out, &found?, format, &fields)?;
                any = true;
            }
        }
    } else {
        let (range, url) = query_range(args, url.as_deref(), &surt)?;
        let digests = digest_files(args)?;
        let mut resolver = match args.resolve_revisits {
            true => {
                let mut r = Resolver::new(Originals {
                    index: Some(&merged),
                    value_names: fields.clone(),
                    surt: surt.clone(),
                    digests: digests.as_ref(),
                });
                r.scan_lines(merged.lines(&range)?)?;
                Some(r)
            }
            false => None,
        };
        let found = merged.answer(&range, &filters)?;
        any = write_answer(
            args,
            &mut out,
            found,
            url.as_deref(),
            &fields,
            resolver.as_mut(),
        )?;
    }
    out.flush()?;
    let skipped: u64 = merged.sources().iter().map(|s| s.skipped()).sum();
    Ok(if skipped > 0 {
        ExitCode::from(2)
    } else if !any {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--digests` files, opened.
fn digest_files(args: &Args) -> anyhow::Result<Option<Collection>> {
    if args.digests.is_empty() {
        return Ok(None);
    }
    Ok(Some(Collection::open(&args.digests, args.no_mmap)?))
}

/// Writes one query's answer: its TimeMap (`--output link`), or each
/// line, with the originals of revisits when `resolver` is given.
/// Whether there was any line.
fn write_answer<'l, E>(
    args: &Args,
    out: &mut impl Write,
    found: impl Iterator<Item = Result<std::borrow::Cow<'l, [u8]>, E>>,
    url: Option<&str>,
    fields: &[String],
    resolver: Option<&mut Resolver<'_>>,
) -> anyhow::Result<bool>
where
    anyhow::Error: From<E>,
{
    let format = format::Format::from(args.output);
    if args.output == Format::Link {
        if resolver.is_some() {
            bail!("--resolve-revisits adds fields to lines: a TimeMap has none");
        }
        let links = TimeMapLinks {
            prefix: &args.archive_prefix,
            timemap: args.timemap_url.as_deref(),
            timegate: args.timegate_url.as_deref(),
        };
        let found = found.collect::<Result<Vec<_>, _>>()?;
        write_timemap(out, &found, url, &links, fields)?;
        return Ok(!found.is_empty());
    }
    let mut any = false;
    match resolver {
        Some(resolver) => {
            for line in found {
                write_line(out, &resolver.line(&line?)?, format, fields)?;
                any = true;
            }
        }
        None => {
            for line in found {
                write_line(out, &line?, format, fields)?;
                any = true;
            }
        }
    }
    Ok(any)
}

/// `--digest`: every capture of one payload in the digest files given as
/// INDEX, oldest first; with `--data`, of the live collection those files
/// were made of (less what its delta deleted, with what was posted).
fn by_digest(args: &Args, digest: &str) -> anyhow::Result<ExitCode> {
    let digest = Digest::parse(digest).with_context(|| format!("--digest {digest}"))?;
    if args.output == Format::Link {
        bail!("--digest lists captures of many URLs: a TimeMap is of one URL");
    }
    let coll = Collection::open(&args.positional, args.no_mmap)?;
    let live = match &args.data {
        Some(data) => {
            let live = ukvs::engine::merged::Live::open::<PathBuf>(&[], Some(data), args.no_mmap)?;
            Some(live)
        }
        None => None,
    };
    let found: Box<dyn Iterator<Item = Result<Vec<u8>, ukvs::engine::digests::Error>>> = match &live
    {
        Some(live) => Box::new(live.merged().captures(&coll, &digest)?),
        None => Box::new(captures(&coll, &digest)?),
    };
    let time = TimeFilter::new(
        args.from.as_deref().map(str::as_bytes),
        args.to.as_deref().map(str::as_bytes),
    );
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut n = 0;
    for line in found {
        if args.limit.is_some_and(|l| n >= l) {
            break;
        }
        let line = line?;
        let Some(entry) = Entry::parse(&line) else {
            continue;
        };
        let datetime = entry.record.datetime.as_deref().unwrap_or("-");
        if time.is_active() && !time.accepts(datetime.as_bytes()) {
            continue;
        }
        match args.output {
            Format::Ukvs => out.write_all(&line)?,
            Format::Cdxj => out.write_all(entry.to_cdxj().as_bytes())?,
            Format::Json => {
                let cdxj = entry.to_cdxj();
                let json = cdxj.splitn(3, ' ').nth(2).unwrap_or("{}");
                let mut obj: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(json)?;
                let mut all = serde_json::Map::new();
                all.insert("urlkey".into(), entry.record.surt.clone().into());
                all.insert("timestamp".into(), entry.record.datetime.clone().into());
                all.append(&mut obj);
                serde_json::to_writer(&mut out, &all)?;
            }
            Format::Link => unreachable!("refused above"),
        }
        out.write_all(b"\n")?;
        n += 1;
    }
    out.flush()?;
    let skipped: u64 = coll.sources().iter().map(|s| s.skipped()).sum();
    Ok(if skipped > 0 {
        ExitCode::from(2)
    } else if n == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
