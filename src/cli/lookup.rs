//! `ukvs lookup`: binary-search sorted indexes and ZipNum clusters.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context};
use ukvs::sorted::zipnum::Cluster;
use ukvs::sorted::{
    lines, prefix_key_for_url, sort_closest, url_shortcut, KeyRange, MatchType, Search, TimeFilter,
};

use super::batch;
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

/// The bytes of an index file: mapped, read, or nothing (empty file).
enum Bytes {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }
}

/// Opens `path` for searching: memory-mapped, or read into memory with
/// `no_mmap` or when it cannot be mapped (an empty file, a pipe).
fn open_bytes(path: &Path, no_mmap: bool) -> anyhow::Result<Bytes> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if !no_mmap {
        // No advice: a search reads a few pages here and there.
        let map = super::input::map_file(&file, memmap2::Advice::Normal)
            .with_context(|| format!("cannot map {}", path.display()))?;
        if let Some(map) = map {
            return Ok(Bytes::Map(map));
        }
    }
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Bytes::Vec(buf))
}

/// One index taking part in a lookup.
enum Source {
    Plain {
        name: String,
        search: Search<Bytes>,
    },
    Cluster {
        name: String,
        cluster: Cluster<Bytes>,
        shards: HashMap<String, Vec<PathBuf>>,
    },
}

impl Source {
    fn open(path: &Path, no_mmap: bool) -> anyhow::Result<Source> {
        let name = path.display().to_string();
        let idx = if path.is_dir() {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(path).with_context(|| format!("cannot list {name}"))? {
                let p = entry?.path();
                if p.extension().is_some_and(|e| e == "idx") {
                    found.push(p);
                }
            }
            match found.len() {
                1 => found.pop(),
                0 => bail!("{name} is a directory without a ZipNum .idx file"),
                _ => bail!("{name} holds several .idx files; name the one to use"),
            }
        } else if path.extension().is_some_and(|e| e == "idx") {
            Some(path.to_path_buf())
        } else {
            None
        };
        match idx {
            None => {
                let bytes = open_bytes(path, no_mmap)?;
                // Bisecting compressed bytes would only report disorder.
                if bytes.as_ref().starts_with(&[0x1f, 0x8b]) {
                    bail!(
                        "{name} is gzip-compressed: a binary search needs a plain file \
                         (gunzip it, or build a cluster with `ukvs zipnum build`)"
                    );
                }
                Ok(Source::Plain {
                    search: Search::new(bytes),
                    name,
                })
            }
            Some(idx) => {
                let shards = read_loc(&idx.with_extension("loc"))?;
                Ok(Source::Cluster {
                    cluster: Cluster::new(open_bytes(&idx, no_mmap)?),
                    name: idx.display().to_string(),
                    shards,
                })
            }
        }
    }

    /// Lines in `range` passing `time`, in index order.
    /// The lines of `range` that pass `time`; `at` is the range's lower
    /// bound in a plain index when the caller found it already
    /// ([`Search::lower_bounds`]).
    fn lines<'s>(
        &'s self,
        range: &KeyRange,
        time: &TimeFilter,
        at: Option<usize>,
    ) -> anyhow::Result<Vec<Cow<'s, [u8]>>> {
        let keep = |line: &[u8]| !time.is_active() || time.accepts(lines::key_datetime(line).1);
        match self {
            Source::Plain { name, search } => {
                let mut out = Vec::new();
                let found = match at {
                    Some(pos) => search.range_from(range, pos),
                    None => search.range(range),
                };
                for item in found.with_context(|| format!("searching {name}"))? {
                    let (_, line) = item.with_context(|| format!("searching {name}"))?;
                    if keep(line) {
                        out.push(Cow::Borrowed(line));
                    }
                }
                Ok(out)
            }
            Source::Cluster {
                name,
                cluster,
                shards,
            } => {
                let found = cluster
                    .range(range, shard_fetcher(shards))
                    .with_context(|| format!("searching {name}"))?;
                Ok(found
                    .into_iter()
                    .filter(|l| keep(l))
                    .map(Cow::Owned)
                    .collect())
            }
        }
    }
}

