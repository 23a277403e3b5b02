//! `GET /NAME?...`: OutbackCDX's own query form, so that OutbackCDX's
//! clients (OpenWayback's `RemoteResourceIndex`, pywb configured with
//! `api_url: .../NAME?url={url}&closest={closest}&sort=closest`, crawler
//! de-duplication) use the server unchanged.
//!
//! ```text
//! ?q=type:..+url:..  ─► XmlQuery ─► urlquery: the key's captures
//!                                   prefixquery: one result per key
//! ?url=.. | ?urlkey=..─► Query ─► key range ─► Merged::lines (bases +
//!   delta - tombstones, byte order) ─► Capture ─► from/to, filters
//!   ─► (reverse | closest: the URL's captures held and ordered)
//!   ─► collapse ─► limit ─► CDX text | JSON arrays | JSON objects
//! neither            ─► a line on what the collection holds
//! ```
//!
//! Parameters and answers are OutbackCDX's ([`ukvs::ukvs::outback`]);
//! every collection answers, whatever its bases, through the same merged
//! read as `/NAME/cdx`. A bad parameter is a 400 naming it.

use std::io::Write;
use std::sync::Arc;

use ukvs::engine::merged::Error as ReadError;
use ukvs::ukvs::outback::{
    closest_order, xml_capture, xml_error, xml_request, Capture, JsonRows, MatchType, Output,
    Params, Query, Resource, Sort, XmlQuery, XML_END, XML_MAX_COUNTED, XML_START,
};

use super::catalog::Coll;
use super::http::{self, Head, Sink};

/// Answers `GET /NAME?query`.
pub async fn answer(coll: Arc<Coll>, query: &str) -> http::Response {
    let params = Params::parse(query);
    if coll.index.is_none() && coll.live.is_none() {
        return http::text(400, &format!("collection {} serves no index\n", coll.name));
    }
    if params.has("q") {
        return match XmlQuery::parse(&params) {
            Ok(q) => xml(coll, q).await,
            Err(e) => http::text(400, &format!("{e}\n")),
        };
    }
    if !params.has("url") && !params.has("urlkey") {
        return details(coll).await;
    }
    let q = match Query::parse(&params) {
        Ok(q) => q,
        Err(e) => return http::text(400, &format!("{e}\n")),
    };
    http::stream_held(coll.reads_only_blocks(), move |sink| {
        if let Err(e) = captures(&coll, &q, sink) {
            if sink.is_gone() {
                // No one to tell, or made again.
            } else if sink.is_started() {
                ukvs::report!("ukvs serve: {}: answer cut: {e}", coll.name);
            } else {
                sink.start(Head::Fail(
                    500,
                    "text/plain; charset=utf-8".into(),
                    format!("{e}\n").into_bytes(),
                ));
            }
        }
    })
    .await
}

/// A line that could not be had, or not be read.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("a stored line cannot be read: {0}")]
    Line(String),
}

/// The collection's captures in `range`, in index order, read as
/// OutbackCDX's captures.
fn read_captures<'a>(
    coll: &'a Coll,
    range: &'a ukvs::sorted::KeyRange,
) -> Result<impl Iterator<Item = Result<Capture, Error>> + 'a, Error> {
    let lines = coll.merged().lines(range)?;
    Ok(lines.map(move |l| {
        let l = l?;
        Capture::from_line(&l, &coll.value_names).map_err(Error::Line)
    }))
}

/// Headers of a CDX answer, as OutbackCDX sends them.
fn cdx_headers(key: &str) -> Vec<(String, String)> {
    let mut h = vec![("Access-Control-Allow-Origin".into(), "*".into())];
    if key.bytes().all(|b| (b' '..0x7f).contains(&b)) {
        h.push(("outbackcdx-urlkey".into(), key.to_string()));
    }
    h
}

