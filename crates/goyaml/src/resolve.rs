//! Implicit typing of plain scalars (`resolve.go`): whether a string written
//! without quotes would read back as something other than a string. go-yaml
//! double-quotes every string for which this is true.

/// Words of the YAML 1.1 bool, null, float and merge tables that go-yaml v2
/// looks up by exact spelling.
const WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No", "NO",
    "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN",
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
];

/// Whether go-yaml's `resolve("", s)` gives a tag other than `!!str`, or
/// `s` is a YAML 1.1 base-60 float (which go-yaml also quotes).
pub(crate) fn needs_quotes(s: &str) -> bool {
    resolves_to_non_string(s) || is_base60_float(s)
}

/// go-yaml's `resolve` with an empty tag, reduced to "is it not a string".
fn resolves_to_non_string(s: &str) -> bool {
    let first = s.as_bytes().first().copied();
    // The hint table: only these first bytes (or the empty string) lead to
    // anything but a string.
    let hint = match first {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        _ => return false,
    };
    if WORDS.contains(&s) {
        return true;
    }
    match hint {
        b'.' => parses_as_go_float(s),
        b'D' | b'S' => {
            if crate::timestamp::is_timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if go_parse_int(&plain) || go_parse_uint(&plain) {
                return true;
            }
            if yaml_style_float(&plain) && parses_as_go_float(&plain) {
                return true;
            }
            // go-yaml's own binary fallbacks, which also take a sign after
            // the prefix ("0b-1", "0b+1").
            if let Some(rest) = plain.strip_prefix("0b") {
                return go_parse_int_radix(rest, 2) || go_parse_uint_radix(rest, 2);
            }
            if let Some(rest) = plain.strip_prefix("-0b") {
                return go_parse_int_radix(&format!("-{rest}"), 2);
            }
            false
        }
        _ => false,
    }
}

/// The decimal-float syntax `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` succeeding, for the strings that reach it
/// here (they start with `.`, a sign or a digit, so Go's hexadecimal and
/// `inf`/`nan` forms cannot occur): decimal digits with at most one `.`, an
/// optional exponent, underscores only between digits (Go literal syntax),
/// the whole string used, and no overflow to infinity.
fn parses_as_go_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let (mut sawdot, mut sawdigits, mut underscores) = (false, false, false);
    while let Some(&c) = b.get(i) {
        match c {
            b'_' => underscores = true,
            b'.' if !sawdot => sawdot = true,
            b'0'..=b'9' => sawdigits = true,
            _ => break,
        }
        i += 1;
    }
    if !sawdigits {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return false;
        }
        while let Some(&c) = b.get(i) {
            match c {
                b'_' => underscores = true,
                b'0'..=b'9' => {}
                _ => break,
            }
            i += 1;
        }
    }
    if i != b.len() || (underscores && !underscore_ok(s)) {
        return false;
    }
    // Go reports overflow to infinity as an error; underflow is fine.
    let digits: String = s.chars().filter(|&c| c != '_').collect();
    let normalized = digits.replace("+.", "+0.").replace("-.", "-0.");
    let normalized = if normalized.starts_with('.') {
        format!("0{normalized}")
    } else {
        normalized
    };
    match normalized.parse::<f64>() {
        Ok(f) => f.is_finite(),
        Err(_) => true,
    }
}

/// Go's `underscoreOK` for a decimal number: every underscore sits between
/// two digits.
fn underscore_ok(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    // What was seen last: '^' start, '0' digit, '_' underscore, '!' other.
    let mut saw = '^';
    for c in body.chars() {
        if c.is_ascii_digit() {
            saw = '0';
        } else if c == '_' {
            if saw != '0' {
                return false;
            }
            saw = '_';
        } else {
            if saw == '_' {
                return false;
            }
            saw = '!';
        }
    }
    saw != '_'
}

/// Split a Go integer literal (base 0 syntax, no underscores) into sign,
/// radix and digits.
fn int_parts(s: &str) -> (bool, u32, &str) {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = rest.get(..2).map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("0x") => (neg, 16, &rest[2..]),
        Some("0o") => (neg, 8, &rest[2..]),
        Some("0b") => (neg, 2, &rest[2..]),
        _ if rest.len() > 1 && rest.starts_with('0') => (neg, 8, &rest[1..]),
        _ => (neg, 10, rest),
    }
}

/// The magnitude of the digits in `radix`, if they are all valid and fit.
fn magnitude(digits: &str, radix: u32) -> Option<u128> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u128 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        n = n.checked_mul(u128::from(radix))?.checked_add(u128::from(d))?;
        if n > u128::from(u64::MAX) + 1 {
            return None;
        }
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)` succeeding.
fn go_parse_int(s: &str) -> bool {
    let (neg, radix, digits) = int_parts(s);
    match magnitude(digits, radix) {
        Some(n) if neg => n <= 1u128 << 63,
        Some(n) => n < 1u128 << 63,
        None => false,
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` succeeding (no sign allowed).
fn go_parse_uint(s: &str) -> bool {
    if s.starts_with(['+', '-']) {
        return false;
    }
    let (_, radix, digits) = int_parts(s);
    matches!(magnitude(digits, radix), Some(n) if n <= u128::from(u64::MAX))
}

/// Go's `strconv.ParseInt(s, radix, 64)` succeeding.
fn go_parse_int_radix(s: &str, radix: u32) -> bool {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    match magnitude(digits, radix) {
        Some(n) if neg => n <= 1u128 << 63,
        Some(n) => n < 1u128 << 63,
        None => false,
    }
}

/// Go's `strconv.ParseUint(s, radix, 64)` succeeding (no sign allowed).
fn go_parse_uint_radix(s: &str, radix: u32) -> bool {
    !s.starts_with(['+', '-']) && matches!(magnitude(s, radix), Some(n) if n <= u128::from(u64::MAX))
}

/// go-yaml's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += 1;
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        // [0-5]?[0-9]: one digit, or a 0-5 digit followed by a digit.
        let d1 = b.get(i).copied();
        let d2 = b.get(i + 1).copied();
        match (d1, d2) {
            (Some(b'0'..=b'5'), Some(b'0'..=b'9')) => i += 2,
            (Some(b'0'..=b'9'), _) => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_numbers() {
        for s in [
            "", "~", "null", "yes", "On", "N", "1", "-1", "0x1F", "0o17", "017", "08", "1e3", "1_000", "+1",
            ".5", "1.",
        ] {
            assert!(needs_quotes(s), "{s:?}");
        }
        for s in [
            "a", "nULL", "0x", "1e", "._5", ".5_", ".5_e3", ".5e_3", ".5.5", "-0b-1", "0b", "0xZZ", "1-2",
            "yess", "-", "+", "1e999", ".1e999",
        ] {
            assert!(!needs_quotes(s), "{s:?}");
        }
    }

    #[test]
    fn base60() {
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("-1_0:59:3.5_"));
        assert!(!is_base60_float("1:60"));
        assert!(!is_base60_float("1:"));
        assert!(!is_base60_float("a:1"));
    }
}
