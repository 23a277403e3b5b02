//! The seed formats in `ukvs index`: Kulturarw3 files and Nedlib objects
//! found in the input trees, indexed into the same capture lines as ARC
//! and WARC records.
//!
//! Files are told by their bytes (`kulturarw3::looks_like_object`,
//! `nedlib::looks_like_meta` for a `NAME.meta` file), never by name alone:
//! a Kulturarw3 file is named `MD5URL.EPOCH` and holds one object or
//! several, a Nedlib object is a data file named by the MD5 of its URL
//! with `NAME.meta` beside it. The input of a Nedlib object is its `.meta`
//! file; its data file is read with it. In a tree, `filename` is the path
//! relative to the input directory given (basenames repeat across days
//! and hosts). The index's walk tells a file by the bytes it read from
//! the handle it then hands to the file's worker: the functions here take
//! bytes, never paths to open.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::capture::object::Object;
use crate::capture::Options;
use crate::{kulturarw3, nedlib};

/// A file of a seed format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// One or more Kulturarw3 objects.
    Kulturarw3,
    /// A Nedlib `.meta` file (its data file beside it).
    NedlibMeta,
}

/// Bytes read from a file to tell its format.
pub const SNIFF: usize = 4096;

/// The seed format of a file, from its name and first bytes.
pub fn sniff(path: &Path, first: &[u8]) -> Option<Seed> {
    let meta_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("meta"));
    if meta_name && nedlib::looks_like_meta(first) {
        Some(Seed::NedlibMeta)
    } else if kulturarw3::looks_like_object(first) {
        Some(Seed::Kulturarw3)
    } else {
        None
    }
}

/// The data file of a Nedlib `.meta` file.
pub fn nedlib_data_path(meta: &Path) -> PathBuf {
    meta.with_extension("")
}

/// What indexing one seed file gave: its lines (each ending in `\\n`),
/// and the messages for the user, each counted as an error (damage, a
/// check that failed) or as a URL kept as its key.
#[derive(Default, Debug)]
pub struct Indexed {
    pub lines: Vec<u8>,
    pub records: u64,
    pub errors: Vec<String>,
    /// Objects given up on (their damage is among `errors`).
    pub skipped: u64,
    pub uncanonical: u64,
}

/// Indexes the Kulturarw3 objects of one file, `data` its bytes and
/// `name` the `filename` its lines give (its path from the input
/// directory, whose last components are checked as the tree path).
pub fn kulturarw3(data: &[u8], shown: &Path, name: &[u8], opts: &Options) -> Indexed {
    let mut out = Indexed::default();
    let tree = kulturarw3::parse_tree_path(name);
    for item in kulturarw3::objects(data) {
        let obj = match item {
            Ok(obj) => obj,
            Err(e) => {
                if !e.keeps_object() {
                    out.skipped += 1;
                }
                out.errors.push(format!("{}: {e}", shown.display()));
                continue;
            }
        };
        if let Some(t) = &tree {
            for e in kulturarw3::check_path(t, &obj) {
                out.errors.push(format!("{}: {e}", shown.display()));
            }
        }
        // The snapshot id goes into the OSLJ (the ukvs profile's).
        let extra = tree
            .iter()
            .map(|t| ("snapshot", Cow::Borrowed(t.snapshot)))
            .collect();
        let object = Object {
            url: obj.url,
            datetime: obj.datetime,
            offset: obj.offset,
            length: obj.length,
            sha1: obj.sha1(),
            mime: obj.mime.map(Cow::Borrowed),
            status: obj.status,
            redirect: obj.redirect.map(Cow::Borrowed),
            ip: obj.ip,
            extra,
        };
        if object.write_as(opts, name, &mut out.lines).is_some() {
            out.uncanonical += 1;
        }
        out.records += 1;
    }
    out
}

/// Indexes one Nedlib object: `meta` the bytes of its `.meta` file,
/// `data` those of its data file, `name` the data file's path from the
/// input directory.
pub fn nedlib(meta: &[u8], data: &[u8], shown: &Path, name: &[u8], opts: &Options) -> Indexed {
    let mut out = Indexed::default();
    let m = match nedlib::parse_meta(meta) {
        Ok(m) => m,
        Err(e) => {
            out.skipped = 1;
            out.errors.push(format!("{}: {e}", shown.display()));
            return out;
        }
    };
    let text = String::from_utf8_lossy(name);
    let file = text.rsplit(['/', '\\']).next().unwrap_or(&text);
    for mismatch in nedlib::check(&m, data, file) {
        out.errors.push(format!("{}: {mismatch}", shown.display()));
    }
    if let Some(day) =
        nedlib::parse_path(text.as_ref()).and_then(|t| t.check_day(&m.fields.harvest_time))
    {
        out.errors.push(format!("{}: {day}", shown.display()));
    }
    let object = Object::of_nedlib(&m, data);
    if object.write_as(opts, name, &mut out.lines).is_some() {
        out.uncanonical += 1;
    }
    out.records = 1;
    out
}
