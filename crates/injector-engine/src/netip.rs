//! Go's `netip.ParsePrefix`, for its error messages.
//!
//! Istio validates the IP-range annotations (`traffic.sidecar.istio.io/includeOutboundIPRanges`
//! and `excludeOutboundIPRanges`) with `netip.ParsePrefix` and quotes its error to the user, e.g.
//! `netip.ParsePrefix("10.0.0.0/33"): prefix length out of range` or
//! `netip.ParsePrefix(" 10.0.0.0/8"): ParseAddr(" 10.0.0.0"): unexpected character (at " 10.0.0.0")`.
//! Rust's address parsers accept and reject the same texts but say nothing of why, so the
//! parser is Go's, step for step: the same checks in the same order give the same message.

/// Checks `text` as Go's `netip.ParsePrefix` does; the error is Go's message, whole.
pub fn parse_prefix(text: &str) -> Result<(), String> {
    prefix(text).map_err(|reason| format!("netip.ParsePrefix({}): {reason}", gocompat::strconv::quote(text)))
}

fn prefix(text: &str) -> Result<(), String> {
    let Some(slash) = text.rfind('/') else {
        return Err("no '/'".to_owned());
    };
    let (address, bits) = (&text[..slash], &text[slash + 1..]);
    let (is6, zoned) = parse_addr(address).map_err(|e| e.to_string())?;
    if is6 && zoned {
        return Err("IPv6 zones cannot be present in a prefix".to_owned());
    }
    let bad_bits = || format!("bad bits after slash: {}", gocompat::strconv::quote(bits));
    // Go's `Atoi` would take a sign or leading zeros; ParsePrefix refuses them first.
    if bits.len() > 1 && !(b'1'..=b'9').contains(&bits.as_bytes()[0]) {
        return Err(bad_bits());
    }
    let value: i64 = go_atoi(bits).ok_or_else(bad_bits)?;
    let max = if is6 { 128 } else { 32 };
    if !(0..=max).contains(&value) {
        return Err("prefix length out of range".to_owned());
    }
    Ok(())
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits.
fn go_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Go's `parseAddrError`.
struct AddrError<'a> {
    input: &'a str,
    message: &'static str,
    at: Option<&'a str>,
}

impl std::fmt::Display for AddrError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ParseAddr({}): {}",
            gocompat::strconv::quote(self.input),
            self.message
        )?;
        if let Some(at) = self.at.filter(|at| !at.is_empty()) {
            write!(f, " (at {})", gocompat::strconv::quote(at))?;
        }
        Ok(())
    }
}

/// Go's `ParseAddr`: `(is IPv6, has a zone)` of a valid address.
fn parse_addr(text: &str) -> Result<(bool, bool), AddrError<'_>> {
    let fail = |message| AddrError {
        input: text,
        message,
        at: None,
    };
    for byte in text.bytes() {
        match byte {
            b'.' => return parse_ipv4_fields(text, 0, text.len()).map(|()| (false, false)),
            b':' => return parse_ipv6(text).map(|zoned| (true, zoned)),
            b'%' => return Err(fail("missing IPv6 address")),
            _ => {}
        }
    }
    Err(fail("unable to parse IP"))
}

/// Go's `parseIPv4Fields` over `input[from..to]`.
fn parse_ipv4_fields(input: &str, from: usize, to: usize) -> Result<(), AddrError<'_>> {
    let s = &input[from..to];
    let bytes = s.as_bytes();
    let fail = |message, at: Option<&'static str>| AddrError { input, message, at };
    let (mut value, mut position, mut digits) = (0u32, 0, 0);
    for (i, &byte) in bytes.iter().enumerate() {
        if byte.is_ascii_digit() {
            if digits == 1 && value == 0 {
                return Err(fail("IPv4 field has octet with leading zero", None));
            }
            value = value * 10 + u32::from(byte - b'0');
            digits += 1;
            if value > 255 {
                return Err(fail("IPv4 field has value >255", None));
            }
        } else if byte == b'.' {
            if i == 0 || i == bytes.len() - 1 || bytes[i - 1] == b'.' {
                return Err(AddrError {
                    input,
                    message: "IPv4 field must have at least one digit",
                    at: Some(&s[i..]),
                });
            }
            if position == 3 {
                return Err(fail("IPv4 address too long", None));
            }
            position += 1;
            value = 0;
            digits = 0;
        } else {
            return Err(AddrError {
                input,
                message: "unexpected character",
                at: Some(&s[i..]),
            });
        }
    }
    if position < 3 {
        return Err(fail("IPv4 address too short", None));
    }
    Ok(())
}

