//! `/NAME/cdx`: pywb 2.10's CDX server API, and `/NAME/timemap/link/URL`.
//!
//! The steps and their order are pywb's (its `IndexHandler`, `cdx_load`,
//! `FuzzyMatcher` and `AccessChecker`):
//!
//! ```text
//! params ─► output? url? matchType? ─► key range ─► each source's lines
//!   (ZipNum: one page of blocks) ─► CDX objects + source ─► merged by
//!   their JSON text ─► resolveRevisits ─► filter ─► from/to ─►
//!   collapseTime ─► closest | reverse | limit ─► (nothing? the fuzzy
//!   query) ─► access rules ─► cdxj | json | text | link
//! ```
//!
//! Lines stream through every step except closest and reverse order,
//! which hold at most `limit` lines, as pywb's do. An error found before
//! the first line is the answer: 400 for a bad request (pywb answers a
//! few of them, such as `limit=abc`, with a Python exception as a 500;
//! here they say which parameter is wrong), 500 when an index cannot be
//! read; one found later ends the answer where it is.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use ukvs::engine::error::Kind;
use ukvs::engine::lookup::{ordered, MergeBy, Order};
use ukvs::sorted::{prefix_key_for_url, url_shortcut, KeyRange, MatchType};

use super::catalog::Coll;
use super::http::{self, Head, Sink};
use super::pywb::{alt_field, py_json_object, py_str_repr, Obj};

/// pywb's answer size when no `limit` is given.
const DEFAULT_LIMIT: i64 = 100_000;

/// ZipNum blocks per page unless `pageSize` says otherwise (pywb's
/// `max_blocks`).
const DEFAULT_PAGE_SIZE: i64 = 10;

/// Results of the fuzzy query unless `limit` says otherwise (pywb's
/// `fuzzy_search_limit`).
const FUZZY_LIMIT: &str = "100";

/// An answer that is an error.
#[derive(Debug)]
pub enum ApiError {
    /// A bad request (pywb's `CDXException`, and the parameters pywb
    /// fails on with an exception): 400.
    Bad(String),
    /// An index that cannot be read: 500, with the message as the reason.
    Internal(String),
    /// A remote shard or idx that cannot be had: 502, the upstream's
    /// failure named.
    Upstream(String),
}

/// An engine error as the answer: by its kind, never its text.
pub(super) trait Failed: std::fmt::Display {
    fn failure(&self) -> Kind;
}

impl Failed for ukvs::engine::merged::Error {
    fn failure(&self) -> Kind {
        self.kind()
    }
}

impl Failed for ukvs::engine::digests::Error {
    fn failure(&self) -> Kind {
        self.kind()
    }
}

impl Failed for ukvs::engine::lookup::Error {
    fn failure(&self) -> Kind {
        self.kind()
    }
}

impl ApiError {
    /// The answer to an engine error: 502 for a remote store's failure,
    /// 400 for options the engine refuses (the client's mistakes are
    /// mostly answered 400 before the engine is asked), else 500 (the
    /// server's own index). `alternate` gives the
    /// whole chain of an `anyhow` error (`{:#}`).
    pub(super) fn failed(e: &impl Failed, alternate: bool) -> ApiError {
        let msg = match alternate {
            true => format!("{e:#}"),
            false => e.to_string(),
        };
        match e.failure() {
            Kind::Remote => ApiError::Upstream(msg),
            Kind::Usage => ApiError::Bad(msg),
            _ => ApiError::Internal(msg),
        }
    }

    pub(super) fn head(&self) -> Head {
        let (status, msg) = match self {
            ApiError::Bad(m) => (400, m.clone()),
            ApiError::Upstream(m) => (502, format!("Bad Gateway: {m}")),
            ApiError::Internal(m) => (500, format!("Internal Error: {m}")),
        };
        let mut body = String::new();
        let message = ("message".to_string(), serde_json::Value::String(msg));
        py_json_object(std::iter::once((&message.0, &message.1)), &mut body);
        Head::Fail(
            status,
            "application/json; charset=utf-8".into(),
            body.into_bytes(),
        )
    }
}

/// The query string as pywb reads it (`parse_qsl`, blank values dropped):
/// the last value of each name, and every `filter`.
#[derive(Clone, Debug, Default)]
pub struct Params {
    /// Names in first-seen order, last value each (`filter` apart).
    values: Vec<(String, String)>,
    filters: Vec<String>,
}

impl Params {
    pub fn parse(query: &str) -> Params {
        let mut p = Params::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            if v.is_empty() {
                continue;
            }
            if k == "filter" {
                p.filters.push(v.into_owned());
            } else {
                p.set(&k, &v);
            }
        }
        p
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn set(&mut self, name: &str, value: &str) {
        match self.values.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value.to_string(),
            None => self.values.push((name.to_string(), value.to_string())),
        }
    }

    fn remove(&mut self, name: &str) {
        self.values.retain(|(k, _)| k != name);
    }

    fn flag(&self, name: &str) -> bool {
        self.get(name).is_some_and(to_bool)
    }
}

