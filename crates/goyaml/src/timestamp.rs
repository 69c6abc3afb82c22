//! go-yaml v2's implicit timestamps (`parseTimestamp`): a plain scalar that Go's
//! `time.Parse` accepts in one of four layouts reads back as a timestamp, so
//! such strings are double-quoted on output.
//!
//! The layouts are `2006-1-2T15:4:5.999999999Z07:00`, the same with a
//! lower-case `t`, `2006-1-2 15:4:5.999999999` and `2006-1-2`. This module
//! reproduces `time.Parse` for exactly those layouts, including its quirks:
//! one- or two-digit fields, a layout space matching any run of spaces, any
//! number of fraction digits after `.` or `,`, offset hours up to 24, and
//! day-of-month validation against the (leap) year.

/// One element of a layout.
#[derive(Clone, Copy)]
enum Part {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Fraction,
    Zone,
    Literal(u8),
}

use Part::{Day, Fraction, Hour, Literal, Minute, Month, Second, Year, Zone};

const LAYOUTS: &[&[Part]] = &[
    &[
        Year,
        Literal(b'-'),
        Month,
        Literal(b'-'),
        Day,
        Literal(b'T'),
        Hour,
        Literal(b':'),
        Minute,
        Literal(b':'),
        Second,
        Fraction,
        Zone,
    ],
    &[
        Year,
        Literal(b'-'),
        Month,
        Literal(b'-'),
        Day,
        Literal(b't'),
        Hour,
        Literal(b':'),
        Minute,
        Literal(b':'),
        Second,
        Fraction,
        Zone,
    ],
    &[
        Year,
        Literal(b'-'),
        Month,
        Literal(b'-'),
        Day,
        Literal(b' '),
        Hour,
        Literal(b':'),
        Minute,
        Literal(b':'),
        Second,
        Fraction,
    ],
    &[Year, Literal(b'-'), Month, Literal(b'-'), Day],
];

/// Whether go-yaml would read the plain scalar `s` as a timestamp.
pub(crate) fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    // Quick check: exactly four digits, then '-'.
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    LAYOUTS.iter().any(|layout| parses(b, layout))
}

/// Go's `getnum(s, false)`: one or two digits.
fn getnum(s: &[u8]) -> Option<(u32, &[u8])> {
    let d0 = s.first().filter(|c| c.is_ascii_digit())?;
    match s.get(1).filter(|c| c.is_ascii_digit()) {
        Some(d1) => Some((u32::from(d0 - b'0') * 10 + u32::from(d1 - b'0'), &s[2..])),
        None => Some((u32::from(d0 - b'0'), &s[1..])),
    }
}

fn two_digits(s: &[u8]) -> Option<u32> {
    match s {
        [a, b, ..] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(u32::from(a - b'0') * 10 + u32::from(b - b'0'))
        }
        _ => None,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn parses(input: &[u8], layout: &[Part]) -> bool {
    let mut v = input;
    let (mut year, mut month, mut day) = (0u32, 0u32, 0u32);
    for part in layout {
        match *part {
            Year => {
                let y = v.get(..4).filter(|p| p.iter().all(u8::is_ascii_digit));
                let Some(y) = y else { return false };
                year = y.iter().fold(0, |n, c| n * 10 + u32::from(c - b'0'));
                v = &v[4..];
            }
            Month => match getnum(v) {
                Some((m, rest)) if (1..=12).contains(&m) => (month, v) = (m, rest),
                _ => return false,
            },
            Day => match getnum(v) {
                Some((d, rest)) => (day, v) = (d, rest),
                None => return false,
            },
            Hour | Minute | Second => {
                let limit = if matches!(part, Hour) { 24 } else { 60 };
                match getnum(v) {
                    Some((n, rest)) if n < limit => v = rest,
                    _ => return false,
                }
            }
            Fraction => {
                if v.len() >= 2 && matches!(v[0], b'.' | b',') && v[1].is_ascii_digit() {
                    let n = 1 + v[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    v = &v[n..];
                }
            }
            Zone => {
                if v.first() == Some(&b'Z') {
                    v = &v[1..];
                } else {
                    if v.len() < 6 || v[3] != b':' || !matches!(v[0], b'+' | b'-') {
                        return false;
                    }
                    match (two_digits(&v[1..3]), two_digits(&v[4..6])) {
                        (Some(h), Some(m)) if h <= 24 && m <= 60 => v = &v[6..],
                        _ => return false,
                    }
                }
            }
            Literal(b' ') => {
                if v.first().is_some_and(|c| *c != b' ') {
                    return false;
                }
                while v.first() == Some(&b' ') {
                    v = &v[1..];
                }
            }
            Literal(c) => match v.split_first() {
                Some((first, rest)) if *first == c => v = rest,
                _ => return false,
            },
        }
    }
    v.is_empty() && day >= 1 && day <= days_in(month, year)
}

#[cfg(test)]
mod tests {
    use super::is_timestamp;

    #[test]
    fn layouts() {
        for s in [
            "2001-12-14",
            "2001-1-2",
            "2001-12-14T21:59:43.10-05:00",
            "2001-12-14t1:2:3Z",
            "2001-12-14 21:59:43.10",
            "2001-12-14  1:2:3",
            "2000-02-29",
            "2001-12-14T21:59:43+24:00",
        ] {
            assert!(is_timestamp(s), "{s}");
        }
        for s in [
            "2001-12-14 ",
            "2001-02-29",
            "2001-13-01",
            "2001-12-14T24:00:00Z",
            "2001-12-14T21:59:43",
            "20011-12-14",
            "2001-12-14 21:59:43.10 -5",
            "2001-12-14T21:59:43+25:00",
        ] {
            assert!(!is_timestamp(s), "{s}");
        }
    }
}
