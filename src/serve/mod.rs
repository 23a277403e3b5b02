//! `ukvs serve`: the HTTP front end. Replay systems query it as they query
//! pywb's CDX server; it answers from sorted files and ZipNum clusters in
//! place, through the engine ([`ukvs::engine::lookup`]).
//!
//! ```text
//! accept loop (tokio) ─► connection (hyper http1; header timeout, size cap)
//!        │ semaphore: at most --max-connections at once
//!        ▼
//! route(path) ─► /health
//!             ─► /NAME?url=... | ?q=...     outback::answer  (OutbackCDX's form)
//!             ─► /NAME/cdx?...              cdx::answer      (pywb's API)
//!             ─► /NAME/cdx/search/cdx?...   wayback::answer  (IA's API;
//!                /cdx/search/cdx with --default NAME)
//!             ─► /NAME/timemap/link/URL     cdx::timemap     (RFC 7089)
//!             ─► /NAME/mementomap?url=...   maps::answer
//!             ─► /NAME/digest?digest=...    digest::answer   (by payload)
//!             ─► /NAME/archive/FILE         archive::answer  (a WACZ's WARC,
//!                                                             Range requests)
//!             ─► POST /NAME, /NAME/delete   live::post       (OutbackCDX's writes)
//!             ─► POST /NAME/fold            live::post       (delta folded into a base)
//!        │
//!        ▼ lookups on collections of ZipNum clusters (and live deltas
//!          that fit their store's cache): first made on the
//!          connection's thread with block reads refused; answered whole
//!          if the block cache held all (http::stream_held)
//!        ▼ a search thread (engine::searches; spawn_blocking when all
//!          are busy): the engine searches the maps and sends the
//!          answer in chunks through a bounded channel (the client's pace
//!          holds the search back, so no answer is held whole)
//! ```
//!
//! The catalog of collections sits behind a lock as an `Arc`; a request
//! takes its own reference, so SIGHUP can swap in re-opened files while
//! answers from the old ones finish. Every answer is gzip-compressed as it
//! streams when the client accepts it (`http::gzip`). SIGTERM stops accepting, lets the
//! answers in flight finish (for a bounded time), writes the live
//! collections' memtables out (`engine::live::Delta::write_out`, up to
//! 30 s, so that their next open replays no journal) and exits 0.

mod archive;
mod catalog;
mod cdx;
mod digest;
mod http;
mod live;
mod maps;
mod outback;
mod pywb;
mod wayback;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use catalog::Catalog;
pub use catalog::Spec;

/// How the server runs.
pub struct Options {
    pub bind: SocketAddr,
    /// The collections given as arguments (`NAME=PATH` specs).
    pub specs: Vec<Spec>,
    /// A file of more specs, read at the start and again on SIGHUP.
    pub config: Option<std::path::PathBuf>,
    pub quiet: bool,
    pub max_connections: usize,
    /// Longest request head (request line and headers) accepted.
    pub max_request_bytes: usize,
    /// Time a client has to send a request head; an idle connection is
    /// closed after it.
    pub idle: Duration,
    pub no_mmap: bool,
    /// Worker threads for the engine's searches (0 = every core).
    pub threads: usize,
    /// Where each collection's delta lives (`DIR/NAME/`): the
    /// collections take writes.
    pub data: Option<std::path::PathBuf>,
    /// A POST to an unknown collection is refused rather than creating it.
    pub no_create: bool,
    /// Collections made here keep no digest index.
    pub no_digest_index: bool,
    /// Memory each collection's writes may hold, in bytes.
    pub write_memory: u64,
    /// A file holding the bearer token writes must send.
    pub write_token: Option<std::path::PathBuf>,
    /// Collections that take no writes.
    pub read_only: Vec<String>,
    /// The collection `/cdx/search/cdx` answers from (the Wayback
    /// Machine's path, without a collection name).
    pub default: Option<String>,
}

/// What every request handler shares.
struct Shared {
    catalog: RwLock<Arc<Catalog>>,
    quiet: bool,
    /// `--data`: the deltas, when the server takes writes.
    writes: Option<live::Writes>,
    /// Who may write.
    access: live::Access,
    /// `--default`.
    default: Option<String>,
    no_mmap: bool,
}

