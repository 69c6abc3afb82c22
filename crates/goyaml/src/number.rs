//! Numbers as they come out of `sigs.k8s.io/yaml.Marshal`.
//!
//! Go first writes the number as JSON (`encoding/json`), go-yaml then reads
//! that JSON text back (so integer text becomes `int`/`uint64`, anything else
//! `float64`) and prints it: integers in decimal, floats with
//! `strconv.FormatFloat(f, 'g', -1, 64)`. An integral float64 below 1e21
//! therefore comes out as an integer (`15020`, not `15020.0`), unless its
//! shortest decimal form is too large for a `uint64` (`2e+19`).

use serde_json::Number;

/// The YAML text for a JSON number, as `sigs.k8s.io/yaml.Marshal` prints the
/// Go value it models: `i64`/`u64` are Go integers, `f64` a Go `float64`.
pub(crate) fn format(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        Some(f) => format_float64(f),
        None => n.to_string(),
    }
}

/// Shortest round-trip decimal digits of `|f|` (no leading or trailing
/// zeros) and the decimal point position: `|f| = 0.DIGITS × 10^dp`. Zero gives
/// `("0", 1)`.
///
/// Like Go's `strconv` (and unlike Rust's formatter), when the exact value
/// lies halfway between two shortest candidates the one with an even last
/// digit wins.
fn shortest(f: f64) -> (String, i32) {
    let abs = f.abs();
    let (digits, dp) = sci_digits(&format!("{abs:e}"));
    if digits == "0" {
        return (digits, 1);
    }
    let odd = digits.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1);
    if odd {
        // The exact decimal expansion of an f64 has at most 767 significant
        // digits; Rust prints it exactly with enough precision.
        let (exact, exact_dp) = sci_digits(&format!("{abs:.800e}"));
        let n = digits.len();
        if exact_dp == dp && exact.len() == n + 1 && exact.ends_with('5') {
            // A tie: the candidates are the truncation and its successor.
            let lower = &exact[..n];
            let other = if lower == digits {
                increment(lower)
            } else {
                Some(lower.to_string())
            };
            if let Some(other) = other {
                let round_trips = format!("0.{other}e{dp}").parse::<f64>().is_ok_and(|g| g == abs);
                if round_trips && other.len() == n {
                    return (other.trim_end_matches('0').to_string(), dp);
                }
            }
        }
    }
    (digits, dp)
}

/// Split Rust's `{:e}` output into significant digits (trailing zeros
/// removed) and the decimal point position.
fn sci_digits(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let trimmed = digits.trim_end_matches('0');
    if trimmed.is_empty() {
        return ("0".to_string(), 1);
    }
    (trimmed.to_string(), exp + 1)
}

/// A decimal digit string plus one in its last place, if that does not carry
/// out of the first digit.
fn increment(digits: &str) -> Option<String> {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

/// `f` printed by Go's `encoding/json`, then read back and printed by go-yaml.
fn format_float64(f: f64) -> String {
    if !f.is_finite() {
        // JSON cannot carry these; print what go-yaml prints for them.
        return if f.is_nan() {
            ".nan".to_string()
        } else if f > 0.0 {
            ".inf".to_string()
        } else {
            "-.inf".to_string()
        };
    }
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // encoding/json uses 'f' format here; go-yaml then parses that
        // text as an integer if it has no fraction and fits.
        let (digits, dp) = shortest(f);
        if dp >= digits.len() as i32 {
            let zeros = usize::try_from(dp).unwrap_or(0).saturating_sub(digits.len());
            let text = format!(
                "{}{digits}{}",
                if f.is_sign_negative() { "-" } else { "" },
                "0".repeat(zeros)
            );
            if let Ok(i) = text.parse::<i64>() {
                return i.to_string();
            }
            if let Ok(u) = text.parse::<u64>() {
                return u.to_string();
            }
        }
    }
    format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` for a finite `f`.
pub(crate) fn format_g(f: f64) -> String {
    let (digits, dp) = shortest(f);
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        let e = exp.unsigned_abs();
        return format!("{sign}{first}{frac}e{esign}{e:02}");
    }
    if dp <= 0 {
        let zeros = "0".repeat(usize::try_from(-dp).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    let dp = usize::try_from(dp).unwrap_or(0);
    if digits.len() <= dp {
        format!("{sign}{digits}{}", "0".repeat(dp - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..dp], &digits[dp..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_g_format() {
        assert_eq!(format_g(0.5), "0.5");
        assert_eq!(format_g(1e6), "1e+06");
        assert_eq!(format_g(123456.5), "123456.5");
        assert_eq!(format_g(1234567.5), "1.2345675e+06");
        assert_eq!(format_g(1e21), "1e+21");
        assert_eq!(format_g(1e-7), "1e-07");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(-2.5e100), "-2.5e+100");
        assert_eq!(format_g(0.0), "0");
        // Exactly halfway between two shortest candidates: Go takes the even one.
        assert_eq!(
            format_g("-783373024025016.25".parse().unwrap_or(0.0)),
            "-7.833730240250162e+14"
        );
        assert_eq!(
            format_g("178282446750899.125".parse().unwrap_or(0.0)),
            "1.7828244675089912e+14"
        );
    }

    #[test]
    fn json_floats() {
        assert_eq!(format_float64(1.0), "1");
        assert_eq!(format_float64(-0.0), "0");
        assert_eq!(format_float64(1e6), "1000000");
        assert_eq!(format_float64(9.223_372_036_854_776e18), "9223372036854776000");
        assert_eq!(format_float64(2e19), "2e+19");
        assert_eq!(format_float64(1e21), "1e+21");
        assert_eq!(format_float64(1.5), "1.5");
        assert_eq!(format_float64(1e-7), "1e-07");
    }
}
