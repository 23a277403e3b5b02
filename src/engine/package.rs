//! WACZ packages on disk, read: what a package's `datapackage.json` says
//! of its entries checked (`ukvs validate`, `ukvs index
//! --verify-digests`), and a WARC entry found and copied by byte range
//! (the server's archive endpoint).
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
