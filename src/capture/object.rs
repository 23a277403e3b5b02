//! Captures of the seed formats' objects (Kulturarw3, Nedlib) in every
//! profile.
//!
//! An ARC or WARC record is read by the profiles record by record, each
//! the way its reference indexer reads it. An object of a seed format has
//! no reference indexer: its reader has already made the values of the
//! capture model (url, datetime, offset, length, SHA-1 of the body as
//! fetched, mime, status, redirect, ip), and [`Object::write`] writes them
//! in the profile's line form, `-` or nothing where the object has no
//! value, as the profiles do for ARC records.

use std::borrow::Cow;

use super::json::{self, Escape};
use super::{escape_key, needs_key_escape, safe_url, Capture, Cdx11Line, Digest, Profile};
use crate::nedlib::Meta;
use crate::surt;

/// The values of one object of a seed format.
#[derive(Clone, Debug)]
pub struct Object<'a> {
    pub url: &'a [u8],
    pub datetime: Option<[u8; 14]>,
    /// Where the object starts in its file, and its length there.
    pub offset: u64,
    pub length: u64,
    /// SHA-1 of the body as fetched.
    pub sha1: [u8; 20],
    pub mime: Option<Cow<'a, [u8]>>,
    pub status: Option<u16>,
    pub redirect: Option<Cow<'a, [u8]>>,
    pub ip: Option<&'a [u8]>,
    /// More OSLJ fields for the `ukvs` profile (the Kulturarw3 snapshot).
    pub extra: Vec<(&'static str, Cow<'a, [u8]>)>,
}

impl<'a> Object<'a> {
    /// The capture of the Nedlib object `meta` describes, whose data file
    /// holds `data`: the data file holds the body as received (still
    /// chunked or compressed when it was sent so, as the ARC and WARC
    /// readers digest a payload), so the digest is its SHA-1, the offset 0
    /// and the length its size.
    pub fn of_nedlib(meta: &Meta<'a>, data: &[u8]) -> Object<'a> {
        Object::of_nedlib_hashed(meta, data.len() as u64, super::sha1(data))
    }

    /// [`Object::of_nedlib`] for a caller that has hashed the data file
    /// already (many at once, see [`super::hash`]).
    pub fn of_nedlib_hashed(meta: &Meta<'a>, length: u64, sha1: [u8; 20]) -> Object<'a> {
        Object {
            url: meta.fields.url,
            datetime: Some(meta.fields.harvest_time),
            offset: 0,
            length,
            sha1,
            mime: meta.mime.clone(),
            status: meta.status,
            redirect: meta.redirect.clone(),
            ip: meta.fields.ip,
            extra: Vec::new(),
        }
    }

    /// The digest as the indexes write it: `sha1:` and 32 base32 digits.
    pub fn digest(&self) -> String {
        format!("sha1:{}", data_encoding::BASE32.encode(&self.sha1))
    }

    /// Appends the object's line in `profile` (with its `\n`), and returns
    /// why its URL has no SURT key when it has none (the URL is then the
    /// key).
    pub fn write(
        &self,
        profile: Profile,
        surt_opts: &surt::Options,
        filename: &[u8],
        out: &mut Vec<u8>,
    ) -> Option<surt::Error> {
        let url = safe_url(self.url);
        let (mut key, key_error) = surt::key(&url, surt_opts);
        if needs_key_escape(&key) {
            key = escape_key(&key);
        }
        let mut b32 = [0; 32];
        let digest = Digest::Sha1(self.sha1);
        match profile {
            Profile::Ukvs => {
                let cap = Capture {
                    key,
                    datetime: self.datetime,
                    datetime_raw: b"",
                    offset: self.offset,
                    length: self.length,
                    digest,
                    url: url.clone(),
                    mime: self.mime.clone(),
                    status: self.status,
                    redirect: self.redirect.clone(),
                    ip: self.ip.unwrap_or(b""),
                    record_type: None,
                    key_error: None,
                    extra: self.extra.clone(),
                };
                cap.write_ukvs(filename, out);
            }
            Profile::Cdxj => {
                out.extend_from_slice(&key);
                out.push(b' ');
                match &self.datetime {
                    Some(d) => out.extend_from_slice(d),
                    None => out.push(b'-'),
                }
                out.extend_from_slice(b" {\"url\": ");
                json::write_str(out, &url, true, Escape::Ascii);
                if let Some(m) = &self.mime {
                    out.extend_from_slice(b", \"mime\": ");
                    json::write_str(out, m, true, Escape::Ascii);
                }
                if let Some(s) = self.status {
                    out.extend_from_slice(b", \"status\": \"");
                    out.extend_from_slice(itoa::Buffer::new().format(s).as_bytes());
                    out.push(b'"');
                }
                out.extend_from_slice(b", \"digest\": \"sha1:");
                out.extend_from_slice(digest.base32(&mut b32));
                out.extend_from_slice(b"\", \"length\": \"");
                out.extend_from_slice(itoa::Buffer::new().format(self.length).as_bytes());
                out.extend_from_slice(b"\", \"offset\": \"");
                out.extend_from_slice(itoa::Buffer::new().format(self.offset).as_bytes());
                out.extend_from_slice(b"\", \"filename\": ");
                json::write_str(out, filename, true, Escape::Ascii);
                out.extend_from_slice(b"}\n");
            }
            Profile::Cdx11 => {
                let status = self
                    .status
                    .map(|s| itoa::Buffer::new().format(s).to_owned());
                let mime: &[u8] = match &self.mime {
                    Some(m) if !m.is_empty() && m.is_ascii() => m,
                    _ => b"unk",
                };
                Cdx11Line {
                    key: &key,
                    datetime: self.datetime,
                    url: &url,
                    mime,
                    status: status.as_deref().map(str::as_bytes),
                    digest: digest.base32(&mut b32),
                    flags: b"",
                    length: self.length,
                    offset: self.offset,
                }
                .write(filename, out);
            }
        }
        key_error
    }
}