/// pywb's `to_bool`.
fn to_bool(v: &str) -> bool {
    !matches!(
        v.to_ascii_lowercase().as_str(),
        "0" | "false" | "f" | "off" | "no" | "n"
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Cdxj,
    Json,
    Text,
    Link,
}

impl Output {
    fn content_type(self) -> &'static str {
        match self {
            Output::Cdxj => "text/x-cdxj",
            Output::Json => "text/x-ndjson",
            Output::Text => "text/plain",
            Output::Link => "application/link-format",
        }
    }
}

/// Headers every `/cdx` answer carries, as pywb's do.
fn cache_headers() -> Vec<(String, String)> {
    vec![(
        "Cache-Control".into(),
        "max-age=86400, must-revalidate".into(),
    )]
}

/// Answers `/NAME/cdx?query`.
pub async fn answer(coll: Arc<Coll>, query: &str) -> http::Response {
    let params = Params::parse(query);
    http::stream_held(coll.reads_only_blocks(), move |sink| {
        if let Err(e) = run(&coll, params.clone(), sink) {
            if sink.is_gone() {
                // No one to tell, or made again.
            } else if sink.is_started() {
                ukvs::report!("ukvs serve: {}: answer cut: {e:?}", coll.name);
            } else {
                sink.start(e.head());
            }
        }
    })
    .await
}

/// Python's `int()` of the parameter `name`, whose value is `s`.
fn py_int(name: &str, s: &str) -> Result<i64, ApiError> {
    let t = s.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let value = ok.then(|| t.replace('_', "").parse::<i64>().ok()).flatten();
    value.ok_or_else(|| {
        ApiError::Bad(format!(
            "Invalid value for {name}= param: {} (not an integer)",
            py_str_repr(s)
        ))
    })
}

/// What a query asks, once checked.
struct Query {
    output: Output,
    fields: Option<Vec<String>>,
    url: String,
    range: KeyRange,
}

/// Checks output, url and matchType in pywb's order and works out the key
/// range.
fn prepare(coll: &Coll, p: &Params) -> Result<Query, ApiError> {
    let output = match p.get("output").unwrap_or("cdxj") {
        "cdxj" => Output::Cdxj,
        "json" => Output::Json,
        "text" => Output::Text,
        "link" => Output::Link,
        other => return Err(ApiError::Bad(format!("output={other} not supported"))),
    };
    let fields = p
        .get("fields")
        .or_else(|| p.get("fl"))
        .map(|f| f.split(',').map(str::to_string).collect());
    let Some(url) = p.get("url") else {
        return Err(ApiError::Bad("The \"url\" param is required".into()));
    };
    let explicit = match p.get("matchType") {
        None => None,
        Some("exact") => Some(MatchType::Exact),
        Some("prefix") => Some(MatchType::Prefix),
        Some("host") => Some(MatchType::Host),
        Some("domain") => Some(MatchType::Domain),
        Some(other) => return Err(ApiError::Bad(format!("Invalid match_type: {other}"))),
    };
    let (url, m) = url_shortcut(url, explicit);
    let mut key = ukvs::surt::key(url.as_bytes(), &coll.surt).0;
    if m == MatchType::Prefix {
        key = prefix_key_for_url(url, key);
    }
    Ok(Query {
        output,
        fields,
        url: url.to_string(),
        range: KeyRange::new(&key, m),
    })
}

type Objs<'a> = Box<dyn Iterator<Item = Result<Obj, ApiError>> + 'a>;

fn run(coll: &Coll, mut p: Params, sink: &mut Sink) -> Result<(), ApiError> {
    let q = prepare(coll, &p)?;
    if coll.index.is_none() && coll.live.is_none() {
        return Err(ApiError::Bad(format!(
            "collection {} serves no index",
            coll.name
        )));
    }
    if p.get("closest") == Some("now") {
        let now = now_14();
        p.set("closest", &now);
    }
    let clusters = base_sources(coll).iter().filter(|s| s.is_cluster()).count();
    let paged = clusters > 0;
    if p.flag("showNumPages") && paged {
        if p.flag("showPagedIndex") {
            // pywb hands its page count to the index-line reader, and fails.
            return Err(ApiError::Bad(
                "showNumPages=true and showPagedIndex=true cannot be asked together".into(),
            ));
        }
        return num_pages(coll, &q, &p, sink);
    }
    let objs = query_objs(coll, &q, &p, false)?;
    let wrote = emit(coll, &q, objs, sink)?;
    let fuzzy = p.get("allowFuzzy").map_or(true, to_bool);
    if !wrote && fuzzy {
        if let Some((fq, fp)) = fuzzy_query(coll, &q, &p)? {
            let objs = query_objs(coll, &fq, &fp, true)?;
            let url_no_query = q.url.split('?').next().unwrap_or_default().to_string();
            let ext = extension(&url_no_query);
            let urlkey = String::from_utf8_lossy(&q.range.start).into_owned();
            let kept = objs.filter_map(move |o| match o {
                Ok(mut o) => {
                    if general_fuzzy_match(&url_no_query, ext.as_deref(), &urlkey, &o) {
                        o.set("is_fuzzy", "1");
                        Some(Ok(o))
                    } else {
                        None
                    }
                }
                Err(e) => Some(Err(e)),
            });
            emit(coll, &q, Box::new(kept), sink)?;
        }
    }
    if !sink.is_started() {
        sink.start(Head::Ok {
            content_type: q.output.content_type().into(),
            headers: cache_headers(),
        });
    }
    Ok(())
}

