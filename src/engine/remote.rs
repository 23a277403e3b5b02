//! Objects on HTTP servers and in S3, read by byte range: the shards (and
//! the secondary indexes) of ZipNum clusters kept where large archives
//! keep them.
//!
//! ```text
//! Object::open("s3://bucket/cc/cdx-00000.gz")  a URL: http://, https://, s3://
//!      │   stores are made once per host or bucket and shared
//!      ├─► read_range(offset, length)   one ranged GET, waited for
//!      ├─► start_range(offset, length)  one ranged GET in flight ─► Pending::wait
//!      └─► read_all()                   one GET (a secondary index, a .loc)
//! ```
//!
//! The requests go through Apache Arrow's `object_store`: retries with
//! exponential backoff on 5xx answers, timeouts and dropped connections
//! ([`RETRIES`] times, within [`RETRY_WINDOW`]); a 4xx answer fails at
//! once, its error naming the URL and the status. S3 credentials and
//! settings come from the environment as the AWS tools read them
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_SKIP_SIGNATURE`, ...), else from
//! the profile (`AWS_PROFILE`, else `default`) of `~/.aws/credentials` and
//! `~/.aws/config`; they are never printed.
//!
//! `object_store` is async. The callers here are not (the CLI's threads,
//! the server's blocking pool), so the requests run on a small runtime of
//! this module's own and the caller waits on a channel: that works from
//! any thread, inside another runtime's blocking pool included.

use std::collections::HashMap;
use std::io;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

/// Retries of a request that failed with a 5xx, a timeout or a dropped
/// connection.
pub const RETRIES: usize = 5;

/// No retry starts later than this after the first attempt.
pub const RETRY_WINDOW: Duration = Duration::from_secs(60);

/// Whether `s` names a remote object or directory rather than a path.
pub fn is_url(s: &str) -> bool {
    ["http://", "https://", "s3://"]
        .iter()
        .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// `name` resolved against the directory URL `dir` (which may or may not
/// end in `/`): an absolute URL stays as it is.
pub fn join(dir: &str, name: &str) -> String {
    if is_url(name) {
        return name.to_string();
    }
    match dir.ends_with('/') {
        true => format!("{dir}{name}"),
        false => format!("{dir}/{name}"),
    }
}

/// The directory URL of an object's URL (up to and with its last `/`).
pub fn parent(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].rfind('/') {
        Some(i) => &url[..after_scheme + i + 1],
        None => url,
    }
}

/// A request that failed. The reads return it inside their
/// [`io::Error`] (its `get_ref`), so that a caller that must tell an
/// upstream's failure from a local one (a server answering 502 rather
/// than 500) finds it by type: see [`Error::in_io`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store answered with an error, or not at all (after the
    /// retries). Check the URL, the credentials, the store's health.
    #[error("GET {url}{} failed: {reason}", bytes(*range))]
    Request {
        /// The object's URL.
        url: String,
        /// The byte range asked (offset, length), if one was.
        range: Option<(u64, u64)>,
        /// The HTTP status, when the store's error says which it was
        /// (404, 403, 401, 412, 409, 304); `None` for a server error
        /// retried in vain, a timeout or a dropped connection.
        status: Option<u16>,
        /// The store's message, with its causes.
        reason: String,
    },
    /// The store answered a ranged GET with fewer bytes than asked: the
    /// object is shorter than its index says (rebuild the index, or fix
    /// the `.loc`).
    #[error(
        "GET {url} bytes {offset}-{}: {got} bytes came, not {length}",
        offset + length - 1
    )]
    ShortAnswer {
        url: String,
        offset: u64,
        length: u64,
        got: u64,
    },
}

impl Error {
    /// The failed request `e` carries, if it carries one.
    pub fn in_io(e: &io::Error) -> Option<&Error> {
        e.get_ref()?.downcast_ref::<Error>()
    }

    /// The object's URL.
    pub fn url(&self) -> &str {
        match self {
            Error::Request { url, .. } | Error::ShortAnswer { url, .. } => url,
        }
    }
}

/// ` bytes FIRST-LAST` of a range, for messages.
fn bytes(range: Option<(u64, u64)>) -> String {
    range.map_or(String::new(), |(o, l)| {
        format!(" bytes {o}-{}", o + l.max(1) - 1)
    })
}

/// One remote object.
#[derive(Clone)]
pub struct Object {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    url: String,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The store is left out: its settings may hold credentials.
        f.debug_struct("Object").field("url", &self.url).finish()
    }
}

/// An answer on its way (see [`Object::start_range`]).
pub struct Pending {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
}

impl Pending {
    /// Waits for the bytes.
    pub fn wait(self) -> io::Result<Vec<u8>> {
        self.rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the request was dropped")))
    }
}

impl Object {
    /// The object at `url` (no request is made).
    pub fn open(url: &str) -> io::Result<Object> {
        let (store_key, key) = split_url(url)?;
        let path = ObjectPath::from_url_path(key).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: bad path: {e}"))
        })?;
        let store = store_for(&store_key, url)?;
        Ok(Object {
            store,
            path,
            url: url.to_string(),
        })
    }

    /// The URL, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `length` bytes at `offset` (one ranged GET).
    pub fn read_range(&self, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        self.start_range(offset, length).wait()
    }

    /// Starts a ranged GET of `length` bytes at `offset`; several started
    /// ones are in flight at once.
    pub fn start_range(&self, offset: u64, length: u64) -> Pending {
        let (tx, rx) = mpsc::sync_channel(1);
        if length == 0 {
            let _ = tx.send(Ok(Vec::new()));
            return Pending { rx };
        }
        let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
        runtime().spawn(async move {
            let got = store.get_range(&path, offset..offset + length).await;
            let got = match got {
                Ok(b) if b.len() as u64 == length => Ok(b.to_vec()),
                Ok(b) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    Error::ShortAnswer {
                        url,
                        offset,
                        length,
                        got: b.len() as u64,
                    },
                )),
                Err(e) => Err(failure(&url, Some((offset, length)), e)),
            };
            let _ = tx.send(got);
        });
        Pending { rx }
    }

    /// The whole object (one GET).
    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        let (tx, rx) = mpsc::sync_channel(1);
        let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
        runtime().spawn(async move {
            let got = match store.get(&path).await {
                Ok(r) => r.bytes().await,
                Err(e) => Err(e),
            };
            let _ = tx.send(got.map(|b| b.to_vec()).map_err(|e| failure(&url, None, e)));
        });
        Pending { rx }.wait()
    }
}

/// A failed request as an I/O error carrying [`Error::Request`]; a
/// missing object is `NotFound`, which callers that probe for a file
/// tell apart.
fn failure(url: &str, range: Option<(u64, u64)>, e: object_store::Error) -> io::Error {
    use object_store::Error as E;
    let (kind, status) = match e {
        E::NotFound { .. } => (io::ErrorKind::NotFound, Some(404)),
        E::PermissionDenied { .. } => (io::ErrorKind::Other, Some(403)),
        E::Unauthenticated { .. } => (io::ErrorKind::Other, Some(401)),
        E::Precondition { .. } => (io::ErrorKind::Other, Some(412)),
        E::AlreadyExists { .. } => (io::ErrorKind::Other, Some(409)),
        E::NotModified { .. } => (io::ErrorKind::Other, Some(304)),
        _ => (io::ErrorKind::Other, None),
    };
    // The whole chain: the status is in an inner error's message.
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    let failed = Error::Request {
        url: url.to_string(),
        range,
        status,
        reason: msg.trim_end().to_string(),
    };
    io::Error::new(kind, failed)
}

/// The runtime the requests run on: two threads, made on first use.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ukvs-remote")
            .enable_all()
            .build()
            .expect("a runtime for remote reads")
    })
}

/// The store's key (`scheme://authority`, or `s3://bucket`) and the
/// object's key within it.
fn split_url(url: &str) -> io::Result<(String, &str)> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{url} is not a URL of the form http(s)://host/path or s3://bucket/key"),
        )
    };
    let i = url.find("://").ok_or_else(bad)? + 3;
    let rest = &url[i..];
    let (authority, key) = rest.split_once('/').ok_or_else(bad)?;
    if authority.is_empty() {
        return Err(bad());
    }
    // Query strings and fragments have no place in an object's URL.
    let key = key.split(['?', '#']).next().unwrap_or_default();
    Ok((format!("{}{authority}", url[..i].to_ascii_lowercase()), key))
}

