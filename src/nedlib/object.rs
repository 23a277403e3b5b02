//! One object: the checks of its data file against its `.meta` file and
//! its name (its capture is made by `capture::object::Object::of_nedlib`).

use md5::{Digest as _, Md5};

use super::error::shown;
use super::fields::{md5_hex, parse_md5_hex};
use super::meta::Meta;

/// A disagreement between an object's parts: reported by the caller, the
/// object still indexed (its data file is what was stored, whatever its
/// `.meta` says).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The file name is not the MD5 of the URL in the `.meta` file.
    #[error("file name {name} is not the MD5 of the URL {url:?} ({url_md5})")]
    UrlMd5 {
        name: String,
        url: String,
        url_md5: String,
    },
    /// The data file's MD5 is not the one the `.meta` file states.
    #[error("the data file's MD5 is {actual}, the .meta file says {declared}")]
    DataMd5 { declared: String, actual: String },
    /// The data file's size is not the `.meta` file's Content-Length.
    #[error("the data file holds {actual} bytes, the .meta file's Content-Length says {declared}")]
    DataLength { declared: u64, actual: u64 },
    /// The Harvest-Time is more than a day away from the day directory.
    #[error("Harvest-Time {harvest_time} is more than a day from the day directory {day}")]
    Day { day: String, harvest_time: String },
    /// An access-list entry and the `.meta` file disagree on a field.
    #[error("the access list gives {field} {listed:?}, the .meta file {found:?}")]
    Listed {
        field: &'static str,
        listed: String,
        found: String,
    },
}

/// The MD5 of `bytes`.
pub fn md5(bytes: &[u8]) -> [u8; 16] {
    Md5::digest(bytes).into()
}

/// Checks an object: `name` (of its data file or its `.meta` file) is the
/// MD5 of the URL, and the data file's MD5 and size are those the `.meta`
/// file states (a `.meta` file without MD5 or Content-Length is not
/// checked on that point). Empty when all agree.
pub fn check(meta: &Meta<'_>, data: &[u8], name: &str) -> Vec<Mismatch> {
    let mut found = Vec::new();
    let url_md5 = md5(meta.fields.url);
    let stem = name.strip_suffix(".meta").unwrap_or(name);
    if parse_md5_hex(stem.as_bytes()) != Some(url_md5) {
        found.push(Mismatch::UrlMd5 {
            name: name.to_owned(),
            url: shown(meta.fields.url),
            url_md5: md5_hex(&url_md5),
        });
    }
    if let Some(declared) = meta.fields.md5 {
        let actual = md5(data);
        if actual != declared {
            found.push(Mismatch::DataMd5 {
                declared: md5_hex(&declared),
                actual: md5_hex(&actual),
            });
        }
    }
    if let Some(declared) = meta.fields.content_length {
        let actual = data.len() as u64;
        if actual != declared {
            found.push(Mismatch::DataLength { declared, actual });
        }
    }
    found
}
