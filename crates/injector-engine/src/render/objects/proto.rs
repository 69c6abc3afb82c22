//! Protobuf leaf types as Go sees them: enums (print their name through `String()`, carry a
//! number), `*durationpb.Duration` and the `wrapperspb` wrappers (nil when unset, `.Value`,
//! nil-safe `.GetValue`).

use std::borrow::Cow;

use gotemplate::{IntType, Object, ObjectKind, UintType, Value};
use serde_json::Value as Json;

use super::RAW_JSON_METHOD;

/// A protobuf enum type: its Go name and its values.
#[derive(Debug)]
pub struct EnumType {
    /// `%T`, e.g. `v1alpha1.ProxyConfig_InboundInterceptionMode`.
    pub go_type: &'static str,
    /// Names and numbers.
    pub values: &'static [(&'static str, i32)],
}

/// An enum value.
#[derive(Debug, Clone, Copy)]
pub struct Enum {
    ty: &'static EnumType,
    number: i32,
}

impl Enum {
    /// The value from protobuf JSON (a name or a number; absent is 0).
    pub fn from_json(ty: &'static EnumType, json: Option<&Json>) -> Enum {
        let number = match json {
            Some(Json::String(name)) => ty.values.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v),
            Some(Json::Number(n)) => n.as_i64().and_then(|n| i32::try_from(n).ok()).unwrap_or(0),
            _ => 0,
        };
        Enum { ty, number }
    }

    /// The name (Go's `String()`), or the number when it has none.
    pub fn name(&self) -> String {
        self.ty
            .values
            .iter()
            .find(|(_, v)| *v == self.number)
            .map_or_else(|| self.number.to_string(), |(n, _)| (*n).to_string())
    }
}

impl Object for Enum {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.ty.go_type)
    }

    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        matches!(name, "String" | "Number").then_some(0)
    }

    fn call_method(&self, name: &str, _args: &[Value]) -> Result<Value, String> {
        match name {
            "Number" => Ok(Value::Int(i64::from(self.number), IntType::Int32)),
            _ => Ok(Value::str(self.name())),
        }
    }

    fn string(&self) -> Option<String> {
        Some(self.name())
    }

    fn to_data(&self) -> Option<Value> {
        Some(Value::Int(i64::from(self.number), IntType::Int32))
    }
}

/// Which well-known type a [`Wrapper`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapperKind {
    /// `*durationpb.Duration`
    Duration,
    /// `*wrapperspb.BoolValue`
    Bool,
    /// `*wrapperspb.Int32Value`
    Int32,
    /// `*wrapperspb.UInt32Value`
    UInt32,
    /// `*wrapperspb.DoubleValue`
    Double,
    /// `*wrapperspb.StringValue`
    String,
}

/// A pointer to a well-known message; nil when the field is unset.
#[derive(Debug)]
pub struct Wrapper {
    kind: WrapperKind,
    json: Option<Json>,
}

impl Wrapper {
    /// The wrapper for a protobuf-JSON value (`None`/null: nil).
    pub fn new(kind: WrapperKind, json: Option<Json>) -> Wrapper {
        Wrapper {
            kind,
            json: json.filter(|j| !j.is_null()),
        }
    }

    /// The duration in nanoseconds (0 when nil or malformed).
    pub fn nanos(&self) -> i64 {
        match &self.json {
            Some(Json::String(s)) => gocompat::duration::parse(s).unwrap_or(0),
            _ => 0,
        }
    }

    fn inner(&self) -> Value {
        let j = self.json.as_ref();
        match self.kind {
            WrapperKind::Duration => Value::Missing,
            WrapperKind::Bool => Value::Bool(j.and_then(Json::as_bool).unwrap_or(false)),
            WrapperKind::Int32 => Value::Int(j.and_then(Json::as_i64).unwrap_or(0), IntType::Int32),
            WrapperKind::UInt32 => Value::Uint(j.and_then(Json::as_u64).unwrap_or(0), UintType::Uint32),
            WrapperKind::Double => Value::Float(j.and_then(Json::as_f64).unwrap_or(0.0)),
            WrapperKind::String => Value::str(j.and_then(Json::as_str).unwrap_or("")),
        }
    }

    fn seconds_nanos(&self) -> (i64, i64) {
        let n = self.nanos();
        (n / 1_000_000_000, n % 1_000_000_000)
    }
}

impl Object for Wrapper {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(match self.kind {
            WrapperKind::Duration => "*durationpb.Duration",
            WrapperKind::Bool => "*wrapperspb.BoolValue",
            WrapperKind::Int32 => "*wrapperspb.Int32Value",
            WrapperKind::UInt32 => "*wrapperspb.UInt32Value",
            WrapperKind::Double => "*wrapperspb.DoubleValue",
            WrapperKind::String => "*wrapperspb.StringValue",
        })
    }

    fn is_nil(&self) -> bool {
        self.json.is_none()
    }

    fn has_field(&self, name: &str) -> bool {
        match self.kind {
            WrapperKind::Duration => matches!(name, "Seconds" | "Nanos"),
            _ => name == "Value",
        }
    }

    fn field(&self, name: &str) -> Option<Value> {
        if self.is_nil() || !self.has_field(name) {
            return None;
        }
        let (s, n) = self.seconds_nanos();
        Some(match name {
            "Seconds" => Value::Int(s, IntType::Int64),
            "Nanos" => Value::Int(n, IntType::Int32),
            _ => self.inner(),
        })
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        let ok = match self.kind {
            WrapperKind::Duration => {
                matches!(name, "GetSeconds" | "GetNanos" | "AsDuration")
            }
            _ => name == "GetValue",
        };
        (ok || name == RAW_JSON_METHOD).then_some(0)
    }

    fn call_method(&self, name: &str, _args: &[Value]) -> Result<Value, String> {
        let (s, n) = self.seconds_nanos();
        Ok(match name {
            "GetSeconds" => Value::Int(s, IntType::Int64),
            "GetNanos" => Value::Int(n, IntType::Int32),
            "AsDuration" => Value::object(GoDuration(self.nanos())),
            RAW_JSON_METHOD => Value::str(
                self.json
                    .as_ref()
                    .map_or_else(|| "null".to_string(), Json::to_string),
            ),
            _ => self.inner(),
        })
    }

    fn string(&self) -> Option<String> {
        // Protobuf text format (Go randomises the spacing; this is one of its forms).
        let json = self.json.as_ref()?;
        Some(match self.kind {
            WrapperKind::Duration => {
                let (s, n) = self.seconds_nanos();
                match (s, n) {
                    (0, 0) => String::new(),
                    (s, 0) => format!("seconds:{s}"),
                    (0, n) => format!("nanos:{n}"),
                    (s, n) => format!("seconds:{s} nanos:{n}"),
                }
            }
            WrapperKind::String => format!("value:{}", gocompat::strconv::quote(json.as_str().unwrap_or(""))),
            _ => format!("value:{json}"),
        })
    }

    fn to_data(&self) -> Option<Value> {
        Some(match &self.json {
            None => Value::Nil,
            Some(j) => Value::from_json(j),
        })
    }
}

/// A Go `time.Duration` (prints as `45s`).
#[derive(Debug)]
pub struct GoDuration(pub i64);

impl Object for GoDuration {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("time.Duration")
    }

    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }

    fn string(&self) -> Option<String> {
        Some(gocompat::duration::format(self.0))
    }

    fn to_data(&self) -> Option<Value> {
        Some(Value::Int(self.0, IntType::Int64))
    }
}
