//! Functions: the registry types and Go's built-in functions (`funcs.go`).
//!
//! A [`Func`] declares Go-like parameter types so the executor can apply Go's argument rules
//! (constants are converted to the parameter type, `wrong type for value; expected int; got
//! float64`, `wrong number of args for X: want N got M`) before calling the Rust closure.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::fmt as gofmt;
use crate::value::{ElemType, List, UintType, Value};

/// The Go type of a function parameter, which decides how arguments are converted and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// `interface{}`: anything; a missing value arrives as [`Value::Nil`].
    Any,
    /// `reflect.Value` (built-ins): anything; a missing value arrives as [`Value::Missing`].
    Reflect,
    /// `string`
    Str,
    /// `int`
    Int,
    /// `int64`
    Int64,
    /// `uint32` (sprig's `derivePassword` counter)
    Uint32,
    /// `time.Time` (sprig's date functions), a [`crate::gotime::GoTime`] object
    Time,
    /// A host object type by its Go name (sprig's `certificate` struct): the value's
    /// [`crate::Object::type_name`] must match.
    Named(&'static str),
    /// `float64`
    Float64,
    /// `bool`
    Bool,
    /// `[]string`
    StringSlice,
    /// `[]interface{}`
    AnySlice,
    /// `map[string]interface{}`
    AnyMap,
    /// `map[string]string`
    StringMap,
}

impl ArgType {
    /// The Go spelling, as error messages print it.
    pub fn go_name(self) -> &'static str {
        match self {
            ArgType::Any => "interface {}",
            ArgType::Reflect => "reflect.Value",
            ArgType::Str => "string",
            ArgType::Int => "int",
            ArgType::Int64 => "int64",
            ArgType::Uint32 => "uint32",
            ArgType::Time => "time.Time",
            ArgType::Named(name) => name,
            ArgType::Float64 => "float64",
            ArgType::Bool => "bool",
            ArgType::StringSlice => "[]string",
            ArgType::AnySlice => "[]interface {}",
            ArgType::AnyMap => "map[string]interface {}",
            ArgType::StringMap => "map[string]string",
        }
    }

    /// Whether Go's `canBeNil` holds (nil can be assigned).
    pub fn can_be_nil(self) -> bool {
        matches!(
            self,
            ArgType::Any
                | ArgType::Reflect
                | ArgType::StringSlice
                | ArgType::AnySlice
                | ArgType::AnyMap
                | ArgType::StringMap
        )
    }

    /// The zero value of a nil-able type.
    pub fn zero(self) -> Value {
        match self {
            ArgType::Reflect => Value::Missing,
            ArgType::StringSlice => Value::List(Arc::new(List {
                elem: ElemType::String,
                items: vec![],
            })),
            ArgType::AnySlice => Value::list(vec![]),
            ArgType::AnyMap => Value::map(Default::default()),
            ArgType::StringMap => Value::string_map(Default::default()),
            _ => Value::Nil,
        }
    }
}

/// The body of a function: receives the converted arguments; an `Err` becomes Go's
/// `error calling NAME: MESSAGE`.
pub type FuncBody = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// A template function with its Go signature.
#[derive(Clone)]
pub struct Func {
    /// Fixed parameter types.
    pub params: Vec<ArgType>,
    /// The element type of a final `...` parameter.
    pub variadic: Option<ArgType>,
    /// The implementation.
    pub body: Arc<FuncBody>,
    /// Whether this is sprig's `append` (`push`): its result is a `[]interface{}` of its first
    /// argument's items then its second argument. The executor may then extend a list in place
    /// (see `State::append_in_place`).
    pub(crate) appends: bool,
    /// Whether the function may write into a map it is given ([`Func::writing_maps`]).
    pub(crate) writes_maps: bool,
}

impl std::fmt::Debug for Func {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Func")
            .field("params", &self.params)
            .field("variadic", &self.variadic)
            .finish_non_exhaustive()
    }
}

