//! Decoding `request.object` without its `metadata.managedFields`.
//!
//! The API server stamps every pod with the field ownership of whoever wrote it: on a pod a
//! controller made that is a third of the object or more. An injector that ignores it (as
//! Istio's does: it drops the field before injecting and keeps it out of its patch) has no use
//! for it decoded, so it is only read over (its JSON checked, nothing kept). Everything else
//! decodes exactly as [`Value`] would decode it: the same numbers, the same order of keys and,
//! for a repeated key, the last value in the first one's place.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// `request.object` decoded without `metadata.managedFields` (see the module's header).
pub(super) struct WithoutManagedFields(pub(super) Value);

impl<'de> de::Deserialize<'de> for WithoutManagedFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(ValueSkipping { level: Level::Object })
            .map(WithoutManagedFields)
    }
}

/// Where the value being decoded sits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object itself: its `metadata` is read without `managedFields`.
    Object,
    /// The object's `metadata`: its `managedFields` is skipped.
    Metadata,
}

/// A [`Value`] visitor that skips `managedFields` at the [`Level::Metadata`] level.
#[derive(Clone, Copy)]
struct ValueSkipping {
    level: Level,
}

impl<'de> DeserializeSeed<'de> for ValueSkipping {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSkipping {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        // Only the object's and its metadata's own members are special; an array's items are
        // plain values.
        de::Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match (self.level, key.as_str()) {
                (Level::Object, "metadata") => map.next_value_seed(ValueSkipping {
                    level: Level::Metadata,
                })?,
                (Level::Metadata, "managedFields") => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                _ => map.next_value::<Value>()?,
            };
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(text: &str) -> Value {
        serde_json::from_str::<WithoutManagedFields>(text)
            .expect("decodes")
            .0
    }

    #[test]
    fn managed_fields_are_left_out_and_the_rest_decodes_as_a_value_would() {
        let text = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","managedFields":[{"manager":"kube-controller-manager","fieldsV1":{"f:spec":{}}}],"labels":{"app":"web"},"uid":"u"},"spec":{"containers":[{"name":"app","managedFields":1,"n":1.5,"big":18446744073709551615,"neg":-3,"none":null,"yes":true}]},"managedFields":"stays"}"#;
        let mut expected: Value = serde_json::from_str(text).expect("json");
        expected["metadata"]
            .as_object_mut()
            .expect("metadata")
            .shift_remove("managedFields");
        let decoded = decode(text);
        assert_eq!(decoded, expected);
        assert_eq!(
            serde_json::to_string(&decoded).expect("encodes"),
            serde_json::to_string(&expected).expect("encodes"),
            "the same key order"
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_its_last_value_as_a_value_does() {
        let text = r#"{"metadata":{"labels":{"a":"1"},"managedFields":[],"name":"x","labels":{"b":"2"}},"spec":{},"metadata":{"name":"y"}}"#;
        let expected: Value = serde_json::from_str(text).expect("json");
        assert_eq!(expected, json!({"metadata": {"name": "y"}, "spec": {}}));
        assert_eq!(decode(text), expected);
        let inner = r#"{"metadata":{"labels":{"a":"1"},"managedFields":[],"name":"x","labels":{"b":"2"}}}"#;
        let decoded = decode(inner);
        assert_eq!(
            serde_json::to_string(&decoded).expect("encodes"),
            r#"{"metadata":{"labels":{"b":"2"},"name":"x"}}"#
        );
    }

    #[test]
    fn metadata_that_is_not_an_object_decodes_as_it_is() {
        for text in [
            r#"{"metadata":"x"}"#,
            r#"{"metadata":[{"managedFields":1}]}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":7}"#,
            r#"[1,{"metadata":{"managedFields":1}}]"#,
            r#""pod""#,
        ] {
            let expected: Value = serde_json::from_str(text).expect("json");
            assert_eq!(decode(text), expected, "{text}");
        }
    }

    #[test]
    fn broken_json_in_the_skipped_field_is_still_an_error() {
        let error =
            serde_json::from_str::<WithoutManagedFields>(r#"{"metadata":{"managedFields":[{"manager":]}}"#)
                .err()
                .expect("fails");
        assert!(error.to_string().contains("expected value"), "{error}");
    }
}
