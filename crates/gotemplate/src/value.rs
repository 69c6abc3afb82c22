//! The open value model: what a template sees as "dot", variables and function results.
//!
//! Go templates run on `reflect.Value`s. We cannot reflect over arbitrary Rust types, so the
//! model is an enum of the Go kinds templates care about, plus an [`Object`] trait for host
//! types (structs, pointers, enums with `String()`), which expose fields and methods by name.
//!
//! Two "nothing" values exist because Go has two and they behave differently:
//! - [`Value::Missing`] is Go's invalid `reflect.Value` (a missing map key, an untyped nil that went
//!   through a pipeline). It prints as `<no value>`, and field access on it yields `Missing` again.
//! - [`Value::Nil`] is a nil `interface{}` held inside a container (a JSON `null`). Field access on
//!   it is an error (`nil pointer evaluating interface {}.x`), and `fmt` prints it as `<nil>`.
//!
//! Values are cheap to clone: strings, lists, maps and objects are reference counted (`Arc`, so
//! parsed templates and data can be shared across threads).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use indexmap::IndexMap;

/// The Go signed integer types; they share one kind for comparisons but differ in type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntType {
    /// `int`
    Int,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `int32` (also `rune`)
    Int32,
    /// `int64`
    Int64,
}

impl IntType {
    /// The Go spelling of the type.
    pub fn name(self) -> &'static str {
        match self {
            IntType::Int => "int",
            IntType::Int8 => "int8",
            IntType::Int16 => "int16",
            IntType::Int32 => "int32",
            IntType::Int64 => "int64",
        }
    }
}

/// The Go unsigned integer types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UintType {
    /// `uint`
    Uint,
    /// `uint8` (also `byte`)
    Uint8,
    /// `uint16`
    Uint16,
    /// `uint32`
    Uint32,
    /// `uint64`
    Uint64,
}

impl UintType {
    /// The Go spelling of the type.
    pub fn name(self) -> &'static str {
        match self {
            UintType::Uint => "uint",
            UintType::Uint8 => "uint8",
            UintType::Uint16 => "uint16",
            UintType::Uint32 => "uint32",
            UintType::Uint64 => "uint64",
        }
    }
}

/// The element type of a list or map, which decides its Go type name and the zero value that
/// `index` returns for a missing map key (`<no value>` for `interface{}`, `""` for `string`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `interface{}`: any value.
    Any,
    /// `string`.
    String,
    /// `int` (sprig's `until` and `untilStep` return `[]int`).
    Int,
}

impl ElemType {
    fn name(self) -> &'static str {
        match self {
            ElemType::Any => "interface {}",
            ElemType::String => "string",
            ElemType::Int => "int",
        }
    }
}

/// A Go slice: `[]interface{}` or `[]string`.
#[derive(Debug, Clone, PartialEq)]
pub struct List {
    /// The element type.
    pub elem: ElemType,
    /// The elements.
    pub items: Vec<Value>,
}

/// A Go map with string keys: `map[string]interface{}` or `map[string]string`.
///
/// Go maps are references: sprig's `set`, `unset` and `merge` change a map in place and every
/// holder sees the change. The entries therefore sit behind a lock (uncontended reads are
/// cheap); [`Map::get`], [`Map::snapshot`] and friends never hold it across calls back into
/// the engine.
///
/// The entries are a hash table kept in key order. Templates mostly read maps by key
/// (`.Values.global.proxy.image` is three lookups), which hashing answers with one string
/// comparison where a search tree needs several; and Go's `fmt`, `range` and `encoding/json`
/// visit keys sorted, which the kept order gives without sorting. Inserting a new key shifts
/// the later ones (linear), which suits maps that are built once and rarely changed. The hash
/// is foldhash: seeded per process, since keys come from input (pod labels and annotations),
/// and several times cheaper than std's SipHash on short keys.
///
/// A map may carry a [`MapWatch`]: told of every read (by key, or of the whole map), so that a
/// host can learn exactly which of its data a template looked at (the injector keys its render
/// cache by it). Every access goes through the methods below, so nothing reads unseen.
#[derive(Debug)]
pub struct Map {
    /// The element type.
    pub elem: ElemType,
    entries: RwLock<Entries>,
    watch: Option<MapWatch>,
}

/// What a [`MapWatch`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapRead<'a> {
    /// One key was looked up (present or not).
    Key(&'a str),
    /// The whole map was read (its length, its entries, a copy) or changed.
    All,
}

/// The observer of a [`Map`]'s reads (see [`Map::watched`]).
#[derive(Clone)]
pub struct MapWatch(pub Arc<dyn Fn(MapRead<'_>) + Send + Sync>);

impl fmt::Debug for MapWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MapWatch")
    }
}

