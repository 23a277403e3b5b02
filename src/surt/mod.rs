//! URL -> canonical URL -> SURT key, byte-identical to Python `surt` 0.3.1.
//!
//! Interface fixed for the rest of the crate; the canonicaliser lives in
//! submodules.

/// Output options of the reference `surt.surt()`; `Default` is the
/// reference's defaults (what pywb and cdxj-indexer use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Prefix the key with `scheme://(`.
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

/// Why the reference would raise on a URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL cannot be canonicalised.
    #[error("cannot canonicalise URL: {reason}")]
    Invalid { reason: String },
}

/// The SURT key of `url` exactly as the reference computes it, or the error
/// where the reference raises.
pub fn surt(url: &[u8], opts: &Options) -> Result<Vec<u8>, Error> {
    let _ = (url, opts);
    Err(Error::Invalid {
        reason: "not implemented".into(),
    })
}

/// cdxj-indexer's rule: the key, or the URL unchanged with the reason when
/// the reference raises.
pub fn key(url: &[u8], opts: &Options) -> (Vec<u8>, Option<Error>) {
    match surt(url, opts) {
        Ok(k) => (k, None),
        Err(e) => (url.to_vec(), Some(e)),
    }
}
