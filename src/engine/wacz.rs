//! WACZ packages on disk: checking what a package's `datapackage.json`
//! says of its entries (for `ukvs validate`).
//!
//! Reading packages is spread over the jobs that read their parts: `ukvs
//! index` reads the WARCs in place (`engine::index`), the streaming jobs
//! read the package's index through `engine::fs::package_index`, and
//! lookups through `engine::lookup::Source::wacz`. The ZIP and the
//! package's formats are parsed by the leaf [`crate::wacz`].

use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use crate::wacz::{digest_reader, parse_datapackage, Package};

/// What a check of a package found.
#[derive(Debug, Default)]
pub struct PackageReport {
    /// Resources of `datapackage.json` whose entry was read and hashed.
    pub checked: u64,
    /// One message per problem, each naming the entry.
    pub problems: Vec<String>,
}

/// Checks every resource `datapackage.json` lists: the entry is there,
/// holds the bytes it states, and hashes to its digest (SHA-256 or MD5,
/// of the entry's contents, as py-wacz hashes them). A package that
/// cannot be read at all is an error; everything else is a problem of
/// the report, and the other entries are still checked.
pub fn check_package(path: &Path) -> anyhow::Result<PackageReport> {
    check_resources(path, |_| true)
}

/// [`check_package`] of the WARCs alone (resources under `archive/`):
/// what `ukvs index --verify-digests` checks of a package it indexes.
pub fn check_package_archives(path: &Path) -> anyhow::Result<PackageReport> {
    check_resources(path, |p| p.starts_with("archive/"))
}

fn check_resources(path: &Path, wanted: impl Fn(&str) -> bool) -> anyhow::Result<PackageReport> {
    let name = path.display();
    let mut file = File::open(path)?;
    let package = Package::read(BufReader::new(&mut file))?;
    let mut report = PackageReport::default();
    let Some(dp) = package.entry("datapackage.json") else {
        report
            .problems
            .push("no datapackage.json: the package's entries cannot be checked".into());
        return Ok(report);
    };
    let text = read_entry(&mut file, dp)?;
    let resources = match parse_datapackage(&text) {
        Ok(r) => r,
        Err(e) => {
            report.problems.push(e.to_string());
            return Ok(report);
        }
    };
    for r in resources.into_iter().filter(|r| wanted(&r.path)) {
        let Some(entry) = package.entry(&r.path) else {
            let what = format!(
                "entry {}: listed in datapackage.json, not in the package",
                r.path
            );
            report.problems.push(what);
            continue;
        };
        let Some((alg, want)) = &r.hash else { continue };
        file.seek(io::SeekFrom::Start(entry.data_start))
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let stored = (&mut file).take(entry.compressed_size);
        let got = entry
            .reader(stored)
            .map_err(anyhow::Error::from)
            .and_then(|rdr| Ok(digest_reader(alg, rdr)?));
        match got {
            Ok(Some((hex, bytes))) => {
                report.checked += 1;
                if bytes < entry.size {
                    report.problems.push(format!(
                        "entry {}: only {bytes} of its {} bytes are in the file (cut short)",
                        r.path, entry.size
                    ));
                } else if &hex != want {
                    report.problems.push(format!(
                        "entry {}: its {alg} is {hex}, datapackage.json says {want}: the entry \
                         was changed or damaged after the package was made",
                        r.path
                    ));
                } else if r.bytes.is_some_and(|b| b != bytes) {
                    report.problems.push(format!(
                        "entry {}: {bytes} bytes, datapackage.json says {}",
                        r.path,
                        r.bytes.unwrap_or_default()
                    ));
                }
            }
            Ok(None) => report.problems.push(format!(
                "entry {}: datapackage.json hashes it with {alg}, which is not checked here \
                 (sha256 and md5 are)",
                r.path
            )),
            Err(e) => report
                .problems
                .push(format!("entry {}: cannot read: {e}", r.path)),
        }
    }
    Ok(report)
}

