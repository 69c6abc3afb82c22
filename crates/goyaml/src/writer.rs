//! The emitter's output state and low-level writes: columns, indentation,
//! indicators (`put`, `write`, `yaml_emitter_write_indent`,
//! `yaml_emitter_write_indicator`).

use crate::chars::{at, width};

/// libyaml's preferred line width; scalars fold at spaces past it.
pub(crate) const BEST_WIDTH: usize = 80;
/// go-yaml's indentation step.
pub(crate) const BEST_INDENT: isize = 2;

/// Output buffer plus the emitter state the writers consult.
pub(crate) struct Writer {
    /// Bytes written so far (always whole UTF-8 sequences).
    pub(crate) out: Vec<u8>,
    /// Current column, counted in characters.
    pub(crate) column: usize,
    /// Current indentation; -1 before the root node.
    pub(crate) indent: isize,
    /// Saved indentations.
    pub(crate) indents: Vec<isize>,
    /// The last character written was whitespace.
    pub(crate) whitespace: bool,
    /// Only indentation (and indicators that count as such) on this line.
    pub(crate) indention: bool,
}

impl Writer {
    /// A writer at the start of a stream.
    pub(crate) fn new() -> Self {
        Writer {
            out: Vec::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    /// Write one ASCII byte.
    pub(crate) fn put(&mut self, c: u8) {
        self.out.push(c);
        self.column += 1;
    }

    /// Write a line break.
    pub(crate) fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// Copy the character at `*i` of `s` and advance past it.
    pub(crate) fn write(&mut self, s: &[u8], i: &mut usize) {
        let w = width(at(s, *i)).max(1);
        let end = (*i + w).min(s.len());
        self.out.extend_from_slice(s.get(*i..end).unwrap_or_default());
        self.column += 1;
        *i += w;
    }

    /// Copy all of `s`.
    pub(crate) fn write_all(&mut self, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            self.write(s, &mut i);
        }
    }

    /// Copy the line break at `*i` of `s`: LF becomes the output line break,
    /// the other breaks are copied as they are.
    pub(crate) fn write_break(&mut self, s: &[u8], i: &mut usize) {
        if at(s, *i) == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(s, i);
            self.column = 0;
        }
    }

    /// Push the indentation and compute the next one.
    pub(crate) fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    /// Restore the indentation saved by [`Writer::increase_indent`].
    pub(crate) fn pop_indent(&mut self) {
        if let Some(indent) = self.indents.pop() {
            self.indent = indent;
        }
    }

    /// Start a new line if needed and pad to the current indentation.
    pub(crate) fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    /// Write an indicator such as `-`, `:`, `?`, `'` or `|`.
    pub(crate) fn write_indicator(
        &mut self,
        indicator: &[u8],
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        self.write_all(indicator);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }
}
