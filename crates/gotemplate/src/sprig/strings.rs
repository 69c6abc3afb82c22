//! sprig's string functions (`strings.go`): `trim`, `upper`, `quote`, `indent`, `trunc`, ...

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

use super::util::{int_arg as int, str_arg as s};
use super::util::{strslice, strval, to_int64};

fn pad(n: i64) -> Result<std::string::String, std::string::String> {
    if n < 0 {
        return Err("strings: negative Repeat count".into());
    }
    // Far beyond any real template; refusing keeps hostile templates from exhausting memory.
    if n > 1 << 16 {
        return Err("strings: Repeat output length overflow".into());
    }
    Ok(" ".repeat(n as usize))
}

fn ok_str(x: impl Into<String>) -> Result<Value, String> {
    Ok(Value::str(x.into()))
}

/// Go's `strings.Title` (deprecated but used by sprig): upper-cases the first letter of each
/// word, where words are separated by non-letters/digits/underscore/apostrophe-like rules.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    for c in s.chars() {
        if is_separator(prev) {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

fn is_separator(r: char) -> bool {
    if r.is_ascii() {
        if r.is_ascii_alphanumeric() || r == '_' {
            return false;
        }
        return true;
    }
    if r.is_alphabetic() || r.is_numeric() {
        return false;
    }
    r.is_whitespace()
}

fn untitle(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_space = true;
    for c in s.chars() {
        if prev_space && c.is_alphabetic() {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        prev_space = c.is_whitespace();
    }
    out
}

fn swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().collect::<Vec<_>>()
            } else if c.is_lowercase() {
                c.to_uppercase().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn initials(s: &str) -> String {
    s.split_whitespace().filter_map(|w| w.chars().next()).collect()
}

/// Byte-slices a string like Go (`s[a:b]`), replacing split UTF-8 sequences lossily.
fn byte_slice(s: &str, a: usize, b: usize) -> String {
    String::from_utf8_lossy(s.as_bytes().get(a..b).unwrap_or(b"")).into_owned()
}

fn trunc(c: i64, s: &str) -> String {
    let len = s.len() as i64;
    if c < 0 && len + c > 0 {
        return byte_slice(s, (len + c) as usize, s.len());
    }
    if c >= 0 && len > c {
        return byte_slice(s, 0, c as usize);
    }
    s.to_string()
}

fn substr(start: i64, end: i64, s: &str) -> Result<String, String> {
    let len = s.len() as i64;
    let (a, b) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    if a < 0 || b < 0 || a > len || b > len || a > b {
        return Err(format!("runtime error: slice bounds out of range [{a}:{b}]"));
    }
    Ok(byte_slice(s, a as usize, b as usize))
}

fn abbrev(width: i64, s: &str) -> String {
    if width < 4 {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    if (chars.len() as i64) <= width {
        return s.to_string();
    }
    let keep = (width - 3).max(0) as usize;
    let mut out: String = chars.iter().take(keep).collect();
    out.push_str("...");
    out
}

fn wrap_custom(s: &str, width: i64, newline: &str, wrap_long: bool) -> String {
    // goutils.WrapCustom.
    let width = if width < 1 { 1 } else { width as usize };
    let chars: Vec<char> = s.chars().collect();
    let len = chars.len();
    let mut out = String::new();
    let mut offset = 0usize;
    while len - offset > width {
        if chars.get(offset) == Some(&' ') {
            offset += 1;
            continue;
        }
        let window: String = chars
            .get(offset..offset + width + 1)
            .unwrap_or(&[])
            .iter()
            .collect();
        match window.rfind(' ').map(|i| window[..i].chars().count()) {
            Some(sp) if sp > 0 => {
                out.extend(&chars[offset..offset + sp]);
                out.push_str(newline);
                offset += sp + 1;
            }
            _ => {
                if wrap_long {
                    out.extend(&chars[offset..offset + width]);
                    out.push_str(newline);
                    offset += width;
                } else {
                    let rest: String = chars[offset + width..].iter().collect();
                    match rest.find(' ') {
                        Some(i) => {
                            let sp = rest[..i].chars().count() + width;
                            out.extend(&chars[offset..offset + sp]);
                            out.push_str(newline);
                            offset += sp + 1;
                        }
                        None => {
                            out.extend(&chars[offset..]);
                            offset = len;
                        }
                    }
                }
            }
        }
    }
    out.extend(&chars[offset.min(len)..]);
    out
}

fn words(s: &str) -> Vec<String> {
    // Splits camelCase, snake_case, kebab-case and spaces into lower-level words.
    let mut out = vec![];
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars.get(i.wrapping_sub(1)).copied().unwrap_or(' ');
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next.is_lowercase()) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn snake(s: &str, sep: &str) -> String {
    words(s)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(sep)
}

fn pascal(s: &str) -> String {
    // xstrings.ToPascalCase: split on '_' and spaces... capitalizes each part.
    let mut out = String::new();
    let mut upper_next = true;
    for c in s.chars() {
        if c == '_' || c == ' ' || c == '-' {
            upper_next = true;
            continue;
        }
        if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Registers the string functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "trim",
        Func::new(&[Str], |a| ok_str(s(&a[0]).trim_matches(char::is_whitespace))),
    );
    m.insert("upper", Func::new(&[Str], |a| ok_str(s(&a[0]).to_uppercase())));
    m.insert("lower", Func::new(&[Str], |a| ok_str(s(&a[0]).to_lowercase())));
    m.insert("title", Func::new(&[Str], |a| ok_str(title(s(&a[0])))));
    m.insert("untitle", Func::new(&[Str], |a| ok_str(untitle(s(&a[0])))));
    m.insert("swapcase", Func::new(&[Str], |a| ok_str(swapcase(s(&a[0])))));
    m.insert("initials", Func::new(&[Str], |a| ok_str(initials(s(&a[0])))));
    m.insert(
        "nospace",
        Func::new(&[Str], |a| {
            ok_str(
                s(&a[0])
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<std::string::String>(),
            )
        }),
    );
    m.insert(
        "trunc",
        Func::new(&[Int, Str], |a| ok_str(trunc(int(&a[0]), s(&a[1])))),
    );
    m.insert(
        "abbrev",
        Func::new(&[Int, Str], |a| ok_str(abbrev(int(&a[0]), s(&a[1])))),
    );
    m.insert(
        "abbrevboth",
        Func::new(&[Int, Int, Str], |a| {
            let (left, right, st) = (int(&a[0]), int(&a[1]), s(&a[2]));
            if right < 4 || (left > 0 && right < 7) {
                return ok_str(st);
            }
            let chars: Vec<char> = st.chars().collect();
            let len = chars.len() as i64;
            if len <= right {
                return ok_str(st);
            }
            let mut offset = left.max(0).min(len);
            if len - offset < right - 3 {
                offset = len - (right - 3);
            }
            if offset <= 4 {
                return ok_str(abbrev(right, st));
            }
            if (offset + right - 3) < len {
                let rest: std::string::String = chars[offset as usize..].iter().collect();
                return ok_str(format!("...{}", abbrev(right - 3, &rest)));
            }
            let rest: std::string::String = chars[(len - (right - 3)) as usize..].iter().collect();
            ok_str(format!("...{rest}"))
        }),
    );
    m.insert(
        "substr",
        Func::new(&[Int, Int, Str], |a| {
            substr(int(&a[0]), int(&a[1]), s(&a[2])).map(Value::str)
        }),
    );
    m.insert(
        "repeat",
        Func::new(&[Int, Str], |a| {
            let n = int(&a[0]);
            if n < 0 {
                return Err("strings: negative Repeat count".into());
            }
            let st = s(&a[1]);
            if st.len().saturating_mul(n as usize) > 1 << 26 {
                return Err("strings: Repeat output length overflow".into());
            }
            ok_str(st.repeat(n as usize))
        }),
    );
    for name in ["trimall", "trimAll"] {
        m.insert(
            name,
            Func::new(&[Str, Str], |a| {
                let cut: Vec<char> = s(&a[0]).chars().collect();
                ok_str(s(&a[1]).trim_matches(|c| cut.contains(&c)))
            }),
        );
    }
    m.insert(
        "trimSuffix",
        Func::new(&[Str, Str], |a| {
            ok_str(s(&a[1]).strip_suffix(s(&a[0])).unwrap_or(s(&a[1])))
        }),
    );
    m.insert(
        "trimPrefix",
        Func::new(&[Str, Str], |a| {
            ok_str(s(&a[1]).strip_prefix(s(&a[0])).unwrap_or(s(&a[1])))
        }),
    );
    m.insert(
        "contains",
        Func::new(&[Str, Str], |a| Ok(Value::Bool(s(&a[1]).contains(s(&a[0]))))),
    );
    m.insert(
        "hasPrefix",
        Func::new(&[Str, Str], |a| Ok(Value::Bool(s(&a[1]).starts_with(s(&a[0]))))),
    );
    m.insert(
        "hasSuffix",
        Func::new(&[Str, Str], |a| Ok(Value::Bool(s(&a[1]).ends_with(s(&a[0]))))),
    );
    m.insert(
        "quote",
        Func::variadic(&[], Any, |a| {
            let parts: Vec<std::string::String> = a
                .iter()
                .filter(|v| !matches!(v, Value::Nil | Value::Missing))
                .map(|v| gocompat::strconv::quote(&strval(v)))
                .collect();
            ok_str(parts.join(" "))
        }),
    );
    m.insert(
        "squote",
        Func::variadic(&[], Any, |a| {
            let parts: Vec<std::string::String> = a
                .iter()
                .filter(|v| !matches!(v, Value::Nil | Value::Missing))
                .map(|v| format!("'{}'", strval(v)))
                .collect();
            ok_str(parts.join(" "))
        }),
    );
    m.insert(
        "cat",
        Func::variadic(&[], Any, |a| {
            let vals: Vec<Value> = a
                .iter()
                .filter(|v| !matches!(v, Value::Nil | Value::Missing))
                .cloned()
                .collect();
            let fmt = vec!["%v"; vals.len()].join(" ");
            ok_str(crate::fmt::sprintf(&fmt, &vals))
        }),
    );
    m.insert(
        "indent",
        Func::new(&[Int, Str], |a| {
            let pad = pad(int(&a[0]))?;
            ok_str(format!("{pad}{}", s(&a[1]).replace('\n', &format!("\n{pad}"))))
        }),
    );
    m.insert(
        "nindent",
        Func::new(&[Int, Str], |a| {
            let pad = pad(int(&a[0]))?;
            ok_str(format!("\n{pad}{}", s(&a[1]).replace('\n', &format!("\n{pad}"))))
        }),
    );
    m.insert(
        "replace",
        Func::new(&[Str, Str, Str], |a| {
            ok_str(go_replace(s(&a[2]), s(&a[0]), s(&a[1])))
        }),
    );
    m.insert(
        "plural",
        Func::new(&[Str, Str, Int], |a| {
            ok_str(if int(&a[2]) == 1 { s(&a[0]) } else { s(&a[1]) })
        }),
    );
    m.insert(
        "wrap",
        Func::new(&[Int, Str], |a| {
            ok_str(wrap_custom(s(&a[1]), int(&a[0]), "\n", false))
        }),
    );
    m.insert(
        "wrapWith",
        Func::new(&[Int, Str, Str], |a| {
            ok_str(wrap_custom(s(&a[2]), int(&a[0]), s(&a[1]), true))
        }),
    );
    m.insert("snakecase", Func::new(&[Str], |a| ok_str(snake(s(&a[0]), "_"))));
    m.insert("kebabcase", Func::new(&[Str], |a| ok_str(snake(s(&a[0]), "-"))));
    m.insert("camelcase", Func::new(&[Str], |a| ok_str(pascal(s(&a[0])))));
    m.insert("toString", Func::new(&[Any], |a| ok_str(strval(&a[0]))));
    m.insert(
        "split",
        Func::new(&[Str, Str], |a| {
            let parts = go_split(s(&a[1]), s(&a[0]), -1);
            Ok(Value::string_map(
                parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (format!("_{i}"), Value::str(p)))
                    .collect(),
            ))
        }),
    );
    m.insert(
        "splitn",
        Func::new(&[Str, Int, Str], |a| {
            let parts = go_split(s(&a[2]), s(&a[0]), int(&a[1]));
            Ok(Value::string_map(
                parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (format!("_{i}"), Value::str(p)))
                    .collect(),
            ))
        }),
    );
    m.insert(
        "splitList",
        Func::new(&[Str, Str], |a| {
            Ok(Value::string_list(
                go_split(s(&a[1]), s(&a[0]), -1)
                    .into_iter()
                    .map(Value::str)
                    .collect(),
            ))
        }),
    );
    m.insert(
        "toStrings",
        Func::new(&[Any], |a| Ok(Value::string_list(strslice(&a[0])))),
    );
    m.insert(
        "join",
        Func::new(&[Str, Any], |a| {
            let parts: Vec<std::string::String> = strslice(&a[1])
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            ok_str(parts.join(s(&a[0])))
        }),
    );
    m.insert(
        "sortAlpha",
        Func::new(&[Any], |a| {
            let mut items: Vec<std::string::String> = match &a[0] {
                Value::List(_) => strslice(&a[0])
                    .iter()
                    .map(|v| v.as_str().unwrap_or("").to_string())
                    .collect(),
                v => vec![strval(v)],
            };
            items.sort();
            Ok(Value::string_list(items.into_iter().map(Value::str).collect()))
        }),
    );
    m.insert("seq", Func::variadic(&[], Int, |a| seq(a).map(Value::str)));
    let _ = to_int64;
}

/// Go's `strings.Replace(s, old, new, -1)` (an empty `old` inserts between runes).
pub fn go_replace(s: &str, old: &str, new: &str) -> std::string::String {
    if old.is_empty() {
        let mut out = std::string::String::from(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    s.replace(old, new)
}

/// Go's `strings.SplitN` (n < 0: all; an empty separator splits into runes).
pub fn go_split(s: &str, sep: &str, n: i64) -> Vec<std::string::String> {
    if n == 0 {
        return vec![];
    }
    if sep.is_empty() {
        let chars: Vec<std::string::String> = s.chars().map(|c| c.to_string()).collect();
        if n > 0 && (chars.len() as i64) > n {
            let k = (n - 1) as usize;
            let mut v: Vec<std::string::String> = chars[..k].to_vec();
            v.push(chars[k..].concat());
            return v;
        }
        return chars;
    }
    if n < 0 {
        return s.split(sep).map(str::to_string).collect();
    }
    s.splitn(n as usize, sep).map(str::to_string).collect()
}

fn seq(a: &[Value]) -> Result<std::string::String, std::string::String> {
    let p: Vec<i64> = a.iter().map(int).collect();
    let nums: Vec<i64> = match p.as_slice() {
        [] => vec![],
        [end] if end.unsigned_abs() > 1_000_000 => return Err("seq too long".into()),
        [start, end] if (end - start).unsigned_abs() > 1_000_000 => {
            return Err("seq too long".into());
        }
        [end] => {
            let (start, end) = (1, *end);
            if end < start {
                (end..=start).rev().collect()
            } else {
                (start..=end).collect()
            }
        }
        [start, end] => {
            if end < start {
                (*end..=*start).rev().collect()
            } else {
                (*start..=*end).collect()
            }
        }
        [start, step, end] => {
            let (start, step, end) = (*start, *step, *end);
            if end < start {
                if step >= 0 {
                    vec![]
                } else {
                    let mut v = vec![];
                    let mut i = start;
                    while i >= end && v.len() < 1_000_000 {
                        v.push(i);
                        i += step;
                    }
                    v
                }
            } else if step <= 0 {
                vec![]
            } else {
                let mut v = vec![];
                let mut i = start;
                while i <= end && v.len() < 1_000_000 {
                    v.push(i);
                    i += step;
                }
                v
            }
        }
        _ => return Ok(std::string::String::new()),
    };
    if nums.len() > 1_000_000 {
        return Err("seq too long".into());
    }
    Ok(nums.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
}
