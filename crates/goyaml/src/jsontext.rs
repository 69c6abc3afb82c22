//! What go-yaml reads back from the JSON text Go's `encoding/json` writes for
//! a string.
//!
//! `encoding/json` escapes control characters, `"`, `\`, `<`, `>`, `&`,
//! U+2028 and U+2029, but writes NEL (U+0085) raw. go-yaml parses the JSON as
//! YAML, where a raw NEL inside a double-quoted scalar is a line break and is
//! *folded*: together with the spaces around it, a single break becomes one
//! space and `n` consecutive breaks become `n - 1` line feeds. (Tabs and other
//! breaks reach go-yaml as escapes and are not folded.)

use std::borrow::Cow;

const NEL: char = '\u{85}';

/// The string go-yaml ends up with for a Go string `s`.
pub(crate) fn read_back(s: &str) -> Cow<'_, str> {
    if !s.contains(NEL) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut run = String::new();
    let mut breaks = 0usize;
    let flush = |out: &mut String, run: &mut String, breaks: &mut usize| {
        match *breaks {
            0 => out.push_str(run),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
        run.clear();
        *breaks = 0;
    };
    for c in s.chars() {
        match c {
            ' ' => run.push(c),
            NEL => breaks += 1,
            _ => {
                flush(&mut out, &mut run, &mut breaks);
                out.push(c);
            }
        }
    }
    flush(&mut out, &mut run, &mut breaks);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::read_back;

    #[test]
    fn folds_nel() {
        assert_eq!(read_back("a b"), "a b");
        assert_eq!(read_back("a\u{85}b"), "a b");
        assert_eq!(read_back("a \u{85}  b"), "a b");
        assert_eq!(read_back("a\u{85}\u{85}b"), "a\nb");
        assert_eq!(read_back("a\u{85} \u{85}\u{85}b\n"), "a\n\nb\n");
    }
}
