//! The lexer: Go's `text/template/parse/lex.go` as a pull-based state machine.
//!
//! The parser asks for one item at a time ([`Lexer::next_item`]); the lexer runs its states until
//! one emits. States and error texts follow Go exactly, because parse errors are part of the
//! observable behaviour (`template: t:1: unclosed action`).

use std::borrow::Cow;

/// The kind of a lexed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemType {
    /// An error; the value is the message.
    Error,
    /// Boolean constant.
    Bool,
    /// Printable ASCII character; grab bag for comma etc.
    Char,
    /// Character constant.
    CharConstant,
    /// Comment text.
    Comment,
    /// Complex constant.
    Complex,
    /// `=`
    Assign,
    /// `:=`
    Declare,
    /// End of input.
    Eof,
    /// Alphanumeric identifier starting with `.`.
    Field,
    /// Alphanumeric identifier not starting with `.`.
    Identifier,
    /// Left action delimiter.
    LeftDelim,
    /// `(` inside an action.
    LeftParen,
    /// Simple number.
    Number,
    /// `|`
    Pipe,
    /// Raw quoted string (includes quotes).
    RawString,
    /// Right action delimiter.
    RightDelim,
    /// `)` inside an action.
    RightParen,
    /// Run of spaces separating arguments.
    Space,
    /// Quoted string (includes quotes).
    String,
    /// Plain text.
    Text,
    /// Variable starting with `$`.
    Variable,
    /// Keyword `block`.
    Block,
    /// Keyword `break`.
    Break,
    /// Keyword `continue`.
    Continue,
    /// The cursor, spelled `.`.
    Dot,
    /// Keyword `define`.
    Define,
    /// Keyword `else`.
    Else,
    /// Keyword `end`.
    End,
    /// Keyword `if`.
    If,
    /// Untyped nil constant.
    Nil,
    /// Keyword `range`.
    Range,
    /// Keyword `template`.
    Template,
    /// Keyword `with`.
    With,
}

impl ItemType {
    /// Whether the item is a keyword (Go orders them after `itemKeyword`).
    pub fn is_keyword(self) -> bool {
        matches!(
            self,
            ItemType::Block
                | ItemType::Break
                | ItemType::Continue
                | ItemType::Dot
                | ItemType::Define
                | ItemType::Else
                | ItemType::End
                | ItemType::If
                | ItemType::Nil
                | ItemType::Range
                | ItemType::Template
                | ItemType::With
        )
    }
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

/// A token with its position (byte offset), text and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item<'a> {
    /// The kind.
    pub typ: ItemType,
    /// Byte offset of the item in the input.
    pub pos: usize,
    /// The text (or the error message); borrowed from the input except for errors.
    pub val: Cow<'a, str>,
    /// The line number at the start of the item.
    pub line: usize,
}

impl std::fmt::Display for Item<'_> {
    /// Go's `item.String()`, used inside parse errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.typ {
            ItemType::Eof => f.write_str("EOF"),
            ItemType::Error => f.write_str(&self.val),
            t if t.is_keyword() => write!(f, "<{}>", self.val),
            _ => {
                if self.val.len() > 10 {
                    let head: String = self.val.chars().take(10).collect();
                    write!(f, "{}...", gocompat::strconv::quote(&head))
                } else {
                    f.write_str(&gocompat::strconv::quote(&self.val))
                }
            }
        }
    }
}

/// Lexer options set by the parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct LexOptions {
    /// Emit comment items.
    pub emit_comment: bool,
    /// `break` is a keyword (not overridden by a function).
    pub break_ok: bool,
    /// `continue` is a keyword.
    pub continue_ok: bool,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

const EOF: char = '\u{FFFF}';
const SPACE_CHARS: &[char] = &[' ', '\t', '\r', '\n'];

/// The lexer state.
#[derive(Debug)]
pub struct Lexer<'a> {
    input: &'a str,
    left_delim: &'a str,
    right_delim: &'a str,
    pos: usize,
    start: usize,
    at_eof: bool,
    paren_depth: i64,
    line: usize,
    start_line: usize,
    item: Option<Item<'a>>,
    inside_action: bool,
    /// Options set by the parser before lexing starts.
    pub options: LexOptions,
}

fn is_space(r: char) -> bool {
    matches!(r, ' ' | '\t' | '\r' | '\n')
}

