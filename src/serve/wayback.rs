//! `/NAME/cdx/search/cdx` (and `/cdx/search/cdx` with `--default`): the
//! Wayback CDX server API of the Internet Archive, as its README
//! (`wayback-cdx-server/README.md`) and server define it.
//!
//! ```text
//! params (params.rs) ─► key range ─► resume position (resumeKey, or
//!   `urlkey from` for an exact URL) ─► each base's lines (ZipNum: the
//!   page's blocks), less the delta's tombstones, and the delta's ─►
//!   merged in byte order (forward), or in reverse byte order read from
//!   the end (`sort=reverse`, and `limit=-N` when nothing needs the lines
//!   before those answered) ─► offset ─► from/to ─► access rules ─►
//!   filter ─► collapse ─► counters ─► limit | last N | closest
//!   ─► text or JSON, then the resume key
//! ```
//!
//! Lines stream: the answer holds one line (two with the group counters,
//! whose counts are known when the next line is written); the last N and
//! closest orders hold at most [`HELD_MAX`] lines, `showDupeCount` one
//! counter per distinct digest, `showUniqCount` a group's digests. A
//! backward read holds one ZipNum block per cluster, and a live
//! collection's delta lines of the range (up to [`HELD_MAX`]).
//!
//! Resume keys are exact: a key names the last line read (its bytes and
//! how many copies of it were read), and the page ends before the next
//! line the answer would write, so the pages of a query, concatenated,
//! are its whole answer whatever the page size (IA's keys, `urlkey
//! timestamp+1`, skip the captures of that second; they are taken too,
//! as a position to start from).

mod params;

use std::borrow::Cow;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::Write;
use std::sync::Arc;

use ukvs::engine::error::Kind;
use ukvs::engine::lookup::{MergeBy, Source};
use ukvs::sorted::{
    datetime_to_secs, prefix_key_for_url, url_shortcut, KeyRange, MatchType, Upper,
};

use super::catalog::Coll;
use super::cdx::{base_sources, Failed, Lines};
use super::http::{self, Head, Sink};
use super::pywb::Obj;
use params::{Collapse, Field, Match, Params, Sort};

/// ZipNum blocks per page unless `pageSize` says otherwise (the Wayback
/// Machine's, as its README gives it).
const DEFAULT_PAGE_SIZE: usize = 50;

/// Lines held for `limit=-N`, `sort=reverse` and `sort=closest`: a larger
/// N is cut to it, as IA cuts it to its query limit.
pub const HELD_MAX: usize = 10_000;

/// pywb's names of [`FIELDS`], as [`Obj`] holds them.
const PYWB_NAMES: [&str; 11] = [
    "urlkey",
    "timestamp",
    "url",
    "mime",
    "status",
    "digest",
    "redirect",
    "robotflags",
    "length",
    "offset",
    "filename",
];

/// Lines of an answer in the order read, with read errors said.
type Read<'a> = Box<dyn Iterator<Item = Result<Cow<'a, [u8]>, Fail>> + 'a>;

/// An answer that is an error.
enum Fail {
    /// 400: the message names the parameter.
    Bad(String),
    /// 500: an index that cannot be read.
    Internal(String),
    /// 502: a remote shard or idx that cannot be had: the upstream's
    /// failure, named.
    Upstream(String),
}

impl Fail {
    /// The answer to an engine error, by its kind (see
    /// [`ApiError::failed`](super::cdx::ApiError::failed)).
    fn failed(e: &(impl Failed + ?Sized)) -> Fail {
        match e.failure() {
            Kind::Remote => Fail::Upstream(e.to_string()),
            _ => Fail::Internal(e.to_string()),
        }
    }

    fn head(&self) -> Head {
        let (status, msg) = match self {
            Fail::Bad(m) => (400, m.as_str()),
            Fail::Upstream(m) => (502, m.as_str()),
            Fail::Internal(m) => (500, m.as_str()),
        };
        Head::Fail(
            status,
            "text/plain; charset=utf-8".into(),
            format!("{msg}\n").into_bytes(),
        )
    }
}

