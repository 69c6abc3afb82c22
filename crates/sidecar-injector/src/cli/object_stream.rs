//! Reading a snapshot or manifests one object at a time, in memory bounded by the largest
//! object rather than by the file: what [`super::input::objects`] gives, in the same order with
//! the same places, without holding the stream or its values.
//!
//! A `kubectl get -A -o yaml` snapshot is one `List` document whose `items` are the cluster's
//! objects. kubectl writes it in block style: `items:` at the start of a line, each item a line
//! `- ` at one indentation followed by lines indented deeper. Such an item is cut out by its
//! lines and parsed alone; where the whole document would be parsed by the same fast path, the
//! value is the same (the fast path refuses multi-line scalars, the only construct that could
//! cross an item's first line, so nothing can). `kind: List` usually comes after the items: the
//! rest of the document is read ahead first (lines only, not parsed), then the items.
//!
//! Every other document — a manifest, a list in flow style or JSON, a document that is not a
//! `List` but has `items` — is read whole and parsed as [`super::input::objects`] parses it.
//!
//! Objects whose kind the caller does not want are skipped without being parsed when their
//! `kind:` line says what they are (one line `kind: X` at the object's own indentation);
//! otherwise they are parsed and their kind looked at. The reader needs to seek (the lines are
//! read twice); the caller spools a stream that cannot ([`Spooled`]).

use std::{
    fmt,
    fs::File,
    io::{self, BufRead, BufReader, Read, Seek, SeekFrom},
    path::Path,
};

use anyhow::{Context, Result, bail};
use injector_core::yaml::{RawDocument, YamlError};
use serde_json::Value;

/// Where an object is in its stream, named as [`super::input::objects`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The document, from 1, counting blank ones.
    pub document: usize,
    /// The item of a `List` document, from 1.
    pub item: Option<usize>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.item {
            Some(item) => write!(f, "document {}, item {item}", self.document),
            None => write!(f, "document {}", self.document),
        }
    }
}

/// A file to read, by path, or standard input (`-`) and other streams that cannot seek, copied
/// once to an anonymous temporary file.
pub struct Spooled {
    /// The name for messages: the path as given, or `<stdin>`.
    pub name: String,
    file: File,
}

impl Spooled {
    /// Opens `path`; standard input, pipes and other special files are copied to a temporary
    /// file first (its disk space, not memory).
    pub fn open(path: &Path) -> Result<Self> {
        if path.as_os_str() == "-" {
            return Self::spool("<stdin>".to_owned(), io::stdin().lock());
        }
        let name = path.display().to_string();
        let file = File::open(path).with_context(|| format!("cannot read {name}"))?;
        let regular = file
            .metadata()
            .with_context(|| format!("cannot read {name}"))?
            .is_file();
        if regular {
            Ok(Self { name, file })
        } else {
            Self::spool(name, file)
        }
    }

    fn spool(name: String, mut input: impl Read) -> Result<Self> {
        let mut file =
            tempfile::tempfile().context("cannot create a temporary file to read a stream into")?;
        io::copy(&mut input, &mut file).with_context(|| format!("cannot read {name}"))?;
        Ok(Self { name, file })
    }

    /// Calls `each` with every object [`super::input::objects`] would give whose kind `wanted`
    /// accepts, in order; returns how many non-blank documents the stream has. Errors name the
    /// file and the document.
    pub fn for_each(
        &mut self,
        wanted: &dyn Fn(&str) -> bool,
        each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
    ) -> Result<usize> {
        self.file
            .seek(SeekFrom::Start(0))
            .with_context(|| format!("cannot read {}", self.name))?;
        let mut reader = Reader::new(BufReader::with_capacity(1 << 16, &mut self.file));
        reader.run(wanted, each).map_err(|error| error.named(&self.name))
    }
}

/// What went wrong reading a stream.
enum ReadError {
    Io(io::Error),
    Yaml(YamlError),
    /// The caller's own error (already named).
    Caller(anyhow::Error),
}