/// The store of a host or bucket, made once and shared (its connections
/// are kept).
fn store_for(store_key: &str, url: &str) -> io::Result<Arc<dyn ObjectStore>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    let mut stores = stores.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = stores.get(store_key) {
        return Ok(s.clone());
    }
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: RETRIES,
        retry_timeout: RETRY_WINDOW,
    };
    let options = ClientOptions::new()
        .with_timeout(Duration::from_secs(30))
        .with_connect_timeout(Duration::from_secs(5));
    let made: Result<Arc<dyn ObjectStore>, object_store::Error> =
        if let Some(bucket) = store_key.strip_prefix("s3://") {
            s3_builder(bucket, options)
                .with_retry(retry)
                .build()
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        } else {
            HttpBuilder::new()
                .with_url(store_key)
                .with_client_options(options.with_allow_http(store_key.starts_with("http://")))
                .with_retry(retry)
                .build()
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        };
    let store = made.map_err(|e| io::Error::other(format!("{url}: {e}")))?;
    stores.insert(store_key.to_string(), store.clone());
    Ok(store)
}

/// An S3 store's settings: the environment's, else the AWS profile's.
fn s3_builder(bucket: &str, options: ClientOptions) -> AmazonS3Builder {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut b = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_client_options(options);
    let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let home = env("HOME").map(std::path::PathBuf::from);
    if env("AWS_ACCESS_KEY_ID").is_none() {
        let file = env("AWS_SHARED_CREDENTIALS_FILE")
            .map(std::path::PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws/credentials")));
        let creds = file
            .map(|f| profile_settings(&f, &profile))
            .unwrap_or_default();
        if let (Some(id), Some(secret)) = (
            creds.get("aws_access_key_id"),
            creds.get("aws_secret_access_key"),
        ) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(token) = creds.get("aws_session_token") {
                b = b.with_token(token);
            }
        }
    }
    let config = env("AWS_CONFIG_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".aws/config")));
    // The config file names profiles `[profile NAME]`, except the default.
    let section = match profile.as_str() {
        "default" => profile.clone(),
        p => format!("profile {p}"),
    };
    let settings = config
        .map(|f| profile_settings(&f, &section))
        .unwrap_or_default();
    if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
        if let Some(region) = settings.get("region") {
            b = b.with_region(region);
        }
    }
    let endpoint = env("AWS_ENDPOINT_URL")
        .or_else(|| env("AWS_ENDPOINT"))
        .or_else(|| settings.get("endpoint_url").cloned());
    if let Some(endpoint) = endpoint {
        // A local S3 (MinIO, moto) speaks plain HTTP.
        b = b
            .with_allow_http(endpoint.starts_with("http://"))
            .with_endpoint(endpoint);
    }
    b
}