/// Answers `/NAME/cdx/search/cdx?query`.
pub async fn answer(coll: Arc<Coll>, query: &str) -> http::Response {
    let params = match Params::parse(query) {
        Ok(p) => p,
        Err(msg) => return http::text(400, &format!("{msg}\n")),
    };
    let identity = params.gzip == Some(false);
    let mut res = http::stream_held(coll.reads_only_blocks(), move |sink| {
        if let Err(e) = run(&coll, &params, sink) {
            if sink.is_gone() {
                // No one to tell, or made again.
            } else if sink.is_started() {
                let msg = match e {
                    Fail::Bad(m) | Fail::Internal(m) | Fail::Upstream(m) => m,
                };
                ukvs::report!("ukvs serve: {}: answer cut: {msg}", coll.name);
            } else {
                sink.start(e.head());
            }
        }
    })
    .await;
    if identity {
        http::identity(&mut res);
    }
    res
}

/// The key range of the query's URL.
fn key_range(coll: &Coll, p: &Params) -> (KeyRange, MatchType) {
    let explicit = p.match_type.map(|m| match m {
        Match::Exact => MatchType::Exact,
        Match::Prefix => MatchType::Prefix,
        Match::Host => MatchType::Host,
        Match::Domain => MatchType::Domain,
    });
    let (url, m) = url_shortcut(&p.url, explicit);
    let mut key = ukvs::surt::key(url.as_bytes(), &coll.surt).0;
    if m == MatchType::Prefix {
        key = prefix_key_for_url(url, key);
    }
    (KeyRange::new(&key, m), m)
}

/// The same range from `at` on (when `at` is past its start): its end
/// made explicit, since an exact or prefix range's end is computed from
/// its start.
fn resumed(range: &KeyRange, at: &[u8]) -> KeyRange {
    if at <= &range.start[..] {
        return range.clone();
    }
    KeyRange {
        start: at.to_vec(),
        upper: range.end_key().map_or(Upper::Unbounded, Upper::Before),
    }
}

/// `range` with its start cut to `key datetime`, the part of a line a
/// ZipNum block's first key holds: the range to find blocks by.
fn block_range(range: &KeyRange) -> KeyRange {
    let mut r = range.clone();
    let mut spaces = r.start.iter().enumerate().filter(|(_, &b)| b == b' ');
    if let Some((i, _)) = spaces.nth(1) {
        r.start.truncate(i);
    }
    r
}

/// Where a page starts: lines from `start` on, the first `skip` of them
/// equal to `start` left out (read already).
struct Position {
    start: Vec<u8>,
    skip: u64,
}

impl Position {
    /// A key as this server writes it (the percent-encoded `line LF
    /// copies`), or as IA's does (`urlkey timestamp`, percent-encoded):
    /// where to go on from.
    fn parse(key: &str) -> Position {
        let plus = key.replace('+', " ");
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(&plus).collect();
        if let Some(nl) = memchr::memrchr(b'\n', &bytes) {
            if let Some(n) = std::str::from_utf8(&bytes[nl + 1..])
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
            {
                return Position {
                    start: bytes[..nl].to_vec(),
                    skip: n,
                };
            }
        }
        Position {
            start: bytes,
            skip: 0,
        }
    }

    /// The key of the position after `copies` copies of `line`.
    fn key(line: &[u8], copies: u64) -> String {
        let mut raw = line.to_vec();
        raw.push(b'\n');
        raw.extend_from_slice(copies.to_string().as_bytes());
        form_urlencoded::byte_serialize(&raw).collect()
    }
}

/// The blocks of page `page` (`size` blocks a page).
fn page_of<T>(blocks: Vec<T>, page: usize, size: usize) -> Vec<T> {
    blocks
        .into_iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .collect()
}

/// Pages of a collection: those of its largest cluster, 1 without one.
fn num_pages(sources: &[Source], range: &KeyRange, size: usize) -> Result<usize, Fail> {
    let mut pages = None;
    for s in sources.iter().filter(|s| s.is_cluster()) {
        let n = s.blocks(range).map_err(|e| Fail::failed(&e))?.len();
        pages = Some(pages.unwrap_or(0).max(n.div_ceil(size)));
    }
    Ok(pages.unwrap_or(1))
}

