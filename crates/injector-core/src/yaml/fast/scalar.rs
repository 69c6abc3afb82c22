//! Scalars: resolving plain scalars exactly as `serde-saphyr` does, and decoding single-line
//! quoted scalars.
//!
//! A plain scalar is resolved here only when the answer is certain from `serde-saphyr`'s rules for
//! untyped targets (null words, then YAML 1.1 booleans, then integers, then floats, else a string):
//! text that cannot be any of these is a string, `null`/`~`/`true`/`false` and plain decimal
//! integers are resolved directly, and everything else that might be a number or a boolean is
//! handed to `serde-saphyr` on its own, so its value is exact by construction.

use serde_json::{Number, Value};

/// The value of a plain scalar (already trimmed, single line, non-empty).
pub(super) fn resolve_plain(text: &str) -> Option<Value> {
    match text {
        "null" | "Null" | "NULL" | "~" => return Some(Value::Null),
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    match unsigned.as_bytes().first() {
        Some(b'0'..=b'9') => {
            if let Some(number) = decimal_integer(text) {
                return Some(Value::Number(number));
            }
            if !could_be_number(unsigned) {
                return Some(Value::String(text.to_owned()));
            }
            ask_serde_saphyr(text)
        }
        // Alone, `...` would end the document it is asked in (and read as null): not ours to say.
        Some(b'.') if unsigned.starts_with("...") => None,
        // `.5`, `.inf`, `-.nan`, and a lone sign: rare enough to ask.
        Some(b'.') | None => ask_serde_saphyr(text),
        Some(_) if is_special_word(text) => ask_serde_saphyr(text),
        Some(_) => Some(Value::String(text.to_owned())),
    }
}

/// A YAML 1.1 boolean spelling in any case, or a null word: the scalars whose meaning is not
/// their text.
pub(super) fn is_special_word(text: &str) -> bool {
    // The longest word is five letters: most scalars and keys are told apart by length alone.
    text.len() <= 5
        && ["y", "n", "yes", "no", "on", "off", "true", "false", "null"]
            .iter()
            .any(|word| text.eq_ignore_ascii_case(word))
        || text == "~"
}

/// A plain mapping key that is certainly the string it reads: it starts with a letter, a non-ASCII
/// character or one of `_$/\\(=<^` (never a digit, sign or dot: `serde-saphyr` compares numeric
/// keys by value when looking for duplicates), is not a boolean or null word nor a merge key,
/// holds no indicator that could change its reading, and is not too long for an implicit key.
pub(super) fn plain_key(text: &str) -> Option<String> {
    let first = *text.as_bytes().first()?;
    let plain = (first.is_ascii_alphabetic() || !first.is_ascii() || b"_$/\\(=<^".contains(&first))
        && text.len() <= super::MAX_KEY_LEN
        && !text.starts_with("<<")
        && !is_special_word(text)
        && !text.bytes().any(|b| NOT_IN_PLAIN_KEY[usize::from(b)]);
    plain.then(|| text.to_owned())
}

/// The bytes a plain key must not hold, as a table (one load per byte of the key).
static NOT_IN_PLAIN_KEY: [bool; 256] = {
    let mut table = [false; 256];
    let bytes = b"#:'\"\t,[]{}";
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
};

/// `0`, `[1-9][0-9]*` fitting `u64`, or `-[1-9][0-9]*` fitting `i64`: `serde-saphyr` visits these as
/// `u64` / `i64`, and so do we.
fn decimal_integer(text: &str) -> Option<Number> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let bytes = digits.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes.len() > 1 && bytes.first() == Some(&b'0') {
        return None;
    }
    if negative {
        if digits == "0" {
            return None;
        }
        text.parse::<i64>().ok().map(Number::from)
    } else {
        digits.parse::<u64>().ok().map(Number::from)
    }
}

/// Whether text after an optional sign, starting with a digit, might be an integer (any radix,
/// with underscores) or a float. Only these characters occur in such spellings; anything else
/// (`2000m`, `1024Mi`, `1.2.3-rc`) makes a string.
fn could_be_number(unsigned: &str) -> bool {
    unsigned
        .bytes()
        .all(|b| b.is_ascii_hexdigit() || matches!(b, b'x' | b'X' | b'o' | b'O' | b'.' | b'_' | b'+' | b'-'))
}

/// Resolves a scalar by parsing it alone with `serde-saphyr` and the same options. `None` when that
/// is an error (the whole document then goes to `serde-saphyr`, which reports it) or not a scalar.
fn ask_serde_saphyr(text: &str) -> Option<Value> {
    match serde_saphyr::from_str_with_options::<Value>(text, super::super::yaml_11_options()) {
        Ok(value @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_))) => Some(value),
        _ => None,
    }
}

