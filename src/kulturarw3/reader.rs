//! Objects one by one out of a byte slice, with resynchronisation.
//!
//! ```text
//! file   = *( ws | object | junk )
//! object = main-header [empty-line] preamble
//!          1*( delimiter part ) close-delimiter
//! ```
//!
//! The reader stands at a position; whitespace there is skipped. A
//! `MIME-version:` line is parsed as an object; anything else is junk,
//! skipped up to the next object start ([`mime::is_object_start`]) and
//! reported once as [`Error::Garbage`]. An object whose frame is damaged
//! is reported and skipped up to the next object start after its first
//! line, so the objects after it are kept.

use std::collections::VecDeque;

use super::mime::{self, Delimiters, Starts};
use super::{epoch, Error, Object, Part};

/// Iterator over the objects of one file (all of it, typically a memory
/// map): `Ok` for each object in file order, `Err` for each piece of
/// damage. An error that leaves its object whole
/// ([`Error::keeps_object`]) comes right after that object.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    verify_md5: bool,
    starts: Starts,
    /// Errors about the object just yielded; a handful at most.
    pending: VecDeque<Error>,
}

/// The objects of `data`: `Reader::new(data)`.
pub fn objects(data: &[u8]) -> Reader<'_> {
    Reader::new(data)
}

impl<'a> Reader<'a> {
    /// A reader over the whole file, checking `HTTP-Content-MD5`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader {
            data,
            pos: 0,
            verify_md5: true,
            starts: Starts::new(),
            pending: VecDeque::new(),
        }
    }

    /// Whether to compute the MD5 of each object's content and report
    /// [`Error::Md5Mismatch`] (on by default; the MD5 is the costliest
    /// step after the SHA-1 the index needs anyway).
    pub fn verify_md5(mut self, on: bool) -> Reader<'a> {
        self.verify_md5 = on;
        self
    }

    /// Where the next object or junk is looked for.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// Parses the object whose `MIME-version:` line starts at `start`.
    /// `Ok` with the object, or `Err` with the damage and where to go on.
    fn parse(&mut self, start: usize) -> Result<Object<'a>, (Error, usize)> {
        let data = self.data;
        let offset = start as u64;
        let (_, first_end) = mime::line_at(data, start);
        // Nothing of this object lies past the next object start: finding
        // it first bounds every later scan, so that a file of damaged
        // objects is still read in linear time.
        let next_start = self.starts.first(data, first_end, data.len());
        let limit = next_start.unwrap_or(data.len());
        let data = &data[..limit];
        let cut_short = || match next_start {
            Some(n) => (
                Error::MissingCloseDelimiter {
                    offset,
                    length: (n - start) as u64,
                },
                n,
            ),
            None => (
                Error::Truncated {
                    offset,
                    length: (limit - start) as u64,
                },
                limit,
            ),
        };

        // The main header: up to an empty line, or up to the first
        // delimiter when a writer left the empty line out.
        let mut delims: Option<(&'a [u8], Delimiters<'a>)> = None;
        let mut pos = first_end;
        let (header_end, body_start) = loop {
            if pos >= data.len() {
                return Err(cut_short());
            }
            if pos - start > mime::MAX_HEADER {
                let err = Error::BadHeader {
                    offset,
                    length: (limit - start) as u64,
                    reason: "no empty line ends it within 64 KiB",
                };
                return Err((err, limit));
            }
            let (line, next) = mime::line_at(data, pos);
            if mime::is_blank(line) {
                break (pos, next);
            }
            if delims
                .as_ref()
                .is_some_and(|(_, d)| d.at(data, pos).is_some())
            {
                break (pos, pos);
            }
            if let Some((name, value)) = mime::split_field(line) {
                if delims.is_none() && name.eq_ignore_ascii_case(b"Content-Type") {
                    delims = mime::boundary_param(value).map(|b| (b, Delimiters::new(b)));
                }
            }
            pos = next;
        };
        let main_header = &data[start..header_end];
        let Some((boundary, delims)) = delims else {
            let err = Error::BadHeader {
                offset,
                length: (limit - start) as u64,
                reason: "no Content-Type with a multipart boundary",
            };
            return Err((err, limit));
        };
        // A writer's line break before each delimiter is CRLF when its
        // first line ends that way; in an LF object a CR before the LF is
        // content (binary content may end with one).
        let crlf = data[start..first_end].ends_with(b"\r\n");

        let mut parts = Parts::default();
        let mut close = None;
        let mut delim = delims.next(data, body_start);
        while let Some(d) = delim {
            if d.close {
                close = Some(d);
                break;
            }
            let next = delims.next(data, d.end);
            if let Some(n) = next {
                parts.add(data, part_range(data, d.end, n.start, crlf));
            }
            delim = next;
        }
        let Some(close) = close else {
            return Err(cut_short());
        };
        let end = close.end;

        // The archive fields: in the main header (the seed's example
        // names it `HTTP-part: Archive-Info`), else in an Archive-Info
        // part (the three-part layout).
        let archive_part = parts.archive_info.map(|r| r.slice(data));
        let lookup = |name: &[u8]| {
            mime::field(main_header, name, false)
                .or_else(|| archive_part.and_then(|p| mime::field(p, name, false)))
        };
        let url = lookup(b"HTTP-URL").filter(|u| !u.is_empty());
        let Some(url) = url else {
            return Err((
                Error::MissingField {
                    offset,
                    field: "HTTP-URL",
                },
                end,
            ));
        };
        let Some(content_part) = parts.content else {
            let err = Error::MissingPart {
                offset,
                part: Part::Content,
            };
            return Err((err, end));
        };
        let archive_info = match archive_part {
            Some(p) if mime::field(main_header, b"HTTP-URL", false).is_none() => p,
            _ => main_header,
        };
        let time_value = lookup(b"HTTP-archive-time");
        let archive_time = time_value.and_then(epoch::parse);
        let header_info = parts.header_info.map(|r| r.body(data));
        let (status, info_mime, redirect) = match header_info {
            Some(h) => (
                mime::status_code(mime::line_at(h, 0).0),
                mime::field(h, b"Content-Type", true).and_then(mime::media_type),
                mime::field(h, b"Location", true)
                    .map(mime::trim)
                    .filter(|v| !v.is_empty()),
            ),
            None => (None, None, None),
        };
        let mime = info_mime.or_else(|| {
            mime::field(content_part.head(data), b"Content-Type", false).and_then(mime::media_type)
        });
        let mut obj = Object {
            offset,
            length: (end - start) as u64,
            url,
            archive_time,
            datetime: archive_time.and_then(epoch::datetime),
            content_md5: lookup(b"HTTP-Content-MD5"),
            ip: lookup(b"HTTP-IP-addr").filter(|v| !v.is_empty()),
            archiver: lookup(b"HTTP-www-archiver"),
            mime,
            status,
            redirect,
            content: content_part.body(data),
            header_info,
            main_header,
            archive_info,
            boundary,
            md5_match: None,
        };

        // Damage to fields: the object is whole, so it is kept and the
        // errors follow it.
        if header_info.is_none() {
            self.pending.push_back(Error::MissingPart {
                offset,
                part: Part::HeaderInfo,
            });
        }
        if archive_time.is_none() {
            self.pending.push_back(Error::BadArchiveTime {
                offset,
                value: shown(time_value.unwrap_or_default()),
            });
        }
        if let Some(v) = obj.content_md5 {
            match super::decode_md5(v) {
                None => self.pending.push_back(Error::BadContentMd5 {
                    offset,
                    value: shown(v),
                }),
                Some(declared) if self.verify_md5 => {
                    let computed = obj.md5();
                    obj.md5_match = Some(declared == computed);
                    if declared != computed {
                        self.pending.push_back(Error::Md5Mismatch {
                            offset,
                            declared: super::hex(&declared),
                            computed: super::hex(&computed),
                        });
                    }
                }
                Some(_) => {}
            }
        }
        Ok(obj)
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Object<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending.pop_front() {
            return Some(Err(e));
        }
        let data = self.data;
        let start = self.pos
            + data
                .get(self.pos..)?
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(data.len() - self.pos);
        if start >= data.len() {
            self.pos = data.len();
            return None;
        }
        if !mime::starts_with_ci(&data[start..], b"MIME-version:") {
            let next = self
                .starts
                .first(data, start, data.len())
                .unwrap_or(data.len());
            self.pos = next;
            return Some(Err(Error::Garbage {
                offset: start as u64,
                length: (next - start) as u64,
            }));
        }
        Some(match self.parse(start) {
            Ok(obj) => {
                self.pos = start + obj.length as usize;
                Ok(obj)
            }
            Err((err, resume)) => {
                // Always move on, so that no input loops.
                self.pos = resume.max(start + 1);
                Err(err)
            }
        })
    }
}

