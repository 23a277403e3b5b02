//! MementoMap lookups over a mapped map file, for `mementomap lookup` and
//! the server's `/NAME/mementomap`.

use std::io::Write;
use std::path::Path;

use crate::mementomap::lookup::{DatetimeRange, Map};
use crate::sorted::lines;

use super::lookup::{open_bytes, Bytes, Error, Expected};

/// A MementoMap opened for lookups: the map, and the SURT profile its
/// `!meta` records (URL queries are keyed with it).
pub struct MapFile {
    map: Map<Bytes>,
    surt: crate::surt::Options,
}

impl MapFile {
    /// Opens (maps, or with `no_mmap` reads) the map at `path`;
    /// `keep_query` says it was generated with `--keep-query`.
    pub fn open(path: &Path, no_mmap: bool, keep_query: bool) -> Result<MapFile, Error> {
        let bytes = open_bytes(path, no_mmap)?;
        let name = path.display().to_string();
        super::lookup::searchable(&name, bytes.as_ref(), Expected::Map)?;
        let data = bytes.as_ref();
        let top = &data[..lines::header_end(data)];
        let headers = top
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"!"))
            .map(|l| (name.as_str(), l));
        let surt = crate::capture::surt_profile_in_headers(headers)
            .map_err(Error::Profiles)?
            .unwrap_or_default();
        Ok(MapFile {
            map: Map::new(bytes).keep_query(keep_query),
            surt,
        })
    }

    /// Samples the map's search (worth it for many queries); a map out of
    /// order is refused and searched without samples.
    pub fn sample(&mut self, step: usize) -> Result<(), crate::mementomap::Error> {
        self.map.sample(step)
    }

    /// Whether the map has datetime buckets (a `datetime` key column).
    pub fn has_datetime(&self) -> bool {
        self.map.has_datetime()
    }

    /// The SURT of a query, keyed with the map's profile ([`query_surt`]).
    pub fn query_surt(&self, q: &str) -> Vec<u8> {
        query_surt(q, &self.surt)
    }

    /// Writes the answer line to one query: `key frequency steps query`
    /// for the most specific entry, or `- - - query` when nothing covers
    /// it; an empty query writes nothing. Says whether the query is
    /// covered (a `0` entry covers nothing).
    pub fn answer(
        &self,
        q: &str,
        during: Option<&DatetimeRange>,
        w: &mut Vec<u8>,
    ) -> std::io::Result<bool> {
        if q.trim().is_empty() {
            return Ok(false);
        }
        let surt = self.query_surt(q);
        let hit = match during {
            Some(range) => self.map.lookup_during(&surt, range),
            None => self.map.lookup(&surt),
        };
        let covered = match hit.map_err(std::io::Error::other)? {
            Some(h) => {
                w.extend_from_slice(&h.key);
                write!(w, " {} {} ", h.freq, h.steps)?;
                h.covered()
            }
            None => {
                w.extend_from_slice(b"- - - ");
                false
            }
        };
        w.extend_from_slice(q.trim().as_bytes());
        w.push(b'\n');
        Ok(covered)
    }
}

/// The SURT of a query: SURTs (with `)` and no `://`) as given, URLs
/// canonicalised with `opts`.
pub fn query_surt(q: &str, opts: &crate::surt::Options) -> Vec<u8> {
    let q = q.trim();
    if q.contains(')') && !q.contains("://") {
        return q.as_bytes().to_vec();
    }
    crate::surt::key(q.as_bytes(), opts).0
}