/// Disorders reported per index by `--check` before the count.
const MAX_REPORTED: usize = 10;

/// `--check`: proves the order of every source, printing each disorder
/// found (the first few per index) and failing if there is any.
fn check_order(sources: &[Source]) -> anyhow::Result<()> {
    let mut bad = Vec::new();
    for source in sources {
        let (name, report) = match source {
            Source::Plain { name, search } => (name, search.check_order(MAX_REPORTED)),
            Source::Cluster {
                name,
                cluster,
                shards,
            } => {
                let report = cluster
                    .check_order(MAX_REPORTED, shard_fetcher(shards))
                    .with_context(|| format!("checking {name}"))?;
                (name, report)
            }
        };
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

/// Reads a `.loc` file: `shard<TAB>path[<TAB>path...]`, paths relative to
/// the `.loc` file's directory. Like pywb, a shard's paths are tried in
/// order and the first that opens is read.
fn read_loc(path: &Path) -> anyhow::Result<HashMap<String, Vec<PathBuf>>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the ZipNum location file {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut map: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for line in text.lines() {
        let mut parts = line.trim_end().split('\t');
        if let Some(shard) = parts.next() {
            map.entry(shard.to_string())
                .or_default()
                .extend(parts.filter(|p| !p.is_empty()).map(|p| dir.join(p)));
        }
    }
    Ok(map)
}

/// Reads blocks of a cluster's shards, found through the `.loc` file's
/// paths: `(shard, offset, length) -> bytes`.
fn shard_fetcher(
    shards: &HashMap<String, Vec<PathBuf>>,
) -> impl Fn(&str, u64, u64) -> std::io::Result<Vec<u8>> + '_ {
    move |shard, offset, length| {
        let paths = shards.get(shard).ok_or_else(|| {
            std::io::Error::other(format!("shard {shard:?} is not in the .loc file"))
        })?;
        fetch_block(paths, offset, length)
    }
}

/// Reads `length` bytes at `offset` of the first path of a shard that opens.
fn fetch_block(paths: &[PathBuf], offset: u64, length: u64) -> std::io::Result<Vec<u8>> {
    let mut last = std::io::Error::other("the .loc file gives no path for this shard");
    for path in paths {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                last = std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
                continue;
            }
        };
        f.seek(SeekFrom::Start(offset))?;
        let mut buf = vec![0; usize::try_from(length).map_err(std::io::Error::other)?];
        f.read_exact(&mut buf)?;
        return Ok(buf);
    }
    Err(last)
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

