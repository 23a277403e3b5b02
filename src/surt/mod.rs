//! URL -> canonical URL -> SURT key, byte-identical to Python `surt` 0.3.1.
//!
//! The reference is what pywb and cdxj-indexer call: `surt.surt(url)` with
//! default options, on CPython 3.11. Every index line, MementoMap key and
//! lookup goes through here, so the rule is "the reference's bytes, quirks
//! included" (see FORMATS.md, "SURT keys", for the list of quirks).
//!
//! Map of the module:
//! * [`surt`], [`key`], [`key_into`]: entry points; [`Options`] selects a
//!   profile (the reference's keyword options), [`Error`] says why the
//!   reference would raise.
//! * `parse`: the reference's own URL splitter (not WHATWG).
//! * `escape`: repeated percent-decoding, minimal re-encoding.
//! * `host`, `idna2003` (+ generated `nameprep_tables`): host
//!   canonicalisation, IDNA 2003, inet_aton-style IPv4, `www` stripping.
//! * `path`, `query`: dot segments, session ids, the (key, value) sort.
//!
//! Everything works on bytes: URLs in archives are not always UTF-8.
//!
//! ```
//! use ukvs::surt::{surt, Options};
//! let key = surt(b"http://www.Example.com:80/a/../B?b=2&a=1#top", &Options::default()).unwrap();
//! assert_eq!(key, b"com,example)/b?a=1&b=2");
//! ```

use std::cell::RefCell;

mod escape;
mod host;
mod idna2003;
#[rustfmt::skip]
#[allow(clippy::all)]
mod nameprep_tables;
mod parse;
mod path;
mod query;

/// Output options of the reference `surt.surt()`; `Default` is the
/// reference's defaults (what pywb and cdxj-indexer use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Prefix the key with `scheme://(` (`scheme:(` for `dns`).
    pub with_scheme: bool,
    /// Keep a comma after the last host label (`com,example,)/`).
    pub trailing_comma: bool,
    /// Reverse the octets of IPv4 hosts like host names.
    pub reverse_ipaddr: bool,
    /// Strip one leading `www\d*` label.
    pub host_massage: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            with_scheme: false,
            trailing_comma: false,
            reverse_ipaddr: true,
            host_massage: true,
        }
    }
}

impl Options {
    /// A short, stable description of the profile for an index's `!meta`:
    /// `surt 0.3.1 defaults`, or the defaults plus the reference keyword
    /// arguments that differ, e.g.
    /// `surt 0.3.1 with_scheme=True host_massage=False`.
    pub fn profile_name(&self) -> String {
        let mut name = String::from("surt 0.3.1");
        let flags = [
            (self.with_scheme, "with_scheme=True"),
            (self.trailing_comma, "trailing_comma=True"),
            (!self.reverse_ipaddr, "reverse_ipaddr=False"),
            (!self.host_massage, "host_massage=False"),
        ];
        let mut any = false;
        for (on, text) in flags {
            if on {
                name.push(' ');
                name.push_str(text);
                any = true;
            }
        }
        if !any {
            name.push_str(" defaults");
        }
        name
    }

    /// The command-line flags of `ukvs surt` that select this profile.
    pub fn cli_flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.with_scheme {
            flags.push("--with-scheme");
        }
        if self.trailing_comma {
            flags.push("--trailing-comma");
        }
        if !self.reverse_ipaddr {
            flags.push("--no-reverse-ipaddr");
        }
        if !self.host_massage {
            flags.push("--keep-www");
        }
        flags
    }
}

/// Why the reference raises on a URL. The key is then the URL itself
/// (cdxj-indexer's rule, see [`key`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL is empty after trimming whitespace (the reference fails with
    /// an `AttributeError`). Skip the record or fix the URL field.
    #[error("URL is only whitespace")]
    Blank,
    /// The port is not a decimal number in 0-65535 (urllib's
    /// `ValueError`); the URL is malformed at its source.
    #[error("invalid port {port:?}: not a number in 0-65535")]
    Port {
        /// The port text as found (lossy UTF-8).
        port: String,
    },
    /// A number longer than Python converts (4300 digits): an all-digit
    /// host or a port.
    #[error("{what} has {digits} digits, more than Python's 4300-digit limit")]
    TooManyDigits {
        /// `host` or `port`.
        what: &'static str,
        /// How many digits there were.
        digits: usize,
    },
}

/// Reusable buffers; one per thread, so that warm calls allocate nothing.
#[derive(Default)]
struct Scratch {
    clean: Vec<u8>,
    host: Vec<u8>,
    host_scratch: host::Scratch,
    decoded: Vec<u8>,
    path: Vec<u8>,
    query: Vec<u8>,
    sorted: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    pieces: Vec<(usize, usize, usize)>,
    eqs: Vec<usize>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The SURT key of `url` exactly as the reference computes it, or the error
/// where the reference raises.
pub fn surt(url: &[u8], opts: &Options) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(url.len() + 8);
    key_into(url, opts, &mut out)?;
    Ok(out)
}

/// cdxj-indexer's rule: the key, or the URL unchanged with the reason when
/// the reference raises.
pub fn key(url: &[u8], opts: &Options) -> (Vec<u8>, Option<Error>) {
    match surt(url, opts) {
        Ok(k) => (k, None),
        Err(e) => (url.to_vec(), Some(e)),
    }
}

