//! `/NAME/mementomap?url=...`: MementoMap lookups, one answer line per
//! `url` parameter, as `ukvs mementomap lookup` prints them.

use std::sync::Arc;

use super::catalog::Coll;
use super::http;

/// Answers a lookup in the collection's map.
pub async fn answer(coll: Arc<Coll>, query: &str) -> http::Response {
    if coll.map.is_none() {
        return http::text(
            404,
            &format!(
                "collection {} has no MementoMap (serve one with {}=map:PATH)\n",
                coll.name, coll.name
            ),
        );
    }
    let urls: Vec<String> = form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "url")
        .map(|(_, v)| v.into_owned())
        .collect();
    if urls.iter().all(|u| u.trim().is_empty()) {
        return http::text(400, "give the URL or SURT to look up: ?url=...\n");
    }
    let found = tokio::task::spawn_blocking(move || {
        let map = coll.map.as_ref().expect("checked above");
        let mut out = Vec::new();
        for u in &urls {
            map.answer(u, None, &mut out)?;
        }
        std::io::Result::Ok(out)
    })
    .await;
    match found {
        Ok(Ok(body)) => http::whole(200, "text/plain; charset=utf-8", body, &[]),
        Ok(Err(e)) => http::text(500, &format!("lookup failed: {e}\n")),
        Err(_) => http::text(500, "lookup failed\n"),
    }
}
