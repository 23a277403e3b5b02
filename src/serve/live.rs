//! Writes to live collections (OutbackCDX's API): `POST /NAME` adds
//! lines, `POST /NAME/delete` deletes them; `POST /NAME/fold` folds the
//! delta into a new base (`engine::fold`).
//!
//! ```text
//! body ─► lines (at most ukvs::post::MAX_LINE bytes each), gathered
//!   a chunk (1 MiB) at a time ─► a write thread (its own, at the
//!   writes' lower priority), so that the threads that answer reads
//!   never re-key: ukvs::post checks and re-keys each
//!   line, gives its capture id ─► pywb's reader must read it too (a
//!   CDX line of 9-11 columns it reads without fail)
//!   ─► ops held in memory up to 4 MiB (a POST of one WARC's lines),
//!   past that all spooled to an unnamed file in --data (the body's size
//!   is the disk's business, not memory's)
//! whole body read, no bad line (or ?badLines=skip) ─► a write thread:
//!   the ops applied as ONE durable batch (engine::live; past 8 MiB
//!   rolled forward through a journal: see there)
//!   ─► `Added N records` / `Deleted N records`
//! ```
//!
//! Every write route calls [`check_write`] first: a collection made
//! read-only refuses (403); with `--write-token` the request must carry
//! the token (`Authorization: Bearer`, compared in constant time: 401
//! without it, 403 with another); without one, only loopback clients
//! write (403 from elsewhere).
//!
//! A bad line answers 400 naming it and why, and nothing of the body is
//! written; the rest of the body is still read (and dropped) so that the
//! client, still sending, gets the answer. The answer is sent after the
//! commit is durable.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Seek};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http_body_util::BodyExt;
use ukvs::engine::fold::Shape;
use ukvs::engine::live::{is_delta_dir, read_ops, write_op, Delta, Digests, Op, Settings};
use ukvs::ukvs::post::{Body, MAX_LINE};

use super::catalog::{check_name, Coll};
use super::http;
use super::pywb::Obj;
use super::Shared;

/// Bad lines named in an answer at most.
const NAMED: usize = 10;

/// Who may write: the bearer token (when one is configured) and the
/// collections that take no writes. The token is never printed.
pub struct Access {
    token: Option<Vec<u8>>,
    read_only: std::collections::BTreeSet<String>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Access {
    /// Reads the token from `token_file` (surrounding white space
    /// dropped; an empty file is refused).
    pub fn new(token_file: Option<&Path>, read_only: &[String]) -> anyhow::Result<Access> {
        let token = match token_file {
            None => None,
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| {
                    anyhow::anyhow!("cannot read the write token file {}: {e}", path.display())
                })?;
                let token = bytes.trim_ascii().to_vec();
                if token.is_empty() || token.iter().any(|&b| b.is_ascii_control() || b == b' ') {
                    anyhow::bail!(
                        "the write token file {} must hold one token (no spaces or control \
                         characters), and holds none",
                        path.display()
                    );
                }
                Some(token)
            }
        };
        Ok(Access {
            token,
            read_only: read_only.iter().cloned().collect(),
        })
    }
}

/// Whether `a` and `b` are the same bytes, in time that depends on their
/// lengths only (not on where they first differ).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    std::hint::black_box(diff) == 0
}

