//! YAML as `sigs.k8s.io/yaml` writes it (Istio's `toYaml`): the value is first marshalled to
//! JSON, then written by go-yaml v2 in block style with sorted keys.
//!
//! This is a compact emitter for the shapes templates pass (maps, lists, scalars). It follows
//! go-yaml's rules for key order (digit runs compare numerically), scalar styles (plain, single
//! quoted, double quoted, literal `|`), quoting of strings that would read back as another type
//! (`"true"`, `"123"`, `"~"`, `"1e3"`), and folding of long plain lines at 80 columns. It is
//! kept behind [`to_yaml`] so an exact emitter can replace it.

use std::cmp::Ordering;

use serde_json::Value as Json;

use crate::gojson::format_float_v;

const BEST_WIDTH: usize = 80;

/// YAML text for a JSON value, ending with a newline (`null\n` for null).
pub fn to_yaml(json: &Json) -> String {
    let mut out = String::new();
    match json {
        Json::Object(m) if !m.is_empty() => write_map(&mut out, m, 0, false),
        Json::Array(a) if !a.is_empty() => write_seq(&mut out, a, 0, false),
        scalar => {
            write_scalar(&mut out, scalar, 2);
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn write_map(out: &mut String, map: &serde_json::Map<String, Json>, indent: usize, inline_first: bool) {
    let keys = sorted_keys(map);
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 || !inline_first {
            pad(out, indent);
        }
        if key.chars().count() > 128 || key.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            // Not a simple key: `? key` then `: value` on its own line.
            out.push_str("? ");
            write_string(out, key, indent + 2);
            out.push('\n');
            pad(out, indent);
        } else {
            write_key(out, key);
        }
        out.push(':');
        let value = &map[key.as_str()];
        match value {
            Json::Object(m) if !m.is_empty() => {
                out.push('\n');
                write_map(out, m, indent + 2, false);
            }
            Json::Array(a) if !a.is_empty() => {
                out.push('\n');
                write_seq(out, a, indent, false);
            }
            scalar => {
                out.push(' ');
                write_scalar(out, scalar, indent + 2);
                out.push('\n');
            }
        }
    }
}

fn write_seq(out: &mut String, items: &[Json], indent: usize, inline_first: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline_first {
            pad(out, indent);
        }
        out.push_str("- ");
        match item {
            Json::Object(m) if !m.is_empty() => write_map(out, m, indent + 2, true),
            Json::Array(a) if !a.is_empty() => write_seq(out, a, indent + 2, true),
            scalar => {
                write_scalar(out, scalar, indent + 2);
                out.push('\n');
            }
        }
    }
}

fn write_key(out: &mut String, key: &str) {
    let analysis = analyze(key);
    let style = if resolves_to_non_string(key) || analysis.multiline {
        Style::Double
    } else if !analysis.block_plain || key.is_empty() {
        if analysis.single_allowed {
            Style::Single
        } else {
            Style::Double
        }
    } else {
        Style::Plain
    };
    write_styled(out, key, style, 0, false);
}

