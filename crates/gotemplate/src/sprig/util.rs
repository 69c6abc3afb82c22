//! Helpers shared by the sprig families: sprig's `strval`/`strslice`, `spf13/cast` conversions,
//! `empty`, `reflect.DeepEqual`, and Go's `encoding/json` for `toJson`/`fromJson`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::fmt as gofmt;
use crate::value::{ElemType, IntType, Value};

/// sprig's `strval`: strings as is, Stringers via `String()`, everything else `%v`.
pub fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Object(o) => o.string().unwrap_or_else(|| gofmt::sprint_value(v)),
        Value::Missing => "<nil>".into(),
        v => gofmt::sprint_value(v),
    }
}

/// sprig's `strslice`: a list's non-nil elements as strings, a scalar as a one-element list.
pub fn strslice(v: &Value) -> Vec<Value> {
    match v {
        Value::List(l) => l
            .items
            .iter()
            .filter(|e| !matches!(e, Value::Nil | Value::Missing))
            .map(|e| Value::str(strval(e)))
            .collect(),
        Value::Nil | Value::Missing => vec![],
        v => vec![Value::str(strval(v))],
    }
}

/// `reflect.Value.Kind().String()` of an `interface{}` argument.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil | Value::Missing => "invalid",
        v => v.kind_name(),
    }
}

/// `cast.ToInt64` (errors give 0).
pub fn to_int64(v: &Value) -> i64 {
    to_int64_e(v).unwrap_or(0)
}

/// `cast.ToInt64E`.
pub fn to_int64_e(v: &Value) -> Result<i64, String> {
    Ok(match v {
        Value::Int(n, _) => *n,
        Value::Uint(n, _) => *n as i64,
        Value::Float(f) => go_f64_to_i64(*f),
        Value::Bool(b) => i64::from(*b),
        Value::Nil | Value::Missing => 0,
        Value::String(s) => match crate::parse::strconv::parse_int(trim_zero_decimal(s)) {
            Some(n) => n,
            None => {
                return Err(format!(
                    "unable to cast {} of type string to int64",
                    gocompat::strconv::quote(s)
                ));
            }
        },
        v => {
            return Err(format!(
                "unable to cast {} of type {} to int64",
                gofmt::sprint_value(v),
                v.type_name()
            ));
        }
    })
}

/// Go's `int64(f)` conversion (truncation; out of range gives the minimum int64 on amd64).
pub fn go_f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9.223372036854776e18..9.223372036854776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    let mut i = b.len();
    while i > 0 {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
        i -= 1;
    }
    s
}

/// `cast.ToFloat64` (errors give 0).
pub fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(n, _) => *n as f64,
        Value::Uint(n, _) => *n as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => crate::parse::strconv::parse_float(s)
            .or_else(|| go_parse_float_special(s))
            .unwrap_or(0.0),
        _ => 0.0,
    }
}

fn go_parse_float_special(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    }
}

/// sprig's `empty`.
pub fn empty(v: &Value) -> bool {
    match v {
        Value::Missing | Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(n, _) => *n == 0,
        Value::Uint(n, _) => *n == 0,
        Value::Float(f) => *f == 0.0,
        Value::Complex(r, i) => *r == 0.0 && *i == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(l) => l.items.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Object(o) => match o.kind() {
            crate::value::ObjectKind::Struct => false,
            crate::value::ObjectKind::Pointer => o.is_nil(),
        },
    }
}

/// `reflect.DeepEqual` on two `interface{}` values.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    deep_equal_at(a, b, 0)
}