fn run(coll: &Coll, p: &Params, sink: &mut Sink) -> Result<(), Fail> {
    if coll.index.is_none() && coll.live.is_none() {
        return Err(Fail::Bad(format!(
            "collection {} serves no index",
            coll.name
        )));
    }
    let (range, m) = key_range(coll, p);
    let sources = base_sources(coll);
    let page_size = usize::try_from(p.page_size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(DEFAULT_PAGE_SIZE);
    if p.show_num_pages {
        let n = num_pages(sources, &range, page_size)?;
        start(sink, p.json);
        let _ = writeln!(sink, "{n}");
        return Ok(());
    }
    let page = usize::try_from(p.page).ok();
    if let Some(n) = page {
        // Past the last page: an empty answer, whatever the output (the
        // end of the pages for clients that read them in turn).
        if n >= num_pages(sources, &range, page_size)? {
            start(sink, p.json);
            return Ok(());
        }
    }
    if p.show_paged_index {
        return paged_index(sources, &range, page.unwrap_or(0), page_size, sink);
    }

    let at = match &p.resume_key {
        Some(k) => Position::parse(k),
        None => Position {
            start: Vec::new(),
            skip: 0,
        },
    };
    let reverse = matches!(p.sort, Sort::Reverse);
    if reverse || fast_last(p, page) {
        let flip = !reverse;
        return backward(coll, p, m, &range, at, page, page_size, flip, sink);
    }
    forward(coll, p, m, &range, at, page, page_size, sink)
}

/// Whether `limit=-N` can be answered from the end of the range: when no
/// step needs the lines before those answered (an offset, a collapse, the
/// counters, a resume position), the last N lines that pass are the
/// first N read backwards. IA's `fastLatest`, with the answer it would
/// give without it.
fn fast_last(p: &Params, page: Option<usize>) -> bool {
    matches!(p.sort, Sort::Regular)
        && p.limit < 0
        && p.offset == 0
        && p.resume_key.is_none()
        && page.is_none()
        && p.collapses.is_empty()
        && !p.show_dupe_count
        && !p.counts_groups()
}

/// The answer read forwards: from the resume position, or the `from` of
/// an exact URL (its lines are in datetime order).
#[allow(clippy::too_many_arguments)]
fn forward(
    coll: &Coll,
    p: &Params,
    m: MatchType,
    range: &KeyRange,
    mut at: Position,
    page: Option<usize>,
    page_size: usize,
    sink: &mut Sink,
) -> Result<(), Fail> {
    if let (MatchType::Exact, Some(from), None) = (m, &p.from, &p.resume_key) {
        at.start = [&range.start[..], b" ", from.as_bytes()].concat();
    }
    let read = resumed(range, &at.start);
    if read.start != at.start {
        at.skip = 0;
    }
    let merged = forward_lines(coll, range, &read, page, page_size)?;
    let how = How {
        reverse: false,
        flip: false,
    };
    answer_lines(coll, p, m, merged, at, how, sink)
}

/// Every source's lines of `read` (ZipNum: the page's blocks, or those
/// that may hold `read`), less the delta's tombstones, and the delta's,
/// merged in byte order.
fn forward_lines<'a>(
    coll: &'a Coll,
    range: &'a KeyRange,
    read: &'a KeyRange,
    page: Option<usize>,
    page_size: usize,
) -> Result<impl Iterator<Item = Result<Cow<'a, [u8]>, Fail>> + 'a, Fail> {
    let sources = base_sources(coll);
    let view = coll.merged();
    // The tombstones from the resume line's second on: a capture id is
    // `key datetime\0...`, below the line of its capture.
    let hidden = view
        .hider(&block_range(read))
        .map_err(|e| Fail::failed(&e))?;
    let mut each: Vec<Lines<'_>> = Vec::new();
    let first_page = page.map_or(true, |n| n == 0);
    for source in sources {
        let lines = if source.is_cluster() {
            match page {
                Some(n) => {
                    let blocks = source.blocks(range).map_err(|e| Fail::failed(&e))?;
                    source.page_lines(page_of(blocks, n, page_size), read)
                }
                None => {
                    // The blocks that may hold `read.start`'s copies: a
                    // block's first key is `key datetime`, and copies of
                    // one line may fill blocks before the one whose first
                    // key the whole line passes.
                    let blocks = source
                        .blocks(&block_range(read))
                        .map_err(|e| Fail::failed(&e))?;
                    source.page_lines(blocks, read)
                }
            }
        } else if first_page {
            source.lines(read, None).map_err(|e| Fail::failed(&e))?
        } else {
            continue;
        };
        each.push(view.unhidden(lines, hidden.clone()));
    }
    if coll.live.is_some() && first_page {
        each.push(view.delta_lines(read).map_err(|e| Fail::failed(&e))?);
    }
    let merged = MergeBy::new(each, |a: &Cow<[u8]>, b: &Cow<[u8]>| a < b);
    Ok(merged.map(|r| r.map(|(l, _)| l).map_err(|e| Fail::failed(&e))))
}

