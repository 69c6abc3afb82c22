//! Go's time layouts (`Mon Jan 2 15:04:05 MST 2006`): `Time.Format` and
//! `time.ParseInLocation`, element for element as Go's `time/format.go` reads them.

use super::{Civil, GoTime, Zone, days_in, is_leap};

/// English month names (Go's `longMonthNames`).
pub const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// English day names, Sunday first (Go's `longDayNames`).
pub const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// A layout element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    TZ,
    Iso8601TZ,
    Iso8601SecondsTZ,
    Iso8601ShortTZ,
    Iso8601ColonTZ,
    Iso8601ColonSecondsTZ,
    NumTZ,
    NumSecondsTz,
    NumShortTZ,
    NumColonTZ,
    NumColonSecondsTZ,
    /// `.000` (digits, separator)
    Frac0(usize, u8),
    /// `.999` (digits, separator)
    Frac9(usize, u8),
}

fn starts_with_lower(s: &[u8]) -> bool {
    s.first().is_some_and(u8::is_ascii_lowercase)
}

/// Go's `nextStdChunk`: the literal prefix, the element, and the rest of the layout.
fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let l = layout.as_bytes();
    let at = |i: usize, s: &str| l.get(i..i + s.len()) == Some(s.as_bytes());
    let cut = |i: usize, std: Std, n: usize| (&layout[..i], Some(std), &layout[i + n..]);
    for i in 0..l.len() {
        match l[i] {
            b'J' if at(i, "Jan") => {
                if at(i, "January") {
                    return cut(i, Std::LongMonth, 7);
                }
                if !starts_with_lower(&l[i + 3..]) {
                    return cut(i, Std::Month, 3);
                }
            }
            b'M' => {
                if at(i, "Mon") {
                    if at(i, "Monday") {
                        return cut(i, Std::LongWeekDay, 6);
                    }
                    if !starts_with_lower(&l[i + 3..]) {
                        return cut(i, Std::WeekDay, 3);
                    }
                }
                if at(i, "MST") {
                    return cut(i, Std::TZ, 3);
                }
            }
            b'0' => {
                if let Some(&c) = l.get(i + 1)
                    && (b'1'..=b'6').contains(&c)
                {
                    let std = [
                        Std::ZeroMonth,
                        Std::ZeroDay,
                        Std::ZeroHour12,
                        Std::ZeroMinute,
                        Std::ZeroSecond,
                        Std::Year,
                    ][usize::from(c - b'1')];
                    return cut(i, std, 2);
                }
                if at(i + 1, "02") {
                    return cut(i, Std::ZeroYearDay, 3);
                }
            }
            b'1' => {
                if l.get(i + 1) == Some(&b'5') {
                    return cut(i, Std::Hour, 2);
                }
                return cut(i, Std::NumMonth, 1);
            }
            b'2' => {
                if at(i, "2006") {
                    return cut(i, Std::LongYear, 4);
                }
                return cut(i, Std::Day, 1);
            }
            b'_' => {
                if l.get(i + 1) == Some(&b'2') {
                    if at(i + 1, "2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    return cut(i, Std::UnderDay, 2);
                }
                if at(i + 1, "_2") {
                    return cut(i, Std::UnderYearDay, 3);
                }
            }
            b'3' => return cut(i, Std::Hour12, 1),
            b'4' => return cut(i, Std::Minute, 1),
            b'5' => return cut(i, Std::Second, 1),
            b'P' if l.get(i + 1) == Some(&b'M') => return cut(i, Std::PM, 2),
            b'p' if l.get(i + 1) == Some(&b'm') => return cut(i, Std::Pm, 2),
            b'-' => {
                for (s, std) in [
                    ("-070000", Std::NumSecondsTz),
                    ("-07:00:00", Std::NumColonSecondsTZ),
                    ("-0700", Std::NumTZ),
                    ("-07:00", Std::NumColonTZ),
                    ("-07", Std::NumShortTZ),
                ] {
                    if at(i, s) {
                        return cut(i, std, s.len());
                    }
                }
            }
            b'Z' => {
                for (s, std) in [
                    ("Z070000", Std::Iso8601SecondsTZ),
                    ("Z07:00:00", Std::Iso8601ColonSecondsTZ),
                    ("Z0700", Std::Iso8601TZ),
                    ("Z07:00", Std::Iso8601ColonTZ),
                    ("Z07", Std::Iso8601ShortTZ),
                ] {
                    if at(i, s) {
                        return cut(i, std, s.len());
                    }
                }
            }
            c @ (b'.' | b',') => {
                if let Some(&ch) = l.get(i + 1)
                    && (ch == b'0' || ch == b'9')
                {
                    let mut j = i + 1;
                    while j < l.len() && l[j] == ch {
                        j += 1;
                    }
                    if !l.get(j).is_some_and(u8::is_ascii_digit) {
                        let n = j - (i + 1);
                        let std = if ch == b'0' {
                            Std::Frac0(n, c)
                        } else {
                            Std::Frac9(n, c)
                        };
                        return (&layout[..i], Some(std), &layout[j..]);
                    }
                }
            }
            _ => {}
        }
    }
    (layout, None, "")
}

