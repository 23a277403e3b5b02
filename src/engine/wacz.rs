//! Making WACZ packages (`ukvs wacz create`): WARCs indexed by the index
//! job, the index cut as a WACZ's `cdxj-gzip-1.0` files, everything
//! written in py-wacz's order. Reading and checking packages is
//! [`super::package`].

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use super::error::Kind;

/// Why a package was not made (no package is then written).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path given as a WARC names no file (`..`, `/`).
    #[error("{} names no file", .path.display())]
    NoName { path: PathBuf },
    /// Two WARCs share a base name: rename one.
    #[error("two WARCs are named {name}: a package stores WARCs by their base names, rename one")]
    SameName { name: String },
    /// A WARC given is not a file (`missing`: nothing is there).
    #[error("{}: not a file (a package is made of WARC files)", .path.display())]
    NotAFile { path: PathBuf, missing: bool },
    /// The temporary directory for the index cannot be made
    /// (`--tmp-dir` puts it elsewhere).
    #[error("cannot make a temporary directory")]
    TmpDir(#[source] io::Error),
    /// The WARCs cannot be indexed.
    #[error(transparent)]
    Index(#[from] super::index::Error),
    /// The index cannot be cut into the package's index files.
    #[error(transparent)]
    Cluster(#[from] super::zipnum::Error),
    /// A WARC cannot be opened to be stored.
    #[error(transparent)]
    Open(#[from] super::error::OpenError),
    /// The package, or an entry of it, cannot be written (`what` names
    /// it).
    #[error("cannot write {what}")]
    Write {
        what: String,
        #[source]
        cause: io::Error,
    },
    /// The ZIP writer failed.
    #[error(transparent)]
    Zip(Box<dyn std::error::Error + Send + Sync>),
    /// The package's own files (the index made for it) cannot be read.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::NoName { .. } | Error::SameName { .. } => Kind::BadInput,
            Error::NotAFile { missing: true, .. } => Kind::Missing,
            Error::NotAFile { .. } => Kind::BadInput,
            Error::Index(e) => e.kind(),
            Error::Open(e) => e.kind(),
            Error::Cluster(e) => e.kind(),
            Error::TmpDir(cause) | Error::Write { cause, .. } | Error::Io(cause) => {
                Kind::of_io(cause)
            }
            Error::Zip(cause) => Kind::in_chain(cause.as_ref()).unwrap_or(Kind::Io),
        }
    }
}

impl From<zip::result::ZipError> for Error {
    fn from(e: zip::result::ZipError) -> Error {
        Error::Zip(Box::new(e))
    }
}

/// A WACZ package to make from WARC files (`ukvs wacz create`).
#[derive(Clone, Debug)]
pub struct CreateJob {
    pub warcs: Vec<std::path::PathBuf>,
    /// The package, written whole (temporary file beside it, renamed).
    pub output: std::path::PathBuf,
    /// `title` of `datapackage.json`.
    pub title: Option<String>,
    /// Worker threads for the index (0 = every core).
    pub threads: usize,
    /// Memory for sorting the index, in bytes.
    pub mem: u64,
    pub tmp_dir: Option<std::path::PathBuf>,
}

/// Makes a WACZ package as py-wacz's `wacz create` lays it out: the WARCs
/// indexed with py-wacz's options (cdxj, `--post-append`,
/// `--digest-records`, `--fields referrer,req.http:cookie`), the
/// `cdxj-gzip-1.0` index of those lines (`indexes/index.cdx.gz`, stored,
/// and `indexes/index.idx`, deflated, as `zipnum build --layout wacz`
/// writes them), the WARCs stored under `archive/` by their base names, an
/// empty page list (`pages/pages.jsonl`), `datapackage.json` (WACZ 1.1.1:
/// each entry's SHA-256 and size) and `datapackage-digest.json`. A damaged
/// WARC fails the job (exit 2, no package): a package's index must cover
/// its WARCs. Memory: the index's compressed files; the WARCs are copied
/// through a buffer.
pub fn create(job: &CreateJob) -> Result<std::process::ExitCode, Error> {
    use std::collections::HashSet;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    // Each WARC by its base name, once.
    let mut names = HashSet::new();
    for w in &job.warcs {
        let name = w
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::NoName { path: w.clone() })?;
        if !names.insert(name.clone()) {
            return Err(Error::SameName { name });
        }
        if !w.is_file() {
            return Err(Error::NotAFile {
                path: w.clone(),
                missing: !w.exists(),
            });
        }
    }
    let tmp = match &job.tmp_dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(Error::TmpDir)?;
    let lines = tmp.path().join("index.cdxj");
    let custom = crate::capture::fields::Custom::new(
        crate::capture::fields::Records::Default,
        Some("referrer,req.http:cookie"),
        None,
        true,
        crate::capture::fields::Shape::Json,
    )
    .map(std::sync::Arc::new);
    let index = super::index::IndexJob {
        threads: job.threads,
        mem: job.mem,
        tmp_dir: job.tmp_dir.clone(),
        quiet: true,
        strict: true,
        post_append: true,
        cdxj: custom,
        ..super::index::IndexJob::new(job.warcs.clone(), Some(lines.clone()))
    };
    let code = super::index::run(&index, None)?;
    if code != std::process::ExitCode::SUCCESS {
        crate::report!(
            "ukvs wacz create: the WARCs did not index cleanly (above); no package written"
        );
        return Ok(std::process::ExitCode::from(2));
    }
    let built = tmp.path().join("indexes");
    super::zipnum::build_wacz(&super::zipnum::BuildJob {
        input: lines,
        output: built.clone(),
        lines_per_block: crate::wacz::DEFAULT_LINES_PER_BLOCK,
        shards: 1,
        level: 6,
        layout: super::zipnum::Layout::Wacz,
    })?;

    let target = &job.output;
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file = tempfile::NamedTempFile::new_in(&dir).map_err(|cause| Error::Write {
        what: format!("in {}", dir.display()),
        cause,
    })?;
    let mut zip = zip::ZipWriter::new(io::BufWriter::with_capacity(1 << 20, file));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    // (path, SHA-256 hex, bytes) of every entry, for datapackage.json.
    let mut resources: Vec<(String, String, u64)> = Vec::new();
    let mut add = |zip: &mut zip::ZipWriter<_>,
                   path: &str,
                   opts: SimpleFileOptions,
                   rdr: &mut dyn Read|
     -> Result<(), Error> {
        zip.start_file(path, opts)?;
        let mut hashing = HashingWriter {
            inner: &mut *zip,
            sha: <sha2::Sha256 as sha2::Digest>::new(),
            bytes: 0,
        };
        io::copy(rdr, &mut hashing).map_err(|cause| Error::Write {
            what: path.to_string(),
            cause,
        })?;
        let hex = crate::wacz::hex(&sha2::Digest::finalize(hashing.sha));
        resources.push((path.to_string(), hex, hashing.bytes));
        Ok(())
    };
    for (name, opts) in [("index.cdx.gz", stored), ("index.idx", deflated)] {
        let mut f = File::open(built.join(name))?;
        add(&mut zip, &format!("indexes/{name}"), opts, &mut f)?;
    }
    for w in &job.warcs {
        let name = w.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = format!("archive/{}", name.unwrap_or_default());
        let mut f = super::error::open(w)?;
        let big = f
            .metadata()
            .map_or(true, |m| m.len() >= u64::from(u32::MAX));
        add(&mut zip, &name, stored.large_file(big), &mut f)?;
    }
    let title = job.title.as_deref().unwrap_or("Pages");
    let header = serde_json::json!({"format": "json-pages-1.0", "id": "pages", "title": title});
    let pages = format!("{header}\n");
    add(
        &mut zip,
        "pages/pages.jsonl",
        deflated,
        &mut pages.as_bytes(),
    )?;

    let mut package = serde_json::Map::new();
    package.insert("profile".into(), "data-package".into());
    let list: Vec<serde_json::Value> = resources
        .iter()
        .map(|(path, hex, bytes)| {
            let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
            serde_json::json!({
                "name": name,
                "path": path,
                "hash": format!("sha256:{hex}"),
                "bytes": bytes,
            })
        })
        .collect();
    package.insert("resources".into(), list.into());
    if let Some(t) = &job.title {
        package.insert("title".into(), t.clone().into());
    }
    package.insert("created".into(), created_now().into());
    package.insert("wacz_version".into(), "1.1.1".into());
    package.insert(
        "software".into(),
        format!("ukvs {}", env!("CARGO_PKG_VERSION")).into(),
    );
    let dp = serde_json::to_string_pretty(&serde_json::Value::Object(package))
        .map_err(io::Error::from)?;
    zip.start_file("datapackage.json", deflated)?;
    zip.write_all(dp.as_bytes())?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": format!("sha256:{}", crate::wacz::hex(&<sha2::Sha256 as sha2::Digest>::digest(dp.as_bytes()))),
    });
    zip.start_file("datapackage-digest.json", deflated)?;
    let digest = serde_json::to_string_pretty(&digest).map_err(io::Error::from)?;
    zip.write_all(digest.as_bytes())?;
    let file = zip.finish()?.into_inner().map_err(|e| Error::Write {
        what: target.display().to_string(),
        cause: e.into_error(),
    })?;
    file.as_file().sync_all().ok();
    file.persist(target).map_err(|e| Error::Write {
        what: target.display().to_string(),
        cause: e.error,
    })?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Copies through to `inner`, hashing and counting what passes.
