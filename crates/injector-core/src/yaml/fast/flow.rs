//! Flow collections: `[a, "b"]`, `{k: v, "k2": 'v2'}` and collections nested in them
//! (`{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}`, as sidecar templates
//! write env entries), possibly over several lines (Istio's template writes `annotations: {` ...
//! `}` that way), with an optional trailing comma.
//!
//! Each entry's key, `:` and the start of its value stay on one line; collections as keys, empty
//! entries, implicit single-pair maps in sequences (`[a: b]`), multi-line scalars, continuation
//! lines indented less than the enclosing block collection and nesting deeper than the depth left
//! make the fast path bail.

use serde_json::{Map, Value};

use super::{
    input::Cursor,
    scalar::{double_quoted, plain_key, resolve_plain, single_quoted},
};

/// Reads the flow collection whose opening bracket is at byte `open`, inside a block collection
/// indented by `parent` columns, and the rest of the line of its closing bracket (blanks and a
/// comment). Moves the cursor to the line after it. `depth_left` counts the collections that may
/// still nest, this one included.
pub(super) fn flow(cursor: &mut Cursor<'_>, open: usize, parent: usize, depth_left: usize) -> Option<Value> {
    let mut scan = Scan {
        text: cursor.text,
        pos: open,
        parent,
        depth_left,
    };
    let value = scan.collection()?;
    let (_, end, next) = cursor.raw_line(scan.line_start())?;
    if !super::is_line_tail(scan.text, scan.pos, end) {
        return None;
    }
    cursor.pos = next;
    Some(value)
}