/// Lines of every source for one query, merged in byte order (ties in
/// source order), filtered and ordered as asked.
/// The answer to one query; `at(i)` is the lower bound of the range in
/// source `i` when the caller found it already.
fn answer<'s>(
    sources: &'s [Source],
    range: &KeyRange,
    at: impl Fn(usize) -> Option<usize>,
    time: &TimeFilter,
    args: &Args,
) -> anyhow::Result<Vec<Cow<'s, [u8]>>> {
    let mut found: Vec<Cow<'s, [u8]>> = if sources.len() == 1 {
        sources[0].lines(range, time, at(0))?
    } else {
        let mut tagged = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            tagged.extend(s.lines(range, time, at(i))?.into_iter().map(|l| (l, i)));
        }
        // Each list is sorted; a stable sort by line keeps source order for
        // equal lines, as a k-way merge with a source tie-break would.
        tagged.sort_by(|a, b| a.0.cmp(&b.0));
        tagged.into_iter().map(|(l, _)| l).collect()
    };
    if let Some(closest) = &args.closest {
        sort_closest(&mut found, closest.as_bytes(), |l| lines::key_datetime(l).1);
        if let Some(n) = args.limit {
            found.truncate(n);
        }
    } else if args.reverse {
        if let Some(n) = args.limit {
            let skip = found.len().saturating_sub(n);
            found.drain(..skip);
        }
        found.reverse();
    } else if let Some(n) = args.limit {
        found.truncate(n);
    }
    Ok(found)
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
    let mut sources = Vec::new();
    for p in &paths {
        sources.push(Source::open(Path::new(p), args.no_mmap)?);
    }
    if args.check {
        check_order(&sources)?;
        if url.is_none() && args.key.is_none() && !batch {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let fields = value_names(&sources);
    let surt = surt_options(&sources)?;
    let time = TimeFilter::new(
        args.from.as_deref().map(str::as_bytes),
        args.to.as_deref().map(str::as_bytes),
    );
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
                for source in &mut sources {
                    if let Source::Plain { name, search } = source {
                        search
                            .sample(SAMPLE_STEP)
                            .with_context(|| format!("reading {name}"))?;
                    }
                }
            }
            sampled = true;
            let (bufs, hit) = batch::answer_in_order(&pool, &queries, 1024, |qs, buf| {
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
                let mut bounds = Vec::with_capacity(sources.len());
                for source in &sources {
                    bounds.push(match source {
                        Source::Plain { name, search } if search.is_sampled() => Some(
                            search
                                .lower_bounds(&starts)
                                .with_context(|| format!("searching {name}"))?,
                        ),
                        _ => None,
                    });
                }
                let mut hit = false;
                for (i, range) in ranges.iter().enumerate() {
                    let at = |s: usize| bounds[s].as_ref().map(|b| b[i]);
                    let found = answer(&sources, range, at, &time, &args)?;
                    write_lines(buf, &found, args.output, &fields)?;
                    hit |= !found.is_empty();
                }
                anyhow::Ok(hit)
            })?;
            any |= hit;
            for buf in &bufs {
                out.write_all(buf)?;
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
    let found = answer(&sources, &query.range, |_| None, &time, &args)?;
    if args.output == Format::Link {
        let links = TimeMapLinks {
            prefix: &args.archive_prefix,
            timemap: args.timemap_url.as_deref(),
            timegate: args.timegate_url.as_deref(),
        };
        write_timemap(&mut out, &found, query.url.as_deref(), &links, &fields)?;
    } else {
        write_lines(&mut out, &found, args.output, &fields)?;
    }
    out.flush()?;
    Ok(if found.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The SURT options URLs are keyed with: the profile the indexes' `!meta`
/// records (`ukvs index --keep-www` and the like), else the reference's
/// defaults. Indexes keyed with different profiles cannot be searched
/// with one key.
fn surt_options(sources: &[Source]) -> anyhow::Result<ukvs::surt::Options> {
    let headers = sources.iter().flat_map(|s| match s {
        Source::Plain { search, name } => Some(search.headers().map(move |h| (name.as_str(), h))),
        Source::Cluster { .. } => None,
    });
    Ok(super::surt::profile_in_headers(headers.flatten())?.unwrap_or_default())
}

/// Names of the value fields between the datetime and the JSON block:
/// from a `!fields {.., values: [..]}` header of the first plain index, else
/// the default UKVS capture profile's (`offset`, `digest`).
fn value_names(sources: &[Source]) -> Vec<String> {
    for s in sources {
        if let Source::Plain { search, .. } = s {
            for h in search.headers() {
                if let Some(rest) = h.strip_prefix(b"!fields ") {
                    if let Some(names) = parse_values(rest) {
                        return names;
                    }
                }
            }
        }
    }
    vec!["offset".into(), "digest".into()]
}

/// The `values` list of a `!fields` header body, read leniently (its keys
/// may be unquoted): the quoted strings after `values`.
fn parse_values(body: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(body).ok()?;
    let at = text.find("values")?;
    let list = &text[at..];
    let open = list.find('[')?;
    let close = list[open..].find(']')? + open;
    let names = list[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Some(names)
}

/// CDX11 value letters after key and datetime (` CDX N b a m s k r M S V g`),
/// named as `ukvs cat` names them.
const CDX11_VALUES: &[u8] = b"amskrMSVg";

/// Key, datetime and the other fields of an index line as JSON.
fn to_json(
    line: &[u8],
    names: &[String],
) -> (String, String, serde_json::Map<String, serde_json::Value>) {
    let text = String::from_utf8_lossy(line);
    let (head, json) = match text.find(" {") {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (&text[..], None),
    };
    let mut parts = head.split(' ');
    let key = parts.next().unwrap_or_default().to_string();
    let datetime = parts.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = parts.collect();
    let mut map = serde_json::Map::new();
    let names: Vec<&str> = if json.is_none() && rest.len() == CDX11_VALUES.len() {
        CDX11_VALUES
            .iter()
            .filter_map(|&c| ukvs::ukvs::convert::cdx_letter_name(c))
            .collect()
    } else {
        names.iter().map(String::as_str).collect()
    };
    for (i, v) in rest.iter().enumerate() {
        if *v == "-" {
            continue;
        }
        let name = names
            .get(i)
            .map_or_else(|| format!("field{}", i + 3), |n| n.to_string());
        map.insert(name, serde_json::Value::String(v.to_string()));
    }
    if let Some(json) = json {
        if let Ok(serde_json::Value::Object(obj)) = serde_json::from_str::<serde_json::Value>(json)
        {
            map.extend(obj);
        }
    }
    (key, datetime, map)
}

fn write_lines(
    wtr: &mut impl Write,
    found: &[Cow<[u8]>],
    format: Format,
    names: &[String],
) -> anyhow::Result<()> {
    for line in found {
        match format {
            Format::Ukvs | Format::Link => {
                wtr.write_all(line)?;
            }
            Format::Cdxj => {
                if lines::field(line, 2).is_some_and(|f| f.first() == Some(&b'{')) {
                    wtr.write_all(line)?;
                } else {
                    let (key, datetime, map) = to_json(line, names);
                    write!(wtr, "{key} {datetime} {}", serde_json::Value::Object(map))?;
                }
            }
            Format::Json => {
                let (key, datetime, map) = to_json(line, names);
                let mut obj = serde_json::Map::new();
                obj.insert("urlkey".into(), key.into());
                obj.insert("timestamp".into(), datetime.into());
                obj.extend(map);
                write!(wtr, "{}", serde_json::Value::Object(obj))?;
            }
        }
        wtr.write_all(b"\n")?;
    }
    Ok(())
}

/// RFC 1123 date of a 14-digit datetime (`Mon, 27 Jan 2014 17:12:00 GMT`).
fn http_date(datetime: &str) -> String {
    let secs = ukvs::sorted::datetime_to_secs(datetime.as_bytes());
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970 (inverse of the lookup's arithmetic).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        day,
        MONTHS[(month - 1).clamp(0, 11) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The URLs a TimeMap links to besides its mementos.
struct TimeMapLinks<'a> {
    /// Memento URLs are `{prefix}{datetime}/{url}`.
    prefix: &'a str,
    /// The TimeMap's own URL (`rel="self"`), when known.
    timemap: Option<&'a str>,
    /// The TimeGate (`rel="timegate"`), when known.
    timegate: Option<&'a str>,
}

/// An RFC 7089 TimeMap (application/link-format) of the results, shaped
/// like the example of RFC 7089 section 5: the original resource, the
/// TimeMap itself (with `from`/`until`) and the TimeGate when their URLs
/// are given, then the mementos in time order, the earliest marked
/// `first memento` and the latest `last memento`.
///
/// The original is the URL captured by the latest memento (captures of one
/// SURT key may differ in scheme or `www.`); each memento links to its own
/// captured URL. Lines without a `url` field (the default UKVS profile
/// keeps it in the JSON block, CDX11 in a column) fall back to the URL
/// asked for, else to the key. Repeated `(datetime, url)` pairs, such as a
/// response and its revisit in the same second, are one memento. Nothing
/// is printed when nothing was found.
fn write_timemap(
    wtr: &mut impl Write,
    found: &[Cow<[u8]>],
    url: Option<&str>,
    links: &TimeMapLinks,
    names: &[String],
) -> anyhow::Result<()> {
    let mut mementos: Vec<(String, String)> = found
        .iter()
        .map(|l| {
            let (key, datetime, map) = to_json(l, names);
            let original = match map.get("url").and_then(|v| v.as_str()) {
                Some(u) => u.to_string(),
                None => url.map_or(key, str::to_string),
            };
            (datetime, original)
        })
        .collect();
    // Time order (stable, so equal datetimes keep index order).
    mementos.sort_by(|a, b| a.0.cmp(&b.0));
    mementos.dedup();
    let (Some(first), Some(last)) = (mementos.first(), mementos.last()) else {
        return Ok(());
    };
    write!(wtr, "<{}>; rel=\"original\"", link_uri(&last.1))?;
    if let Some(timemap) = links.timemap {
        write!(
            wtr,
            ",\n<{}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\"",
            link_uri(timemap),
            http_date(&first.0),
            http_date(&last.0)
        )?;
    }
    if let Some(timegate) = links.timegate {
        write!(wtr, ",\n<{}>; rel=\"timegate\"", link_uri(timegate))?;
    }
    let n = mementos.len();
    for (i, (datetime, orig)) in mementos.iter().enumerate() {
        let rel = match (i == 0, i + 1 == n) {
            (true, true) => "first last memento",
            (true, false) => "first memento",
            (false, true) => "last memento",
            (false, false) => "memento",
        };
        write!(
            wtr,
            ",\n<{}>; rel=\"{rel}\"; datetime=\"{}\"",
            link_uri(&format!("{}{datetime}/{orig}", links.prefix)),
            http_date(datetime)
        )?;
    }
    wtr.write_all(b"\n")?;
    Ok(())
}

/// A URI made safe between `<` and `>` of a link-format entry: bytes a URI
/// cannot hold (controls, space, `<`, `>`, `"`, non-ASCII) percent-encoded,
/// everything else (including `%` escapes already there) kept.
fn link_uri(uri: &str) -> Cow<'_, str> {
    let unsafe_byte = |b: u8| b <= b' ' || b >= 0x7f || matches!(b, b'<' | b'>' | b'"');
    if !uri.bytes().any(unsafe_byte) {
        return Cow::Borrowed(uri);
    }
    let mut out = String::with_capacity(uri.len() + 8);
    for b in uri.bytes() {
        if unsafe_byte(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(http_date("20140127171200"), "Mon, 27 Jan 2014 17:12:00 GMT");
        assert_eq!(http_date("19700101000000"), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date("20000229235959"), "Tue, 29 Feb 2000 23:59:59 GMT");
    }

    #[test]
    fn link_uris_escape_what_would_end_the_link() {
        assert_eq!(
            link_uri("http://a.example/x?q=1%20"),
            "http://a.example/x?q=1%20"
        );
        assert_eq!(
            link_uri("http://a.example/<b> \"c\""),
            "http://a.example/%3Cb%3E%20%22c%22"
        );
        assert_eq!(link_uri("http://a.example/é"), "http://a.example/%C3%A9");
    }

    #[test]
    fn fields_header_values() {
        let names = parse_values(br#"{keys: ["surt", "datetime"], values: ["offset", "digest"]}"#);
        assert_eq!(
            names,
            Some(vec!["offset".to_string(), "digest".to_string()])
        );
    }
}
