//! Go's `encoding/json` for Kubernetes and Gateway API types, driven by the generated field
//! table (`k8s_types.tsv`, read once): fields in Go declaration order, `omitempty` and
//! `omitzero`, embedded (`inline`) structs flattened, map keys sorted, unknown JSON keys
//! dropped (Go drops them when decoding), and the custom marshallers of `resource.Quantity`
//! (canonical form), `intstr.IntOrString` and `metav1.Time`.

use serde_json::Value as Json;

use std::sync::OnceLock;

use crate::gojson;

/// A struct field: JSON name (empty when embedded), Go type, `omitempty`, `omitzero`, inline.
pub type FieldDef = (&'static str, &'static str, bool, bool, bool);

/// The struct types (with their fields) and the named non-struct types (with their underlying
/// types), each sorted by name.
struct Table {
    structs: Vec<(&'static str, Vec<FieldDef>)>,
    aliases: Vec<(&'static str, &'static str)>,
}

/// The generated table, read the first time it is needed.
fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Table {
            structs: Vec::new(),
            aliases: Vec::new(),
        };
        for line in include_str!("k8s_types.tsv").lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('@') {
                table.structs.push((name, Vec::new()));
            } else if let Some((name, underlying)) = line.strip_prefix('=').and_then(|a| a.split_once('\t')) {
                table.aliases.push((name, underlying));
            } else if let Some((_, fields)) = table.structs.last_mut() {
                let mut parts = line.split('\t');
                let (json, ty, flags) = (
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                let flag = |name: &str| flags.split(',').any(|flag| flag == name);
                fields.push((json, ty, flag("omitempty"), flag("omitzero"), flag("inline")));
            }
        }
        table
    })
}

/// The fields of a struct type, trying the Kubernetes (`v1.`), meta (`metav1.`) and Gateway API
/// (`gwv1.`) spellings of a `v1.X` name, as templates print them.
pub fn struct_fields(name: &str) -> Option<(&'static str, &'static [FieldDef])> {
    let structs = &table().structs;
    let find = |n: &str| {
        structs
            .binary_search_by(|(k, _)| (*k).cmp(n))
            .ok()
            .map(|i| (structs[i].0, structs[i].1.as_slice()))
    };
    if let Some(found) = find(name) {
        return Some(found);
    }
    let short = name.strip_prefix("v1.")?;
    find(&format!("metav1.{short}")).or_else(|| find(&format!("gwv1.{short}")))
}

fn alias(name: &str) -> Option<&'static str> {
    let aliases = &table().aliases;
    aliases
        .binary_search_by(|(k, _)| (*k).cmp(name))
        .ok()
        .map(|i| aliases[i].1)
}

/// Whether the table knows the type (after pointers, slices and maps).
pub fn known(ty: &str) -> bool {
    let base = ty.trim_start_matches(['*', '[', ']']);
    struct_fields(base).is_some() || alias(base).is_some()
}

/// Appends the `encoding/json` form of `json` read as Go type `ty`.
pub fn write_k8s(out: &mut String, ty: &str, json: Option<&Json>) {
    let json = json.filter(|j| !j.is_null());
    if let Some(inner) = ty.strip_prefix('*') {
        match json {
            None => out.push_str("null"),
            Some(_) => write_k8s(out, inner, json),
        }
        return;
    }
    if let Some(elem) = ty.strip_prefix("[]") {
        match json {
            Some(Json::Array(items)) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_k8s(out, elem, Some(item));
                }
                out.push(']');
            }
            Some(other) => out.push_str(&gojson::to_string(other)),
            None => out.push_str("null"),
        }
        return;
    }
    if let Some(rest) = ty.strip_prefix("map[") {
        let value_ty = rest.split_once(']').map_or("", |(_, v)| v);
        match json {
            Some(Json::Object(m)) => {
                gojson::write_sorted_object(out, m, |out, value| write_k8s(out, value_ty, Some(value)));
            }
            Some(other) => out.push_str(&gojson::to_string(other)),
            None => out.push_str("null"),
        }
        return;
    }
    match ty {
        "string" => match json {
            Some(Json::String(s)) => gojson::write_string(out, s),
            Some(other) => out.push_str(&gojson::to_string(other)),
            None => out.push_str("\"\""),
        },
        "bool" => out.push_str(if json.and_then(Json::as_bool).unwrap_or(false) {
            "true"
        } else {
            "false"
        }),
        "int" | "int32" | "int64" | "uint32" | "uint64" | "float64" | "byte" => match json {
            Some(n @ Json::Number(_)) => out.push_str(&gojson::to_string(n)),
            Some(other) => out.push_str(&gojson::to_string(other)),
            None => out.push('0'),
        },
        "resource.Quantity" => match json {
            Some(Json::String(s)) => {
                gojson::write_string(out, &crate::quantity::canonical(s).unwrap_or_else(|| s.clone()));
            }
            Some(Json::Number(n)) => {
                let s = n.to_string();
                gojson::write_string(out, &crate::quantity::canonical(&s).unwrap_or(s));
            }
            Some(other) => out.push_str(&gojson::to_string(other)),
            None => out.push_str("\"0\""),
        },
        "intstr.IntOrString" => match json {
            Some(v) => out.push_str(&gojson::to_string(v)),
            None => out.push('0'),
        },
        "metav1.Time" | "metav1.MicroTime" => match json {
            Some(v) => out.push_str(&gojson::to_string(v)),
            None => out.push_str("null"),
        },
        _ => {
            if let Some((_, fields)) = struct_fields(ty) {
                let empty = serde_json::Map::new();
                let obj = json.and_then(Json::as_object).unwrap_or(&empty);
                out.push('{');
                let mut first = true;
                write_fields(out, fields, obj, &mut first);
                out.push('}');
            } else if let Some(underlying) = alias(ty) {
                write_k8s(out, underlying, json);
            } else {
                match json {
                    Some(v) => out.push_str(&gojson::to_string(v)),
                    None => out.push_str("null"),
                }
            }
        }
    }
}

