//! Seconds since 1970 (`HTTP-archive-time`, the tree's `EPOCH`) <-> the
//! index's 14-digit UTC `datetime`.

/// The last second a 14-digit datetime can hold: 9999-12-31T23:59:59Z.
pub const MAX_EPOCH: i64 = 253_402_300_799;

/// `HTTP-archive-time` as written: ASCII digits only (no sign, no
/// fraction), at most [`MAX_EPOCH`].
pub fn parse(value: &[u8]) -> Option<i64> {
    if value.is_empty() || value.len() > 12 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = value.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    (n <= MAX_EPOCH).then_some(n)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// The UTC `YYYYMMDDhhmmss` of `secs` seconds after 1970-01-01T00:00:00Z;
/// `None` outside 0..=[`MAX_EPOCH`]. Leap seconds do not exist in this
/// count, as in POSIX time.
pub fn datetime(secs: i64) -> Option<[u8; 14]> {
    if !(0..=MAX_EPOCH).contains(&secs) {
        return None;
    }
    let (mut days, rem) = (secs / 86_400, secs % 86_400);
    // 400 Gregorian years are exactly 146097 days; skipping whole cycles
    // first leaves at most 400 single years to walk.
    let mut year = 1970 + 400 * (days / 146_097);
    days %= 146_097;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let feb = if is_leap(year) { 29 } else { 28 };
    let mut month = 1;
    for len in [31, feb, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] {
        if days < len {
            break;
        }
        days -= len;
        month += 1;
    }
    let mut out = [b'0'; 14];
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(4, 2, month);
    put(6, 2, days + 1);
    put(8, 2, rem / 3600);
    put(10, 2, rem / 60 % 60);
    put(12, 2, rem % 60);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(secs: i64) -> String {
        String::from_utf8(datetime(secs).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn known_instants() {
        assert_eq!(dt(0), "19700101000000");
        // The seed's example object and tree path.
        assert_eq!(dt(875_721_538), "19971001155858");
        assert_eq!(dt(1_001_186_253), "20010922191733");
        assert_eq!(dt(951_782_400), "20000229000000");
        assert_eq!(dt(4_107_542_399), "21000228235959");
        assert_eq!(dt(4_107_542_400), "21000301000000");
        assert_eq!(dt(MAX_EPOCH), "99991231235959");
        assert_eq!(datetime(MAX_EPOCH + 1), None);
        assert_eq!(datetime(-1), None);
    }

    #[test]
    fn day_by_day_agrees_with_a_running_calendar() {
        // Walk every day from 1970 to 2500 with a naive calendar.
        let (mut y, mut m, mut d) = (1970i64, 1i64, 1i64);
        for day in 0..(530 * 366) {
            let want = format!("{y:04}{m:02}{d:02}120000");
            assert_eq!(dt(day * 86_400 + 43_200), want);
            let mlen = match m {
                2 if is_leap(y) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > mlen {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn parse_accepts_plain_digits_only() {
        assert_eq!(parse(b"875721538"), Some(875_721_538));
        assert_eq!(parse(b"0"), Some(0));
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"-5"), None);
        assert_eq!(parse(b"87572153.8"), None);
        assert_eq!(parse(b"253402300800"), None);
        assert_eq!(parse(b"99999999999999999999999"), None);
    }
}