/// The current UTC time as 14 digits (`closest=now`).
fn now_14() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    ukvs::engine::format::datetime_14(i64::try_from(secs).unwrap_or(0))
}

/// Every source's objects for a query, merged and processed as pywb's
/// `cdx_load` does (processing is off for `showNumPages` on plain files).
fn query_objs<'a>(
    coll: &'a Coll,
    q: &'a Query,
    p: &Params,
    fuzzy: bool,
) -> Result<Objs<'a>, ApiError> {
    let process = !p.flag("showNumPages");
    // Python evaluates these where the pipeline is built, before a line
    // is read.
    let limit = match p.get("limit") {
        Some(l) if process => py_int("limit", l)?,
        _ => DEFAULT_LIMIT,
    };
    let closest = p.get("closest").map(str::to_string);
    let reverse = p.flag("reverse") || p.get("sort") == Some("reverse");
    if process && closest.is_none() && reverse && limit < 0 {
        return Err(ApiError::Bad(
            "Invalid value for limit= param: a reversed answer needs a limit of 0 or more".into(),
        ));
    }
    let collapse = match (process, p.get("collapseTime")) {
        (true, Some(c)) => Some(py_int("collapseTime", c)?),
        _ => None,
    };
    let filters = if process {
        let mut f = Vec::new();
        for s in &p.filters {
            f.push(Filter::parse(s)?);
        }
        if fuzzy {
            // The fuzzy query's own filter, `urlkey:`, keeps everything.
            f.clear();
        }
        f
    } else {
        Vec::new()
    };
    let page_size = match p.get("pageSize") {
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| ApiError::Bad(format!("Invalid value for pageSize= param: {s}")))?,
        None => DEFAULT_PAGE_SIZE,
    };
    let page = p.get("page").map(str::to_string);
    let nosource = p.get("nosource") == Some("true");
    let with_source = !nosource;

    let mut each: Vec<Objs<'a>> = Vec::new();
    let paged_index = p.flag("showPagedIndex");
    let read = coll.merged();
    let sources = read.sources();
    let internal = |e: ukvs::engine::merged::Error| ApiError::failed(&e, false);
    // A live collection: the captures its delta hides, and where its
    // lines go (`Merged::delta_within`).
    let hidden = read.hider(&q.range).map_err(internal)?;
    for (i, source) in sources.iter().enumerate() {
        let lines = if source.is_cluster() {
            let blocks = source
                .blocks(&q.range)
                .map_err(|e| ApiError::failed(&e, false))?;
            let blocks = page_blocks(source, &q.range, blocks, page_size, page.as_deref())?;
            if paged_index {
                // The page's secondary-index lines themselves.
                let idx: Vec<Result<Obj, ApiError>> =
                    blocks.iter().map(|b| Ok(Obj::idx(b))).collect();
                each.push(Box::new(idx.into_iter()));
                continue;
            }
            source.page_lines(blocks, &q.range)
        } else {
            source
                .lines_as_pywb(&q.range)
                .map_err(|e| ApiError::failed(&e, false))?
        };
        let lines = read
            .source_lines(lines, hidden.clone(), &q.range)
            .map_err(internal)?;
        each.push(source_objs(coll, i, lines, with_source));
    }
    // Over a cluster, pages count the cluster's blocks: the delta's lines
    // come with the first page, and not with the blocks themselves.
    let paged = sources.iter().any(|s| s.is_cluster());
    let first_page = page.as_deref().map_or(true, |n| n.trim() == "0");
    if read.is_live() && !read.delta_within() && !(paged && (paged_index || !first_page)) {
        each.push(source_objs(
            coll,
            sources.len(),
            read.delta_lines_of(&q.range, hidden.as_ref())
                .map_err(internal)?,
            with_source,
        ));
    }
    let merged: Objs<'a> = if each.len() == 1 {
        each.pop().expect("one source")
    } else {
        // pywb merges several sources by the JSON text of each record.
        let keyed = each
            .into_iter()
            .map(|objs| objs.map(|o| o.map(|o| (o.order_key(), o))))
            .collect();
        let merged = MergeBy::new(keyed, |a: &(String, Obj), b: &(String, Obj)| a.0 < b.0);
        Box::new(merged.map(|r| r.map(|((_, o), _)| o)))
    };
    if !process {
        return Ok(merged);
    }
    let mut objs = merged;
    if p.flag("resolveRevisits") {
        objs = Box::new(resolve_revisits(coll, objs));
    }
    if !filters.is_empty() {
        objs = Box::new(objs.filter(move |o| match o {
            Ok(o) => filters.iter().all(|f| f.accepts(o)),
            Err(_) => true,
        }));
    }
    let from = p
        .get("from")
        .or_else(|| p.get("from_ts"))
        .map(|f| pad(f, b"10000101000000"));
    let to = p.get("to").map(|t| pad(t, b"29991231235959"));
    if from.is_some() || to.is_some() {
        objs = Box::new(objs.map(move |o| match o {
            Ok(o) if o.get("timestamp").is_none() => Err(no_timestamp()),
            other => other,
        }));
        objs = Box::new(objs.filter(move |o| match o {
            Ok(o) => {
                let ts = o.timestamp().as_bytes();
                !(from.as_deref().is_some_and(|f| ts < f) || to.as_deref().is_some_and(|t| ts > t))
            }
            Err(_) => true,
        }));
    }
    if collapse.is_some() || closest.is_some() {
        objs = Box::new(objs.map(move |o| match o {
            Ok(o) if o.get("timestamp").is_none() => Err(no_timestamp()),
            other => other,
        }));
    }
    if let Some(n) = collapse {
        let mut last: Option<(String, String)> = None;
        objs = Box::new(objs.filter(move |o| match o {
            Ok(o) => {
                let token = (py_prefix(o.timestamp(), n), o.get_str("status"));
                if last.as_ref() != Some(&token) {
                    last = Some(token);
                    true
                } else {
                    false
                }
            }
            Err(_) => true,
        }));
    }
    Ok(match (closest, reverse) {
        (Some(c), _) => {
            let keep = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
            ordered(
                objs,
                &Order::Closest(c.into_bytes()),
                Some(keep),
                |o: &Obj| o.timestamp().as_bytes(),
            )
        }
        (None, true) => ordered(
            objs,
            &Order::Reverse,
            Some(usize::try_from(limit).unwrap_or(0)),
            |o: &Obj| o.timestamp().as_bytes(),
        ),
        (None, false) if limit == 0 => objs,
        (None, false) => ordered(
            objs,
            &Order::Index,
            Some(usize::try_from(limit).unwrap_or(0)),
            |o: &Obj| o.timestamp().as_bytes(),
        ),
    })
}