impl Func {
    /// A function with fixed parameters.
    pub fn new(
        params: &[ArgType],
        body: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Func {
        Func {
            params: params.to_vec(),
            variadic: None,
            body: Arc::new(body),
            appends: false,
            writes_maps: false,
        }
    }

    /// A variadic function: `params` then any number of `rest`.
    pub fn variadic(
        params: &[ArgType],
        rest: ArgType,
        body: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Func {
        Func {
            params: params.to_vec(),
            variadic: Some(rest),
            body: Arc::new(body),
            appends: false,
            writes_maps: false,
        }
    }

    /// The same function, marked as one that may write into a map it is given (as sprig's
    /// `set`, `unset`, `merge` do): [`crate::Template::may_write_maps`] tells whether a template
    /// calls such a function. Mark every host function that does.
    pub fn writing_maps(self) -> Func {
        Func {
            writes_maps: true,
            ..self
        }
    }

    /// Whether the function may write into a map it is given ([`Func::writing_maps`]).
    pub fn writes_maps(&self) -> bool {
        self.writes_maps
    }

    /// The same function, marked as sprig's `append` ([`Func::appends`]).
    pub(crate) fn appending(self) -> Func {
        Func {
            appends: true,
            ..self
        }
    }
}

/// FNV-1a: function names are short and trusted (they come from the host, not from input),
/// so a fast non-keyed hash is fine; lookups happen on every function call.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A set of named functions (Go's `FuncMap`). Later insertions override earlier ones.
#[derive(Debug, Clone, Default)]
pub struct FuncMap {
    map: HashMap<String, Func, std::hash::BuildHasherDefault<Fnv>>,
}

impl FuncMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a function.
    pub fn insert(&mut self, name: impl Into<String>, f: Func) -> &mut Self {
        self.map.insert(name.into(), f);
        self
    }

    /// Adds or replaces every function of `other`.
    pub fn extend(&mut self, other: &FuncMap) -> &mut Self {
        for (k, v) in &other.map {
            self.map.insert(k.clone(), v.clone());
        }
        self
    }

    /// Looks a function up.
    pub fn get(&self, name: &str) -> Option<&Func> {
        self.map.get(name)
    }

    /// Whether the name is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The defined names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

use ArgType::{Any, Reflect};

/// Go's built-in functions (`and`, `or`, `not`, `len`, `index`, `slice`, `print`, `printf`,
/// `println`, `html`, `js`, `urlquery`, `call`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`).
/// `and` and `or` short-circuit in the executor; their bodies here are used only through `call`.
pub fn builtins() -> &'static FuncMap {
    static B: OnceLock<FuncMap> = OnceLock::new();
    B.get_or_init(|| {
        let mut m = FuncMap::new();
        m.insert(
            "and",
            Func::variadic(&[Reflect], Reflect, |a| {
                Ok(a.iter()
                    .find(|v| !v.truth())
                    .or(a.last())
                    .cloned()
                    .unwrap_or_default())
            }),
        );
        m.insert(
            "or",
            Func::variadic(&[Reflect], Reflect, |a| {
                Ok(a.iter()
                    .find(|v| v.truth())
                    .or(a.last())
                    .cloned()
                    .unwrap_or_default())
            }),
        );
        m.insert(
            "call",
            Func::variadic(&[Reflect], Reflect, |a| match a.first() {
                Some(Value::Missing | Value::Nil) | None => Err("call of nil".into()),
                Some(v) => Err(format!("non-function of type {}", v.type_name())),
            }),
        );
        m.insert(
            "html",
            Func::variadic(&[], Any, |a| Ok(Value::str(html_escape(&eval_args(a))))),
        );
        m.insert(
            "js",
            Func::variadic(&[], Any, |a| Ok(Value::str(js_escape(&eval_args(a))))),
        );
        m.insert(
            "urlquery",
            Func::variadic(&[], Any, |a| Ok(Value::str(query_escape(&eval_args(a))))),
        );
        m.insert("index", Func::variadic(&[Reflect], Reflect, index));
        m.insert("slice", Func::variadic(&[Reflect], Reflect, slice));
        m.insert("len", Func::new(&[Reflect], |a| length(&a[0])));
        m.insert("not", Func::new(&[Reflect], |a| Ok(Value::Bool(!a[0].truth()))));
        m.insert(
            "print",
            Func::variadic(&[], Any, |a| Ok(Value::str(gofmt::sprint(a)))),
        );
        m.insert(
            "printf",
            Func::variadic(&[ArgType::Str], Any, |a| {
                Ok(Value::str(gofmt::sprintf(a[0].as_str().unwrap_or(""), &a[1..])))
            }),
        );
        m.insert(
            "println",
            Func::variadic(&[], Any, |a| Ok(Value::str(gofmt::sprintln(a)))),
        );
        m.insert(
            "eq",
            Func::variadic(&[Reflect], Reflect, |a| eq(&a[0], &a[1..]).map(Value::Bool)),
        );
        m.insert(
            "ne",
            Func::new(&[Reflect, Reflect], |a| {
                eq(&a[0], &a[1..2]).map(|b| Value::Bool(!b))
            }),
        );
        m.insert(
            "lt",
            Func::new(&[Reflect, Reflect], |a| lt(&a[0], &a[1]).map(Value::Bool)),
        );
        m.insert(
            "le",
            Func::new(&[Reflect, Reflect], |a| {
                if lt(&a[0], &a[1])? {
                    return Ok(Value::Bool(true));
                }
                eq(&a[0], &a[1..2]).map(Value::Bool)
            }),
        );
        m.insert(
            "gt",
            Func::new(&[Reflect, Reflect], |a| {
                if lt(&a[0], &a[1])? {
                    return Ok(Value::Bool(false));
                }
                eq(&a[0], &a[1..2]).map(|b| Value::Bool(!b))
            }),
        );
        m.insert(
            "ge",
            Func::new(&[Reflect, Reflect], |a| lt(&a[0], &a[1]).map(|b| Value::Bool(!b))),
        );
        m
    })
}

/// Go's `evalArgs`: a single string as is, otherwise `fmt.Sprint` with nils as `<no value>`.
fn eval_args(args: &[Value]) -> String {
    if let [Value::String(s)] = args {
        return s.to_string();
    }
    let conv: Vec<Value> = args
        .iter()
        .map(|a| match a {
            Value::Nil | Value::Missing => Value::str("<no value>"),
            v => v.clone(),
        })
        .collect();
    gofmt::sprint(&conv)
}

/// Go's `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if c.is_ascii() => out.push(c),
            c if gocompat::strconv::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    Complex,
    String,
}

