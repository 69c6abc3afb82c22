//! Shell commands the tools print for a person to paste (`doctor`'s fixes, `explain`'s "what
//! would change it", `outdated`'s rollout commands). Every word that is not our own literal text
//! — a name, a label, an annotation value, a JSON patch built from them — goes through [`quote`]
//! (or [`command`], which quotes every word), so a value such as `x'; touch /tmp/owned; echo '`
//! stays one argument and runs nothing.
//!
//! Quoting is `shlex`'s (portable to every POSIX shell: dash, bash, zsh, ksh, busybox), with two
//! additions: words made only of characters no shell treats specially are left bare, so common
//! commands read as a person would type them; and a word holding a character a terminal acts on
//! (see [`crate::terminal::is_unsafe`]), which no portable quoting can carry without printing it
//! raw, is written in ANSI-C quoting (`$'…'`, understood by bash, zsh, ksh and busybox sh), with
//! every such character as a `\xHH` escape — a shell without `$'…'` (dash) reads it as a literal
//! string, never as code. A NUL byte cannot be passed to a program at all; it is printed as
//! `\x00`, where bash ends the argument.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::terminal::is_unsafe;

/// `word` as one shell word: bare when nothing in it is special, else quoted.
pub fn quote(word: &str) -> Cow<'_, str> {
    if is_bare(word) {
        return Cow::Borrowed(word);
    }
    if word.chars().any(is_unsafe) {
        return Cow::Owned(ansi_c(word));
    }
    // Without control characters (NUL is one) shlex's quoting cannot fail.
    shlex::try_quote(word).unwrap_or_else(|_| Cow::Owned(ansi_c(word)))
}

/// The command line running `words` (the program first), each word [quoted](quote).
pub fn command<I, S>(words: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut line = String::new();
    for word in words {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&quote(word.as_ref()));
    }
    line
}

/// `value` as JSON text for a command's argument: as `serde_json` writes it, with the characters
/// a terminal acts on that JSON leaves raw (DEL, C1 controls, bidirectional controls) written as
/// `\uXXXX` escapes, so the text means the same JSON and quotes portably.
pub fn json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if !text.chars().any(is_unsafe) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            // serde_json escapes C0 controls itself; what is left is in the BMP (one `\u`).
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Words no shell splits, expands or globs: letters, digits and `_ - . / : @ + = ,`, not starting
/// with `=` (zsh expands `=cmd` to a path).
fn is_bare(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('=')
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@+=,".contains(&b))
}

/// `$'…'` with every terminal-unsafe character, `'`, `\` and `!` (bash's history expansion in
/// a pasted line) written as `\xHH` escapes of their UTF-8 bytes.
fn ansi_c(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 8);
    out.push_str("$'");
    let mut bytes = [0u8; 4];
    for c in word.chars() {
        if is_unsafe(c) || matches!(c, '\'' | '\\' | '!') {
            for byte in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(out, "\\x{byte:02x}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plain_words_stay_bare_and_the_rest_is_quoted() {
        assert_eq!(
            command([
                "kubectl",
                "-n",
                "shop",
                "label",
                "namespace",
                "shop",
                "istio-injection=enabled"
            ]),
            "kubectl -n shop label namespace shop istio-injection=enabled"
        );
        assert_eq!(quote(""), "''");
        assert_eq!(quote("=ls"), "'=ls'");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(
            quote(r#"{"metadata":{"annotations":{"k":"v"}}}"#),
            r#"'{"metadata":{"annotations":{"k":"v"}}}'"#
        );
        assert_eq!(
            quote("x'; touch /tmp/owned; echo '"),
            r#""x'; touch /tmp/owned; echo '""#
        );
        assert_eq!(quote("$(id) `id`"), r#"'$(id) `id`'"#);
    }

    #[test]
    fn terminal_controls_are_written_as_escapes_never_raw() {
        assert_eq!(quote("a\nb"), r"$'a\x0ab'");
        assert_eq!(quote("\u{1b}[2J it's!"), r"$'\x1b[2J it\x27s\x21'");
        assert_eq!(quote("\u{202e}"), r"$'\xe2\x80\xae'");
    }

    #[test]
    fn json_arguments_escape_what_a_terminal_would_act_on() {
        let value = json!({"k": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}"});
        assert_eq!(json(&value), r#"{"k":"a\u001bb\u009bc\u202ed\u007f"}"#);
        let back: serde_json::Value = serde_json::from_str(&json(&value)).expect("still JSON");
        assert_eq!(back, value);
        assert!(!quote(&json(&value)).starts_with('$'), "quotes portably");
    }
}
