//! sprig's `urlParse` and `urlJoin` (`url.go`), on our port of the parts of Go's `net/url`
//! they use: `url.Parse` (scheme, opaque, userinfo, host with port and IPv6 literal checks,
//! unescaped path, raw query, fragment) and `URL.String()` with Go's escaping rules.

use std::collections::BTreeMap;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;
use gocompat::strconv::quote;

/// Go's `net/url` encoding modes (the components with their own escaping rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    Fragment,
}

/// Go's `shouldEscape`: whether a byte must be percent-encoded in a component.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::Path => return c == b'?',
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// The text of `s[from..to]` for an error message (Go slices bytes; we keep whole characters).
fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Go's `unescape` (without the query-component `+` rule, which sprig never uses).
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                n += 1;
                if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                    let end = (i + 3).min(b.len());
                    return Err(format!("invalid URL escape {}", quote(&lossy(&b[i..end]))));
                }
                let esc = &b[i..i + 3];
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && esc != b"%25" {
                    return Err(format!("invalid URL escape {}", quote(&lossy(esc))));
                }
                if mode == Mode::Zone {
                    let v = (unhex(b[i + 1]) << 4) | unhex(b[i + 2]);
                    if esc != b"%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(format!("invalid URL escape {}", quote(&lossy(esc))));
                    }
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        quote(&lossy(&b[i..i + 1]))
                    ));
                }
                i += 1;
            }
        }
    }
    if n == 0 {
        return Ok(s.to_string());
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push((unhex(b[i + 1]) << 4) | unhex(b[i + 2]));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(lossy(&out))
}

/// Go's `escape`.
fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `url.Userinfo`.
#[derive(Debug, Clone)]
struct Userinfo {
    username: String,
    password: Option<String>,
}

impl Userinfo {
    fn to_go_string(&self) -> String {
        let mut s = escape(&self.username, Mode::UserPassword);
        if let Some(p) = &self.password {
            s.push(':');
            s.push_str(&escape(p, Mode::UserPassword));
        }
        s
    }
}

/// The fields of Go's `url.URL` that sprig reads or writes.
#[derive(Debug, Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<Userinfo>,
    host: String,
    path: String,
    omit_host: bool,
    force_query: bool,
    raw_query: String,
    fragment: String,
}

/// Go's `getScheme`.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// Go's `parseHost`.
fn parse_host(scheme: &str, host: &str) -> Result<String, String> {
    match host.rfind('[') {
        Some(i) if i > 0 => return Err("invalid IP-literal".into()),
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return Err("missing ']' in host".into());
            };
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(format!("invalid port {} after host", quote(colon_port)));
            }
            let colon_port = unescape(colon_port, Mode::Host)?;
            let hostname = host.get(1..close).unwrap_or("");
            let unescaped = match hostname.find("%25") {
                Some(z) => unescape(&hostname[..z], Mode::Host)? + &unescape(&hostname[z..], Mode::Zone)?,
                None => unescape(hostname, Mode::Host)?,
            };
            // netip.ParseAddr: an IPv6 address (optionally with a zone), not IPv4.
            let addr = unescaped.split('%').next().unwrap_or("");
            if addr.parse::<std::net::Ipv4Addr>().is_ok() {
                return Err("invalid IP-literal".into());
            }
            if addr.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!(
                    "invalid host: ParseAddr({}): unable to parse IP",
                    quote(&unescaped)
                ));
            }
            return Ok(format!("[{unescaped}]{colon_port}"));
        }
        None => {}
    }
    if let Some(first) = host.find(':') {
        let mut i = first;
        let last = host.rfind(':').unwrap_or(first);
        // Go 1.26 (urlstrictcolons): http and https take the port after the first colon.
        if last != first && scheme != "http" && scheme != "https" {
            i = last;
        }
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

/// Go's `parseAuthority`.
fn parse_authority(scheme: &str, authority: &str) -> Result<(Option<Userinfo>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(scheme, at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(i) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => Userinfo {
            username: unescape(userinfo, Mode::UserPassword)?,
            password: None,
        },
        Some((u, p)) => Userinfo {
            username: unescape(u, Mode::UserPassword)?,
            password: Some(unescape(p, Mode::UserPassword)?),
        },
    };
    Ok((Some(user), host))
}

/// Go's unexported `parse(rawURL, viaRequest=false)`.
fn parse_no_fragment(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut u = Url::default();
    if raw == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    let (scheme, rest) = get_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        u.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        u.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_string();
            return Ok(u);
        }
        if rest.split('/').next().unwrap_or("").contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_rest = &rest[2..];
        let (authority, r) = match authority_rest.find('/') {
            Some(i) => authority_rest.split_at(i),
            None => (authority_rest, ""),
        };
        let (user, host) = parse_authority(&u.scheme, authority)?;
        u.user = user;
        u.host = host;
        rest = r;
    } else if !u.scheme.is_empty() && rest.starts_with('/') {
        u.omit_host = true;
    }
    u.path = unescape(rest, Mode::Path)?;
    Ok(u)
}

