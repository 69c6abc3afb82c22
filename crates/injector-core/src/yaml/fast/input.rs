//! The document as lines: a pre-scan for characters the fast path does not handle, and a cursor
//! that hands out content lines (skipping blank and comment-only lines).

/// Whether the text is free of everything whose handling differs between YAML versions or
/// parsers, or that YAML forbids: carriage returns, control characters (other than tab and line
/// feed), DEL, C1 controls (including NEL, a YAML 1.1 line break), the Unicode line and paragraph
/// separators (line breaks in YAML 1.1), byte order marks and the non-characters U+FFFE/U+FFFF.
pub(super) fn is_plain_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    // The common case, printable ASCII. Each chunk is tested without an early exit, a loop the
    // compiler vectorizes (a byte-by-byte `all` stops at the first miss and is not vectorized).
    let plain_ascii = |chunk: &[u8]| {
        chunk
            .iter()
            .fold(true, |plain, &b| plain & matches!(b, b' '..=b'~' | b'\n' | b'\t'))
    };
    let mut chunks = bytes.chunks_exact(64);
    if chunks.by_ref().all(plain_ascii) && plain_ascii(chunks.remainder()) {
        return true;
    }
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let bad = match b {
            b'\n' | b'\t' => false,
            0x00..=0x1F | 0x7F => true,
            0xC2 => matches!(bytes.get(i + 1), Some(0x80..=0x9F)),
            0xE2 => bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)),
            0xEF => matches!(
                (bytes.get(i + 1), bytes.get(i + 2)),
                (Some(0xBB), Some(0xBF)) | (Some(0xBF), Some(0xBE | 0xBF))
            ),
            _ => false,
        };
        if bad {
            return false;
        }
        i += 1;
    }
    true
}

/// One line of the document, or the part of it that follows a compact `- ` indicator.
#[derive(Debug, Clone, Copy)]
pub(super) struct Line {
    /// Column of the first content character (spaces and `- ` indicators before it).
    pub indent: usize,
    /// Byte offset of the first content character.
    pub start: usize,
    /// Byte offset of the end of the line (before its line feed, if any).
    pub end: usize,
    /// Byte offset of the next line.
    pub next: usize,
}

/// The unread lines of a document.
pub(super) struct Cursor<'a> {
    /// The whole document.
    pub text: &'a str,
    /// Byte offset of the next unread line.
    pub pos: usize,
    /// The last answer of [`Cursor::peek_content`]: the offset it was asked at, and the line.
    peeked: Option<(usize, Line)>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            peeked: None,
        }
    }

    /// The line at `pos` as raw pieces: (start of line, end of line, start of next line), or
    /// `None` at the end of the document.
    pub fn raw_line(&self, pos: usize) -> Option<(usize, usize, usize)> {
        if pos >= self.text.len() {
            return None;
        }
        let rest = self.text.as_bytes().get(pos..)?;
        Some(match memchr::memchr(b'\n', rest) {
            Some(n) => (pos, pos + n, pos + n + 1),
            None => (pos, self.text.len(), self.text.len()),
        })
    }

    /// The next line with content, skipping (and consuming) blank and comment-only lines.
    /// Returns `Err(())` for a line the fast path does not handle: a tab in the indentation,
    /// or a document marker (`---`, `...`) at column 0.
    pub fn peek_content(&mut self) -> Result<Option<Line>, ()> {
        if let Some((at, line)) = self.peeked
            && at == self.pos
        {
            return Ok(Some(line));
        }
        while let Some((begin, end, next)) = self.raw_line(self.pos) {
            let bytes = self.text.as_bytes().get(begin..end).ok_or(())?;
            let indent = bytes.iter().take_while(|&&b| b == b' ').count();
            match bytes.get(indent) {
                None => {}
                Some(b'#') => {}
                Some(b'\t') => return Err(()),
                Some(_) => {
                    if indent == 0 && (bytes.starts_with(b"---") || bytes.starts_with(b"...")) {
                        return Err(());
                    }
                    let line = Line {
                        indent,
                        start: begin + indent,
                        end,
                        next,
                    };
                    self.peeked = Some((self.pos, line));
                    return Ok(Some(line));
                }
            }
            self.pos = next;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_characters_outside_the_subset() {
        assert!(is_plain_text("a: b\n\tc: \"é ü 中\"\n"));
        for text in [
            "a\r\n",
            "a\u{0}",
            "a\u{7f}",
            "\u{85}",
            "\u{2028}",
            "\u{2029}",
            "\u{feff}a",
            "\u{fffe}",
            "\u{ffff}",
            "\u{9f}",
        ] {
            assert!(!is_plain_text(text), "{text:?}");
        }
        assert!(is_plain_text("\u{a0}\u{2027}\u{fffd}\u{10000}"));
    }

    #[test]
    fn skips_blank_and_comment_lines() {
        let mut cursor = Cursor::new("\n   \n  # c\n  a: 1\n");
        let line = cursor.peek_content().expect("ok").expect("a line");
        assert_eq!((line.indent, &cursor.text[line.start..line.end]), (2, "a: 1"));
        cursor.pos = line.next;
        assert!(cursor.peek_content().expect("ok").is_none());
    }

    #[test]
    fn refuses_tab_indentation_and_markers() {
        for text in ["\ta: 1", "  \ta: 1", "...\n", "---\n"] {
            let mut cursor = Cursor::new(text);
            assert!(cursor.peek_content().is_err(), "{text:?}");
        }
    }
}
