//! The quoting of printed commands, proven by real shells: hostile words are quoted, the line
//! is run by `sh -c` (dash here) and `bash -c` as `printf '%s\0' WORDS…`, and what printf
//! received must be the words, byte for byte. Words holding a terminal control character use
//! ANSI-C quoting, which bash reads; dash (without it) must still receive exactly one argument
//! per word and run nothing else.

use std::process::Command;

use injector_core::{shell, terminal};
use proptest::prelude::*;

/// The arguments `printf '%s\0'` received when `shell` ran `words` quoted, or `None` when the
/// shell is not installed.
fn received(shell_path: &str, words: &[String]) -> Option<Vec<String>> {
    if !std::path::Path::new(shell_path).exists() {
        return None;
    }
    let mut line = String::from("printf '%s\\0'");
    for word in words {
        line.push(' ');
        line.push_str(&shell::quote(word));
    }
    let out = Command::new(shell_path)
        .args(["-c", &line])
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("the shell runs");
    assert!(
        out.status.success(),
        "{shell_path} -c {line:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 back");
    let mut args: Vec<String> = text.split('\0').map(str::to_owned).collect();
    // printf '%s\0' ends every argument with NUL: the split leaves one empty tail.
    assert_eq!(args.pop().as_deref(), Some(""), "{line:?}");
    Some(args)
}

/// Words an attacker would try: quotes, expansions, separators, globs, history and control
/// characters, bidirectional overrides, mixed with ordinary text.
fn hostile_word() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("$(touch /tmp/owned)".to_owned()),
        Just("`id`".to_owned()),
        Just("${HOME}".to_owned()),
        Just("$'".to_owned()),
        Just(";".to_owned()),
        Just("&&".to_owned()),
        Just("|".to_owned()),
        Just(" ".to_owned()),
        Just("*".to_owned()),
        Just("~".to_owned()),
        Just("!".to_owned()),
        Just("^".to_owned()),
        Just("#".to_owned()),
        Just("=".to_owned()),
        Just("{a,b}".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("\t".to_owned()),
        Just("\u{1b}]0;title\u{7}".to_owned()),
        Just("\u{7f}".to_owned()),
        Just("\u{9b}".to_owned()),
        Just("\u{202e}".to_owned()),
        Just("é✓".to_owned()),
        "[a-zA-Z0-9._/:=,@+-]{0,6}",
        any::<char>()
            .prop_filter("no NUL", |c| *c != '\0')
            .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn quoted_words_reach_the_program_unchanged(words in prop::collection::vec(hostile_word(), 1..6)) {
        let line = shell::command(&words);
        prop_assert!(!line.chars().any(terminal::is_unsafe), "raw control character in {line:?}");
        prop_assert_eq!(terminal::escape(&line), line.as_str(), "escaping a command changes nothing");
        if let Some(args) = received("/bin/bash", &words) {
            prop_assert_eq!(&args, &words);
        }
        if let Some(args) = received("/bin/sh", &words) {
            if words.iter().any(|w| w.chars().any(terminal::is_unsafe)) {
                prop_assert_eq!(args.len(), words.len(), "one argument per word in a shell without $'…'");
            } else {
                prop_assert_eq!(&args, &words);
            }
        }
    }
}

#[test]
fn a_value_that_breaks_naive_single_quotes_stays_one_argument() {
    let marker = std::env::temp_dir().join(format!("shell-quoting-owned-{}", std::process::id()));
    let words = vec![
        format!("x'; touch {}; echo '", marker.display()),
        format!("$(touch {})", marker.display()),
        format!("`touch {}`", marker.display()),
        format!("a\ntouch {}", marker.display()),
    ];
    for shell_path in ["/bin/sh", "/bin/bash"] {
        if let Some(args) = received(shell_path, &words) {
            assert_eq!(args.len(), words.len(), "{shell_path}");
        }
    }
    assert!(!marker.exists(), "a quoted word ran a command");
}
