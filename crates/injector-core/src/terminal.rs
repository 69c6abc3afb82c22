//! Text for a terminal: cluster-supplied strings (names, annotation values, reasons, messages)
//! may hold characters a terminal acts on — an escape sequence that rewrites the screen or the
//! window title, a carriage return that hides what precedes it, a bidirectional override that
//! shows a command in another order than it runs. [`escape`] writes those characters as visible
//! escapes; everything else passes unchanged.
//!
//! JSON output needs none of this (JSON escapes control characters itself); the human-readable
//! reports of `explain`, `doctor`, `preview` and `outdated` pass every cluster-supplied string
//! through [`escape`]. Shell commands are quoted by [`crate::shell`], which never leaves such a
//! character raw either, so escaping a quoted command changes nothing.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal could act on `c` or show text around it out of order: C0 and C1 control
/// characters (newline and tab included), DEL, the bidirectional embeddings, overrides, isolates
/// and marks, and the line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [unsafe](is_unsafe) character written as an escape: `\n`, `\r`, `\t`,
/// `\x1b` for the other ASCII ones, `\u{202e}` beyond ASCII. Borrowed when nothing needed it.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() && is_unsafe(c) => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_become_visible_escapes_and_plain_text_is_borrowed() {
        assert!(matches!(escape("web-1 ✓ café"), Cow::Borrowed("web-1 ✓ café")));
        assert_eq!(escape("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(escape("\u{1b}]0;owned\u{7}"), "\\x1b]0;owned\\x07");
        assert_eq!(escape("x\u{7f}\u{9b}2J"), "x\\x7f\\u{9b}2J");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("\0"), "\\x00");
    }

    #[test]
    fn an_escaped_text_has_nothing_left_to_escape() {
        let hostile = "\u{1b}[2J\r\n\u{85}\u{2066}$(id)`id`'\"\\";
        let once = escape(hostile);
        assert!(!once.chars().any(is_unsafe), "{once}");
        assert_eq!(escape(&once), once);
    }
}
