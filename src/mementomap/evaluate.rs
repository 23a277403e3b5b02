//! How good a map is: its relative cost and the quality of the presence
//! decisions it makes, as the MementoMap paper measured them.
//!
//! Relative cost = data lines of the map / distinct URI-Rs of the archive
//! (the size of a full URI list). For each query the truth is whether the
//! archive's uncompacted map (one line per URI key) has the exact key; the
//! decision is whether the map covers it. A positive decision on a URI the
//! archive lacks is a false positive (a wasted request); a negative one on
//! a URI it holds is a false negative (a lost memento), which compaction
//! must never cause.

use super::key::map_key;
use super::lookup::Map;
use super::Error;

/// Confusion counts and derived rates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// Data lines of the evaluated map.
    pub map_lines: u64,
    /// Distinct URI-Rs of the archive.
    pub urirs: u64,
    /// Held and covered.
    pub tp: u64,
    /// Not held, covered.
    pub fp: u64,
    /// Not held, not covered.
    pub tn: u64,
    /// Held, not covered.
    pub fn_: u64,
}

impl Evaluation {
    /// Map lines per URI-R.
    pub fn relative_cost(&self) -> f64 {
        ratio(self.map_lines, self.urirs)
    }
    /// Correct decisions per query.
    pub fn accuracy(&self) -> f64 {
        ratio(self.tp + self.tn, self.tp + self.tn + self.fp + self.fn_)
    }
    /// Held among covered.
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    /// Covered among held (1.0 for every map this crate writes).
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

/// Counts the decisions of `map` on `queries` (SURTs) against `truth`, the
/// archive's uncompacted map.
pub fn evaluate<'q, D: AsRef<[u8]>, T: AsRef<[u8]>>(
    map: &Map<D>,
    map_lines: u64,
    truth: &Map<T>,
    urirs: u64,
    keep_query: bool,
    queries: impl IntoIterator<Item = &'q [u8]>,
) -> Result<Evaluation, Error> {
    let mut e = Evaluation {
        map_lines,
        urirs,
        ..Evaluation::default()
    };
    for q in queries {
        let held = match map_key(q, keep_query) {
            Some(k) => truth.find(&k)?.is_some(),
            None => false,
        };
        let covered = map.lookup(q)?.is_some_and(|h| h.covered());
        match (held, covered) {
            (true, true) => e.tp += 1,
            (false, true) => e.fp += 1,
            (false, false) => e.tn += 1,
            (true, false) => e.fn_ += 1,
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confusion_counts() {
        let truth = Map::new(&b"com,x)/a 1/1\ncom,x)/b 1/1\n"[..]);
        let map = Map::new(&b"com,x)/* 2/2\n"[..]);
        let q: Vec<&[u8]> = vec![b"com,x)/a", b"com,x)/zzz", b"org,y)/"];
        let e = evaluate(&map, 1, &truth, 2, false, q).unwrap();
        assert_eq!((e.tp, e.fp, e.tn, e.fn_), (1, 1, 1, 0));
        assert_eq!(e.recall(), 1.0);
        assert_eq!(e.precision(), 0.5);
        assert_eq!(e.relative_cost(), 0.5);
    }
}