impl ReadError {
    fn named(self, name: &str) -> anyhow::Error {
        match self {
            ReadError::Io(error) if error.kind() == io::ErrorKind::InvalidData => {
                anyhow::anyhow!("{name}: not UTF-8 text ({error})")
            }
            ReadError::Io(error) => anyhow::anyhow!("cannot read {name}: {error}"),
            ReadError::Yaml(error) => anyhow::anyhow!("{name}: {error}"),
            ReadError::Caller(error) => error,
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(error: io::Error) -> Self {
        ReadError::Io(error)
    }
}

impl From<YamlError> for ReadError {
    fn from(error: YamlError) -> Self {
        ReadError::Yaml(error)
    }
}

/// One line read: its text (with its line feed) and where it starts.
struct Line {
    text: String,
    /// Byte offset of its start.
    offset: u64,
    /// Its number, from 1.
    number: usize,
}

/// Lines of a seekable stream, with offsets.
struct Reader<R> {
    input: R,
    offset: u64,
    /// The number of the next line.
    number: usize,
}

/// How a line ends a document.
enum Boundary {
    /// A separator line (`---`, maybe a comment): the next document follows.
    Separator,
    /// The end of the stream.
    End,
}

impl<R: BufRead + Seek> Reader<R> {
    fn new(input: R) -> Self {
        Self {
            input,
            offset: 0,
            number: 1,
        }
    }

    fn next_line(&mut self) -> Result<Option<Line>, ReadError> {
        let mut text = String::new();
        let read = self.input.read_line(&mut text)?;
        if read == 0 {
            return Ok(None);
        }
        let line = Line {
            text,
            offset: self.offset,
            number: self.number,
        };
        self.offset += read as u64;
        self.number += 1;
        Ok(Some(line))
    }

    fn seek(&mut self, offset: u64, number: usize) -> Result<(), ReadError> {
        self.input.seek(SeekFrom::Start(offset))?;
        self.offset = offset;
        self.number = number;
        Ok(())
    }

    /// The line if it is not a document separator; `Err` for a separator line with text after
    /// `---` (as `split_documents` refuses it).
    fn separator(line: &Line, document: usize) -> Result<bool, ReadError> {
        let Some(rest) = line.text.strip_prefix("---") else {
            return Ok(false);
        };
        let rest = rest.trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(ReadError::Yaml(YamlError {
                index: document,
                line: line.number,
                message: format!("invalid YAML document separator: text {rest:?} after \"---\""),
            }));
        }
        Ok(true)
    }

    fn run(
        &mut self,
        wanted: &dyn Fn(&str) -> bool,
        each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
    ) -> Result<usize, ReadError> {
        let mut documents = 0;
        let mut document = 0;
        loop {
            document += 1;
            let start = (self.offset, self.number);
            let mut head = String::new();
            let boundary = loop {
                let Some(line) = self.next_line()? else {
                    break Boundary::End;
                };
                if Self::separator(&line, document)? {
                    break Boundary::Separator;
                }
                if is_items_key(&line.text) {
                    match self.list_items(document, &head, &line, wanted, each)? {
                        Some(boundary) => {
                            documents += 1;
                            head.clear();
                            break boundary;
                        }
                        None => {
                            // Not a List to read item by item: the document is read whole.
                            self.seek(start.0, start.1)?;
                            head.clear();
                            break self.whole(document, &mut head)?;
                        }
                    }
                }
                head.push_str(&line.text);
            };
            if !head.is_empty() {
                documents += self.document(document, start.1, &head, wanted, each)?;
            }
            if let Boundary::End = boundary {
                return Ok(documents);
            }
        }
    }

    /// Reads the rest of a document into `text`.
    fn whole(&mut self, document: usize, text: &mut String) -> Result<Boundary, ReadError> {
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(Boundary::End);
            };
            if Self::separator(&line, document)? {
                return Ok(Boundary::Separator);
            }
            text.push_str(&line.text);
        }
    }

    /// A document read whole: parsed, a `List` flattened; returns 1 when it is not blank.
    fn document(
        &mut self,
        document: usize,
        start_line: usize,
        text: &str,
        wanted: &dyn Fn(&str) -> bool,
        each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
    ) -> Result<usize, ReadError> {
        let raw = RawDocument {
            index: document,
            start_line,
            text,
        };
        if raw.is_blank() {
            return Ok(0);
        }
        if let Some(kind) = sniff_kind(text, 0)
            && kind != "List"
        {
            if wanted(kind) {
                let value = raw.parse()?;
                give(Place { document, item: None }, value, self.offset, wanted, each)?;
            }
            return Ok(1);
        }
        let value = raw.parse()?;
        if value.is_null() {
            return Ok(0);
        }
        let is_list = value.get("kind").and_then(Value::as_str) == Some("List")
            && value.get("items").is_some_and(Value::is_array);
        match value {
            Value::Object(mut map) if is_list => {
                if let Some(Value::Array(items)) = map.remove("items") {
                    for (index, item) in items.into_iter().enumerate() {
                        let place = Place {
                            document,
                            item: Some(index + 1),
                        };
                        give(place, item, self.offset, wanted, each)?;
                    }
                }
            }
            other => give(Place { document, item: None }, other, self.offset, wanted, each)?,
        }
        Ok(1)
    }

    /// After a line `items:` at the start of a line: when the document is a `List` whose items
    /// are a block sequence, gives them one by one and returns how the document ends, the
    /// stream left after it. `None` (the stream anywhere) when the document is to be read whole.
    fn list_items(
        &mut self,
        document: usize,
        head: &str,
        items_line: &Line,
        wanted: &dyn Fn(&str) -> bool,
        each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
    ) -> Result<Option<Boundary>, ReadError> {
        let items_start = (self.offset, self.number);
        let Some(layout) = self.scan_list(document)? else {
            return Ok(None);
        };
        // The List itself, without its items: it must say `kind: List`.
        let mut rest = head.to_owned();
        rest.push_str(&layout.tail);
        let wrapper = RawDocument {
            index: document,
            start_line: items_line.number,
            text: &rest,
        };
        match wrapper.parse() {
            Ok(Value::Object(map))
                if map.get("kind").and_then(Value::as_str) == Some("List") && !map.contains_key("items") => {}
            _ => return Ok(None),
        }
        self.seek(items_start.0, items_start.1)?;
        let mut item = String::new();
        let mut item_line = 0;
        let mut count = 0;
        while self.offset < layout.items_end {
            let Some(line) = self.next_line()? else { break };
            if entry_at(&line.text) == Some(layout.indent) {
                if !item.is_empty() {
                    count += 1;
                    self.item(document, count, item_line, &item, layout.indent, wanted, each)?;
                }
                item.clear();
                item_line = line.number;
                // The dash becomes a blank: the item keeps its columns.
                item.push_str(&line.text[..layout.indent]);
                item.push(' ');
                item.push_str(&line.text[layout.indent + 1..]);
            } else if item_line > 0 {
                item.push_str(&line.text);
            }
        }
        if !item.is_empty() {
            count += 1;
            self.item(document, count, item_line, &item, layout.indent, wanted, each)?;
        }
        self.seek(layout.end.0, layout.end.1)?;
        Ok(Some(layout.boundary))
    }

    /// Reads ahead from the first line after `items:` to the end of the document: where the
    /// items are and what follows them. `None` when they are not a block sequence read here.
    fn scan_list(&mut self, document: usize) -> Result<Option<ListLayout>, ReadError> {
        let mut indent = None;
        let mut tail = String::new();
        let mut items_end = None;
        let boundary = loop {
            let Some(line) = self.next_line()? else {
                break Boundary::End;
            };
            if Self::separator(&line, document)? {
                items_end.get_or_insert(line.offset);
                break Boundary::Separator;
            }
            if items_end.is_some() {
                if is_items_key(&line.text) {
                    // A second `items` (an error the whole document's parse reports).
                    return Ok(None);
                }
                tail.push_str(&line.text);
                continue;
            }
            let content = line.text.trim_start_matches(' ');
            if content.starts_with('\t') {
                return Ok(None);
            }
            if content.trim().is_empty() || content.starts_with('#') {
                continue;
            }
            let column = line.text.len() - content.len();
            match indent {
                None => match entry_at(&line.text) {
                    Some(at) => indent = Some(at),
                    None => return Ok(None),
                },
                Some(at) if column > at || entry_at(&line.text) == Some(at) => {}
                Some(_) => {
                    items_end = Some(line.offset);
                    tail.push_str(&line.text);
                }
            }
        };
        let Some(indent) = indent else {
            return Ok(None);
        };
        Ok(Some(ListLayout {
            indent,
            items_end: items_end.unwrap_or(self.offset),
            tail,
            end: (self.offset, self.number),
            boundary,
        }))
    }

    /// One item: skipped when its `kind:` line says it is not wanted, else parsed and given.
    #[allow(clippy::too_many_arguments)]
    fn item(
        &self,
        document: usize,
        index: usize,
        start_line: usize,
        text: &str,
        indent: usize,
        wanted: &dyn Fn(&str) -> bool,
        each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
    ) -> Result<(), ReadError> {
        if let Some(kind) = sniff_kind(text, indent + 2)
            && !wanted(kind)
        {
            return Ok(());
        }
        let raw = RawDocument {
            index: document,
            start_line,
            text,
        };
        // A blank item (`-` alone, then nothing) is null, as in the whole document.
        let value = if raw.is_blank() { Value::Null } else { raw.parse()? };
        give(
            Place {
                document,
                item: Some(index),
            },
            value,
            self.offset,
            wanted,
            each,
        )
    }
}