/// The answer when a step needs the timestamp of a record that has none
/// (a secondary-index line of `showPagedIndex`; pywb fails with a
/// `KeyError`).
fn no_timestamp() -> ApiError {
    ApiError::Bad(
        "showPagedIndex=true answers index blocks, which have no timestamp: \
         from=, to=, closest=, collapseTime= and output=link do not apply to them"
            .into(),
    )
}

/// Python's `s[:n]`.
fn py_prefix(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let end = if n < 0 { (len + n).max(0) } else { n.min(len) };
    s.chars().take(end as usize).collect()
}

/// A partial datetime padded as pywb pads `from` and `to`.
fn pad(v: &str, with: &[u8]) -> Vec<u8> {
    let mut out = v.as_bytes().to_vec();
    if out.len() < 14 {
        out.extend_from_slice(&with[out.len()..]);
    }
    out
}

/// Lines of one source, or of a base and the delta merged.
pub(super) type Lines<'a> = ukvs::engine::merged::Lines<'a>;

/// The collection's bases (none for a delta alone).
pub(super) fn base_sources(coll: &Coll) -> &[ukvs::engine::lookup::Source] {
    coll.index.as_ref().map_or(&[], |i| i.sources())
}

/// One source's lines as objects with pywb's `source` fields.
fn source_objs<'a>(coll: &'a Coll, i: usize, lines: Lines<'a>, with_source: bool) -> Objs<'a> {
    let label = coll
        .labels
        .get(i)
        .cloned()
        .unwrap_or_else(|| coll.name.clone());
    let names = &coll.value_names;
    Box::new(lines.map(move |line| {
        let line = line.map_err(|e| ApiError::failed(&e, false))?;
        let mut o = Obj::parse(&line, names).map_err(ApiError::Bad)?;
        if with_source && o.get("url").is_some() {
            let source = match o.str_field("source") {
                Some(old) => format!("{label}:{old}"),
                None => label.clone(),
            };
            o.set("source", source);
            o.set("source-coll", coll.name.as_str());
        }
        Ok(o)
    }))
}

