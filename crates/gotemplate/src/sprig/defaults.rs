//! sprig's defaults, JSON and reflection functions (`defaults.go`, `reflect.go`): `default`,
//! `empty`, `coalesce`, `ternary`, `toJson`, `fromJson`, `typeOf`, `kindIs`, `deepEqual`, ...

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

use super::util::str_arg as s;
use super::util::{JsonOpts, deep_equal, empty, from_json, kind_of, to_json, type_of};

const PLAIN: JsonOpts = JsonOpts {
    escape_html: true,
    pretty: false,
};
const PRETTY: JsonOpts = JsonOpts {
    escape_html: true,
    pretty: true,
};
const RAW: JsonOpts = JsonOpts {
    escape_html: false,
    pretty: false,
};

/// Registers the defaults, JSON and reflection functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "default",
        Func::variadic(&[Any], Any, |a| {
            let given = &a[1..];
            match given.first() {
                Some(g) if !empty(g) => Ok(g.clone()),
                _ => Ok(a[0].clone()),
            }
        }),
    );
    m.insert("empty", Func::new(&[Any], |a| Ok(Value::Bool(empty(&a[0])))));
    m.insert(
        "coalesce",
        Func::variadic(&[], Any, |a| {
            Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
        }),
    );
    m.insert(
        "all",
        Func::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().all(|v| !empty(v))))),
    );
    m.insert(
        "any",
        Func::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().any(|v| !empty(v))))),
    );
    m.insert(
        "ternary",
        Func::new(&[Any, Any, Bool], |a| {
            Ok(if matches!(a[2], Value::Bool(true)) {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    m.insert(
        "fromJson",
        Func::new(&[Str], |a| Ok(from_json(s(&a[0])).unwrap_or(Value::Nil))),
    );
    m.insert("mustFromJson", Func::new(&[Str], |a| from_json(s(&a[0]))));
    m.insert(
        "toJson",
        Func::new(&[Any], |a| {
            Ok(Value::str(to_json(&a[0], PLAIN).unwrap_or_default()))
        }),
    );
    m.insert(
        "mustToJson",
        Func::new(&[Any], |a| to_json(&a[0], PLAIN).map(Value::str)),
    );
    m.insert(
        "toPrettyJson",
        Func::new(&[Any], |a| {
            Ok(Value::str(to_json(&a[0], PRETTY).unwrap_or_default()))
        }),
    );
    m.insert(
        "mustToPrettyJson",
        Func::new(&[Any], |a| to_json(&a[0], PRETTY).map(Value::str)),
    );
    m.insert(
        "toRawJson",
        Func::new(&[Any], |a| {
            Ok(Value::str(to_json(&a[0], RAW).unwrap_or_default()))
        }),
    );
    m.insert(
        "mustToRawJson",
        Func::new(&[Any], |a| to_json(&a[0], RAW).map(Value::str)),
    );
    for name in ["deepCopy", "mustDeepCopy"] {
        m.insert(
            name,
            Func::new(&[Any], |a| match &a[0] {
                Value::Nil | Value::Missing => {
                    Err("reflect: call of reflect.Value.Type on zero Value".into())
                }
                v => Ok(super::util::deep_copy(v)),
            }),
        );
    }
    m.insert("typeOf", Func::new(&[Any], |a| Ok(Value::str(type_of(&a[0])))));
    m.insert(
        "typeIs",
        Func::new(&[Str, Any], |a| Ok(Value::Bool(s(&a[0]) == type_of(&a[1])))),
    );
    m.insert(
        "typeIsLike",
        Func::new(&[Str, Any], |a| {
            let t = type_of(&a[1]);
            Ok(Value::Bool(s(&a[0]) == t || format!("*{}", s(&a[0])) == t))
        }),
    );
    m.insert("kindOf", Func::new(&[Any], |a| Ok(Value::str(kind_of(&a[0])))));
    m.insert(
        "kindIs",
        Func::new(&[Str, Any], |a| Ok(Value::Bool(s(&a[0]) == kind_of(&a[1])))),
    );
    m.insert(
        "deepEqual",
        Func::new(&[Any, Any], |a| Ok(Value::Bool(deep_equal(&a[0], &a[1])))),
    );
    m.insert("fail", Func::new(&[Str], |a| Err(s(&a[0]).to_string())));
}
