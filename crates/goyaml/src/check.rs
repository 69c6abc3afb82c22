//! The inputs for which Go's `sigs.k8s.io/yaml.Marshal` fails instead of
//! printing: go-yaml cannot read back the JSON text Go's `encoding/json`
//! wrote for them.

use serde_json::Value;
use std::fmt;

/// Why `sigs.k8s.io/yaml.Marshal` would reject a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A string holds a character that `encoding/json` writes raw but
    /// go-yaml's reader refuses (U+007F–U+0084, U+0086–U+009F, U+FFFE,
    /// U+FFFF). Go reports `yaml: control characters are not allowed`.
    ControlCharacter {
        /// The offending character.
        character: char,
    },
    /// A map key that go-yaml cannot read as a flow-mapping key: it holds a
    /// raw NEL (U+0085), which makes it span lines, or its JSON form is more
    /// than 1024 characters from the opening quote to the `:`. Go reports
    /// `yaml: line N: did not find expected ',' or '}'`.
    UnreadableKey {
        /// The key, shortened to at most 40 characters.
        key: String,
    },
    /// Arrays and objects nested more than 10000 deep. Go reports
    /// `yaml: exceeded max depth of 10000`.
    TooDeep,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ControlCharacter { character } => {
                write!(
                    f,
                    "yaml: control characters are not allowed (U+{:04X})",
                    u32::from(*character)
                )
            }
            Error::UnreadableKey { key } => {
                write!(
                    f,
                    "yaml: did not find expected ',' or '}}' (map key {key:?} is not a valid flow key)"
                )
            }
            Error::TooDeep => write!(f, "yaml: exceeded max depth of {MAX_DEPTH}"),
        }
    }
}

impl std::error::Error for Error {}

/// go-yaml's scanner limit on nested flow collections.
pub(crate) const MAX_DEPTH: usize = 10000;

/// Characters `encoding/json` leaves raw that go-yaml's reader rejects.
fn rejected(c: char) -> bool {
    matches!(c, '\u{7F}'..='\u{84}' | '\u{86}'..='\u{9F}' | '\u{FFFE}' | '\u{FFFF}')
}

/// Length in characters of `s` as `encoding/json` escapes it (without quotes).
fn json_escaped_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if u32::from(c) < 0x20 => 6,
            _ => 1,
        })
        .sum()
}

fn check_string(s: &str) -> Result<(), Error> {
    match s.chars().find(|&c| rejected(c)) {
        Some(character) => Err(Error::ControlCharacter { character }),
        None => Ok(()),
    }
}

/// Check `value` for the inputs Go's path rejects, in document order. The
/// walk uses an explicit stack, so any depth is safe to check.
pub(crate) fn check(value: &Value) -> Result<(), Error> {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::String(s) => check_string(s)?,
            Value::Array(items) => {
                if depth >= MAX_DEPTH {
                    return Err(Error::TooDeep);
                }
                stack.extend(items.iter().rev().map(|v| (v, depth + 1)));
            }
            Value::Object(map) => {
                if depth >= MAX_DEPTH {
                    return Err(Error::TooDeep);
                }
                for (key, _) in map {
                    check_string(key)?;
                    // The key token runs from its opening quote (index 0) to
                    // the ':' at escaped length + 2; go-yaml drops the simple
                    // key when that is more than 1024 characters away, or when
                    // it spans lines.
                    if key.contains('\u{85}') || json_escaped_len(key) + 2 > 1024 {
                        return Err(Error::UnreadableKey {
                            key: key.chars().take(40).collect(),
                        });
                    }
                }
                stack.extend(map.values().rev().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Value {
        let mut v = Value::Null;
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn depth_limit() {
        let deepest = nested(MAX_DEPTH);
        let too_deep = nested(MAX_DEPTH + 1);
        assert_eq!(check(&deepest), Ok(()));
        assert_eq!(check(&too_deep), Err(Error::TooDeep));
        assert!(crate::to_string(&too_deep).ends_with("- null\n"));
        // serde_json drops nested values recursively; unwind by hand.
        for v in [deepest, too_deep] {
            let mut v = v;
            while let Value::Array(mut items) = v {
                v = items.pop().unwrap_or(Value::Null);
            }
        }
    }
}
