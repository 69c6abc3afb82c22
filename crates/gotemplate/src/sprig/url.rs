//! sprig's `urlParse` and `urlJoin` (`url.go`), on a small port of the parts of Go's `net/url`
//! they use: scheme, opaque, userinfo, host, path (unescaped), raw query and fragment.

use std::collections::BTreeMap;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

#[derive(Debug, Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<String>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
}

fn unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
            let Some(h) = hex else {
                let bad: String = s.get(i..).unwrap_or("").chars().take(3).collect();
                return Err(format!("invalid URL escape {}", crate::fmt::quote(&bad)));
            };
            out.push(u8::from_str_radix(h, 16).unwrap_or(0));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn parse(raw: &str) -> Result<Url, String> {
    let wrap = |e: String| format!("parse {}: {e}", crate::fmt::quote(raw));
    let mut u = Url::default();
    let (rest, frag) = match raw.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (raw, None),
    };
    if let Some(f) = frag {
        u.fragment = unescape(f).map_err(wrap)?;
    }
    let mut rest = rest;
    // Scheme.
    if let Some(i) = rest.find(':') {
        let sch = &rest[..i];
        if !sch.is_empty()
            && sch.as_bytes()[0].is_ascii_alphabetic()
            && sch
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        {
            u.scheme = sch.to_ascii_lowercase();
            rest = &rest[i + 1..];
        } else if i == 0 {
            return Err(wrap("missing protocol scheme".into()));
        }
    }
    if let Some((r, q)) = rest.split_once('?') {
        u.raw_query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') && !u.scheme.is_empty() {
        u.opaque = rest.to_string();
        return Ok(u);
    }
    if let Some(auth_rest) = rest.strip_prefix("//") {
        let end = auth_rest.find('/').unwrap_or(auth_rest.len());
        let authority = &auth_rest[..end];
        rest = &auth_rest[end..];
        let host = match authority.rfind('@') {
            Some(i) => {
                u.user = Some(authority[..i].to_string());
                &authority[i + 1..]
            }
            None => authority,
        };
        if host.starts_with('[') && !host.contains(']') {
            return Err(wrap("missing ']' in host".into()));
        }
        u.host = unescape(host).map_err(wrap)?;
    }
    u.path = unescape(rest).map_err(wrap)?;
    Ok(u)
}

fn hostname(host: &str) -> String {
    if let Some(h) = host.strip_prefix('[') {
        return h.split(']').next().unwrap_or("").to_string();
    }
    match host.rfind(':') {
        Some(i) => host[..i].to_string(),
        None => host.to_string(),
    }
}

fn escape_path(p: &str) -> String {
    let mut out = String::new();
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/$&+,:;=@!*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn escape_fragment(p: &str) -> String {
    let mut out = String::new();
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/$&+,:;=@!*'()?".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn join(d: &BTreeMap<String, Value>) -> String {
    let get = |k: &str| match d.get(k) {
        Some(Value::String(s)) => s.to_string(),
        _ => String::new(),
    };
    let (scheme, host, path, query, opaque, fragment) = (
        get("scheme"),
        get("host"),
        get("path"),
        get("query"),
        get("opaque"),
        get("fragment"),
    );
    let userinfo = get("userinfo");
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !userinfo.is_empty() {
            if !host.is_empty() || !path.is_empty() || !userinfo.is_empty() {
                out.push_str("//");
            }
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        let ep = escape_path(&path);
        if !ep.is_empty() && !ep.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&ep);
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape_fragment(&fragment));
    }
    out
}

/// Registers `urlParse` and `urlJoin`.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "urlParse",
        Func::new(&[Str], |a| {
            let u = parse(a[0].as_str().unwrap_or("")).map_err(|e| format!("unable to parse url: {e}"))?;
            let mut d = BTreeMap::new();
            d.insert("hostname".to_string(), Value::str(hostname(&u.host)));
            d.insert("scheme".to_string(), Value::str(u.scheme));
            d.insert("host".to_string(), Value::str(u.host));
            d.insert("path".to_string(), Value::str(u.path));
            d.insert("query".to_string(), Value::str(u.raw_query));
            d.insert("opaque".to_string(), Value::str(u.opaque));
            d.insert("fragment".to_string(), Value::str(u.fragment));
            d.insert("userinfo".to_string(), Value::str(u.user.unwrap_or_default()));
            Ok(Value::map(d))
        }),
    );
    m.insert(
        "urlJoin",
        Func::new(&[AnyMap], |a| {
            let d = match &a[0] {
                Value::Map(m) => m.snapshot(),
                _ => BTreeMap::new(),
            };
            Ok(Value::str(join(&d)))
        }),
    );
}
