//! ARC dates -> 14-digit `datetime`.
//!
//! ARC header dates are meant to be `YYYYMMDDhhmmss`, but real archives hold
//! 10-, 12-, 15-, 16- and 18-digit dates, 14 digits followed by a file
//! extension, hex strings and plain garbage. The reference tools disagree on
//! how to repair them (CDX-Writer zero-pads and truncates, warcio pads
//! *upward* to the end of the period and turns garbage into `2999...`), so
//! the rule here is written down in FORMATS.md section 2 and applied by every
//! profile:
//!
//! | raw date | datetime |
//! |---|---|
//! | 14 digits | as is |
//! | 15 to 18 digits | the first 14 |
//! | 14 to 18 digits then ASCII letters only (`20160211000000jpg`) | the first 14 |
//! | 12 / 10 / 8 digits | zero-padded (`...00`, `...0000`, `...000000`) |
//! | 6 digits (`YYYYMM`) | `YYYYMM01000000` |
//! | 4 digits (`YYYY`) | `YYYY0101000000` |
//! | anything else (hex, odd lengths, text, empty) | unknown (`-`) |
//!
//! Padding goes to the *start* of the period, as CDX-Writer does for 10 and
//! 12 digits, and never invents a month or day `00`. A 14-digit date with an
//! impossible value (year 2605, month 13) is kept: the index reports what the
//! archive says. The caller keeps the raw value (`datetime_raw`) whenever the
//! result differs from it.

/// The 14-digit datetime for an ARC date field, or `None` when the field
/// cannot be repaired without inventing a value.
pub fn repair(raw: &[u8]) -> Option<[u8; 14]> {
    let digits = raw.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = raw.get(digits..).unwrap_or_default();
    let mut out = [b'0'; 14];
    if rest.is_empty() {
        let pad: &[u8] = match digits {
            14..=18 => b"",
            12 | 10 | 8 => b"",
            6 => b"01",
            4 => b"0101",
            _ => return None,
        };
        let keep = digits.min(14);
        out[..keep].copy_from_slice(raw.get(..keep)?);
        out[keep..keep + pad.len()].copy_from_slice(pad);
        return Some(out);
    }
    // 14-18 digits followed by letters only: a file extension glued on.
    if (14..=18).contains(&digits) && rest.iter().all(|b| b.is_ascii_alphabetic()) {
        out.copy_from_slice(raw.get(..14)?);
        return Some(out);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::repair;

    fn r(raw: &str) -> Option<String> {
        repair(raw.as_bytes()).map(|d| String::from_utf8(d.to_vec()).unwrap())
    }

    #[test]
    fn fourteen_digits_are_kept() {
        assert_eq!(r("20040724100457").as_deref(), Some("20040724100457"));
        // Impossible but well-formed values are reported, not "fixed".
        assert_eq!(r("26050101000000").as_deref(), Some("26050101000000"));
    }

    #[test]
    fn long_dates_are_truncated() {
        // The corpus's 15-, 16- and 18-digit dates (CDX-Writer tests).
        assert_eq!(r("201512000000000").as_deref(), Some("20151200000000"));
        assert_eq!(r("2000082305410049").as_deref(), Some("20000823054100"));
        assert_eq!(r("200009180023002953").as_deref(), Some("20000918002300"));
        assert_eq!(r("2000091800230029531"), None);
    }

    #[test]
    fn short_dates_pad_to_the_start_of_the_period() {
        assert_eq!(r("2016020900").as_deref(), Some("20160209000000"));
        assert_eq!(r("200011101120").as_deref(), Some("20001110112000"));
        assert_eq!(r("20001110").as_deref(), Some("20001110000000"));
        assert_eq!(r("200011").as_deref(), Some("20001101000000"));
        assert_eq!(r("2000").as_deref(), Some("20000101000000"));
        for odd in [
            "2",
            "200",
            "20001",
            "2000111",
            "200011101",
            "2000111011",
            "2000111011201",
        ] {
            if odd.len() != 10 {
                assert_eq!(r(odd), None, "{odd}");
            }
        }
    }

    #[test]
    fn digits_with_a_glued_extension() {
        assert_eq!(r("20160211000000jpg").as_deref(), Some("20160211000000"));
        assert_eq!(r("20160211000000.jpg"), None);
        assert_eq!(r("2016021100jpg"), None);
    }

    #[test]
    fn garbage_is_unknown() {
        assert_eq!(r("a0d1fdddf3165d0447b1f7a285c61c1c9"), None);
        assert_eq!(r("63.241.16.130"), None);
        assert_eq!(r(""), None);
        assert_eq!(r("null"), None);
        assert_eq!(r("2014-01-02T03:04:05Z"), None);
    }
}
