//! Go's view of a decoded JSON value.
//!
//! Go decodes into `interface{}` with `sigs.k8s.io/json`'s `PreserveInts`: a number without a `.`
//! that parses as `int64` becomes `int64`, every other number `float64`. Merging compares values
//! with Go's `==` on interfaces (same dynamic type and equal value; comparing two maps or two
//! slices panics) and names types in error messages with `reflect.Type` strings. This module
//! reproduces those three things.

use serde_json::{Map, Value};

use crate::error::MergeError;

/// The dynamic Go type of a decoded JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoType {
    Nil,
    Bool,
    Int64,
    Float64,
    String,
    Slice,
    Map,
}

impl GoType {
    pub(crate) fn of(v: &Value) -> GoType {
        match v {
            Value::Null => GoType::Nil,
            Value::Bool(_) => GoType::Bool,
            Value::Number(n) if n.is_i64() => GoType::Int64,
            Value::Number(_) => GoType::Float64,
            Value::String(_) => GoType::String,
            Value::Array(_) => GoType::Slice,
            Value::Object(_) => GoType::Map,
        }
    }

    /// `reflect.TypeOf(v).String()`, or what `%s` prints for a nil `reflect.Type`.
    pub(crate) fn reflect_name(self) -> &'static str {
        match self {
            GoType::Nil => "%!s(<nil>)",
            GoType::Bool => "bool",
            GoType::Int64 => "int64",
            GoType::Float64 => "float64",
            GoType::String => "string",
            GoType::Slice => SLICE_TYPE,
            GoType::Map => MAP_TYPE,
        }
    }
}

/// `reflect.TypeOf(map[string]interface{}{}).String()`.
pub(crate) const MAP_TYPE: &str = "map[string]interface {}";
/// `reflect.TypeOf([]interface{}{}).String()`.
pub(crate) const SLICE_TYPE: &str = "[]interface {}";

fn as_f64(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Go's `a == b` on two `interface{}` values holding decoded JSON.
///
/// Values of different dynamic types are unequal; two maps or two slices make Go panic
/// (`comparing uncomparable type`), reported as [`MergeError::GoPanic`].
pub(crate) fn go_eq(a: &Value, b: &Value) -> Result<bool, MergeError> {
    let (ta, tb) = (GoType::of(a), GoType::of(b));
    if ta != tb {
        return Ok(false);
    }
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) if ta == GoType::Int64 => x == y,
            _ => as_f64(a) == as_f64(b),
        },
        _ => {
            return Err(MergeError::GoPanic(format!(
                "runtime error: comparing uncomparable type {}",
                ta.reflect_name()
            )));
        }
    })
}

/// Checks that `v` can be a Go map key (`hash of unhashable type` panic otherwise).
pub(crate) fn go_hashable(v: &Value) -> Result<(), MergeError> {
    match GoType::of(v) {
        t @ (GoType::Map | GoType::Slice) => Err(MergeError::GoPanic(format!(
            "runtime error: hash of unhashable type {}",
            t.reflect_name()
        ))),
        _ => Ok(()),
    }
}

/// Membership in a Go `map[interface{}]bool` built from `set`: both building and looking up
/// panic on unhashable values.
pub(crate) fn go_set_contains(set: &[Value], v: &Value) -> Result<bool, MergeError> {
    for s in set {
        go_hashable(s)?;
    }
    go_hashable(v)?;
    for s in set {
        if go_eq(s, v)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `fmt` `%v` of a decoded JSON value (maps print with sorted keys).
pub(crate) fn go_fmt(v: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, v, 0);
    out
}

const FMT_DEPTH: usize = 64;

fn write_go(out: &mut String, v: &Value, depth: usize) {
    if depth > FMT_DEPTH {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&gocompat::fmt::format_float_v(as_f64(v))),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => write_go_map(out, map, depth),
    }
}

fn write_go_map(out: &mut String, map: &Map<String, Value>, depth: usize) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        if let Some(v) = map.get(k) {
            write_go(out, v, depth + 1);
        }
    }
    out.push(']');
}

/// Go's `%s` of a decoded JSON value, as used for a `$patch` directive in error messages.
pub(crate) fn go_fmt_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".into(),
        Value::Object(_) | Value::Array(_) => go_fmt(v),
        other => format!("%!s({}={})", GoType::of(other).reflect_name(), go_fmt(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_follows_go_types() {
        assert!(go_eq(&json!(1), &json!(1)).unwrap_or(false));
        assert!(!go_eq(&json!(1), &json!(1.0)).unwrap_or(true));
        assert!(!go_eq(&json!("1"), &json!(1)).unwrap_or(true));
        assert!(go_eq(&json!({}), &json!({})).is_err());
        assert!(!go_eq(&json!({}), &json!([])).unwrap_or(true));
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(go_fmt(&json!({"b": [1, "x"], "a": null})), "map[a:<nil> b:[1 x]]");
        assert_eq!(go_fmt(&json!(1.5)), "1.5");
        assert_eq!(go_fmt(&json!(1e21)), "1e+21");
        assert_eq!(go_fmt(&json!(1e6)), "1e+06");
        assert_eq!(go_fmt(&json!(100.0)), "100");
        assert_eq!(go_fmt_s(&json!(3)), "%!s(int64=3)");
        assert_eq!(
            gocompat::strconv::quote("a\"\u{1}é\u{200b}\n"),
            "\"a\\\"\\x01é\\u200b\\n\""
        );
    }
}