/// pywb's `CDXFilter`: `[!][=|~]field:value`, or the whole record.
struct Filter {
    invert: bool,
    kind: FilterKind,
    field: String,
}

enum FilterKind {
    Exact(String),
    Contains(String),
    Regex(regex::Regex),
}

impl Filter {
    fn parse(s: &str) -> Result<Filter, ApiError> {
        let (invert, s) = match s.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (mode, s) = if let Some(rest) = s.strip_prefix('=') {
            ('=', rest)
        } else if let Some(rest) = s.strip_prefix('~') {
            ('~', rest)
        } else {
            (' ', s)
        };
        let (field, value) = match s.split_once(':') {
            Some((f, v)) => (alt_field(f).to_string(), v),
            None => (String::new(), s),
        };
        let kind = match mode {
            '=' => FilterKind::Exact(value.to_string()),
            '~' => {
                // Python's `re.match`: anchored at the start only.
                let rx = regex::Regex::new(&format!("^(?:{value})"))
                    .map_err(|e| ApiError::Bad(regex_message(&e)))?;
                FilterKind::Regex(rx)
            }
            _ => FilterKind::Contains(value.to_string()),
        };
        Ok(Filter {
            invert,
            kind,
            field,
        })
    }

    fn accepts(&self, o: &Obj) -> bool {
        let val: Cow<str> = if self.field.is_empty() {
            Cow::Owned(o.whole())
        } else {
            Cow::Owned(o.get_str(&self.field))
        };
        let matched = match &self.kind {
            FilterKind::Exact(s) => val == s.as_str(),
            FilterKind::Contains(s) => val.contains(s.as_str()),
            FilterKind::Regex(rx) => rx.is_match(&val),
        };
        matched ^ self.invert
    }
}

/// A regex error in one line, for the message of a 400.
fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid regex")
        .trim()
        .trim_start_matches("error: ")
        .to_string();
    format!("Invalid value for filter= param: invalid regular expression: {last}")
}

/// pywb's `cdx_resolve_revisits`; a revisit whose original is not in the
/// answer (a revisit of another URL) gets the original found at the URL
/// and date it refers to (`refers_to_uri`, `refers_to_date` of the `ukvs`
/// profile), else by digest in the collection's digest files, with its
/// mime and status as pywb gives a resolved revisit. Without either (a
/// CDXJ index, no digest file) the answer is pywb's.
fn resolve_revisits<'a>(
    coll: &'a Coll,
    objs: Objs<'a>,
) -> impl Iterator<Item = Result<Obj, ApiError>> + 'a {
    let mut originals: HashMap<String, Obj> = HashMap::new();
    let finder = ukvs::engine::digests::Originals {
        index: (coll.index.is_some() || coll.live.is_some())
            .then_some(coll as &dyn ukvs::engine::digests::ByKey),
        value_names: coll.value_names.clone(),
        surt: coll.surt.clone(),
        digests: coll.digests.as_ref(),
    };
    objs.map(move |o| {
        let mut o = o?;
        let is_revisit =
            o.str_field("mime") == Some("warc/revisit") || o.str_field("filename") == Some("-");
        let digest = o.get_str("digest");
        let mut original = None;
        if !digest.is_empty() {
            original = originals.get(&digest).cloned();
            if original.is_none() && !is_revisit {
                originals.insert(digest, o.clone());
            }
        }
        if original.is_none()
            && o.str_field("mime") == Some("warc/revisit")
            && (coll.digests.is_some() || o.get("refers_to_uri").is_some())
            && !refers_to_itself(coll, &o)
        {
            original = other_url_original(&finder, &o)?;
        }
        match (original, is_revisit) {
            (Some(orig), true) => {
                if o.get("mime").is_some() {
                    let v = orig.get("mime").cloned().unwrap_or_else(|| "".into());
                    o.set("mime", v);
                }
                if o.get("status").is_some() {
                    let v = orig.get("status").cloned().unwrap_or_else(|| "".into());
                    o.set("status", v);
                }
                for f in ["length", "offset", "filename"] {
                    let v = orig.get(f).cloned().unwrap_or_else(|| "-".into());
                    o.set(&format!("orig.{f}"), v);
                }
            }
            _ => {
                for f in ["length", "offset", "filename"] {
                    o.set(&format!("orig.{f}"), "-");
                }
            }
        }
        Ok(o)
    })
}

/// Whether a revisit names its own URL as the one it refers to: its
/// original is then resolved as pywb resolves it, from the answer alone.
fn refers_to_itself(coll: &Coll, o: &Obj) -> bool {
    o.str_field("refers_to_uri").is_some_and(|uri| {
        ukvs::surt::key(uri.as_bytes(), &coll.surt).0 == o.get_str("urlkey").as_bytes()
    })
}

