//! `.meta` files: the harvester fields, an empty line, the HTTP head.
//!
//! The head is read by [`http::Head`], the same reading the ARC and WARC
//! profiles give a response head (lines end at LF, a CR before it is
//! kept in the bytes and ignored in the values, a blank line closes the
//! head, folded lines continue a field), so a Nedlib capture gets the
//! status and media type an ARC record with the same head would get.

use std::borrow::Cow;

use super::error::{shown, Error};
use super::fields::{parse_fields, starts_with_fields, End, Fields};
use crate::http::{self, is_py_space};

/// One parsed `.meta` file, borrowed from its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta<'a> {
    /// The harvester fields.
    pub fields: Fields<'a>,
    /// The HTTP response head as received, status line through its
    /// closing empty line; empty when the file has none (an HTTP/0.9
    /// response has no head).
    pub head: &'a [u8],
    /// Where `head` starts in the file.
    pub head_offset: u64,
    /// The status code of the head's status line; `None` without a head.
    pub status: Option<u16>,
    /// The head's `Content-Type` up to its parameters (`text/html`), as
    /// the ARC and WARC readers give it; `None` when absent or empty.
    pub mime: Option<Cow<'a, [u8]>>,
    /// The head's `Location`, as written.
    pub redirect: Option<Cow<'a, [u8]>>,
}

/// Whether `protocol` is `HTTP/` and a `digits.digits` version.
fn is_http_version(protocol: &[u8]) -> bool {
    let Some(version) = protocol
        .get(..5)
        .filter(|p| p.eq_ignore_ascii_case(b"HTTP/"))
        .and_then(|_| protocol.get(5..))
    else {
        return false;
    };
    let mut parts = version.splitn(2, |&b| b == b'.');
    let digits =
        |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    digits(parts.next()) && digits(parts.next())
}

/// Whether `head` ends with an empty (blank) line: the head was closed,
/// not cut by the end of the file.
fn ends_with_empty_line(head: &[u8]) -> bool {
    let Some(body) = head.strip_suffix(b"\n") else {
        return false;
    };
    let line_start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
    line_start > 0 && body[line_start..].iter().all(|&b| is_py_space(b))
}

/// Parses a `.meta` file.
///
/// ```
/// let meta = ukvs::nedlib::parse_meta(
///     b"URL: http://example.com/\nHarvest-Time: 20000823054100\n\n\
///       HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=iso-8859-1\r\n\r\n",
/// )
/// .expect("well-formed");
/// assert_eq!(meta.fields.url, b"http://example.com/");
/// assert_eq!(meta.status, Some(200));
/// assert_eq!(meta.mime.as_deref(), Some(&b"text/html"[..]));
/// ```
pub fn parse_meta(bytes: &[u8]) -> Result<Meta<'_>, Error> {
    let (fields, head_start) = parse_fields(bytes, 0, End::EmptyLine)?;
    let rest = &bytes[head_start..];
    let mut meta = Meta {
        fields,
        head: &rest[..0],
        head_offset: head_start as u64,
        status: None,
        mime: None,
        redirect: None,
    };
    // Nothing but blanks after the fields: no head (HTTP/0.9).
    if rest.iter().all(|&b| is_py_space(b)) {
        return Ok(meta);
    }
    let offset = head_start as u64;
    let bad_status = || {
        let line_end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        Error::BadStatusLine {
            offset,
            line: shown(rest[..line_end].trim_ascii_end()),
        }
    };
    let head = http::Head::parse(rest).ok_or_else(bad_status)?;
    let status = head
        .status_code()
        .filter(|_| is_http_version(head.protocol));
    let Some(status) = status else {
        return Err(bad_status());
    };
    let end = head.payload_start;
    if !ends_with_empty_line(&rest[..end]) {
        return Err(Error::UnterminatedHead {
            offset: bytes.len() as u64,
        });
    }
    let trailing = &rest[end..];
    if !trailing.iter().all(|&b| is_py_space(b)) {
        return Err(Error::TrailingBytes {
            offset: (head_start + end) as u64,
            length: trailing.len() as u64,
        });
    }
    meta.head = &rest[..end];
    meta.status = Some(status);
    meta.mime = head.mime_cow().filter(|m| !m.is_empty());
    meta.redirect = head.location;
    Ok(meta)
}

/// Whether a file starting with `first` (a few hundred bytes are enough)
/// is a `.meta` file: it opens with harvester fields, the first a known
/// one (URL, Harvest-Time, IP-Address, Content-Length, MD5), and when the
/// empty line after them is among `first`, URL and Harvest-Time were
/// among them. Tells a `.meta` file from a data file by its bytes, not
/// its name.
pub fn looks_like_meta(first: &[u8]) -> bool {
    starts_with_fields(first, None)
}
