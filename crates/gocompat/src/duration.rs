//! Go's `time.Duration`: `String()` and `time.ParseDuration`, with Go's texts.

/// One nanosecond, the unit of a [`Duration`](i64).
pub const NANOSECOND: i64 = 1;
/// One second in nanoseconds.
pub const SECOND: i64 = 1_000_000_000;
/// One minute in nanoseconds.
pub const MINUTE: i64 = 60 * SECOND;
/// One hour in nanoseconds.
pub const HOUR: i64 = 60 * MINUTE;

/// Go's `Duration.String()`: `72h3m0.5s`, `1.5µs`, `0s`.
pub fn format(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < SECOND as u64 {
        if u == 0 {
            return "0s".to_string();
        }
        let (prec, unit) = if u < 1_000 {
            (0, "ns")
        } else if u < 1_000_000 {
            (3, "µs")
        } else {
            (6, "ms")
        };
        let (frac, int) = fraction(u, prec);
        out.push_str(&int.to_string());
        out.push_str(&frac);
        out.push_str(unit);
    } else {
        let (frac, secs) = fraction(u, 9);
        u = secs;
        let s = u % 60;
        u /= 60;
        if u > 0 {
            let m = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&u.to_string());
                out.push('h');
            }
            out.push_str(&m.to_string());
            out.push('m');
        }
        out.push_str(&s.to_string());
        out.push_str(&frac);
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Go's `fmtFrac`: the `prec` low decimal digits of `v` as `.ddd` without trailing zeros (empty
/// when they are all zero), and `v` without them.
fn fraction(v: u64, prec: u32) -> (String, u64) {
    let scale = 10u64.pow(prec);
    let mut f = v % scale;
    if f == 0 {
        return (String::new(), v / scale);
    }
    let mut digits = prec as usize;
    while f.is_multiple_of(10) {
        f /= 10;
        digits -= 1;
    }
    (format!(".{f:0digits$}"), v / scale)
}

fn unit(u: &str) -> Option<u64> {
    Some(match u {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => SECOND as u64,
        "m" => MINUTE as u64,
        "h" => HOUR as u64,
        _ => return None,
    })
}

const LIMIT: u64 = 1 << 63;

/// Go's `leadingInt`: the leading digits, or `None` on overflow.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut x: u64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(b[i] - b'0');
        if x > LIMIT {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `leadingFraction`: digits after a decimal point, the scale, and the rest.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut x: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(b[i - 1] - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

/// Go's `time.ParseDuration`: a signed sequence of decimal numbers with units
/// (`ns us µs ms s m h`), such as `300ms`, `-1.5h`, `2h45m`; errors read as Go's.
pub fn parse(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", crate::strconv::quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.bytes().next()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let c = s.as_bytes()[0];
        if !(c == b'.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (v, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = before != s.len();
        let mut post = false;
        let (mut f, mut scale) = (0u64, 1.0f64);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            let (ff, sc, rest) = leading_fraction(rest);
            (f, scale) = (ff, sc);
            post = before != rest.len();
            s = rest;
        }
        if !pre && !post {
            return Err(invalid());
        }
        let i = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                crate::strconv::quote(orig)
            ));
        }
        let u = &s[..i];
        s = &s[i..];
        let Some(unit) = unit(u) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                crate::strconv::quote(u),
                crate::strconv::quote(orig)
            ));
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        let mut v = v * unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        d += v;
        if d > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(d as i64)
}

/// A Go duration that is not negative, as a [`std::time::Duration`] (`10s`, `1m30s`, `250ms`);
/// `None` for a negative one and for text [`parse`] rejects.
pub fn parse_non_negative(text: &str) -> Option<std::time::Duration> {
    if text.starts_with('-') {
        return None;
    }
    let nanos = parse(text).ok()?;
    u64::try_from(nanos).ok().map(std::time::Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        assert_eq!(format(0), "0s");
        assert_eq!(format(3723 * SECOND), "1h2m3s");
        assert_eq!(format(1_500_000_000), "1.5s");
        assert_eq!(format(1_500), "1.5µs");
        assert_eq!(format(-2 * HOUR), "-2h0m0s");
        assert_eq!(format(61 * SECOND + 5_000_000), "1m1.005s");
        assert_eq!(format(i64::MIN), "-2562047h47m16.854775808s");
    }

    #[test]
    fn parses_like_go() {
        assert_eq!(parse("1h2m3s"), Ok(3723 * SECOND));
        assert_eq!(parse("-1.5h"), Ok(-90 * MINUTE));
        assert_eq!(parse(".5s"), Ok(500_000_000));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("1"), Err("time: missing unit in duration \"1\"".into()));
        assert_eq!(
            parse("1x"),
            Err("time: unknown unit \"x\" in duration \"1x\"".into())
        );
        assert_eq!(parse(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(parse("-9223372036854775808ns"), Ok(i64::MIN));
        assert!(parse("9223372036854775808ns").is_err());
    }

    #[test]
    fn non_negative_durations_as_std() {
        use std::time::Duration;
        assert_eq!(parse_non_negative("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_non_negative("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_non_negative("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_non_negative("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_non_negative("100us"), Some(Duration::from_micros(100)));
        assert_eq!(parse_non_negative("100µs"), Some(Duration::from_micros(100)));
        assert_eq!(parse_non_negative("+2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_non_negative("0"), Some(Duration::ZERO));
        for rejected in ["", "10", "-1s", "-0", "1x", "s", "9223372037s"] {
            assert_eq!(parse_non_negative(rejected), None, "{rejected}");
        }
    }
}