impl Shared {
    fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Runs the server until SIGTERM or SIGINT.
pub fn run(opts: Options) -> anyhow::Result<()> {
    for name in &opts.read_only {
        catalog::check_name(name).map_err(|e| anyhow::anyhow!("--read-only: {e}"))?;
    }
    let specs = all_specs(&opts.specs, opts.config.as_deref())?;
    let writes = match &opts.data {
        Some(dir) => Some(live::Writes::open(
            dir,
            opts.no_create,
            ukvs::engine::live::Settings {
                digests: match opts.no_digest_index {
                    true => ukvs::engine::live::Digests::Off,
                    false => ukvs::engine::live::Digests::On,
                },
                write_memory: opts.write_memory,
                upkeep: ukvs::engine::live::Upkeep::Compact,
            },
            &index_names(&specs),
        )?),
        None => None,
    };
    let deltas = writes
        .as_ref()
        .map(live::Writes::snapshot)
        .unwrap_or_default();
    let catalog = Catalog::open(&specs, opts.no_mmap, &deltas, writes.is_some())?;
    if let Some(name) = &opts.default {
        // With --data, a POST may create it later.
        if catalog.get(name).is_none() && writes.is_none() {
            anyhow::bail!(
                "--default {name}: no collection of that name (this server has: {})",
                catalog.names().join(", ")
            );
        }
    }
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.threads
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .max_blocking_threads((threads * 16).max(64))
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(serve(opts, catalog, writes))
}

/// The names of the collections that serve an index (with `--data`,
/// each gets a delta).
fn index_names(specs: &[Spec]) -> Vec<&str> {
    specs
        .iter()
        .filter(|s| s.kind == catalog::Kind::Index)
        .map(|s| s.name.as_str())
        .collect()
}

async fn serve(
    opts: Options,
    catalog: Catalog,
    writes: Option<live::Writes>,
) -> anyhow::Result<()> {
    let access = live::Access::new(opts.write_token.as_deref(), &opts.read_only)?;
    let listener = TcpListener::bind(opts.bind)
        .await
        .with_context(|| format!("cannot listen on {}", opts.bind))?;
    let local = listener.local_addr()?;
    let names = catalog.names().join(", ");
    ukvs::report!("ukvs serve: listening on http://{local}/ ({names})");
    let shared = Arc::new(Shared {
        catalog: RwLock::new(Arc::new(catalog)),
        quiet: opts.quiet,
        writes,
        access,
        default: opts.default.clone(),
        no_mmap: opts.no_mmap,
    });
    let permits = Arc::new(Semaphore::new(opts.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut term = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut hup = signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.idle)
        .max_buf_size(opts.max_request_bytes.max(8192))
        .keep_alive(true);
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => reload(&opts, &shared).await,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: wait, go on.
                        ukvs::report!("ukvs serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    // Full: refuse at once rather than queue without bound.
                    tokio::spawn(http::refuse(stream));
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let service = hyper::service::service_fn(move |req| {
                    let shared = shared.clone();
                    async move { Ok::<_, std::convert::Infallible>(handle(&shared, req, peer).await) }
                });
                let conn = builder.serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    ukvs::report!("ukvs serve: stopping; finishing the answers in flight");
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(Duration::from_secs(10)) => {
            ukvs::report!("ukvs serve: answers still running after 10 s were cut");
        }
    }
    if let Some(writes) = &shared.writes {
        tokio::task::block_in_place(|| writes.write_out(Duration::from_secs(30)));
    }
    Ok(())
}

fn signal(kind: tokio::signal::unix::SignalKind) -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).context("installing a signal handler")
}

/// The argument specs and those of the config file.
fn all_specs(specs: &[Spec], config: Option<&std::path::Path>) -> anyhow::Result<Vec<Spec>> {
    let mut all = specs.to_vec();
    if let Some(path) = config {
        all.extend(catalog::read_config(path)?);
    }
    Ok(all)
}

/// SIGHUP: re-reads the config file (if any) and re-opens every index;
/// on failure the old catalog stays and the reason is logged.
async fn reload(opts: &Options, shared: &Arc<Shared>) {
    let config = opts.config.clone();
    let specs = opts.specs.clone();
    let no_mmap = opts.no_mmap;
    let shared2 = shared.clone();
    let opened = tokio::task::spawn_blocking(move || {
        let specs = all_specs(&specs, config.as_deref())?;
        let deltas = match &shared2.writes {
            Some(w) => {
                w.ensure(&index_names(&specs))?;
                w.snapshot()
            }
            None => Default::default(),
        };
        Catalog::open(&specs, no_mmap, &deltas, shared2.writes.is_some())
    })
    .await;
    match opened {
        Ok(Ok(catalog)) => {
            let names = catalog.names().join(", ");
            *shared.catalog.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
            ukvs::report!("ukvs serve: re-opened the indexes ({names})");
        }
        Ok(Err(e)) => ukvs::report!("ukvs serve: SIGHUP: {e:#}; still serving the old indexes"),
        Err(e) => ukvs::report!("ukvs serve: SIGHUP: {e}; still serving the old indexes"),
    }
}