fn captures(coll: &Coll, q: &Query, sink: &mut Sink) -> Result<(), Error> {
    let key = q.key(&coll.surt);
    let range = q.range(&key);
    let found = read_captures(coll, &range)?;
    let content_type = match q.output {
        Output::Text => "text/plain",
        Output::Json | Output::JsonDict => "application/json",
    };
    // The closest order ignores from/to, as OutbackCDX's does.
    let timed = q.sort != Sort::Closest;
    let kept = found.filter(move |c| match c {
        Ok(c) if timed => q.accepts(c),
        Ok(c) => q.filters.iter().all(|f| f.accepts(c)),
        Err(_) => true,
    });
    // Reverse and closest hold the URL's captures (an exact match: one
    // URL) to order them.
    let ordered: Box<dyn Iterator<Item = Result<Capture, Error>>> = match (q.sort, &q.closest) {
        (Sort::Default, _) | (Sort::Closest, None) => Box::new(kept),
        (Sort::Reverse, _) => {
            let mut all = kept.collect::<Result<Vec<_>, _>>()?;
            all.reverse();
            Box::new(all.into_iter().map(Ok))
        }
        (Sort::Closest, Some(at)) => {
            let all = kept.collect::<Result<Vec<_>, _>>()?;
            let all = closest_order(all, at, Capture::timestamp_u64);
            Box::new(all.into_iter().map(Ok))
        }
    };
    debug_assert!(q.sort == Sort::Default || q.match_type == MatchType::Exact);
    sink.start(Head::Ok {
        content_type: content_type.into(),
        headers: cdx_headers(&key),
    });
    let mut json = JsonRows::default();
    if q.output != Output::Text {
        let _ = sink.write_all(json.start().as_bytes());
    }
    let names = (q.output == Output::JsonDict).then_some(&q.field_names[..]);
    let mut written: i64 = 0;
    let mut write = |sink: &mut Sink, c: &Capture| -> bool {
        if written >= q.limit {
            return false;
        }
        written += 1;
        let text = match q.output {
            Output::Text => {
                let mut t = c.text(&q.fields);
                t.push('\n');
                t
            }
            _ => json.row(c, &q.fields, names),
        };
        let _ = sink.write_all(text.as_bytes());
        !sink.is_gone()
    };
    let mut last: Option<(String, Capture)> = None;
    for c in ordered {
        let c = c?;
        let go_on = match &q.collapse {
            None => write(sink, &c),
            Some(col) => {
                let token = col.token(&c);
                let same = last.as_ref().is_some_and(|(t, _)| *t == token);
                if col.to_last {
                    // The previous capture goes out when this one differs.
                    let prev = last.replace((token, c));
                    match prev {
                        Some((_, p)) if !same => write(sink, &p),
                        _ => true,
                    }
                } else {
                    last = Some((token, Capture::default()));
                    same || write(sink, &c)
                }
            }
        };
        if !go_on {
            break;
        }
    }
    if let (Some(col), Some((_, p))) = (&q.collapse, last) {
        if col.to_last {
            write(sink, &p);
        }
    }
    if q.output != Output::Text {
        let _ = sink.write_all(json.finish().as_bytes());
    }
    Ok(())
}

/// The current UTC time as 14 digits.
fn now_14() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    ukvs::engine::format::datetime_14(i64::try_from(secs).unwrap_or(0))
}

/// Counts results as OutbackCDX's XML query does: those before the page
/// are skipped, the page's are given, and those after it are counted up
/// to [`XML_MAX_COUNTED`] (or the page's end, if further).
struct Pager {
    offset: u64,
    end: u64,
    found: u64,
    returned: u64,
}

enum Step {
    Skip,
    Give,
    Stop,
}

impl Pager {
    fn new(q: &XmlQuery) -> Pager {
        let offset = u64::try_from(q.offset).unwrap_or(0);
        let limit = u64::try_from(q.limit).unwrap_or(0);
        Pager {
            offset,
            end: offset.saturating_add(limit),
            found: 0,
            returned: 0,
        }
    }

    fn step(&mut self) -> Step {
        if self.found < self.offset {
            self.found += 1;
            return Step::Skip;
        }
        if self.found >= self.end {
            if self.found < XML_MAX_COUNTED {
                self.found += 1;
                return Step::Skip;
            }
            return Step::Stop;
        }
        self.found += 1;
        self.returned += 1;
        Step::Give
    }
}

