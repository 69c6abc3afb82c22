//! Compact JSON text of a value, byte for byte what `serde_json::to_writer` writes, for the
//! patch's paths and values.
//!
//! Almost every string in a pod needs no escaping, and `serde_json` still looks each byte up in
//! its escape table and goes through its formatter for every string and punctuation mark. Here a
//! string is first checked for bytes that need escaping, eight at a time, and copied whole when
//! there are none; the rare string that has some, and every number, is written by `serde_json`
//! itself, so the text is always the same.

use serde_json::Value;

/// Appends `value` as compact JSON. Errors are `serde_json`'s, which into memory has none to give
/// for strings and numbers; they are passed on rather than assumed away.
pub fn write_value(out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => serde_json::to_writer(&mut *out, number)?,
        Value::String(text) => write_str(out, text)?,
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (index, (key, member)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key)?;
                out.push(b':');
                write_value(out, member)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Appends `text` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if needs_escaping(text.as_bytes()) {
        serde_json::to_writer(&mut *out, text)
    } else {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    }
}

/// Whether any byte must be escaped in a JSON string: controls, `"` and `\\` (`serde_json`
/// escapes exactly these). Eight bytes at a time: a word has a byte below 0x20, or a byte equal
/// to one of the two marks, exactly when the classic zero-byte tests below are nonzero.
fn needs_escaping(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let has_byte_below =
        |word: u64, limit: u8| word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGH_BITS != 0;
    let has_byte = |word: u64, byte: u8| has_byte_below(word ^ (ONES * u64::from(byte)), 1);
    let (words, rest) = bytes.as_chunks::<8>();
    words.iter().any(|word| {
        let word = u64::from_le_bytes(*word);
        has_byte_below(word, 0x20) || has_byte(word, b'"') || has_byte(word, b'\\')
    }) || rest
        .iter()
        .any(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn the_text_is_serde_jsons() {
        let long = "x".repeat(40);
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-12),
            json!(18446744073709551615u64),
            json!(1.5),
            json!(1e-7),
            json!(""),
            json!("plain"),
            json!(long),
            json!(format!("{long}\"")),
            json!(format!("{}\\{}", "a".repeat(16), "b".repeat(15))),
            json!("tab\there, newline\n, nul \u{0}, bell \u{7}, delete \u{7f}"),
            json!("non-ASCII: é ü 日本 🚀, and </script>"),
            json!([]),
            json!({}),
            json!([1, "two", [3], {"four": 4}, null]),
            json!({"a/b~c": {"k\"ey": ["v\\al", {"": ""}]}, "z": 1, "a": 2}),
        ];
        for value in values {
            assert_eq!(
                text(&value),
                serde_json::to_string(&value).expect("serializes"),
                "{value:?}"
            );
        }
    }

    #[test]
    fn every_byte_that_needs_escaping_is_found_wherever_it_sits() {
        for position in 0..40 {
            for special in [
                '"', '\\', '\n', '\u{0}', '\u{1}', '\u{1f}', ' ', '!', '#', '[', ']', '\u{7f}', 'é',
            ] {
                let mut s: String = "a".repeat(40);
                s.replace_range(position..=position, &special.to_string());
                let mut out = Vec::new();
                write_str(&mut out, &s).expect("writes");
                assert_eq!(
                    out,
                    serde_json::to_vec(&s).expect("serializes"),
                    "{special:?} at {position}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in "\\PC*|[\\x00-\\x7f]{0,40}") {
            let mut out = Vec::new();
            write_str(&mut out, &text).expect("writes");
            proptest::prop_assert_eq!(out, serde_json::to_vec(&text).expect("serializes"));
        }
    }
}
