//! Number constants: Go's `parse.NumberNode` construction (`newNumber`), which records every
//! type a literal can represent, simulating Go's ideal constants.

use super::node::NumberNode;
use super::strconv;
use crate::lex::ItemType;

/// Builds a number node from a lexed literal, with Go's error texts.
pub fn new_number(pos: usize, text: &str, typ: ItemType) -> Result<NumberNode, String> {
    let mut n = NumberNode {
        pos,
        text: text.to_string(),
        ..NumberNode::default()
    };
    match typ {
        ItemType::CharConstant => {
            let inner = text.get(1..).unwrap_or("");
            let (v, _, tail) = strconv::unquote_char(inner, '\'').map_err(|e| e.to_string())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            n.int64 = i64::from(v);
            n.is_int = true;
            n.uint64 = u64::from(v);
            n.is_uint = true;
            n.float64 = f64::from(v);
            n.is_float = true;
            return Ok(n);
        }
        ItemType::Complex => {
            // "a+bi": only the real part matters unless the imaginary part is non-zero.
            let split = text
                .char_indices()
                .skip(1)
                .filter(|&(i, c)| {
                    (c == '+' || c == '-')
                        && !matches!(text.as_bytes().get(i - 1), Some(b'e' | b'E' | b'p' | b'P'))
                })
                .map(|(i, _)| i)
                .last();
            let (re, im) = match split {
                Some(i) => (text.get(..i).unwrap_or(""), text.get(i..).unwrap_or("")),
                None => {
                    return Err(format!(
                        "illegal number syntax: {}",
                        gocompat::strconv::quote(text)
                    ));
                }
            };
            let re = strconv::parse_float(re);
            let im = im.strip_suffix('i').and_then(strconv::parse_float);
            let (Some(re), Some(im)) = (re, im) else {
                return Err("expected integer".to_string());
            };
            n.is_complex = true;
            simplify_complex(&mut n, re, im);
            return Ok(n);
        }
        _ => {}
    }
    if let Some(body) = text.strip_suffix('i')
        && let Some(f) = strconv::parse_float(body)
    {
        n.is_complex = true;
        simplify_complex(&mut n, 0.0, f);
        return Ok(n);
    }
    let u = strconv::parse_uint(text);
    if let Some(u) = u {
        n.is_uint = true;
        n.uint64 = u;
    }
    if let Some(i) = strconv::parse_int(text) {
        n.is_int = true;
        n.int64 = i;
        if i == 0 {
            n.is_uint = true;
            n.uint64 = u.unwrap_or(0);
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float64 = n.int64 as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float64 = n.uint64 as f64;
    } else if let Some(f) = strconv::parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", gocompat::strconv::quote(text)));
        }
        n.is_float = true;
        n.float64 = f;
        if f.fract() == 0.0 && (-9.223372036854776e18..9.223372036854776e18).contains(&f) {
            n.is_int = true;
            n.int64 = f as i64;
        }
        if f.fract() == 0.0 && (0.0..1.8446744073709552e19).contains(&f) {
            n.is_uint = true;
            n.uint64 = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!(
            "illegal number syntax: {}",
            gocompat::strconv::quote(text)
        ));
    }
    Ok(n)
}

fn simplify_complex(n: &mut NumberNode, re: f64, im: f64) {
    n.complex = (re, im);
    n.is_float = im == 0.0;
    if n.is_float {
        n.float64 = re;
        n.is_int = re.fract() == 0.0 && re.abs() < 9.2e18;
        if n.is_int {
            n.int64 = re as i64;
        }
        n.is_uint = re.fract() == 0.0 && (0.0..1.8e19).contains(&re);
        if n.is_uint {
            n.uint64 = re as u64;
        }
    }
}
