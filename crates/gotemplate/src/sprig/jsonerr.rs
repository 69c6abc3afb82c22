//! Go's `encoding/json` syntax error texts (`invalid character 'b' looking for beginning of
//! object key string`), from a small scanner that mirrors Go's `scanner.go` states. Used to
//! report `fromJson`/`mustFromJson` errors the way Go does; decoding itself is serde_json's.

fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let q = gocompat::strconv::quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

struct Scanner<'a> {
    s: &'a str,
    pos: usize,
}

type R = Result<(), String>;

impl Scanner<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos..).and_then(|r| r.chars().next())
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.pos += 1;
        }
    }

    fn err(c: char, ctx: &str) -> String {
        // Go's scanner reports the offending byte: a multi-byte character shows its first byte.
        let mut buf = [0u8; 4];
        let first = c.encode_utf8(&mut buf).as_bytes()[0];
        format!("invalid character {} {ctx}", quote_char(char::from(first)))
    }

    fn eof() -> String {
        "unexpected end of JSON input".to_string()
    }

    fn value(&mut self, depth: usize) -> R {
        if depth > 10_000 {
            return Err("exceeded max depth".into());
        }
        self.ws();
        let Some(c) = self.bump() else {
            return Err(Self::eof());
        };
        match c {
            '{' => {
                self.ws();
                if self.peek() == Some('}') {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    match self.bump() {
                        None => return Err(Self::eof()),
                        Some('"') => self.string()?,
                        Some(c) => return Err(Self::err(c, "looking for beginning of object key string")),
                    }
                    self.ws();
                    match self.bump() {
                        None => return Err(Self::eof()),
                        Some(':') => {}
                        Some(c) => return Err(Self::err(c, "after object key")),
                    }
                    self.value(depth + 1)?;
                    self.ws();
                    match self.bump() {
                        None => return Err(Self::eof()),
                        Some(',') => continue,
                        Some('}') => return Ok(()),
                        Some(c) => return Err(Self::err(c, "after object key:value pair")),
                    }
                }
            }
            '[' => {
                self.ws();
                if self.peek() == Some(']') {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.value(depth + 1)?;
                    self.ws();
                    match self.bump() {
                        None => return Err(Self::eof()),
                        Some(',') => continue,
                        Some(']') => return Ok(()),
                        Some(c) => return Err(Self::err(c, "after array element")),
                    }
                }
            }
            '"' => self.string(),
            't' => self.literal("true"),
            'f' => self.literal("false"),
            'n' => self.literal("null"),
            '-' | '0'..='9' => self.number(c),
            c => Err(Self::err(c, "looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str) -> R {
        for expected in word.chars().skip(1) {
            match self.bump() {
                None => return Err(Self::eof()),
                Some(c) if c == expected => {}
                Some(c) => {
                    return Err(Self::err(
                        c,
                        &format!("in literal {word} (expecting {})", quote_char(expected)),
                    ));
                }
            }
        }
        Ok(())
    }

    fn string(&mut self) -> R {
        loop {
            match self.bump() {
                None => return Err(Self::eof()),
                Some('"') => return Ok(()),
                Some('\\') => match self.bump() {
                    None => return Err(Self::eof()),
                    Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {}
                    Some('u') => {
                        for _ in 0..4 {
                            match self.bump() {
                                None => return Err(Self::eof()),
                                Some(c) if c.is_ascii_hexdigit() => {}
                                Some(c) => return Err(Self::err(c, "in \\u hexadecimal character escape")),
                            }
                        }
                    }
                    Some(c) => return Err(Self::err(c, "in string escape code")),
                },
                Some(c) if (c as u32) < 0x20 => return Err(Self::err(c, "in string literal")),
                Some(_) => {}
            }
        }
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some('0'..='9')) {
            self.pos += 1;
        }
    }

    fn number(&mut self, first: char) -> R {
        let first = if first == '-' {
            match self.bump() {
                None => return Err(Self::eof()),
                Some(c @ '0'..='9') => c,
                Some(c) => return Err(Self::err(c, "in numeric literal")),
            }
        } else {
            first
        };
        if first != '0' {
            self.digits();
        }
        if self.peek() == Some('.') {
            self.pos += 1;
            match self.bump() {
                None => return Err(Self::eof()),
                Some('0'..='9') => self.digits(),
                Some(c) => return Err(Self::err(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            match self.bump() {
                None => return Err(Self::eof()),
                Some('0'..='9') => self.digits(),
                Some(c) => return Err(Self::err(c, "in exponent of numeric literal")),
            }
        }
        Ok(())
    }
}

/// Go's error text for invalid JSON, or `None` when Go's scanner accepts the input.
pub fn syntax_error(s: &str) -> Option<String> {
    let mut sc = Scanner { s, pos: 0 };
    if let Err(e) = sc.value(0) {
        return Some(e);
    }
    sc.ws();
    sc.peek().map(|c| Scanner::err(c, "after top-level value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_texts() {
        assert_eq!(
            syntax_error("{bad").as_deref(),
            Some("invalid character 'b' looking for beginning of object key string")
        );
        assert_eq!(syntax_error("").as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(
            syntax_error("[1,]").as_deref(),
            Some("invalid character ']' looking for beginning of value")
        );
        assert_eq!(
            syntax_error("{\"a\": 1} x").as_deref(),
            Some("invalid character 'x' after top-level value")
        );
        assert_eq!(syntax_error("{\"a\": [1, {\"b\": null}]}"), None);
    }
}
