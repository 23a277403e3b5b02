//! The harvester fields: the `Name: value` lines that open a `.meta` file
//! and follow the `Path:` line of an access-list entry.
//!
//! Both places hold the same fields, so one parser reads both. Lines end
//! with LF; a CR before it is dropped, since a file copied through a
//! CRLF system should not turn every value into a mismatch. Names are
//! matched ignoring ASCII case; values lose their surrounding blanks.

use super::error::{shown, Error};

/// The harvester's fields of one object, borrowed from the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    /// `URL`: the URL as the harvester wrote it (never empty). The data
    /// file is named by the MD5 of exactly these bytes.
    pub url: &'a [u8],
    /// `Harvest-Time`: 14 digits `YYYYMMDDhhmmss`, UTC. Digits only are
    /// checked: an impossible date is reported as written, as the other
    /// readers do.
    pub harvest_time: [u8; 14],
    /// `IP-Address`, as written; `None` when absent or empty.
    pub ip: Option<&'a [u8]>,
    /// `Content-Length`: the size of the data file.
    pub content_length: Option<u64>,
    /// `MD5` of the data file.
    pub md5: Option<[u8; 16]>,
    /// Any other fields, in the order written.
    pub extra: Vec<(&'a [u8], &'a [u8])>,
}

/// The known field names, as errors name them, and their positions.
const KNOWN: [&str; 5] = ["URL", "Harvest-Time", "IP-Address", "Content-Length", "MD5"];
const URL: usize = 0;
const HARVEST_TIME: usize = 1;
const IP_ADDRESS: usize = 2;
const CONTENT_LENGTH: usize = 3;

/// How a field block may end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// With an empty line, always (a `.meta` file: the head follows).
    EmptyLine,
    /// With an empty line or the end of the file (the last access-list
    /// entry).
    EmptyLineOrEof,
}

/// One line of `bytes` starting at `pos`: the line without its `\n` and
/// a CR before it, where the next line starts, and whether it had a `\n`.
pub(crate) fn line_at(bytes: &[u8], pos: usize) -> (&[u8], usize, bool) {
    let rest = bytes.get(pos..).unwrap_or_default();
    match memchr::memchr(b'\n', rest) {
        Some(i) => {
            let line = &rest[..i];
            (line.strip_suffix(b"\r").unwrap_or(line), pos + i + 1, true)
        }
        None => (rest, bytes.len(), false),
    }
}

fn trim_blanks(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |i| i + 1);
    &s[start..end]
}

/// A `Name: value` line split into name and trimmed value; `None` when the
/// line is not one. A name is visible ASCII without `:`, as in HTTP; a
/// blank before the colon is tolerated.
pub(crate) fn split_field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = memchr::memchr(b':', line)?;
    let name = trim_blanks(&line[..colon]);
    let is_token = !name.is_empty() && name.iter().all(|&b| (0x21..=0x7e).contains(&b));
    // A leading blank would make the line a continuation elsewhere; here
    // it makes it no field.
    let starts_clean = line.first().is_some_and(|&b| b != b' ' && b != b'\t');
    (is_token && starts_clean).then(|| (name, trim_blanks(&line[colon + 1..])))
}

/// The index in [`KNOWN`] of the name `name` stands for, if any.
fn known(name: &[u8]) -> Option<usize> {
    KNOWN
        .iter()
        .position(|k| name.eq_ignore_ascii_case(k.as_bytes()))
}

/// 32 hex digits (either case) as 16 bytes.
pub(crate) fn parse_md5_hex(s: &[u8]) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    if s.len() != 32 {
        return None;
    }
    data_encoding::HEXLOWER_PERMISSIVE
        .decode_mut(s, &mut out)
        .ok()
        .map(|_| out)
}

/// An MD5 as the 32 lower-case hex digits of file names.
pub fn md5_hex(md5: &[u8; 16]) -> String {
    data_encoding::HEXLOWER.encode(md5)
}