/// The entries of a [`Map`], in key order.
type Entries = IndexMap<String, Value, foldhash::fast::RandomState>;

impl Map {
    /// A map with the given element type and entries.
    pub fn new(elem: ElemType, entries: BTreeMap<String, Value>) -> Self {
        Map {
            elem,
            entries: RwLock::new(entries.into_iter().collect()),
            watch: None,
        }
    }

    /// A map whose reads are told to `watch`.
    pub fn watched(elem: ElemType, entries: BTreeMap<String, Value>, watch: MapWatch) -> Self {
        Map {
            watch: Some(watch),
            ..Map::new(elem, entries)
        }
    }

    fn tell(&self, read: MapRead<'_>) {
        if let Some(watch) = &self.watch {
            (watch.0)(read);
        }
    }

    /// The entries, read whole.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.tell(MapRead::All);
        self.read_unseen()
    }

    fn read_unseen(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Entries> {
        self.tell(MapRead::All);
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The value for a key.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.tell(MapRead::Key(key));
        self.read_unseen().get(key).cloned()
    }

    /// Whether the key is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.tell(MapRead::Key(key));
        self.read_unseen().contains_key(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A copy of the entries (values are shared, not deep-copied).
    pub fn snapshot(&self) -> BTreeMap<String, Value> {
        self.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The entries in key order, copied out so the caller may call back into the engine.
    pub fn pairs(&self) -> Vec<(String, Value)> {
        self.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Sets a key (visible to every holder of this map, like a Go map assignment).
    pub fn insert(&self, key: String, value: Value) {
        let mut entries = self.write();
        if let Some(slot) = entries.get_mut(key.as_str()) {
            *slot = value;
            return;
        }
        // A new key goes where the order wants it.
        let at = entries.binary_search_keys(&key).unwrap_or_else(|at| at);
        entries.shift_insert(at, key, value);
    }

    /// Deletes a key.
    pub fn remove(&self, key: &str) {
        self.write().shift_remove(key);
    }

    /// Replaces all entries.
    pub fn replace(&self, entries: BTreeMap<String, Value>) {
        *self.write() = entries.into_iter().collect();
    }

    /// A copy that shares no map with this one ([`Value::unshared`]), with the same watch. The
    /// copy is not a read: the watch is not told.
    pub fn unshared(&self) -> Map {
        let mut entries = self.read_unseen().clone();
        for value in entries.values_mut() {
            if value.holds_map() {
                *value = value.unshared();
            }
        }
        Map {
            elem: self.elem,
            entries: RwLock::new(entries),
            watch: self.watch.clone(),
        }
    }
}

impl Clone for Map {
    fn clone(&self) -> Self {
        Map::new(self.elem, self.snapshot())
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || (self.elem == other.elem && self.pairs() == other.pairs())
    }
}

/// Whether a host object behaves like a Go struct value or a pointer (to a struct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A struct value: always true, never nil.
    Struct,
    /// A pointer: true unless nil; printing a nil one gives `<nil>`.
    Pointer,
}

/// A host object: a Go struct, a pointer to one, or any named type with methods.
///
/// Implement the hooks your type needs; the defaults describe a struct with no fields.
#[allow(clippy::len_without_is_empty)]
pub trait Object: Send + Sync + fmt::Debug {
    /// The Go type name used in error messages and `%T`, for example `*v1.Pod`.
    fn type_name(&self) -> Cow<'_, str>;

    /// Struct value or pointer.
    fn kind(&self) -> ObjectKind {
        ObjectKind::Pointer
    }

    /// Whether this is a typed nil pointer.
    fn is_nil(&self) -> bool {
        false
    }

    /// Whether the struct type has the field, even when the pointer is nil (decides between
    /// Go's "nil pointer evaluating" and "can't evaluate field" errors).
    fn has_field(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// The value of an exported field, or `None` if there is no such field.
    fn field(&self, name: &str) -> Option<Value> {
        let _ = name;
        None
    }

    /// The number of arguments a method takes, or `None` if there is no such method.
    fn method_arity(&self, name: &str) -> Option<usize> {
        let _ = name;
        None
    }

    /// Calls a method (whose arity was checked against [`Object::method_arity`]).
    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let _ = args;
        Err(format!("no method {name}"))
    }

    /// The `String()` method (Go's `fmt.Stringer`), if the type has one.
    fn string(&self) -> Option<String> {
        None
    }

    /// Go's `%v` printing when there is no `String()` method (for a struct, `{a b}`).
    fn format_v(&self, plus: bool) -> String {
        let _ = plus;
        if self.is_nil() {
            "<nil>".to_string()
        } else {
            "{}".to_string()
        }
    }

    /// For a named basic type (a protobuf enum is an `int32`, `type Mode string`), the
    /// underlying value: `eq`, `lt` and friends compare it, and truth tests use it.
    fn basic(&self) -> Option<Value> {
        None
    }

    /// The length, for `len`, if the type has one.
    fn len(&self) -> Option<usize> {
        None
    }

    /// A plain-data view of the object (what `encoding/json` would marshal), for `toJson` and
    /// friends. `None` when the object cannot be represented.
    fn to_data(&self) -> Option<Value> {
        None
    }

    /// The concrete object, for functions that accept one specific host type (sprig's date
    /// functions take a `time.Time`). `None` unless the type opts in.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A template value. See the module documentation.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// Go's invalid `reflect.Value`: prints `<no value>`.
    #[default]
    Missing,
    /// A nil `interface{}` (for example a JSON `null` in a map).
    Nil,
    /// `bool`
    Bool(bool),
    /// A signed integer of the given type.
    Int(i64, IntType),
    /// An unsigned integer of the given type.
    Uint(u64, UintType),
    /// `float64`
    Float(f64),
    /// `complex128` (real, imaginary): only from constants like `2i`.
    Complex(f64, f64),
    /// `string`
    String(Arc<str>),
    /// A slice.
    List(Arc<List>),
    /// A map with string keys.
    Map(Arc<Map>),
    /// A host object.
    Object(Arc<dyn Object>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Missing, Value::Missing) | (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a, x), Value::Int(b, y)) => a == b && x == y,
            (Value::Uint(a, x), Value::Uint(b, y)) => a == b && x == y,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Complex(a, b), Value::Complex(c, d)) => a == c && b == d,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => Arc::ptr_eq(a, b) || a == b,
            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Value {
    /// A `string` value.
    pub fn str(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// An `int` value.
    pub fn int(n: i64) -> Value {
        Value::Int(n, IntType::Int)
    }

    /// A `[]interface{}` value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(List {
            elem: ElemType::Any,
            items,
        }))
    }

    /// A `[]string` value.
    pub fn string_list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(List {
            elem: ElemType::String,
            items,
        }))
    }

    /// A `map[string]interface{}` value.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(Map::new(ElemType::Any, entries)))
    }

    /// A `map[string]string` value.
    pub fn string_map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(Map::new(ElemType::String, entries)))
    }

    /// A host object.
    pub fn object(o: impl Object + 'static) -> Value {
        Value::Object(Arc::new(o))
    }

    /// Decodes JSON the way Go's `encoding/json` decodes into `interface{}`: numbers become
    /// `float64`, objects `map[string]interface{}`, arrays `[]interface{}`, null a nil interface.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::str(s.as_str()),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => {
                Value::map(o.iter().map(|(k, v)| (k.clone(), Value::from_json(v))).collect())
            }
        }
    }

    /// The Go type name, as `%T` and error messages print it.
    pub fn type_name(&self) -> Cow<'_, str> {
        match self {
            Value::Missing => Cow::Borrowed("<nil>"),
            Value::Nil => Cow::Borrowed("interface {}"),
            Value::Bool(_) => Cow::Borrowed("bool"),
            Value::Int(_, t) => Cow::Borrowed(t.name()),
            Value::Uint(_, t) => Cow::Borrowed(t.name()),
            Value::Float(_) => Cow::Borrowed("float64"),
            Value::Complex(..) => Cow::Borrowed("complex128"),
            Value::String(_) => Cow::Borrowed("string"),
            Value::List(l) => Cow::Owned(format!("[]{}", l.elem.name())),
            Value::Map(m) => Cow::Owned(format!("map[string]{}", m.elem.name())),
            Value::Object(o) => o.type_name(),
        }
    }

    /// Go's `reflect.Kind` name of the value (`kindOf`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Missing => "invalid",
            Value::Nil => "interface",
            Value::Bool(_) => "bool",
            Value::Int(_, t) => t.name(),
            Value::Uint(_, t) => t.name(),
            Value::Float(_) => "float64",
            Value::Complex(..) => "complex128",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => match o.kind() {
                ObjectKind::Struct => "struct",
                ObjectKind::Pointer => "ptr",
            },
        }
    }

    /// Whether this is `Missing` or `Nil` or a typed nil object.
    pub fn is_nil(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => true,
            Value::Object(o) => o.is_nil(),
            _ => false,
        }
    }

    /// Go's template truth: false, 0, nil, and empty strings, lists and maps are false.
    pub fn truth(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(n, _) => *n != 0,
            Value::Uint(n, _) => *n != 0,
            Value::Float(f) => *f != 0.0,
            Value::Complex(r, i) => *r != 0.0 || *i != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.items.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => match o.basic() {
                Some(b) => b.truth(),
                None => match o.kind() {
                    ObjectKind::Struct => true,
                    ObjectKind::Pointer => !o.is_nil(),
                },
            },
        }
    }

    /// The string inside a `string` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A copy that shares no map with this value, at any depth: a write into one (sprig's
    /// `set`, `unset`, `merge`, which change a map in place as Go's do) is not seen through the
    /// other. What cannot be written is shared: strings, host objects, and lists that hold no
    /// map. A map held twice is copied twice (data decoded from JSON holds none twice).
    ///
    /// Give each execution its own copy of data that executions share, when one's writes must
    /// not reach the others.
    pub fn unshared(&self) -> Value {
        match self {
            Value::Map(m) => Value::Map(Arc::new(m.unshared())),
            Value::List(l) if self.holds_map() => Value::List(Arc::new(List {
                elem: l.elem,
                items: l.items.iter().map(Value::unshared).collect(),
            })),
            v => v.clone(),
        }
    }

    /// Whether a map is reachable from this value without going through a host object.
    fn holds_map(&self) -> bool {
        match self {
            Value::Map(_) => true,
            Value::List(l) => l.items.iter().any(Value::holds_map),
            _ => false,
        }
    }

    /// Interface-unwrapping as Go's pipeline does: a nil interface becomes `Missing`.
    pub(crate) fn unwrap_interface(self) -> Value {
        match self {
            Value::Nil => Value::Missing,
            v => v,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::str(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n, IntType::Int64)
    }
}

impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Self {
        Value::from_json(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries stay in key order through inserts and removals (Go's `range` and `fmt` order).
    #[test]
    fn map_keeps_key_order() {
        let m = Map::new(
            ElemType::Any,
            [("b", 2), ("d", 4)]
                .map(|(k, n)| (k.to_string(), Value::int(n)))
                .into(),
        );
        m.insert("c".into(), Value::int(3));
        m.insert("a".into(), Value::int(1));
        m.insert("e".into(), Value::int(5));
        m.insert("b".into(), Value::int(20));
        m.remove("d");
        let keys: Vec<String> = m.pairs().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c", "e"]);
        assert_eq!(m.get("b"), Some(Value::int(20)));
        assert_eq!(m.get("d"), None);
        assert_eq!(m.snapshot().len(), 4);
    }

    /// A write into an unshared copy, at any depth (a map in a map, a map in a list), is not
    /// seen through the original, nor the original's through the copy; what cannot be written
    /// is shared.
    #[test]
    fn an_unshared_copy_shares_no_map() {
        let original = Value::from_json(&serde_json::json!({
            "global": {"proxy": {"image": "proxyv2"}},
            "list": [{"name": "a"}, "s"],
            "strings": ["x", "y"],
        }));
        let copy = original.unshared();
        assert_eq!(copy, original);
        let at = |v: &Value, path: &[&str]| {
            path.iter().fold(v.clone(), |v, key| match v {
                Value::Map(m) => m.get(key).unwrap_or_default(),
                _ => Value::Missing,
            })
        };
        let (Value::Map(proxy), Value::Map(original_proxy)) = (
            at(&copy, &["global", "proxy"]),
            at(&original, &["global", "proxy"]),
        ) else {
            panic!("maps")
        };
        proxy.insert("image".into(), Value::str("mine"));
        original_proxy.insert("tag".into(), Value::str("theirs"));
        assert_eq!(
            at(&original, &["global", "proxy", "image"]),
            Value::str("proxyv2")
        );
        assert_eq!(at(&copy, &["global", "proxy", "tag"]), Value::Missing);
        let (Value::List(list), Value::List(original_list)) =
            (at(&copy, &["list"]), at(&original, &["list"]))
        else {
            panic!("lists")
        };
        let (Value::Map(item), Value::Map(original_item)) = (&list.items[0], &original_list.items[0]) else {
            panic!("maps")
        };
        item.remove("name");
        assert_eq!(original_item.get("name"), Some(Value::str("a")));
        // A list of strings cannot be written: shared, not copied.
        let (Value::List(strings), Value::List(original_strings)) =
            (at(&copy, &["strings"]), at(&original, &["strings"]))
        else {
            panic!("lists")
        };
        assert!(Arc::ptr_eq(&strings, &original_strings));
    }
}