/// The original of a revisit that the answer does not hold, as an object
/// with pywb's field names (`mime`, `status`, `length`, `offset`,
/// `filename`; strings).
fn other_url_original(
    finder: &ukvs::engine::digests::Originals<'_>,
    o: &Obj,
) -> Result<Option<Obj>, ApiError> {
    let text = |name: &str| o.get(name).map(super::pywb::py_str).filter(|v| v != "-");
    let rev = ukvs::digest::IndexRecord {
        surt: text("urlkey"),
        datetime: text("timestamp"),
        url: text("url"),
        mime: text("mime"),
        digest: text("digest"),
        filename: text("filename"),
        refers_to_uri: text("refers_to_uri"),
        refers_to_date: text("refers_to_date"),
        payload_digest: text("payload_digest"),
        ..Default::default()
    };
    let Some(found) = finder.find(&rev).map_err(|e| ApiError::failed(&e, true))? else {
        return Ok(None);
    };
    let entry = ukvs::digest::Entry {
        digest: found.digest.clone().unwrap_or_default(),
        record: found,
    };
    Obj::parse(entry.to_cdxj().as_bytes(), &[])
        .map(Some)
        .map_err(ApiError::Internal)
}

/// The ZipNum blocks of the page asked for (pywb's `compute_page_range`):
/// `pageSize` blocks from the block that may hold the range's start.
fn page_blocks(
    source: &ukvs::engine::lookup::Source,
    range: &KeyRange,
    blocks: Vec<ukvs::sorted::zipnum::Block>,
    page_size: i64,
    page: Option<&str>,
) -> Result<Vec<ukvs::sorted::zipnum::Block>, ApiError> {
    let _ = source;
    let _ = range;
    if blocks.is_empty() {
        return Ok(blocks);
    }
    let n = blocks.len() as i64 - 1;
    let total = if page_size == 0 {
        1
    } else {
        n.div_euclid(page_size) + 1
    };
    let page = match page {
        None => 0,
        Some(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| ApiError::Bad(format!("Invalid value for page= param: {s}")))?,
    };
    if page >= total || page < 0 {
        return Err(ApiError::Bad(format!(
            "Page {page} invalid: First Page is 0, Last Page is {}",
            total - 1
        )));
    }
    if page_size <= 0 {
        return Ok(blocks.into_iter().take(1).collect());
    }
    let start = (page * page_size) as usize;
    let end = ((page * page_size + page_size - 1).min(n) + 1) as usize;
    Ok(blocks
        .into_iter()
        .skip(start)
        .take(end.saturating_sub(start))
        .collect())
}

/// `showNumPages` on a collection with a ZipNum cluster: pywb's one JSON
/// object, without a newline.
fn num_pages(coll: &Coll, q: &Query, p: &Params, sink: &mut Sink) -> Result<(), ApiError> {
    let index = coll.index.as_ref().expect("checked by the caller");
    let page_size = match p.get("pageSize") {
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| ApiError::Bad(format!("Invalid value for pageSize= param: {s}")))?,
        None => DEFAULT_PAGE_SIZE,
    };
    if q.output == Output::Link {
        return Err(ApiError::Bad(
            "showNumPages=true answers a page count, which output=link cannot say".into(),
        ));
    }
    let mut pages = 0i64;
    let mut blocks_n = 0i64;
    for source in index.sources().iter().filter(|s| s.is_cluster()) {
        let blocks = source
            .blocks(&q.range)
            .map_err(|e| ApiError::failed(&e, false))?;
        if blocks.is_empty() {
            continue;
        }
        let mut n = blocks.len() as i64 - 1;
        let mut total = if page_size == 0 {
            n = -1;
            1
        } else {
            n.div_euclid(page_size) + 1
        };
        if n == 0 {
            // One block: does it hold a line of the range at all?
            let mut lines = source.page_lines(blocks, &q.range);
            if !matches!(lines.next(), Some(Ok(_))) {
                total = 0;
                n = -1;
            }
        }
        pages = total;
        blocks_n = n + 1;
    }
    let mut body = String::new();
    let (kp, ks, kb) = (
        "pages".to_string(),
        "pageSize".to_string(),
        "blocks".to_string(),
    );
    let (vp, vs, vb) = (
        serde_json::Value::from(pages),
        serde_json::Value::from(page_size),
        serde_json::Value::from(blocks_n),
    );
    py_json_object([(&kp, &vp), (&ks, &vs), (&kb, &vb)].into_iter(), &mut body);
    sink.start(Head::Ok {
        content_type: q.output.content_type().into(),
        headers: cache_headers(),
    });
    let _ = sink.write_all(body.as_bytes());
    Ok(())
}