/// Whether a write to the collection `name` from `peer` with `headers`
/// may go on; the refusal to answer otherwise. Every write route calls it
/// before it reads the body or creates anything.
pub fn check_write(
    shared: &Shared,
    name: &str,
    peer: std::net::SocketAddr,
    headers: &hyper::HeaderMap,
) -> Result<(), Box<http::Response>> {
    let access = &shared.access;
    if access.read_only.contains(name) || shared.catalog().is_read_only(name) {
        return Err(Box::new(http::text(
            403,
            &format!("collection {name:?} is read-only: it takes no writes\n"),
        )));
    }
    match &access.token {
        Some(token) => {
            let sent = headers
                .get(hyper::header::AUTHORIZATION)
                .map(|v| v.as_bytes())
                .and_then(|v| {
                    v.get(..7)
                        .filter(|p| p.eq_ignore_ascii_case(b"bearer "))
                        .map(|_| v[7..].trim_ascii())
                });
            match sent {
                None => Err(Box::new(http::whole(
                    401,
                    "text/plain; charset=utf-8",
                    b"writes need the server's token: send Authorization: Bearer TOKEN\n".to_vec(),
                    &[("WWW-Authenticate", "Bearer")],
                ))),
                Some(t) if same_secret(t, token) => Ok(()),
                Some(_) => Err(Box::new(http::text(
                    403,
                    "the bearer token sent is not the server's: nothing was written\n",
                ))),
            }
        }
        None => {
            let ip = match peer.ip() {
                std::net::IpAddr::V6(v6) => v6
                    .to_ipv4_mapped()
                    .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
                v4 => v4,
            };
            if ip.is_loopback() {
                Ok(())
            } else {
                Err(Box::new(http::text(
                    403,
                    "writes are taken from this machine only (loopback); \
                     start the server with --write-token FILE to take them from elsewhere\n",
                )))
            }
        }
    }
}

/// The writable side of the server: `--data DIR` and its open deltas.
pub struct Writes {
    pub dir: PathBuf,
    pub no_create: bool,
    /// How deltas open: whether those made here index digests, and
    /// each one's memory for writes.
    pub settings: Settings,
    /// Every open delta by collection name (a store opens once per
    /// process, and outlives catalog reloads).
    pub deltas: Mutex<BTreeMap<String, Arc<Delta>>>,
}

impl Writes {
    /// Opens the deltas under `dir` (each subdirectory holding a store)
    /// and those of `names`, creating them.
    pub fn open(
        dir: &Path,
        no_create: bool,
        settings: Settings,
        names: &[&str],
    ) -> anyhow::Result<Writes> {
        use anyhow::Context;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
        let mut deltas = BTreeMap::new();
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list the data directory {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if check_name(&name).is_ok() && is_delta_dir(&entry.path()) {
                let delta = Delta::open_with(&entry.path(), settings)?;
                if delta.digests() != settings.digests {
                    ukvs::report!(
                        "ukvs serve: the collection {name} keeps {}, as it was made",
                        match delta.digests() {
                            Digests::On => "its digest index",
                            Digests::Off => "no digest index",
                        }
                    );
                }
                deltas.insert(name, Arc::new(delta));
            }
        }
        let writes = Writes {
            dir: dir.to_path_buf(),
            no_create,
            settings,
            deltas: Mutex::new(deltas),
        };
        writes.ensure(names)?;
        Ok(writes)
    }

    /// Opens (creating) the deltas of `names` not open yet.
    pub fn ensure(&self, names: &[&str]) -> anyhow::Result<()> {
        let mut deltas = self.deltas.lock().unwrap_or_else(|e| e.into_inner());
        for name in names {
            if !deltas.contains_key(*name) {
                let delta = Delta::open_with(&self.dir.join(name), self.settings)?;
                deltas.insert(name.to_string(), Arc::new(delta));
            }
        }
        Ok(())
    }

