//! Syntax of the MementoMap `frequency` value and of datetime keys.
//!
//! Only the syntax lives here (what `validate` checks); the arithmetic of
//! frequencies belongs to the MementoMap module.

/// How exact a count is: the suffix after the digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Looseness {
    /// No suffix.
    Exact,
    /// `+`: at least this many.
    AtLeast,
    /// `-`: at most this many.
    AtMost,
    /// `~`: about this many.
    About,
}

/// One side of a frequency: a count with its looseness, or unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// `None` when the side is empty (unknown).
    pub value: Option<u64>,
    /// Meaningless when `value` is `None`.
    pub looseness: Looseness,
}

/// A parsed `frequency`: URI-M count `/` URI-R count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frequency {
    /// Mementos (URI-M).
    pub urim: Count,
    /// Original resources (URI-R).
    pub urir: Count,
}

/// Parses `[urim[s]]/[urir[s]]` with `s` one of `+ - ~`; the slash may be
/// left out when only the URI-M count is given (`200` = `200/`). `/` alone
/// means both unknown; the empty string is not a frequency.
pub fn parse(text: &[u8]) -> Result<Frequency, &'static str> {
    // Split at the first slash; a second slash ends up in the URI-R part
    // and fails the digit check there.
    let (m, r) = match memchr::memchr(b'/', text) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    if r.is_none() && m.is_empty() {
        return Err("empty frequency (use `/` when both counts are unknown)");
    }
    Ok(Frequency {
        urim: count(m)?,
        urir: count(r.unwrap_or_default())?,
    })
}

fn count(text: &[u8]) -> Result<Count, &'static str> {
    if text.is_empty() {
        return Ok(Count {
            value: None,
            looseness: Looseness::Exact,
        });
    }
    let (digits, looseness) = match text.split_last() {
        Some((b'+', d)) => (d, Looseness::AtLeast),
        Some((b'-', d)) => (d, Looseness::AtMost),
        Some((b'~', d)) => (d, Looseness::About),
        _ => (text, Looseness::Exact),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err("a count is digits with an optional `+`, `-` or `~`");
    }
    // Counts are u64: an overflowing count is a syntax error rather than a
    // silently clamped number.
    let value = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or("count too large")?;
    Ok(Count {
        value: Some(value),
        looseness,
    })
}

/// Checks a datetime key of a MementoMap breakdown: a prefix of the
/// 14-digit form (`2014`, `201603`), or a range `from:to` of such prefixes
/// with either end open (`2010:2012`, `:2009`, `201603:`, `:` for all
/// time).
pub fn check_datetime_key(text: &[u8]) -> Result<(), &'static str> {
    let ok = |p: &[u8], may_be_empty: bool| {
        (may_be_empty && p.is_empty())
            || (!p.is_empty() && p.len() <= 14 && p.iter().all(u8::is_ascii_digit))
    };
    let good = match memchr::memchr(b':', text) {
        Some(i) => ok(&text[..i], true) && ok(&text[i + 1..], true),
        None => ok(text, false),
    };
    if good {
        Ok(())
    } else {
        Err("a datetime key is 1-14 digits or a range `from:to` with optional ends")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_the_spec() {
        for ok in [
            "300",
            "400/100",
            "200/",
            "/50",
            "/",
            "0",
            "0/20",
            "400+/100",
            "200-/150~",
            "/50+",
            "20~/10",
            "60+/30+",
        ] {
            assert!(parse(ok.as_bytes()).is_ok(), "{ok}");
        }
        let f = parse(b"200-/150~").unwrap();
        assert_eq!(
            f.urim,
            Count {
                value: Some(200),
                looseness: Looseness::AtMost
            }
        );
        assert_eq!(
            f.urir,
            Count {
                value: Some(150),
                looseness: Looseness::About
            }
        );
        assert_eq!(parse(b"/").unwrap().urim.value, None);
        assert_eq!(parse(b"300").unwrap(), parse(b"300/").unwrap());
        for bad in [
            "",
            "+",
            "a",
            "3/4/5",
            "1.5",
            "12++",
            "~3",
            "/ 3",
            "-1",
            "99999999999999999999999",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn datetime_keys() {
        for ok in [
            "2014",
            "20140101123059",
            ":",
            ":2009",
            "201603:",
            "2010:2012",
        ] {
            assert!(check_datetime_key(ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in ["", "20x4", "201401011230591", "1:2:3", "a:"] {
            assert!(check_datetime_key(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
