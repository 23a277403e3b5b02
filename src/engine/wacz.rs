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

/// Whether the file at `path` starts as a ZIP (a WACZ package).
pub fn is_package(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04")
}

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
    for r in resources {
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