/// Go's `appendInt(b, x, width)`: zero-padded to `width`, with a leading `-` when negative.
fn push_int(out: &mut String, x: i64, width: usize) {
    if x < 0 {
        out.push('-');
    }
    out.push_str(&format!("{:0width$}", x.unsigned_abs()));
}

/// Go's `Time.Format` on the calendar fields of a time.
pub fn format(c: &Civil, layout: &str) -> String {
    let mut out = String::with_capacity(layout.len() + 10);
    let mut rest = layout;
    loop {
        let (prefix, std, suffix) = next_std_chunk(rest);
        out.push_str(prefix);
        let Some(std) = std else { break };
        rest = suffix;
        let hour12 = match c.hour % 12 {
            0 => 12,
            h => h,
        };
        match std {
            Std::Year => push_int(&mut out, c.year.rem_euclid(100), 2),
            Std::LongYear => push_int(&mut out, c.year, 4),
            Std::Month => out.push_str(&LONG_MONTHS[(c.month as usize + 11) % 12][..3]),
            Std::LongMonth => out.push_str(LONG_MONTHS[(c.month as usize + 11) % 12]),
            Std::NumMonth => push_int(&mut out, i64::from(c.month), 0),
            Std::ZeroMonth => push_int(&mut out, i64::from(c.month), 2),
            Std::WeekDay => out.push_str(&LONG_DAYS[c.weekday as usize % 7][..3]),
            Std::LongWeekDay => out.push_str(LONG_DAYS[c.weekday as usize % 7]),
            Std::Day => push_int(&mut out, i64::from(c.day), 0),
            Std::UnderDay => {
                if c.day < 10 {
                    out.push(' ');
                }
                push_int(&mut out, i64::from(c.day), 0);
            }
            Std::ZeroDay => push_int(&mut out, i64::from(c.day), 2),
            Std::UnderYearDay => {
                if c.yearday < 100 {
                    out.push(' ');
                    if c.yearday < 10 {
                        out.push(' ');
                    }
                }
                push_int(&mut out, i64::from(c.yearday), 0);
            }
            Std::ZeroYearDay => push_int(&mut out, i64::from(c.yearday), 3),
            Std::Hour => push_int(&mut out, i64::from(c.hour), 2),
            Std::Hour12 => push_int(&mut out, i64::from(hour12), 0),
            Std::ZeroHour12 => push_int(&mut out, i64::from(hour12), 2),
            Std::Minute => push_int(&mut out, i64::from(c.minute), 0),
            Std::ZeroMinute => push_int(&mut out, i64::from(c.minute), 2),
            Std::Second => push_int(&mut out, i64::from(c.second), 0),
            Std::ZeroSecond => push_int(&mut out, i64::from(c.second), 2),
            Std::PM => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Std::Pm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Std::Iso8601TZ
            | Std::Iso8601ColonTZ
            | Std::Iso8601SecondsTZ
            | Std::Iso8601ShortTZ
            | Std::Iso8601ColonSecondsTZ
            | Std::NumTZ
            | Std::NumColonTZ
            | Std::NumSecondsTz
            | Std::NumShortTZ
            | Std::NumColonSecondsTZ => {
                let iso = matches!(
                    std,
                    Std::Iso8601TZ
                        | Std::Iso8601ColonTZ
                        | Std::Iso8601SecondsTZ
                        | Std::Iso8601ShortTZ
                        | Std::Iso8601ColonSecondsTZ
                );
                if iso && c.offset == 0 {
                    out.push('Z');
                    continue;
                }
                let mut zone = c.offset / 60;
                let mut abs = c.offset;
                if zone < 0 {
                    out.push('-');
                    zone = -zone;
                    abs = -abs;
                } else {
                    out.push('+');
                }
                push_int(&mut out, i64::from(zone / 60), 2);
                let colon = matches!(
                    std,
                    Std::Iso8601ColonTZ
                        | Std::NumColonTZ
                        | Std::Iso8601ColonSecondsTZ
                        | Std::NumColonSecondsTZ
                );
                if colon {
                    out.push(':');
                }
                if !matches!(std, Std::NumShortTZ | Std::Iso8601ShortTZ) {
                    push_int(&mut out, i64::from(zone % 60), 2);
                }
                if matches!(
                    std,
                    Std::Iso8601SecondsTZ
                        | Std::NumSecondsTz
                        | Std::NumColonSecondsTZ
                        | Std::Iso8601ColonSecondsTZ
                ) {
                    if colon {
                        out.push(':');
                    }
                    push_int(&mut out, i64::from(abs % 60), 2);
                }
            }
            Std::TZ => {
                if !c.zone.is_empty() {
                    out.push_str(&c.zone);
                    continue;
                }
                let mut zone = c.offset / 60;
                if zone < 0 {
                    out.push('-');
                    zone = -zone;
                } else {
                    out.push('+');
                }
                push_int(&mut out, i64::from(zone / 60), 2);
                push_int(&mut out, i64::from(zone % 60), 2);
            }
            Std::Frac0(n, sep) | Std::Frac9(n, sep) => {
                let digits = format!("{:09}", c.nanosecond);
                let mut d = &digits[..n.min(9)];
                if matches!(std, Std::Frac9(..)) {
                    d = d.trim_end_matches('0');
                    if d.is_empty() {
                        continue;
                    }
                }
                out.push(sep as char);
                out.push_str(d);
            }
        }
    }
    out
}

