//! Scalar writers (plain, single-quoted, double-quoted, literal), including
//! libyaml's line folding: once the column passes [`BEST_WIDTH`], a single
//! space between words becomes a line break plus indentation.

use crate::chars::{at, is_break, is_printable, is_space, starts_with_bom, width};
use crate::writer::{BEST_WIDTH, Writer};

impl Writer {
    /// `yaml_emitter_write_plain_scalar`.
    pub(crate) fn write_plain(&mut self, value: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !is_space(value, i + 1) {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                self.write_flow_break(value, &mut i, !breaks);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    /// A line break inside a plain or single-quoted scalar: the first `\n` of a run is written
    /// twice, since a lone one would fold into a space when read back.
    fn write_flow_break(&mut self, value: &[u8], i: &mut usize, first_of_run: bool) {
        if first_of_run && at(value, *i) == b'\n' {
            self.put_break();
        }
        self.write_break(value, i);
        self.indention = true;
    }

    /// `yaml_emitter_write_single_quoted_scalar`.
    pub(crate) fn write_single_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        self.write_indicator(b"'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < value.len()
                    && !is_space(value, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                self.write_flow_break(value, &mut i, !breaks);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if at(value, i) == b'\'' {
                    self.put(b'\'');
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_double_quoted_scalar`.
    pub(crate) fn write_double_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        let bom = starts_with_bom(value);
        let mut spaces = false;
        self.write_indicator(b"\"", true, false, false);
        let mut i = 0;
        while i < value.len() {
            let c = at(value, i);
            if !is_printable(value, i) || bom || is_break(value, i) || c == b'"' || c == b'\\' {
                let w = width(c).max(1);
                let mut v: u32 = u32::from(match w {
                    1 => c & 0x7F,
                    2 => c & 0x1F,
                    3 => c & 0x0F,
                    _ => c & 0x07,
                });
                for k in 1..w {
                    v = (v << 6) + u32::from(at(value, i + k) & 0x3F);
                }
                i += w;
                self.put(b'\\');
                self.write_escape(v);
                spaces = false;
            } else if is_space(value, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i + 1 < value.len() {
                    self.write_indent();
                    if is_space(value, i + 1) {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else {
                self.write(value, &mut i);
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The part of an escape sequence after the backslash.
    fn write_escape(&mut self, v: u32) {
        let short = match v {
            0x00 => Some(b'0'),
            0x07 => Some(b'a'),
            0x08 => Some(b'b'),
            0x09 => Some(b't'),
            0x0A => Some(b'n'),
            0x0B => Some(b'v'),
            0x0C => Some(b'f'),
            0x0D => Some(b'r'),
            0x1B => Some(b'e'),
            0x22 => Some(b'"'),
            0x5C => Some(b'\\'),
            0x85 => Some(b'N'),
            0xA0 => Some(b'_'),
            0x2028 => Some(b'L'),
            0x2029 => Some(b'P'),
            _ => None,
        };
        if let Some(s) = short {
            self.put(s);
            return;
        }
        let (letter, digits) = if v <= 0xFF {
            (b'x', 2)
        } else if v <= 0xFFFF {
            (b'u', 4)
        } else {
            (b'U', 8)
        };
        self.put(letter);
        for k in (0..digits).rev() {
            let digit = ((v >> (4 * k)) & 0x0F) as u8;
            self.put(if digit < 10 {
                b'0' + digit
            } else {
                b'A' + digit - 10
            });
        }
    }

    /// `yaml_emitter_write_block_scalar_hints`: the indentation indicator
    /// (when the text starts with a space or break) and the chomping
    /// indicator (`-` without a final break, none for one, `+` for more).
    fn write_block_scalar_hints(&mut self, value: &[u8]) {
        if is_space(value, 0) || is_break(value, 0) {
            let hint = [b'0' + 2];
            self.write_indicator(&hint, false, false, false);
        }
        let chomp: Option<&[u8]> = if value.is_empty() {
            Some(b"-")
        } else {
            let last = start_of_char_before(value, value.len());
            if !is_break(value, last) {
                Some(b"-")
            } else if last == 0 {
                Some(b"+")
            } else {
                let prev = start_of_char_before(value, last);
                if is_break(value, prev) { Some(b"+") } else { None }
            }
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
    }

    /// `yaml_emitter_write_literal_scalar`.
    pub(crate) fn write_literal(&mut self, value: &[u8]) {
        self.write_indicator(b"|", true, false, false);
        self.write_block_scalar_hints(value);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// Index of the first byte of the character that ends just before `end`.
fn start_of_char_before(value: &[u8], end: usize) -> usize {
    let mut i = end.saturating_sub(1);
    while i > 0 && at(value, i) & 0xC0 == 0x80 {
        i -= 1;
    }
    i
}
