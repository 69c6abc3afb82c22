//! sprig's type conversion and math functions (`numeric.go`): `int`, `int64`, `float64`,
//! `atoi`, `toDecimal`, `add`, `sub`, `mul`, `div`, `mod`, `max`, `min`, `round`, `addf`, ...
//!
//! Conversions follow `spf13/cast` v1.7 (strings parsed with base prefixes, errors give 0).
//! The `*f` functions use `shopspring/decimal` in Go; here a small exact decimal does the same
//! for `+ - *`, and division keeps 16 fractional digits like `decimal.DivisionPrecision`.

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

use super::util::int_arg as int;
use super::util::{i64v, to_float64, to_int64};

/// An exact decimal: `mant * 10^-scale`.
#[derive(Debug, Clone, Copy)]
struct Dec {
    mant: i128,
    scale: u32,
}

impl Dec {
    fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e')?;
        let e: i32 = e.parse().ok()?;
        let neg = m.starts_with('-');
        let digits: String = m.chars().filter(char::is_ascii_digit).collect();
        let frac_len = m.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
        let mut mant: i128 = digits.parse().ok()?;
        let mut scale = frac_len - e;
        if scale < 0 {
            mant = mant.checked_mul(10i128.checked_pow((-scale) as u32)?)?;
            scale = 0;
        }
        if neg {
            mant = -mant;
        }
        Some(Dec {
            mant,
            scale: scale as u32,
        })
    }

    fn align(a: Dec, b: Dec) -> Option<(i128, i128, u32)> {
        let scale = a.scale.max(b.scale);
        let am = a.mant.checked_mul(10i128.checked_pow(scale - a.scale)?)?;
        let bm = b.mant.checked_mul(10i128.checked_pow(scale - b.scale)?)?;
        Some((am, bm, scale))
    }

    fn to_f64(self) -> f64 {
        let s = self.mant.unsigned_abs().to_string();
        let sc = self.scale as usize;
        let body = if sc == 0 {
            s
        } else if s.len() > sc {
            format!("{}.{}", &s[..s.len() - sc], &s[s.len() - sc..])
        } else {
            format!("0.{}{}", "0".repeat(sc - s.len()), s)
        };
        let v: f64 = body.parse().unwrap_or(0.0);
        if self.mant < 0 { -v } else { v }
    }
}

fn dec_op(a: &Value, rest: &[Value], op: char) -> f64 {
    let mut acc = to_float64(a);
    let mut dacc = Dec::from_f64(acc);
    for x in rest {
        let xf = to_float64(x);
        let dx = Dec::from_f64(xf);
        let exact = match (dacc, dx) {
            (Some(p), Some(q)) => match op {
                '+' | '-' => Dec::align(p, q).and_then(|(pm, qm, scale)| {
                    let mant = if op == '+' {
                        pm.checked_add(qm)?
                    } else {
                        pm.checked_sub(qm)?
                    };
                    Some(Dec { mant, scale })
                }),
                '*' => p.mant.checked_mul(q.mant).map(|mant| Dec {
                    mant,
                    scale: p.scale + q.scale,
                }),
                _ => div16(p, q),
            },
            _ => None,
        };
        match exact {
            Some(d) => {
                acc = d.to_f64();
                dacc = Some(d);
            }
            None => {
                acc = match op {
                    '+' => acc + xf,
                    '-' => acc - xf,
                    '*' => acc * xf,
                    _ => acc / xf,
                };
                dacc = Dec::from_f64(acc);
            }
        }
    }
    acc
}

fn div16(p: Dec, q: Dec) -> Option<Dec> {
    if q.mant == 0 {
        return None;
    }
    // p/q = (pm * 10^-ps) / (qm * 10^-qs); compute with 16 fractional digits, half away from 0.
    let target: u32 = 16;
    // result mantissa = pm * 10^(target + qs - ps) / qm
    let shift = i64::from(target) + i64::from(q.scale) - i64::from(p.scale);
    let (num, den) = if shift >= 0 {
        (p.mant.checked_mul(10i128.checked_pow(shift as u32)?)?, q.mant)
    } else {
        (p.mant, q.mant.checked_mul(10i128.checked_pow((-shift) as u32)?)?)
    };
    let quo = num / den;
    let rem = num % den;
    let mut mant = quo;
    if rem.unsigned_abs() * 2 >= den.unsigned_abs() {
        mant += if (num < 0) ^ (den < 0) { -1 } else { 1 };
    }
    Some(Dec { mant, scale: target })
}

fn ok_i64(n: i64) -> Result<Value, String> {
    Ok(i64v(n))
}

