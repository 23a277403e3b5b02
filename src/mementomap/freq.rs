//! The `frequency` value of a MementoMap line and the algebra for adding
//! frequencies together.
//!
//! A frequency is `[urim[s]]/[urir[s]]`: a URI-M count and a URI-R count,
//! each optional, each with a looseness suffix `s` (none = exact, `+` =
//! lower bound, `-` = upper bound, `~` = approximate). `200` means `200/`
//! (URI-R count unknown), `/` alone means both unknown, `0` and `0/N` mean
//! "nothing held here" and override wider entries at lookup.
//!
//! Sums must never claim more than they know. The rules follow from reading
//! each count as an interval of possible true values: exact `n` is `[n, n]`,
//! `n+` is `[n, inf)`, `n-` is `[0, n]`, `n~` and unknown carry no bound.
//! Adding intervals gives the table below; the unit tests check every
//! combination against that interval reading.
//!
//! | a + b      | exact | `+`   | `-`   | `~` | unknown |
//! |------------|-------|-------|-------|-----|---------|
//! | exact      | exact | `+`   | `-`   | `~` | `+`     |
//! | `+`        | `+`   | `+`   | `~`   | `~` | `+`     |
//! | `-`        | `-`   | `~`   | `-`   | `~` | `~`     |
//! | `~`        | `~`   | `~`   | `~`   | `~` | `~`     |
//! | unknown    | `+`   | `+`   | `~`   | `~` | unknown |

use std::fmt;

/// How far a count can be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bound {
    /// The true value (no suffix).
    #[default]
    Exact,
    /// The true value is at least this (`+`).
    Lower,
    /// The true value is at most this (`-`).
    Upper,
    /// Roughly this, no guarantee either way (`~`).
    Approx,
}

impl Bound {
    /// The mark written after the number; none when exact.
    pub fn mark(self) -> Option<u8> {
        match self {
            Bound::Exact => None,
            Bound::Lower => Some(b'+'),
            Bound::Upper => Some(b'-'),
            Bound::Approx => Some(b'~'),
        }
    }

    /// The looseness of a sum of two known counts.
    fn plus(self, other: Bound) -> Bound {
        use Bound::*;
        match (self, other) {
            (Exact, b) | (b, Exact) => b,
            (Lower, Lower) => Lower,
            (Upper, Upper) => Upper,
            _ => Approx,
        }
    }
}

/// One count (URI-M or URI-R): a value with its looseness, or unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Count {
    /// `None` when the count is unknown (written as nothing).
    pub value: Option<u64>,
    /// Looseness of `value`; `Exact` when the value is unknown.
    pub bound: Bound,
}

impl Count {
    /// An unknown count.
    pub const UNKNOWN: Count = Count {
        value: None,
        bound: Bound::Exact,
    };

    /// An exact count.
    pub fn exact(n: u64) -> Count {
        Count {
            value: Some(n),
            bound: Bound::Exact,
        }
    }

    /// A count with the given looseness.
    pub fn new(n: u64, bound: Bound) -> Count {
        Count {
            value: Some(n),
            bound,
        }
    }

    /// The sum of two counts, as loose as it must be (see the module table).
    pub fn plus(self, other: Count) -> Count {
        match (self.value, other.value) {
            (None, None) => Count::UNKNOWN,
            // An unknown addend is at least 0 and unbounded above: the sum
            // keeps a lower bound only if the known side had one.
            (None, Some(n)) | (Some(n), None) => {
                let known = if self.value.is_some() { self } else { other };
                let bound = match known.bound {
                    Bound::Exact | Bound::Lower => Bound::Lower,
                    Bound::Upper | Bound::Approx => Bound::Approx,
                };
                Count::new(n, bound)
            }
            (Some(a), Some(b)) => {
                let bound = self.bound.plus(other.bound);
                match a.checked_add(b) {
                    Some(sum) => Count::new(sum, bound),
                    // Saturated: still a valid lower bound when the sum was.
                    None => Count::new(
                        u64::MAX,
                        if matches!(bound, Bound::Exact | Bound::Lower) {
                            Bound::Lower
                        } else {
                            Bound::Approx
                        },
                    ),
                }
            }
        }
    }

    /// The count summed over sets that may share members (URI-Rs of
    /// overlapping shards): a sum of exact or upper counts is then only an
    /// upper bound, and a lower bound is lost.
    pub fn overlapping(self) -> Count {
        match self.value {
            None => self,
            Some(n) => Count::new(
                n,
                match self.bound {
                    Bound::Exact | Bound::Upper => Bound::Upper,
                    Bound::Lower | Bound::Approx => Bound::Approx,
                },
            ),
        }
    }