fn write_scalar(out: &mut String, json: &Json, indent: usize) {
    match json {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else if x.fract() == 0.0 && x.abs() < 9.2e18 {
                // Go's JSON writes an integral float without a fraction; YAML reads it as an int.
                out.push_str(&(x as i64).to_string());
            } else {
                out.push_str(&match format_float_v(x).as_str() {
                    "+Inf" => ".inf".to_string(),
                    "-Inf" => "-.inf".to_string(),
                    "NaN" => ".nan".to_string(),
                    s => s.to_string(),
                });
            }
        }
        Json::String(s) => write_string(out, s, indent),
        Json::Object(_) => out.push_str("{}"),
        Json::Array(_) => out.push_str("[]"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

fn write_string(out: &mut String, s: &str, indent: usize) {
    let analysis = analyze(s);
    let mut style = if s.contains('\n') {
        Style::Literal
    } else if !resolves_to_non_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    };
    if style == Style::Plain && !analysis.block_plain {
        style = Style::Single;
    }
    if style == Style::Single && !analysis.single_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && !analysis.block_allowed {
        style = Style::Double;
    }
    write_styled(out, s, style, indent, true);
}

fn column(out: &str) -> usize {
    match out.rfind('\n') {
        Some(i) => out[i + 1..].chars().count(),
        None => out.chars().count(),
    }
}

fn write_styled(out: &mut String, s: &str, style: Style, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    match style {
        Style::Plain | Style::Single => {
            let quote = style == Style::Single;
            if quote {
                out.push('\'');
            }
            let mut col = column(out);
            let mut spaces = false;
            let mut breaks = false;
            for (i, &c) in chars.iter().enumerate() {
                if is_break(c) {
                    if !breaks && c == '\n' {
                        out.push('\n');
                    }
                    out.push(c);
                    col = 0;
                    breaks = true;
                    continue;
                }
                if breaks {
                    pad(out, indent);
                    col = indent;
                    breaks = false;
                }
                if c == ' ' {
                    let next_space = chars.get(i + 1) == Some(&' ');
                    let inner = !quote || (i != 0 && i + 1 != chars.len());
                    if allow_breaks && !spaces && col > BEST_WIDTH && !next_space && inner {
                        out.push('\n');
                        pad(out, indent);
                        col = indent;
                    } else {
                        out.push(c);
                        col += 1;
                    }
                    spaces = true;
                } else {
                    if quote && c == '\'' {
                        out.push('\'');
                        col += 1;
                    }
                    out.push(c);
                    col += 1;
                    spaces = false;
                }
            }
            if quote {
                out.push('\'');
            }
        }
        Style::Double => write_double(out, &chars),
        Style::Literal => {
            out.push('|');
            if matches!(chars.first(), Some(' ' | '\n')) {
                out.push('2');
            }
            let trailing = s.len() - s.trim_end_matches('\n').len();
            match trailing {
                0 => out.push('-'),
                1 if s.len() > 1 => {}
                _ => out.push('+'),
            }
            let body = s.strip_suffix('\n').unwrap_or(s);
            for line in body.split('\n') {
                out.push('\n');
                if !line.is_empty() {
                    pad(out, indent);
                    out.push_str(line);
                }
            }
        }
    }
}

fn write_double(out: &mut String, chars: &[char]) {
    out.push('"');
    for &c in chars {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if !is_printable(c) || c == '\u{feff}' => {
                let n = c as u32;
                if n <= 0xFF {
                    out.push_str(&format!("\\x{n:02X}"));
                } else if n <= 0xFFFF {
                    out.push_str(&format!("\\u{n:04X}"));
                } else {
                    out.push_str(&format!("\\U{n:08X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn is_printable(c: char) -> bool {
    matches!(c as u32,
        0x0A | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
        && c != '\u{feff}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank_or_end(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c == ' ' || c == '\t' || c == '\0' || is_break(c),
    }
}

struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_allowed: bool,
    block_allowed: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar` (block context).
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: false,
            single_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special) = (false, false);
    let mut preceded_by_ws = true;
    let mut followed_by_ws = is_blank_or_end(chars.get(1).copied());
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                block_indicators = true;
            }
            if (c == '?' || c == ':' || c == '-') && followed_by_ws {
                block_indicators = true;
            }
        } else if (c == ':' && followed_by_ws) || (c == '#' && preceded_by_ws) {
            block_indicators = true;
        }
        if !is_printable(c) {
            special = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == n {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == n {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_break = true;
            previous_space = false;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = is_blank_or_end(Some(c));
        followed_by_ws = is_blank_or_end(chars.get(i + 2).copied());
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain: true,
        single_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain = false;
        a.single_allowed = false;
    }
    if space_break || special {
        a.block_plain = false;
        a.single_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain = false;
    }
    a
}

/// Whether go-yaml v2 would read the plain text back as something other than a string.
fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No", "NO",
        "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN",
        ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let Some(first) = s.chars().next() else {
        return true;
    };
    if first.is_ascii_digit() || first == '+' || first == '-' {
        let plain: String = s.chars().filter(|&c| c != '_').collect();
        if go_parse_int_base0(&plain) || is_yaml_float(&plain) || is_binary(&plain) {
            return true;
        }
        return is_timestamp(s);
    }
    if first == '.' {
        return is_yaml_float(s);
    }
    false
}

fn go_parse_int_base0(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (digits, radix) = if let Some(r) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (r, 2)
    } else if body.len() > 1 && body.starts_with('0') {
        (&body[1..], 8)
    } else {
        (body, 10)
    };
    !digits.is_empty() && u64::from_str_radix(digits, radix).is_ok()
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn is_binary(s: &str) -> bool {
    let body = s.strip_prefix('-').unwrap_or(s);
    body.strip_prefix("0b")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c == b'0' || c == b'1'))
}

/// A YAML timestamp (`2001-12-14`, `2001-12-14t21:59:43.10-05:00`, ...), roughly.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |from: usize, min: usize, max: usize| -> Option<usize> {
        let mut i = from;
        while i < b.len() && b[i].is_ascii_digit() && i - from < max {
            i += 1;
        }
        (i - from >= min).then_some(i)
    };
    let Some(i) = num(0, 4, 4) else { return false };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    let Some(i) = num(i + 1, 1, 2) else { return false };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    let Some(i) = num(i + 1, 1, 2) else { return false };
    i == b.len() || matches!(b[i], b'T' | b't' | b' ' | b'\t')
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn is_base60_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (main, _frac) = body.split_once('.').unwrap_or((body, ""));
    let mut parts = main.split(':');
    let Some(head) = parts.next() else { return false };
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && head.starts_with(|c: char| c.is_ascii_digit())
        && head.bytes().all(|c| c.is_ascii_digit() || c == b'_')
        && rest.iter().all(|p| {
            (1..=2).contains(&p.len())
                && p.bytes().all(|c| c.is_ascii_digit())
                && (p.len() == 1 || p.as_bytes()[0] <= b'5')
        })
        && _frac.bytes().all(|c| c.is_ascii_digit() || c == b'_')
}

/// The keys in go-yaml v2's order. Its comparison is not transitive for some mixes of digits and
/// letters (`9`, `10`, `1e3`), so the result depends on the sort algorithm: Go's `sort.Sort`
/// uses insertion sort up to 12 elements, reproduced here; larger maps use a stable sort,
/// which agrees with Go whenever the keys are consistently ordered.
fn sorted_keys(map: &serde_json::Map<String, Json>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    if keys.len() <= 12 {
        for i in 1..keys.len() {
            let mut j = i;
            while j > 0 && key_order(keys[j], keys[j - 1]) == Ordering::Less {
                keys.swap(j, j - 1);
                j -= 1;
            }
        }
    } else {
        keys.sort_by(|a, b| key_order(a, b));
    }
    keys
}

/// go-yaml v2's key order: letters after non-letters, digit runs compared as numbers.
fn key_order(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl { Ordering::Less } else { Ordering::Greater };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .saturating_mul(10)
                .saturating_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .saturating_mul(10)
                .saturating_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn special_strings_are_quoted_like_go_yaml() {
        let v = json!({"a": "true", "b": "123", "c": "a: b", "d": "", "e": "multi\nline\n",
            "f": "yes", "g": "0755", "h": "~", "i": " lead", "j": "é", "k": "null", "l": "1e3", "m": "-"});
        assert_eq!(
            to_yaml(&v),
            "a: \"true\"\nb: \"123\"\nc: 'a: b'\nd: \"\"\ne: |\n  multi\n  line\nf: \"yes\"\ng: \"0755\"\nh: \"~\"\ni: ' lead'\nj: é\nk: \"null\"\nl: \"1e3\"\nm: '-'\n"
        );
    }

    #[test]
    fn nesting() {
        let v = json!({"l": [[1, 2], {"a": null}, []], "m": {}, "n": {"x": 1}});
        assert_eq!(
            to_yaml(&v),
            "l:\n- - 1\n  - 2\n- a: null\n- []\nm: {}\n\"n\":\n  x: 1\n"
        );
        assert_eq!(to_yaml(&json!(null)), "null\n");
        assert_eq!(to_yaml(&json!("s")), "s\n");
    }

    #[test]
    fn natural_key_order() {
        assert_eq!(key_order("a10", "a9"), Ordering::Greater);
        assert_eq!(key_order("a-b", "ab"), Ordering::Less);
    }
}