/// Appends the SURT key of `url` to `out`: the allocation-free form of
/// [`surt`] for indexers that reuse one output buffer per thread.
///
/// On error nothing is appended; callers following cdxj-indexer append the
/// URL itself.
pub fn key_into(url: &[u8], opts: &Options, out: &mut Vec<u8>) -> Result<(), Error> {
    let mark = out.len();
    let result = SCRATCH
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => build(url, opts, out, &mut scratch),
            // Only reachable through re-entrancy; use fresh buffers.
            Err(_) => build(url, opts, out, &mut Scratch::default()),
        })
        // The thread-local is gone only during thread teardown.
        .unwrap_or_else(|_| build(url, opts, out, &mut Scratch::default()));
    if result.is_err() {
        out.truncate(mark);
    }
    result
}

/// The whole pipeline: parse, Google canonicaliser, IA canonicaliser,
/// output formatting.
fn build(url: &[u8], opts: &Options, out: &mut Vec<u8>, s: &mut Scratch) -> Result<(), Error> {
    // Both tests run on the raw input, before any trimming: ` filedesc:x`
    // is an ordinary URL, and only a truly empty input is `-`.
    if url.is_empty() {
        out.push(b'-');
        return Ok(());
    }
    if url.starts_with(b"filedesc") {
        out.extend_from_slice(url);
        return Ok(());
    }
    let start = parse::clean(url, &mut s.clean)?;
    let parts = parse::split(s.clean.get(start..).unwrap_or_default())?;

    // Host: decode, IDNA, dots, IPv4, escape, lowercase; may vanish.
    s.host.clear();
    if let Some(raw) = parts.host {
        host::canonicalize(raw, &mut s.host, &mut s.host_scratch)?;
    }
    // A host can vanish (`http://.../x`): everything below then treats the
    // URL as host-less, including skipping dot-segment resolution.
    let has_host = !s.host.is_empty();

    // Path: decode, normalise (only with a host), escape, then the IA
    // steps: lowercase, ASP.NET session ids, trailing slash.
    s.path.clear();
    let raw_path = parts.path.unwrap_or_default();
    if has_host && escape::find_byte(b'%', raw_path).is_none() && path::is_normal(raw_path) {
        // Fast path for the common case: nothing to decode or normalise.
        escape::escape_once(raw_path, &mut s.path);
    } else if has_host || parts.path.is_some() {
        s.decoded.clear();
        escape::unescape_repeatedly(raw_path, &mut s.decoded);
        if has_host {
            s.sorted.clear();
            path::normalize(&s.decoded, &mut s.ranges, &mut s.sorted);
            escape::escape_once(&s.sorted, &mut s.path);
        } else {
            escape::escape_once(&s.decoded, &mut s.path);
        }
    }
    let has_path = !s.path.is_empty();
    if has_path {
        s.path.make_ascii_lowercase();
        path::strip_session_id(&mut s.path);
        if s.path.len() > 1 && s.path.last() == Some(&b'/') {
            s.path.pop();
        }
    }

    // Query: decode, escape, session ids, lowercase, sort; empty -> none.
    s.query.clear();
    let mut has_query = false;
    if let Some(raw) = parts.query {
        s.decoded.clear();
        escape::unescape_repeatedly(raw, &mut s.decoded);
        s.sorted.clear();
        escape::escape_once(&s.decoded, &mut s.sorted);
        query::strip_session_ids(&mut s.sorted, &mut s.eqs);
        s.sorted.make_ascii_lowercase();
        query::sort(&s.sorted, &mut s.pieces, &mut s.query);
        has_query = !s.query.is_empty();
    }

    // The massage looks at the exact scheme bytes: `DNS:` is massaged.
    let host_bytes: &[u8] = if has_host && opts.host_massage && parts.scheme != b"dns" {
        host::massage(&s.host)
    } else {
        &s.host
    };
    // Only http:80 and https:443 are defaults; `ftp:21` stays.
    let port = match parts.port {
        Some(p) if is_default_port(parts.scheme, p) => None,
        other => other,
    };

    // Output, as the reference's `geturl_bytes(surt=True, ...)`.
    if opts.with_scheme {
        out.extend_from_slice(parts.scheme);
        out.push(b':');
        if has_host {
            if parts.scheme != b"dns" {
                out.extend_from_slice(b"//");
            }
            out.push(b'(');
        }
    } else if !has_host {
        out.extend_from_slice(parts.scheme);
        out.push(b':');
    }
    if has_host {
        host::write_surt(host_bytes, opts.reverse_ipaddr, out);
        if let Some(p) = port {
            use std::io::Write;
            // Writing into a Vec cannot fail.
            let _ = write!(out, ":{p}");
        }
        if opts.trailing_comma {
            out.push(b',');
        }
        out.push(b')');
    }
    // A query needs a path before it; a host-less URL with no path and no
    // query ends at `scheme:`.
    if has_path {
        out.extend_from_slice(&s.path);
    } else if has_query {
        out.push(b'/');
    }
    if has_query {
        out.push(b'?');
        out.extend_from_slice(&s.query);
    }
    Ok(())
}

/// 80 for `http`, 443 for `https`, compared case-insensitively.
fn is_default_port(scheme: &[u8], port: u16) -> bool {
    (port == 80 && scheme.eq_ignore_ascii_case(b"http"))
        || (port == 443 && scheme.eq_ignore_ascii_case(b"https"))
}