/// `?q=type:urlquery+url:URL` (a URL's captures) or `type:prefixquery`
/// (the URLs under a key, one result each).
async fn xml(coll: Arc<Coll>, q: XmlQuery) -> http::Response {
    http::stream(move |sink| {
        sink.start(Head::Ok {
            content_type: "application/xml;charset=UTF-8".into(),
            headers: Vec::new(),
        });
        let _ = sink.write_all(XML_START.as_bytes());
        let key =
            String::from_utf8_lossy(&ukvs::surt::key(q.url.as_bytes(), &coll.surt).0).into_owned();
        let done = match q.kind.as_str() {
            "urlquery" => url_query(&coll, &q, &key, sink),
            "prefixquery" => prefix_query(&coll, &q, &key, sink),
            _ => {
                let _ = sink.write_all(
                    xml_error(
                        "Unsupported query type",
                        "The requested query type is unknown to the index.",
                    )
                    .as_bytes(),
                );
                Ok(())
            }
        };
        match done {
            Ok(()) => {
                let _ = sink.write_all(XML_END.as_bytes());
            }
            Err(e) => ukvs::report!("ukvs serve: {}: answer cut: {e}", coll.name),
        }
    })
    .await
}

fn not_found() -> String {
    xml_error(
        "Resource Not In Archive",
        "The Resource you requested is not in this archive.",
    )
}

fn url_query(coll: &Coll, q: &XmlQuery, key: &str, sink: &mut Sink) -> Result<(), Error> {
    let range = ukvs::sorted::KeyRange::new(key.as_bytes(), ukvs::sorted::MatchType::Exact);
    let mut pager = Pager::new(q);
    for c in read_captures(coll, &range)? {
        let c = c?;
        match pager.step() {
            Step::Skip => continue,
            Step::Stop => break,
            Step::Give => {}
        }
        if pager.returned == 1 {
            let _ = sink.write_all(b"<results>");
        }
        let _ = sink.write_all(xml_capture(&c).as_bytes());
        if sink.is_gone() {
            return Ok(());
        }
    }
    finish_results(q, key, "resultstypecapture", &pager, sink);
    Ok(())
}

fn prefix_query(coll: &Coll, q: &XmlQuery, key: &str, sink: &mut Sink) -> Result<(), Error> {
    let range = ukvs::sorted::KeyRange::new(key.as_bytes(), ukvs::sorted::MatchType::Prefix);
    let mut pager = Pager::new(q);
    let mut give = |r: Resource, sink: &mut Sink| -> bool {
        match pager.step() {
            Step::Skip => return true,
            Step::Stop => return false,
            Step::Give => {}
        }
        if pager.returned == 1 {
            let _ = sink.write_all(b"<results>");
        }
        let _ = sink.write_all(r.xml().as_bytes());
        !sink.is_gone()
    };
    let mut current: Option<Resource> = None;
    for c in read_captures(coll, &range)? {
        let c = c?;
        let next = match &mut current {
            Some(r) => r.add(c),
            None => Some(c),
        };
        if let Some(c) = next {
            if let Some(done) = current.replace(Resource::new(c)) {
                if !give(done, sink) {
                    current = None;
                    break;
                }
            }
        }
    }
    if let Some(r) = current {
        give(r, sink);
    }
    finish_results(q, key, "resultstypeurl", &pager, sink);
    Ok(())
}

fn finish_results(q: &XmlQuery, key: &str, kind: &str, pager: &Pager, sink: &mut Sink) {
    let tail = if pager.returned > 0 {
        format!(
            "</results>{}",
            xml_request(q, key, kind, pager.returned, pager.found, &now_14())
        )
    } else {
        not_found()
    };
    let _ = sink.write_all(tail.as_bytes());
}

/// `GET /NAME` without a query: what the collection holds.
async fn details(coll: Arc<Coll>) -> http::Response {
    let mut text = format!(
        "collection {}: {} base source(s)",
        coll.name,
        coll.index.as_ref().map_or(0, |i| i.sources().len())
    );
    if let Some(d) = coll.live.clone() {
        let counts = tokio::task::spawn_blocking(move || d.counts()).await;
        match counts {
            Ok(Ok((lines, hidden))) => text.push_str(&format!(
                "; live: {lines} line(s) added, {hidden} capture(s) hidden"
            )),
            _ => text.push_str("; live: the delta cannot be read now"),
        }
    }
    text.push_str(&format!(
        "\nquery: /{0}?url=URL (OutbackCDX), /{0}/cdx?url=URL (pywb), \
         /{0}?q=type:urlquery+url:URL (OpenWayback)\n",
        coll.name
    ));
    http::text(200, &text)
}
