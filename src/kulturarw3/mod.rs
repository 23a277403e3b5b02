//! Kulturarw3 reader: objects stored as MIME multipart messages, one per
//! file or concatenated, and the storage tree that names them.
//!
//! Kulturarw3 (the Swedish web archive's crawler, format 0.01) stores each
//! fetched object as one `multipart/mixed` message: a main header with
//! the archive fields (`HTTP-URL`, `HTTP-archive-time` in seconds since
//! 1970, `HTTP-Content-MD5`, `HTTP-IP-addr`), then a `Header-Info` part
//! (the HTTP response header) and a `Content` part (the body as fetched),
//! then the closing delimiter `--BOUNDARY--`. The closing delimiter lets
//! objects be concatenated into one file.
//!
//! * [`Object`]: one object, borrowed from the file's bytes, with its
//!   exact `offset` and `length` in the file and the fields a capture
//!   needs; [`Object::sha1`] is the digest of the content,
//!   [`Object::md5_ok`] its check against `HTTP-Content-MD5`.
//! * [`Reader`] (from [`objects`]): iterates over the objects of a whole
//!   file given as `&[u8]`, reports damage as [`Error`]s carrying byte
//!   offsets and resynchronises at the next object start, so the objects
//!   after the damage are kept.
//! * [`looks_like_object`]: sniffs a file from its first bytes (the tree's
//!   file names say nothing of a file holding several objects).
//! * [`TreePath`], [`parse_tree_path`], [`check_path`]: the tree path
//!   `archive/XX/HOST/SNAPSHOT/MD5URL.EPOCH` and its cross-check against
//!   the object stored there.
//!
//! Nothing here opens files: the caller hands over the bytes (a memory
//! map) and the relative path, and reports what comes back.
//! FORMATS.md states every reading the format's description leaves open.
//!
//! ```
//! use ukvs::kulturarw3::objects;
//! let data = b"MIME-version: 1.0\n\
//!     Content-Type: multipart/mixed; boundary=B\n\
//!     HTTP-URL: http://www.kb.se/\n\
//!     HTTP-archive-time: 875721538\n\
//!     \n\
//!     --B\n\
//!     HTTP-part: Header-Info\n\
//!     \n\
//!     HTTP/1.0 200 OK\n\
//!     Content-Type: text/html\n\
//!     \n\
//!     --B\n\
//!     HTTP-part: Content\n\
//!     \n\
//!     hello\n\
//!     --B--\n";
//! let obj = objects(data).next().unwrap().unwrap();
//! assert_eq!(obj.url, b"http://www.kb.se/");
//! assert_eq!(&obj.datetime.unwrap(), b"19971001155858");
//! assert_eq!((obj.status, obj.mime), (Some(200), Some(&b"text/html"[..])));
//! assert_eq!(obj.content, b"hello");
//! assert_eq!((obj.offset, obj.length), (0, data.len() as u64));
//! ```

mod epoch;
mod error;
mod mime;
mod path;
mod reader;
#[cfg(test)]
mod tests;

use data_encoding::{BASE32, BASE64};
use md5::{Digest as _, Md5};
use sha1::Sha1;

pub use epoch::{datetime as datetime_from_epoch, MAX_EPOCH};
pub use error::{Error, Part, PathField};
pub use path::{check_path, parse_tree_path, TreePath};
pub use reader::{objects, Reader};

