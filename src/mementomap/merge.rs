//! K-way merge of sorted record streams, summing the records of one key.
//!
//! Used to merge maps of shards (`ukvs mementomap merge`) and, inside
//! generation, to fold late records back into the in-order stream.
//!
//! URI-M counts of different shards never overlap (a memento lives in one
//! shard), so they add exactly. URI-R counts may: the same URL can be
//! captured in two shards. Unless the caller asserts that the shards are
//! key-disjoint, summed URI-R counts become upper bounds (`-`). Wildcard
//! keys of different shards are kept side by side; lookup picks the most
//! specific.

use super::record::Record;
use super::Error;

/// One sorted input stream.
pub type Source = Box<dyn Iterator<Item = Result<Record, Error>>>;

/// Merges sorted streams into one strictly increasing stream.
pub struct Merger {
    sources: Vec<Source>,
    heads: Vec<Option<Record>>,
    overlapping: bool,
    started: bool,
    error: Option<Error>,
    counts: Vec<u64>,
    /// Key of the record last taken from each source, for the order check.
    last: Vec<Vec<u8>>,
}

impl Merger {
    /// Merges `sources`; `disjoint` asserts no URL is in two sources.
    pub fn new(sources: Vec<Source>, disjoint: bool) -> Merger {
        let n = sources.len();
        Merger {
            sources,
            heads: (0..n).map(|_| None).collect(),
            overlapping: !disjoint,
            started: false,
            error: None,
            counts: vec![0; n],
            last: vec![Vec::new(); n],
        }
    }

    /// Pulls the next record of source `i` into its head slot, checking
    /// that the source is sorted.
    fn advance(&mut self, i: usize) -> Result<(), Error> {
        let next = match self.sources[i].next() {
            None => None,
            Some(r) => Some(r?),
        };
        if let Some(next) = &next {
            if self.counts[i] > 0 && next.key < self.last[i] {
                return Err(Error::Unsorted {
                    line: self.counts[i] + 1,
                    previous: String::from_utf8_lossy(&self.last[i]).into_owned(),
                    key: String::from_utf8_lossy(&next.key).into_owned(),
                });
            }
            self.last[i].clear();
            self.last[i].extend_from_slice(&next.key);
        }
        self.counts[i] += 1;
        self.heads[i] = next;
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<Record>, Error> {
        if !self.started {
            self.started = true;
            for i in 0..self.sources.len() {
                self.advance(i)?;
            }
        }
        // The smallest head; k is small (shards), so a scan beats a heap.
        let mut min: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(h) = h {
                if min.map_or(true, |m| {
                    self.heads[m].as_ref().is_some_and(|mh| h.key < mh.key)
                }) {
                    min = Some(i);
                }
            }
        }
        let Some(first) = min else {
            return Ok(None);
        };
        let Some(mut out) = self.heads[first].take() else {
            return Ok(None);
        };
        self.advance(first)?;
        // Fold every record with the same key, from any source (a source
        // may itself repeat a key: late records of generation do).
        loop {
            let mut found = false;
            for i in 0..self.heads.len() {
                while self.heads[i].as_ref().is_some_and(|h| h.key == out.key) {
                    if let Some(h) = self.heads[i].take() {
                        // Repeats inside one source are disjoint runs of
                        // one generation; across sources they may overlap.
                        let overlap = self.overlapping && i != first;
                        out.absorb(&h, overlap);
                        self.advance(i)?;
                        found = true;
                    }
                }
            }
            if !found {
                break;
            }
        }
        Ok(Some(out))
    }
}

impl Iterator for Merger {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.error.is_some() {
            return self.error.take().map(Err);
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                // Report once, then end.
                self.heads.iter_mut().for_each(|h| *h = None);
                self.sources.clear();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(lines: &[&str]) -> Source {
        let v: Vec<Result<Record, Error>> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| Record::parse(l.as_bytes(), i as u64 + 1))
            .collect();
        Box::new(v.into_iter())
    }

    fn merged(sources: Vec<Source>, disjoint: bool) -> Vec<String> {
        Merger::new(sources, disjoint)
            .map(|r| String::from_utf8(r.unwrap().to_line()).unwrap())
            .collect()
    }

    #[test]
    fn sums_equal_keys_with_overlap_rules() {
        let a = src(&["com,a)/ 2/1", "com,b)/ 1/1"]);
        let b = src(&["com,a)/ 3/1", "com,c)/ 1/1"]);
        assert_eq!(
            merged(vec![a, b], false),
            ["com,a)/ 5/2-\n", "com,b)/ 1/1\n", "com,c)/ 1/1\n"]
        );
        let a = src(&["com,a)/ 2/1"]);
        let b = src(&["com,a)/ 3/1"]);
        assert_eq!(merged(vec![a, b], true), ["com,a)/ 5/2\n"]);
    }

    #[test]
    fn detects_unsorted_sources() {
        let a = src(&["com,b)/ 1", "com,a)/ 1"]);
        let out: Vec<_> = Merger::new(vec![a], true).collect();
        assert!(out.iter().any(|r| matches!(r, Err(Error::Unsorted { .. }))));
    }

    #[test]
    fn empty_and_single_sources() {
        assert!(merged(vec![], true).is_empty());
        assert_eq!(merged(vec![src(&[]), src(&["k 1"])], true), ["k 1\n"]);
    }
}
