//! Go's `encoding/json` for template values: what `structToJSON`, `toJSON`, `toJsonMap` and
//! (through JSON) `toYaml` produce. Map keys are sorted (Go sorts map keys), strings use Go's
//! HTML-safe escaping, floats Go's format (`1e+21`, `1.5e-7`), host objects their own
//! `encoding/json` form (struct field order, `omitempty`).

use gotemplate::Value;
use serde_json::Value as Json;

use super::objects::GO_JSON_METHOD;
use crate::gojson;

/// Marshals a value like `json.Marshal`; the error is Go's (`json: unsupported value: NaN`).
pub fn go_json(value: &Value) -> Result<String, String> {
    let mut out = String::new();
    write_go_json(&mut out, value)?;
    Ok(out)
}

/// Appends the `json.Marshal` form of `value` to `out`.
pub fn write_go_json(out: &mut String, value: &Value) -> Result<(), String> {
    match value {
        Value::Missing | Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n, _) => out.push_str(&n.to_string()),
        Value::Uint(n, _) => out.push_str(&n.to_string()),
        Value::Float(x) => out.push_str(&go_json_float(*x)?),
        Value::Complex(..) => return Err("json: unsupported type: complex128".to_owned()),
        Value::String(s) => gojson::write_string(out, s),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, v)) in m.pairs().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                gojson::write_string(out, k);
                out.push(':');
                write_go_json(out, v)?;
            }
            out.push('}');
        }
        Value::Object(o) => {
            if o.method_arity(GO_JSON_METHOD) == Some(0)
                && let Ok(Value::String(s)) = o.call_method(GO_JSON_METHOD, &[])
            {
                out.push_str(&s);
            } else if o.is_nil() {
                out.push_str("null");
            } else if let Some(data) = o.to_data() {
                write_go_json(out, &data)?;
            } else if let Some(s) = o.string() {
                gojson::write_string(out, &s);
            } else {
                out.push_str("{}");
            }
        }
    }
    Ok(())
}

/// Go's `encoding/json` float64 text.
pub fn go_json_float(x: f64) -> Result<String, String> {
    if x.is_nan() || x.is_infinite() {
        return Err(format!(
            "json: unsupported value: {}",
            gocompat::fmt::format_float_v(x)
        ));
    }
    let abs = x.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // Rust's Display is the shortest round-trip decimal without an exponent, like Go's 'f'.
        let s = format!("{x}");
        return Ok(if s == "-0" { "-0".into() } else { s });
    }
    // Shortest 'e' form, with Go's exponent spelling (`e+21`, `e-7`).
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    Ok(format!("{mantissa}e{sign}{digits}"))
}

/// A JSON document re-written the way Go writes it (compact, HTML-safe escaping).
pub fn go_json_of_raw(json: &Json) -> String {
    gojson::to_string(json)
}

/// Converts a template value to JSON data through its `encoding/json` form (what
/// `sigs.k8s.io/yaml` does before writing YAML).
pub fn to_json_data(value: &Value) -> Result<Json, String> {
    let text = go_json(value)?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(go_json_float(1e21).as_deref(), Ok("1e+21"));
        assert_eq!(go_json_float(1.5e-7).as_deref(), Ok("1.5e-7"));
        assert_eq!(go_json_float(1_000_000.0).as_deref(), Ok("1000000"));
        assert_eq!(go_json_float(0.5).as_deref(), Ok("0.5"));
        assert_eq!(go_json_float(0.0).as_deref(), Ok("0"));
        assert!(go_json_float(f64::NAN).is_err());
    }

    #[test]
    fn maps_sorted_and_escaped() {
        let v = Value::from_json(&serde_json::json!({"b": [1, 2], "a": {"<": 1e21}}));
        assert_eq!(go_json(&v).as_deref(), Ok(r#"{"a":{"\u003c":1e+21},"b":[1,2]}"#));
    }
}