/// The answer read backwards, newest first: `sort=reverse` (IA reads
/// its index backwards and takes every step on the lines as they come,
/// so a collapse keeps the newest line of a run), or the last N of
/// `limit=-N` (`flip`: read backwards, written in index order). A resume
/// position is where reading goes on down from (its copies read already
/// skipped); an exact URL's `to` is where it starts.
#[allow(clippy::too_many_arguments)]
fn backward(
    coll: &Coll,
    p: &Params,
    m: MatchType,
    range: &KeyRange,
    mut at: Position,
    page: Option<usize>,
    page_size: usize,
    flip: bool,
    sink: &mut Sink,
) -> Result<(), Fail> {
    let mut at_most = (!at.start.is_empty()).then(|| at.start.clone());
    if let (MatchType::Exact, Some(to)) = (m, &p.to) {
        // Above every datetime `to` takes (digits, then `:`).
        let end = [&range.start[..], b" ", to.as_bytes(), b":"].concat();
        if at_most.as_ref().map_or(true, |a| end < *a) {
            at_most = Some(end);
            at.skip = 0;
        }
    }
    let how = How {
        reverse: true,
        flip,
    };
    if let Some(lines) = backward_lines(coll, range, at_most.as_deref(), page, page_size)? {
        return answer_lines(coll, p, m, lines, at, how, sink);
    }
    if flip {
        return forward(coll, p, m, range, at, page, page_size, sink);
    }
    // A delta too large to hold in reverse: the range read forwards, its
    // last lines held (as many as a reversed answer holds).
    let read = match &at_most {
        Some(most) => KeyRange {
            start: range.start.clone(),
            upper: Upper::Before([&most[..], &[0][..]].concat()),
        },
        None => range.clone(),
    };
    let mut tail = VecDeque::new();
    for line in forward_lines(coll, range, &read, page, page_size)? {
        let line = line?;
        if !read.contains(&line) {
            continue;
        }
        if tail.len() == HELD_MAX {
            tail.pop_front();
        }
        tail.push_back(line.into_owned());
    }
    let lines = tail.into_iter().rev().map(|l| Ok(Cow::Owned(l)));
    answer_lines(coll, p, m, lines, at, how, sink)
}

/// Every source's lines of `range` up to `at_most`, last first, merged:
/// sorted files scanned backwards from the range's end, clusters' blocks
/// from the last (or the page's, last first), the delta's held. `None`
/// when the delta holds more of the range than [`HELD_MAX`] lines.
fn backward_lines<'a>(
    coll: &'a Coll,
    range: &'a KeyRange,
    at_most: Option<&[u8]>,
    page: Option<usize>,
    page_size: usize,
) -> Result<Option<Read<'a>>, Fail> {
    let internal = |e: &dyn Failed| Fail::failed(e);
    let view = coll.merged();
    let mut each: Vec<Lines<'_>> = Vec::new();
    let first_page = page.map_or(true, |n| n == 0);
    if coll.live.is_some() && first_page {
        match view
            .delta_lines_rev(range, at_most, HELD_MAX)
            .map_err(|e| internal(&e))?
        {
            Some(lines) => each.push(lines),
            None => return Ok(None),
        }
    }
    let hidden = view.hider(range).map_err(|e| internal(&e))?;
    for source in base_sources(coll) {
        let blocks = match page {
            Some(n) if source.is_cluster() => {
                let blocks = source.blocks(range).map_err(|e| internal(&e))?;
                Some(page_of(blocks, n, page_size))
            }
            Some(n) if n > 0 => continue,
            _ => None,
        };
        let lines = source
            .lines_rev(range, at_most, blocks)
            .map_err(|e| internal(&e))?;
        each.push(view.unhidden(lines, hidden.clone()));
    }
    // The delta first: of equal lines, the one a forward read gives last.
    let merged = MergeBy::new(each, |a: &Cow<[u8]>, b: &Cow<[u8]>| a > b);
    Ok(Some(Box::new(
        merged.map(|r| r.map(|(l, _)| l).map_err(|e| Fail::failed(&e))),
    )))
}