fn basic_kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(..) => Kind::Int,
        Value::Uint(..) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::Complex(..) => Kind::Complex,
        Value::String(_) => Kind::String,
        _ => Kind::Invalid,
    }
}

fn is_valid(v: &Value) -> bool {
    !matches!(v, Value::Missing | Value::Nil)
}

/// A named basic type's underlying value (see [`crate::Object::basic`]), for comparisons.
fn basic(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::Object(o) => match o.basic() {
            Some(b) => std::borrow::Cow::Owned(b),
            None => std::borrow::Cow::Borrowed(v),
        },
        v => std::borrow::Cow::Borrowed(v),
    }
}

/// Go's `eq`: `arg1 == arg2[0] || arg1 == arg2[1] ...`.
pub fn eq(arg1: &Value, arg2: &[Value]) -> Result<bool, String> {
    let arg1_named = arg1;
    let arg1 = &*basic(arg1_named);
    if arg2.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic_kind(arg1);
    for arg_named in arg2 {
        let arg = &*basic(arg_named);
        let k2 = basic_kind(arg);
        let truth = if k1 != k2 {
            match (arg1, arg) {
                (Value::Int(a, _), Value::Uint(b, _)) => *a >= 0 && *a as u64 == *b,
                (Value::Uint(a, _), Value::Int(b, _)) => *b >= 0 && *a == *b as u64,
                _ => {
                    if is_valid(arg1) && is_valid(arg) {
                        return Err(format!(
                            "incompatible types for comparison: {} and {}",
                            arg1_named.type_name(),
                            arg_named.type_name()
                        ));
                    }
                    false
                }
            }
        } else {
            match (arg1, arg) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Int(a, _), Value::Int(b, _)) => a == b,
                (Value::Uint(a, _), Value::Uint(b, _)) => a == b,
                (Value::Float(a), Value::Float(b)) => a == b,
                (Value::Complex(a, b), Value::Complex(c, d)) => a == c && b == d,
                (Value::String(a), Value::String(b)) => a == b,
                _ => {
                    let n1 = !is_valid(arg1);
                    let n2 = !is_valid(arg);
                    if !n1 && !n2 && arg1.kind_name() != arg.kind_name() {
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            gofmt::sprintf("%s", std::slice::from_ref(arg1)),
                            arg1.type_name(),
                            arg.type_name(),
                            gofmt::sprint_value(arg)
                        ));
                    }
                    let nil1 = n1 || obj_nil(arg1);
                    let nil2 = n2 || obj_nil(arg);
                    if nil1 || nil2 {
                        nil1 == nil2
                    } else {
                        match (arg1, arg) {
                            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
                            _ => {
                                return Err(format!(
                                    "non-comparable type {}: {}",
                                    gofmt::sprintf("%s", std::slice::from_ref(arg)),
                                    arg.type_name()
                                ));
                            }
                        }
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn obj_nil(v: &Value) -> bool {
    matches!(v, Value::Object(o) if o.is_nil())
}

/// Go's `lt`.
pub fn lt(arg1_named: &Value, arg2_named: &Value) -> Result<bool, String> {
    let (arg1, arg2) = (&*basic(arg1_named), &*basic(arg2_named));
    let k1 = basic_kind(arg1);
    let k2 = basic_kind(arg2);
    if k1 == Kind::Invalid || k2 == Kind::Invalid {
        return Err("invalid type for comparison".into());
    }
    if k1 != k2 {
        return match (arg1, arg2) {
            (Value::Int(a, _), Value::Uint(b, _)) => Ok(*a < 0 || (*a as u64) < *b),
            (Value::Uint(a, _), Value::Int(b, _)) => Ok(*b >= 0 && *a < *b as u64),
            _ => Err(format!(
                "incompatible types for comparison: {} and {}",
                arg1_named.type_name(),
                arg2_named.type_name()
            )),
        };
    }
    match (arg1, arg2) {
        (Value::Int(a, _), Value::Int(b, _)) => Ok(a < b),
        (Value::Uint(a, _), Value::Uint(b, _)) => Ok(a < b),
        (Value::Float(a), Value::Float(b)) => Ok(a < b),
        (Value::String(a), Value::String(b)) => Ok(a < b),
        _ => Err("invalid type for comparison".into()),
    }
}

fn index_arg(index: &Value, cap: usize) -> Result<usize, String> {
    let x: i64 = match index {
        Value::Int(n, _) => *n,
        Value::Uint(n, _) => *n as i64,
        Value::Missing | Value::Nil => return Err("cannot index slice/array with nil".into()),
        v => return Err(format!("cannot index slice/array with type {}", v.type_name())),
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn deref_type_name(v: &Value) -> String {
    let t = v.type_name();
    t.strip_prefix('*').unwrap_or(&t).to_string()
}

fn index(a: &[Value]) -> Result<Value, String> {
    let mut item = a[0].clone();
    if matches!(item, Value::Missing | Value::Nil) {
        return Err("index of untyped nil".into());
    }
    for idx in &a[1..] {
        if item.is_nil() {
            return Err("index of nil pointer".into());
        }
        item = match &item {
            Value::List(l) => {
                let x = index_arg(idx, l.items.len())?;
                match l.items.get(x) {
                    Some(v) => v.clone(),
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::String(s) => {
                let x = index_arg(idx, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::Uint(u64::from(*b), UintType::Uint8),
                    None => return Err("reflect: string index out of range".into()),
                }
            }
            Value::Map(m) => {
                let key = match idx {
                    Value::String(k) => k,
                    Value::Missing | Value::Nil => {
                        return Err("value is nil; should be of type string".into());
                    }
                    v => {
                        return Err(format!("value has type {}; should be string", v.type_name()));
                    }
                };
                match m.get(key) {
                    Some(v) => v,
                    None => match m.elem {
                        ElemType::Any => Value::Nil,
                        ElemType::String => Value::str(""),
                        ElemType::Int => Value::int(0),
                    },
                }
            }
            v => return Err(format!("can't index item of type {}", deref_type_name(v))),
        };
    }
    Ok(item)
}

fn slice(a: &[Value]) -> Result<Value, String> {
    let item = &a[0];
    if matches!(item, Value::Missing | Value::Nil) {
        return Err("slice of untyped nil".into());
    }
    if item.is_nil() {
        return Err("slice of nil pointer".into());
    }
    let idx = &a[1..];
    if idx.len() > 3 {
        return Err(format!("too many slice indexes: {}", idx.len()));
    }
    let (len, cap) = match item {
        Value::String(s) => {
            if idx.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            (s.len(), s.len())
        }
        Value::List(l) => (l.items.len(), l.items.len()),
        v => return Err(format!("can't slice item of type {}", deref_type_name(v))),
    };
    let mut ix = [0usize, len, 0];
    for (i, v) in idx.iter().enumerate() {
        ix[i] = index_arg(v, cap)?;
    }
    if ix[0] > ix[1] {
        return Err(format!("invalid slice index: {} > {}", ix[0], ix[1]));
    }
    if idx.len() == 3 && ix[1] > ix[2] {
        return Err(format!("invalid slice index: {} > {}", ix[1], ix[2]));
    }
    match item {
        Value::String(s) => match s.as_bytes().get(ix[0]..ix[1]) {
            Some(b) => Ok(Value::str(String::from_utf8_lossy(b).into_owned())),
            None => Err("reflect: string slice index out of range".into()),
        },
        Value::List(l) => match l.items.get(ix[0]..ix[1]) {
            Some(items) => Ok(Value::List(Arc::new(List {
                elem: l.elem,
                items: items.to_vec(),
            }))),
            None => Err("reflect: slice index out of range".into()),
        },
        _ => Err("unreachable".into()),
    }
}

fn length(v: &Value) -> Result<Value, String> {
    let n = match v {
        Value::Missing => return Err("reflect: call of reflect.Value.Type on zero Value".into()),
        Value::Nil => return Err("len of nil pointer".into()),
        Value::String(s) => s.len(),
        Value::List(l) => l.items.len(),
        Value::Map(m) => m.len(),
        Value::Object(o) => {
            if o.is_nil() {
                return Err("len of nil pointer".into());
            }
            match o.len() {
                Some(n) => n,
                None => return Err(format!("len of type {}", deref_type_name(v))),
            }
        }
        v => return Err(format!("len of type {}", v.type_name())),
    };
    Ok(Value::int(n as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_follows_go() {
        assert_eq!(eq(&Value::Missing, &[Value::str("x")]), Ok(false));
        assert_eq!(
            eq(&Value::str("a"), &[Value::str("b"), Value::str("a")]),
            Ok(true)
        );
        assert_eq!(
            eq(&Value::Float(1.0), &[Value::int(1)]),
            Err("incompatible types for comparison: float64 and int".into())
        );
        assert_eq!(eq(&Value::int(1), &[Value::Uint(1, UintType::Uint)]), Ok(true));
    }

    #[test]
    fn escapers() {
        assert_eq!(html_escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
        assert_eq!(js_escape("a'b<"), "a\\'b\\u003C");
        assert_eq!(query_escape("a b&c"), "a+b%26c");
    }
}