/// Go's `isAlphaNumeric`: `_`, letters and decimal digits (Unicode).
pub fn is_alpha_numeric(r: char) -> bool {
    if r.is_ascii() {
        return r == '_' || r.is_ascii_alphanumeric();
    }
    r.is_alphabetic() || is_go_digit(r)
}

/// Go's `unicode.IsDigit` (category Nd), approximated for non-ASCII by the common digit blocks.
fn is_go_digit(r: char) -> bool {
    if r.is_ascii() {
        return r.is_ascii_digit();
    }
    let c = r as u32;
    [
        0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66,
        0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0xFF10,
    ]
    .iter()
    .any(|&b| c >= b && c < b + 10)
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1] as char)
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0] as char) && b[1] == b'-'
}

impl<'a> Lexer<'a> {
    /// A lexer over `input` with the given delimiters (empty means `{{` / `}}`).
    pub fn new(input: &'a str, left: &'a str, right: &'a str) -> Self {
        Lexer {
            input,
            left_delim: if left.is_empty() { "{{" } else { left },
            right_delim: if right.is_empty() { "}}" } else { right },
            pos: 0,
            start: 0,
            at_eof: false,
            paren_depth: 0,
            line: 1,
            start_line: 1,
            item: None,
            inside_action: false,
            options: LexOptions::default(),
        }
    }

