//! Literal block scalars (`|`, `|-`, `|+`) with auto-detected indentation.

use super::input::Cursor;

/// How the final line break and trailing empty lines are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chomping {
    /// `|`: one final line break.
    Clip,
    /// `|-`: none.
    Strip,
    /// `|+`: all of them.
    Keep,
}

/// Reads the header after `|` (the rest of the header line, from `start` to `end`): a chomping
/// indicator and an optional comment. Explicit indentation indicators are not handled.
fn header(text: &str, start: usize, end: usize) -> Option<Chomping> {
    let rest = text.get(start..end)?;
    let (chomping, rest) = match rest.as_bytes().first() {
        Some(b'-') => (Chomping::Strip, rest.get(1..)?),
        Some(b'+') => (Chomping::Keep, rest.get(1..)?),
        _ => (Chomping::Clip, rest),
    };
    let trimmed = rest.trim_start_matches(' ');
    let separated = trimmed.len() < rest.len();
    if trimmed.is_empty() || (separated && trimmed.starts_with('#')) {
        Some(chomping)
    } else {
        None
    }
}

/// Reads a literal block scalar whose header (after the `|`) spans `start..end` of the line
/// before the cursor, for a node inside a block collection indented by `parent` columns.
/// Consumes the scalar's lines.
///
/// Bails on an explicit indentation indicator, an empty scalar (its first content line not
/// indented past `parent`), a leading blank line longer than the content's indentation (an error),
/// and a scalar that runs to the end of a document without a final line feed.
pub(super) fn literal(cursor: &mut Cursor<'_>, start: usize, end: usize, parent: usize) -> Option<String> {
    let chomping = header(cursor.text, start, end)?;
    let text = cursor.text;
    let bytes = text.as_bytes();
    let spaces = |from: usize, to: usize| {
        bytes
            .get(from..to)
            .map_or(0, |line| line.iter().take_while(|&&b| b == b' ').count())
    };

    // Leading blank lines, then the first content line fixes the indentation.
    let mut pos = cursor.pos;
    let mut leading_blank = 0;
    let mut longest_blank = 0;
    let indent = loop {
        let (begin, line_end, next) = cursor.raw_line(pos)?;
        let n = spaces(begin, line_end);
        if begin + n == line_end {
            leading_blank += 1;
            longest_blank = longest_blank.max(n);
            pos = next;
            continue;
        }
        if bytes.get(begin + n) == Some(&b'\t') || n <= parent || longest_blank > n {
            return None;
        }
        break n;
    };

    let mut value = "\n".repeat(leading_blank);
    let mut pending_breaks = 0;
    while let Some((begin, line_end, next)) = cursor.raw_line(pos) {
        let n = spaces(begin, line_end);
        let blank = begin + n == line_end;
        if blank && n <= indent {
            pending_breaks += 1;
        } else if n >= indent {
            if next == line_end {
                // The document ends without a line feed inside the scalar.
                return None;
            }
            for _ in 0..pending_breaks {
                value.push('\n');
            }
            pending_breaks = 0;
            value.push_str(text.get(begin + indent..line_end)?);
            value.push('\n');
        } else {
            break;
        }
        pos = next;
    }
    if pos >= text.len() && !text.ends_with('\n') {
        return None;
    }
    cursor.pos = pos;
    match chomping {
        Chomping::Clip => {}
        Chomping::Strip => {
            value.pop();
        }
        Chomping::Keep => {
            for _ in 0..pending_breaks {
                value.push('\n');
            }
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, parent: usize) -> Option<(String, usize)> {
        let header_end = text.find('\n')?;
        let mut cursor = Cursor::new(text);
        cursor.pos = header_end + 1;
        let value = literal(&mut cursor, 0, header_end, parent)?;
        Some((value, cursor.pos))
    }

    #[test]
    fn chomping() {
        let body = "\n  a\n\n   b\n\n\nc: 1\n";
        assert_eq!(read(body, 0), Some(("a\n\n b\n".to_owned(), 13)));
        assert_eq!(
            read(&format!("-{body}"), 0).map(|v| v.0),
            Some("a\n\n b".to_owned())
        );
        assert_eq!(
            read(&format!("+{body}"), 0).map(|v| v.0),
            Some("a\n\n b\n\n\n".to_owned())
        );
        assert_eq!(
            read(&format!("- # comment{body}"), 0).map(|v| v.0),
            Some("a\n\n b".to_owned())
        );
    }

    #[test]
    fn keeps_leading_blank_lines_and_comment_like_content() {
        assert_eq!(
            read("\n\n  # x\n  y\n", 0).map(|v| v.0),
            Some("\n# x\ny\n".to_owned())
        );
    }

    #[test]
    fn bails_on_what_it_does_not_handle() {
        for text in [
            "2\n  a\n",
            "-2\n  a\n",
            "x\n  a\n",
            "#c\n  a\n",
            "\n  a",
            "\n    \n  a\n",
            "\na: 1\n",
            "\n\ta\n",
        ] {
            assert_eq!(read(text, 0), None, "{text:?}");
        }
        // Content must be indented past the parent collection.
        assert_eq!(read("\n  a\n", 2), None);
    }
}
