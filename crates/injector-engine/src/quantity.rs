//! Kubernetes resource quantities (`k8s.io/apimachinery/pkg/api/resource.Quantity`): parsing and
//! the canonical form the API server and Go clients print.
//!
//! Istio round-trips every merged pod through Go structs, so the resources its templates render are
//! printed canonically: `2000m` becomes `2`, `1024Mi` becomes `1Gi`, `1000` becomes `1k`, while
//! `100m`, `128Mi` and `1536Mi` stay. We reproduce that so injected pods are identical.
//!
//! Values are held exactly, as an integer count of nano-units (`i128`), which covers every suffix up
//! to `Ei` with room to spare. The canonical form keeps the written format family (binary `Ki…Ei`,
//! decimal `n…E`, or exponent `e3`), picks the largest unit that represents the value exactly, and
//! falls back to decimal for binary values below 1024 or with a fractional part, as Kubernetes does.
//! Precision below one nano-unit rounds up, as Kubernetes does.

use std::fmt;

/// Nano-units per unit.
const NANO: i128 = 1_000_000_000;

/// How a quantity was written, which decides how it is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySi,
    /// `n`, `u`, `m`, none, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSi,
    /// `e<exp>` / `E<exp>`.
    DecimalExponent,
}

/// A parsed quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

/// A string that is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
pub struct QuantityError;

impl Quantity {
    /// Parses a quantity the way `resource.ParseQuantity` does.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(QuantityError);
        }
        let (negative, rest) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(QuantityError);
        }
        let (format, base, exponent) = parse_suffix(suffix)?;
        // mantissa = whole.fraction as an integer count of 10^-len(fraction).
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return Err(QuantityError);
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| QuantityError)?
        };
        let scale = i32::try_from(fraction.len()).map_err(|_| QuantityError)?;
        let nanos = scaled_nanos(mantissa, scale, base, exponent)?;
        Ok(Self {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The value in whole units when it is an integer.
    pub fn as_integer(&self) -> Option<i128> {
        (self.nanos % NANO == 0).then_some(self.nanos / NANO)
    }

    /// How it was written.
    pub fn format(&self) -> Format {
        self.format
    }
}

/// Reads the suffix: returns the format, the base (2 or 10) and the exponent of that base.
fn parse_suffix(suffix: &str) -> Result<(Format, u32, i32), QuantityError> {
    let decimal = |exponent| Ok((Format::DecimalSi, 10, exponent));
    let binary = |exponent| Ok((Format::BinarySi, 2, exponent));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        other if other.starts_with(['e', 'E']) && other.len() > 1 => {
            let exponent: i32 = other[1..].parse().map_err(|_| QuantityError)?;
            Ok((Format::DecimalExponent, 10, exponent))
        }
        _ => Err(QuantityError),
    }
}

/// mantissa × 10^-scale × base^exponent, in nano-units, rounded up below one nano-unit.
fn scaled_nanos(mantissa: i128, scale: i32, base: u32, exponent: i32) -> Result<i128, QuantityError> {
    let too_large = || QuantityError;
    let (mut numerator, mut denominator) = (mantissa.checked_mul(NANO).ok_or_else(too_large)?, 1_i128);
    denominator = denominator
        .checked_mul(pow(10, scale.unsigned_abs())?)
        .ok_or_else(too_large)?;
    if exponent >= 0 {
        numerator = numerator
            .checked_mul(pow(base, exponent.unsigned_abs())?)
            .ok_or_else(too_large)?;
    } else {
        denominator = denominator
            .checked_mul(pow(base, exponent.unsigned_abs())?)
            .ok_or_else(too_large)?;
    }
    // Ceiling division, as Kubernetes rounds values that need more precision than nano up.
    Ok((numerator + denominator - 1) / denominator)
}

fn pow(base: u32, exponent: u32) -> Result<i128, QuantityError> {
    i128::from(base).checked_pow(exponent).ok_or(QuantityError)
}

impl fmt::Display for Quantity {
    /// The canonical form Kubernetes prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.abs();
        let binary = self.format == Format::BinarySi && magnitude >= 1024 * NANO && magnitude % NANO == 0;
        if binary {
            let mut units = magnitude / NANO;
            let mut power = 0;
            while power < 6 && units % 1024 == 0 {
                units /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return write!(f, "{sign}{units}{suffix}");
        }
        // Decimal: the largest exponent (a multiple of 3, from -9 to 18) giving an integer mantissa.
        let mut exponent = -9;
        let mut mantissa = magnitude;
        while exponent < 18 && mantissa % 1000 == 0 {
            mantissa /= 1000;
            exponent += 3;
        }
        if self.format == Format::DecimalExponent {
            return if exponent == 0 {
                write!(f, "{sign}{mantissa}")
            } else {
                write!(f, "{sign}{mantissa}e{exponent}")
            };
        }
        let suffix = match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        write!(f, "{sign}{mantissa}{suffix}")
    }
}

