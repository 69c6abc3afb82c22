//! sprig's path functions (`functions.go`): Go's `path` package (`base`, `dir`, `clean`, `ext`,
//! `isAbs`) and the `os*` variants (`path/filepath`, identical on Unix).

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

/// Go's `path.Clean`.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = vec![];
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`.
pub fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Go's `path.Dir`.
pub fn dir(p: &str) -> String {
    let i = p.rfind('/').map_or(0, |i| i + 1);
    clean(&p[..i])
}

/// Go's `path.Ext`.
pub fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

/// Registers the path functions.
pub fn register(m: &mut FuncMap) {
    fn s(v: &Value) -> &str {
        v.as_str().unwrap_or("")
    }
    for (a, b) in [
        ("base", "osBase"),
        ("dir", "osDir"),
        ("clean", "osClean"),
        ("ext", "osExt"),
    ] {
        let f: fn(&str) -> String = match a {
            "base" => base,
            "dir" => dir,
            "clean" => clean,
            _ => ext,
        };
        m.insert(a, Func::new(&[Str], move |v| Ok(Value::str(f(s(&v[0]))))));
        m.insert(b, Func::new(&[Str], move |v| Ok(Value::str(f(s(&v[0]))))));
    }
    for name in ["isAbs", "osIsAbs"] {
        m.insert(
            name,
            Func::new(&[Str], |v| Ok(Value::Bool(s(&v[0]).starts_with('/')))),
        );
    }
}