/// Decodes a double-quoted scalar whose opening quote is at `start`, ending on the same line
/// (before `end`). Returns the string and the offset after the closing quote.
pub(super) fn double_quoted(text: &str, start: usize, end: usize) -> Option<(String, usize)> {
    let body = text.get(start + 1..end)?;
    let mut out = String::new();
    let mut rest = body;
    loop {
        // Text up to the next quote or backslash is copied as it is, in one piece.
        let stop = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
        let (chunk, tail) = rest.split_at_checked(stop)?;
        out.push_str(chunk);
        let mut chars = tail.chars();
        match chars.next()? {
            '"' => {
                let after = body.len() - chars.as_str().len();
                return Some((out, start + 1 + after));
            }
            _ => {
                let escape = chars.next()?;
                let decoded = match escape {
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    ' ' => ' ',
                    '"' => '"',
                    '/' => '/',
                    '\\' => '\\',
                    'x' => hex_escape(&mut chars, 2)?,
                    'u' => hex_escape(&mut chars, 4)?,
                    'U' => hex_escape(&mut chars, 8)?,
                    // `\N`, `\_`, `\L`, `\P`, `\<tab>` and anything unknown: not ours.
                    _ => return None,
                };
                out.push(decoded);
                rest = chars.as_str();
            }
        }
    }
}

/// The character of `digits` hexadecimal digits (a surrogate or an invalid code point: `None`).
fn hex_escape(chars: &mut std::str::Chars<'_>, digits: usize) -> Option<char> {
    let mut code: u32 = 0;
    for _ in 0..digits {
        let c = chars.next()?;
        code = code * 16 + c.to_digit(16)?;
    }
    char::from_u32(code)
}

/// Decodes a single-quoted scalar whose opening quote is at `start`, ending on the same line
/// (before `end`). Returns the string and the offset after the closing quote.
pub(super) fn single_quoted(text: &str, start: usize, end: usize) -> Option<(String, usize)> {
    let body = text.get(start + 1..end)?;
    let mut out = String::new();
    let mut rest = body;
    let mut consumed = start + 1;
    loop {
        let quote = rest.find('\'')?;
        out.push_str(rest.get(..quote)?);
        if rest.as_bytes().get(quote + 1) == Some(&b'\'') {
            out.push('\'');
            rest = rest.get(quote + 2..)?;
            consumed += quote + 2;
        } else {
            return Some((out, consumed + quote + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resolves_obvious_scalars_directly() {
        assert_eq!(resolve_plain("istiod"), Some(json!("istiod")));
        assert_eq!(resolve_plain("2000m"), Some(json!("2000m")));
        assert_eq!(resolve_plain("--domain"), Some(json!("--domain")));
        assert_eq!(resolve_plain("15090"), Some(json!(15090)));
        assert_eq!(resolve_plain("-12"), Some(json!(-12)));
        assert_eq!(resolve_plain("0"), Some(json!(0)));
        assert_eq!(resolve_plain("null"), Some(Value::Null));
        assert_eq!(resolve_plain("false"), Some(json!(false)));
    }

    #[test]
    fn asks_serde_saphyr_about_the_rest() {
        assert_eq!(resolve_plain("0755"), Some(json!(493)));
        assert_eq!(resolve_plain("Yes"), Some(json!(true)));
        assert_eq!(resolve_plain("OFF"), Some(json!(false)));
        assert_eq!(resolve_plain("1e3"), Some(json!(1000.0)));
        assert_eq!(resolve_plain("0x1F"), Some(json!(31)));
        assert_eq!(resolve_plain("+1"), Some(json!(1)));
        assert_eq!(
            resolve_plain("18446744073709551616"),
            Some(json!(1.8446744073709552e19))
        );
        // Rejected by serde-saphyr's non-finite float policy: the document goes the slow way.
        assert_eq!(resolve_plain(".inf"), None);
    }

    #[test]
    fn decodes_quoted_scalars() {
        let text = r#""a\"b\\c\x41\u00e9\U0001F600\t" rest"#;
        assert_eq!(
            double_quoted(text, 0, text.len()),
            Some(("a\"b\\cAé😀\t".to_owned(), 31))
        );
        assert_eq!(double_quoted(r#""\N""#, 0, 4), None);
        assert_eq!(double_quoted(r#""\ud800""#, 0, 8), None);
        assert_eq!(double_quoted(r#""open"#, 0, 5), None);
        let text = "'it''s' x";
        assert_eq!(single_quoted(text, 0, text.len()), Some(("it's".to_owned(), 7)));
        assert_eq!(single_quoted("'open", 0, 5), None);
    }
}
