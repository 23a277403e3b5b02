//! `ukvs serve`: arguments in, the HTTP server (`src/serve`) runs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::serve::{self, Spec};

/// Serve sorted indexes and ZipNum clusters over HTTP, with pywb's CDX
/// server API.
///
/// Each NAME=PATH makes PATH part of the collection NAME: a sorted UKVS,
/// CDXJ or CDX file, a directory of them (`*.cdx`, `*.cdxj`, `*.ukvs`), or
/// a ZipNum cluster (its directory or its `.idx`, local, or their URL:
/// `http(s)://HOST/DIR/`, `s3://BUCKET/PREFIX/`). Several PATHs under one
/// NAME are merged. `NAME=map:PATH` adds a MementoMap, `NAME=acl:PATH`
/// pywb access rules (`.aclj`), `NAME=digests:PATH` a digest file (`ukvs
/// index --digests`) or a directory of them.
///
/// Endpoints: `GET /NAME/cdx?url=...` (pywb 2.10's CDX API: matchType,
/// from, to, closest, sort, limit, filter, fl, output, showNumPages, page,
/// pageSize, ...), `GET /NAME/timemap/link/URL` (an RFC 7089 TimeMap),
/// `GET /NAME/mementomap?url=...`, `GET /NAME/digest?digest=...` (every
/// capture of a payload at any URL, oldest first: output, fl, limit),
/// `GET /NAME?url=...` (OutbackCDX's query form, and its XML `?q=`),
/// `GET /NAME/cdx/search/cdx?url=...`
/// (the Wayback Machine's CDX server API: fl, output=json, matchType,
/// from, to, filter, collapse, limit, offset, showResumeKey/resumeKey,
/// page, pageSize, showNumPages, showPagedIndex, showDupeCount,
/// showSkipCount; `/cdx/search/cdx` for the collection named by
/// `--default`) and `GET /health`; with a digest file,
/// `resolveRevisits=true` also resolves revisits of another URL. Answers
/// are gzip-compressed when the client accepts it. Files are memory-mapped
/// and searched in place (a wget CDX file, keyed by URLs, is keyed by SURTs
/// and sorted in memory when opened). A file out of byte order is answered
/// from as pywb answers from it, and said so once on stderr, with where
/// and how to fix it (`ukvs sort`).
///
/// With `--data DIR` the collections are live (OutbackCDX's write API):
/// `POST /NAME` with CDX (9-11 columns, with or without its legend), CDXJ
/// or UKVS lines adds them (`Added N records`), `POST /NAME/delete`
/// deletes them, also from the files (`Deleted N records`). Keys are
/// recomputed from the URLs; a body is atomic, answered once fsync'd; a
/// bad line rejects it with 400 naming the line (`?badLines=skip` takes
/// the others). Each collection's delta is kept in DIR/NAME/ and served
/// merged with its files. `POST /NAME/fold` folds the delta and the
/// files into one new sorted file in DIR/NAME/, served in their place
/// from then on (also after a restart with the same arguments); `ukvs
/// fold` does it with no server running.
///
/// Writes are taken from loopback clients only, unless `--write-token
/// FILE` gives a bearer token: then from any client that sends it
/// (`Authorization: Bearer TOKEN`), loopback included. `--read-only NAME`
/// (or a `NAME=writes:off` line in --config) refuses writes to NAME.
/// Refusals are 401 (no token sent) or 403 with a message.
///
/// `GET /NAME?url=...` answers OutbackCDX's own query form (CDX11 text,
/// `output=json`, matchType exact|prefix|host|domain|range, sort=reverse
/// or closest, from, to, filter, collapse, fl, limit) and `GET
/// /NAME?q=type:urlquery+url:...` OpenWayback's XML query.
///
/// Signals: SIGTERM or SIGINT stop accepting, finish the answers in flight,
/// write the live collections' memory out to their stores (up to 30 s) and
/// exit 0; SIGHUP re-reads `--config` and re-opens every index without
/// dropping a request.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// NAME=PATH, NAME=map:PATH, NAME=acl:PATH or NAME=digests:PATH.
    #[arg(value_name = "NAME=PATH", value_parser = clap::value_parser!(Spec))]
    specs: Vec<Spec>,
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// A file of NAME=PATH lines (`#` starts a comment), re-read on SIGHUP.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// No log line per request.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Connections served at once; more are answered 503 and closed.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Longest request head (request line and headers) accepted, in bytes.
    #[arg(long, default_value_t = 64 << 10)]
    max_request_bytes: usize,
    /// Seconds a client has to send a request's head before the
    /// connection is closed (slow or idle clients).
    #[arg(long, default_value_t = 30)]
    idle_timeout: u64,
    /// Read index files into memory instead of mapping them.
    #[arg(long)]
    no_mmap: bool,
    /// Memory for inflated ZipNum blocks, shared by every lookup (and
    /// every server thread): bytes, or with K, M, G (`0` = off: each
    /// lookup inflates no further into a block than it reads). Default: a
    /// sixteenth of the machine's memory, at most 4G.
    #[arg(long, value_name = "SIZE", value_parser = super::lookup::parse_cache)]
    cache: Option<u64>,
    /// Worker threads (0 = every core).
    #[arg(short = 'j', long, default_value_t = 0)]
    threads: usize,
    /// Make the collections live: each takes writes (`POST /NAME`,
    /// `POST /NAME/delete`) into a delta kept in DIR/NAME/, served merged
    /// with its files. A POST to a collection that does not exist
    /// creates it there.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// With --data: a POST to an unknown collection is answered 404
    /// instead of creating it.
    #[arg(long, requires = "data")]
    no_create: bool,
    /// With --data: collections made from here on keep no index of their
    /// captures' digests (as OutbackCDX keeps none), so they take lines
    /// about 1.5x as fast in 0.6x the disk, and `/NAME/digest` answers
    /// 400 for them. A collection keeps the choice it was made with.
    #[arg(long, requires = "data")]
    no_digest_index: bool,
    /// With --data: memory, in MiB, that each collection's newest writes
    /// may take before they are written out to its tables (the store's
    /// memtables; at least 4). More means fewer, larger tables: lines go
    /// in faster and lookups wait less during ingest. The allocator keeps
    /// the pages of memtables written out for a minute, for the next ones
    /// (`MIMALLOC_PURGE_DELAY=0` gives them back at once).
    #[arg(long, value_name = "MIB", requires = "data", default_value_t = ukvs::engine::live::WRITE_MEMORY >> 20,
          value_parser = clap::value_parser!(u64).range(4..=65536))]
    write_memory: u64,
    /// With --data: a file holding the bearer token writes must send
    /// (`Authorization: Bearer TOKEN`); without it, writes are taken from
    /// loopback clients only. The token is never printed.
    #[arg(long, value_name = "FILE", requires = "data")]
    write_token: Option<PathBuf>,
    /// Refuse writes to the collection NAME (repeatable).
    #[arg(long, value_name = "NAME")]
    read_only: Vec<String>,
    /// The collection that `/cdx/search/cdx` (the Wayback Machine's CDX
    /// path, no collection name in it) answers from.
    #[arg(long, value_name = "NAME")]
    default: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(c) = args.cache {
        ukvs::engine::blocks::set_capacity(c);
    }
    serve::run(serve::Options {
        bind: args.bind,
        specs: args.specs,
        config: args.config,
        quiet: args.quiet,
        max_connections: args.max_connections,
        max_request_bytes: args.max_request_bytes,
        idle: Duration::from_secs(args.idle_timeout.max(1)),
        no_mmap: args.no_mmap,
        threads: args.threads,
        data: args.data,
        no_create: args.no_create,
        no_digest_index: args.no_digest_index,
        write_memory: args.write_memory << 20,
        write_token: args.write_token,
        read_only: args.read_only,
        default: args.default,
    })?;
    Ok(ExitCode::SUCCESS)
}