/// The contents of a (small) entry.
fn read_entry(file: &mut File, entry: &crate::wacz::Entry) -> anyhow::Result<Vec<u8>> {
    if entry.range().end > file.metadata()?.len() {
        anyhow::bail!(
            "entry {}: its bytes run past the end of the file (cut short)",
            entry.name
        );
    }
    let mut stored = vec![0; usize::try_from(entry.compressed_size)?];
    file.seek(io::SeekFrom::Start(entry.data_start))?;
    file.read_exact(&mut stored)?;
    Ok(entry.contents(&stored)?)
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
pub fn create(job: &CreateJob) -> anyhow::Result<std::process::ExitCode> {
    use anyhow::Context;
    use std::collections::HashSet;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    // Each WARC by its base name, once.
    let mut names = HashSet::new();
    for w in &job.warcs {
        let name = w
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .with_context(|| format!("{} names no file", w.display()))?;
        if !names.insert(name.clone()) {
            anyhow::bail!(
                "two WARCs are named {name}: a package stores WARCs by their base names, \
                 rename one"
            );
        }
        if !w.is_file() {
            anyhow::bail!(
                "{}: not a file (a package is made of WARC files)",
                w.display()
            );
        }
    }
    let tmp = match &job.tmp_dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .context("cannot make a temporary directory")?;
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
        inputs: job.warcs.clone(),
        output: Some(lines.clone()),
        profile: crate::capture::Profile::Cdxj,
        threads: job.threads,
        no_sort: false,
        mem: job.mem,
        tmp_dir: job.tmp_dir.clone(),
        all_records: false,
        quiet: true,
        strict: true,
        post_append: true,
        verify_digests: false,
        cdxj: custom,
        dir_root: None,
        no_mmap: false,
        surt: crate::surt::Options::default(),
        mementomap: None,
        stats: None,
        digests: None,
        table: None,
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
    let file = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
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
     -> anyhow::Result<()> {
        zip.start_file(path, opts)?;
        let mut hashing = HashingWriter {
            inner: &mut *zip,
            sha: <sha2::Sha256 as sha2::Digest>::new(),
            bytes: 0,
        };
        io::copy(rdr, &mut hashing).with_context(|| format!("cannot write {path}"))?;
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
        let mut f = File::open(w).with_context(|| format!("cannot open {}", w.display()))?;
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
    let dp = serde_json::to_string_pretty(&serde_json::Value::Object(package))?;
    zip.start_file("datapackage.json", deflated)?;
    zip.write_all(dp.as_bytes())?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": format!("sha256:{}", crate::wacz::hex(&<sha2::Sha256 as sha2::Digest>::digest(dp.as_bytes()))),
    });
    zip.start_file("datapackage-digest.json", deflated)?;
    zip.write_all(serde_json::to_string_pretty(&digest)?.as_bytes())?;
    let file = zip
        .finish()?
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", target.display(), e.error()))?;
    file.as_file().sync_all().ok();
    file.persist(target)
        .with_context(|| format!("cannot write {}", target.display()))?;
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

/// A WARC of a package, found by the name a package's index gives it
/// (`filename`): the package's path and the entry.
#[derive(Clone, Debug)]
pub struct ArchiveEntry {
    pub package: std::path::PathBuf,
    pub entry: crate::wacz::Entry,
}

/// Finds the WARC named `filename` (as a package's index names it: its
/// path under `archive/`) in the packages among `paths` (WACZ files, and
/// directories holding them, not descended into), the first that has it.
/// Packages that cannot be read are passed over; `None` when none has it.
pub fn find_archive(paths: &[std::path::PathBuf], filename: &str) -> Option<ArchiveEntry> {
    let mut packages = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut inside: Vec<_> = std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|e| super::fs::is_package(e))
                .collect();
            inside.sort();
            packages.extend(inside);
        } else if super::fs::is_package(p) {
            packages.push(p.clone());
        }
    }
    packages.into_iter().find_map(|package| {
        let file = File::open(&package).ok()?;
        let read = Package::read(BufReader::new(file)).ok()?;
        let entry = read
            .archives()
            .find(|e| e.archive_name() == filename)?
            .clone();
        Some(ArchiveEntry { package, entry })
    })
}

/// Copies bytes `range` of a stored entry (offsets within the entry) to
/// `out`, a MiB at a time with positioned reads. A deflated entry has no
/// byte offsets to read at: an error saying so.
pub fn copy_entry_range(
    found: &ArchiveEntry,
    range: std::ops::Range<u64>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let ArchiveEntry { package, entry } = found;
    if entry.method != crate::wacz::Method::Stored {
        anyhow::bail!(
            "{} entry {}: compressed in the ZIP, so its records have no byte offsets to read at",
            package.display(),
            entry.name
        );
    }
    let file = File::open(package)?;
    let mut buf = vec![0u8; (range.end - range.start).min(1 << 20) as usize];
    let mut at = range.start;
    while at < range.end {
        let want = ((range.end - at) as usize).min(buf.len());
        let got = super::fs::read_full_at(&file, &mut buf[..want], entry.data_start + at)?;
        if got < want {
            anyhow::bail!(
                "{} entry {}: the package ends at byte {} of the entry (cut short)",
                package.display(),
                entry.name,
                at + got as u64
            );
        }
        out.write_all(&buf[..got])?;
        at += got as u64;
    }
    Ok(())
}
