//! Writes to live collections (OutbackCDX's API): `POST /NAME` adds
//! lines, `POST /NAME/delete` deletes them; `POST /NAME/fold` folds the
//! delta into a new base (`engine::fold`).
//!
//! ```text
//! body ─► lines (at most ukvs::post::MAX_LINE bytes each) ─► ukvs::post:
//!   checked, re-keyed, capture id ─► pywb's reader must read it too
//!   ─► spooled to an unnamed file in --data (the body's size is the
//!   disk's business, not memory's)
//! whole body read, no bad line (or ?badLines=skip) ─► spawn_blocking:
//!   the spool replayed into ONE durable batch (engine::live; past
//!   32 MiB rolled forward through a journal: see there)
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
use ukvs::engine::live::{is_delta_dir, read_ops, write_op, Delta, Op};
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
    /// Every open delta by collection name (a store opens once per
    /// process, and outlives catalog reloads).
    pub deltas: Mutex<BTreeMap<String, Arc<Delta>>>,
}

impl Writes {
    /// Opens the deltas under `dir` (each subdirectory holding a store)
    /// and those of `names`, creating them.
    pub fn open(dir: &Path, no_create: bool, names: &[&str]) -> anyhow::Result<Writes> {
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
                deltas.insert(name, Arc::new(Delta::open(&entry.path())?));
            }
        }
        let writes = Writes {
            dir: dir.to_path_buf(),
            no_create,
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
                let delta = Delta::open(&self.dir.join(name))?;
                deltas.insert(name.to_string(), Arc::new(delta));
            }
        }
        Ok(())
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
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let rest = path.strip_prefix('/').unwrap_or(&path);
    let (name, action) = match rest.split_once('/') {
        None => (rest, Action::Add),
        Some((n, "delete")) => (n, Action::Delete),
        Some((n, "fold")) => (n, Action::Fold),
        Some((n, _)) => {
            return http::text(
                405,
                &format!("POST is taken at /{n}, /{n}/delete and /{n}/fold only\n"),
            )
        }
    };
    if let Err(refused) = check_write(shared, name, peer, req.headers()) {
        return *refused;
    }
    let delete = action == Action::Delete;
    let skip = match form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "badLines")
        .last()
        .map(|(_, v)| v.into_owned())
        .as_deref()
    {
        None | Some("error") => false,
        Some("skip") => true,
        Some(other) => {
            return http::text(
                400,
                &format!("badLines={other} is not taken: use badLines=skip or badLines=error\n"),
            )
        }
    };
    let coll = match action {
        // A fold creates nothing.
        Action::Fold => match shared.catalog().get(name) {
            Some(c) => c,
            None => return http::text(404, &format!("no collection named {name:?}\n")),
        },
        _ => match writable(shared, name).await {
            Ok(c) => c,
            Err(res) => return res,
        },
    };
    let Some(delta) = coll.live.clone() else {
        return http::text(405, &format!("collection {name:?} takes no writes\n"));
    };
    let Some(writes) = &shared.writes else {
        return http::text(405, "this server takes no writes: serve with --data DIR\n");
    };
    if action == Action::Fold {
        return fold(shared, coll, delta).await;
    }
    let spool = match Spool::new(&writes.dir) {
        Ok(s) => s,
        Err(e) => {
            ukvs::report!("ukvs serve: {name}: cannot spool a POST: {e}");
            return http::text(503, "cannot take writes now (the data directory fails)\n");
        }
    };
    let read = match read_body(req.into_body(), &coll, delete, skip, spool).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    let BodyRead {
        spool,
        ops,
        skipped,
        named,
    } = read;
    let applied = tokio::task::spawn_blocking(move || {
        let records = spool.replay()?;
        delta.apply(records).map_err(|e| e.to_string())
    })
    .await;
    let n = match applied {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            ukvs::report!("ukvs serve: {name}: write failed: {e}");
            return http::text(503, "the write failed; nothing of it was kept\n");
        }
        Err(e) => {
            ukvs::report!("ukvs serve: {name}: write failed: {e}");
            return http::text(503, "the write failed; nothing of it was kept\n");
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

/// What a POST asks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Add,
    Delete,
    Fold,
}

/// `POST /NAME/fold`: the collection's bases and delta folded into a new
/// base (`engine::fold`) while reads and writes go on; answered when it
/// is done, with the collection then served from the new base and what
/// the delta took since the fold began.
async fn fold(shared: &Arc<Shared>, coll: Arc<Coll>, delta: Arc<Delta>) -> http::Response {
    let shared2 = shared.clone();
    let name = coll.name.clone();
    let done = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<String>> {
        let Some((report, view)) = ukvs::engine::fold::fold(&delta, &coll.bases, shared2.no_mmap)?
        else {
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
            None => Arc::new(Delta::open(&dir)?),
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
    spool: Spool,
    ops: u64,
    skipped: u64,
    named: Vec<String>,
}

/// Reads the body line by line into the spool.
async fn read_body(
    mut body: hyper::body::Incoming,
    coll: &Coll,
    delete: bool,
    skip: bool,
    mut spool: Spool,
) -> Result<BodyRead, http::Response> {
    let mut lines = Body::new(&coll.surt, &coll.value_names);
    let mut buf: Vec<u8> = Vec::new();
    let mut too_long: Option<usize> = None;
    let mut line_no = 0u64;
    let mut ops = 0u64;
    let mut skipped = 0u64;
    let mut named = Vec::new();
    let mut refused: Option<String> = None;
    let mut spool_failed: Option<std::io::Error> = None;
    let mut take =
        |line: &[u8], long: Option<usize>, line_no: u64, refused: &mut Option<String>| {
            if refused.is_some() || spool_failed.is_some() {
                return;
            }
            let got = match long {
                Some(n) => Err(format!(
                    "{n} bytes long, longer than the {MAX_LINE} bytes a line may have"
                )),
                None => lines.line(line).and_then(|r| match r {
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
                    let op = if delete {
                        Op::Delete { id: r.id }
                    } else {
                        Op::Put {
                            id: r.id,
                            line: r.line,
                        }
                    };
                    if let Err(e) = spool.push(&op) {
                        spool_failed = Some(e);
                    }
                    ops += 1;
                }
                Err(why) => {
                    let said = format!("line {line_no}: {why}");
                    if skip {
                        skipped += 1;
                        if named.len() < NAMED {
                            named.push(said);
                        }
                    } else {
                        *refused = Some(said);
                    }
                }
            }
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
                    if long.is_none() {
                        buf.extend_from_slice(&rest[..i]);
                    }
                    take(&buf, long, line_no, &mut refused);
                    buf.clear();
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
    }
    if !buf.is_empty() || too_long.is_some() {
        line_no += 1;
        take(&buf, too_long, line_no, &mut refused);
    }
    if let Some(said) = refused {
        return Err(http::text(
            400,
            &format!("{said}\nnothing of this POST was written\n"),
        ));
    }
    if let Some(e) = spool_failed {
        ukvs::report!("ukvs serve: {}: cannot spool a POST: {e}", coll.name);
        return Err(http::text(
            503,
            "cannot take writes now (the data directory fails)\n",
        ));
    }
    Ok(BodyRead {
        spool,
        ops,
        skipped,
        named,
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