fn write_fields(
    out: &mut String,
    fields: &[FieldDef],
    obj: &serde_json::Map<String, Json>,
    first: &mut bool,
) {
    for &(name, ty, omitempty, omitzero, inline) in fields {
        if inline {
            if let Some((_, inner)) = struct_fields(ty.trim_start_matches('*')) {
                write_fields(out, inner, obj, first);
            }
            continue;
        }
        let value = obj.get(name).filter(|v| !v.is_null());
        if (omitempty && is_empty(ty, value)) || (omitzero && is_zero(ty, value)) {
            continue;
        }
        if !*first {
            out.push(',');
        }
        *first = false;
        gojson::write_string(out, name);
        out.push(':');
        write_k8s(out, ty, value);
    }
}

fn underlying(ty: &str) -> &str {
    let mut t = ty;
    while let Some(next) = alias(t) {
        t = next;
    }
    t
}

/// Go's `omitempty`: false, 0, "", a nil pointer, an empty slice or map. Structs never are.
fn is_empty(ty: &str, value: Option<&Json>) -> bool {
    if ty.starts_with('*') {
        // A pointer is empty only when nil (a pointer to 0 or "" is written).
        return value.is_none();
    }
    let ty = underlying(ty);
    let is_struct = !ty.starts_with(['*', '[']) && !ty.starts_with("map[") && struct_or_custom(ty);
    match value {
        None => !is_struct,
        Some(v) => match v {
            Json::String(s) => s.is_empty() && !is_struct,
            Json::Number(n) => n.as_f64() == Some(0.0) && !is_struct,
            Json::Bool(b) => !b,
            Json::Array(a) => a.is_empty(),
            Json::Object(m) => m.is_empty() && ty.starts_with("map["),
            Json::Null => true,
        },
    }
}

fn struct_or_custom(ty: &str) -> bool {
    matches!(
        ty,
        "resource.Quantity" | "intstr.IntOrString" | "metav1.Time" | "metav1.MicroTime"
    ) || struct_fields(ty).is_some()
}

/// Go's `omitzero`: the zero value (for structs: absent or with no fields set).
fn is_zero(ty: &str, value: Option<&Json>) -> bool {
    match value {
        None => true,
        Some(Json::Object(m)) => m.values().all(Json::is_null) || m.is_empty(),
        Some(v) => is_empty(ty, Some(v)) && !matches!(v, Json::Object(_)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(ty: &str, json: serde_json::Value) -> String {
        let mut out = String::new();
        write_k8s(&mut out, ty, Some(&json));
        out
    }

    #[test]
    fn go_field_order_and_omitempty() {
        assert_eq!(
            k8s(
                "v1.VolumeMount",
                serde_json::json!({"mountPath": "/v", "readOnly": true, "name": "v", "bogus": 1})
            ),
            r#"{"name":"v","readOnly":true,"mountPath":"/v"}"#
        );
        assert_eq!(
            k8s(
                "v1.Volume",
                serde_json::json!({"name": "p", "projected": {"defaultMode": 420, "sources": []}})
            ),
            r#"{"name":"p","projected":{"sources":[],"defaultMode":420}}"#
        );
        assert_eq!(
            k8s(
                "v1.ResourceRequirements",
                serde_json::json!({"requests": {"memory": "1024Mi", "cpu": "0.5"}})
            ),
            r#"{"requests":{"cpu":"500m","memory":"1Gi"}}"#
        );
        assert_eq!(
            k8s("v1.ObjectMeta", serde_json::json!({"name": "x"})),
            r#"{"name":"x"}"#
        );
    }
}