/// Routes one request and logs it.
async fn handle(
    shared: &Arc<Shared>,
    req: hyper::Request<hyper::body::Incoming>,
    peer: SocketAddr,
) -> http::Response {
    let started = Instant::now();
    let target = req.uri().path_and_query().map_or_else(
        || req.uri().path().to_string(),
        |pq| pq.as_str().to_string(),
    );
    let method = req.method().clone();
    let gzip = http::accepts_gzip(req.headers());
    let res = if method == hyper::Method::POST {
        live::post(shared, req, peer).await
    } else {
        route(shared, &req).await
    };
    let res = if gzip { http::gzip(res) } else { res };
    if !shared.quiet {
        ukvs::report!(
            "{peer} {} {target} {} {:.3}ms",
            method,
            res.status().as_u16(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    res
}

/// `/NAME/stats`: the collection's sources and the block cache's counts
/// (the cache is the process's, shared by every collection).
fn stats(coll: &catalog::Coll) -> http::Response {
    let sources: Vec<serde_json::Value> = coll
        .index
        .iter()
        .flat_map(|i| i.sources())
        .map(|s| serde_json::json!({"name": s.name(), "cluster": s.is_cluster()}))
        .collect();
    let c = ukvs::engine::blocks::cache().counts();
    let body = serde_json::json!({
        "collection": coll.name,
        "sources": sources,
        "blockCache": {
            "capacity": c.capacity,
            "hits": c.hits,
            "misses": c.misses,
            "waits": c.waits,
            "blocks": c.blocks,
            "pieces": c.pieces,
            "bytes": c.bytes,
        },
    });
    http::whole(
        200,
        "application/json",
        format!("{body}\n").into_bytes(),
        &[],
    )
}

async fn route(
    shared: &Arc<Shared>,
    req: &hyper::Request<hyper::body::Incoming>,
) -> http::Response {
    if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
        return http::text(405, "only GET, HEAD and POST are served\n");
    }
    let path = req.uri().path();
    let query = req.uri().query().unwrap_or("");
    if path == "/health" {
        return http::text(200, "ok\n");
    }
    let Some(rest) = path.strip_prefix('/') else {
        return http::text(404, "not found\n");
    };
    let (name, what) = match (rest, &shared.default) {
        ("cdx/search/cdx", Some(default)) => (default.as_str(), "cdx/search/cdx"),
        ("cdx/search/cdx", None) => {
            return http::text(
                404,
                "/cdx/search/cdx answers from the collection named by --default NAME; \
                 without it, ask /NAME/cdx/search/cdx\n",
            )
        }
        _ => rest.split_once('/').unwrap_or((rest, "")),
    };
    let catalog = shared.catalog();
    let Some(coll) = catalog.get(name) else {
        let known = catalog.names().join(", ");
        return http::text(
            404,
            &format!("no collection named {name:?} (this server has: {known})\n"),
        );
    };
    match what {
        "" => outback::answer(coll, query).await,
        "cdx" => cdx::answer(coll, query).await,
        "cdx/search/cdx" => wayback::answer(coll, query).await,
        "mementomap" => maps::answer(coll, query).await,
        "digest" => digest::answer(coll, query).await,
        "stats" => stats(&coll),
        _ if what.starts_with("archive/") => {
            let file = &what["archive/".len()..];
            let range = req.headers().get(hyper::header::RANGE);
            let head_only = req.method() == hyper::Method::HEAD;
            archive::answer(coll, file, range, head_only).await
        }
        _ => match what.strip_prefix("timemap/link/") {
            Some(_) => {
                // The URL may hold its own `?`: take it whole from the
                // request target.
                let raw = req.uri().path_and_query().map_or("", |pq| pq.as_str());
                let url = raw
                    .split_once("/timemap/link/")
                    .map_or("", |(_, u)| u)
                    .to_string();
                let host = req
                    .headers()
                    .get(hyper::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("localhost");
                cdx::timemap(coll, &url, format!("http://{host}/{name}/")).await
            }
            None => http::text(
                404,
                &format!(
                    "not found: collection {name:?} serves /{name}?url=URL, /{name}/cdx, \
                     /{name}/cdx/search/cdx, /{name}/timemap/link/URL, \
                     /{name}/mementomap, /{name}/digest, /{name}/archive/FILE and \
                     /{name}/stats\n"
                ),
            ),
        },
    }
}
