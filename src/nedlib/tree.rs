//! Names in a harvest tree: `YYYY-MM-DD/N/MD5URL` and `MD5URL.meta`, the
//! `accessK.data` lists beside the days, and the pairing of data and
//! `.meta` files in one numbered directory.
//!
//! Only names are read here; the engine lists the directories.

use std::path::{Component, Path};

use super::fields::parse_md5_hex;
use super::object::Mismatch;

/// Where an object's file sits in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TreePath<'p> {
    /// The day directory, `YYYY-MM-DD`.
    pub day: &'p str,
    /// The numbered directory's running number.
    pub number: u64,
    /// The file name's MD5 (of the object's URL).
    pub md5url: [u8; 16],
    /// Whether the name is `MD5URL.meta` rather than the data file.
    pub is_meta: bool,
}

/// Whether `name` is a day directory, `YYYY-MM-DD` with a month 01-12
/// and a day 01-31.
pub fn is_day_dir(name: &str) -> bool {
    let b = name.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let two = |i: usize| (b[i] - b'0') * 10 + (b[i + 1] - b'0');
    (1..=12).contains(&two(5)) && (1..=31).contains(&two(8))
}

/// The running number of a numbered directory (decimal digits, leading
/// zeros allowed), `None` for any other name.
pub fn number_dir(name: &str) -> Option<u64> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// The MD5 a file name stands for, and whether it is the `.meta` file:
/// 32 hex digits (either case), then `.meta` or nothing.
pub fn object_name(name: &str) -> Option<([u8; 16], bool)> {
    let (stem, is_meta) = match name.strip_suffix(".meta") {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    parse_md5_hex(stem.as_bytes()).map(|md5| (md5, is_meta))
}

/// The index K of an access list named `accessK.data`, `None` for any
/// other name. The name only says where to look: whether the file holds
/// a list is for [`looks_like_access_list`](super::looks_like_access_list).
pub fn access_list_number(name: &str) -> Option<u64> {
    let k = name.strip_prefix("access")?.strip_suffix(".data")?;
    number_dir(k)
}

/// Reads the path of an object's file: its last three components are a
/// day directory, a numbered directory and an object name. Components
/// before them are ignored, so the path may be relative to any directory
/// above the harvest's days. `None` when the path does not end that way.
///
/// ```
/// let p = ukvs::nedlib::parse_path("1999-10-05/17/0aca879afd45103783c3990636c860ac.meta")
///     .expect("a tree path");
/// assert_eq!((p.day, p.number, p.is_meta), ("1999-10-05", 17, true));
/// ```
pub fn parse_path<P: AsRef<Path> + ?Sized>(rel: &P) -> Option<TreePath<'_>> {
    let mut parts = rel.as_ref().components().rev().map(|c| match c {
        Component::Normal(s) => s.to_str(),
        _ => None,
    });
    let name = parts.next()??;
    let number = parts.next()??;
    let day = parts.next()??;
    from_parts(day, number, name)
}

/// The three parts of a tree path, checked.
pub(crate) fn from_parts<'p>(day: &'p str, number: &str, name: &str) -> Option<TreePath<'p>> {
    if !is_day_dir(day) {
        return None;
    }
    let number = number_dir(number)?;
    let (md5url, is_meta) = object_name(name)?;
    Some(TreePath {
        day,
        number,
        md5url,
        is_meta,
    })
}

/// An access list's `Path:` value: exactly `DAY/N/MD5URL`, `/` separated,
/// whatever the platform.
pub(crate) fn parse_list_path(path: &str) -> Option<TreePath<'_>> {
    let mut parts = path.split('/');
    let (day, number, name) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    from_parts(day, number, name).filter(|p| !p.is_meta)
}

