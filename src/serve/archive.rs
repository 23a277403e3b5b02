//! `/NAME/archive/FILE`: the bytes of a WARC inside the collection's WACZ
//! packages, so that a replay system (pywb's `archive_paths` given as an
//! http prefix) reads records from the package in place, nothing
//! extracted. `FILE` is the name the package's index gives the WARC.
//!
//! A `Range: bytes=...` header (one range) is answered 206 with those
//! bytes of the entry and `Content-Range`; none, 200 with the whole
//! entry. A malformed or unsatisfiable range is 416, a name no package
//! holds 404, an entry deflated in the ZIP (it has no byte offsets) 409,
//! each with a message. The bytes stream from positioned reads of the
//! package, never compressed for transport: the offsets are the
//! client's. The packages' central directories are kept by the
//! collection ([`ukvs::engine::package::Archives`]) while their files
//! are unchanged.

use std::sync::Arc;

use ukvs::engine::package::copy_entry_range;
use ukvs::wacz::{byte_range, Method, RangeError};

use super::catalog::{Coll, Kind};
use super::http::{self, Head};

/// Answers GET or HEAD `/NAME/archive/{file}` (`file` still
/// percent-encoded) with `range` the request's Range header.
pub async fn answer(
    coll: Arc<Coll>,
    file: &str,
    range: Option<&hyper::header::HeaderValue>,
    head_only: bool,
) -> http::Response {
    let Ok(name) = percent_encoding::percent_decode_str(file).decode_utf8() else {
        return http::text(400, "the file name is not UTF-8 once percent-decoded\n");
    };
    let name = name.into_owned();
    if name.is_empty() {
        return http::text(
            404,
            "ask /NAME/archive/FILE with FILE a WARC of the collection's packages\n",
        );
    }
    let range = match range.map(|v| v.to_str()) {
        None => None,
        Some(Ok(v)) => Some(v.to_string()),
        Some(Err(_)) => return http::text(416, "the Range header is not ASCII\n"),
    };
    let paths: Vec<_> = coll
        .specs
        .iter()
        .filter(|s| s.kind == Kind::Index)
        .map(|s| s.path.clone())
        .collect();
    let coll_name = coll.name.clone();
    let mut res = http::stream(move |sink| {
        let Some(found) = coll.archives.find(&paths, &name) else {
            let msg =
                format!("no WARC named {name:?} in the packages of collection {coll_name:?}\n");
            return sink.start(Head::Fail(
                404,
                "text/plain; charset=utf-8".into(),
                msg.into(),
            ));
        };
        if found.entry.method != Method::Stored {
            let msg = format!(
                "{} entry {}: compressed in the ZIP, so its records cannot be read at their \
                 offsets; re-pack the WARCs stored (as the WACZ spec asks)\n",
                found.package.display(),
                found.entry.name
            );
            return sink.start(Head::Fail(
                409,
                "text/plain; charset=utf-8".into(),
                msg.into(),
            ));
        }
        let size = found.entry.size;
        let (bytes, mut headers) = match range.as_deref().map(|r| byte_range(r, size)) {
            None => (0..size, vec![]),
            Some(Ok(r)) => {
                let cr = format!("bytes {}-{}/{size}", r.start, r.end - 1);
                (r, vec![("Content-Range".to_string(), cr)])
            }
            Some(Err(e)) => {
                let content_type = "text/plain; charset=utf-8".to_string();
                let head = match e {
                    // RFC 9110 15.5.17: the representation's length, for
                    // the client.
                    RangeError::Unsatisfiable { .. } => Head::FailWith {
                        status: 416,
                        content_type,
                        body: format!("{e} (Content-Range: bytes */{size})\n").into_bytes(),
                        headers: vec![("Content-Range".into(), format!("bytes */{size}"))],
                    },
                    _ => Head::Fail(416, content_type, format!("{e}\n").into_bytes()),
                };
                return sink.start(head);
            }
        };
        headers.push((
            "Content-Length".into(),
            (bytes.end - bytes.start).to_string(),
        ));
        headers.push(("Accept-Ranges".into(), "bytes".into()));
        sink.start(Head::Ok {
            content_type: "application/warc".into(),
            headers,
        });
        if head_only {
            return;
        }
        if let Err(e) = copy_entry_range(&found, bytes, sink) {
            if !sink.is_gone() {
                ukvs::report!("ukvs serve: {coll_name}: /archive/{name}: answer cut: {e:#}");
            }
        }
    })
    .await;
    let partial = res.headers().contains_key(hyper::header::CONTENT_RANGE);
    if partial && res.status() == 200 {
        *res.status_mut() = hyper::StatusCode::PARTIAL_CONTENT;
    }
    http::identity(&mut res);
    res
}
