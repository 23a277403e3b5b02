//! `/NAME/digest?digest=...`: every capture of one payload, at any URL,
//! oldest first, from the collection's digest files (`NAME=digests:PATH`)
//! and, for a live collection, its delta: captures it deleted or replaced
//! are left out of the files' answer, and its own captures of the
//! payload added (`engine::digests::captures_with`).
//!
//! Parameters: `digest` (any spelling `ukvs::digest::Digest::parse`
//! reads), `output` (`cdxj`, the default, `json` or `text`, as `/NAME/cdx`
//! writes them), `fl` (or `fields`), `limit` (100,000 unless given). The
//! collection's access rules leave out the captures they exclude. The
//! answer streams; reordering by datetime holds 8 MiB and spills the rest.

use std::io::Write;
use std::sync::Arc;

use ukvs::digest::{Digest, Entry};

use super::catalog::Coll;
use super::cdx::ApiError;
use super::http::{self, Head, Sink};
use super::pywb::Obj;

/// Captures in an answer unless `limit` says otherwise (the CDX API's).
const DEFAULT_LIMIT: u64 = 100_000;

#[derive(Clone, Copy)]
enum Output {
    Cdxj,
    Json,
    Text,
}

/// Answers `/NAME/digest?query`.
pub async fn answer(coll: Arc<Coll>, query: &str) -> http::Response {
    let query = query.to_string();
    http::stream(move |sink| {
        if let Err(e) = run(&coll, &query, sink) {
            if sink.is_started() {
                ukvs::report!("ukvs serve: {}: answer cut: {e:?}", coll.name);
            } else {
                sink.start(e.head());
            }
        }
    })
    .await
}

fn run(coll: &Coll, query: &str, sink: &mut Sink) -> Result<(), ApiError> {
    let mut digest = None;
    let mut output = Output::Cdxj;
    let mut fields: Option<Vec<String>> = None;
    let mut limit = DEFAULT_LIMIT;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "digest" => digest = Some(v.into_owned()),
            "output" => {
                output = match &*v {
                    "cdxj" => Output::Cdxj,
                    "json" => Output::Json,
                    "text" => Output::Text,
                    other => {
                        return Err(ApiError::Bad(format!(
                            "output={other} not supported (cdxj, json or text)"
                        )))
                    }
                }
            }
            "fl" | "fields" => fields = Some(v.split(',').map(str::to_string).collect()),
            "limit" => {
                limit = v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        ApiError::Bad(format!(
                            "Invalid value for limit= param: {v} (a whole number above 0)"
                        ))
                    })?
            }
            _ => {}
        }
    }
    let Some(digest) = digest else {
        return Err(ApiError::Bad(
            "The \"digest\" param is required: ?digest=sha1:... (or base32, hex, sha256:...)"
                .into(),
        ));
    };
    let digest = Digest::parse(&digest)
        .map_err(|e| ApiError::Bad(format!("Invalid value for digest= param: {e}")))?;
    if let Some(live) = coll.live.as_deref() {
        if live.digests() == ukvs::engine::live::Digests::Off {
            return Err(ApiError::Bad(format!(
                "collection {} keeps no index of its live captures' digests \
                 (it was made by `ukvs serve --no-digest-index`)",
                coll.name
            )));
        }
    }
    if coll.digests.is_none() && coll.live.is_none() {
        return Err(ApiError::Bad(format!(
            "collection {} has no digest file (serve one with {}=digests:PATH)",
            coll.name, coll.name
        )));
    }
    let lines = ukvs::engine::digests::captures_with(
        coll.digests.as_ref(),
        coll.live.as_deref(),
        coll.index
            .as_ref()
            .map(|i| (i, coll.value_names.as_slice())),
        &digest,
    )
    .map_err(|e| ApiError::failed(&e, true))?;
    let (content_type, fl) = match output {
        Output::Cdxj => ("text/x-cdxj", fields.as_deref()),
        Output::Json => ("text/x-ndjson", fields.as_deref()),
        Output::Text => ("text/plain", fields.as_deref()),
    };
    sink.start(Head::Ok {
        content_type: content_type.into(),
        headers: Vec::new(),
    });
    let mut n = 0;
    for line in lines {
        if n >= limit {
            break;
        }
        let line = line.map_err(|e| ApiError::failed(&e, true))?;
        let Some(entry) = Entry::parse(&line) else {
            continue;
        };
        if let Some(rules) = &coll.acl {
            let key = entry.record.surt.as_deref().unwrap_or("-");
            let datetime = entry.record.datetime.as_deref().unwrap_or("-");
            if rules.access(key.as_bytes(), datetime.as_bytes()) == ukvs::acl::Access::Exclude {
                continue;
            }
        }
        let o = Obj::parse(entry.to_cdxj().as_bytes(), &[]).map_err(ApiError::Internal)?;
        let text = match output {
            Output::Cdxj => o.to_cdxj(fl),
            Output::Json => o.to_json(fl),
            Output::Text => o.to_text(fl),
        };
        let _ = sink.write_all(text.as_bytes());
        if sink.is_gone() {
            break;
        }
        n += 1;
    }
    Ok(())
}