/// Registers the conversion and math functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "atoi",
        Func::new(&[Str], |a| {
            let s = a[0].as_str().unwrap_or("");
            let n = if s.starts_with(['+', '-']) || s.bytes().all(|b| b.is_ascii_digit()) {
                let (neg, digits) = match s.as_bytes().first() {
                    Some(b'-') => (true, &s[1..]),
                    Some(b'+') => (false, &s[1..]),
                    _ => (false, s),
                };
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    digits
                        .parse::<i64>()
                        .map(|n| if neg { -n } else { n })
                        .unwrap_or(0)
                } else {
                    0
                }
            } else {
                0
            };
            Ok(Value::int(n))
        }),
    );
    m.insert("int64", Func::new(&[Any], |a| ok_i64(to_int64(&a[0]))));
    m.insert("int", Func::new(&[Any], |a| Ok(Value::int(to_int64(&a[0])))));
    m.insert(
        "float64",
        Func::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0])))),
    );
    m.insert(
        "toDecimal",
        Func::new(&[Any], |a| {
            let s = super::util::strval(&a[0]);
            let s = if matches!(a[0], Value::Nil | Value::Missing) {
                "<nil>".to_string()
            } else {
                s
            };
            let (neg, body) = match s.as_bytes().first() {
                Some(b'-') => (true, &s[1..]),
                Some(b'+') => (false, &s[1..]),
                _ => (false, s.as_str()),
            };
            let n = if !body.is_empty() && body.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                i64::from_str_radix(body, 8)
                    .map(|n| if neg { -n } else { n })
                    .unwrap_or(0)
            } else {
                0
            };
            ok_i64(n)
        }),
    );
    m.insert(
        "add1",
        Func::new(&[Any], |a| ok_i64(to_int64(&a[0]).wrapping_add(1))),
    );
    m.insert(
        "add",
        Func::variadic(&[], Any, |a| {
            ok_i64(a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))))
        }),
    );
    m.insert(
        "sub",
        Func::new(&[Any, Any], |a| {
            ok_i64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1])))
        }),
    );
    m.insert(
        "div",
        Func::new(&[Any, Any], |a| {
            let d = to_int64(&a[1]);
            if d == 0 {
                return Err("runtime error: integer divide by zero".into());
            }
            ok_i64(to_int64(&a[0]).wrapping_div(d))
        }),
    );
    m.insert(
        "mod",
        Func::new(&[Any, Any], |a| {
            let d = to_int64(&a[1]);
            if d == 0 {
                return Err("runtime error: integer divide by zero".into());
            }
            ok_i64(to_int64(&a[0]).wrapping_rem(d))
        }),
    );
    m.insert(
        "mul",
        Func::variadic(&[Any], Any, |a| {
            ok_i64(
                a[1..]
                    .iter()
                    .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
            )
        }),
    );
    for name in ["max", "biggest"] {
        m.insert(
            name,
            Func::variadic(&[Any], Any, |a| {
                ok_i64(a[1..].iter().fold(to_int64(&a[0]), |acc, v| acc.max(to_int64(v))))
            }),
        );
    }
    m.insert(
        "min",
        Func::variadic(&[Any], Any, |a| {
            ok_i64(a[1..].iter().fold(to_int64(&a[0]), |acc, v| acc.min(to_int64(v))))
        }),
    );
    m.insert(
        "maxf",
        Func::variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |acc, v| go_max(acc, to_float64(v))),
            ))
        }),
    );
    m.insert(
        "minf",
        Func::variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |acc, v| go_min(acc, to_float64(v))),
            ))
        }),
    );
    m.insert(
        "ceil",
        Func::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).ceil()))),
    );
    m.insert(
        "floor",
        Func::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).floor()))),
    );
    m.insert(
        "round",
        Func::variadic(&[Any, Int], Float64, |a| {
            let round_on = match a.get(2) {
                Some(Value::Float(f)) => *f,
                _ => 0.5,
            };
            let val = to_float64(&a[0]);
            let pow = 10f64.powf(int(&a[1]) as f64);
            let digit = pow * val;
            let frac = digit.fract();
            let r = if frac >= round_on {
                digit.ceil()
            } else {
                digit.floor()
            };
            Ok(Value::Float(r / pow))
        }),
    );
    m.insert(
        "add1f",
        Func::new(&[Any], |a| Ok(Value::Float(dec_op(&a[0], &[Value::int(1)], '+')))),
    );
    m.insert(
        "addf",
        Func::variadic(&[], Any, |a| Ok(Value::Float(dec_op(&Value::Float(0.0), a, '+')))),
    );
    m.insert(
        "subf",
        Func::variadic(&[Any], Any, |a| Ok(Value::Float(dec_op(&a[0], &a[1..], '-')))),
    );
    m.insert(
        "mulf",
        Func::variadic(&[Any], Any, |a| Ok(Value::Float(dec_op(&a[0], &a[1..], '*')))),
    );
    m.insert(
        "divf",
        Func::variadic(&[Any], Any, |a| {
            if a[1..].iter().any(|v| to_float64(v) == 0.0) {
                return Err("decimal division by 0".into());
            }
            Ok(Value::Float(dec_op(&a[0], &a[1..], '/')))
        }),
    );
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.max(b)
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.min(b)
}
