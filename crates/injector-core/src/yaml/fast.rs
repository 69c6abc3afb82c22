//! A single-pass parser for the block-style YAML that templates and typical manifests are made
//! of, building the `serde_json::Value` directly. It is a fast path in front of `serde-saphyr`,
//! not a YAML parser.
//!
//! # The subset
//!
//! Block mappings and block sequences (compact `- key: v` maps, `- - x`, and sequences not
//! indented under their key), plain scalars, single-line single- and double-quoted scalars,
//! literal block scalars (`|`, `|-`, `|+`, indentation auto-detected), flow collections, nested
//! or not (possibly over several lines, as Istio's template writes its annotations), comments
//! and blank lines. Keys are quoted strings or plain scalars that cannot be anything but a string
//! (see `scalar::plain_key`: no digit, sign or indicator first, no boolean or null word).
//!
//! # The bail-out rule
//!
//! [`parse`] returns `None` as soon as it meets anything outside the subset or anything it is not
//! sure about: anchors, aliases, tags, folded scalars, multi-line plain or quoted scalars,
//! complex keys, merge keys, directives and document markers, tabs used as indentation, duplicate
//! keys (`serde-saphyr` rejects them), empty block scalars, explicit indentation indicators,
//! control characters, more than [`MAX_DEPTH`] nested collections, and every kind of malformed
//! input. The caller then parses the document with `serde-saphyr`, which gives the value or the
//! error with its line number. Bailing is always correct; accepting must be exact.
//!
//! # Why the values are exact
//!
//! The structure of the subset is unambiguous (each construct above has one reading, which the
//! differential tests pin against `serde-saphyr`), mapping order is document order (as with
//! `serde-saphyr` into `serde_json`'s ordered maps), and quoted and block scalars are always
//! strings. Plain scalars are resolved with `serde-saphyr`'s own rules for untyped targets (see
//! `scalar.rs`): only text that cannot be anything but a string, the words `null`/`~`/`true`/
//! `false`, and plain decimal integers are resolved here (as `u64`, or `i64` when negative, the
//! number kinds `serde-saphyr` visits); any other scalar that might be a number or a boolean is
//! parsed alone by `serde-saphyr` with the same options.
//!
//! The parser is linear in the document's length: every line is looked at a bounded number of
//! times and every byte of a scalar once. It never panics (no indexing, no unwrapping) and it
//! recurses only per nesting level, bounded by [`MAX_DEPTH`].

mod flow;
mod input;
mod literal;
mod scalar;

use std::cell::Cell;

use serde_json::{Map, Value};

use self::input::{Cursor, Line, is_plain_text};

/// Nesting depth (block and flow collections) beyond which the fast path leaves the document to
/// `serde-saphyr`.
pub const MAX_DEPTH: usize = 128;

/// Longest key accepted (YAML limits implicit keys to 1024 characters).
const MAX_KEY_LEN: usize = 1000;

/// Parses one document of the block subset, or `None` when the document is not (certainly) in it.
///
/// The document's text is as [`super::split_documents`] cuts it: no `---` separator lines. A
/// document of nothing but blanks and comments also gives `None`.
pub fn parse(text: &str) -> Option<Value> {
    if !is_plain_text(text) {
        return None;
    }
    let lines = scratch_capacity(text);
    let mut parser = Parser {
        cursor: Cursor::new(text),
        pending: None,
        depth: 0,
        key_end: Cell::new(None),
        // A line holds at most one entry or item: sized for the lines, the stacks rarely grow.
        entries: Vec::with_capacity(lines),
        items: Vec::with_capacity(lines),
    };
    let root = parser.peek()?;
    let value = parser.block_node(root)?;
    match parser.peek() {
        None if parser.cursor.peek_content().ok()?.is_none() => Some(value),
        _ => None,
    }
}

/// The initial capacity of the parser's scratch stacks: a guess at the number of lines from the
/// length (counting them costs a search per line), at most 256.
fn scratch_capacity(text: &str) -> usize {
    (text.len() / 32).min(256)
}

/// Whether `text[pos..end]` is the harmless tail of a line: blanks, then optionally a comment
/// separated from what precedes it by a blank.
fn is_line_tail(text: &str, pos: usize, end: usize) -> bool {
    let Some(tail) = text.get(pos..end) else {
        return false;
    };
    let rest = tail.trim_start_matches(' ');
    rest.is_empty() || (rest.starts_with('#') && rest.len() < tail.len())
}

/// Whether a line's content is a block sequence entry (`-` then a blank or the end of the line).
fn is_entry(content: &[u8]) -> bool {
    matches!(content, [b'-'] | [b'-', b' ', ..])
}

