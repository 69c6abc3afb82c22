//! Map helpers: `isset`, `omit` (Istio's, on `map[string]string`), `strdict`, `mergeMaps`,
//! `toJsonMap`, `toJSON` (sprig's `toJson` is not overridden), and the value helpers `valueOrDefault` and `omitNil`.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotemplate::{ArgType, Func, FuncMap, List, Map, Value};

use super::arg_str;
use crate::render::json::go_json;

pub(crate) fn register(m: &mut FuncMap) {
    use ArgType::{Any, Str, StringMap};
    m.insert(
        "isset",
        Func::new(&[StringMap, Str], |a| {
            // One key looked up, not the whole map: the render cache keys on what was read.
            Ok(Value::Bool(match &a[0] {
                Value::Map(m) => m.contains_key(arg_str(&a[1])),
                _ => false,
            }))
        }),
    );
    m.insert(
        "omit",
        Func::variadic(&[StringMap], Str, |a| {
            let mut out = entries(&a[0]).unwrap_or_default();
            for key in &a[1..] {
                out.remove(arg_str(key));
            }
            Ok(Value::string_map(out))
        }),
    );
    m.insert(
        "strdict",
        Func::variadic(&[], Str, |a| {
            let mut out = BTreeMap::new();
            for pair in a.chunks(2) {
                let value = pair.get(1).cloned().unwrap_or_else(|| Value::str(""));
                out.insert(arg_str(&pair[0]).to_string(), value);
            }
            Ok(Value::string_map(out))
        }),
    );
    m.insert(
        "mergeMaps",
        Func::variadic(&[], StringMap, |a| Ok(Value::string_map(merge(a)))),
    );
    m.insert(
        "toJsonMap",
        Func::variadic(&[], StringMap, |a| {
            if a.is_empty() {
                return Ok(Value::str("null"));
            }
            Ok(Value::str(
                go_json(&Value::string_map(merge(a))).unwrap_or_default(),
            ))
        }),
    );
    // Only `toJSON`: Istio no longer overrides sprig's `toJson`.
    m.insert(
        "toJSON",
        Func::new(&[StringMap], |a| {
            Ok(Value::str(go_json(&a[0]).unwrap_or_else(|_| "{}".into())))
        }),
    );
    m.insert(
        "valueOrDefault",
        Func::new(&[Any, Any], |a| {
            Ok(match &a[0] {
                Value::Nil | Value::Missing => a[1].clone(),
                Value::String(s) if s.is_empty() => a[1].clone(),
                v => v.clone(),
            })
        }),
    );
    m.insert(
        "omitNil",
        Func::new(&[Any], |a| Ok(omit_nil(&a[0]).unwrap_or(Value::Nil))),
    );
}

fn entries(v: &Value) -> Option<BTreeMap<String, Value>> {
    match v {
        Value::Map(m) => Some(m.snapshot()),
        _ => None,
    }
}

fn merge(maps: &[Value]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for m in maps {
        if let Some(e) = entries(m) {
            out.extend(e);
        }
    }
    out
}

/// Istio's `omitNil`: drops nil map values and list elements, recursively; a container that
/// becomes empty *because of* removals becomes nil (`None`) and is dropped from its parent.
pub fn omit_nil(v: &Value) -> Option<Value> {
    match v {
        Value::Nil | Value::Missing => None,
        Value::Map(m) => {
            let mut removed = false;
            let mut out = BTreeMap::new();
            for (k, item) in &m.pairs() {
                match omit_nil(item) {
                    Some(x) => {
                        out.insert(k.clone(), x);
                    }
                    None => removed = true,
                }
            }
            if removed && out.is_empty() {
                return None;
            }
            Some(Value::Map(Arc::new(Map::new(m.elem, out))))
        }
        Value::List(l) => {
            let items: Vec<Value> = l.items.iter().filter_map(omit_nil).collect();
            if items.is_empty() && !l.items.is_empty() {
                return None;
            }
            Some(Value::List(Arc::new(List { elem: l.elem, items })))
        }
        v => Some(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omit_nil_rules() {
        let v = Value::from_json(&serde_json::json!(
            {"a": null, "b": {"c": null}, "d": {}, "e": [null, 1], "f": [null], "g": [], "h": 0}
        ));
        let out = omit_nil(&v).map(|v| go_json(&v));
        assert_eq!(out, Some(Ok(r#"{"d":{},"e":[1],"g":[],"h":0}"#.to_string())));
        assert!(omit_nil(&Value::from_json(&serde_json::json!({"a": null}))).is_none());
    }
}
