//! Protobuf JSON (golang/protobuf `jsonpb`, as Istio's `protomarshal.ToJSON` and the API types'
//! `MarshalJSON` write it) of a message described by a [`Schema`]: fields in declaration order,
//! camelCase names, proto3 zero values omitted, enums by name, wrappers unwrapped, durations
//! canonical (`45s`, `1.500s`), map keys sorted, `oneof` members at the oneof's position.

use serde_json::Value as Json;

use super::gostruct::{Kind, Schema};
use super::proto::WrapperKind;
use crate::gojson;
use crate::render::json::go_json_float;

/// Appends the protobuf JSON of the message `json` (protobuf JSON already, possibly with
/// defaults, unordered keys or zero values) of type `schema`.
pub fn write_proto_json(out: &mut String, schema: &Schema, json: &Json) {
    out.push('{');
    let mut first = true;
    for field in schema.fields {
        if let Kind::Opaque(t) = field.kind
            && t.contains(".is")
        {
            // A oneof: its members are separate JSON keys.
            for member in schema.oneof_getters {
                if let Some(v) = json.get(member.json) {
                    write_field(out, &mut first, member.json, member.kind, v);
                }
            }
            continue;
        }
        if let Some(v) = json.get(field.json) {
            write_field(out, &mut first, field.json, field.kind, v);
        }
    }
    out.push('}');
}

fn write_field(out: &mut String, first: &mut bool, name: &str, kind: Kind, v: &Json) {
    if is_zero(kind, v) {
        return;
    }
    if !*first {
        out.push(',');
    }
    *first = false;
    gojson::write_string(out, name);
    out.push(':');
    write_value(out, kind, v);
}

/// Whether proto3 JSON omits the value (unset, or the zero value of a scalar, enum or
/// collection; set messages and wrappers are always written).
fn is_zero(kind: Kind, v: &Json) -> bool {
    match (kind, v) {
        (_, Json::Null) => true,
        (Kind::Str, Json::String(s)) => s.is_empty(),
        (Kind::Int | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Float64, Json::Number(n)) => {
            n.as_f64() == Some(0.0)
        }
        (Kind::Bool, Json::Bool(b)) => !b,
        (Kind::Enum(t), Json::String(name)) => t.values.first().is_some_and(|(n, _)| n == name),
        (Kind::Enum(_), Json::Number(n)) => n.as_i64() == Some(0),
        (Kind::StrMap, Json::Object(m)) => m.is_empty(),
        (Kind::StrList | Kind::PtrList(_), Json::Array(a)) => a.is_empty(),
        (Kind::Opaque(t), Json::Array(a)) if t.starts_with("[]") => a.is_empty(),
        (Kind::Opaque(t), Json::Object(m)) if t.starts_with("map") => m.is_empty(),
        _ => false,
    }
}

fn write_value(out: &mut String, kind: Kind, v: &Json) {
    match (kind, v) {
        (Kind::Enum(t), Json::Number(n)) => {
            let name = n
                .as_i64()
                .and_then(|n| t.values.iter().find(|(_, x)| i64::from(*x) == n))
                .map(|(name, _)| *name);
            match name {
                Some(name) => gojson::write_string(out, name),
                None => out.push_str(&n.to_string()),
            }
        }
        (Kind::Wrapper(WrapperKind::Duration), Json::String(s)) => {
            gojson::write_string(out, &crate::mesh::canonical_duration(s));
        }
        (Kind::Float64 | Kind::Wrapper(WrapperKind::Double), Json::Number(n)) => {
            let x = n.as_f64().unwrap_or(0.0);
            out.push_str(&go_json_float(x).unwrap_or_else(|_| n.to_string()));
        }
        (Kind::StrMap, Json::Object(m)) => write_sorted(out, m),
        (Kind::Opaque(t), Json::Object(m)) if t.starts_with("map") => write_sorted(out, m),
        (Kind::Ptr(s), Json::Object(_)) => write_proto_json(out, s, v),
        (Kind::PtrList(s), Json::Array(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_proto_json(out, s, item);
            }
            out.push(']');
        }
        _ => out.push_str(&gojson::to_string(v)),
    }
}

fn write_sorted(out: &mut String, m: &serde_json::Map<String, Json>) {
    gojson::write_sorted_object(out, m, gojson::write_value);
}