/// The block-structure parser.
struct Parser<'a> {
    cursor: Cursor<'a>,
    /// The rest of a line after a `- ` indicator, when it starts a compact collection.
    pending: Option<Line>,
    depth: usize,
    /// The last answer of [`Parser::key_end`] that found a key: (start of the line, offset of the
    /// `:`). A line is asked about up to three times (sequence entry, block node, mapping).
    key_end: Cell<Option<(usize, usize)>>,
    /// Entries of the mappings being read, innermost last: each mapping pushes its entries above
    /// the ones of its parents and moves them into a map of the exact size when it ends.
    entries: Vec<(String, Value)>,
    /// Items of the sequences being read, kept the same way as `entries`.
    items: Vec<Value>,
}

impl<'a> Parser<'a> {
    fn text(&self) -> &'a str {
        self.cursor.text
    }

    fn bytes(&self, line: &Line) -> &'a [u8] {
        self.cursor
            .text
            .as_bytes()
            .get(line.start..line.end)
            .unwrap_or_default()
    }

    /// The next line with content, or `None` at the end of the document (or for a line the fast
    /// path does not handle, which the caller's end-of-document check then refuses).
    fn peek(&mut self) -> Option<Line> {
        if let Some(line) = self.pending {
            return Some(line);
        }
        self.cursor.peek_content().ok().flatten()
    }

    fn consume(&mut self, line: &Line) {
        self.pending = None;
        self.cursor.pos = line.next;
    }

    /// Whether a line (or what follows it) breaks the subset: checked where only the end of a
    /// collection may follow.
    fn next_is_unreadable(&mut self) -> bool {
        self.pending.is_none() && self.cursor.peek_content().is_err()
    }

    /// A block mapping or sequence starting at `line`.
    fn block_node(&mut self, line: Line) -> Option<Value> {
        if is_entry(self.bytes(&line)) {
            self.sequence(line.indent)
        } else if self.key_end(&line).is_some() {
            self.mapping(line.indent)
        } else {
            None
        }
    }

    /// A block sequence whose entries are at column `indent`.
    fn sequence(&mut self, indent: usize) -> Option<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let base = self.items.len();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return None;
            }
            if !is_entry(self.bytes(&line)) {
                break;
            }
            self.consume(&line);
            // The entry's content: after `-` and its blanks.
            let after_dash = line.start + 1;
            let blanks = self
                .text()
                .as_bytes()
                .get(after_dash..line.end)
                .map_or(0, |rest| rest.iter().take_while(|&&b| b == b' ').count());
            let content = Line {
                indent: line.indent + 1 + blanks,
                start: after_dash + blanks,
                end: line.end,
                next: line.next,
            };
            let item = if content.start == content.end || self.bytes(&content).first() == Some(&b'#') {
                if !is_line_tail(self.text(), after_dash, line.end) {
                    return None;
                }
                self.value_below(indent, false)?
            } else if is_entry(self.bytes(&content)) || self.key_end(&content).is_some() {
                self.pending = Some(content);
                self.block_node(content)?
            } else {
                self.inline_value(content.start, content.end, indent)?
            };
            self.items.push(item);
        }
        if self.next_is_unreadable() {
            return None;
        }
        self.depth -= 1;
        Some(Value::Array(self.items.drain(base..).collect()))
    }

    /// A block mapping whose keys are at column `indent`.
    fn mapping(&mut self, indent: usize) -> Option<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let base = self.entries.len();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let (key, colon) = self.key(&line)?;
            self.consume(&line);
            let value_start = colon + 1;
            let blanks = self
                .text()
                .as_bytes()
                .get(value_start..line.end)
                .map_or(0, |rest| rest.iter().take_while(|&&b| b == b' ').count());
            let start = value_start + blanks;
            let value = if start == line.end || self.text().as_bytes().get(start) == Some(&b'#') {
                if !is_line_tail(self.text(), value_start, line.end) {
                    return None;
                }
                self.value_below(indent, true)?
            } else {
                self.inline_value(start, line.end, indent)?
            };
            self.entries.push((key, value));
        }
        if self.next_is_unreadable() {
            return None;
        }
        self.depth -= 1;
        let mut map = Map::with_capacity(self.entries.len().saturating_sub(base));
        for (key, value) in self.entries.drain(base..) {
            // A duplicate key: refused, as `serde-saphyr` refuses it.
            if map.insert(key, value).is_some() {
                return None;
            }
        }
        Some(Value::Object(map))
    }

    /// The value of an entry with nothing after its indicator: a collection on the next lines
    /// (indented further, or a sequence at the key's own column), else null.
    fn value_below(&mut self, indent: usize, in_mapping: bool) -> Option<Value> {
        let Some(next) = self.peek() else {
            return if self.next_is_unreadable() {
                None
            } else {
                Some(Value::Null)
            };
        };
        if next.indent > indent || (in_mapping && next.indent == indent && is_entry(self.bytes(&next))) {
            self.block_node(next)
        } else {
            Some(Value::Null)
        }
    }

    /// A value that starts on the line of its key or `- ` at byte `start` (up to `end`), in a
    /// collection indented by `indent` columns.
    fn inline_value(&mut self, start: usize, end: usize, indent: usize) -> Option<Value> {
        let text = self.text();
        let value = match text.as_bytes().get(start)? {
            b'|' => return literal::literal(&mut self.cursor, start + 1, end, indent).map(Value::String),
            b'[' | b'{' => {
                let depth_left = MAX_DEPTH.checked_sub(self.depth)?;
                flow::flow(&mut self.cursor, start, indent, depth_left)?
            }
            b'"' => {
                let (value, after) = scalar::double_quoted(text, start, end)?;
                if !is_line_tail(text, after, end) {
                    return None;
                }
                Value::String(value)
            }
            b'\'' => {
                let (value, after) = scalar::single_quoted(text, start, end)?;
                if !is_line_tail(text, after, end) {
                    return None;
                }
                Value::String(value)
            }
            _ => scalar::resolve_plain(block_plain(text, start, end)?)?,
        };
        // A scalar's value ends with its line: a further-indented line would continue it.
        match self.peek() {
            Some(next) if next.indent > indent => None,
            None if self.next_is_unreadable() => None,
            _ => Some(value),
        }
    }

    /// If the line starts with a mapping key followed by `:` and a blank (or the end of the line),
    /// the offset of that `:`.
    fn key_end(&self, line: &Line) -> Option<usize> {
        if let Some((start, colon)) = self.key_end.get()
            && start == line.start
        {
            return Some(colon);
        }
        let colon = self.find_key_end(line)?;
        self.key_end.set(Some((line.start, colon)));
        Some(colon)
    }

    /// [`Parser::key_end`], uncached.
    fn find_key_end(&self, line: &Line) -> Option<usize> {
        let bytes = self.bytes(line);
        let colon_at = |i: usize| matches!(bytes.get(i + 1), None | Some(b' '));
        match bytes.first()? {
            b'"' | b'\'' => {
                let (_, after) = self.quoted(line)?;
                let after = after.checked_sub(line.start)?;
                let colon = after + bytes.get(after..)?.iter().take_while(|&&b| b == b' ').count();
                (bytes.get(colon) == Some(&b':') && colon_at(colon)).then_some(line.start + colon)
            }
            // A flow collection; as a key it would be a complex key, which the value path refuses.
            b'[' | b'{' => None,
            _ => {
                for i in memchr::memchr2_iter(b':', b'#', bytes) {
                    match bytes.get(i) {
                        Some(b':') if colon_at(i) => return Some(line.start + i),
                        Some(b'#') if i > 0 && bytes.get(i - 1) == Some(&b' ') => return None,
                        _ => {}
                    }
                }
                None
            }
        }
    }

    /// The quoted scalar that starts the line, and the offset after its closing quote.
    fn quoted(&self, line: &Line) -> Option<(String, usize)> {
        let text = self.text();
        match text.as_bytes().get(line.start)? {
            b'"' => scalar::double_quoted(text, line.start, line.end),
            _ => scalar::single_quoted(text, line.start, line.end),
        }
    }

    /// The key of a mapping entry line and the offset of its `:`.
    fn key(&self, line: &Line) -> Option<(String, usize)> {
        let colon = self.key_end(line)?;
        let text = self.text();
        let key = match text.as_bytes().get(line.start)? {
            b'"' | b'\'' => self.quoted(line)?.0,
            _ => {
                return Some((
                    scalar::plain_key(text.get(line.start..colon)?.trim_end_matches(' '))?,
                    colon,
                ));
            }
        };
        (key != "<<" && key.len() <= MAX_KEY_LEN).then_some((key, colon))
    }
}

/// A plain scalar in block context from `start` to the end of its line (or a comment), trimmed.
/// `None` for what is not a plain scalar of the subset: an indicator first, a tab, or `: ` inside
/// (a mapping where none may start).
fn block_plain(text: &str, start: usize, end: usize) -> Option<&str> {
    let bytes = text.as_bytes().get(start..end)?;
    match bytes {
        [
            b']' | b'}' | b',' | b'&' | b'*' | b'!' | b'>' | b'%' | b'@' | b'`',
            ..,
        ] => return None,
        [b'-' | b'?' | b':'] | [b'-' | b'?' | b':', b' ', ..] => return None,
        _ => {}
    }
    let mut stop = bytes.len();
    for i in memchr::memchr3_iter(b'\t', b'#', b':', bytes) {
        match bytes.get(i) {
            Some(b'\t') => return None,
            Some(b'#') if i > 0 && bytes.get(i - 1) == Some(&b' ') => {
                stop = i;
                break;
            }
            Some(b':') if matches!(bytes.get(i + 1), None | Some(b' ')) => return None,
            _ => {}
        }
    }
    let value = text.get(start..start + stop)?.trim_end_matches(' ');
    (!value.is_empty()).then_some(value)
}

#[cfg(test)]
mod tests;
