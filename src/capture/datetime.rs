//! ARC dates and `WARC-Date`s -> 14-digit `datetime`.
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

use crate::sorted::{civil_from_secs, days_from_civil};

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

/// How a `WARC-Date` was read ([`warc_date`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarcDateForm {
    /// To the second, in UTC (a fraction of a second is dropped).
    Full,
    /// Reduced precision (WARC 1.1 allows `2014`, `2014-01`, `2014-01-03`,
    /// `2014-01-03T04:05Z`): padded to the start of the period, as ARC
    /// dates are.
    Padded,
    /// Local time with a zone offset (`+02:00`, `-0700`, `+02`), which
    /// ISO 28500 does not allow: converted to UTC.
    Zoned,
}

/// The 14-digit UTC datetime of a `WARC-Date`, and how it was read;
/// `None` when it cannot be read.
///
/// The numbers are read as warcio reads them (any non-digit separates
/// them; at least year, month and day, up to a fraction of a second that
/// is dropped), so every date warcio reads gives warcio's datetime. Beyond
/// warcio: a year alone (4 digits) or a year and month (`YYYY-MM`) are
/// padded to the first day of the period, and a zone offset after the
/// time is applied (warcio either fails on it or drops it).
pub fn warc_date(date: &[u8]) -> Option<([u8; 14], WarcDateForm)> {
    match canonical(date) {
        Some(d) => Some((d, WarcDateForm::Full)),
        None => any_warc_date(date),
    }
}

/// The form crawlers write, `YYYY-MM-DDThh:mm:ssZ`, read at the cost of
/// a copy; `None` for anything else (or an impossible date), which
/// [`any_warc_date`] then reads.
fn canonical(date: &[u8]) -> Option<[u8; 14]> {
    let d: &[u8; 20] = date.try_into().ok()?;
    let shape = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ];
    if shape.iter().any(|&(i, c)| d[i] != c) {
        return None;
    }
    let mut out = [0u8; 14];
    let mut n = [0u32; 6];
    let mut at = 0;
    for (k, r) in [0..4, 5..7, 8..10, 11..13, 14..16, 17..19]
        .into_iter()
        .enumerate()
    {
        for &b in &d[r] {
            if !b.is_ascii_digit() {
                return None;
            }
            out[at] = b;
            at += 1;
            n[k] = n[k] * 10 + u32::from(b - b'0');
        }
    }
    let [y, mo, day, h, mi, s] = n;
    let valid = y > 0 && day > 0 && day <= days_in_month(y, mo)? && h < 24 && mi < 60 && s < 60;
    valid.then_some(out)
}