/// Writes objects in the query's output after the access rules; starts
/// the answer at the first line. Says whether a line was produced (before
/// the access rules, as pywb's fuzzy fallback judges).
fn emit(coll: &Coll, q: &Query, objs: Objs<'_>, sink: &mut Sink) -> Result<bool, ApiError> {
    let mut any = false;
    let mut pending: Option<Obj> = None;
    let fl = q.fields.as_deref();
    let out = |sink: &mut Sink, o: &Obj, last: bool| {
        let text = match q.output {
            Output::Cdxj => o.to_cdxj(fl),
            Output::Json => o.to_json(fl),
            Output::Text => o.to_text(fl),
            Output::Link => link(o, if last { "\n" } else { ",\n" }),
        };
        let _ = sink.write_all(text.as_bytes());
    };
    for o in objs {
        let mut o = o?;
        if o.is_idx() {
            match q.output {
                Output::Cdxj => {
                    return Err(ApiError::Bad(
                        "showPagedIndex=true answers index blocks, which output=cdxj cannot \
                         write: ask output=text or output=json"
                            .into(),
                    ))
                }
                Output::Link => return Err(no_timestamp()),
                _ => {}
            }
        }
        if !any {
            any = true;
            sink.start(Head::Ok {
                content_type: q.output.content_type().into(),
                headers: cache_headers(),
            });
        }
        if let Some(rules) = &coll.acl {
            let url = o.get_str("url");
            if !url.is_empty() {
                let key = ukvs::surt::key(url.as_bytes(), &coll.surt).0;
                let access = rules.access(&key, o.timestamp().as_bytes());
                if access == ukvs::acl::Access::Exclude {
                    continue;
                }
                let shown = match access {
                    ukvs::acl::Access::AllowIgnoreEmbargo => ukvs::acl::Access::Allow,
                    a => a,
                };
                o.set("access", shown.as_str());
            }
        }
        if q.output == Output::Link {
            // Every link but the last ends with a comma.
            if let Some(prev) = pending.replace(o) {
                out(sink, &prev, false);
            }
        } else {
            out(sink, &o, false);
        }
        if sink.is_gone() {
            return Ok(any);
        }
    }
    if let Some(last) = pending {
        out(sink, &last, true);
    }
    Ok(any)
}

/// pywb's memento link of a capture (`make_timemap_memento_link`).
fn link(o: &Obj, end: &str) -> String {
    let url = match o.get_str("url") {
        u if !u.is_empty() => u,
        _ => format!(
            "file://{}:{}:{}",
            o.get_str("filename"),
            o.get_str("offset"),
            o.get_str("length")
        ),
    };
    let mut s = format!(
        "<{url}>; rel=\"memento\"; datetime=\"{}\"",
        ukvs::engine::format::http_date(o.timestamp())
    );
    let coll = o.get_str("source-coll");
    if !coll.is_empty() {
        s.push_str(&format!("; collection=\"{coll}\""));
    }
    s.push_str(end);
    s
}

/// pywb's generic fuzzy rule: the URL cut at its `?` (and a `/` before
/// it), as a prefix query, keeping the user's other parameters but not
/// filters, closest or reverse.
fn fuzzy_query(coll: &Coll, q: &Query, p: &Params) -> Result<Option<(Query, Params)>, ApiError> {
    let mut url = q.url.clone();
    if let Some(i) = url.find('?') {
        if i > 0 {
            let mut len = i;
            if url.as_bytes().get(len - 1) == Some(&b'/') {
                len -= 1;
            }
            url.truncate(len);
        }
    }
    let mut fp = Params::default();
    fp.set("url", &url);
    fp.set("matchType", "prefix");
    fp.set("is_fuzzy", "1");
    fp.set("limit", FUZZY_LIMIT);
    for (k, v) in &p.values {
        if !matches!(
            k.as_str(),
            "alt_url" | "reverse" | "closest" | "end_key" | "url" | "matchType" | "filter"
        ) {
            fp.set(k, v);
        }
    }
    fp.remove("closest");
    let fq = prepare(coll, &fp)?;
    Ok(Some((fq, fp)))
}

/// The extension of the last path segment of a URL without its query.
fn extension(url_no_query: &str) -> Option<String> {
    let last = url_no_query.rsplit('/').next().unwrap_or_default();
    // Python's os.path.splitext: leading dots do not start an extension.
    let stem = last.trim_start_matches('.');
    stem.rfind('.').map(|i| stem[i + 1..].to_string())
}