fn deep_equal_at(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > 100 {
        return false;
    }
    let deep_equal = |p: &Value, q: &Value| deep_equal_at(p, q, depth + 1);
    match (a, b) {
        (Value::Nil | Value::Missing, Value::Nil | Value::Missing) => true,
        (Value::Int(x, t1), Value::Int(y, t2)) => x == y && t1 == t2,
        (Value::Uint(x, t1), Value::Uint(y, t2)) => x == y && t1 == t2,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.elem == y.elem
                && x.items.len() == y.items.len()
                && x.items.iter().zip(&y.items).all(|(p, q)| deep_equal(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            let (xs, ys) = (x.pairs(), y.pairs());
            x.elem == y.elem
                && xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(&ys)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && deep_equal(v1, v2))
        }
        (Value::Object(x), Value::Object(y)) => std::sync::Arc::ptr_eq(x, y),
        _ => false,
    }
}

/// The elements of a slice-kind value, or `None`.
pub fn as_list(v: &Value) -> Option<&[Value]> {
    match v {
        Value::List(l) => Some(&l.items),
        _ => None,
    }
}

/// A `[]interface{}` from items.
pub fn list(items: Vec<Value>) -> Value {
    Value::list(items)
}

/// A `[]string` from strings.
pub fn string_list<S: Into<std::sync::Arc<str>>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::string_list(items.into_iter().map(|s| Value::String(s.into())).collect())
}

/// A `map[string]interface{}`.
pub fn map(entries: BTreeMap<String, Value>) -> Value {
    Value::map(entries)
}

/// `%T` of a value (`typeOf`): Go prints `<nil>` for nil.
pub fn type_of(v: &Value) -> String {
    match v {
        Value::Nil | Value::Missing => "<nil>".into(),
        v => v.type_name().into_owned(),
    }
}

/// An `int64` value.
pub fn i64v(n: i64) -> Value {
    Value::Int(n, IntType::Int64)
}

/// Options for [`to_json`].
#[derive(Debug, Clone, Copy)]
pub struct JsonOpts {
    /// Escape `<`, `>` and `&` (Go's default).
    pub escape_html: bool,
    /// Indent with two spaces (`MarshalIndent(v, "", "  ")`).
    pub pretty: bool,
}

/// Go's `json.Marshal` of a value.
pub fn to_json(v: &Value, opts: JsonOpts) -> Result<String, String> {
    let mut out = String::new();
    write_json(&mut out, v, opts, 0)?;
    Ok(out)
}

fn newline(out: &mut String, opts: JsonOpts, depth: usize) {
    if opts.pretty {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn write_json(out: &mut String, v: &Value, opts: JsonOpts, depth: usize) -> Result<(), String> {
    if depth > 200 {
        return Err("json: unsupported value: encountered a cycle".into());
    }
    match v {
        Value::Nil | Value::Missing => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n, _) => {
            let _ = write!(out, "{n}");
        }
        Value::Uint(n, _) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) => out.push_str(&json_float(*f)?),
        Value::Complex(..) => return Err("json: unsupported type: complex128".into()),
        Value::String(s) => json_string(out, s, opts.escape_html),
        Value::List(l) => {
            if l.items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, e) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, opts, depth + 1);
                write_json(out, e, opts, depth + 1)?;
            }
            newline(out, opts, depth);
            out.push(']');
        }
        Value::Map(m) => {
            let pairs = m.pairs();
            if pairs.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, e)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, opts, depth + 1);
                json_string(out, k, opts.escape_html);
                out.push(':');
                if opts.pretty {
                    out.push(' ');
                }
                write_json(out, e, opts, depth + 1)?;
            }
            newline(out, opts, depth);
            out.push('}');
        }
        Value::Object(o) => {
            if o.is_nil() {
                out.push_str("null");
            } else {
                match o.to_data() {
                    Some(d) => write_json(out, &d, opts, depth)?,
                    None => out.push_str("{}"),
                }
            }
        }
    }
    Ok(())
}