/// The `key = value` settings of one `[section]` of an INI file such as
/// `~/.aws/credentials`; nothing when the file or section is missing.
fn profile_settings(path: &std::path::Path, section: &str) -> HashMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    parse_profile(&text, section)
}

fn parse_profile(text: &str, section: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
            continue;
        }
        if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://bucket/x"));
        assert!(is_url("HTTP://host/x"));
        assert!(!is_url("http://"));
        assert!(!is_url("dir/http://x"));
        assert!(!is_url("/tmp/cluster"));
    }

    #[test]
    fn names_resolve_against_directories() {
        assert_eq!(
            join("http://h/a/", "cdx-00000.gz"),
            "http://h/a/cdx-00000.gz"
        );
        assert_eq!(
            join("http://h/a", "cdx-00000.gz"),
            "http://h/a/cdx-00000.gz"
        );
        assert_eq!(join("http://h/a/", "s3://b/x.gz"), "s3://b/x.gz");
        assert_eq!(parent("s3://b/p/cluster.idx"), "s3://b/p/");
        assert_eq!(parent("http://h/index.idx"), "http://h/");
    }

    #[test]
    fn urls_split_into_store_and_key() {
        let (store, key) = split_url("http://127.0.0.1:8080/c/index.idx?x=1").unwrap();
        assert_eq!(
            (store.as_str(), key),
            ("http://127.0.0.1:8080", "c/index.idx")
        );
        let (store, key) = split_url("s3://bucket/prefix/cdx-00001.gz").unwrap();
        assert_eq!(
            (store.as_str(), key),
            ("s3://bucket", "prefix/cdx-00001.gz")
        );
        assert!(split_url("s3:///x").is_err());
    }

    #[test]
    fn failed_requests_are_found_by_type_and_read_as_before() {
        let e = failure(
            "http://h/a",
            Some((0, 10)),
            object_store::Error::NotFound {
                path: "a".into(),
                source: "no such key".into(),
            },
        );
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let Some(Error::Request { url, status, .. }) = Error::in_io(&e) else {
            panic!("{e:?} carries no failed request");
        };
        assert_eq!((url.as_str(), *status), ("http://h/a", Some(404)));
        assert!(e
            .to_string()
            .starts_with("GET http://h/a bytes 0-9 failed: "));
        // A message that merely looks like one is not one.
        assert!(Error::in_io(&io::Error::other("GET http://h/a failed: 500")).is_none());
        let short = Error::ShortAnswer {
            url: "s3://b/k".into(),
            offset: 5,
            length: 10,
            got: 3,
        };
        assert_eq!(
            short.to_string(),
            "GET s3://b/k bytes 5-14: 3 bytes came, not 10"
        );
    }

    #[test]
    fn profiles_read_their_own_section() {
        let text = "[default]\naws_access_key_id = A\n\n[profile other]\nregion=eu-west-1\n# c\n";
        assert_eq!(parse_profile(text, "default")["aws_access_key_id"], "A");
        assert_eq!(parse_profile(text, "profile other")["region"], "eu-west-1");
        assert!(parse_profile(text, "missing").is_empty());
    }
}