/// pywb's `match_general_fuzzy_query`.
fn general_fuzzy_match(url_no_query: &str, ext: Option<&str>, urlkey: &str, o: &Obj) -> bool {
    const NOT_EXTS: &[&str] = &["asp", "aspx", "jsp", "php", "pl", "exe", "dll"];
    const MIMES: &[&str] = &[
        "application/x-shockwave-flash",
        "application/dash+xml",
        "application/x-mpegURL",
        "application/vnd.apple.mpegurl",
    ];
    if o.get_str("status") == "204" && o.get_str("urlkey").contains("__pywb_method=options") {
        return false;
    }
    let check_query = match ext {
        Some(e) if !e.is_empty() && !NOT_EXTS.contains(&e) => true,
        _ => {
            let mime = o.get_str("mime");
            (!mime.is_empty() && MIMES.contains(&mime.as_str()))
                || !o.get_str("requestBody").is_empty()
                || !o.get_str("method").is_empty()
        }
    };
    if check_query {
        let url = o.get_str("url");
        if url == url_no_query || url.starts_with(&format!("{url_no_query}?")) {
            return true;
        }
    }
    let mut mine = o.get_str("urlkey");
    let mut theirs = urlkey.to_string();
    for rule in 0..3 {
        mine = normalize(&mine, rule);
        theirs = normalize(&theirs, rule);
        if mine == theirs {
            return true;
        }
    }
    false
}

/// pywb's `url_normalize` rules (cache-busting arguments, `utm_*`,
/// `callback=jsonp...`), one at a time.
fn normalize(key: &str, rule: usize) -> String {
    static RX: std::sync::OnceLock<[regex::Regex; 3]> = std::sync::OnceLock::new();
    let rx = RX.get_or_init(|| {
        [
            regex::Regex::new(r"[?&](?:_|cb|uncache)=\d+").expect("a valid regex"),
            regex::Regex::new(r"[?&]utm_[^=]+=[^&]+").expect("a valid regex"),
            regex::Regex::new(r"[?&](callback=jsonp)[^&]+").expect("a valid regex"),
        ]
    });
    let mut out = String::with_capacity(key.len());
    let mut at = 0;
    for m in rx[rule].captures_iter(key) {
        let whole = m.get(0).expect("the match");
        // The lookahead `(?=&|$)` of the first rule: digits must run to
        // an `&` or the end.
        let next = key[whole.end()..].chars().next();
        if rule == 0 && !matches!(next, None | Some('&')) {
            continue;
        }
        out.push_str(&key[at..whole.start()]);
        if rule == 2 {
            out.push_str(m.get(1).map_or("", |g| g.as_str()));
        }
        at = whole.end();
    }
    out.push_str(&key[at..]);
    out
}

/// `/NAME/timemap/link/URL`: an RFC 7089 TimeMap of the URL's captures.
/// Every line of a TimeMap's range: the bases' in byte order, and for a
/// live collection those the delta does not hide with the delta's merged
/// in.
fn timemap_lines(coll: &Coll, range: &KeyRange) -> Result<Vec<Vec<u8>>, ApiError> {
    let read = coll.merged();
    let mut found = Vec::new();
    for line in read.lines(range).map_err(|e| ApiError::failed(&e, false))? {
        found.push(line.map_err(|e| ApiError::failed(&e, false))?.into_owned());
    }
    if read.is_live() {
        // A file out of order gives its lines as pywb finds them: the
        // answer is put in order once the delta's are among them.
        found.sort();
    }
    Ok(found)
}

pub async fn timemap(coll: Arc<Coll>, url: &str, prefix: String) -> http::Response {
    let url = url.to_string();
    http::stream(move |sink| {
        let mut p = Params::default();
        p.set("url", &url);
        p.set("output", "link");
        let q = match prepare(&coll, &p) {
            Ok(q) => q,
            Err(e) => return sink.start(e.head()),
        };
        if coll.index.is_none() && coll.live.is_none() {
            return sink.start(Head::Fail(404, "text/plain".into(), b"no index\n".to_vec()));
        }
        let found = match timemap_lines(&coll, &q.range) {
            Ok(f) => f,
            Err(e) => return sink.start(e.head()),
        };
        // Access rules: excluded captures are not mementos.
        let found: Vec<Vec<u8>> = found
            .into_iter()
            .filter(|l| {
                let Some(rules) = &coll.acl else { return true };
                let (key, dt) = ukvs::sorted::lines::key_datetime(l);
                rules.access(key, dt) != ukvs::acl::Access::Exclude
            })
            .collect();
        if found.is_empty() {
            return sink.start(Head::Fail(
                404,
                "application/link-format".into(),
                Vec::new(),
            ));
        }
        let found: Vec<Cow<[u8]>> = found.iter().map(|l| Cow::Borrowed(&l[..])).collect();
        let timemap_url = format!("{prefix}timemap/link/{url}");
        let timegate_url = format!("{prefix}{url}");
        let links = ukvs::engine::format::TimeMapLinks {
            prefix: &prefix,
            timemap: Some(&timemap_url),
            timegate: Some(&timegate_url),
        };
        sink.start(Head::Ok {
            content_type: "application/link-format".into(),
            headers: Vec::new(),
        });
        let _ = ukvs::engine::format::write_timemap(
            sink,
            &found,
            Some(&url),
            &links,
            &coll.value_names,
        );
    })
    .await
}
