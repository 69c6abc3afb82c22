//! The parts of Go's `strconv` the parser needs: `Unquote`, `UnquoteChar` and number parsing
//! with base prefixes and underscores (`ParseInt(s, 0, 64)`, `ParseFloat`).

/// Go's `strconv.ErrSyntax` text.
pub const ERR_SYNTAX: &str = "invalid syntax";

/// Decodes one (possibly escaped) character from `s` inside a literal quoted by `quote`.
/// Returns the character (or byte value for `\x`/octal escapes, flagged by the bool) and the
/// remaining input.
pub fn unquote_char(s: &str, quote: char) -> Result<(u32, bool, &str), &'static str> {
    let mut chars = s.chars();
    let c = chars.next().ok_or(ERR_SYNTAX)?;
    if c == quote && (quote == '\'' || quote == '"') {
        return Err(ERR_SYNTAX);
    }
    if c != '\\' {
        return Ok((c as u32, false, chars.as_str()));
    }
    let c = chars.next().ok_or(ERR_SYNTAX)?;
    let rest = chars.as_str();
    let simple = match c {
        'a' => Some(7),
        'b' => Some(8),
        'f' => Some(12),
        'n' => Some(10),
        'r' => Some(13),
        't' => Some(9),
        'v' => Some(11),
        '\\' => Some(u32::from(b'\\')),
        '\'' | '"' => {
            if c != quote {
                return Err(ERR_SYNTAX);
            }
            Some(c as u32)
        }
        _ => None,
    };
    if let Some(v) = simple {
        return Ok((v, false, rest));
    }
    match c {
        'x' | 'u' | 'U' => {
            let n = match c {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            let digits = rest.get(..n).ok_or(ERR_SYNTAX)?;
            let v = u32::from_str_radix(digits, 16).map_err(|_| ERR_SYNTAX)?;
            if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ERR_SYNTAX);
            }
            let rest = rest.get(n..).ok_or(ERR_SYNTAX)?;
            if c == 'x' {
                return Ok((v, true, rest));
            }
            if char::from_u32(v).is_none() {
                return Err(ERR_SYNTAX);
            }
            Ok((v, false, rest))
        }
        '0'..='7' => {
            let digits = s.get(1..4).ok_or(ERR_SYNTAX)?;
            if !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return Err(ERR_SYNTAX);
            }
            let v = u32::from_str_radix(digits, 8).map_err(|_| ERR_SYNTAX)?;
            if v > 255 {
                return Err(ERR_SYNTAX);
            }
            Ok((v, true, s.get(4..).ok_or(ERR_SYNTAX)?))
        }
        _ => Err(ERR_SYNTAX),
    }
}

/// Go's `strconv.Unquote` for `"..."`, `` `...` `` and `'.'` literals. The result may contain
/// arbitrary bytes (from `\x` escapes), so it is returned as bytes.
pub fn unquote_bytes(s: &str) -> Result<Vec<u8>, &'static str> {
    let mut chars = s.chars();
    let q = chars.next().ok_or(ERR_SYNTAX)?;
    if s.len() < 2 || !s.ends_with(q) {
        return Err(ERR_SYNTAX);
    }
    let inner = s.get(1..s.len() - 1).ok_or(ERR_SYNTAX)?;
    match q {
        '`' => {
            if inner.contains('`') {
                return Err(ERR_SYNTAX);
            }
            // Raw strings drop carriage returns.
            Ok(inner.replace('\r', "").into_bytes())
        }
        '"' | '\'' => {
            if inner.contains('\n') {
                return Err(ERR_SYNTAX);
            }
            let mut out = Vec::with_capacity(inner.len());
            let mut rest = inner;
            let mut count = 0;
            while !rest.is_empty() {
                let (v, is_byte, r) = unquote_char(rest, q)?;
                if is_byte {
                    out.push(v as u8);
                } else if let Some(c) = char::from_u32(v) {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                rest = r;
                count += 1;
                if q == '\'' && count > 1 {
                    return Err(ERR_SYNTAX);
                }
            }
            if q == '\'' && count != 1 {
                return Err(ERR_SYNTAX);
            }
            Ok(out)
        }
        _ => Err(ERR_SYNTAX),
    }
}

/// Go's `strconv.Unquote`, with invalid UTF-8 (from byte escapes) replaced lossily.
pub fn unquote(s: &str) -> Result<String, &'static str> {
    // Fast path (as Go's): a literal without escapes, inner quotes or line breaks is its inside.
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] {
        let inner = &b[1..b.len() - 1];
        let plain = match b[0] {
            b'"' => !inner.iter().any(|&c| matches!(c, b'"' | b'\\' | b'\n')),
            b'`' => !inner.iter().any(|&c| matches!(c, b'`' | b'\r')),
            _ => false,
        };
        if plain && let Some(t) = s.get(1..s.len() - 1) {
            return Ok(t.to_string());
        }
    }
    unquote_bytes(s).map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Whether underscores in a literal with base prefix are placed as Go allows.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut s = b;
    if !s.is_empty() && (s[0] == b'-' || s[0] == b'+') {
        s = &s[1..];
    }
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = s[1].eq_ignore_ascii_case(&b'x');
    }
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub fn parse_uint(s: &str) -> Option<u64> {
    if s.is_empty() || s.starts_with(['+', '-']) {
        return None;
    }
    let (base, digits) = base_prefix(s);
    if digits.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    u64::from_str_radix(&clean, base).ok()
}

fn base_prefix(s: &str) -> (u32, &str) {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'0' {
        match b[1] {
            b'x' | b'X' => return (16, &s[2..]),
            b'o' | b'O' => return (8, &s[2..]),
            b'b' | b'B' => return (2, &s[2..]),
            _ => return (8, &s[1..]),
        }
    }
    (10, s)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint(body)?;
    if neg {
        if u > (i64::MAX as u64) + 1 {
            return None;
        }
        Some((u as i64).wrapping_neg())
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the literals the lexer produces (decimal and hex floats,
/// underscores allowed only after a base prefix rule check). Out-of-range values are errors.
pub fn parse_float(s: &str) -> Option<f64> {
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = s.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let v = if body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X")) {
        parse_hex_float(&body[2..])?
    } else {
        if body.is_empty()
            || !body
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        let v: f64 = body.parse().ok()?;
        if v.is_infinite() {
            return None;
        }
        v
    };
    Some(if neg { -v } else { v })
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let (mant, exp) = lower.split_once('p')?;
    let exp: i32 = exp.parse().ok()?;
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    if ip.is_empty() && fp.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in ip.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in fp.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let r = v * 2f64.powi(exp);
    if r.is_infinite() { None } else { Some(r) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_like_go() {
        assert_eq!(unquote(r#""a\tb""#).as_deref(), Ok("a\tb"));
        assert_eq!(unquote("`a\\n`").as_deref(), Ok("a\\n"));
        assert_eq!(unquote(r#""\q""#), Err(ERR_SYNTAX));
        assert_eq!(unquote(r#""\u00e9""#).as_deref(), Ok("é"));
    }

    #[test]
    fn parses_numbers_like_go() {
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("1_000"), Some(1000));
        assert_eq!(parse_int("-0o17"), Some(-15));
        assert_eq!(parse_int("1__0"), None);
        assert_eq!(parse_float("1e3"), Some(1000.0));
        assert_eq!(parse_float("0x1p-2"), Some(0.25));
    }
}
