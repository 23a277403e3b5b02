//! WACZ packages on disk, read: what a package's `datapackage.json` says
//! of its entries checked (`ukvs validate`, `ukvs index
//! --verify-digests`), and a WARC entry found and copied by byte range
//! (the server's archive endpoint, [`Archives`], which keeps each
//! package's central directory while its file is unchanged).
//!
//! Reading packages is spread over the jobs that read their parts: `ukvs
//! index` reads the WARCs in place (`engine::index`), the streaming jobs
//! read the package's index through `engine::fs::package_index`, and
//! lookups through `engine::lookup::Source::wacz`. The ZIP and the
//! package's formats are parsed by the leaf [`crate::wacz`]. Making a
//! package is [`super::wacz`]'s job, which indexes its WARCs: this module
//! stays below the index job so that the index job can check packages.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

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

/// A WARC of a package, found by the name a package's index gives it
/// (`filename`): the package's path and the entry.
#[derive(Clone, Debug)]
pub struct ArchiveEntry {
    pub package: std::path::PathBuf,
    pub entry: crate::wacz::Entry,
}

/// The WARC entries of the packages a server has read, by path, each
/// with the size and modification time its file had when its ZIP central
/// directory was read: a package is read again only when its file
/// changes (rewritten or replaced), as the index files of a collection
/// are taken anew when they change. One per collection; shared by the
/// requests, which read packages outside the lock.
#[derive(Debug, Default)]
pub struct Archives {
    listed: std::sync::Mutex<std::collections::HashMap<PathBuf, Listed>>,
}

/// One package's WARC entries, and what its file looked like then.
#[derive(Debug)]
struct Listed {
    len: u64,
    modified: Option<std::time::SystemTime>,
    entries: std::sync::Arc<[crate::wacz::Entry]>,
}

impl Archives {
    /// Finds the WARC named `filename` (as a package's index names it:
    /// its path under `archive/`) in the packages among `paths` (WACZ
    /// files, and directories holding them, not descended into), the
    /// first that has it. Packages that cannot be read are passed over;
    /// `None` when none has it.
    pub fn find(&self, paths: &[PathBuf], filename: &str) -> Option<ArchiveEntry> {
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
            let entry = self
                .entries(&package)?
                .iter()
                .find(|e| e.archive_name() == filename)?
                .clone();
            Some(ArchiveEntry { package, entry })
        })
    }

    /// The WARC entries of `package`: those listed when its file is as it
    /// was, else read from its central directory (and kept).
    fn entries(&self, package: &Path) -> Option<std::sync::Arc<[crate::wacz::Entry]>> {
        let meta = std::fs::metadata(package).ok()?;
        let (len, modified) = (meta.len(), meta.modified().ok());
        let lock = || self.listed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = lock().get(package) {
            if l.len == len && l.modified == modified {
                return Some(l.entries.clone());
            }
        }
        let file = File::open(package).ok()?;
        let read = Package::read(BufReader::new(file)).ok()?;
        let entries: std::sync::Arc<[_]> = read.archives().cloned().collect();
        let listed = Listed {
            len,
            modified,
            entries: entries.clone(),
        };
        lock().insert(package.to_path_buf(), listed);
        Some(entries)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, SystemTime};

    /// Writes a ZIP of stored entries at `path`.
    fn write_zip(path: &Path, entries: &[(&str, &[u8])]) {
        let mut w = zip::ZipWriter::new(File::create(path).unwrap());
        for (name, bytes) in entries {
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            w.start_file(*name, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap();
    }

    fn set_modified(path: &Path, t: SystemTime) {
        let f = File::options().write(true).open(path).unwrap();
        f.set_modified(t).unwrap();
    }

    #[test]
    fn a_package_is_read_again_only_when_its_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.wacz");
        let paths = [path.clone()];
        let archives = Archives::default();
        let find = |name: &str| archives.find(&paths, name).map(|f| f.entry);
        let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);

        write_zip(&path, &[("archive/a.warc", b"one")]);
        set_modified(&path, then);
        let a = find("a.warc").unwrap();
        assert_eq!((a.name.as_str(), a.size), ("archive/a.warc", 3));
        assert!(find("b.warc").is_none());

        // Rewritten with the same size and modification time: the
        // entries listed before are still given (nothing read again).
        let len = std::fs::metadata(&path).unwrap().len();
        write_zip(&path, &[("archive/b.warc", b"two")]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        set_modified(&path, then);
        assert_eq!(find("a.warc"), Some(a.clone()));
        assert!(find("b.warc").is_none());

        // Another modification time: read again.
        set_modified(&path, then + Duration::from_secs(1));
        assert!(find("a.warc").is_none());
        assert_eq!(find("b.warc").unwrap().data_start, a.data_start);

        // Another size, the time set back: read again, the entry moved.
        write_zip(
            &path,
            &[("archive/c.warc", b"first"), ("archive/b.warc", b"two")],
        );
        set_modified(&path, then + Duration::from_secs(1));
        let b = find("b.warc").unwrap();
        assert!(b.data_start > a.data_start);
        assert!(find("c.warc").is_some());

        // Gone: nothing found, and nothing kept from before is given.
        std::fs::remove_file(&path).unwrap();
        assert!(find("b.warc").is_none());
    }
}
