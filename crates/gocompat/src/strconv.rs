//! Go's `strconv` quoting: `Quote`, `QuoteToASCII`, `QuoteRune`, `CanBackquote`, with
//! `unicode.IsPrint` deciding what is escaped.

use std::fmt::Write as _;

/// Go's `unicode.IsPrint`, approximated: graphic characters and the ASCII space.
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    // Format characters, private use, and noncharacters.
    !matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E
        | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF | 0xFFFE | 0xFFFF
        | 0xF0000..=0x10FFFF | 0xE0000..=0xE007F)
}

fn push_escaped(out: &mut String, c: char, quote: char, ascii_only: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii_only {
        if c.is_ascii() && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    quote_with(s, false)
}

/// Go's `strconv.QuoteToASCII`.
pub fn quote_ascii(s: &str) -> String {
    quote_with(s, true)
}

/// Whether an ASCII byte stands for itself inside a double-quoted Go string (and a JSON one):
/// printable and neither the quote nor the backslash. Both quoting forms agree on these.
pub fn is_plain_ascii(b: u8) -> bool {
    (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\'
}

/// Appends `s` to `out`, copying runs of bytes that `plain` accepts (ASCII only) in one go and
/// handing every other character to `escape`: how Go's quoting and JSON encoders are written
/// here, since most of what templates quote is plain.
pub fn escape_runs(
    out: &mut String,
    s: &str,
    plain: impl Fn(u8) -> bool,
    mut escape: impl FnMut(&mut String, char),
) {
    let mut rest = s;
    loop {
        let run = rest.bytes().position(|b| !plain(b)).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(run);
        out.push_str(run);
        let Some(c) = tail.chars().next() else {
            break;
        };
        escape(out, c);
        rest = &tail[c.len_utf8()..];
    }
}

/// `strconv.Quote` (or `QuoteToASCII`): plain ASCII copied as it is, every other character
/// escaped rune by rune.
fn quote_with(s: &str, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_runs(&mut out, s, is_plain_ascii, |out, c| {
        if c == '\u{FFFD}' && !ascii_only {
            // Quote keeps a literal replacement character (QuoteToASCII escapes it).
            out.push(c);
        } else {
            push_escaped(out, c, '"', ascii_only);
        }
    });
    out.push('"');
    out
}

/// Go's `strconv.QuoteRune` (or `QuoteRuneToASCII`).
pub fn quote_rune(c: char, ascii: bool) -> String {
    let mut out = String::from("'");
    push_escaped(&mut out, c, '\'', ascii);
    out.push('\'');
    out
}

/// Go's `strconv.CanBackquote`.
pub fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-copying quote agrees with escaping rune by rune.
    #[test]
    fn quote_matches_rune_by_rune_escaping() {
        fn reference(s: &str, ascii_only: bool) -> String {
            let mut out = String::from('"');
            for c in s.chars() {
                if c == '\u{FFFD}' && !ascii_only {
                    out.push(c);
                } else {
                    push_escaped(&mut out, c, '"', ascii_only);
                }
            }
            out.push('"');
            out
        }
        let cases = [
            "",
            "plain",
            "a\"b\\c",
            "tab\there\n",
            "\u{7f}\u{0}x",
            "caf\u{e9} \u{2603}",
            "\u{FFFD}",
            "\u{200B}zero",
            "\u{1F600}!",
            "~ !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}",
        ];
        for s in cases {
            assert_eq!(quote(s), reference(s, false), "{s:?}");
            assert_eq!(quote_ascii(s), reference(s, true), "{s:?}");
        }
    }
}