    /// Puts the text form into `buf` from `at`, giving where it ends.
    #[inline]
    fn put(&self, buf: &mut [u8; TEXT_MAX], at: usize) -> usize {
        let Some(n) = self.value else {
            return at;
        };
        // Most counts of a map are one digit.
        let mut end = match u8::try_from(n) {
            Ok(d) if d < 10 => {
                buf[at] = b'0' + d;
                at + 1
            }
            _ => {
                let mut digits = itoa::Buffer::new();
                let digits = digits.format(n).as_bytes();
                buf[at..at + digits.len()].copy_from_slice(digits);
                at + digits.len()
            }
        };
        if let Some(mark) = self.bound.mark() {
            buf[end] = mark;
            end += 1;
        }
        end
    }
}

/// Room for the text of a frequency and a few bytes around it: two
/// counts of up to 20 digits with their marks, and the slash, take 43.
pub(crate) const TEXT_MAX: usize = 48;

/// A MementoMap frequency: URI-M and URI-R counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Frequency {
    /// Number of mementos (captures).
    pub urim: Count,
    /// Number of distinct original URIs.
    pub urir: Count,
}

/// Why a frequency field does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrequencyError {
    /// Not `[digits[s]]/[digits[s]]`.
    #[error("bad frequency {text:?}: {reason}")]
    Syntax {
        /// The field (first 40 bytes).
        text: String,
        /// What is wrong.
        reason: &'static str,
    },
}

fn from_syntax(c: crate::ukvs::frequency::Count) -> Count {
    use crate::ukvs::frequency::Looseness;
    match c.value {
        None => Count::UNKNOWN,
        Some(n) => Count::new(
            n,
            match c.looseness {
                Looseness::Exact => Bound::Exact,
                Looseness::AtLeast => Bound::Lower,
                Looseness::AtMost => Bound::Upper,
                Looseness::About => Bound::Approx,
            },
        ),
    }
}

impl Frequency {
    /// Exact URI-M and URI-R counts.
    pub fn exact(urim: u64, urir: u64) -> Frequency {
        Frequency {
            urim: Count::exact(urim),
            urir: Count::exact(urir),
        }
    }

    /// Parses one frequency field (`300`, `400/100`, `200/`, `/50`, `/`,
    /// `0`, `0/20`, each count optionally suffixed by `+`, `-` or `~`).
    /// The syntax is the UKVS module's (what `validate` checks); this adds
    /// the arithmetic.
    pub fn parse(field: &[u8]) -> Result<Frequency, FrequencyError> {
        let f = crate::ukvs::frequency::parse(field).map_err(|reason| FrequencyError::Syntax {
            text: String::from_utf8_lossy(&field[..field.len().min(40)]).into_owned(),
            reason,
        })?;
        Ok(Frequency {
            urim: from_syntax(f.urim),
            urir: from_syntax(f.urir),
        })
    }

    /// True for `0` / `0/N`: "nothing held", which overrides wider entries.
    pub fn is_zero(&self) -> bool {
        self.urim.value == Some(0) && matches!(self.urim.bound, Bound::Exact | Bound::Upper)
    }

    /// Sum of two frequencies whose URI-R sets are disjoint.
    pub fn plus(self, other: Frequency) -> Frequency {
        Frequency {
            urim: self.urim.plus(other.urim),
            urir: self.urir.plus(other.urir),
        }
    }

    /// Sum of two frequencies whose URI-R sets may overlap: the URI-R sum
    /// becomes an upper bound (URI-M never overlap: a memento is in one
    /// shard).
    pub fn add_overlapping(self, other: Frequency) -> Frequency {
        let urir = self.urir.plus(other.urir);
        Frequency {
            urim: self.urim.plus(other.urim),
            urir: if self.urir.value.is_some() && other.urir.value.is_some() {
                urir.overlapping()
            } else {
                urir
            },
        }
    }

    /// Appends the canonical text form (`200` rather than `200/`).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut text = [0; TEXT_MAX];
        let end = self.put(&mut text, 0);
        out.extend_from_slice(&text[..end]);
    }

    /// Puts the canonical text form into `buf` from `at`, giving where it
    /// ends: a line is formatted on the stack and copied once. The text
    /// takes up to 43 bytes, so `at` is at most [`TEXT_MAX`]` - 43`.
    #[inline]
    pub(crate) fn put(&self, buf: &mut [u8; TEXT_MAX], at: usize) -> usize {
        let end = self.urim.put(buf, at);
        if self.urir.value.is_none() && self.urim.value.is_some() {
            return end;
        }
        buf[end] = b'/';
        self.urir.put(buf, end + 1)
    }
}

impl fmt::Display for Frequency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(24);
        self.write_to(&mut out);
        f.write_str(&String::from_utf8_lossy(&out))
    }
}

