//! sprig's dictionary functions (`dict.go`): `dict`, `get`, `set`, `hasKey`, `pick`, `merge`, ...
//!
//! Go maps are reference types and sprig's `set`/`unset`/`merge` mutate their argument; so do
//! these (see [`crate::value::Map`]).

use std::collections::BTreeMap;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::{ElemType, Value};

use super::util::str_arg as s;
use super::util::{strval, type_of};

fn dict_of(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Map(m) => m.snapshot(),
        _ => BTreeMap::new(),
    }
}

/// The dynamic type as Go's interface-conversion panic names it (`nil` for nil).
fn iface_type(v: &Value) -> String {
    match v {
        Value::Nil | Value::Missing => "nil".into(),
        v => type_of(v),
    }
}

fn merge_into(dst: &mut BTreeMap<String, Value>, src: &BTreeMap<String, Value>, overwrite: bool) {
    for (k, v) in src {
        // mergo skips nil source values.
        if matches!(v, Value::Nil | Value::Missing) {
            continue;
        }
        match dst.get_mut(k) {
            None => {
                dst.insert(k.clone(), v.clone());
            }
            Some(existing) => {
                if let (Value::Map(a), Value::Map(b)) = (&*existing, v) {
                    let mut merged = a.snapshot();
                    merge_into(&mut merged, &b.snapshot(), overwrite);
                    *existing = Value::map(merged);
                } else if overwrite || super::util::empty(existing) {
                    *existing = v.clone();
                }
            }
        }
    }
}

fn merge(a: &[Value], overwrite: bool) -> Result<Value, String> {
    let mut dst = dict_of(&a[0]);
    for src in &a[1..] {
        merge_into(&mut dst, &dict_of(src), overwrite);
    }
    match &a[0] {
        Value::Map(m) => {
            m.replace(dst);
            Ok(a[0].clone())
        }
        _ => Ok(Value::map(dst)),
    }
}

/// Registers the dictionary functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "dict",
        Func::variadic(&[], Any, |a| {
            let mut d = BTreeMap::new();
            for pair in a.chunks(2) {
                let key = strval(&pair[0]);
                let val = pair.get(1).cloned().unwrap_or_else(|| Value::str(""));
                d.insert(key, val);
            }
            Ok(Value::map(d))
        }),
    );
    m.insert(
        "get",
        Func::new(&[AnyMap, Str], |a| {
            Ok(dict_of(&a[0])
                .get(s(&a[1]))
                .cloned()
                .unwrap_or_else(|| Value::str("")))
        }),
    );
    m.insert(
        "set",
        Func::new(&[AnyMap, Str, Any], |a| {
            if let Value::Map(m) = &a[0] {
                m.insert(s(&a[1]).to_string(), a[2].clone());
            }
            Ok(a[0].clone())
        })
        .writing_maps(),
    );
    m.insert(
        "unset",
        Func::new(&[AnyMap, Str], |a| {
            if let Value::Map(m) = &a[0] {
                m.remove(s(&a[1]));
            }
            Ok(a[0].clone())
        })
        .writing_maps(),
    );
    m.insert(
        "hasKey",
        Func::new(&[AnyMap, Str], |a| {
            Ok(Value::Bool(dict_of(&a[0]).contains_key(s(&a[1]))))
        }),
    );
    m.insert(
        "pluck",
        Func::variadic(&[Str], AnyMap, |a| {
            let key = s(&a[0]);
            Ok(Value::list(
                a[1..]
                    .iter()
                    .filter_map(|d| dict_of(d).get(key).cloned())
                    .collect(),
            ))
        }),
    );
    m.insert(
        "keys",
        Func::variadic(&[], AnyMap, |a| {
            let mut out = vec![];
            for d in a {
                out.extend(dict_of(d).into_keys().map(Value::str));
            }
            Ok(Value::string_list(out))
        }),
    );
    m.insert(
        "values",
        Func::new(&[AnyMap], |a| {
            Ok(Value::list(dict_of(&a[0]).into_values().collect()))
        }),
    );
    m.insert(
        "pick",
        Func::variadic(&[AnyMap], Str, |a| {
            let d = dict_of(&a[0]);
            let mut out = BTreeMap::new();
            for k in &a[1..] {
                if let Some(v) = d.get(s(k)) {
                    out.insert(s(k).to_string(), v.clone());
                }
            }
            Ok(Value::map(out))
        }),
    );
    m.insert(
        "omit",
        Func::variadic(&[AnyMap], Str, |a| {
            let mut d = dict_of(&a[0]);
            for k in &a[1..] {
                d.remove(s(k));
            }
            Ok(Value::map(d))
        }),
    );
    m.insert(
        "merge",
        Func::variadic(&[AnyMap], AnyMap, |a| merge(a, false)).writing_maps(),
    );
    m.insert(
        "mustMerge",
        Func::variadic(&[AnyMap], AnyMap, |a| merge(a, false)).writing_maps(),
    );
    m.insert(
        "mergeOverwrite",
        Func::variadic(&[AnyMap], AnyMap, |a| merge(a, true)).writing_maps(),
    );
    m.insert(
        "mustMergeOverwrite",
        Func::variadic(&[AnyMap], AnyMap, |a| merge(a, true)).writing_maps(),
    );
    m.insert(
        "dig",
        Func::variadic(&[], Any, |a| {
            if a.len() < 3 {
                return Err("dig needs at least three arguments".into());
            }
            let dict = &a[a.len() - 1];
            let default = &a[a.len() - 2];
            let keys = &a[..a.len() - 2];
            // Like sprig: every key must be a string before the dict is looked at.
            if let Some(k) = keys.iter().find(|k| k.as_str().is_none()) {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    iface_type(k)
                ));
            }
            let mut cur = match dict {
                Value::Map(_) => dict.clone(),
                v => {
                    return Err(format!(
                        "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                        iface_type(v)
                    ));
                }
            };
            for (i, k) in keys.iter().enumerate() {
                let Some(key) = k.as_str() else {
                    return Err(format!(
                        "interface conversion: interface {{}} is {}, not string",
                        iface_type(k)
                    ));
                };
                let next = match &cur {
                    Value::Map(m) => m.get(key),
                    _ => None,
                };
                match next {
                    None => return Ok(default.clone()),
                    Some(v) => {
                        if i + 1 < keys.len() && !matches!(&v, Value::Map(m) if m.elem == ElemType::Any) {
                            return Err(format!(
                                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                                iface_type(&v)
                            ));
                        }
                        cur = v;
                    }
                }
            }
            Ok(cur)
        }),
    );
}