    /// Writes out every open delta's memtables, so that the stores
    /// open fast next time (their journals replay nothing): at a stop,
    /// once no write is running. What is not written out within `wait`
    /// in all is left to the journals.
    pub fn write_out(&self, wait: std::time::Duration) {
        let until = std::time::Instant::now() + wait;
        for (name, delta) in self.snapshot() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if !delta.write_out(left) {
                ukvs::report!(
                    "ukvs serve: {name}: writes kept in its journal (replayed at the next open)"
                );
            }
        }
    }

    pub fn snapshot(&self) -> BTreeMap<String, Arc<Delta>> {
        self.deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// `POST /NAME` or `POST /NAME/delete`.
pub async fn post(
    shared: &Arc<Shared>,
    req: hyper::Request<hyper::body::Incoming>,
    peer: std::net::SocketAddr,
) -> http::Response {
    let (parts, body) = req.into_parts();
    let (coll, delta, writes_dir, action, skip) = match route(shared, &parts, peer).await {
        Ok(r) => r,
        Err(res) => return unread(body, res).await,
    };
    if let Action::Fold(shape) = action {
        let res = fold(shared, coll, delta, shape).await;
        return unread(body, res).await;
    }
    let delete = action == Action::Delete;
    let read = match read_body(body, &coll, &writes_dir, delete, skip).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    let name = coll.name.clone();
    let BodyRead {
        taken,
        ops,
        skipped,
        named,
    } = read;
    let applied = on_write_thread(move || match taken {
        Taken::Held(held) => delta
            .apply(held.into_iter().map(Ok::<Op, String>))
            .map_err(|e| e.to_string()),
        Taken::Spooled(spool) => {
            let records = spool.replay()?;
            delta.apply(records).map_err(|e| e.to_string())
        }
    })
    .await;
    // A write that failed once the store began to take it may be there
    // in part until the store reopens (a large batch's first chunks;
    // replayed whole then) or whole (a commit whose fsync failed): the
    // answer says so, and that sending it again is safe.
    let n = match applied {
        Ok(Ok(n)) => n,
        Ok(Err(e)) | Err(e) => {
            ukvs::report!("ukvs serve: {name}: write failed: {e}");
            return http::text(503, WRITE_FAILED);
        }
    };
    debug_assert_eq!(n, ops);
    let mut answer = format!("{} {n} records\n", if delete { "Deleted" } else { "Added" });
    if skipped > 0 {
        answer.push_str(&format!("Skipped {skipped} bad lines\n"));
        for line in named {
            answer.push_str(&line);
            answer.push('\n');
        }
    }
    http::text(200, &answer)
}

/// What a POST is refused with, or the collection, its delta, the data
/// directory, the action and whether bad lines are skipped.
async fn route(
    shared: &Arc<Shared>,
    parts: &hyper::http::request::Parts,
    peer: std::net::SocketAddr,
) -> Result<(Arc<Coll>, Arc<Delta>, PathBuf, Action, bool), http::Response> {
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (name, action) = match rest.split_once('/') {
        None => (rest, Action::Add),
        Some((n, "delete")) => (n, Action::Delete),
        Some((n, "fold")) => (n, Action::Fold(Shape::AsBases)),
        Some((n, _)) => {
            return Err(http::text(
                405,
                &format!("POST is taken at /{n}, /{n}/delete and /{n}/fold only\n"),
            ))
        }
    };
    check_write(shared, name, peer, &parts.headers).map_err(|refused| *refused)?;
    let action = match action {
        Action::Fold(_) => Action::Fold(fold_shape(query).map_err(|why| http::text(400, &why))?),
        other => other,
    };
    let skip = match form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "badLines")
        .last()
        .map(|(_, v)| v.into_owned())
        .as_deref()
    {
        None | Some("error") => false,
        Some("skip") => true,
        Some(other) => {
            return Err(http::text(
                400,
                &format!("badLines={other} is not taken: use badLines=skip or badLines=error\n"),
            ))
        }
    };
    let coll = match action {
        // A fold creates nothing.
        Action::Fold(_) => match shared.catalog().get(name) {
            Some(c) => c,
            None => return Err(http::text(404, &format!("no collection named {name:?}\n"))),
        },
        _ => writable(shared, name).await?,
    };
    let Some(delta) = coll.live.clone() else {
        return Err(http::text(
            405,
            &format!("collection {name:?} takes no writes\n"),
        ));
    };
    let Some(writes) = &shared.writes else {
        return Err(http::text(
            405,
            "this server takes no writes: serve with --data DIR\n",
        ));
    };
    Ok((coll, delta, writes.dir.clone(), action, skip))
}

/// The most of a refused request's body read and dropped so that its
/// connection can carry the next request.
const UNREAD_LIMIT: usize = 1 << 20;

/// `res`, sent after the body it answers without reading: up to
/// [`UNREAD_LIMIT`] bytes of it are read and dropped so the client, still
/// sending, is not cut off and its connection is kept; a longer body, or
/// one that does not come within a few seconds, gets `Connection: close`.
async fn unread(mut body: hyper::body::Incoming, mut res: http::Response) -> http::Response {
    use http_body_util::BodyExt;
    let drained = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => {
                    seen += f.data_ref().map_or(0, |d| d.len());
                    if seen > UNREAD_LIMIT {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
        true
    })
    .await;
    if drained != Ok(true) {
        res.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    res
}

/// A fold the options given cannot make (the collection is as before).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// What a POST asks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Add,
    Delete,
    Fold(Shape),
}

