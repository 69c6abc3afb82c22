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
    fn numbers_like_go() {
        assert_eq!(
            to_string(&json!([1, -2, 1.5, 100.0, 0.25])),
            "[1,-2,1.5,100,0.25]"
        );
    }
}