impl std::str::FromStr for Frequency {
    type Err = FrequencyError;
    fn from_str(s: &str) -> Result<Frequency, FrequencyError> {
        Frequency::parse(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_counts(n: u64) -> Vec<Count> {
        let mut v = vec![Count::UNKNOWN];
        for b in [Bound::Exact, Bound::Lower, Bound::Upper, Bound::Approx] {
            v.push(Count::new(n, b));
        }
        v
    }

    /// The interval of true values a count allows; `None` = no information.
    fn interval(c: Count) -> Option<(u64, Option<u64>)> {
        match (c.value, c.bound) {
            (None, _) => Some((0, None)),
            (Some(n), Bound::Exact) => Some((n, Some(n))),
            (Some(n), Bound::Lower) => Some((n, None)),
            (Some(n), Bound::Upper) => Some((0, Some(n))),
            (Some(_), Bound::Approx) => None,
        }
    }

    /// Every suffix combination: the claimed bound of a sum must follow
    /// from adding the intervals, and must be the tightest such claim.
    #[test]
    fn sum_is_sound_and_tight_for_every_suffix_combination() {
        for a in all_counts(3) {
            for b in all_counts(5) {
                let s = a.plus(b);
                assert_eq!(s, b.plus(a), "commutative for {a:?} {b:?}");
                let ia = interval(a);
                let ib = interval(b);
                let sum = match (ia, ib) {
                    (Some((la, ha)), Some((lb, hb))) => {
                        Some((la + lb, ha.and_then(|x| hb.map(|y| x + y))))
                    }
                    _ => None,
                };
                // The written value is the sum of the known values; the
                // tightest suffix is the strongest claim the interval allows.
                let v = a.value.unwrap_or(0) + b.value.unwrap_or(0);
                let expected = if a.value.is_none() && b.value.is_none() {
                    Count::UNKNOWN
                } else {
                    let bound = match sum {
                        Some((lo, Some(hi))) if lo == v && hi == v => Bound::Exact,
                        Some((lo, _)) if lo >= v => Bound::Lower,
                        Some((_, Some(hi))) if hi <= v => Bound::Upper,
                        _ => Bound::Approx,
                    };
                    Count::new(v, bound)
                };
                assert_eq!(s, expected, "{a:?} + {b:?}");
            }
        }
    }

    #[test]
    fn spec_rules() {
        let e = Count::exact(2);
        let l = Count::new(2, Bound::Lower);
        let u = Count::new(2, Bound::Upper);
        let x = Count::new(2, Bound::Approx);
        assert_eq!(e.plus(e), Count::exact(4));
        assert_eq!(l.plus(l).bound, Bound::Lower);
        assert_eq!(u.plus(u).bound, Bound::Upper);
        assert_eq!(l.plus(u).bound, Bound::Approx);
        for c in [e, l, u, x] {
            assert_eq!(x.plus(c).bound, Bound::Approx);
        }
        assert_eq!(Count::UNKNOWN.plus(e), Count::new(2, Bound::Lower));
    }

    #[test]
    fn parse_and_print_every_form() {
        let suffixes = ["", "+", "-", "~"];
        for s1 in suffixes {
            for s2 in suffixes {
                for text in [
                    format!("300{s1}"),
                    format!("400{s1}/100{s2}"),
                    format!("/50{s2}"),
                    format!("0{s1}/20{s2}"),
                    "/".to_string(),
                    "0".to_string(),
                ] {
                    let f = Frequency::parse(text.as_bytes()).unwrap();
                    assert_eq!(f.to_string(), text, "round trip of {text}");
                }
                let f = Frequency::parse(format!("200{s1}/").as_bytes()).unwrap();
                assert_eq!(f.to_string(), format!("200{s1}"), "200/ prints as 200");
            }
        }
        let f: Frequency = "400+/100~".parse().unwrap();
        assert_eq!(f.urim, Count::new(400, Bound::Lower));
        assert_eq!(f.urir, Count::new(100, Bound::Approx));
        let f: Frequency = "/".parse().unwrap();
        assert_eq!(f, Frequency::default());
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "", "+", "a", "1/2/3", "12x", "+5", "-/3", "1++", " 1", "/ ", "1 ",
        ] {
            assert!(Frequency::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(Frequency::parse(b"99999999999999999999999").is_err());
    }

    #[test]
    fn zero_entries() {
        assert!(Frequency::parse(b"0").unwrap().is_zero());
        assert!(Frequency::parse(b"0/20").unwrap().is_zero());
        assert!(!Frequency::parse(b"0+").unwrap().is_zero());
        assert!(!Frequency::parse(b"/20").unwrap().is_zero());
        assert!(!Frequency::parse(b"1").unwrap().is_zero());
    }

    #[test]
    fn overlapping_urir_becomes_upper_bound() {
        let a = Frequency::exact(10, 3);
        let b = Frequency::exact(5, 2);
        assert_eq!(a.plus(b).to_string(), "15/5");
        assert_eq!(a.add_overlapping(b).to_string(), "15/5-");
        let c: Frequency = "5/2+".parse().unwrap();
        assert_eq!(a.add_overlapping(c).to_string(), "15/5~");
        let d: Frequency = "5".parse().unwrap();
        assert_eq!(a.add_overlapping(d).to_string(), "15/3+");
    }
}