/// `POST /NAME/fold?into=cluster|file`: what the new base is (by
/// default a cluster when a base is one, else a file).
fn fold_shape(query: &str) -> Result<Shape, String> {
    let into = form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "into")
        .last()
        .map(|(_, v)| v.into_owned());
    match into.as_deref() {
        None => Ok(Shape::AsBases),
        Some("cluster") => Ok(Shape::Cluster),
        Some("file") => Ok(Shape::File),
        Some(other) => Err(format!(
            "into={other} is not taken: use into=cluster or into=file\n"
        )),
    }
}

/// `POST /NAME/fold`: the collection's bases and delta folded into a new
/// base (`engine::fold`) while reads and writes go on; answered when it
/// is done, with the collection then served from the new base and what
/// the delta took since the fold began.
async fn fold(
    shared: &Arc<Shared>,
    coll: Arc<Coll>,
    delta: Arc<Delta>,
    shape: Shape,
) -> http::Response {
    let shared2 = shared.clone();
    let name = coll.name.clone();
    let done = on_write_thread(move || -> anyhow::Result<Option<String>> {
        use ukvs::engine::error::Kind;
        let folded = ukvs::engine::fold::fold(&delta, &coll.bases, shared2.no_mmap, shape);
        let Some((report, view)) = (match folded {
            Err(e) if e.kind() == Kind::Usage => return Err(Refused(e.to_string()).into()),
            other => other?,
        }) else {
            return Ok(None);
        };
        let view = Arc::new(view);
        let writes = writes_of(&shared2);
        let mut deltas = writes.deltas.lock().unwrap_or_else(|e| e.into_inner());
        deltas.insert(coll.name.clone(), view.clone());
        // Until this swap, the old collection reads the old bases and the
        // folded generations: the same answers.
        let mut catalog = shared2.catalog.write().unwrap_or_else(|e| e.into_inner());
        let folded = catalog.refolded(&coll.name, view, shared2.no_mmap)?;
        *catalog = Arc::new(folded);
        Ok(Some(format!(
            "Folded {} records into {} ({} from the delta, {} base lines deleted or replaced)\n",
            report.lines,
            report.base.display(),
            report.from_delta,
            report.hidden
        )))
    })
    .await;
    match done {
        Ok(Ok(Some(answer))) => http::text(200, &answer),
        Ok(Ok(None)) => http::text(409, &format!("a fold of {name} is running already\n")),
        Ok(Err(e)) if e.is::<Refused>() => http::text(400, &format!("{e}\n")),
        Ok(Err(e)) => {
            ukvs::report!("ukvs serve: {name}: fold failed: {e:#}");
            http::text(
                503,
                &format!("the fold of {name} failed; the collection is as before\n"),
            )
        }
        Err(e) => {
            ukvs::report!("ukvs serve: {name}: fold failed: {e}");
            http::text(
                503,
                &format!("the fold of {name} failed; the collection is as before\n"),
            )
        }
    }
}