/// A decimal byte count; leading zeros are allowed, a sign is not.
fn parse_length(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Reads the field block of `bytes` that starts at `start`. Returns the
/// fields and where the bytes after the block start (after its empty line,
/// or the end of the file).
pub(crate) fn parse_fields(
    bytes: &[u8],
    start: usize,
    end: End,
) -> Result<(Fields<'_>, usize), Error> {
    let mut fields = Fields::default();
    let mut seen = [false; KNOWN.len()];
    let mut pos = start;
    let block_end = loop {
        if pos >= bytes.len() {
            // The file ends where an empty line or another field should be.
            match end {
                End::EmptyLine => return Err(Error::MissingEmptyLine { offset: pos as u64 }),
                End::EmptyLineOrEof => break pos,
            }
        }
        let (line, next, has_lf) = line_at(bytes, pos);
        let offset = pos as u64;
        if line.is_empty() {
            break next;
        }
        if !has_lf && end == End::EmptyLine {
            // A last line with no LF: the file was cut inside the fields.
            return Err(Error::MissingEmptyLine {
                offset: bytes.len() as u64,
            });
        }
        let Some((name, value)) = split_field(line) else {
            let http = line.len() >= 5 && line[..5].eq_ignore_ascii_case(b"HTTP/");
            return Err(if http {
                Error::MissingEmptyLine { offset }
            } else {
                Error::BadFieldLine {
                    offset,
                    line: shown(line),
                }
            });
        };
        let Some(slot) = known(name) else {
            fields.extra.push((name, value));
            pos = next;
            continue;
        };
        let k = KNOWN[slot];
        if std::mem::replace(&mut seen[slot], true) {
            return Err(Error::RepeatedField { offset, name: k });
        }
        match slot {
            URL => {
                if value.is_empty() {
                    return Err(Error::EmptyField { offset, name: k });
                }
                fields.url = value;
            }
            HARVEST_TIME => {
                if value.len() != 14 || !value.iter().all(u8::is_ascii_digit) {
                    return Err(Error::BadHarvestTime {
                        offset,
                        value: shown(value),
                    });
                }
                fields.harvest_time.copy_from_slice(value);
            }
            IP_ADDRESS => fields.ip = (!value.is_empty()).then_some(value),
            CONTENT_LENGTH => {
                fields.content_length =
                    Some(parse_length(value).ok_or_else(|| Error::BadContentLength {
                        offset,
                        value: shown(value),
                    })?);
            }
            // MD5
            _ => {
                fields.md5 = Some(parse_md5_hex(value).ok_or_else(|| Error::BadMd5 {
                    offset,
                    value: shown(value),
                })?);
            }
        }
        pos = next;
    };
    // Missing fields are named at the end of the block, where they were
    // looked for last.
    for i in [URL, HARVEST_TIME] {
        if !seen[i] {
            return Err(Error::MissingField {
                offset: pos as u64,
                name: KNOWN[i],
            });
        }
    }
    Ok((fields, block_end))
}

/// Whether `first` (the first bytes of a file, any number) starts with a
/// harvester field block: its first line is a field named `opening`, or
/// a known harvester field when `opening` is `None`, and every complete
/// line up to the first empty line is a field line. When that empty line
/// is among `first`, URL and Harvest-Time must have been seen.
pub(crate) fn starts_with_fields(first: &[u8], opening: Option<&[u8]>) -> bool {
    let mut seen = [false; 2];
    let mut lines = 0;
    let mut pos = 0;
    while pos < first.len() {
        let (line, next, has_lf) = line_at(first, pos);
        if line.is_empty() && has_lf {
            return lines > 0 && seen == [true, true];
        }
        let Some((name, _)) = split_field(line) else {
            // A line cut by the end of `first` before its colon may still
            // be a field.
            return !has_lf && lines > 0;
        };
        if lines == 0 {
            let opens = match opening {
                Some(o) => name.eq_ignore_ascii_case(o),
                None => known(name).is_some(),
            };
            if !opens {
                return false;
            }
        }
        match known(name) {
            Some(URL) => seen[0] = true,
            Some(HARVEST_TIME) => seen[1] = true,
            _ => {}
        }
        lines += 1;
        pos = next;
    }
    lines > 0
}