/// `showPagedIndex`: the secondary-index lines of the page's blocks.
fn paged_index(
    sources: &[Source],
    range: &KeyRange,
    page: usize,
    size: usize,
    sink: &mut Sink,
) -> Result<(), Fail> {
    if !sources.iter().any(Source::is_cluster) {
        return Err(Fail::Bad(
            "showPagedIndex=true answers the blocks of a ZipNum cluster, \
             and this collection has none"
                .into(),
        ));
    }
    start(sink, false);
    for s in sources.iter().filter(|s| s.is_cluster()) {
        let blocks = s.blocks(range).map_err(|e| Fail::failed(&e))?;
        for b in page_of(blocks, page, size) {
            let _ = writeln!(
                sink,
                "{}\t{}\t{}\t{}\t{}",
                String::from_utf8_lossy(&b.first_key),
                b.shard,
                b.offset,
                b.length,
                b.block_no
            );
        }
    }
    Ok(())
}

fn start(sink: &mut Sink, json: bool) {
    let content_type = if json {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    sink.start(Head::Ok {
        content_type: content_type.into(),
        headers: Vec::new(),
    });
}

/// One capture's fields ([`FIELDS`] order), `-` where the line has none.
struct Capture {
    values: [String; 11],
}

impl Capture {
    fn parse(line: &[u8], names: &[String]) -> Result<Capture, String> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.ends_with('}') {
            // A classic CDX line: its columns by their count, as pywb's
            // model reads them (5.4), without building that model.
            let cols: Vec<&str> = text.split(' ').collect();
            let at: Option<&[usize]> = match cols.len() {
                7 => Some(&[0, 1, 2, 3, 4, 5, 8]),
                9 => Some(&[0, 1, 2, 3, 4, 5, 6, 9, 10]),
                10 => Some(&[0, 1, 2, 3, 4, 5, 6, 7, 9, 10]),
                11 => Some(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
                _ => None,
            };
            if let Some(at) = at {
                let mut values: [String; 11] = std::array::from_fn(|_| "-".to_string());
                for (col, &i) in cols.iter().zip(at) {
                    if !col.is_empty() {
                        values[i] = (*col).to_string();
                    }
                }
                return Ok(Capture { values });
            }
        }
        let o = Obj::parse(line, names)?;
        let values = PYWB_NAMES.map(|n| {
            let v = o.get_str(n);
            if v.is_empty() {
                "-".to_string()
            } else {
                v
            }
        });
        Ok(Capture { values })
    }

    fn get(&self, f: Field) -> &str {
        match f {
            Field::Index(i) => &self.values[i],
            _ => "",
        }
    }

    fn timestamp(&self) -> &str {
        &self.values[1]
    }

    /// The capture as a CDX11 line (what a filter without a field reads).
    fn line(&self) -> String {
        self.values.join(" ")
    }
}

/// IA's collapsing: a line is kept when, for each `collapse=` in turn,
/// its value differs from that of the last line the collapse saw; a
/// collapse that keeps it sees it (the first that drops it ends the
/// test, as IA's does).
struct Collapser {
    each: Vec<(Collapse, Option<String>)>,
}

impl Collapser {
    fn keeps(&mut self, c: &Capture) -> bool {
        for (rule, prev) in &mut self.each {
            let v = c.get(rule.field);
            let v = match rule.chars {
                Some(n) => match v.char_indices().nth(n) {
                    Some((i, _)) => &v[..i],
                    None => v,
                },
                None => v,
            };
            if prev.as_deref() == Some(v) {
                return false;
            }
            *prev = Some(v.to_string());
        }
        true
    }
}

/// A line that will be written, waiting for its counters: the lines
/// `filter` and `collapse` drop after it, up to the next line written,
/// are its group.
struct Kept {
    capture: Capture,
    dupes: u64,
    /// Lines of its group dropped.
    skipped: u64,
    /// The datetime of the group's last line.
    end: String,
    /// The group's distinct digests (`showUniqCount`).
    digests: Option<std::collections::HashSet<String>>,
}

/// Writes rows as text or IA's JSON (an array of arrays, the header row
/// first).
struct Out {
    json: bool,
    fields: Vec<Field>,
    rows: u64,
    started: bool,
}

impl Out {
    fn render(&self, k: &Kept) -> String {
        let values: Vec<Cow<str>> = self
            .fields
            .iter()
            .map(|&f| match f {
                Field::Index(_) => Cow::Borrowed(k.capture.get(f)),
                Field::DupeCount => Cow::Owned(k.dupes.to_string()),
                Field::SkipCount => Cow::Owned(k.skipped.to_string()),
                Field::GroupCount => Cow::Owned((k.skipped + 1).to_string()),
                Field::EndTimestamp => Cow::Borrowed(k.end.as_str()),
                Field::UniqCount => {
                    Cow::Owned(k.digests.as_ref().map_or(1, |d| d.len()).to_string())
                }
            })
            .collect();
        if self.json {
            serde_json::to_string(&values).unwrap_or_default()
        } else {
            values.join(" ")
        }
    }

    fn begin(&mut self, sink: &mut Sink) {
        if !self.started {
            self.started = true;
            start(sink, self.json);
        }
    }

    fn row(&mut self, sink: &mut Sink, row: &str) {
        self.begin(sink);
        if self.json {
            if self.rows == 0 {
                let names: Vec<&str> = self.fields.iter().map(|f| f.name()).collect();
                let _ = sink.write_all(b"[");
                let _ =
                    sink.write_all(serde_json::to_string(&names).unwrap_or_default().as_bytes());
            }
            let _ = sink.write_all(b",\n");
            let _ = sink.write_all(row.as_bytes());
        } else {
            let _ = sink.write_all(row.as_bytes());
            let _ = sink.write_all(b"\n");
        }
        self.rows += 1;
    }

    fn end(&mut self, sink: &mut Sink, resume: Option<&str>) {
        self.begin(sink);
        match (self.json, resume) {
            (true, _) if self.rows == 0 => {
                let _ = sink.write_all(b"[]\n");
            }
            (true, Some(k)) => {
                let key = serde_json::to_string(&[k]).unwrap_or_default();
                let _ = write!(sink, ",\n[],\n{key}]\n");
            }
            (true, None) => {
                let _ = sink.write_all(b"]\n");
            }
            (false, Some(k)) => {
                let _ = write!(sink, "\n{k}\n");
            }
            (false, None) => {}
        }
    }
}

/// Where written lines go: out at once, or held for an order that needs
/// the whole answer.
enum Held {
    Stream,
    /// The last N, in the order read.
    Last(VecDeque<String>, usize),
    /// The first N read backwards, written in index order.
    Flip(Vec<String>),
    /// The N nearest to a datetime (seconds), nearest first.
    Closest(BinaryHeap<(u64, u64, String)>, usize, i64),
}

/// How the lines of an answer come.
#[derive(Clone, Copy)]
struct How {
    /// Newest first (a backward read).
    reverse: bool,
    /// Read backwards for `limit=-N`: the first N kept are written last
    /// first, that is in index order.
    flip: bool,
}

/// The query's steps over the merged lines, and the answer.
fn answer_lines<'a>(
    coll: &Coll,
    p: &Params,
    m: MatchType,
    lines: impl Iterator<Item = Result<Cow<'a, [u8]>, Fail>>,
    at: Position,
    how: How,
    sink: &mut Sink,
) -> Result<(), Fail> {
    let fields = p.fields();
    let mut out = Out {
        json: p.json,
        fields,
        rows: 0,
        started: false,
    };
    let held_n = |n: i64| {
        usize::try_from(n.unsigned_abs())
            .unwrap_or(HELD_MAX)
            .min(HELD_MAX)
    };
    let mut held = match &p.sort {
        _ if how.flip => Held::Flip(Vec::new()),
        Sort::Regular | Sort::Reverse if p.limit < 0 => {
            Held::Last(VecDeque::new(), held_n(p.limit))
        }
        Sort::Regular | Sort::Reverse => Held::Stream,
        Sort::Closest(c) => Held::Closest(
            BinaryHeap::new(),
            if p.limit == 0 {
                HELD_MAX
            } else {
                held_n(p.limit)
            },
            datetime_to_secs(c.as_bytes()),
        ),
    };
    // Where an answer read in its order ends (and pages end).
    let limit = match held {
        Held::Stream if p.limit > 0 => Some(p.limit.unsigned_abs()),
        Held::Flip(_) => Some(held_n(p.limit) as u64),
        _ => None,
    };
    let counts = p.counts_groups();
    let mut collapser = Collapser {
        each: p.collapses.iter().map(|c| (*c, None)).collect(),
    };
    let mut dupes: HashMap<String, u64> = HashMap::new();
    let mut offset = if p.resume_key.is_some() { 0 } else { p.offset };
    let mut skip = at.skip;
    // The last line read, and how many copies of it in a row.
    let mut prev: Option<(Cow<[u8]>, u64)> = None;
    if skip > 0 {
        prev = Some((Cow::Owned(at.start.clone()), 0));
    }
    let mut kept: Option<Kept> = None;
    let mut written = 0u64;
    let mut more = false;
    let mut seq = 0u64;

    let mut put = |out: &mut Out, sink: &mut Sink, k: Kept, held: &mut Held| {
        let row = out.render(&k);
        match held {
            Held::Stream => out.row(sink, &row),
            Held::Flip(rows) => rows.push(row),
            Held::Last(q, n) => {
                q.push_back(row);
                if q.len() > *n {
                    q.pop_front();
                }
            }
            Held::Closest(heap, n, target) => {
                let dist = datetime_to_secs(k.capture.timestamp().as_bytes()).abs_diff(*target);
                seq += 1;
                heap.push((dist, seq, row));
                if heap.len() > *n {
                    heap.pop();
                }
            }
        }
    };

    for line in lines {
        let line = line?;
        let same = prev.as_ref().is_some_and(|(l, _)| l[..] == line[..]);
        if skip > 0 {
            if same {
                skip -= 1;
                if let Some((_, n)) = &mut prev {
                    *n += 1;
                }
                continue;
            }
            skip = 0;
        }
        let copies = if same {
            prev.as_ref().map_or(0, |(_, n)| *n)
        } else {
            0
        };
        if offset > 0 {
            offset -= 1;
            prev = Some((line, copies + 1));
            continue;
        }
        let c = Capture::parse(&line, &coll.value_names).map_err(Fail::Internal)?;
        let ts = c.timestamp();
        // An exact URL's lines are in datetime order: past `to` (or, read
        // backwards, before `from`) none is left.
        let before = p.from.as_deref().is_some_and(|f| ts < f);
        let after =
            p.to.as_deref()
                .is_some_and(|to| ts > to && !ts.starts_with(to));
        if m == MatchType::Exact && ((after && !how.reverse) || (before && how.reverse)) {
            break;
        }
        let excluded = c.get(Field::Index(3)) == "alexa/dat"
            || coll.acl.as_ref().is_some_and(|rules| {
                rules.access(c.get(Field::Index(0)).as_bytes(), ts.as_bytes())
                    == ukvs::acl::Access::Exclude
            });
        if before || after || excluded {
            prev = Some((line, copies + 1));
            continue;
        }
        let passes = p.filters.iter().all(|f| match f.field {
            Some(field) => f.accepts(c.get(field)),
            None => f.accepts(&c.line()),
        }) && collapser.keeps(&c);
        if !passes {
            if let Some(k) = &mut kept {
                k.skipped += 1;
                k.end = ts.to_string();
                if let Some(d) = &mut k.digests {
                    d.insert(c.get(Field::Index(5)).to_string());
                }
            }
            prev = Some((line, copies + 1));
            continue;
        }
        if limit.is_some_and(|n| written >= n) {
            // The next line the answer would write: the page ends before it.
            more = true;
            break;
        }
        if let Some(k) = kept.take() {
            put(&mut out, sink, k, &mut held);
        }
        let dupe_count = if p.show_dupe_count {
            let n = dupes.entry(c.get(Field::Index(5)).to_string()).or_insert(0);
            let now = *n;
            *n += 1;
            now
        } else {
            0
        };
        let end = ts.to_string();
        let digests = p
            .show_uniq_count
            .then(|| std::iter::once(c.get(Field::Index(5)).to_string()).collect());
        kept = Some(Kept {
            capture: c,
            dupes: dupe_count,
            skipped: 0,
            end,
            digests,
        });
        written += 1;
        prev = Some((line, copies + 1));
        if sink.is_gone() {
            return Ok(());
        }
        if limit.is_some_and(|n| written >= n) && !p.show_resume_key && !counts {
            break;
        }
    }
    if let Some(k) = kept.take() {
        put(&mut out, sink, k, &mut held);
    }
    match held {
        Held::Stream => {}
        Held::Flip(rows) => {
            for row in rows.into_iter().rev() {
                out.row(sink, &row);
            }
        }
        Held::Last(q, _) => {
            for row in q {
                out.row(sink, &row);
            }
        }
        Held::Closest(heap, _, _) => {
            for (_, _, row) in heap.into_sorted_vec() {
                out.row(sink, &row);
            }
        }
    }
    let key = match (&prev, more && p.show_resume_key && !how.flip && !p.newest) {
        (Some((line, n)), true) => Some(Position::key(line, *n)),
        _ => None,
    };
    out.end(sink, key.as_deref());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_ia_keys_are_positions() {
        let line = b"com,example)/ 20200101000000 {\"url\": \"http://example.com/?a=b&c\"}";
        let key = Position::key(line, 3);
        assert!(!key.contains(['\n', ' ', '&']), "{key}");
        // A client sends it back percent-encoded; the query parser
        // decodes that once, leaving the key as written.
        let back = Position::parse(&key);
        assert_eq!((back.start.as_slice(), back.skip), (&line[..], 3));
        let ia = Position::parse("com%2Cdw%29%2F+20191218145126");
        assert_eq!(
            (ia.start.as_slice(), ia.skip),
            (&b"com,dw)/ 20191218145126"[..], 0)
        );
    }

    #[test]
    fn classic_lines_are_read_as_pywb_reads_them() {
        for line in [
            "a)/ 20200101000000 http://a/ text/html 200 DIGEST - - 10 20 f.warc.gz",
            "a)/ 20200101000000 http://a/ text/html 200 DIGEST - 20 f.warc.gz",
            "a)/ 20200101000000 http://a/ text/html 200 DIGEST - R 20 f.warc.gz",
            "a)/ 20200101000000 http://a/ text/html 200 DIGEST 10",
            "a)/ 20200101000000 http://a/ warc/revisit -  - - 10 20 f.warc.gz",
        ] {
            let fast = Capture::parse(line.as_bytes(), &[]).unwrap();
            let o = Obj::parse(line.as_bytes(), &[]).unwrap();
            let slow = PYWB_NAMES.map(|n| match o.get_str(n) {
                v if v.is_empty() => "-".to_string(),
                v => v,
            });
            assert_eq!(fast.values, slow, "{line}");
        }
    }

    #[test]
    fn a_resumed_range_keeps_its_end() {
        for (m, inside, past) in [
            (MatchType::Exact, &b"a,b)/x 2021"[..], &b"a,b)/x2 2021"[..]),
            (MatchType::Prefix, b"a,b)/x9 1", b"a,b)/y 1"),
            (MatchType::Host, b"a,b)/zz 1", b"a,b,c)/ 1"),
        ] {
            let r = KeyRange::new(b"a,b)/x", m);
            let at = resumed(&r, b"a,b)/x 2020");
            assert!(at.contains(inside), "{m:?}");
            assert!(!at.contains(past), "{m:?}");
            assert!(!at.contains(b"a,b)/x 2019"), "{m:?}");
        }
    }
}