/// [`warc_date`] for any form warcio reads, and the forms it adds.
fn any_warc_date(date: &[u8]) -> Option<([u8; 14], WarcDateForm)> {
    let (main, offset) = split_zone(date)?;
    let mut parts: Vec<&[u8]> = main.split(|b| !b.is_ascii_digit()).collect();
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    let num = |p: &[u8]| -> Option<u32> {
        if p.is_empty() || p.len() > 9 {
            return None;
        }
        std::str::from_utf8(p).ok()?.parse().ok()
    };
    let mut v = [0u32, 1, 1, 0, 0, 0];
    match parts.len() {
        1 | 2 => {
            // Reduced precision: `YYYY` or `YYYY-MM`, nothing else.
            let widths_ok = parts[0].len() == 4 && parts.get(1).map_or(true, |m| m.len() == 2);
            if !widths_ok {
                return None;
            }
        }
        3..=7 => {}
        _ => return None,
    }
    for (i, p) in parts.iter().enumerate() {
        let n = num(p)?;
        if i < 6 {
            v[i] = n;
        }
    }
    let [y, mo, d, h, mi, s] = v;
    if !(1..=9999).contains(&y) || d == 0 || d > days_in_month(y, mo)? {
        return None;
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let (fields, form) = match offset {
        Some(minutes) => {
            let local = days_from_civil(i64::from(y), i64::from(mo), i64::from(d)) * 86_400
                + i64::from(h * 3600 + mi * 60 + s);
            let (y, mo, d, t) = civil_from_secs(local - i64::from(minutes) * 60);
            let y = u32::try_from(y).ok().filter(|y| (1..=9999).contains(y))?;
            let t = t as u32;
            (
                [y, mo as u32, d as u32, t / 3600, t / 60 % 60, t % 60],
                WarcDateForm::Zoned,
            )
        }
        None if parts.len() < 6 => ([y, mo, d, h, mi, s], WarcDateForm::Padded),
        None => ([y, mo, d, h, mi, s], WarcDateForm::Full),
    };
    let mut out = [0u8; 14];
    let mut at = 0;
    for (i, n) in fields.into_iter().enumerate() {
        let width = if i == 0 { 4 } else { 2 };
        let mut n = n;
        for slot in out[at..at + width].iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        at += width;
    }
    Some((out, form))
}

/// Splits a zone offset (`+hh`, `+hhmm`, `+hh:mm`, or with `-`) off the
/// time of a date: the date before it and the offset in minutes. `None`
/// when a sign follows the time but no offset can be read.
fn split_zone(date: &[u8]) -> Option<(&[u8], Option<i32>)> {
    let Some(t) = date.iter().position(|&b| matches!(b, b'T' | b't' | b' ')) else {
        return Some((date, None));
    };
    let Some(z) = date[t + 1..]
        .iter()
        .position(|&b| b == b'+' || b == b'-')
        .map(|i| t + 1 + i)
    else {
        return Some((date, None));
    };
    let two = |s: &[u8]| -> Option<i32> {
        (s.len() == 2 && s.iter().all(u8::is_ascii_digit))
            .then(|| i32::from(s[0] - b'0') * 10 + i32::from(s[1] - b'0'))
    };
    let zone = &date[z + 1..];
    let (h, m) = match zone.len() {
        2 => (two(zone)?, 0),
        4 => (two(&zone[..2])?, two(&zone[2..])?),
        5 if zone[2] == b':' => (two(&zone[..2])?, two(&zone[3..])?),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    let minutes = h * 60 + m;
    Some((
        &date[..z],
        Some(if date[z] == b'-' { -minutes } else { minutes }),
    ))
}

fn days_in_month(y: u32, mo: u32) -> Option<u32> {
    Some(match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{repair, warc_date, WarcDateForm};

    fn w(raw: &str) -> Option<(String, WarcDateForm)> {
        warc_date(raw.as_bytes()).map(|(d, f)| (String::from_utf8(d.to_vec()).unwrap(), f))
    }

    #[test]
    fn warc_dates_as_warcio_reads_them() {
        use WarcDateForm::*;
        let full = |s: &str| Some((s.to_string(), Full));
        assert_eq!(w("2019-11-18T12:56:03.352903999Z"), full("20191118125603"));
        assert_eq!(w("2019-1-2T3:4:5Z"), full("20190102030405"));
        assert_eq!(w("2013-12-26T10:11:12"), full("20131226101112"));
        assert_eq!(w("2019-02-30T00:00:00Z"), None);
        assert_eq!(w("20190101000000"), None);
        assert_eq!(w(""), None);
        assert_eq!(w("2014-01-03T04:05:06.1.2Z"), None);
    }

    /// The shortcut for `YYYY-MM-DDThh:mm:ssZ` reads every such date as
    /// the general reading does, impossible ones included.
    #[test]
    fn the_canonical_shortcut_agrees_with_the_general_reading() {
        let mut seen = 0;
        for y in [0, 1, 1900, 1999, 2000, 2004, 2023, 9999] {
            for mo in 0..=13 {
                for d in [0, 1, 28, 29, 30, 31, 32] {
                    for (h, mi, s) in [(0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60)]
                    {
                        let date = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
                        let general = super::any_warc_date(date.as_bytes()).map(|(d, _)| d);
                        assert_eq!(super::canonical(date.as_bytes()), general, "{date}");
                        seen += usize::from(general.is_some());
                    }
                }
            }
        }
        assert!(seen > 700, "{seen}");
        for other in [
            "2014-01-03T04:05:06.5Z",
            "2014-01-03T04:05:06",
            "2014-01-03t04:05:06Z",
        ] {
            assert_eq!(super::canonical(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn reduced_precision_pads_to_the_start_of_the_period() {
        use WarcDateForm::*;
        let padded = |s: &str| Some((s.to_string(), Padded));
        assert_eq!(w("2014"), padded("20140101000000"));
        assert_eq!(w("2014-01"), padded("20140101000000"));
        assert_eq!(w("2014-12"), padded("20141201000000"));
        assert_eq!(w("2014-01-03"), padded("20140103000000"));
        assert_eq!(w("2014-01-03T04Z"), padded("20140103040000"));
        assert_eq!(w("2014-01-03T04:05Z"), padded("20140103040500"));
        assert_eq!(w("2014-13"), None);
        assert_eq!(w("2014-00"), None);
        assert_eq!(w("14"), None);
        assert_eq!(w("201401"), None);
        assert_eq!(w("2014-1"), None);
    }

    #[test]
    fn zone_offsets_are_converted_to_utc() {
        use WarcDateForm::*;
        let zoned = |s: &str| Some((s.to_string(), Zoned));
        assert_eq!(w("2014-01-03T04:05:06+02:00"), zoned("20140103020506"));
        assert_eq!(w("2014-01-03T04:05:06-0700"), zoned("20140103110506"));
        assert_eq!(w("2014-01-03T04:05:06-07"), zoned("20140103110506"));
        assert_eq!(w("2014-01-03T04:05:06.123+00:00"), zoned("20140103040506"));
        assert_eq!(w("2014-01-03T04:05+02:00"), zoned("20140103020500"));
        // Across a day, a month, a year and a leap day.
        assert_eq!(w("2014-01-01T01:00:00+02:00"), zoned("20131231230000"));
        assert_eq!(w("2016-02-28T20:00:00-05:30"), zoned("20160229013000"));
        assert_eq!(w("2015-02-28T20:00:00-05:30"), zoned("20150301013000"));
        assert_eq!(w("9999-12-31T23:00:00-02:00"), None);
        assert_eq!(w("2014-01-03T04:05:06+2"), None);
        assert_eq!(w("2014-01-03T04:05:06+24:00"), None);
        assert_eq!(w("2014-01-03T04:05:06+02:00Z"), None);
    }

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
