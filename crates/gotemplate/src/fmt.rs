//! Go's `fmt` for template values: `Sprint`, `Sprintln`, `Sprintf` with the verbs templates use,
//! and `strconv.Quote`.
//!
//! Output must match Go byte for byte, including its mistake markers (`%!d(string=a)`,
//! `%!s(MISSING)`, `%!(EXTRA int=1)`), the shortest float formatting of `%v` (`1e+06`), and the
//! printing of slices (`[a b]`) and maps (`map[a:1 b:2]`, keys sorted).

use std::fmt::Write as _;

use gocompat::strconv::{can_backquote, is_print, quote, quote_ascii, quote_rune};

use crate::value::Value;

/// Formatting flags and width/precision of one verb.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

struct Printer {
    buf: String,
    f: Flags,
}

/// Go's `fmt.Sprint`: operands are formatted with `%v`; a space is added between operands when
/// neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::new();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let is_string = matches!(a, Value::String(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(a, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`: operands separated by spaces, followed by a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(a, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// Formats one value as `%v` (what a template action prints).
pub fn sprint_value(v: &Value) -> String {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.buf
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::new();
    let bytes = format.as_bytes();
    let end = bytes.len();
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0usize;
    while i < end {
        let mut good_arg_num = true;
        let lasti = i;
        while i < end && bytes[i] != b'%' {
            i += 1;
        }
        if i > lasti {
            p.buf.push_str(format.get(lasti..i).unwrap_or(""));
        }
        if i >= end {
            break;
        }
        i += 1; // skip %
        p.f = Flags::default();
        while i < end {
            match bytes[i] {
                b'#' => p.f.sharp = true,
                b'0' => p.f.zero = !p.f.minus,
                b'+' => p.f.plus = true,
                b'-' => {
                    p.f.minus = true;
                    p.f.zero = false;
                }
                b' ' => p.f.space = true,
                _ => break,
            }
            i += 1;
        }
        let mut after_index;
        (arg_num, i, after_index) =
            arg_number(arg_num, bytes, i, args.len(), &mut reordered, &mut good_arg_num);
        if i < end && bytes[i] == b'*' {
            i += 1;
            match int_from_arg(args, &mut arg_num) {
                Some(w) => {
                    if w < 0 {
                        p.f.minus = true;
                        p.f.zero = false;
                    }
                    p.f.wid = Some(w.unsigned_abs() as usize);
                }
                None => p.buf.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            let (n, ni) = parse_num(bytes, i);
            p.f.wid = n;
            i = ni;
            if after_index && n.is_some() {
                good_arg_num = false;
            }
        }
        if i < end && bytes[i] == b'.' {
            i += 1;
            if after_index {
                good_arg_num = false;
            }
            (arg_num, i, after_index) =
                arg_number(arg_num, bytes, i, args.len(), &mut reordered, &mut good_arg_num);
            if i < end && bytes[i] == b'*' {
                i += 1;
                match int_from_arg(args, &mut arg_num) {
                    Some(pr) if pr >= 0 => p.f.prec = Some(pr as usize),
                    _ => {
                        p.f.prec = None;
                        p.buf.push_str("%!(BADPREC)");
                    }
                }
                after_index = false;
            } else {
                let (n, ni) = parse_num(bytes, i);
                p.f.prec = Some(n.unwrap_or(0));
                i = ni;
            }
        }
        if !after_index {
            (arg_num, i, _) = arg_number(arg_num, bytes, i, args.len(), &mut reordered, &mut good_arg_num);
        }
        if i >= end {
            p.buf.push_str("%!(NOVERB)");
            break;
        }
        let Some(verb) = format.get(i..).and_then(|s| s.chars().next()) else {
            break;
        };
        i += verb.len_utf8();
        if verb == '%' {
            p.buf.push('%');
            continue;
        }
        if !good_arg_num {
            let _ = write!(p.buf, "%!{verb}(BADINDEX)");
            continue;
        }
        if arg_num >= args.len() {
            let _ = write!(p.buf, "%!{verb}(MISSING)");
            continue;
        }
        let verb = if verb == 'w' { 'v' } else { verb };
        if verb == 'v' {
            p.f.sharp_v = p.f.sharp;
            p.f.sharp = false;
            p.f.plus_v = p.f.plus;
            p.f.plus = false;
        }
        p.print_arg(&args[arg_num], verb);
        arg_num += 1;
    }
    if !reordered && arg_num < args.len() {
        p.f = Flags::default();
        p.buf.push_str("%!(EXTRA ");
        for (k, a) in args.iter().enumerate().skip(arg_num) {
            if k > arg_num {
                p.buf.push_str(", ");
            }
            if a.is_nil() && !matches!(a, Value::Object(_)) {
                p.buf.push_str("<nil>");
            } else {
                p.buf.push_str(&a.type_name());
                p.buf.push('=');
                p.print_arg(a, 'v');
            }
        }
        p.buf.push(')');
    }
    p.buf
}

fn arg_number(
    arg_num: usize,
    b: &[u8],
    i: usize,
    num_args: usize,
    reordered: &mut bool,
    good: &mut bool,
) -> (usize, usize, bool) {
    if b.get(i) != Some(&b'[') {
        return (arg_num, i, false);
    }
    *reordered = true;
    let rest = &b[i..];
    let (index, wid, ok) = parse_arg_number(rest);
    if ok && index >= 0 && (index as usize) < num_args {
        return (index as usize, i + wid, true);
    }
    *good = false;
    (arg_num, i + wid, ok)
}

fn parse_arg_number(f: &[u8]) -> (i64, usize, bool) {
    if f.len() < 3 {
        return (0, 1, false);
    }
    for i in 1..f.len() {
        if f[i] == b']' {
            let (n, ni) = parse_num(f, 1);
            return match n {
                Some(w) if ni == i => (w as i64 - 1, i + 1, true),
                _ => (0, i + 1, false),
            };
        }
    }
    (0, 1, false)
}

fn int_from_arg(args: &[Value], arg_num: &mut usize) -> Option<i64> {
    let a = args.get(*arg_num)?;
    *arg_num += 1;
    let n = match a {
        Value::Int(n, _) => Some(*n),
        Value::Uint(n, _) => i64::try_from(*n).ok(),
        _ => None,
    }?;
    // Go's tooLarge: widths and precisions beyond 1e6 are refused.
    if !(-1_000_000..=1_000_000).contains(&n) {
        return None;
    }
    Some(n)
}

fn parse_num(b: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut n: usize = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add(usize::from(b[i] - b'0'));
        if n > 1_000_000 {
            return (None, b.len());
        }
        i += 1;
    }
    if i == start { (None, i) } else { (Some(n), i) }
}

