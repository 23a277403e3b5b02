//! Nedlib harvests: a data file and a `.meta` file per object, in
//! numbered directories per day, with `accessK.data` lists beside them.
//!
//! ```text
//! HARVEST/
//! ├── access1.data     parse_access_list ──► AccessEntry {path, fields}
//! │                        (cross-checks only)     └─► AccessEntry::check(&meta)
//! └── 1999-10-05/      is_day_dir
//!     └── 17/          number_dir; parse_path(rel) ──► TreePath {day, number, md5url}
//!         ├── MD5URL        ┐ pair(listing) ──► Pairing {pairs, orphans, others}
//!         └── MD5URL.meta   ┘
//!               │ parse_meta ──► Meta {fields: Fields, head, status, mime, redirect}
//!               ▼
//!         check(&meta, data, name) ──► Vec<Mismatch>  (URL MD5, data MD5, size)
//!         TreePath::check_day(time) ─► Option<Mismatch>
//! ```
//!
//! * [`Fields`]: the harvester's `Name: value` lines (URL, Harvest-Time,
//!   IP-Address, Content-Length, MD5, and any others), shared by `.meta`
//!   files and access lists.
//! * [`Meta`]: a parsed `.meta` file: the fields, then the HTTP response
//!   head as received, read by [`crate::http::Head`] so that
//!   status and media type come out as the ARC and WARC readers give
//!   them.
//! * The capture of an object is made above this module, by
//!   `capture::object::Object::of_nedlib`: a format reader does not
//!   depend on the capture layer that consumes it.
//! * [`Mismatch`] and [`Orphan`]: disagreements and half objects, as
//!   values for the caller to report; [`Error`]: why a `.meta` file or an
//!   access-list entry cannot be read.
//!
//! The seed describes the layout but not the `.meta` contents; FORMATS.md
//! states the form read here. Nothing here touches the file system: the
//! caller lists directories, reads files and passes names and bytes.
//!
//! ```
//! use ukvs::capture::object::Object;
//! use ukvs::nedlib::{check, pair, parse_meta};
//! let name = "0aca879afd45103783c3990636c860ac"; // not the URL's MD5
//! let meta = parse_meta(
//!     b"URL: http://www.server.at/\nHarvest-Time: 20010922120413\nContent-Length: 5\n\n\
//!       HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n",
//! )
//! .expect("well-formed");
//! let data = b"hello";
//! let capture = Object::of_nedlib(&meta, data);
//! assert_eq!((capture.status, capture.length), (Some(200), 5));
//! assert_eq!(capture.digest(), "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N");
//! let found = check(&meta, data, name);
//! assert_eq!(found.len(), 1, "{found:?}");
//! assert!(pair(&[name]).pairs.is_empty());
//! ```

mod access;
mod error;
mod fields;
mod meta;
mod object;
mod tree;

pub use access::{looks_like_access_list, parse_access_list, AccessEntry, AccessList};
pub use error::Error;
pub use fields::{md5_hex, Fields};
pub use meta::{looks_like_meta, parse_meta, Meta};
pub use object::{check, md5, Mismatch};
pub use tree::{
    access_list_number, is_day_dir, number_dir, object_name, pair, parse_path, Orphan, OrphanKind,
    Pair, Pairing, TreePath,
};

#[cfg(test)]
mod tests;
