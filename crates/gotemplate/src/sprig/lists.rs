//! sprig's list functions (`list.go`): `list`, `append`, `first`, `uniq`, `has`, `slice`, ...
//!
//! The non-`must` variants panic in Go; the template engine turns that into
//! `error calling NAME: MESSAGE`, which is what returning `Err` gives here too.

use std::sync::Arc;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::{List, Value};

use super::util::{deep_equal, empty, kind_of, to_int64};

fn items<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    match v {
        Value::Nil | Value::Missing => Err(NIL_DEREF.into()),
        Value::List(l) => Ok(&l.items),
        v => Err(format!("Cannot {what} on type {}", kind_name_for_err(v))),
    }
}

/// Go's panic text when sprig calls `reflect.TypeOf(nil).Kind()`.
const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

fn kind_name_for_err(v: &Value) -> &'static str {
    kind_of(v)
}

fn any_list(items: Vec<Value>) -> Value {
    Value::list(items)
}

fn same_list(like: &Value, items: Vec<Value>) -> Value {
    match like {
        Value::List(l) => Value::List(Arc::new(List { elem: l.elem, items })),
        _ => Value::list(items),
    }
}

fn push(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "push")?;
    let mut v = l.to_vec();
    v.push(a[1].clone());
    Ok(any_list(v))
}

fn prepend(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "prepend")?;
    let mut v = vec![a[1].clone()];
    v.extend_from_slice(l);
    Ok(any_list(v))
}

fn chunk(size: i64, list: &Value) -> Result<Value, String> {
    let l = match list {
        Value::Nil | Value::Missing => return Err(NIL_DEREF.into()),
        Value::List(l) => &l.items,
        v => return Err(format!("Cannot chunk type {}", kind_of(v))),
    };
    if size <= 0 {
        return Err("runtime error: makeslice: len out of range".into());
    }
    let size = size as usize;
    let out: Vec<Value> = l.chunks(size).map(|c| any_list(c.to_vec())).collect();
    Ok(Value::List(Arc::new(List {
        elem: crate::value::ElemType::Any,
        items: out,
    })))
}

/// A list function body.
type ListFn = fn(&[Value]) -> Result<Value, String>;

fn first(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find first")?;
    Ok(l.first().cloned().unwrap_or(Value::Nil))
}

fn last(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find last")?;
    Ok(l.last().cloned().unwrap_or(Value::Nil))
}

fn rest(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find rest")?;
    Ok(any_list(l.get(1..).unwrap_or(&[]).to_vec()))
}

fn initial(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find initial")?;
    Ok(any_list(
        l.get(..l.len().saturating_sub(1)).unwrap_or(&[]).to_vec(),
    ))
}

fn reverse(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find reverse")?;
    let mut v = l.to_vec();
    v.reverse();
    Ok(any_list(v))
}

fn compact(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "compact")?;
    Ok(any_list(l.iter().filter(|v| !empty(v)).cloned().collect()))
}

fn uniq(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find uniq")?;
    let mut out: Vec<Value> = vec![];
    for v in l {
        if !out.iter().any(|o| deep_equal(o, v)) {
            out.push(v.clone());
        }
    }
    Ok(any_list(out))
}

fn without(a: &[Value]) -> Result<Value, String> {
    let l = items(&a[0], "find without")?;
    let omit = &a[1..];
    Ok(any_list(
        l.iter()
            .filter(|v| !omit.iter().any(|o| deep_equal(o, v)))
            .cloned()
            .collect(),
    ))
}

fn has(a: &[Value]) -> Result<Value, String> {
    let hay = &a[1];
    if matches!(hay, Value::Nil | Value::Missing) {
        return Ok(Value::Bool(false));
    }
    let l = items(hay, "find has")?;
    Ok(Value::Bool(l.iter().any(|v| deep_equal(&a[0], v))))
}