impl TreePath<'_> {
    /// Checks the object's Harvest-Time against the day directory it sits
    /// in. The directory is made on the harvester's local day and the time
    /// is UTC, so a day either side is accepted; further off is reported.
    pub fn check_day(&self, harvest_time: &[u8; 14]) -> Option<Mismatch> {
        let mut dir = [b'0'; 14];
        for (d, s) in dir
            .iter_mut()
            .zip(self.day.bytes().filter(u8::is_ascii_digit))
        {
            *d = s;
        }
        let day_of = |dt: &[u8]| crate::sorted::datetime_to_secs(dt).div_euclid(86_400);
        let apart = (day_of(harvest_time) - day_of(&dir)).abs();
        (apart > 1).then(|| Mismatch::Day {
            day: self.day.to_owned(),
            harvest_time: String::from_utf8_lossy(harvest_time).into_owned(),
        })
    }
}

impl std::fmt::Display for TreePath<'_> {
    /// `DAY/N/MD5URL[.meta]` with `/` separators, the number without
    /// leading zeros and the MD5 in lower case, as an access list writes
    /// it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let meta = if self.is_meta { ".meta" } else { "" };
        let md5 = super::fields::md5_hex(&self.md5url);
        write!(f, "{}/{}/{md5}{meta}", self.day, self.number)
    }
}

/// A data file and its `.meta` file, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair<'n> {
    pub data: &'n str,
    pub meta: &'n str,
}

/// Which half of an object is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OrphanKind {
    /// A data file with no `.meta` file: its URL and time are unknown, so
    /// it cannot be indexed.
    DataWithoutMeta,
    /// A `.meta` file with no data file: there is nothing to replay.
    MetaWithoutData,
}

/// Half an object, named for the caller to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Orphan<'n> {
    pub name: &'n str,
    pub kind: OrphanKind,
}

impl std::fmt::Display for Orphan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            OrphanKind::DataWithoutMeta => write!(
                f,
                "{}: data file without its .meta file; not indexed (its URL and time are unknown)",
                self.name
            ),
            OrphanKind::MetaWithoutData => write!(
                f,
                "{}: .meta file without its data file; not indexed (nothing to replay)",
                self.name
            ),
        }
    }
}

/// What one numbered directory's listing holds, each list in name order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairing<'n> {
    /// Objects with both files.
    pub pairs: Vec<Pair<'n>>,
    /// Objects with one file.
    pub orphans: Vec<Orphan<'n>>,
    /// Names that are no object file (not 32 hex digits, with or without
    /// `.meta`): not part of the layout, left to the caller.
    pub others: Vec<&'n str>,
}

/// Pairs each data file `MD5URL` with `MD5URL.meta` in one directory's
/// listing (in any order); the result is in name order whatever order
/// the listing came in.
///
/// ```
/// use ukvs::nedlib::{pair, OrphanKind};
/// let a = "0aca879afd45103783c3990636c860ac";
/// let b = "d41d8cd98f00b204e9800998ecf8427e";
/// let names = [format!("{a}.meta"), b.to_string(), a.to_string(), "notes".into()];
/// let p = pair(&names);
/// assert_eq!((p.pairs[0].data, p.pairs[0].meta), (a, &*format!("{a}.meta")));
/// assert_eq!((p.orphans[0].name, p.orphans[0].kind), (b, OrphanKind::DataWithoutMeta));
/// assert_eq!(p.others, ["notes"]);
/// ```
pub fn pair<S: AsRef<str>>(names: &[S]) -> Pairing<'_> {
    let mut sorted: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Pairing::default();
    // Partners are looked up by name: a listing may hold a name twice or
    // stray names between the halves of an object.
    let has = |n: &str| sorted.binary_search(&n).is_ok();
    for &name in &sorted {
        match object_name(name) {
            Some((_, false)) => {
                let meta = format!("{name}.meta");
                match sorted.binary_search(&meta.as_str()) {
                    Ok(i) => out.pairs.push(Pair {
                        data: name,
                        meta: sorted[i],
                    }),
                    Err(_) => out.orphans.push(Orphan {
                        name,
                        kind: OrphanKind::DataWithoutMeta,
                    }),
                }
            }
            Some((_, true)) => {
                let data = &name[..name.len() - ".meta".len()];
                if !has(data) {
                    out.orphans.push(Orphan {
                        name,
                        kind: OrphanKind::MetaWithoutData,
                    });
                }
            }
            None => out.others.push(name),
        }
    }
    out
}