/// Where a List's items are.
struct ListLayout {
    /// The column of their `-`.
    indent: usize,
    /// Where they end: what follows them, the separator line or the end of the stream.
    items_end: u64,
    /// What follows them, to the end of the document.
    tail: String,
    /// The stream after the document: offset and line number.
    end: (u64, usize),
    /// How the document ends.
    boundary: Boundary,
}

/// Gives `value` to `each` when its kind is wanted, with how far the stream was read.
fn give(
    place: Place,
    value: Value,
    offset: u64,
    wanted: &dyn Fn(&str) -> bool,
    each: &mut dyn FnMut(Place, Value, u64) -> Result<()>,
) -> Result<(), ReadError> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if !wanted(kind) {
        return Ok(());
    }
    each(place, value, offset).map_err(ReadError::Caller)
}

/// Whether the line is `items:` at the start of a line, with nothing after it but blanks or a
/// comment.
fn is_items_key(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("items:") else {
        return false;
    };
    let after_blanks = rest.trim_start_matches([' ', '\t']);
    after_blanks.trim_end().is_empty() || (after_blanks.starts_with('#') && after_blanks.len() < rest.len())
}

/// The column of the line's `-` when it starts a block sequence entry (`-` then a blank or the
/// end of the line).
fn entry_at(line: &str) -> Option<usize> {
    let content = line.trim_start_matches(' ');
    let column = line.len() - content.len();
    let rest = content.strip_prefix('-')?;
    (rest.is_empty() || rest.starts_with([' ', '\n', '\r'])).then_some(column)
}