/// Go's `url.Parse`, with its `parse "<url>": <reason>` error text.
fn parse(raw: &str) -> Result<Url, String> {
    let (without, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, f),
        None => (raw, ""),
    };
    let mut u = parse_no_fragment(without).map_err(|e| format!("parse {}: {e}", quote(without)))?;
    if !frag.is_empty() {
        u.fragment = unescape(frag, Mode::Fragment).map_err(|e| format!("parse {}: {e}", quote(raw)))?;
    }
    Ok(u)
}

/// Go's `URL.Hostname()`.
fn hostname(host: &str) -> &str {
    let mut h = host;
    if let Some(colon) = h.rfind(':')
        && valid_optional_port(&h[colon..])
    {
        h = &h[..colon];
    }
    if h.starts_with('[') && h.ends_with(']') && h.len() >= 2 {
        h = &h[1..h.len() - 1];
    }
    h
}

impl Url {
    /// Go's `URL.String()`.
    fn to_go_string(&self) -> String {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if (!self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some())
                && (!self.omit_host || !self.host.is_empty() || self.user.is_some())
            {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some(ui) = &self.user {
                    out.push_str(&ui.to_go_string());
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Mode::Host));
            }
            let path = if self.path == "*" {
                "*".to_string()
            } else {
                escape(&self.path, Mode::Path)
            };
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().unwrap_or("").contains(':') {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&escape(&self.fragment, Mode::Fragment));
        }
        out
    }
}

/// sprig's `dictGetOrEmpty`: a string entry, `""` when absent, a panic text otherwise.
fn dict_get(d: &BTreeMap<String, Value>, key: &str) -> Result<String, String> {
    match d.get(key) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.to_string()),
        Some(Value::Nil | Value::Missing) => {
            Err("runtime error: invalid memory address or nil pointer dereference".into())
        }
        Some(v) => Err(format!(
            "unable to parse {key} key, must be of type string, but {} found",
            v.kind_name()
        )),
    }
}

/// sprig's `urlJoin`.
fn join(d: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut u = Url {
        scheme: dict_get(d, "scheme")?,
        host: dict_get(d, "host")?,
        path: dict_get(d, "path")?,
        raw_query: dict_get(d, "query")?,
        opaque: dict_get(d, "opaque")?,
        fragment: dict_get(d, "fragment")?,
        ..Url::default()
    };
    let userinfo = dict_get(d, "userinfo")?;
    if !userinfo.is_empty() {
        let probe = format!("proto://{userinfo}@host");
        let parsed = parse(&probe).map_err(|e| format!("unable to parse userinfo in dict: {e}"))?;
        u.user = parsed.user;
    }
    Ok(u.to_go_string())
}

/// Registers `urlParse` and `urlJoin`.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "urlParse",
        Func::new(&[Str], |a| {
            let u = parse(a[0].as_str().unwrap_or("")).map_err(|e| format!("unable to parse url: {e}"))?;
            let mut d = BTreeMap::new();
            d.insert("hostname".to_string(), Value::str(hostname(&u.host)));
            d.insert("scheme".to_string(), Value::str(u.scheme.as_str()));
            d.insert("host".to_string(), Value::str(u.host.as_str()));
            d.insert("path".to_string(), Value::str(u.path.as_str()));
            d.insert("query".to_string(), Value::str(u.raw_query.as_str()));
            d.insert("opaque".to_string(), Value::str(u.opaque.as_str()));
            d.insert("fragment".to_string(), Value::str(u.fragment.as_str()));
            let userinfo = u.user.as_ref().map(Userinfo::to_go_string).unwrap_or_default();
            d.insert("userinfo".to_string(), Value::str(userinfo));
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
            Ok(Value::str(join(&d)?))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_go_string() {
        for s in [
            "https://user:p%40ss@host:8080/a%20b?q=1#frag",
            "mailto:joe@example.com",
            "/relative/path",
            "http://[::1]:80/",
            "file:///etc/hosts",
        ] {
            assert_eq!(parse(s).map(|u| u.to_go_string()), Ok(s.to_string()), "{s}");
        }
    }

    #[test]
    fn reports_go_errors() {
        assert_eq!(
            parse(":x").err().as_deref(),
            Some("parse \":x\": missing protocol scheme")
        );
        assert_eq!(
            parse("http://a b").err().as_deref(),
            Some("parse \"http://a b\": invalid character \" \" in host name")
        );
        assert_eq!(
            parse("http://h:8x").err().as_deref(),
            Some("parse \"http://h:8x\": invalid port \":8x\" after host")
        );
    }
}