/// Where a part lies in the data: headers from `from`, body from `body`
/// up to `end`.
#[derive(Clone, Copy)]
struct PartRange {
    from: usize,
    body: usize,
    end: usize,
}

impl PartRange {
    fn slice(self, data: &[u8]) -> &[u8] {
        &data[self.from..self.end]
    }

    fn head(self, data: &[u8]) -> &[u8] {
        &data[self.from..self.body]
    }

    fn body(self, data: &[u8]) -> &[u8] {
        &data[self.body..self.end]
    }
}

/// The parts the reader keeps, by their `HTTP-part` name.
#[derive(Default)]
struct Parts {
    archive_info: Option<PartRange>,
    header_info: Option<PartRange>,
    content: Option<PartRange>,
}

impl Parts {
    /// Files a part under its `HTTP-part` name; the first of a name wins,
    /// unnamed and other parts (`x-...`) are passed over.
    fn add(&mut self, data: &[u8], part: PartRange) {
        let Some(name) = mime::field(part.head(data), b"HTTP-part", false) else {
            return;
        };
        let slot = if name.eq_ignore_ascii_case(b"Content") {
            &mut self.content
        } else if name.eq_ignore_ascii_case(b"Header-Info") {
            &mut self.header_info
        } else if name.eq_ignore_ascii_case(b"Archive-Info") {
            &mut self.archive_info
        } else {
            return;
        };
        if slot.is_none() {
            *slot = Some(part);
        }
    }
}

/// The part in `data[from..delim]`, where `delim` is the next delimiter's
/// start: the line break before it belongs to the delimiter (RFC 2046),
/// so it is taken off the body. The headers end at the first empty line;
/// a part without one is all headers.
fn part_range(data: &[u8], from: usize, delim: usize, crlf: bool) -> PartRange {
    let mut end = delim;
    if end > from && data[end - 1] == b'\n' {
        end -= 1;
        if crlf && end > from && data[end - 1] == b'\r' {
            end -= 1;
        }
    }
    let mut pos = from;
    while pos < end {
        let (line, next) = mime::line_at(&data[..end], pos);
        if mime::is_blank(line) {
            return PartRange {
                from,
                body: next,
                end,
            };
        }
        pos = next;
    }
    PartRange {
        from,
        body: end,
        end,
    }
}

/// A field value for an error message, cut to a readable length.
fn shown(v: &[u8]) -> String {
    let cut = &v[..v.len().min(80)];
    String::from_utf8_lossy(cut).into_owned()
}
