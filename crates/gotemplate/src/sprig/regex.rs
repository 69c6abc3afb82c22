//! sprig's regular expression functions (`regex.go`), on the `regex` crate, whose syntax is
//! RE2's like Go's `regexp`. Non-`must` variants swallow compile errors like sprig does.

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n, _) => *n,
        _ => 0,
    }
}

fn compile(re: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(re).map_err(|e| format!("error parsing regexp: {e}"))
}

/// Go's `Regexp.Expand` template syntax (`$1`, `${name}`) → the `regex` crate's, which differs
/// only in that Go treats `$1a` as the group named `1a`; both agree on `${1}a`.
fn repl(r: &str) -> String {
    r.to_string()
}

fn find_all(re: &regex::Regex, st: &str, n: i64) -> Vec<Value> {
    let it = re.find_iter(st).map(|m| Value::str(m.as_str()));
    if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    }
}

fn split(re: &regex::Regex, st: &str, n: i64) -> Vec<Value> {
    if n == 0 {
        return vec![];
    }
    if re.as_str().is_empty() && !st.is_empty() {
        let chars: Vec<String> = st.chars().map(|c| c.to_string()).collect();
        let k = if n > 0 {
            (n as usize).min(chars.len())
        } else {
            chars.len()
        };
        let mut out: Vec<Value> = chars[..k.saturating_sub(1)]
            .iter()
            .map(|c| Value::str(c.as_str()))
            .collect();
        out.push(Value::str(chars[k.saturating_sub(1)..].concat()));
        return out;
    }
    if n < 0 {
        re.split(st).map(Value::str).collect()
    } else {
        re.splitn(st, n as usize).map(Value::str).collect()
    }
}

/// Registers the regex functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "regexMatch",
        Func::new(&[Str, Str], |a| {
            Ok(Value::Bool(compile(s(&a[0])).is_ok_and(|r| r.is_match(s(&a[1])))))
        }),
    );
    m.insert(
        "mustRegexMatch",
        Func::new(&[Str, Str], |a| {
            Ok(Value::Bool(compile(s(&a[0]))?.is_match(s(&a[1]))))
        }),
    );
    m.insert(
        "regexFindAll",
        Func::new(&[Str, Str, Int], |a| {
            Ok(Value::string_list(
                compile(s(&a[0]))
                    .map(|r| find_all(&r, s(&a[1]), int(&a[2])))
                    .unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "mustRegexFindAll",
        Func::new(&[Str, Str, Int], |a| {
            Ok(Value::string_list(find_all(
                &compile(s(&a[0]))?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
    );
    m.insert(
        "regexFind",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))
                    .ok()
                    .and_then(|r| r.find(s(&a[1])).map(|m| m.as_str().to_string()))
                    .unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "mustRegexFind",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))?
                    .find(s(&a[1]))
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "regexReplaceAll",
        Func::new(&[Str, Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))
                    .map(|r| r.replace_all(s(&a[1]), repl(s(&a[2])).as_str()).into_owned())
                    .unwrap_or_else(|_| s(&a[1]).to_string()),
            ))
        }),
    );
    m.insert(
        "mustRegexReplaceAll",
        Func::new(&[Str, Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))?
                    .replace_all(s(&a[1]), repl(s(&a[2])).as_str())
                    .into_owned(),
            ))
        }),
    );
    m.insert(
        "regexReplaceAllLiteral",
        Func::new(&[Str, Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))
                    .map(|r| r.replace_all(s(&a[1]), regex::NoExpand(s(&a[2]))).into_owned())
                    .unwrap_or_else(|_| s(&a[1]).to_string()),
            ))
        }),
    );
    m.insert(
        "mustRegexReplaceAllLiteral",
        Func::new(&[Str, Str, Str], |a| {
            Ok(Value::str(
                compile(s(&a[0]))?
                    .replace_all(s(&a[1]), regex::NoExpand(s(&a[2])))
                    .into_owned(),
            ))
        }),
    );
    m.insert(
        "regexSplit",
        Func::new(&[Str, Str, Int], |a| {
            Ok(Value::string_list(
                compile(s(&a[0]))
                    .map(|r| split(&r, s(&a[1]), int(&a[2])))
                    .unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "mustRegexSplit",
        Func::new(&[Str, Str, Int], |a| {
            Ok(Value::string_list(split(
                &compile(s(&a[0]))?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
    );
    m.insert(
        "regexQuoteMeta",
        Func::new(&[Str], |a| {
            let mut out = String::new();
            for c in s(&a[0]).chars() {
                if "\\.+*?()|[]{}^$".contains(c) {
                    out.push('\\');
                }
                out.push(c);
            }
            Ok(Value::str(out))
        }),
    );
}
