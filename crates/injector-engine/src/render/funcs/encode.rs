//! Encoding functions: `fromJSON` (the string `"{}"` on error), `structToJSON`
//! (`encoding/json`), `protoToJSON` (a ProxyConfig without its defaults), `toYaml`
//! (`sigs.k8s.io/yaml`, "" on error) and `formatDuration`.

use gotemplate::{ArgType, Func, FuncMap, Value};

use super::{arg_str, wrong_type};
use crate::render::json::{go_json, to_json_data};
use crate::render::objects::PROTO_JSON_METHOD;
use crate::render::yaml::to_yaml;

pub(crate) fn register(m: &mut FuncMap) {
    use ArgType::{Any, Str};
    m.insert("fromJSON", Func::new(&[Str], |a| Ok(from_json(arg_str(&a[0])))));
    m.insert(
        "structToJSON",
        Func::new(&[Any], |a| {
            Ok(Value::str(match &a[0] {
                Value::Nil | Value::Missing => "{}".to_string(),
                v => go_json(v).unwrap_or_else(|_| "{}".into()),
            }))
        }),
    );
    m.insert(
        "protoToJSON",
        Func::new(&[Any], |a| proto_to_json(&a[0]).map(Value::str)),
    );
    m.insert(
        "toYaml",
        Func::new(&[Any], |a| Ok(Value::str(to_yaml_value(&a[0])))),
    );
    m.insert(
        "formatDuration",
        Func::new(&[Any], |a| match &a[0] {
            Value::Object(o) if o.type_name() == "*durationpb.Duration" => {
                let nanos = match o.call_method("AsDuration", &[]) {
                    Ok(Value::Object(d)) => d.string().unwrap_or_default(),
                    _ => "0s".to_string(),
                };
                Ok(Value::str(nanos))
            }
            v => Err(format!(
                "can't handle {} for arg of type *durationpb.Duration",
                gotemplate::fmt::sprintf("%#v", std::slice::from_ref(v))
            )),
        }),
    );
}

/// Istio's `fromJSON`: the decoded value, or the *string* `{}` when `text` is not JSON.
pub fn from_json(text: &str) -> Value {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => Value::from_json(&v),
        Err(_) => Value::str("{}"),
    }
}

/// Istio's `toYaml`: `sigs.k8s.io/yaml` of the value, "" when it cannot be marshalled.
pub fn to_yaml_value(v: &Value) -> String {
    match to_json_data(v) {
        Ok(json) => to_yaml(&json),
        Err(_) => String::new(),
    }
}

/// Istio's `protoToJSON`: for a ProxyConfig, compact protobuf JSON without default fields.
fn proto_to_json(v: &Value) -> Result<String, String> {
    match v {
        Value::Object(o) if o.method_arity(PROTO_JSON_METHOD).is_some() => {
            match o.call_method(PROTO_JSON_METHOD, &[]) {
                Ok(Value::String(s)) => Ok(s.to_string()),
                _ => Ok("{}".into()),
            }
        }
        v => Err(wrong_type("protoreflect.ProtoMessage", v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_json_invalid_is_the_string_braces() {
        assert_eq!(from_json("{nope"), Value::str("{}"));
        assert_eq!(from_json(""), Value::str("{}"));
        assert_eq!(from_json("null"), Value::Nil);
    }

    #[test]
    fn to_yaml_keeps_trailing_newline() {
        let v = Value::from_json(&serde_json::json!({"b": 2, "a": [1]}));
        assert_eq!(to_yaml_value(&v), "a:\n- 1\nb: 2\n");
        assert_eq!(to_yaml_value(&Value::Nil), "null\n");
        assert_eq!(to_yaml_value(&Value::Float(f64::NAN)), "");
    }
}