/// A position in the document while reading a flow collection.
struct Scan<'a> {
    text: &'a str,
    pos: usize,
    parent: usize,
    /// How many more collections may open inside the current one.
    depth_left: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn byte_at(&self, pos: usize) -> Option<u8> {
        self.text.as_bytes().get(pos).copied()
    }

    /// Offset of the start of the current line.
    fn line_start(&self) -> usize {
        self.text
            .as_bytes()
            .get(..self.pos)
            .and_then(|before| before.iter().rposition(|&b| b == b'\n'))
            .map_or(0, |i| i + 1)
    }

    /// Offset of the end of the current line.
    fn line_end(&self) -> usize {
        self.text
            .as_bytes()
            .get(self.pos..)
            .and_then(|after| memchr::memchr(b'\n', after))
            .map_or(self.text.len(), |i| self.pos + i)
    }

    /// Skips blanks, comments and line breaks. A continuation line must be indented at least as
    /// far as the enclosing block collection and must not hold a document marker.
    fn skip_space(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(b' ') => self.pos += 1,
                Some(b'#') => {
                    let after_blank =
                        self.pos == 0 || matches!(self.byte_at(self.pos - 1), Some(b' ' | b'\n'));
                    if !after_blank {
                        return None;
                    }
                    self.pos = self.line_end();
                }
                Some(b'\n') => {
                    self.pos += 1;
                    let start = self.pos;
                    while self.peek() == Some(b' ') {
                        self.pos += 1;
                    }
                    let indent = self.pos - start;
                    match self.peek() {
                        None | Some(b'\n' | b'#') => {}
                        Some(b'\t') => return None,
                        Some(_) => {
                            let rest = self.text.get(self.pos..).unwrap_or("");
                            if indent < self.parent
                                || (indent == 0 && (rest.starts_with("---") || rest.starts_with("...")))
                            {
                                return None;
                            }
                        }
                    }
                }
                _ => return Some(()),
            }
        }
    }

    /// Skips blanks on the current line.
    fn skip_blanks(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    /// After an entry: a comma (then possibly the closing bracket) or the closing bracket.
    /// Returns whether the collection is finished.
    fn separator(&mut self, close: u8) -> Option<bool> {
        self.skip_space()?;
        match self.peek()? {
            b',' => {
                self.pos += 1;
                self.skip_space()?;
                if self.peek() == Some(close) {
                    self.pos += 1;
                    return Some(true);
                }
                Some(false)
            }
            b if b == close => {
                self.pos += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// The collection whose opening bracket is at the cursor.
    fn collection(&mut self) -> Option<Value> {
        self.depth_left = self.depth_left.checked_sub(1)?;
        let open = self.peek()?;
        self.pos += 1;
        let value = match open {
            b'[' => Value::Array(self.sequence()?),
            b'{' => Value::Object(self.mapping()?),
            _ => return None,
        };
        self.depth_left += 1;
        Some(value)
    }

    /// An entry's value: a nested collection or a scalar.
    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'[' | b'{' => self.collection(),
            _ => self.scalar(),
        }
    }

    fn sequence(&mut self) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        self.skip_space()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Some(items);
        }
        loop {
            items.push(self.value()?);
            self.skip_blanks();
            if self.peek() == Some(b':') {
                return None;
            }
            if self.separator(b']')? {
                return Some(items);
            }
        }
    }

    fn mapping(&mut self) -> Option<Map<String, Value>> {
        let mut map = Map::new();
        self.skip_space()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Some(map);
        }
        loop {
            let key = self.key()?;
            self.skip_blanks();
            if self.peek() != Some(b':') || self.byte_at(self.pos + 1) != Some(b' ') {
                return None;
            }
            self.pos += 1;
            self.skip_blanks();
            let value = self.value()?;
            if map.insert(key, value).is_some() {
                return None;
            }
            if self.separator(b'}')? {
                return Some(map);
            }
        }
    }

    /// A mapping key: a quoted scalar or a plain identifier-like scalar.
    fn key(&mut self) -> Option<String> {
        match self.peek()? {
            b'"' | b'\'' => match self.scalar()? {
                Value::String(key) if key != "<<" && key.len() <= super::MAX_KEY_LEN => Some(key),
                _ => None,
            },
            _ => {
                let (start, end) = self.plain_span()?;
                plain_key(self.text.get(start..end)?)
            }
        }
    }

    /// A scalar on the current line: quoted, or plain (resolved).
    fn scalar(&mut self) -> Option<Value> {
        match self.peek()? {
            b'"' => {
                let (value, after) = double_quoted(self.text, self.pos, self.line_end())?;
                self.pos = after;
                Some(Value::String(value))
            }
            b'\'' => {
                let (value, after) = single_quoted(self.text, self.pos, self.line_end())?;
                self.pos = after;
                Some(Value::String(value))
            }
            _ => {
                let (start, end) = self.plain_span()?;
                resolve_plain(self.text.get(start..end)?)
            }
        }
    }

    /// The extent of a plain scalar in flow context (trailing blanks excluded); moves past it.
    fn plain_span(&mut self) -> Option<(usize, usize)> {
        let start = self.pos;
        match self.peek()? {
            b'[' | b']' | b'{' | b'}' | b',' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@'
            | b'`' | b'\n' | b' ' => {
                return None;
            }
            b'-' | b'?' | b':'
                if matches!(
                    self.byte_at(start + 1),
                    None | Some(b' ' | b'\n' | b',' | b'[' | b']' | b'{' | b'}')
                ) =>
            {
                return None;
            }
            _ => {}
        }
        let mut end = start;
        loop {
            match self.peek() {
                None | Some(b'\n' | b',' | b']' | b'}') => break,
                Some(b'[' | b'{' | b'\t') => return None,
                Some(b' ') if self.byte_at(self.pos + 1) == Some(b'#') => break,
                Some(b':')
                    if matches!(
                        self.byte_at(self.pos + 1),
                        None | Some(b' ' | b'\n' | b',' | b']' | b'}')
                    ) =>
                {
                    break;
                }
                Some(b' ') => self.pos += 1,
                Some(_) => {
                    self.pos += 1;
                    end = self.pos;
                }
            }
        }
        // `end` may sit inside a multi-byte character only if a byte of it matched above, which
        // cannot happen: all bytes tested are ASCII.
        self.pos = end;
        Some((start, end))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(text: &str) -> Option<(Value, usize)> {
        let mut cursor = Cursor::new(text);
        let open = text.find(['[', '{'])?;
        let value = flow(&mut cursor, open, 0, 8)?;
        Some((value, cursor.pos))
    }

    #[test]
    fn reads_flow_collections_of_scalars() {
        assert_eq!(read("[]\nx"), Some((json!([]), 3)));
        assert_eq!(read("{ }  # c\n"), Some((json!({}), 9)));
        assert_eq!(
            read("[a, 'b', \"c\", 1, true]"),
            Some((json!(["a", "b", "c", 1, true]), 22))
        );
        assert_eq!(
            read("{\n  a: \"1\",\n  b.c/d: x y , # c\n}\nnext"),
            Some((json!({"a": "1", "b.c/d": "x y"}), 33))
        );
        assert_eq!(read("[a,\n b,\n]\n").map(|v| v.0), Some(json!(["a", "b"])));
    }

    #[test]
    fn reads_nested_flow_collections() {
        assert_eq!(
            read("[a, [b, []], {c: {d: [e, 1]}, f: {}}]").map(|v| v.0),
            Some(json!(["a", ["b", []], {"c": {"d": ["e", 1]}, "f": {}}]))
        );
        assert_eq!(
            read("{name: X, valueFrom: {fieldRef: {\n  fieldPath: metadata.name}}}\n").map(|v| v.0),
            Some(json!({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}))
        );
        // Eight levels fit in a budget of eight; a ninth bails.
        assert!(read("[[[[[[[[]]]]]]]]").is_some());
        assert_eq!(read("[[[[[[[[[]]]]]]]]]"), None);
    }

    #[test]
    fn bails_on_the_rest() {
        for text in [
            "[a, [b] c]",
            "[[a]: b]",
            "[{a: b} : c]",
            "{[a]: b}",
            "{{a: b}: c}",
            "{a: {b: c} d}",
            "{a: {b: c}, a: 1}",
            "{a: [b}",
            "{a:\n [b]}",
            "[a: b]",
            "[a, , b]",
            "{a}",
            "{a: }",
            "{a:b}",
            "[a\n b]",
            "{a: 1, a: 2}",
            "[a] b",
            "[a]#c",
            "[a",
            "{\"a\nb\": 1}",
            "{a:\n 1}",
            "[\ta]",
            "[&x a]",
            "[*x]",
            "{yes: 1}",
            "{1: a}",
            "[a,#c\n]",
            "[a,\n---\n]",
            "[- a]",
        ] {
            assert_eq!(read(text), None, "{text:?}");
        }
    }
}