/// One Kulturarw3 object, borrowed from the bytes it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object<'a> {
    /// Offset of the `MIME-version` line in the file.
    pub offset: u64,
    /// From the `MIME-version` line through the line end after the closing
    /// delimiter (the end of the file when that line has none).
    pub length: u64,
    /// `HTTP-URL` as stored, trimmed; never empty.
    pub url: &'a [u8],
    /// `HTTP-archive-time`, when it is seconds since 1970 that a 14-digit
    /// datetime can hold.
    pub archive_time: Option<i64>,
    /// `archive_time` as UTC `YYYYMMDDhhmmss`.
    pub datetime: Option<[u8; 14]>,
    /// `HTTP-Content-MD5` as written (see [`Object::declared_md5`]).
    pub content_md5: Option<&'a [u8]>,
    /// `HTTP-IP-addr`, when not empty.
    pub ip: Option<&'a [u8]>,
    /// `HTTP-www-archiver` (`KulturArw3`).
    pub archiver: Option<&'a [u8]>,
    /// The media type (no parameters) of the Header-Info `Content-Type`,
    /// else of the Content part's own `Content-Type`.
    pub mime: Option<&'a [u8]>,
    /// The status code of the Header-Info's status line; `None` when it
    /// starts with header fields (libwww-era objects keep no status line).
    pub status: Option<u16>,
    /// The Header-Info `Location` field, trimmed, when not empty: where a
    /// redirect pointed.
    pub redirect: Option<&'a [u8]>,
    /// The Content part's body: the object as fetched.
    pub content: &'a [u8],
    /// The Header-Info part's body (status line, if any, and header
    /// fields), when the part is there.
    pub header_info: Option<&'a [u8]>,
    /// The main header, from the `MIME-version` line to the empty line
    /// (not included).
    pub main_header: &'a [u8],
    /// Where the archive fields were read: the main header (which the
    /// format's example labels `HTTP-part: Archive-Info`), or a separate
    /// `Archive-Info` part (headers and body) when the main header has no
    /// `HTTP-URL`.
    pub archive_info: &'a [u8],
    /// The multipart boundary.
    pub boundary: &'a [u8],
    /// The MD5 check made by the reader, if any.
    md5_match: Option<bool>,
}

impl Object<'_> {
    /// The SHA-1 of the content: the capture's digest.
    pub fn sha1(&self) -> [u8; 20] {
        Sha1::digest(self.content).into()
    }

    /// [`Object::sha1`] in upper-case base32, as the index writes it after
    /// `sha1:`.
    pub fn sha1_base32(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        BASE32.encode_mut(&self.sha1(), &mut out);
        out
    }

    /// The MD5 of the content.
    pub fn md5(&self) -> [u8; 16] {
        Md5::digest(self.content).into()
    }

    /// `HTTP-Content-MD5` decoded: 32 hex digits (the format's example)
    /// or, as in HTTP's `Content-MD5`, the 24-character base64 of the 16
    /// bytes.
    pub fn declared_md5(&self) -> Option<[u8; 16]> {
        decode_md5(self.content_md5?)
    }

    /// Whether the content's MD5 is the declared one; `None` when no MD5
    /// is declared or the declared value is not one. Uses the reader's
    /// check when it made one.
    pub fn md5_ok(&self) -> Option<bool> {
        let declared = self.declared_md5()?;
        Some(self.md5_match.unwrap_or_else(|| declared == self.md5()))
    }
}

/// An MD5 written as 32 hex digits (either case) or 24 base64 characters.
fn decode_md5(v: &[u8]) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    match v.len() {
        32 => {
            for (o, pair) in out.iter_mut().zip(v.chunks_exact(2)) {
                let nib = |c: u8| (c as char).to_digit(16);
                *o = (nib(pair[0])? * 16 + nib(pair[1])?) as u8;
            }
            Some(out)
        }
        24 => {
            let mut buf = [0u8; 18];
            let n = BASE64.decode_mut(v, &mut buf).ok()?;
            (n == 16).then(|| {
                out.copy_from_slice(&buf[..16]);
                out
            })
        }
        _ => None,
    }
}

/// Lower-case hex, as MD5s are written in the tree and the main header.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Whether a file starting with `first_bytes` holds Kulturarw3 objects:
/// past leading whitespace, a `MIME-version:` line opening a header with
/// a multipart boundary and an archive field (`HTTP-URL`,
/// `HTTP-www-archiver`, `HTTP-archive-time`) or a `KulturArw3...`
/// boundary. The main header must lie within `first_bytes`; 8 KiB are
/// plenty. E-mail and MHTML files, which also start with `MIME-Version`,
/// have neither.
pub fn looks_like_object(first_bytes: &[u8]) -> bool {
    let start = first_bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(first_bytes.len());
    mime::is_object_start(first_bytes, start)
}