impl Printer {
    fn new() -> Self {
        Printer {
            buf: String::new(),
            f: Flags::default(),
        }
    }

    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero { '0' } else { ' ' };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    fn pad(&mut self, s: &str) {
        match self.f.wid {
            Some(w) if w > 0 => {
                let n = s.chars().count();
                let padn = w.saturating_sub(n);
                if self.f.minus {
                    self.buf.push_str(s);
                    self.write_padding(padn);
                } else {
                    self.write_padding(padn);
                    self.buf.push_str(s);
                }
            }
            _ => self.buf.push_str(s),
        }
    }

    fn bad_verb(&mut self, verb: char, v: &Value) {
        let _ = write!(self.buf, "%!{verb}(");
        if matches!(v, Value::Nil | Value::Missing) {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&v.type_name());
            self.buf.push('=');
            self.print_inner(v, 'v', 0, true);
        }
        self.buf.push(')');
    }

    fn print_arg(&mut self, v: &Value, verb: char) {
        if matches!(v, Value::Nil | Value::Missing) {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(verb, v),
            }
            return;
        }
        if verb == 'T' {
            let t = v.type_name().into_owned();
            self.fmt_s(&t);
            return;
        }
        self.print_inner(v, verb, 0, false);
    }

    fn print_inner(&mut self, v: &Value, verb: char, depth: usize, erroring: bool) {
        if depth > 64 {
            self.buf.push_str("...");
            return;
        }
        match v {
            Value::Nil | Value::Missing => {
                if depth == 0 {
                    self.bad_verb(verb, v);
                } else if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    // Go writes a nil element without padding.
                    self.buf.push_str("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Value::Int(n, _) => self.fmt_int(*n < 0, n.unsigned_abs(), verb, v),
            Value::Uint(n, _) if verb == 'v' && self.f.sharp_v => {
                let s = format!("0x{n:x}");
                self.pad(&s);
            }
            Value::Uint(n, _) => self.fmt_int(false, *n, verb, v),
            Value::Float(x) => self.fmt_float_verb(*x, verb, v),
            Value::Complex(r, i) => {
                if !matches!(verb, 'v' | 'b' | 'g' | 'G' | 'x' | 'X' | 'f' | 'F' | 'e' | 'E') {
                    self.bad_verb(verb, v);
                    return;
                }
                let old = self.f;
                self.buf.push('(');
                self.fmt_float_verb(*r, verb, v);
                self.f.plus = true;
                self.fmt_float_verb(*i, verb, v);
                self.buf.push_str("i)");
                self.f = old;
            }
            Value::String(s) => self.fmt_string(s, verb, v),
            Value::List(l) if self.f.sharp_v => {
                self.buf.push_str(&v.type_name());
                self.buf.push('{');
                for (i, e) in l.items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(", ");
                    }
                    self.print_inner(e, verb, depth + 1, erroring);
                }
                self.buf.push('}');
            }
            Value::Map(m) if self.f.sharp_v => {
                self.buf.push_str(&v.type_name());
                self.buf.push('{');
                for (i, (k, e)) in m.pairs().iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(", ");
                    }
                    self.buf.push_str(&quote(k));
                    self.buf.push(':');
                    self.print_inner(e, verb, depth + 1, erroring);
                }
                self.buf.push('}');
            }
            Value::List(l) => {
                self.buf.push('[');
                for (i, e) in l.items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(' ');
                    }
                    self.print_inner(e, verb, depth + 1, erroring);
                }
                self.buf.push(']');
            }
            Value::Map(m) => {
                self.buf.push_str("map[");
                for (i, (k, e)) in m.pairs().iter().enumerate() {
                    if i > 0 {
                        self.buf.push(' ');
                    }
                    self.fmt_string(k, verb, &Value::str(k.as_str()));
                    self.buf.push(':');
                    self.print_inner(e, verb, depth + 1, erroring);
                }
                self.buf.push(']');
            }
            Value::Object(o) => {
                if !erroring
                    && matches!(verb, 'v' | 's' | 'x' | 'X' | 'q')
                    && let Some(s) = o.string()
                {
                    self.fmt_string(&s, verb, v);
                    return;
                }
                // A named basic type (time.Month, a protobuf enum) formats its value with the
                // numeric verbs, as Go's fmt does once String() does not apply.
                if !o.is_nil()
                    && !matches!(verb, 'v' | 's')
                    && let Some(b) = o.basic()
                    && !matches!(b, Value::Object(_))
                {
                    self.print_inner(&b, verb, depth, erroring);
                    return;
                }
                if o.is_nil() {
                    match verb {
                        'v' | 's' | 'x' | 'X' | 'q' | 'p' => self.pad("<nil>"),
                        _ => self.bad_verb(verb, v),
                    }
                    return;
                }
                match verb {
                    'v' | 's' => {
                        let s = o.format_v(self.f.plus_v);
                        self.buf.push_str(&s);
                    }
                    _ => self.bad_verb(verb, v),
                }
            }
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad(&s);
    }

    fn truncate(&self, s: &str) -> String {
        match self.f.prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.to_string(),
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char, v: &Value) {
        match verb {
            'v' if self.f.sharp_v => {
                let q = quote(s);
                self.pad(&q);
            }
            'v' | 's' => self.fmt_s(s),
            'q' => {
                let t = self.truncate(s);
                let q = if self.f.sharp && can_backquote(&t) {
                    format!("`{t}`")
                } else if self.f.plus {
                    quote_ascii(&t)
                } else {
                    quote(&t)
                };
                self.pad(&q);
            }
            'x' | 'X' => {
                let t = match self.f.prec {
                    Some(p) => s.as_bytes().get(..p).unwrap_or(s.as_bytes()).to_vec(),
                    None => s.as_bytes().to_vec(),
                };
                let digits: &[u8; 16] = if verb == 'x' {
                    b"0123456789abcdef"
                } else {
                    b"0123456789ABCDEF"
                };
                let mut out = String::new();
                for (i, b) in t.iter().enumerate() {
                    if self.f.space && i > 0 {
                        out.push(' ');
                    }
                    if self.f.sharp && (self.f.space || i == 0) {
                        out.push('0');
                        out.push(verb);
                    }
                    out.push(digits[usize::from(b >> 4)] as char);
                    out.push(digits[usize::from(b & 15)] as char);
                }
                self.pad(&out);
            }
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_int(&mut self, negative: bool, u: u64, verb: char, v: &Value) {
        match verb {
            'v' | 'd' => self.fmt_integer(negative, u, 10, verb, false),
            'b' => self.fmt_integer(negative, u, 2, verb, false),
            'o' | 'O' => self.fmt_integer(negative, u, 8, verb, false),
            'x' => self.fmt_integer(negative, u, 16, verb, false),
            'X' => self.fmt_integer(negative, u, 16, verb, true),
            'c' => {
                let c = if negative {
                    '\u{FFFD}'
                } else {
                    u32::try_from(u)
                        .ok()
                        .and_then(char::from_u32)
                        .unwrap_or('\u{FFFD}')
                };
                self.pad(&c.to_string());
            }
            'q' => {
                let c = if negative {
                    '\u{FFFD}'
                } else {
                    u32::try_from(u)
                        .ok()
                        .and_then(char::from_u32)
                        .unwrap_or('\u{FFFD}')
                };
                let q = quote_rune(c, self.f.plus);
                self.pad(&q);
            }
            'U' => {
                let u = if negative { u.wrapping_neg() } else { u };
                let mut s = format!("U+{u:04X}");
                if self.f.sharp
                    && let Some(c) = u32::try_from(u).ok().and_then(char::from_u32)
                    && is_print(c)
                {
                    s.push_str(&format!(" '{c}'"));
                }
                self.pad(&s);
            }
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_integer(&mut self, negative: bool, u: u64, base: u32, verb: char, upper: bool) {
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                let w = self.f.wid.unwrap_or(0);
                self.write_padding(w);
                self.f.zero = old;
                return;
            }
        } else if self.f.zero
            && !self.f.minus
            && let Some(w) = self.f.wid
        {
            prec = w;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut digits = match base {
            2 => format!("{u:b}"),
            8 => format!("{u:o}"),
            16 if upper => format!("{u:X}"),
            16 => format!("{u:x}"),
            _ => u.to_string(),
        };
        if digits.len() < prec {
            digits = "0".repeat(prec - digits.len()) + &digits;
        }
        let mut prefix = String::new();
        if self.f.sharp {
            match base {
                2 => prefix.push_str("0b"),
                8 if !digits.starts_with('0') => {
                    digits.insert(0, '0');
                }
                16 => prefix.push_str(if upper { "0X" } else { "0x" }),
                _ => {}
            }
        }
        if verb == 'O' {
            prefix.insert_str(0, "0o");
        }
        let sign = if negative {
            "-"
        } else if self.f.plus {
            "+"
        } else if self.f.space {
            " "
        } else {
            ""
        };
        let s = format!("{sign}{prefix}{digits}");
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(&s);
        self.f.zero = old;
    }

    fn fmt_float_verb(&mut self, x: f64, verb: char, v: &Value) {
        match verb {
            'v' => self.fmt_float(x, 'g', None),
            'b' => {
                let s = format_binary_float(x);
                self.fmt_float_str(s);
            }
            'g' | 'G' | 'x' | 'X' => self.fmt_float(x, verb, None),
            'e' | 'E' | 'f' | 'F' => self.fmt_float(x, verb, Some(6)),
            _ => self.bad_verb(verb, v),
        }
    }

    /// Pads an already formatted float like Go's `fmtFloat` does (sign handling, zero padding).
    fn fmt_float_str(&mut self, num: String) {
        self.fmt_float_num(num, 'b', None);
    }

    fn fmt_float(&mut self, x: f64, verb: char, default_prec: Option<usize>) {
        let prec = self.f.prec.or(default_prec);
        let num = format_float(x, verb, prec);
        self.fmt_float_num(num, verb, prec);
    }

    fn fmt_float_num(&mut self, mut num: String, verb: char, prec: Option<usize>) {
        if !num.starts_with(['-', '+']) {
            num.insert(0, '+');
        }
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        if num[1..].starts_with(['I', 'N']) {
            let old = self.f.zero;
            self.f.zero = false;
            if num[1..].starts_with('N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad(&num);
            self.f.zero = old;
            return;
        }
        if self.f.sharp && verb != 'b' {
            num = sharpen_float(&num, verb, prec);
        }
        if self.f.plus || !num.starts_with('+') {
            if self.f.zero
                && !self.f.minus
                && let Some(w) = self.f.wid
                && w > num.len()
            {
                let (sign, rest) = num.split_at(1);
                let sign = sign.to_string();
                let rest = rest.to_string();
                self.buf.push_str(&sign);
                self.write_padding(w - num.len());
                self.buf.push_str(&rest);
                return;
            }
            self.pad(&num);
            return;
        }
        let s = num[1..].to_string();
        self.pad(&s);
    }
}

/// Go's `%b` of a float64: decimal mantissa and binary exponent (`6755399441055744p-52`).
fn format_binary_float(x: f64) -> String {
    let bits = x.to_bits();
    let neg = bits >> 63 != 0;
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    let e = if exp == 0 {
        -1074
    } else {
        mant |= 1u64 << 52;
        exp - 1075
    };
    let sign = if neg { "-" } else { "" };
    let esign = if e >= 0 { "+" } else { "" };
    format!("{sign}{mant}p{esign}{e}")
}

/// Go's `#` flag on floats: always a decimal point, and for `%g` trailing zeros up to the
/// precision (default 6). `num` starts with a sign.
fn sharpen_float(num: &str, verb: char, prec: Option<usize>) -> String {
    let (sign, body) = num.split_at(1);
    let (mant, tail) = match body.find(['e', 'E', 'p', 'P']) {
        Some(i) if !matches!(verb, 'x' | 'X') || body[i..].starts_with(['p', 'P']) => body.split_at(i),
        _ => (body, ""),
    };
    let mut digits: i64 = match verb {
        'v' | 'g' | 'G' | 'x' => prec.map_or(6, |p| p as i64),
        _ => 0,
    };
    let mut has_point = false;
    let mut saw_nonzero = false;
    for c in mant.chars() {
        if c == '.' {
            has_point = true;
        } else {
            if c != '0' {
                saw_nonzero = true;
            }
            if saw_nonzero {
                digits -= 1;
            }
        }
    }
    let mut m = mant.to_string();
    if !has_point {
        if mant == "0" {
            digits -= 1;
        }
        m.push('.');
    }
    while digits > 0 {
        m.push('0');
        digits -= 1;
    }
    format!("{sign}{m}{tail}")
}

/// Go's `%x` of a float64 (shortest hexadecimal mantissa).
fn format_hex_float(x: f64, upper: bool) -> String {
    let neg = x.is_sign_negative();
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    let mut exp;
    if exp_bits == 0 && mant == 0 {
        exp = 0;
    } else if exp_bits == 0 {
        // Subnormal: normalize.
        exp = -1022;
        while mant & (1u64 << 52) == 0 {
            mant <<= 1;
            exp -= 1;
        }
        mant &= (1u64 << 52) - 1;
    } else {
        exp = exp_bits - 1023;
    }
    let lead = if exp_bits == 0 && mant == 0 { '0' } else { '1' };
    let mut frac = format!("{mant:013x}");
    while frac.ends_with('0') {
        frac.pop();
    }
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str("0x");
    s.push(lead);
    if !frac.is_empty() {
        s.push('.');
        s.push_str(&frac);
    }
    s.push('p');
    s.push(if exp < 0 { '-' } else { '+' });
    let ea = exp.unsigned_abs();
    if ea < 10 {
        s.push('0');
    }
    s.push_str(&ea.to_string());
    if upper { s.to_uppercase() } else { s }
}

/// Decimal digits (no trailing zeros) and decimal-point position of |x|, shortest or rounded
/// to `sig` significant digits. Zero gives ("", 0).
fn decimal_digits(x: f64, sig: Option<usize>) -> (Vec<u8>, i32) {
    let a = x.abs();
    if a == 0.0 {
        return (vec![], 0);
    }
    let s = match sig {
        None => format!("{a:e}"),
        Some(n) => format!("{:.*e}", n.max(1) - 1, a),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp + 1)
}

fn fmt_e(neg: bool, digits: &[u8], dp: i32, prec: usize, e: char) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push(digits.first().map_or('0', |&d| d as char));
    if prec > 0 {
        s.push('.');
        for i in 1..=prec {
            s.push(digits.get(i).map_or('0', |&d| d as char));
        }
    }
    s.push(e);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    s.push(if exp < 0 { '-' } else { '+' });
    let ea = exp.unsigned_abs();
    if ea < 10 {
        s.push('0');
    }
    s.push_str(&ea.to_string());
    s
}

fn fmt_f(neg: bool, digits: &[u8], dp: i32, prec: usize) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if dp > 0 {
        let dpu = dp as usize;
        for i in 0..dpu {
            s.push(digits.get(i).map_or('0', |&d| d as char));
        }
    } else {
        s.push('0');
    }
    if prec > 0 {
        s.push('.');
        for i in 1..=prec {
            let j = i64::from(dp) + i as i64 - 1;
            let c = if j >= 0 {
                digits.get(j as usize).map_or('0', |&d| d as char)
            } else {
                '0'
            };
            s.push(c);
        }
    }
    s
}

/// Go's `strconv.FormatFloat(x, verb, prec, 64)` for verbs e, E, f, F, g, G (`None` = shortest).
pub fn format_float(x: f64, verb: char, prec: Option<usize>) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let neg = x.is_sign_negative();
    match verb {
        'x' | 'X' if prec.is_none() => format_hex_float(x, verb == 'X'),
        'e' | 'E' => match prec {
            Some(p) => {
                let (d, dp) = decimal_digits(x, Some(p + 1));
                fmt_e(neg, &d, dp, p, verb)
            }
            None => {
                let (d, dp) = decimal_digits(x, None);
                fmt_e(neg, &d, dp, d.len().saturating_sub(1), verb)
            }
        },
        'f' | 'F' => match prec {
            Some(p) => {
                let s = format!("{:.*}", p, x.abs());
                if neg { format!("-{s}") } else { s }
            }
            None => {
                let (d, dp) = decimal_digits(x, None);
                let p = (d.len() as i32 - dp).max(0) as usize;
                fmt_f(neg, &d, dp, p)
            }
        },
        _ if prec.is_none() && x.fract() == 0.0 && (1.0..1e6).contains(&x.abs()) => {
            // Shortest %g of a whole number below 1e6 (ports and counts from JSON) is its
            // integer digits: the exponent is below the shortest-form threshold of 6, so no
            // exponent and no fraction. Skip the digit extraction.
            (x as i64).to_string()
        }
        _ => {
            let e = if verb == 'G' { 'E' } else { 'e' };
            let shortest = prec.is_none();
            let (d, dp) = match prec {
                None => decimal_digits(x, None),
                Some(p) => decimal_digits(x, Some(p.max(1))),
            };
            let mut p = match prec {
                None => d.len(),
                Some(p) => p.max(1),
            };
            let mut eprec = p as i32;
            if eprec > d.len() as i32 && d.len() as i32 >= dp {
                eprec = d.len() as i32;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            if d.is_empty() {
                // Zero.
                return fmt_f(neg, &d, 0, 0);
            }
            if exp < -4 || exp >= eprec {
                if p > d.len() {
                    p = d.len();
                }
                return fmt_e(neg, &d, dp, p.saturating_sub(1), e);
            }
            if p as i32 > dp {
                p = d.len();
            }
            fmt_f(neg, &d, dp, (p as i32 - dp).max(0) as usize)
        }
    }
}

/// Go's `%#U` of a rune, used in lexer errors: `U+0041 'A'`.
pub fn unicode_sharp_u(c: char) -> String {
    let mut s = format!("U+{:04X}", c as u32);
    if is_print(c) {
        s.push_str(&format!(" '{c}'"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(sprint(&[Value::Float(1e6)]), "1e+06");
        assert_eq!(sprint(&[Value::Float(0.5)]), "0.5");
        assert_eq!(sprint(&[Value::Float(123456.0)]), "123456");
        assert_eq!(sprint(&[Value::Float(999999.0)]), "999999");
        assert_eq!(sprint(&[Value::Float(-15001.0)]), "-15001");
        assert_eq!(sprint(&[Value::Float(1.0e6)]), "1e+06");
        assert_eq!(sprint(&[Value::Float(-0.0)]), "-0");
        assert_eq!(
            sprintf(
                "%G|%g|%.0g",
                &[Value::Float(100.0), Value::Float(1500.0), Value::Float(1500.0)]
            ),
            "100|1500|2e+03"
        );
        assert_eq!(sprint(&[Value::Float(1e-5)]), "1e-05");
        assert_eq!(sprint(&[Value::Float(1.0)]), "1");
        assert_eq!(sprint(&[Value::Float(123456789.0)]), "1.23456789e+08");
        assert_eq!(sprintf("%.2f", &[Value::Float(1.23456)]), "1.23");
        assert_eq!(sprintf("%e", &[Value::Float(1234.5678)]), "1.234568e+03");
        assert_eq!(sprintf("%.3g", &[Value::Float(1.0)]), "1");
        assert_eq!(sprintf("%g", &[Value::Float(0.0)]), "0");
        assert_eq!(sprintf("%6.2f|", &[Value::Float(1.23456)]), "  1.23|");
    }

    #[test]
    fn mistakes_like_go() {
        assert_eq!(sprintf("%d", &[Value::Float(3.0)]), "%!d(float64=3)");
        assert_eq!(sprintf("%d", &[]), "%!d(MISSING)");
        assert_eq!(
            sprintf("%d", &[Value::int(1), Value::str("x")]),
            "1%!(EXTRA string=x)"
        );
        assert_eq!(sprintf("%s", &[Value::Nil]), "%!s(<nil>)");
        assert_eq!(sprintf("%", &[]), "%!(NOVERB)");
    }

    #[test]
    fn ints_and_strings() {
        assert_eq!(
            sprintf(
                "%05d|%-4d|%x|%X|%o",
                &[
                    Value::int(-42),
                    Value::int(7),
                    Value::int(255),
                    Value::int(255),
                    Value::int(8)
                ]
            ),
            "-0042|7   |ff|FF|10"
        );
        assert_eq!(sprintf("%q", &[Value::str("a\"b\n")]), "\"a\\\"b\\n\"");
        assert_eq!(
            sprintf(
                "%5s|%-5s|%.2s",
                &[Value::str("ab"), Value::str("ab"), Value::str("abc")]
            ),
            "   ab|ab   |ab"
        );
        assert_eq!(
            sprint(&[Value::int(1), Value::int(2), Value::str("a"), Value::int(3)]),
            "1 2a3"
        );
        assert_eq!(sprintf("%c", &[Value::int(65)]), "A");
    }
}