/// The collection `name`, created (delta only) when it does not exist and
/// the server may create it.
async fn writable(shared: &Arc<Shared>, name: &str) -> Result<Arc<Coll>, http::Response> {
    if let Some(c) = shared.catalog().get(name) {
        return Ok(c);
    }
    let Some(writes) = &shared.writes else {
        return Err(http::text(
            404,
            &format!("no collection named {name:?} (and this server takes no writes)\n"),
        ));
    };
    if writes.no_create {
        return Err(http::text(
            404,
            &format!("no collection named {name:?} (and --no-create is given)\n"),
        ));
    }
    if let Err(e) = check_name(name) {
        return Err(http::text(400, &format!("{e}\n")));
    }
    let shared2 = shared.clone();
    let name2 = name.to_string();
    let made = tokio::task::spawn_blocking(move || -> anyhow::Result<Arc<Coll>> {
        // One creator at a time: the catalog is re-read under the lock.
        let mut deltas = writes_of(&shared2)
            .deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let catalog = shared2.catalog();
        if let Some(c) = catalog.get(&name2) {
            return Ok(c);
        }
        let dir = writes_of(&shared2).dir.join(&name2);
        let delta = match deltas.get(&name2) {
            Some(d) => d.clone(),
            None => Arc::new(Delta::open_with(&dir, writes_of(&shared2).settings)?),
        };
        deltas.insert(name2.clone(), delta.clone());
        let grown = catalog.with_delta(&name2, delta)?;
        let coll = grown.get(&name2).expect("just added");
        *shared2.catalog.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(grown);
        ukvs::report!(
            "ukvs serve: created the collection {name2} in {}",
            dir.display()
        );
        Ok(coll)
    })
    .await;
    match made {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => {
            ukvs::report!("ukvs serve: cannot create {name}: {e:#}");
            Err(http::text(
                503,
                &format!("cannot create the collection {name:?}\n"),
            ))
        }
        Err(e) => {
            ukvs::report!("ukvs serve: cannot create {name}: {e}");
            Err(http::text(
                503,
                &format!("cannot create the collection {name:?}\n"),
            ))
        }
    }
}

fn writes_of(shared: &Shared) -> &Writes {
    shared.writes.as_ref().expect("checked by the caller")
}

/// A body read through.
struct BodyRead {
    taken: Taken,
    ops: u64,
    skipped: u64,
    named: Vec<String>,
}

/// A body's ops until they are committed: in memory up to [`HELD_BYTES`],
/// past that all of them in a spool on disk.
enum Taken {
    Held(Vec<Op>),
    Spooled(Spool),
}

/// Bytes of ops a POST holds in memory before they go to a spool: a
/// POST of 5,000 CDX lines (one WARC's) is about 1 MiB.
const HELD_BYTES: usize = 4 << 20;

/// Bytes of body lines gathered before they are checked and re-keyed
/// (on a blocking thread, not on the threads that answer reads).
const CHUNK_BYTES: usize = 1 << 20;

/// What the lines of a body came to so far.
struct Taking {
    coll: Arc<Coll>,
    dir: PathBuf,
    delete: bool,
    skip: bool,
    shape: Option<ukvs::ukvs::post::Shape>,
    held: Vec<Op>,
    held_bytes: usize,
    spool: Option<Spool>,
    ops: u64,
    skipped: u64,
    named: Vec<String>,
    refused: Option<String>,
    spool_failed: Option<std::io::Error>,
}

/// Lines gathered from a body: each line followed by `\n`; a line too
/// long to keep is an empty one, with its length in `long`.
#[derive(Default)]
struct Chunk {
    text: Vec<u8>,
    /// (index of the line in the chunk, its length)
    long: Vec<(usize, usize)>,
    lines: usize,
    /// The body's line number of the chunk's first line.
    first_line: u64,
}

impl Taking {
    /// Checks and re-keys the lines of `chunk`, keeping their ops.
    fn take(&mut self, chunk: &Chunk) {
        let coll = self.coll.clone();
        let mut body = Body::resume(&coll.surt, &coll.value_names, self.shape);
        let mut long = chunk.long.iter().peekable();
        let lines = chunk.text.split(|&b| b == b'\n').take(chunk.lines);
        for (i, line) in lines.enumerate() {
            if self.refused.is_some() || self.spool_failed.is_some() {
                break;
            }
            let too_long = match long.peek() {
                Some(&&(at, n)) if at == i => {
                    long.next();
                    Some(n)
                }
                _ => None,
            };
            let got = match too_long {
                Some(n) => Err(format!(
                    "{n} bytes long, longer than the {MAX_LINE} bytes a line may have"
                )),
                None => body.line(line).and_then(|r| match r {
                    // pywb's reader splits a CDX line of 9 to 11 columns
                    // without fail, and reads a CDXJ line's JSON block
                    // as `Body::line` just read it (both when the line
                    // has no trailing spaces, which it trims): only
                    // UKVS lines are tried.
                    Some(r)
                        if !matches!(body.shape(), Some(ukvs::ukvs::post::Shape::Ukvs))
                            && r.line.last() != Some(&b' ') =>
                    {
                        Ok(Some(r))
                    }
                    Some(r) => match Obj::parse(&r.line, &coll.value_names) {
                        Ok(_) => Ok(Some(r)),
                        Err(e) => Err(format!("pywb's reader cannot read it: {e}")),
                    },
                    None => Ok(None),
                }),
            };
            match got {
                Ok(None) => {}
                Ok(Some(r)) => {
                    let op = if self.delete {
                        Op::Delete { id: r.id }
                    } else {
                        Op::Put {
                            id: r.id,
                            line: r.line,
                        }
                    };
                    self.keep(op);
                    self.ops += 1;
                }
                Err(why) => {
                    let said = format!("line {}: {why}", chunk.first_line + i as u64);
                    if self.skip {
                        self.skipped += 1;
                        if self.named.len() < NAMED {
                            self.named.push(said);
                        }
                    } else {
                        self.refused = Some(said);
                    }
                }
            }
        }
        self.shape = body.shape();
    }