/// Go's `time.ParseError`.
fn parse_error(layout: &str, value: &str, layout_elem: &str, value_elem: &str, msg: &str) -> String {
    use gocompat::strconv::quote;
    if msg.is_empty() {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(value_elem),
            quote(layout_elem)
        )
    } else {
        format!("parsing time {}{msg}", quote(value))
    }
}

fn is_digit(s: &str, i: usize) -> bool {
    s.as_bytes().get(i).is_some_and(u8::is_ascii_digit)
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    if !is_digit(s, 0) {
        return None;
    }
    let b = s.as_bytes();
    if !is_digit(s, 1) {
        if fixed {
            return None;
        }
        return Some((i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'), &s[2..]))
}

/// Go's `getnum3`: up to three digits (exactly three when `fixed`).
fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let mut n = 0;
    let mut i = 0;
    while i < 3 && is_digit(s, i) {
        n = n * 10 + i64::from(s.as_bytes()[i] - b'0');
        i += 1;
    }
    if i == 0 || (fixed && i != 3) {
        return None;
    }
    Some((n, &s[i..]))
}

/// Go's `lookup`: a case-insensitive (ASCII letters) prefix match against a name table.
fn lookup<'v>(names: &[&str], val: &'v str, len: Option<usize>) -> Option<(usize, &'v str)> {
    for (i, name) in names.iter().enumerate() {
        let name = match len {
            Some(n) => &name[..n],
            None => name,
        };
        if let Some(head) = val.as_bytes().get(..name.len())
            && head
                .iter()
                .zip(name.bytes())
                .all(|(&a, b)| a == b || (a | 0x20 == b | 0x20 && (a | 0x20).is_ascii_lowercase()))
        {
            return Some((i, &val[name.len()..]));
        }
    }
    None
}

/// Go's `skip`: matches a literal layout prefix byte for byte (a space matches any run of
/// spaces). On failure, returns the unmatched rest of the value.
fn skip<'v>(value: &'v str, prefix: &str) -> Result<&'v str, &'v str> {
    let (v, p) = (value.as_bytes(), prefix.as_bytes());
    let (mut i, mut j) = (0, 0);
    // A mismatch can only happen at a character boundary of the value: every earlier byte
    // matched the (valid UTF-8) prefix, so whole characters were consumed.
    let rest = |i: usize| value.get(i..).unwrap_or("");
    while j < p.len() {
        if p[j] == b' ' {
            if i < v.len() && v[i] != b' ' {
                return Err(rest(i));
            }
            while j < p.len() && p[j] == b' ' {
                j += 1;
            }
            while i < v.len() && v[i] == b' ' {
                i += 1;
            }
            continue;
        }
        if i >= v.len() || v[i] != p[j] {
            return Err(rest(i));
        }
        i += 1;
        j += 1;
    }
    Ok(rest(i))
}