/// Whether `text` is a quantity already in its canonical form, decided cheaply for the common
/// shape `<digits><suffix>` (`100m`, `128Mi`, `2`); `false` for anything else, canonical or not,
/// so a caller falls back to [`Quantity::parse`] and printing (whose `i128` arithmetic is the
/// slow part). Sound because, for a mantissa that is not a multiple of the suffix's step (1000
/// for decimal, 1024 for binary suffixes), Kubernetes prints the quantity as it was written.
pub fn is_canonical(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let digits_end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    // At most 9 digits: no overflow whatever the suffix, and the mantissa fits a u64. No leading
    // zero: `0100m` prints as `100m`, and `0m` as `0`.
    if digits.is_empty() || digits.len() > 9 || digits.starts_with('0') {
        return false;
    }
    let Ok(mantissa) = digits.parse::<u64>() else {
        return false;
    };
    let step = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => 1000,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => 1024,
        _ => return false,
    };
    mantissa % step != 0
}

/// The canonical form of a quantity string, or `None` when it is not a quantity.
pub fn canonical(text: &str) -> Option<String> {
    Quantity::parse(text).ok().map(|q| q.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalizes_like_kubernetes() {
        let cases = [
            ("2000m", "2"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("1024Mi", "1Gi"),
            ("128Mi", "128Mi"),
            ("1536Mi", "1536Mi"),
            ("0", "0"),
            ("0m", "0"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1.5", "1500m"),
            ("0.1", "100m"),
            ("1k", "1k"),
            ("1500k", "1500k"),
            ("10G", "10G"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1e0", "1"),
            ("1.5Ki", "1536"),
            ("0.5Gi", "512Mi"),
            ("512", "512"),
            ("1Ki", "1Ki"),
            ("2048", "2048"),
            ("-100m", "-100m"),
            ("+2", "2"),
            ("0.0000000001", "1n"),
            ("1Ei", "1Ei"),
            ("0.3Ki", "307200m"),
        ];
        for (input, expected) in cases {
            assert_eq!(canonical(input).as_deref(), Some(expected), "{input}");
        }
    }

    #[test]
    fn recognizes_canonical_forms_cheaply() {
        for canonical_text in [
            "0", "100m", "128Mi", "1536Mi", "2", "1500", "1k", "10G", "1Ki", "1Ei",
        ] {
            assert!(is_canonical(canonical_text), "{canonical_text}");
        }
        // Not canonical, or not decided cheaply (the full parse handles those).
        for other in [
            "2000m", "1024Mi", "1000", "0m", "0100m", "+2", "-100m", "1.5", "1e3", "1000E", "",
        ] {
            assert!(!is_canonical(other), "{other}");
        }
    }

    proptest::proptest! {
        /// The cheap check never claims a form that printing would change.
        #[test]
        fn cheap_canonical_check_agrees_with_printing(
            text in "[+-]?[0-9]{0,12}(\\.[0-9]{0,3})?(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e3|x)"
        ) {
            if is_canonical(&text) {
                proptest::prop_assert_eq!(canonical(&text), Some(text));
            }
        }

        /// Multiples of the suffix's step are exactly the ones printing changes.
        #[test]
        fn cheap_canonical_check_finds_canonical_multiples(
            mantissa in 1_u64..1_000_000_000,
            suffix in proptest::sample::select(vec!["", "m", "k", "Mi", "Gi", "Ki"]),
        ) {
            let text = format!("{mantissa}{suffix}");
            let printed = canonical(&text);
            proptest::prop_assert_eq!(is_canonical(&text), printed.as_deref() == Some(text.as_str()));
        }
    }

    #[test]
    fn rejects_non_quantities() {
        for input in ["", "abc", "1.2.3", "1Kb", "1 Gi", ".", "1e", "--1", "1x"] {
            assert_eq!(Quantity::parse(input), Err(QuantityError), "{input:?}");
        }
    }

    #[test]
    fn exposes_integers() {
        assert_eq!(Quantity::parse("2Ki").map(|q| q.as_integer()), Ok(Some(2048)));
        assert_eq!(Quantity::parse("100m").map(|q| q.as_integer()), Ok(None));
    }
}