    /// Holds `op`, or spools it (with every op held so far, once they
    /// pass [`HELD_BYTES`]).
    fn keep(&mut self, op: Op) {
        if self.spool.is_none() {
            self.held_bytes += match &op {
                Op::Put { id, line } => id.len() + line.len() + 48,
                Op::Delete { id } => id.len() + 48,
            };
            self.held.push(op);
            if self.held_bytes <= HELD_BYTES {
                return;
            }
            let spooled = Spool::new(&self.dir).and_then(|mut spool| {
                for op in self.held.drain(..) {
                    spool.push(&op)?;
                }
                Ok(spool)
            });
            self.held = Vec::new();
            match spooled {
                Ok(spool) => self.spool = Some(spool),
                Err(e) => self.spool_failed = Some(e),
            }
            return;
        }
        if let Some(spool) = &mut self.spool {
            if let Err(e) = spool.push(&op) {
                self.spool_failed = Some(e);
            }
        }
    }
}

/// Runs `f` on a write thread: a pool of its own (tokio's blocking
/// threads of a runtime kept for writes), each thread at the writes'
/// lower CPU priority (`engine::live::write_priority`), not the blocking
/// pool whose threads search for lookups: a POST's re-keying and commit
/// then take a core only when the lookups leave one. The threads are
/// kept a while and reused, so that each does not start its own heap
/// (a thread per call grew a 128 MB POST's peak memory by a tenth). An
/// error when the pool cannot start or `f` panics.
async fn on_write_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    static POOL: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .thread_name("ukvs-write")
            .max_blocking_threads(64)
            .on_thread_start(ukvs::engine::live::write_priority)
            .build()
            .map_err(|e| format!("cannot start the write threads: {e}"))
    });
    let pool = pool.as_ref().map_err(|e| e.clone())?;
    pool.spawn_blocking(f)
        .await
        .map_err(|e| format!("the write's thread stopped: {e}"))
}

/// The answer to a write the store failed to take: it may have taken
/// part of it, and a capture sent again replaces itself.
const WRITE_FAILED: &str =
    "the write failed and may have been kept in part: send it again (a capture sent again replaces itself)\n";

/// Checks and re-keys `chunk` on a write thread.
async fn take_chunk(taking: Taking, chunk: Chunk) -> Result<(Taking, Chunk), http::Response> {
    on_write_thread(move || {
        let mut taking = taking;
        taking.take(&chunk);
        (taking, chunk)
    })
    .await
    .map_err(|e| {
        ukvs::report!("ukvs serve: a POST's lines could not be read: {e}");
        http::text(503, "the write failed; nothing of it was kept\n")
    })
}