/// Go's `leadingInt` for offsets (no overflow concerns at this size).
fn leading_digits(s: &str) -> (i64, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let v = s[..n].bytes().fold(0i64, |a, c| {
        a.saturating_mul(10).saturating_add(i64::from(c - b'0'))
    });
    (v, &s[n..])
}

/// Go's `parseSignedOffset`: the length of `+hh`/`-hh` (hours up to 23), or 0.
fn parse_signed_offset(value: &str) -> usize {
    let Some(&sign) = value.as_bytes().first() else {
        return 0;
    };
    if sign != b'-' && sign != b'+' {
        return 0;
    }
    let (x, rem) = leading_digits(&value[1..]);
    if rem.len() == value.len() - 1 || x > 23 {
        return 0;
    }
    value.len() - rem.len()
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start of `value`.
fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if b.len() >= 4 && (&b[..4] == b"ChST" || &b[..4] == b"MeST") {
        return Some(4);
    }
    if &b[..3] == b"GMT" {
        return Some(
            3 + if b.len() > 3 {
                parse_signed_offset(&value[3..])
            } else {
                0
            },
        );
    }
    if b[0] == b'+' || b[0] == b'-' {
        let n = parse_signed_offset(value);
        return (n > 0).then_some(n);
    }
    let upper = b.iter().take(6).take_while(|c| c.is_ascii_uppercase()).count();
    match upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || &b[..4] == b"WITA" => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// Go's `parseNanoseconds`: a separator and digits (at most 9 count) as nanoseconds.
fn parse_nanoseconds(value: &str, nbytes: usize) -> Option<u32> {
    if !matches!(value.as_bytes().first(), Some(b'.' | b',')) {
        return None;
    }
    let nbytes = nbytes.min(10);
    let digits = value.get(1..nbytes)?;
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut ns: u32 = digits.parse().unwrap_or(0);
    for _ in 0..10 - nbytes {
        ns *= 10;
    }
    Some(ns)
}

/// Splits a numeric zone offset at the start of `value` into sign, hours, minutes, seconds and
/// the length consumed, by the element's shape (Go slices by byte; so do we, refusing a cut
/// inside a character).
fn offset_parts(std: Std, value: &str) -> Option<(u8, &str, &str, &str, usize)> {
    let b = value.as_bytes();
    let sub = |a: usize, z: usize| value.get(a..z);
    match std {
        Std::Iso8601ColonTZ | Std::NumColonTZ => {
            if b.len() < 6 || b[3] != b':' {
                return None;
            }
            Some((b[0], sub(1, 3)?, sub(4, 6)?, "00", 6))
        }
        Std::NumShortTZ | Std::Iso8601ShortTZ => {
            if b.len() < 3 {
                return None;
            }
            Some((b[0], sub(1, 3)?, "00", "00", 3))
        }
        Std::Iso8601ColonSecondsTZ | Std::NumColonSecondsTZ => {
            if b.len() < 9 || b[3] != b':' || b[6] != b':' {
                return None;
            }
            Some((b[0], sub(1, 3)?, sub(4, 6)?, sub(7, 9)?, 9))
        }
        Std::Iso8601SecondsTZ | Std::NumSecondsTz => {
            if b.len() < 7 {
                return None;
            }
            Some((b[0], sub(1, 3)?, sub(3, 5)?, sub(5, 7)?, 7))
        }
        _ => {
            if b.len() < 5 {
                return None;
            }
            Some((b[0], sub(1, 3)?, sub(3, 5)?, "00", 5))
        }
    }
}

/// Days before the first of a month in a non-leap year.
fn days_before(m: u32) -> i64 {
    (1..m).map(|k| i64::from(days_in(k, 2001))).sum()
}

/// Go's `time.ParseInLocation(layout, value, loc)` with `loc` as both the default and the
/// local zone (as sprig's `toDate` calls it with `time.Local`). Errors are Go's texts.
pub fn parse(layout_in: &str, value_in: &str, loc: &Zone) -> Result<GoTime, String> {
    let (mut layout, mut value) = (layout_in, value_in);
    let mut range_err = "";
    let (mut am, mut pm) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0u32);
    let mut z: Option<Zone> = None;
    let mut zone_offset: Option<i32> = None;
    let mut zone_name = String::new();
    let err = |le: &str, ve: &str, msg: &str| parse_error(layout_in, value_in, le, ve, msg);
    loop {
        let (prefix, std, suffix) = next_std_chunk(layout);
        let std_str = &layout[prefix.len()..layout.len() - suffix.len()];
        value = skip(value, prefix).map_err(|v| err(prefix, v, ""))?;
        let Some(std) = std else {
            if !value.is_empty() {
                return Err(err(
                    "",
                    value,
                    &format!(": extra text: {}", gocompat::strconv::quote(value)),
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        let mut bad = false;
        match std {
            Std::Year => match value.get(..2).and_then(|p| p.parse::<i64>().ok().map(|y| (p, y))) {
                Some((p, y)) if p.bytes().all(|c| c.is_ascii_digit()) => {
                    year = if y >= 69 { y + 1900 } else { y + 2000 };
                    value = &value[2..];
                }
                _ => bad = true,
            },
            Std::LongYear => {
                if value.len() < 4 || !is_digit(value, 0) {
                    bad = true;
                } else {
                    match value.get(..4).and_then(go_atoi) {
                        Some(y) => {
                            year = y;
                            value = &value[4..];
                        }
                        None => bad = true,
                    }
                }
            }
            Std::Month | Std::LongMonth => {
                let len = (std == Std::Month).then_some(3);
                match lookup(&LONG_MONTHS, value, len) {
                    Some((i, r)) => {
                        month = i as i64 + 1;
                        value = r;
                    }
                    None => bad = true,
                }
            }
            Std::NumMonth | Std::ZeroMonth => match getnum(value, std == Std::ZeroMonth) {
                Some((m, r)) => {
                    month = m;
                    value = r;
                    if !(1..=12).contains(&m) {
                        range_err = "month";
                    }
                }
                None => bad = true,
            },
            Std::WeekDay | Std::LongWeekDay => {
                let len = (std == Std::WeekDay).then_some(3);
                match lookup(&LONG_DAYS, value, len) {
                    Some((_, r)) => value = r,
                    None => bad = true,
                }
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && value.starts_with(' ') {
                    value = &value[1..];
                }
                match getnum(value, std == Std::ZeroDay) {
                    Some((d, r)) => {
                        day = d;
                        value = r;
                    }
                    None => bad = true,
                }
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                for _ in 0..2 {
                    if std == Std::UnderYearDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                }
                match getnum3(value, std == Std::ZeroYearDay) {
                    Some((d, r)) => {
                        yday = d;
                        value = r;
                    }
                    None => bad = true,
                }
            }
            Std::Hour => match getnum(value, false) {
                Some((h, r)) => {
                    hour = h;
                    value = r;
                    if h >= 24 {
                        range_err = "hour";
                    }
                }
                None => bad = true,
            },
            Std::Hour12 | Std::ZeroHour12 => match getnum(value, std == Std::ZeroHour12) {
                Some((h, r)) => {
                    hour = h;
                    value = r;
                    if h > 12 {
                        range_err = "hour";
                    }
                }
                None => bad = true,
            },
            Std::Minute | Std::ZeroMinute => match getnum(value, std == Std::ZeroMinute) {
                Some((m, r)) => {
                    min = m;
                    value = r;
                    if m >= 60 {
                        range_err = "minute";
                    }
                }
                None => bad = true,
            },
            Std::Second | Std::ZeroSecond => match getnum(value, std == Std::ZeroSecond) {
                Some((s, r)) => {
                    sec = s;
                    value = r;
                    if s >= 60 {
                        range_err = "second";
                    } else if value.len() >= 2
                        && matches!(value.as_bytes()[0], b'.' | b',')
                        && is_digit(value, 1)
                    {
                        // A fractional second after the seconds, unless the layout has one.
                        let (_, next, _) = next_std_chunk(layout);
                        if !matches!(next, Some(Std::Frac0(..) | Std::Frac9(..))) {
                            let mut n = 2;
                            while is_digit(value, n) {
                                n += 1;
                            }
                            match parse_nanoseconds(value, n) {
                                Some(ns) => nsec = ns,
                                None => bad = true,
                            }
                            value = &value[n..];
                        }
                    }
                }
                None => bad = true,
            },
            Std::PM | Std::Pm => match value.get(..2) {
                Some(p) => {
                    let (a, b) = if std == Std::PM {
                        ("AM", "PM")
                    } else {
                        ("am", "pm")
                    };
                    if p == b {
                        pm = true;
                    } else if p == a {
                        am = true;
                    } else {
                        bad = true;
                    }
                    value = &value[2..];
                }
                None => bad = true,
            },
            Std::Iso8601TZ
            | Std::Iso8601ShortTZ
            | Std::Iso8601ColonTZ
            | Std::Iso8601SecondsTZ
            | Std::Iso8601ColonSecondsTZ
                if value.starts_with('Z') =>
            {
                value = &value[1..];
                z = Some(Zone::Utc);
            }
            Std::Iso8601TZ
            | Std::Iso8601ShortTZ
            | Std::Iso8601ColonTZ
            | Std::Iso8601SecondsTZ
            | Std::Iso8601ColonSecondsTZ
            | Std::NumTZ
            | Std::NumShortTZ
            | Std::NumColonTZ
            | Std::NumSecondsTz
            | Std::NumColonSecondsTZ => {
                let parts = offset_parts(std, value);
                // Slicing above is by byte; a multi-byte character makes the value unparsable.
                match parts {
                    Some((sign, h, m, s, n)) if value.is_char_boundary(n) => {
                        value = &value[n..];
                        match (getnum(h, true), getnum(m, true), getnum(s, true)) {
                            (Some((hr, _)), Some((mm, _)), Some((ss, _))) => {
                                if hr > 24 {
                                    range_err = "time zone offset hour";
                                }
                                if mm > 60 {
                                    range_err = "time zone offset minute";
                                }
                                if ss > 60 {
                                    range_err = "time zone offset second";
                                }
                                let off = ((hr * 60 + mm) * 60 + ss) as i32;
                                match sign {
                                    b'+' => zone_offset = Some(off),
                                    b'-' => zone_offset = Some(-off),
                                    _ => bad = true,
                                }
                            }
                            _ => bad = true,
                        }
                    }
                    _ => bad = true,
                }
            }
            Std::TZ => {
                if value.starts_with("UTC") {
                    z = Some(Zone::Utc);
                    value = &value[3..];
                } else {
                    match parse_time_zone(value) {
                        Some(n) if value.is_char_boundary(n) => {
                            zone_name = value[..n].to_string();
                            value = &value[n..];
                        }
                        _ => bad = true,
                    }
                }
            }
            Std::Frac0(n, _) => {
                let ndigit = 1 + n;
                if value.len() < ndigit {
                    bad = true;
                } else {
                    match parse_nanoseconds(value, ndigit) {
                        Some(ns) => nsec = ns,
                        None => bad = true,
                    }
                    value = value.get(ndigit..).unwrap_or("");
                }
            }
            Std::Frac9(..) => {
                let b = value.as_bytes();
                if b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
                    let mut i = 0;
                    while i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                        i += 1;
                    }
                    match parse_nanoseconds(value, 1 + i) {
                        Some(ns) => nsec = ns,
                        None => bad = true,
                    }
                    value = &value[1 + i..];
                }
            }
        }
        if !range_err.is_empty() {
            return Err(err(std_str, value, &format!(": {range_err} out of range")));
        }
        if bad {
            return Err(err(std_str, hold, ""));
        }
    }
    if pm && hour < 12 {
        hour += 12;
    } else if am && hour == 12 {
        hour = 0;
    }
    if yday >= 0 {
        let mut d = 0;
        let mut m = 0;
        if is_leap(year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return Err(err("", value, ": day-of-year out of range"));
        }
        if m == 0 {
            m = (yday - 1) / 31 + 1;
            if days_before(m as u32 + 1) < yday {
                m += 1;
            }
            d = yday - days_before(m as u32);
        }
        if month >= 0 && month != m {
            return Err(err("", value, ": day-of-year does not match month"));
        }
        month = m;
        if day >= 0 && day != d {
            return Err(err("", value, ": day-of-year does not match day"));
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > i64::from(days_in(month as u32, year)) {
        return Err(err("", value, ": day out of range"));
    }
    let civil = Civil {
        year,
        month: month as u32,
        day: day as u32,
        hour: hour as u32,
        minute: min as u32,
        second: sec as u32,
        nanosecond: nsec,
        weekday: 0,
        yearday: 0,
        offset: 0,
        zone: String::new(),
    };
    if let Some(z) = z {
        return Ok(GoTime::from_civil(&civil, z));
    }
    if let Some(off) = zone_offset {
        let mut t = GoTime::from_civil(&civil, Zone::Utc);
        t.unix = t.unix.wrapping_sub(i64::from(off));
        let (local_off, local_name) = loc.lookup(t.unix);
        if local_off == off && (zone_name.is_empty() || local_name == zone_name) {
            t.zone = loc.clone();
        } else {
            t.zone = Zone::Fixed {
                name: zone_name,
                offset: off,
            };
        }
        return Ok(t);
    }
    if !zone_name.is_empty() {
        let mut t = GoTime::from_civil(&civil, Zone::Utc);
        let (local_off, local_name) = loc.lookup(t.unix.wrapping_sub(i64::from(loc.lookup(t.unix).0)));
        if local_name == zone_name {
            t.unix = t.unix.wrapping_sub(i64::from(local_off));
            t.zone = loc.clone();
            return Ok(t);
        }
        let mut offset = 0;
        if zone_name.len() > 3 && zone_name.starts_with("GMT") {
            offset = go_atoi(&zone_name[3..]).unwrap_or(0) as i32 * 3600;
        }
        t.zone = Zone::Fixed {
            name: zone_name,
            offset,
        };
        return Ok(t);
    }
    Ok(GoTime::from_civil(&civil, loc.clone()))
}

/// Go's `time.atoi`: an optional sign and decimal digits.
fn go_atoi(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (v, _) = leading_digits(digits);
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(unix: i64, nsec: u32) -> GoTime {
        GoTime {
            unix,
            nsec,
            zone: Zone::Utc,
            mono: None,
        }
    }

    #[test]
    fn formats_reference_layouts() {
        let t = utc(1_136_214_245, 123_456_000); // 2006-01-02 15:04:05.123456 UTC (a Monday)
        assert_eq!(
            t.format("Mon Jan _2 15:04:05 MST 2006"),
            "Mon Jan  2 15:04:05 UTC 2006"
        );
        assert_eq!(
            t.format("2006-01-02T15:04:05.999999999Z07:00"),
            "2006-01-02T15:04:05.123456Z"
        );
        assert_eq!(
            t.format("3:04PM .000 ,00 __2 002 06 January Monday"),
            "3:04PM .123 ,12   2 002 06 January Monday"
        );
        let f = GoTime {
            zone: Zone::Fixed {
                name: String::new(),
                offset: -(7 * 3600 + 30 * 60),
            },
            ..t
        };
        assert_eq!(f.format("-07:00:00 -0700 Z07 MST"), "-07:30:00 -0730 -07 -0730");
    }

    #[test]
    fn parses_reference_layouts() {
        let t = parse(
            "2006-01-02T15:04:05Z07:00",
            "2024-02-29T12:30:00+02:00",
            &Zone::Utc,
        );
        assert_eq!(
            t.map(|t| t.go_string()).as_deref(),
            Ok("2024-02-29 12:30:00 +0200 +0200")
        );
        let e = parse("2006-01-02", "2024-13-01", &Zone::Utc).err();
        assert_eq!(
            e.as_deref(),
            Some("parsing time \"2024-13-01\": month out of range")
        );
        let e = parse("2006-01-02", "24-01-01", &Zone::Utc).err();
        assert_eq!(
            e.as_deref(),
            Some("parsing time \"24-01-01\" as \"2006-01-02\": cannot parse \"24-01-01\" as \"2006\"")
        );
        let t = parse("Jan 2 2006 3:04pm", "feb 3 2021 12:05am", &Zone::Utc);
        assert_eq!(
            t.map(|t| t.go_string()).as_deref(),
            Ok("2021-02-03 00:05:00 +0000 UTC")
        );
        assert!(parse("2006 é", "2024 é", &Zone::Utc).is_ok());
        assert!(parse("-0700", "+é0", &Zone::Utc).is_err());
    }
}