/// Go's `parseIPv6`: whether the valid address has a zone.
fn parse_ipv6(input: &str) -> Result<bool, AddrError<'_>> {
    let fail = |message| AddrError {
        input,
        message,
        at: None,
    };
    let (mut s, zone) = match input.find('%') {
        Some(at) => (&input[..at], Some(&input[at + 1..])),
        None => (input, None),
    };
    if zone == Some("") {
        return Err(fail("zone must be a non-empty string"));
    }
    let zone_len = zone.map_or(0, |z| z.len() + 1);
    // `at` texts are suffixes of `s`, which ends where the zone starts: map them into `input`.
    let at_of = |rest: &str| -> Option<&str> {
        let end = input.len() - zone_len;
        Some(&input[end - rest.len()..end])
    };
    let fail_at = |message, rest: &str| AddrError {
        input,
        message,
        at: at_of(rest),
    };
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(zone.is_some());
        }
    }
    let mut i = 0;
    while i < 16 {
        let bytes = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < bytes.len() {
            let digit = match bytes[off] {
                c @ b'0'..=b'9' => u32::from(c - b'0'),
                c @ b'a'..=b'f' => u32::from(c - b'a') + 10,
                c @ b'A'..=b'F' => u32::from(c - b'A') + 10,
                _ => break,
            };
            acc = (acc << 4) + digit;
            if off > 3 {
                return Err(fail_at("each group must have 4 or less digits", s));
            }
            if acc > u32::from(u16::MAX) {
                return Err(fail_at("IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(fail_at(
                "each colon-separated field must have at least one digit",
                s,
            ));
        }
        if bytes.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err(fail_at(
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(fail_at(
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let end = input.len() - zone_len;
            parse_ipv4_fields(input, end - s.len(), end)?;
            s = "";
            i += 4;
            break;
        }
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(fail_at("unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(fail_at("colon must be followed by more characters", s));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(fail_at("multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(fail_at("trailing garbage after address", s));
    }
    if i < 16 {
        if ellipsis.is_none() {
            return Err(fail("address string too short"));
        }
    } else if ellipsis.is_some() {
        return Err(fail("the :: must expand to at least one field of zeros"));
    }
    Ok(zone.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_prefixes() {
        for text in [
            "10.0.0.0/8",
            "0.0.0.0/0",
            "::/0",
            "fd00::/8",
            "::ffff:10.0.0.1/128",
            "1:2:3:4:5:6:7:8/64",
        ] {
            assert_eq!(parse_prefix(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn messages_are_gos() {
        // Each message as Go 1.26's netip.ParsePrefix prints it.
        for (text, message) in [
            ("bad", r#"netip.ParsePrefix("bad"): no '/'"#),
            (
                "10.0.0.0/33",
                r#"netip.ParsePrefix("10.0.0.0/33"): prefix length out of range"#,
            ),
            (
                "10.0.0.0/08",
                r#"netip.ParsePrefix("10.0.0.0/08"): bad bits after slash: "08""#,
            ),
            (
                "10.0.0.0/",
                r#"netip.ParsePrefix("10.0.0.0/"): bad bits after slash: """#,
            ),
            (
                "10.0.0.0/x",
                r#"netip.ParsePrefix("10.0.0.0/x"): bad bits after slash: "x""#,
            ),
            (
                " 10.0.0.0/8",
                r#"netip.ParsePrefix(" 10.0.0.0/8"): ParseAddr(" 10.0.0.0"): unexpected character (at " 10.0.0.0")"#,
            ),
            (
                "10.0.0/8",
                r#"netip.ParsePrefix("10.0.0/8"): ParseAddr("10.0.0"): IPv4 address too short"#,
            ),
            (
                "10.0.0.256/8",
                r#"netip.ParsePrefix("10.0.0.256/8"): ParseAddr("10.0.0.256"): IPv4 field has value >255"#,
            ),
            (
                "10.0.0.01/8",
                r#"netip.ParsePrefix("10.0.0.01/8"): ParseAddr("10.0.0.01"): IPv4 field has octet with leading zero"#,
            ),
            (
                "10..0.1/8",
                r#"netip.ParsePrefix("10..0.1/8"): ParseAddr("10..0.1"): IPv4 field must have at least one digit (at ".0.1")"#,
            ),
            (
                "1.2.3.4.5/8",
                r#"netip.ParsePrefix("1.2.3.4.5/8"): ParseAddr("1.2.3.4.5"): IPv4 address too long"#,
            ),
            (
                "abc/8",
                r#"netip.ParsePrefix("abc/8"): ParseAddr("abc"): unable to parse IP"#,
            ),
            (
                "fe80::1%eth0/64",
                r#"netip.ParsePrefix("fe80::1%eth0/64"): IPv6 zones cannot be present in a prefix"#,
            ),
            (
                "::1/129",
                r#"netip.ParsePrefix("::1/129"): prefix length out of range"#,
            ),
            (
                "1:2/64",
                r#"netip.ParsePrefix("1:2/64"): ParseAddr("1:2"): address string too short"#,
            ),
            (
                "1::2::3/64",
                r#"netip.ParsePrefix("1::2::3/64"): ParseAddr("1::2::3"): multiple :: in address (at ":3")"#,
            ),
            (
                "12345::/64",
                r#"netip.ParsePrefix("12345::/64"): ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")"#,
            ),
            (
                "1:g::/64",
                r#"netip.ParsePrefix("1:g::/64"): ParseAddr("1:g::"): each colon-separated field must have at least one digit (at "g::")"#,
            ),
        ] {
            assert_eq!(parse_prefix(text).expect_err(text), message, "{text}");
        }
    }
}