struct HashingWriter<W> {
    inner: W,
    sha: sha2::Sha256,
    bytes: u64,
}

impl<W: io::Write> io::Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        sha2::Digest::update(&mut self.sha, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `created` of `datapackage.json`: now in UTC, or SOURCE_DATE_EPOCH
/// (seconds) when set, for packages made again byte for byte.
fn created_now() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let (y, m, d, rem) = crate::sorted::civil_from_secs(secs);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(warcs: Vec<PathBuf>, output: PathBuf) -> CreateJob {
        CreateJob {
            warcs,
            output,
            title: None,
            threads: 1,
            mem: 1 << 20,
            tmp_dir: None,
        }
    }

    #[test]
    fn errors_say_their_kind_and_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("p.wacz");
        let absent = dir.path().join("absent.warc.gz");
        let err = create(&job(vec![absent.clone()], out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a file (a package is made of WARC files)",
                absent.display()
            )
        );
        let a = dir.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let twice = vec![a.join("x.warc"), dir.path().join("x.warc")];
        for w in &twice {
            std::fs::write(w, b"").unwrap();
        }
        let err = create(&job(twice, out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert!(
            err.to_string().starts_with("two WARCs are named x.warc"),
            "{err}"
        );
        let err = create(&job(vec![a.clone()], out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        // A tmp dir that is not there.
        let tmp = CreateJob {
            tmp_dir: Some(dir.path().join("no/such/dir")),
            ..job(vec![dir.path().join("x.warc")], out.clone())
        };
        let err = create(&tmp).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing);
        assert_eq!(err.to_string(), "cannot make a temporary directory");
        assert!(!out.exists());
    }
}