/// The kind an object's text says it is: the value of the one line `kind: X` at `indent`, when
/// there is exactly one and X is a plain word (possibly quoted). `None` when unsure: the object
/// is then parsed.
fn sniff_kind(text: &str, indent: usize) -> Option<&str> {
    let mut found = None;
    for line in text.lines() {
        let Some(rest) = line
            .get(indent..)
            .filter(|_| line.as_bytes()[..indent].iter().all(|&b| b == b' '))
        else {
            continue;
        };
        let Some(value) = rest.strip_prefix("kind:") else {
            continue;
        };
        if found.is_some() {
            return None;
        }
        found = Some(value);
    }
    let value = found?;
    if !value.starts_with([' ', '\t']) {
        return None;
    }
    let mut value = value.trim();
    if let Some(at) = value.find(" #") {
        value = value[..at].trim_end();
    }
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            value = inner;
        }
    }
    (!value.is_empty() && value.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(value)
}

/// Reads every object of `file` that `wanted` accepts, with the fraction of the file read so
/// far; an empty stream is an error, as for [`super::input::objects`].
pub fn read_all(
    file: &mut Spooled,
    wanted: &dyn Fn(&str) -> bool,
    each: &mut dyn FnMut(String, Value, f64) -> Result<()>,
) -> Result<()> {
    let name = file.name.clone();
    let length = file.file.metadata().map_or(0, |m| m.len()).max(1) as f64;
    let documents = file.for_each(wanted, &mut |place, value, offset| {
        each(format!("{name}: {place}"), value, offset as f64 / length)
    })?;
    if documents == 0 {
        bail!("{name}: no YAML documents found");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
