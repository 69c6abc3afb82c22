//! sprig's regular expression functions (`regex.go`), on the `regex` crate, whose syntax is
//! RE2's like Go's `regexp`. Non-`must` variants swallow compile errors like sprig does.

use super::util::{int_arg as int, str_arg as s};
use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

/// Compiles with the `regex` crate, translating the common syntax errors to Go's
/// `regexp/syntax` texts (`error parsing regexp: missing closing ]: `[``).
fn compile(re: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(&literal_braces(re))
        .map_err(|e| format!("error parsing regexp: {}", go_error(re, &e.to_string())))
}

/// Go's RE2 parser takes a `{` that does not start a valid repetition (`{n}`, `{n,}`, `{n,m}`)
/// as a literal; the `regex` crate rejects it, so escape such braces first.
fn literal_braces(re: &str) -> String {
    let chars: Vec<char> = re.chars().collect();
    let mut out = String::with_capacity(re.len());
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            out.push(c);
            if let Some(n) = chars.get(i + 1) {
                out.push(*n);
            }
            i += 2;
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            out.push(c);
        } else if c == '[' {
            in_class = true;
            out.push(c);
            // A ']' right after '[' or '[^' is literal.
            if chars.get(i + 1) == Some(&'^') {
                out.push('^');
                i += 1;
            }
            if chars.get(i + 1) == Some(&']') {
                out.push(']');
                i += 1;
            }
        } else if c == '{' {
            match valid_repeat(&chars[i..]) {
                Some(len) => {
                    out.extend(&chars[i..i + len]);
                    i += len;
                    continue;
                }
                None => out.push_str("\\{"),
            }
        } else if c == '}' {
            out.push_str("\\}");
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// The length of a valid repetition `{n}`, `{n,}` or `{n,m}` at the start of `s`.
fn valid_repeat(s: &[char]) -> Option<usize> {
    let end = s.iter().position(|&c| c == '}')?;
    let body: String = s.get(1..end)?.iter().collect();
    let (a, b) = body.split_once(',').unwrap_or((&body, ""));
    let ok = !a.is_empty() && a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit());
    ok.then_some(end + 1)
}

fn go_error(re: &str, msg: &str) -> String {
    if msg.contains("unclosed group") {
        return format!("missing closing ): `{re}`");
    }
    if msg.contains("unclosed character class") {
        let from = re.rfind('[').unwrap_or(0);
        return format!("missing closing ]: `{}`", &re[from..]);
    }
    if msg.contains("unopened group") {
        return format!("unexpected ): `{re}`");
    }
    if msg.contains("repetition operator missing expression") {
        let op = re.chars().find(|c| "*+?{".contains(*c)).unwrap_or('*');
        return format!("missing argument to repetition operator: `{op}`");
    }
    if msg.contains("unrecognized escape")
        && let Some(i) = re.find('\\')
    {
        let esc: String = re[i..].chars().take(2).collect();
        return format!("invalid escape sequence: `{esc}`");
    }
    msg.lines()
        .last()
        .unwrap_or(msg)
        .trim_start_matches("error: ")
        .to_string()
}

/// `regexp.MustCompile`: Go panics, the template reports the panic text.
fn must_compile(re: &str) -> Result<regex::Regex, String> {
    compile(re).map_err(|e| format!("regexp: Compile({}): {e}", go_backquote(re)))
}

/// Go's `quote` helper in `regexp.MustCompile` (backquoted when possible).
fn go_backquote(s: &str) -> String {
    if gocompat::strconv::can_backquote(s) {
        format!("`{s}`")
    } else {
        gocompat::strconv::quote(s)
    }
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

type Compiler = fn(&str) -> Result<regex::Regex, String>;

/// Registers the regex functions. The plain variants use `regexp.MustCompile` in sprig (a bad
/// pattern panics, reported as an error); `regexMatch` ignores compile errors; the `must`
/// variants return them.
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
    let variants: [(&str, &str, Compiler); 2] = [("", "", must_compile), ("must", "Must", compile)];
    for (_, prefix, comp) in variants {
        let name = |base: &str| {
            if prefix.is_empty() {
                format!("regex{base}")
            } else {
                format!("mustRegex{base}")
            }
        };
        m.insert(
            name("FindAll"),
            Func::new(&[Str, Str, Int], move |a| {
                Ok(Value::string_list(find_all(
                    &comp(s(&a[0]))?,
                    s(&a[1]),
                    int(&a[2]),
                )))
            }),
        );
        m.insert(
            name("Find"),
            Func::new(&[Str, Str], move |a| {
                Ok(Value::str(
                    comp(s(&a[0]))?
                        .find(s(&a[1]))
                        .map(|m| m.as_str().to_string())
                        .unwrap_or_default(),
                ))
            }),
        );
        m.insert(
            name("ReplaceAll"),
            Func::new(&[Str, Str, Str], move |a| {
                Ok(Value::str(
                    comp(s(&a[0]))?
                        .replace_all(s(&a[1]), repl(s(&a[2])).as_str())
                        .into_owned(),
                ))
            }),
        );
        m.insert(
            name("ReplaceAllLiteral"),
            Func::new(&[Str, Str, Str], move |a| {
                Ok(Value::str(
                    comp(s(&a[0]))?
                        .replace_all(s(&a[1]), regex::NoExpand(s(&a[2])))
                        .into_owned(),
                ))
            }),
        );
        m.insert(
            name("Split"),
            Func::new(&[Str, Str, Int], move |a| {
                Ok(Value::string_list(split(&comp(s(&a[0]))?, s(&a[1]), int(&a[2]))))
            }),
        );
    }
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
