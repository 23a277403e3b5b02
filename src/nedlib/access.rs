//! `accessK.data` lists: for each object, `Path: DAY/N/MD5URL`, a copy of
//! its harvester fields, an empty line.
//!
//! A list repeats what the `.meta` files say, so it is read to check them
//! (and to find objects whose files went missing), never indexed: the
//! `.meta` file next to the data is the record of the object.

use super::error::{shown, Error};
use super::fields::{line_at, md5_hex, parse_fields, split_field, starts_with_fields, End, Fields};
use super::meta::Meta;
use super::object::Mismatch;
use super::tree::{parse_list_path, TreePath};

/// One entry of an access list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessEntry<'a> {
    /// Where the entry's `Path:` line starts in the list.
    pub offset: u64,
    /// The object's data file (`is_meta` is false).
    pub path: TreePath<'a>,
    /// The harvester fields listed for it.
    pub fields: Fields<'a>,
}

/// The entries of an access list, in file order: an `Err` for an entry
/// that cannot be read, after which reading goes on after the next empty
/// line. Made by [`parse_access_list`].
#[derive(Clone, Debug)]
pub struct AccessList<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Reads an access list's entries.
///
/// ```
/// let list = b"Path: 1999-10-05/1/0aca879afd45103783c3990636c860ac\n\
///              URL: http://www.server.at/\nHarvest-Time: 19991005120000\n\n";
/// let entries: Vec<_> = ukvs::nedlib::parse_access_list(list).collect();
/// let entry = entries[0].as_ref().expect("well-formed");
/// assert_eq!((entry.path.day, entry.fields.url), ("1999-10-05", &b"http://www.server.at/"[..]));
/// ```
pub fn parse_access_list(bytes: &[u8]) -> AccessList<'_> {
    AccessList { bytes, pos: 0 }
}

impl<'a> AccessList<'a> {
    /// Moves past the entry starting at `from`: after its first empty
    /// line, or to the end of the list.
    fn skip_entry(&mut self, from: usize) {
        let mut pos = from;
        while pos < self.bytes.len() {
            let (line, next, _) = line_at(self.bytes, pos);
            pos = next;
            if line.is_empty() {
                break;
            }
        }
        self.pos = pos;
    }

    fn entry(&mut self, start: usize) -> Result<AccessEntry<'a>, Error> {
        let bytes = self.bytes;
        let offset = start as u64;
        let (line, next, _) = line_at(bytes, start);
        let path_value = match split_field(line) {
            Some((name, value)) if name.eq_ignore_ascii_case(b"Path") => value,
            _ => {
                return Err(Error::MissingPath {
                    offset,
                    line: shown(line),
                })
            }
        };
        let path = std::str::from_utf8(path_value)
            .ok()
            .and_then(parse_list_path)
            .ok_or_else(|| Error::BadPath {
                offset,
                path: shown(path_value),
            })?;
        let (fields, end) = parse_fields(bytes, next, End::EmptyLineOrEof)?;
        self.pos = end;
        Ok(AccessEntry {
            offset,
            path,
            fields,
        })
    }
}

impl<'a> Iterator for AccessList<'a> {
    type Item = Result<AccessEntry<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // Blank lines between entries are no entry.
        while self.pos < self.bytes.len() {
            let (line, next, _) = line_at(self.bytes, self.pos);
            if !line.iter().all(|&b| b == b' ' || b == b'\t') {
                break;
            }
            self.pos = next;
        }
        if self.pos >= self.bytes.len() {
            return None;
        }
        let start = self.pos;
        let got = self.entry(start);
        if got.is_err() {
            self.skip_entry(start);
        }
        Some(got)
    }
}

/// Whether a file starting with `first` is an access list: it opens with
/// a `Path:` line followed by harvester fields.
pub fn looks_like_access_list(first: &[u8]) -> bool {
    starts_with_fields(first, Some(b"Path"))
}

impl AccessEntry<'_> {
    /// Checks the entry against the object's `.meta` file: every harvester
    /// field the list copies must be the same (an absent field shows as
    /// `(none)`). Fields beyond the five known ones are not compared.
    pub fn check(&self, meta: &Meta<'_>) -> Vec<Mismatch> {
        fn differ<T: PartialEq>(
            out: &mut Vec<Mismatch>,
            field: &'static str,
            listed: T,
            found: T,
            text: impl Fn(T) -> Option<String>,
        ) {
            if listed != found {
                let show = |v| text(v).unwrap_or_else(|| "(none)".to_owned());
                out.push(Mismatch::Listed {
                    field,
                    listed: show(listed),
                    found: show(found),
                });
            }
        }
        let (l, m) = (&self.fields, &meta.fields);
        let mut out = Vec::new();
        let bytes = |v: Option<&[u8]>| v.map(shown);
        differ(&mut out, "URL", Some(l.url), Some(m.url), bytes);
        let time = (Some(&l.harvest_time[..]), Some(&m.harvest_time[..]));
        differ(&mut out, "Harvest-Time", time.0, time.1, bytes);
        differ(&mut out, "IP-Address", l.ip, m.ip, bytes);
        let number = |n: Option<u64>| n.map(|n| n.to_string());
        differ(
            &mut out,
            "Content-Length",
            l.content_length,
            m.content_length,
            number,
        );
        let hex = |h: Option<[u8; 16]>| h.map(|h| md5_hex(&h));
        differ(&mut out, "MD5", l.md5, m.md5, hex);
        out
    }
}
