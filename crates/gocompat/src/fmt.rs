//! Go's `fmt` verbs that the injector's texts share.

/// A float64 printed with Go's `%v` (`fmt.Sprint`, `strconv.FormatFloat(f, 'g', -1, 64)`): the
/// shortest digits that read back the same, in `e` notation with a two-digit exponent when the
/// decimal exponent is below -4 or at least 6 (`1e+06`, `123456`, `1.5`, `1e-05`).
pub fn format_float_v(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0".to_owned()
        } else {
            "0".to_owned()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Go's -1 precision.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_prints_them() {
        for (value, text) in [
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1.5, "1.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (-0.0, "-0"),
            (1e21, "1e+21"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Inf"),
        ] {
            assert_eq!(format_float_v(value), text, "{value}");
        }
    }
}
