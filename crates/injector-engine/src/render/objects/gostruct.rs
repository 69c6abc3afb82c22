//! A Go struct (or a pointer to one) backed by a JSON node and described by a static schema.
//!
//! Kubernetes and protobuf types reach the templates as Go structs: `.Spec.Containers`,
//! `.ProxyConfig.ProxyMetadata`, `.GetTracing`. Instead of decoding the pod and the mesh config
//! into Rust types, a [`GoStruct`] keeps a reference into the original JSON (shared through an
//! `Arc`, so nothing is copied) and a [`Schema`] listing the Go fields in declaration order
//! with their JSON names and Go types. A field is converted to a template value on first
//! access and cached, so repeated reads (the sidecar template reads `.ObjectMeta.Annotations`
//! about seventy times) cost one lookup.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, OnceLock};

use gotemplate::funcs::Fnv;
use gotemplate::{IntType, Object, ObjectKind, UintType, Value};
use serde_json::Value as Json;

use super::proto::{Enum, EnumType, Wrapper, WrapperKind};
use super::reads::{Path, Read, Seg, note, resolve};
use super::{GO_JSON_METHOD, PROTO_JSON_METHOD, RAW_JSON_METHOD};
use crate::render::json::{go_json_of_raw, write_go_json};

/// A position inside a shared JSON document. Its accessors are the only way the template data
/// reads the pod, and each logs what it observed while a render is recorded ([`super::reads`]).
#[derive(Clone)]
pub struct JsonRef {
    root: Arc<Json>,
    path: Path,
}

impl fmt::Debug for JsonRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonRef({:?})", self.path)
    }
}

impl JsonRef {
    /// The whole document.
    pub fn root(root: Arc<Json>) -> JsonRef {
        JsonRef {
            root,
            path: Arc::from(Vec::new()),
        }
    }

    /// The JSON node this refers to (`Null` if the path no longer resolves). The caller may read
    /// all of it, so a recording logs the whole node.
    pub fn get(&self) -> &Json {
        note(&self.root, || Read::Whole(self.path.clone()));
        resolve(&self.root, &self.path)
    }

    fn push(&self, seg: Seg) -> JsonRef {
        let mut path = Vec::with_capacity(self.path.len() + 1);
        path.extend_from_slice(&self.path);
        path.push(seg);
        JsonRef {
            root: self.root.clone(),
            path: path.into(),
        }
    }

    /// The member `key`, if present and not null.
    pub fn key(&self, key: &'static str) -> Option<JsonRef> {
        note(&self.root, || Read::Member(self.path.clone(), key));
        match resolve(&self.root, &self.path).get(key) {
            None | Some(Json::Null) => None,
            Some(_) => Some(self.push(Seg::Key(key))),
        }
    }

    /// The elements of an array (none if this is not an array).
    pub fn items(&self) -> Vec<JsonRef> {
        note(&self.root, || Read::Length(self.path.clone()));
        let n = resolve(&self.root, &self.path).as_array().map_or(0, Vec::len);
        (0..n).map(|i| self.push(Seg::Index(i))).collect()
    }
}