fn slice(a: &[Value]) -> Result<Value, String> {
    let list = &a[0];
    let l = match list {
        Value::List(l) => &l.items,
        Value::Nil | Value::Missing => return Err(NIL_DEREF.into()),
        v => {
            return Err(format!(
                "list should be type of slice or array but {}",
                kind_of(v)
            ));
        }
    };
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    let mut start = 0i64;
    let mut end = l.len() as i64;
    if let Some(s) = a.get(1) {
        start = to_int64(s);
    }
    if let Some(e) = a.get(2) {
        end = to_int64(e);
    }
    if start < 0 || end < start || end > l.len() as i64 {
        return Err("reflect.Value.Slice: slice index out of bounds".into());
    }
    Ok(same_list(list, l[start as usize..end as usize].to_vec()))
}

fn concat(a: &[Value]) -> Result<Value, String> {
    let mut out = vec![];
    for l in a {
        match l {
            Value::List(l) => out.extend(l.items.iter().cloned()),
            Value::Nil | Value::Missing => return Err(NIL_DEREF.into()),
            v => return Err(format!("Cannot concat type {} as list", kind_of(v))),
        }
    }
    Ok(any_list(out))
}

/// Registers the list functions.
pub fn register(m: &mut FuncMap) {
    for name in ["list", "tuple"] {
        m.insert(name, Func::variadic(&[], Any, |a| Ok(any_list(a.to_vec()))));
    }
    let pairs: [(&str, &str, usize, ListFn); 12] = [
        ("append", "mustAppend", 2, push),
        ("push", "mustPush", 2, push),
        ("prepend", "mustPrepend", 2, prepend),
        ("first", "mustFirst", 1, first),
        ("last", "mustLast", 1, last),
        ("rest", "mustRest", 1, rest),
        ("initial", "mustInitial", 1, initial),
        ("reverse", "mustReverse", 1, reverse),
        ("compact", "mustCompact", 1, compact),
        ("uniq", "mustUniq", 1, uniq),
        ("has", "mustHas", 2, has),
        ("chunk", "mustChunk", 2, |a| {
            chunk(
                match &a[0] {
                    Value::Int(n, _) => *n,
                    _ => 0,
                },
                &a[1],
            )
        }),
    ];
    for (name, must_name, arity, f) in pairs {
        let params: Vec<crate::funcs::ArgType> = if name == "chunk" {
            vec![Int, Any]
        } else {
            vec![Any; arity]
        };
        let func = Func::new(&params, f);
        // Both `append` and `push` are sprig's `push`.
        let func = if name == "append" || name == "push" {
            func.appending()
        } else {
            func
        };
        m.insert(name, func.clone());
        m.insert(must_name, func);
    }
    m.insert("without", Func::variadic(&[Any], Any, without));
    m.insert("mustWithout", Func::variadic(&[Any], Any, without));
    m.insert("slice", Func::variadic(&[Any], Any, slice));
    m.insert("mustSlice", Func::variadic(&[Any], Any, slice));
    m.insert("concat", Func::variadic(&[], Any, concat));
    m.insert(
        "until",
        Func::new(&[Int], |a| {
            let n = match &a[0] {
                Value::Int(n, _) => *n,
                _ => 0,
            };
            until_step(0, n, if n < 0 { -1 } else { 1 })
        }),
    );
    m.insert(
        "untilStep",
        Func::new(&[Int, Int, Int], |a| {
            let g = |v: &Value| match v {
                Value::Int(n, _) => *n,
                _ => 0,
            };
            until_step(g(&a[0]), g(&a[1]), g(&a[2]))
        }),
    );
}

fn int_list(items: Vec<Value>) -> Value {
    Value::List(Arc::new(List {
        elem: crate::value::ElemType::Int,
        items,
    }))
}

/// sprig's `untilStep` (a `[]int`).
pub fn until_step(start: i64, stop: i64, step: i64) -> Result<Value, String> {
    let any_list = int_list;
    let mut v = vec![];
    if step == 0 {
        return Ok(any_list(v));
    }
    if (stop - start).unsigned_abs() / step.unsigned_abs() > 1_000_000 {
        return Err("runtime error: makeslice: len out of range".into());
    }
    let mut i = start;
    if step > 0 {
        if stop < start {
            return Ok(any_list(v));
        }
        while i < stop {
            v.push(Value::int(i));
            i += step;
        }
    } else {
        if stop > start {
            return Ok(any_list(v));
        }
        while i > stop {
            v.push(Value::int(i));
            i += step;
        }
    }
    Ok(any_list(v))
}