/// Reads the body line by line; its lines are checked, re-keyed and
/// kept (held, or spooled in `dir`) a chunk at a time on a blocking
/// thread.
async fn read_body(
    mut body: hyper::body::Incoming,
    coll: &Arc<Coll>,
    dir: &Path,
    delete: bool,
    skip: bool,
) -> Result<BodyRead, http::Response> {
    let mut taking = Taking {
        coll: coll.clone(),
        dir: dir.to_path_buf(),
        delete,
        skip,
        shape: None,
        held: Vec::new(),
        held_bytes: 0,
        spool: None,
        ops: 0,
        skipped: 0,
        named: Vec::new(),
        refused: None,
        spool_failed: None,
    };
    let mut chunk = Chunk {
        first_line: 1,
        ..Chunk::default()
    };
    // The line being read, and its length once it is too long to keep.
    let mut buf: Vec<u8> = Vec::new();
    let mut too_long: Option<usize> = None;
    let mut line_no = 0u64;
    let push = |chunk: &mut Chunk, line: &[u8], long: Option<usize>| {
        match long {
            Some(n) => chunk.long.push((chunk.lines, n)),
            None => chunk.text.extend_from_slice(line),
        }
        chunk.text.push(b'\n');
        chunk.lines += 1;
    };
    loop {
        let frame = match body.frame().await {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                return Err(http::text(
                    400,
                    &format!("the body could not be read: {e}\n"),
                ));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let mut rest: &[u8] = &data;
        while !rest.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    line_no += 1;
                    let long = too_long.take().map(|n| n + i);
                    if buf.is_empty() && long.is_none() {
                        push(&mut chunk, &rest[..i], None);
                    } else {
                        if long.is_none() {
                            buf.extend_from_slice(&rest[..i]);
                        }
                        push(&mut chunk, &buf, long);
                        buf.clear();
                    }
                    rest = &rest[i + 1..];
                }
                None => {
                    match &mut too_long {
                        Some(n) => *n += rest.len(),
                        None => {
                            buf.extend_from_slice(rest);
                            if buf.len() > MAX_LINE + 1 {
                                too_long = Some(buf.len());
                                buf = Vec::new();
                            }
                        }
                    }
                    rest = &[];
                }
            }
        }
        // Once refused, the rest of the body is read and dropped.
        if chunk.text.len() >= CHUNK_BYTES {
            if taking.refused.is_none() && taking.spool_failed.is_none() {
                let (t, c) = take_chunk(taking, std::mem::take(&mut chunk)).await?;
                taking = t;
                chunk = c;
            }
            chunk.text.clear();
            chunk.long.clear();
            chunk.lines = 0;
            chunk.first_line = line_no + 1;
        }
    }
    if !buf.is_empty() || too_long.is_some() {
        push(&mut chunk, &buf, too_long);
    }
    if chunk.lines > 0 && taking.refused.is_none() && taking.spool_failed.is_none() {
        taking = take_chunk(taking, chunk).await?.0;
    }
    if let Some(said) = taking.refused {
        return Err(http::text(
            400,
            &format!("{said}\nnothing of this POST was written\n"),
        ));
    }
    if let Some(e) = taking.spool_failed {
        ukvs::report!("ukvs serve: {}: cannot spool a POST: {e}", coll.name);
        return Err(http::text(
            503,
            "cannot take writes now (the data directory fails)\n",
        ));
    }
    let taken = match taking.spool {
        Some(spool) => Taken::Spooled(spool),
        None => Taken::Held(taking.held),
    };
    Ok(BodyRead {
        taken,
        ops: taking.ops,
        skipped: taking.skipped,
        named: taking.named,
    })
}

/// A body's ops on disk until they are committed: an unnamed file
/// (gone when closed, whatever happens), records `len id tag [len line]`.
struct Spool {
    out: BufWriter<std::fs::File>,
}

impl Spool {
    fn new(dir: &Path) -> std::io::Result<Spool> {
        Ok(Spool {
            out: BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?),
        })
    }

    fn push(&mut self, op: &Op) -> std::io::Result<()> {
        write_op(&mut self.out, op)
    }

    /// The ops in the order pushed.
    fn replay(self) -> Result<impl Iterator<Item = std::io::Result<Op>>, String> {
        let mut file = self.out.into_inner().map_err(|e| e.to_string())?;
        file.rewind().map_err(|e| e.to_string())?;
        Ok(read_ops(BufReader::with_capacity(1 << 16, file)))
    }
}