/// The Go type of a struct field.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `string` (or a named string type such as `v1.Protocol`).
    Str,
    /// `int`
    Int,
    /// `int32`
    Int32,
    /// `int64`
    Int64,
    /// `uint32`
    Uint32,
    /// `float64`
    Float64,
    /// `bool`
    Bool,
    /// `map[string]string`
    StrMap,
    /// `[]string`
    StrList,
    /// A struct value.
    Struct(&'static Schema),
    /// A pointer to a struct (nil when absent).
    Ptr(&'static Schema),
    /// An embedded struct whose JSON is inlined in the parent's (`TypeMeta` in objects).
    Inline(&'static Schema),
    /// An embedded struct with its own JSON key whose fields are promoted (`ObjectMeta` as
    /// `metadata` in objects).
    Embedded(&'static Schema),
    /// A slice of struct values.
    List(&'static Schema),
    /// A slice of struct pointers.
    PtrList(&'static Schema),
    /// A type not modelled field by field, named by its Go spelling (`*v1.Probe`, `[]v1.EnvVar`,
    /// `v1.ResourceRequirements`). Its value is its JSON.
    Opaque(&'static str),
    /// `metav1.Time` (marshals as `null` when zero).
    Time,
    /// `intstr.IntOrString` (prints its value; `.IntValue`).
    IntOrString,
    /// A protobuf enum.
    Enum(&'static EnumType),
    /// A protobuf well-known wrapper or duration.
    Wrapper(WrapperKind),
    /// `*string`
    PtrStr,
    /// `*int32`
    PtrInt32,
    /// `*int64`
    PtrInt64,
    /// `*bool`
    PtrBool,
}

/// One struct field.
#[derive(Debug)]
pub struct Field {
    /// The Go field name.
    pub go: &'static str,
    /// The JSON name (protobuf JSON for messages, the `json` tag for Kubernetes types).
    pub json: &'static str,
    /// The Go type.
    pub kind: Kind,
    /// Whether the `json` tag has `omitempty`.
    pub omitempty: bool,
}

/// Shorthand for a field declaration.
pub const fn f(go: &'static str, json: &'static str, kind: Kind) -> Field {
    Field {
        go,
        json,
        kind,
        omitempty: true,
    }
}

/// Shorthand for a field whose `json` tag has no `omitempty`.
pub const fn always(go: &'static str, json: &'static str, kind: Kind) -> Field {
    Field {
        go,
        json,
        kind,
        omitempty: false,
    }
}

/// Field positions by Go name (see [`Schema::index`]).
pub type FieldIndex = HashMap<&'static str, usize, BuildHasherDefault<Fnv>>;

/// A zero-argument method: its name and implementation.
pub type Method = (&'static str, fn(&GoStruct) -> Value);

/// A Go struct type.
#[derive(Debug)]
pub struct Schema {
    /// The Go type name without the pointer star (`v1.Container`, `v1alpha1.ProxyConfig`).
    pub go_type: &'static str,
    /// `%T` of the pointer type (`*v1alpha1.ProxyConfig`).
    pub ptr_type: &'static str,
    /// The fields in declaration order.
    pub fields: &'static [Field],
    /// Whether the type has protobuf's nil-safe `GetX` getters for every field.
    pub getters: bool,
    /// Getters that are not fields (oneof members such as `GetServiceCluster`), named without
    /// `Get`.
    pub oneof_getters: &'static [Field],
    /// Whether `\0gojson` writes the raw JSON (protobuf messages) instead of the schema's
    /// `encoding/json` form (Kubernetes types).
    pub raw_json: bool,
    /// The type's `String()` method, if it has one.
    pub stringer: Option<fn(&Json) -> String>,
    /// Field indexes by Go name, built on first use. Hashed with FNV rather than SipHash: the
    /// keys are our own static field names and a template reads fields about a hundred times
    /// per injection, so a keyed hash would only add cost.
    pub index: OnceLock<FieldIndex>,
    /// Other zero-argument methods (`GroupVersionKind`, `GetObjectKind`).
    pub methods: &'static [Method],
}

impl Schema {
    /// The index of the field with Go name `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index
            .get_or_init(|| self.fields.iter().enumerate().map(|(i, f)| (f.go, i)).collect())
            .get(name)
            .copied()
    }

    /// A Kubernetes-style struct: no getters, `encoding/json` by the schema.
    pub const fn kube(go_type: &'static str, ptr_type: &'static str, fields: &'static [Field]) -> Schema {
        Schema {
            go_type,
            ptr_type,
            fields,
            getters: false,
            oneof_getters: &[],
            raw_json: false,
            stringer: None,
            index: OnceLock::new(),
            methods: &[],
        }
    }

    /// The same type with `GetX` getters for its fields.
    pub const fn with_getters(mut self) -> Schema {
        self.getters = true;
        self
    }

    /// The same type with extra zero-argument methods.
    pub const fn with_methods(mut self, methods: &'static [Method]) -> Schema {
        self.methods = methods;
        self
    }

    /// The same type with a `String()` method.
    pub const fn with_stringer(mut self, stringer: fn(&Json) -> String) -> Schema {
        self.stringer = Some(stringer);
        self
    }

    /// A protobuf message: `GetX` getters for every field plus `oneof_getters`.
    pub const fn proto(
        go_type: &'static str,
        ptr_type: &'static str,
        fields: &'static [Field],
        oneof_getters: &'static [Field],
    ) -> Schema {
        Schema {
            go_type,
            ptr_type,
            fields,
            getters: true,
            oneof_getters,
            raw_json: true,
            stringer: None,
            index: OnceLock::new(),
            methods: &[],
        }
    }
}

/// A struct value or pointer backed by JSON.
pub struct GoStruct {
    schema: &'static Schema,
    node: Option<JsonRef>,
    pointer: bool,
    cache: Box<[OnceLock<Value>]>,
}

impl fmt::Debug for GoStruct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GoStruct({})", self.schema.go_type)
    }
}

impl GoStruct {
    /// A struct value (a missing node gives the zero struct).
    pub fn value(schema: &'static Schema, node: Option<JsonRef>) -> GoStruct {
        Self::new(schema, node, false)
    }

    /// A pointer (a missing node gives a typed nil).
    pub fn pointer(schema: &'static Schema, node: Option<JsonRef>) -> GoStruct {
        Self::new(schema, node, true)
    }

    fn new(schema: &'static Schema, node: Option<JsonRef>, pointer: bool) -> GoStruct {
        GoStruct {
            schema,
            node,
            pointer,
            cache: (0..schema.fields.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The JSON behind the struct (`Null` for a nil pointer).
    pub fn json(&self) -> &Json {
        self.node.as_ref().map_or(&Json::Null, JsonRef::get)
    }

    /// The reference to the JSON behind the struct.
    pub fn node(&self) -> Option<&JsonRef> {
        self.node.as_ref()
    }

    /// The embedded struct that has the (promoted) field `name`.
    fn promoted(&self, name: &str) -> Option<GoStruct> {
        self.schema.fields.iter().find_map(|f| {
            let (inner, node) = match f.kind {
                Kind::Inline(inner) => (inner, self.node.clone()),
                Kind::Embedded(inner) => (inner, self.child(f)),
                _ => return None,
            };
            let embedded = GoStruct::new(inner, node, false);
            embedded.has_field(name).then_some(embedded)
        })
    }

    fn child(&self, field: &Field) -> Option<JsonRef> {
        if let Kind::Inline(_) = field.kind {
            return self.node.clone();
        }
        self.node.as_ref().and_then(|n| n.key(field.json))
    }

    fn field_value(&self, index: usize) -> Value {
        let field = &self.schema.fields[index];
        self.cache[index]
            .get_or_init(|| make_value(field.kind, self.child(field)))
            .clone()
    }

    fn getter(&self, name: &str) -> Option<&'static Field> {
        if !self.schema.getters {
            return None;
        }
        let base = name.strip_prefix("Get")?;
        self.schema
            .fields
            .iter()
            .chain(self.schema.oneof_getters)
            .find(|f| f.go == base)
    }

    /// The schema's `encoding/json` form.
    fn write_go_json(&self, out: &mut String) {
        if self.pointer && self.node.is_none() {
            out.push_str("null");
            return;
        }
        if self.schema.raw_json {
            // Istio's API types marshal themselves as protobuf JSON (`MarshalJSON`).
            super::protojson::write_proto_json(out, self.schema, self.json());
            return;
        }
        if super::k8sjson::struct_fields(self.schema.go_type).is_some() {
            // A Kubernetes or Gateway API type: the generated table has every field.
            super::k8sjson::write_k8s(out, self.schema.go_type, self.node.as_ref().map(JsonRef::get));
            return;
        }
        out.push('{');
        let mut first = true;
        for (i, field) in self.schema.fields.iter().enumerate() {
            let child = self.child(field);
            if field.omitempty && is_empty(field.kind, child.as_ref()) {
                continue;
            }
            if let Kind::Inline(inner) = field.kind {
                // Embedded with `json:",inline"`: the inner fields join this object.
                let mut text = String::new();
                GoStruct::value(inner, child).write_go_json(&mut text);
                let body = text.trim_start_matches('{').trim_end_matches('}');
                if !body.is_empty() {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(body);
                }
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            crate::gojson::write_string(out, field.json);
            out.push(':');
            match field.kind {
                Kind::Opaque(t) => match &child {
                    Some(c) => out.push_str(&go_json_of_raw(c.get())),
                    None if t.starts_with('*') || t.starts_with("[]") || t.starts_with("map") => {
                        out.push_str("null");
                    }
                    None => out.push_str("{}"),
                },
                Kind::Time => match &child {
                    Some(c) => out.push_str(&go_json_of_raw(c.get())),
                    None => out.push_str("null"),
                },
                _ => {
                    if write_go_json(out, &self.field_value(i)).is_err() {
                        out.push_str("null");
                    }
                }
            }
        }
        out.push('}');
    }
}

/// Go's `omitempty` test on the JSON that backs a field.
fn is_empty(kind: Kind, node: Option<&JsonRef>) -> bool {
    let pointer_like = |t: &str| t.starts_with('*') || t.starts_with("[]") || t.starts_with("map");
    let Some(node) = node else {
        // Absent: the zero value. Struct values are never empty.
        return match kind {
            // `metav1.Time` fields are `omitzero` in current Kubernetes.
            Kind::Struct(_) | Kind::Inline(_) | Kind::Embedded(_) => false,
            Kind::Opaque(t) => pointer_like(t),
            _ => true,
        };
    };
    match (kind, node.get()) {
        (Kind::Str, Json::String(s)) => s.is_empty(),
        (Kind::Int | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Float64, Json::Number(n)) => {
            n.as_f64() == Some(0.0)
        }
        (Kind::Bool, Json::Bool(b)) => !b,
        (Kind::StrMap, Json::Object(m)) => m.is_empty(),
        (Kind::Opaque(t), Json::Object(m)) if t.starts_with("map") => m.is_empty(),
        (_, Json::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// Converts a field's JSON into the template value of its Go type.
pub fn make_value(kind: Kind, node: Option<JsonRef>) -> Value {
    // Struct and list kinds only navigate (their fields and items log their own reads), and a
    // string map tells each lookup itself; the others read the node itself.
    let navigates = matches!(
        kind,
        Kind::StrMap
            | Kind::Struct(_)
            | Kind::Inline(_)
            | Kind::Embedded(_)
            | Kind::Ptr(_)
            | Kind::List(_)
            | Kind::PtrList(_)
    ) || matches!(kind, Kind::Opaque(t) if !t.starts_with("map"))
        || matches!(kind, Kind::Time);
    let json = if navigates {
        None
    } else {
        node.as_ref().map(JsonRef::get)
    };
    match kind {
        Kind::Str => Value::str(json.and_then(Json::as_str).unwrap_or("")),
        Kind::Int => Value::int(json_i64(json)),
        Kind::Int32 => Value::Int(json_i64(json), IntType::Int32),
        Kind::Int64 => Value::Int(json_i64(json), IntType::Int64),
        Kind::Uint32 => Value::Uint(json_i64(json).max(0) as u64, UintType::Uint32),
        Kind::Float64 => Value::Float(json.and_then(Json::as_f64).unwrap_or(0.0)),
        Kind::Bool => Value::Bool(json.and_then(Json::as_bool).unwrap_or(false)),
        Kind::StrMap => match &node {
            // Read by key: the map tells each lookup itself.
            Some(node) => watched_string_map(node),
            None => string_map(None),
        },
        Kind::StrList => Value::string_list(
            json.and_then(Json::as_array)
                .map(|a| a.iter().map(|s| Value::str(s.as_str().unwrap_or(""))).collect())
                .unwrap_or_default(),
        ),
        Kind::Struct(s) | Kind::Inline(s) | Kind::Embedded(s) => Value::object(GoStruct::value(s, node)),
        Kind::Ptr(s) => Value::object(GoStruct::pointer(s, node)),
        Kind::List(s) => Value::list(
            node.map(|n| n.items())
                .unwrap_or_default()
                .into_iter()
                .map(|n| Value::object(GoStruct::value(s, Some(n))))
                .collect(),
        ),
        Kind::PtrList(s) => Value::list(
            node.map(|n| n.items())
                .unwrap_or_default()
                .into_iter()
                .map(|n| Value::object(GoStruct::pointer(s, Some(n))))
                .collect(),
        ),
        Kind::Opaque(t) => match t.strip_prefix("[]") {
            Some(elem) => Value::list(
                node.map(|n| n.items())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| Value::object(Opaque::new(elem, Some(n))))
                    .collect(),
            ),
            None if t.starts_with("map") => match json {
                Some(j @ Json::Object(_)) => Value::from_json(j),
                _ => Value::map(Default::default()),
            },
            None => Value::object(Opaque::new(t, node)),
        },
        Kind::Time => Value::object(Opaque::new("v1.Time", node)),
        Kind::IntOrString => Value::object(IntOrString(json.cloned())),
        Kind::Enum(t) => Value::object(Enum::from_json(t, json)),
        Kind::Wrapper(w) => Value::object(Wrapper::new(w, json.cloned())),
        Kind::PtrStr => match json.and_then(Json::as_str) {
            Some(s) => Value::str(s),
            None => Value::object(NilScalar("*string")),
        },
        Kind::PtrInt32 => match json.and_then(Json::as_i64) {
            Some(n) => Value::Int(n, IntType::Int32),
            None => Value::object(NilScalar("*int32")),
        },
        Kind::PtrInt64 => match json.and_then(Json::as_i64) {
            Some(n) => Value::Int(n, IntType::Int64),
            None => Value::object(NilScalar("*int64")),
        },
        Kind::PtrBool => match json.and_then(Json::as_bool) {
            Some(b) => Value::Bool(b),
            None => Value::object(NilScalar("*bool")),
        },
    }
}

fn json_i64(json: Option<&Json>) -> i64 {
    match json {
        Some(Json::Number(n)) => n.as_i64().unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64),
        Some(Json::String(s)) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

/// The `map[string]string` of the object at `node`, telling each read to the recording (by key
/// for lookups).
fn watched_string_map(node: &JsonRef) -> Value {
    let entries = string_map_entries(Some(resolve(&node.root, &node.path)));
    let watch = super::reads::map_watch(node.root.clone(), node.path.clone());
    Value::Map(Arc::new(gotemplate::Map::watched(
        gotemplate::ElemType::String,
        entries,
        watch,
    )))
}

/// A `map[string]string` from a JSON object (non-string values are printed as JSON).
pub fn string_map(json: Option<&Json>) -> Value {
    Value::string_map(string_map_entries(json))
}

fn string_map_entries(json: Option<&Json>) -> std::collections::BTreeMap<String, Value> {
    json.and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = match v {
                        Json::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), Value::str(s))
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Object for GoStruct {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(if self.pointer {
            self.schema.ptr_type
        } else {
            self.schema.go_type
        })
    }

    fn kind(&self) -> ObjectKind {
        if self.pointer {
            ObjectKind::Pointer
        } else {
            ObjectKind::Struct
        }
    }

    fn is_nil(&self) -> bool {
        self.pointer && self.node.is_none()
    }

    fn has_field(&self, name: &str) -> bool {
        self.schema.position(name).is_some() || self.promoted(name).is_some()
    }

    fn field(&self, name: &str) -> Option<Value> {
        if self.is_nil() {
            return None;
        }
        match self.schema.position(name) {
            Some(index) => Some(self.field_value(index)),
            None => self.promoted(name)?.field(name),
        }
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        if name == GO_JSON_METHOD
            || name == RAW_JSON_METHOD
            || self.getter(name).is_some()
            || (name == PROTO_JSON_METHOD && self.schema.raw_json)
            || (name == "String" && self.schema.stringer.is_some())
            || self.schema.methods.iter().any(|(m, _)| *m == name)
        {
            Some(0)
        } else {
            None
        }
    }

    fn call_method(&self, name: &str, _args: &[Value]) -> Result<Value, String> {
        if name == GO_JSON_METHOD {
            let mut out = String::new();
            self.write_go_json(&mut out);
            return Ok(Value::str(out));
        }
        if name == PROTO_JSON_METHOD {
            return Ok(Value::str(if self.is_nil() {
                "{}".to_string()
            } else if std::ptr::eq(self.schema, &super::mesh::PROXY_CONFIG) {
                crate::mesh::proto_to_json(self.json())
            } else {
                let mut text = String::new();
                super::protojson::write_proto_json(&mut text, self.schema, self.json());
                text
            }));
        }
        if name == RAW_JSON_METHOD {
            return Ok(Value::str(if self.is_nil() {
                "null".to_string()
            } else {
                self.json().to_string()
            }));
        }
        if name == "String" {
            return Ok(Value::str(self.string().unwrap_or_default()));
        }
        if let Some((_, method)) = self.schema.methods.iter().find(|(m, _)| *m == name) {
            return Ok(method(self));
        }
        let field = self.getter(name).ok_or_else(|| format!("no method {name}"))?;
        if let Some(index) = self.schema.fields.iter().position(|f| std::ptr::eq(f, field)) {
            return Ok(if self.is_nil() {
                make_value(field.kind, None)
            } else {
                self.field_value(index)
            });
        }
        Ok(make_value(field.kind, self.child(field)))
    }

    fn format_v(&self, _plus: bool) -> String {
        if self.is_nil() {
            return "<nil>".into();
        }
        let parts: Vec<String> = (0..self.schema.fields.len())
            .map(|i| gotemplate::fmt::sprint(&[self.field_value(i)]))
            .collect();
        let body = format!("{{{}}}", parts.join(" "));
        if self.pointer { format!("&{body}") } else { body }
    }

    fn string(&self) -> Option<String> {
        if self.is_nil() {
            return None;
        }
        self.schema.stringer.map(|f| f(self.json()))
    }

    fn to_data(&self) -> Option<Value> {
        let mut out = String::new();
        self.write_go_json(&mut out);
        serde_json::from_str::<Json>(&out)
            .ok()
            .map(|j| Value::from_json(&j))
    }
}

/// A value of a type the schemas do not model field by field; carries its JSON.
#[derive(Debug)]
pub struct Opaque {
    type_name: &'static str,
    node: Option<JsonRef>,
}

impl Opaque {
    /// A value of Go type `type_name` backed by `node`.
    pub fn new(type_name: &'static str, node: Option<JsonRef>) -> Opaque {
        Opaque { type_name, node }
    }
}

impl Object for Opaque {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.type_name)
    }

    fn kind(&self) -> ObjectKind {
        if self.type_name.starts_with('*') {
            ObjectKind::Pointer
        } else {
            ObjectKind::Struct
        }
    }

    fn is_nil(&self) -> bool {
        self.node.is_none() && !matches!(self.kind(), ObjectKind::Struct)
    }

    fn len(&self) -> Option<usize> {
        self.node
            .as_ref()
            .and_then(|n| n.get().as_array().map(Vec::len))
            .or(if self.type_name.starts_with("[]") {
                Some(0)
            } else {
                None
            })
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == GO_JSON_METHOD || name == RAW_JSON_METHOD).then_some(0)
    }

    fn call_method(&self, _name: &str, _args: &[Value]) -> Result<Value, String> {
        if super::k8sjson::known(self.type_name) {
            let mut out = String::new();
            super::k8sjson::write_k8s(&mut out, self.type_name, self.node.as_ref().map(JsonRef::get));
            return Ok(Value::str(out));
        }
        Ok(Value::str(match &self.node {
            Some(n) => go_json_of_raw(n.get()),
            None if self.type_name.starts_with('*')
                || self.type_name.starts_with("[]")
                || self.type_name == "v1.Time" =>
            {
                "null".to_string()
            }
            None => "{}".to_string(),
        }))
    }

    fn to_data(&self) -> Option<Value> {
        Some(match &self.node {
            Some(n) => Value::from_json(n.get()),
            None => Value::Nil,
        })
    }
}

/// A nil pointer to a scalar (`*string`, `*int64`): prints `<nil>`.
#[derive(Debug)]
pub struct NilScalar(pub &'static str);

impl Object for NilScalar {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }

    fn is_nil(&self) -> bool {
        true
    }

    fn to_data(&self) -> Option<Value> {
        Some(Value::Nil)
    }
}

/// `intstr.IntOrString`: prints its value; `.IntValue` gives the integer (0 for a non-numeric
/// string, like Go's `Atoi` failure).
#[derive(Debug)]
pub struct IntOrString(Option<Json>);

impl IntOrString {
    fn text(&self) -> String {
        match &self.0 {
            Some(Json::String(s)) => s.clone(),
            Some(Json::Number(n)) => n.to_string(),
            _ => "0".to_string(),
        }
    }
}

impl Object for IntOrString {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("intstr.IntOrString")
    }

    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }

    fn has_field(&self, name: &str) -> bool {
        matches!(name, "Type" | "IntVal" | "StrVal")
    }

    fn field(&self, name: &str) -> Option<Value> {
        let is_str = matches!(self.0, Some(Json::String(_)));
        Some(match name {
            "Type" => Value::Int(i64::from(is_str), IntType::Int64),
            "IntVal" => Value::Int(
                if is_str {
                    0
                } else {
                    self.text().parse().unwrap_or(0)
                },
                IntType::Int32,
            ),
            "StrVal" => Value::str(if is_str { self.text() } else { String::new() }),
            _ => return None,
        })
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        matches!(name, "String" | "IntValue").then_some(0)
    }

    fn call_method(&self, name: &str, _args: &[Value]) -> Result<Value, String> {
        Ok(match name {
            "IntValue" => Value::int(self.text().parse().unwrap_or(0)),
            _ => Value::str(self.text()),
        })
    }

    fn string(&self) -> Option<String> {
        Some(self.text())
    }

    fn to_data(&self) -> Option<Value> {
        Some(match &self.0 {
            Some(j) => Value::from_json(j),
            None => Value::Int(0, IntType::Int),
        })
    }
}