    fn rest(&self, from: usize) -> &'a str {
        self.input.get(from..).unwrap_or("")
    }

    fn next(&mut self) -> char {
        // ASCII fast path: templates are almost entirely ASCII.
        if let Some(&b) = self.input.as_bytes().get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            if b == b'\n' {
                self.line += 1;
            }
            return b as char;
        }
        match self.rest(self.pos).chars().next() {
            None => {
                self.at_eof = true;
                EOF
            }
            Some(r) => {
                self.pos += r.len_utf8();
                if r == '\n' {
                    self.line += 1;
                }
                r
            }
        }
    }

    fn peek(&mut self) -> char {
        let r = self.next();
        self.backup();
        r
    }

    fn backup(&mut self) {
        if self.at_eof || self.pos == 0 {
            return;
        }
        if let Some(&b) = self.input.as_bytes().get(self.pos - 1)
            && b < 0x80
        {
            self.pos -= 1;
            if b == b'\n' {
                self.line -= 1;
            }
            return;
        }
        if let Some(r) = self.input.get(..self.pos).and_then(|s| s.chars().next_back()) {
            self.pos -= r.len_utf8();
            if r == '\n' {
                self.line -= 1;
            }
        }
    }

    fn this_item(&mut self, typ: ItemType) -> Item<'a> {
        let i = Item {
            typ,
            pos: self.start,
            val: Cow::Borrowed(self.input.get(self.start..self.pos).unwrap_or("")),
            line: self.start_line,
        };
        self.start = self.pos;
        self.start_line = self.line;
        i
    }

    fn emit(&mut self, typ: ItemType) -> Option<State> {
        let i = self.this_item(typ);
        self.item = Some(i);
        None
    }

    fn emit_item(&mut self, i: Item<'a>) -> Option<State> {
        self.item = Some(i);
        None
    }

    fn ignore(&mut self) {
        let skipped = self.input.get(self.start..self.pos).unwrap_or("");
        self.line += skipped.bytes().filter(|&b| b == b'\n').count();
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn accept(&mut self, valid: &str) -> bool {
        let r = self.next();
        if r != EOF && valid.contains(r) {
            return true;
        }
        self.backup();
        false
    }

    fn accept_run(&mut self, valid: &str) {
        loop {
            let r = self.next();
            if r == EOF || !valid.contains(r) {
                break;
            }
        }
        self.backup();
    }

    fn errorf(&mut self, msg: String) -> Option<State> {
        self.item = Some(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: Cow::Owned(msg),
            line: self.start_line,
        });
        self.start = 0;
        self.pos = 0;
        self.input = "";
        None
    }

    /// Returns the next item.
    pub fn next_item(&mut self) -> Item<'a> {
        self.item = None;
        let mut state = if self.inside_action {
            State::InsideAction
        } else {
            State::Text
        };
        loop {
            match self.step(state) {
                Some(s) => state = s,
                None => {
                    return self.item.take().unwrap_or(Item {
                        typ: ItemType::Eof,
                        pos: self.pos,
                        val: Cow::Borrowed("EOF"),
                        line: self.start_line,
                    });
                }
            }
        }
    }

    fn step(&mut self, s: State) -> Option<State> {
        match s {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(ItemType::Field),
            State::Variable => {
                if self.at_terminator() {
                    return self.emit(ItemType::Variable);
                }
                self.lex_field_or_variable(ItemType::Variable)
            }
            State::Char => self.lex_char(),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quote(),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    /// The offset of the next left delimiter in `s`: a `memchr` for its first byte, then a
    /// comparison, which beats a general substring search for the usual two-byte `{{`.
    fn find_left_delim(&self, s: &str) -> Option<usize> {
        let delim = self.left_delim;
        let first = delim.as_bytes().first().copied().unwrap_or(b'{');
        if first >= 0x80 {
            return s.find(delim);
        }
        let mut from = 0;
        while let Some(i) = s.get(from..).and_then(|t| t.find(first as char)) {
            let at = from + i;
            if s.get(at..).is_some_and(|t| t.starts_with(delim)) {
                return Some(at);
            }
            from = at + 1;
        }
        None
    }

    fn lex_text(&mut self) -> Option<State> {
        if let Some(x) = self.find_left_delim(self.rest(self.pos)) {
            if x > 0 {
                self.pos += x;
                let mut trim_length = 0;
                let delim_end = self.pos + self.left_delim.len();
                if has_left_trim_marker(self.rest(delim_end)) {
                    let text = self.input.get(self.start..self.pos).unwrap_or("");
                    trim_length = text.len() - text.trim_end_matches(SPACE_CHARS).len();
                }
                self.pos -= trim_length;
                let text = self.input.get(self.start..self.pos).unwrap_or("");
                self.line += text.bytes().filter(|&b| b == b'\n').count();
                let i = self.this_item(ItemType::Text);
                self.pos += trim_length;
                self.ignore();
                if !i.val.is_empty() {
                    return self.emit_item(i);
                }
            }
            return Some(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            let text = self.input.get(self.start..self.pos).unwrap_or("");
            self.line += text.bytes().filter(|&b| b == b'\n').count();
            return self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof)
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest(self.pos);
        if has_right_trim_marker(rest) && self.rest(self.pos + 2).starts_with(self.right_delim) {
            return (true, true);
        }
        if rest.starts_with(self.right_delim) {
            return (true, false);
        }
        (false, false)
    }

    fn lex_left_delim(&mut self) -> Option<State> {
        self.pos += self.left_delim.len();
        let trim_space = has_left_trim_marker(self.rest(self.pos));
        let after_marker = if trim_space { 2 } else { 0 };
        if self.rest(self.pos + after_marker).starts_with("/*") {
            self.pos += after_marker;
            self.ignore();
            return Some(State::Comment);
        }
        let i = self.this_item(ItemType::LeftDelim);
        self.inside_action = true;
        self.pos += after_marker;
        self.ignore();
        self.paren_depth = 0;
        self.emit_item(i)
    }

    fn lex_comment(&mut self) -> Option<State> {
        self.pos += 2;
        let Some(x) = self.rest(self.pos).find("*/") else {
            return self.errorf("unclosed comment".into());
        };
        self.pos += x + 2;
        let (delim, trim_space) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".into());
        }
        let text = self.input.get(self.start..self.pos).unwrap_or("");
        self.line += text.bytes().filter(|&b| b == b'\n').count();
        let i = self.this_item(ItemType::Comment);
        if trim_space {
            self.pos += 2;
        }
        self.pos += self.right_delim.len();
        if trim_space {
            let rest = self.rest(self.pos);
            self.pos += rest.len() - rest.trim_start_matches(SPACE_CHARS).len();
        }
        self.ignore();
        if self.options.emit_comment {
            return self.emit_item(i);
        }
        Some(State::Text)
    }

    fn lex_right_delim(&mut self) -> Option<State> {
        let (_, trim_space) = self.at_right_delim();
        if trim_space {
            self.pos += 2;
            self.ignore();
        }
        self.pos += self.right_delim.len();
        let i = self.this_item(ItemType::RightDelim);
        if trim_space {
            let rest = self.rest(self.pos);
            self.pos += rest.len() - rest.trim_start_matches(SPACE_CHARS).len();
            self.ignore();
        }
        self.inside_action = false;
        self.emit_item(i)
    }

    fn lex_inside_action(&mut self) -> Option<State> {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(State::RightDelim);
            }
            return self.errorf("unclosed left paren".into());
        }
        let r = self.next();
        match r {
            EOF if self.at_eof => self.errorf("unclosed action".into()),
            r if is_space(r) => {
                self.backup();
                Some(State::Space)
            }
            '=' => self.emit(ItemType::Assign),
            ':' => {
                if self.next() != '=' {
                    return self.errorf("expected :=".into());
                }
                self.emit(ItemType::Declare)
            }
            '|' => self.emit(ItemType::Pipe),
            '"' => Some(State::Quote),
            '`' => Some(State::RawQuote),
            '$' => Some(State::Variable),
            '\'' => Some(State::Char),
            '.' => {
                if let Some(&b) = self.input.as_bytes().get(self.pos)
                    && !b.is_ascii_digit()
                {
                    return Some(State::Field);
                }
                self.backup();
                Some(State::Number)
            }
            '+' | '-' | '0'..='9' => {
                self.backup();
                Some(State::Number)
            }
            r if is_alpha_numeric(r) => {
                self.backup();
                Some(State::Identifier)
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(ItemType::LeftParen)
            }
            ')' => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.errorf("unexpected right paren".into());
                }
                self.emit(ItemType::RightParen)
            }
            r if r.is_ascii() && !r.is_ascii_control() => self.emit(ItemType::Char),
            r => self.errorf(format!(
                "unrecognized character in action: {}",
                crate::fmt::unicode_sharp_u(r)
            )),
        }
    }

    fn lex_space(&mut self) -> Option<State> {
        let b = self.input.as_bytes();
        let mut num_spaces = 0;
        while let Some(&c) = b.get(self.pos)
            && matches!(c, b' ' | b'\t' | b'\r' | b'\n')
        {
            self.pos += 1;
            if c == b'\n' {
                self.line += 1;
            }
            num_spaces += 1;
        }
        if self.pos > 0
            && has_right_trim_marker(self.rest(self.pos - 1))
            && self.rest(self.pos - 1 + 2).starts_with(self.right_delim)
        {
            self.backup();
            if num_spaces == 1 {
                return Some(State::RightDelim);
            }
        }
        self.emit(ItemType::Space)
    }

    /// Skips a run of ASCII `isAlphaNumeric` bytes (the common case of identifiers and fields);
    /// the char loop that follows handles any non-ASCII rest.
    fn skip_ascii_alnum(&mut self) {
        let b = self.input.as_bytes();
        let mut p = self.pos;
        while p < b.len() && (b[p] == b'_' || b[p].is_ascii_alphanumeric()) {
            p += 1;
        }
        self.pos = p;
    }

    fn lex_identifier(&mut self) -> Option<State> {
        self.skip_ascii_alnum();
        loop {
            let r = self.next();
            if r != EOF && is_alpha_numeric(r) {
                continue;
            }
            self.backup();
            let word = self.input.get(self.start..self.pos).unwrap_or("");
            if !self.at_terminator() {
                return self.errorf(format!("bad character {}", crate::fmt::unicode_sharp_u(r)));
            }
            if let Some(item) = keyword(word) {
                if (item == ItemType::Break && !self.options.break_ok)
                    || (item == ItemType::Continue && !self.options.continue_ok)
                {
                    return self.emit(ItemType::Identifier);
                }
                return self.emit(item);
            }
            if word.starts_with('.') {
                return self.emit(ItemType::Field);
            }
            if word == "true" || word == "false" {
                return self.emit(ItemType::Bool);
            }
            return self.emit(ItemType::Identifier);
        }
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> Option<State> {
        if self.at_terminator() {
            if typ == ItemType::Variable {
                return self.emit(ItemType::Variable);
            }
            return self.emit(ItemType::Dot);
        }
        self.skip_ascii_alnum();
        let mut r;
        loop {
            r = self.next();
            if r == EOF || !is_alpha_numeric(r) {
                self.backup();
                break;
            }
        }
        if !self.at_terminator() {
            return self.errorf(format!("bad character {}", crate::fmt::unicode_sharp_u(r)));
        }
        self.emit(typ)
    }

    fn at_terminator(&mut self) -> bool {
        if let Some(&b) = self.input.as_bytes().get(self.pos)
            && b < 0x80
        {
            if matches!(
                b,
                b' ' | b'\t' | b'\r' | b'\n' | b'.' | b',' | b'|' | b':' | b')' | b'('
            ) {
                return true;
            }
            return self.rest(self.pos).starts_with(self.right_delim);
        }
        let r = self.peek();
        if is_space(r) {
            return true;
        }
        if self.at_eof_peek() {
            return true;
        }
        if matches!(r, '.' | ',' | '|' | ':' | ')' | '(') {
            return true;
        }
        self.rest(self.pos).starts_with(self.right_delim)
    }

    fn at_eof_peek(&self) -> bool {
        self.pos >= self.input.len()
    }

    fn lex_char(&mut self) -> Option<State> {
        loop {
            let r = self.next();
            let eof = r == EOF && self.at_eof;
            match r {
                '\\' if !eof => {
                    let r2 = self.next();
                    if !(r2 == EOF && self.at_eof) && r2 != '\n' {
                        continue;
                    }
                    return self.errorf("unterminated character constant".into());
                }
                '\n' => return self.errorf("unterminated character constant".into()),
                _ if eof => return self.errorf("unterminated character constant".into()),
                '\'' => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant)
    }

    fn lex_number(&mut self) -> Option<State> {
        if !self.scan_number() {
            let t = self.input.get(self.start..self.pos).unwrap_or("").to_string();
            return self.errorf(format!("bad number syntax: {}", gocompat::strconv::quote(&t)));
        }
        let sign = self.peek();
        if sign == '+' || sign == '-' {
            if !self.scan_number() || !self.input.get(..self.pos).unwrap_or("").ends_with('i') {
                let t = self.input.get(self.start..self.pos).unwrap_or("").to_string();
                return self.errorf(format!("bad number syntax: {}", gocompat::strconv::quote(&t)));
            }
            return self.emit(ItemType::Complex);
        }
        self.emit(ItemType::Number)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        let p = self.peek();
        if !(p == EOF && self.at_eof_peek()) && is_alpha_numeric(p) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> Option<State> {
        // Skip the bytes that need no attention; the loop below sees the rest.
        let b = self.input.as_bytes();
        let mut p = self.pos;
        while p < b.len() && !matches!(b[p], b'"' | b'\\' | b'\n') {
            p += 1;
        }
        self.pos = p;
        loop {
            let r = self.next();
            let eof = r == EOF && self.at_eof;
            match r {
                '\\' if !eof => {
                    let r2 = self.next();
                    if !(r2 == EOF && self.at_eof) && r2 != '\n' {
                        continue;
                    }
                    return self.errorf("unterminated quoted string".into());
                }
                '\n' => return self.errorf("unterminated quoted string".into()),
                _ if eof => return self.errorf("unterminated quoted string".into()),
                '"' => break,
                _ => {}
            }
        }
        self.emit(ItemType::String)
    }

    fn lex_raw_quote(&mut self) -> Option<State> {
        // Raw strings may span lines: count them while skipping to the closing quote.
        if let Some(i) = self.rest(self.pos).find('`') {
            let body = self.rest(self.pos).get(..i).unwrap_or("");
            self.line += body.bytes().filter(|&c| c == b'\n').count();
            self.pos += i + 1;
            return self.emit(ItemType::RawString);
        }
        loop {
            let r = self.next();
            if r == EOF && self.at_eof {
                return self.errorf("unterminated raw quoted string".into());
            }
            if r == '`' {
                break;
            }
        }
        self.emit(ItemType::RawString)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &str) -> Vec<(ItemType, String)> {
        let mut l = Lexer::new(s, "", "");
        l.options.break_ok = true;
        l.options.continue_ok = true;
        let mut out = vec![];
        for _ in 0..1000 {
            let i = l.next_item();
            let done = matches!(i.typ, ItemType::Eof | ItemType::Error);
            out.push((i.typ, i.val.into_owned()));
            if done {
                break;
            }
        }
        out
    }

    #[test]
    fn lexes_trim_markers() {
        let v = items("a  {{- .x -}}  b");
        assert_eq!(v[0], (ItemType::Text, "a".into()));
        assert_eq!(v[2], (ItemType::Field, ".x".into()));
        assert_eq!(v[4], (ItemType::Text, "b".into()));
    }

    #[test]
    fn lexes_numbers_and_errors() {
        let v = items("{{3.5e+2 0x1F 'a' 1_000}}");
        let nums: Vec<_> = v
            .iter()
            .filter(|(t, _)| matches!(t, ItemType::Number | ItemType::CharConstant))
            .collect();
        assert_eq!(nums.len(), 4);
        let e = items("{{3k}}");
        assert_eq!(e.last().map(|x| x.1.as_str()), Some("bad number syntax: \"3k\""));
        let e = items("{{");
        assert_eq!(e.last().map(|x| x.1.as_str()), Some("unclosed action"));
    }
}