/// Go's `encoding/json` float formatting.
pub fn json_float(f: f64) -> Result<String, String> {
    if f.is_nan() || f.is_infinite() {
        return Err(format!(
            "json: unsupported value: {}",
            gofmt::format_float(f, 'g', None)
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = gofmt::format_float(f, 'e', None);
        // Clean up e-09 to e-9.
        let b = s.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            let mut t = s[..n - 2].to_string();
            t.push(b[n - 1] as char);
            return Ok(t);
        }
        return Ok(s);
    }
    Ok(gofmt::format_float(f, 'f', None))
}

/// A string argument. Functions declare their argument types, so the engine has converted it
/// already; any other value reads as "".
pub fn str_arg(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// An integer argument, declared like [`str_arg`]'s; any other value reads as 0.
pub fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int(n, _) => *n,
        _ => 0,
    }
}

/// Go's `encoding/json` string encoding. Runs of ASCII that needs no escaping are copied in one
/// go; every other character goes through the escaping rules one by one.
pub fn json_string(out: &mut String, s: &str, escape_html: bool) {
    let plain =
        |b: u8| gocompat::strconv::is_plain_ascii(b) && !(escape_html && matches!(b, b'<' | b'>' | b'&'));
    out.push('"');
    gocompat::strconv::escape_runs(out, s, plain, |out, c| json_escape_char(out, c, escape_html));
    out.push('"');
}

/// One character of a JSON string as `encoding/json` writes it.
fn json_escape_char(out: &mut String, c: char, escape_html: bool) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '<' | '>' | '&' if escape_html => {
            let _ = write!(out, "\\u00{:02x}", c as u32);
        }
        '\u{2028}' | '\u{2029}' => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c if (c as u32) < 0x20 => {
            let _ = write!(out, "\\u00{:02x}", c as u32);
        }
        c => out.push(c),
    }
}

/// Go's `json.Unmarshal` into `interface{}` (numbers become `float64`), with Go's error text
/// for the common cases.
pub fn from_json(s: &str) -> Result<Value, String> {
    if let Some(e) = super::jsonerr::syntax_error(s) {
        return Err(e);
    }
    serde_json::from_str::<serde_json::Value>(s)
        .map(|v| Value::from_json(&v))
        .map_err(|e| e.to_string())
}

/// A deep copy (`copystructure.Copy`): lists and maps are duplicated recursively.
pub fn deep_copy(v: &Value) -> Value {
    deep_copy_at(v, 0)
}

fn deep_copy_at(v: &Value, depth: usize) -> Value {
    if depth > 100 {
        return v.clone();
    }
    match v {
        Value::List(l) => Value::List(std::sync::Arc::new(crate::value::List {
            elem: l.elem,
            items: l.items.iter().map(|e| deep_copy_at(e, depth + 1)).collect(),
        })),
        Value::Map(m) => Value::Map(std::sync::Arc::new(crate::value::Map::new(
            m.elem,
            m.pairs()
                .into_iter()
                .map(|(k, e)| (k, deep_copy_at(&e, depth + 1)))
                .collect(),
        ))),
        v => v.clone(),
    }
}

/// Builds a `map[string]interface{}` from pairs.
pub fn entries<I: IntoIterator<Item = (String, Value)>>(it: I) -> BTreeMap<String, Value> {
    it.into_iter().collect()
}

/// The element type of a value's list, for functions that keep it.
pub fn list_elem(v: &Value) -> ElemType {
    match v {
        Value::List(l) => l.elem,
        _ => ElemType::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-copying encoder agrees with escaping character by character.
    #[test]
    fn json_string_matches_char_by_char_escaping() {
        let cases = [
            "",
            "plain",
            "a\"b\\c",
            "<a href=\"x\">&amp;</a>",
            "tab\there\n\r\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "caf\u{e9} \u{2028}\u{2029} \u{1F600}",
        ];
        for s in cases {
            for html in [false, true] {
                let mut want = String::from('"');
                s.chars().for_each(|c| json_escape_char(&mut want, c, html));
                want.push('"');
                let mut got = String::new();
                json_string(&mut got, s, html);
                assert_eq!(got, want, "{s:?} html={html}");
            }
        }
    }
}
