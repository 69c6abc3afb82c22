//! JSON text exactly as Go's `encoding/json` writes it.
//!
//! Istio stores JSON inside annotations and environment variables (`sidecar.istio.io/status`,
//! `ISTIO_KUBE_APP_PROBERS`, `ISTIO_PROMETHEUS_ANNOTATIONS`, …); to produce the same pods byte for
//! byte we must write that JSON the way Go does: object keys in the order the Go struct declares
//! them (callers build objects in that order; `serde_json` keeps insertion order here), compact, with
//! Go's string escaping (`<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes; `\b` and `\f` short
//! forms) and Go's number formatting (integral floats without `.0`).

use std::fmt::Write as _;

use serde_json::Value;

/// Serializes a value compactly, the way Go's `json.Marshal` would.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Appends a value to `out`, the way Go's `json.Marshal` would write it.
pub fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, number: &serde_json::Number) {
    if number.is_i64() || number.is_u64() {
        let _ = write!(out, "{number}");
        return;
    }
    let float = number.as_f64().unwrap_or(0.0);
    if float.fract() == 0.0 && float.abs() < 1e21 {
        let _ = write!(out, "{float:.0}");
    } else {
        let _ = write!(out, "{number}");
    }
}

/// Writes a JSON string literal with Go's escaping (`json.Marshal`, HTML-safe); the template
/// engine's `toJson` writes strings the same way, so both share its encoder.
pub fn write_string(out: &mut String, text: &str) {
    gotemplate::sprig::util::json_string(out, text, true);
}

/// Writes a JSON object with its keys sorted, as `json.Marshal` writes a Go map; `write_value`
/// writes each value.
pub fn write_sorted_object(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    mut write_value: impl FnMut(&mut String, &Value),
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (index, key) in keys.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, &map[key.as_str()]);
    }
    out.push('}');
}

/// A float64 printed with Go's `%v` (`fmt.Sprint`): the shortest digits that read back the same,
/// in `e` notation when the decimal exponent is below -4 or at least 6, as `%g` does with shortest
/// precision (`1e+06`, `123456`, `1.5`, `1e-05`).
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
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_key_order_and_is_compact() {
        let value = json!({"initContainers": ["istio-init"], "containers": null, "revision": "default"});
        assert_eq!(
            to_string(&value),
            r#"{"initContainers":["istio-init"],"containers":null,"revision":"default"}"#
        );
    }

    #[test]
    fn escapes_like_go() {
        let value = json!("a<b>&c\u{2028}\n\t\u{1}\u{8}\u{c}\"\\é");
        assert_eq!(
            to_string(&value),
            r#""a\u003cb\u003e\u0026c\u2028\n\t\u0001\b\f\"\\é""#
        );
    }

    #[test]
    fn floats_print_like_go_sprint() {
        let cases = [
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1.5, "1.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.28, "1.28"),
            (1234567.0, "1.234567e+06"),
            (-2.5e-7, "-2.5e-07"),
            (1e21, "1e+21"),
            (0.0, "0"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_float_v(value), expected, "{value}");
        }
    }

    #[test]
    fn numbers_like_go() {
        assert_eq!(
            to_string(&json!([1, -2, 1.5, 100.0, 0.25])),
            "[1,-2,1.5,100,0.25]"
        );
    }
}
