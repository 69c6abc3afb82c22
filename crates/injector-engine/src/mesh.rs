//! Mesh configuration and per-pod ProxyConfig (Istio's `pkg/config/mesh`).
//!
//! Both are protobuf messages that users write as YAML. We keep them in their protobuf-JSON form
//! (`serde_json::Value`, camelCase keys) and know the ProxyConfig schema field by field, which gives
//! us three things Istio relies on:
//!
//! - **Defaults and merging**: `DefaultMeshConfig()` overlaid with the `mesh` YAML (fields
//!   override, `defaultConfig` is merged with `proxyMetadata` merged key by key, extension
//!   providers replaced by name, trust-domain aliases unioned), and the pod annotation
//!   `proxy.istio.io/config` merged over the mesh's `defaultConfig` the same way.
//! - **Validation**: an annotation with a wrong type or a malformed duration is an error naming the
//!   field, as protobuf's JSON decoding makes it in Istio. Unknown fields are dropped: Istio's
//!   `ApplyYAML` decodes strictly, then, on any error, once more allowing unknown fields.
//! - **`protoToJSON`**: the `PROXY_CONFIG` env var is the ProxyConfig minus the fields equal to
//!   their defaults, as compact protobuf JSON in `proxy.proto` declaration order.

use serde_json::{Map, Value};

use crate::gojson;

/// The annotation holding a per-pod ProxyConfig.
pub const PROXY_CONFIG_ANNOTATION: &str = "proxy.istio.io/config";

/// How a ProxyConfig field is typed in `proxy.proto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Duration,
    Int32Value,
    BoolValue,
    Enum(&'static [&'static str]),
    StrMap,
    StrList,
    Message,
}

const INTERCEPTION_MODES: &[&str] = &["REDIRECT", "TPROXY", "NONE"];
const AUTH_POLICIES: &[&str] = &["NONE", "MUTUAL_TLS", "INHERIT"];
const TRACING_SERVICE_NAMES: &[&str] = &[
    "APP_LABEL_AND_NAMESPACE",
    "CANONICAL_NAME_ONLY",
    "CANONICAL_NAME_AND_NAMESPACE",
];

/// ProxyConfig's fields in declaration order (the order protobuf JSON prints them in).
const PROXY_CONFIG_FIELDS: &[(&str, Kind)] = &[
    ("configPath", Kind::Str),
    ("binaryPath", Kind::Str),
    ("serviceCluster", Kind::Str),
    ("tracingServiceName", Kind::Enum(TRACING_SERVICE_NAMES)),
    ("drainDuration", Kind::Duration),
    ("parentShutdownDuration", Kind::Duration),
    ("discoveryAddress", Kind::Str),
    ("discoveryRefreshDelay", Kind::Duration),
    ("zipkinAddress", Kind::Str),
    ("statsdUdpAddress", Kind::Str),
    ("envoyMetricsServiceAddress", Kind::Str),
    ("proxyAdminPort", Kind::Int),
    ("availabilityZone", Kind::Str),
    ("controlPlaneAuthPolicy", Kind::Enum(AUTH_POLICIES)),
    ("customConfigFile", Kind::Str),
    ("statNameLength", Kind::Int),
    ("concurrency", Kind::Int32Value),
    ("proxyBootstrapTemplatePath", Kind::Str),
    ("interceptionMode", Kind::Enum(INTERCEPTION_MODES)),
    ("tracing", Kind::Message),
    ("sds", Kind::Message),
    ("envoyAccessLogService", Kind::Message),
    ("envoyMetricsService", Kind::Message),
    ("proxyMetadata", Kind::StrMap),
    ("runtimeValues", Kind::StrMap),
    ("statusPort", Kind::Int),
    ("extraStatTags", Kind::StrList),
    ("gatewayTopology", Kind::Message),
    ("terminationDrainDuration", Kind::Duration),
    ("meshId", Kind::Str),
    ("readinessProbe", Kind::Message),
    ("proxyStatsMatcher", Kind::Message),
    ("holdApplicationUntilProxyStarts", Kind::BoolValue),
    ("caCertificatesPem", Kind::StrList),
    ("image", Kind::Message),
    ("privateKeyProvider", Kind::Message),
    ("proxyHeaders", Kind::Message),
    ("fileFlushInterval", Kind::Duration),
    ("fileFlushMinSizeKb", Kind::Int),
];

/// Fields `protoToJSON` drops when they equal `DefaultProxyConfig()` (Istio's `cleanProxyConfig`).
const CLEANED_FIELDS: &[&str] = &[
    "configPath",
    "binaryPath",
    "controlPlaneAuthPolicy",
    "serviceCluster",
    "drainDuration",
    "terminationDrainDuration",
    "discoveryAddress",
    "envoyMetricsService",
    "envoyAccessLogService",
    "tracing",
    "proxyAdminPort",
    "statNameLength",
    "statusPort",
    "concurrency",
];

/// A mesh or proxy configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MeshError(pub String);

/// Istio's `DefaultProxyConfig()`, in protobuf-JSON form.
pub fn default_proxy_config() -> Value {
    DEFAULT_PROXY_CONFIG.clone()
}

/// [`default_proxy_config`], built once: `protoToJSON` compares every injection's ProxyConfig
/// with it.
static DEFAULT_PROXY_CONFIG: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(build_default_proxy_config);

fn build_default_proxy_config() -> Value {
    serde_json::json!({
        "configPath": "./etc/istio/proxy",
        "binaryPath": "/usr/local/bin/envoy",
        "serviceCluster": "istio-proxy",
        "drainDuration": "45s",
        "discoveryAddress": "istiod.istio-system.svc:15012",
        "proxyAdminPort": 15000,
        "controlPlaneAuthPolicy": "MUTUAL_TLS",
        "statNameLength": 189,
        "statusPort": 15020,
        "terminationDrainDuration": "5s"
    })
}

/// Istio's `DefaultMeshConfig()`, in protobuf-JSON form.
pub fn default_mesh_config() -> Value {
    serde_json::json!({
        "proxyListenPort": 15001,
        "proxyInboundListenPort": 15006,
        "connectTimeout": "10s",
        "protocolDetectionTimeout": "0s",
        "ingressClass": "istio",
        "ingressService": "istio-ingressgateway",
        "ingressControllerMode": "STRICT",
        "enableTracing": true,
        "accessLogEncoding": "TEXT",
        "defaultConfig": default_proxy_config(),
        "outboundTrafficPolicy": {"mode": "ALLOW_ANY"},
        "inboundTrafficPolicy": {"mode": "PASSTHROUGH"},
        "trustDomain": "cluster.local",
        "trustDomainAliases": [],
        "enableAutoMtls": true,
        "defaultServiceExportTo": ["*"],
        "defaultVirtualServiceExportTo": ["*"],
        "defaultDestinationRuleExportTo": ["*"],
        "rootNamespace": "istio-system",
        "localityLbSetting": {"enabled": true},
        "dnsRefreshRate": "60s",
        "enablePrometheusMerge": true,
        "extensionProviders": [
            {"name": "prometheus", "prometheus": {}},
            {"name": "stackdriver", "stackdriver": {}},
            {"name": "envoy", "envoyFileAccessLog": {"path": "/dev/stdout"}}
        ],
        "defaultProviders": {"metrics": ["prometheus"]}
    })
}

/// Overlays mesh YAML on a mesh configuration (Istio's `ApplyMeshConfig`).
pub fn apply_mesh_config(yaml: &str, base: &Value) -> Result<Value, MeshError> {
    overlay_mesh_config(parse_object(yaml, "mesh config")?, base)
}

/// [`apply_mesh_config`] of an overlay already decoded (e.g. an IstioOperator's `meshConfig`).
pub fn overlay_mesh_config(overlay: Map<String, Value>, base: &Value) -> Result<Value, MeshError> {
    let mut mesh = base.clone();
    let Some(target) = mesh.as_object_mut() else {
        return Err(MeshError("mesh config: the base is not an object".into()));
    };
    for (key, value) in overlay {
        let key = camel_case(&key);
        match key.as_str() {
            "defaultConfig" => {
                let current = target
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                // Istio decodes the mesh strictly, then leniently: unknown fields are dropped.
                let merged = merge_proxy_value(&value, &current, "defaultConfig")?;
                target.insert(key, merged);
            }
            "defaultProviders" => {
                let mut current = target
                    .get(&key)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if let Value::Object(new) = value {
                    current.extend(new);
                }
                target.insert(key, Value::Object(current));
            }
            "extensionProviders" => {
                let mut providers = target
                    .get(&key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for provider in value.as_array().into_iter().flatten() {
                    let name = provider.get("name");
                    match providers.iter_mut().find(|p| p.get("name") == name) {
                        Some(existing) => *existing = provider.clone(),
                        None => providers.push(provider.clone()),
                    }
                }
                target.insert(key, Value::Array(providers));
            }
            "trustDomainAliases" => {
                let mut aliases: Vec<String> = target
                    .get(&key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .chain(value.as_array().into_iter().flatten())
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                aliases.sort();
                aliases.dedup();
                target.insert(key, aliases.into_iter().map(Value::from).collect());
            }
            _ => {
                target.insert(key, value);
            }
        }
    }
    Ok(mesh)
}

/// The ProxyConfig of a pod without the `proxy.istio.io/config` annotation: the mesh
/// `defaultConfig`.
pub fn mesh_proxy_config(mesh: &Value) -> Value {
    mesh.get("defaultConfig")
        .cloned()
        .unwrap_or_else(default_proxy_config)
}

/// The pod's effective ProxyConfig: the mesh `defaultConfig` with the pod's
/// `proxy.istio.io/config` annotation merged over it.
pub fn effective_proxy_config(mesh: &Value, annotation: Option<&str>) -> Result<Value, MeshError> {
    let base = mesh_proxy_config(mesh);
    match annotation {
        None => Ok(base),
        Some(yaml) => {
            let overlay = parse_object(yaml, "proxy config")?;
            merge_proxy_value(&Value::Object(overlay), &base, "proxy config")
        }
    }
}

/// Checks a `proxy.istio.io/config` value: it must be a ProxyConfig (Istio's `validateProxyConfig`).
pub fn validate_proxy_config(yaml: &str) -> Result<(), String> {
    let overlay = parse_object(yaml, "proxy config").map_err(|e| e.0)?;
    merge_proxy_value(&Value::Object(overlay), &DEFAULT_PROXY_CONFIG, "proxy config")
        .map(drop)
        .map_err(|e| format!("failed to convert to apply proxy config: {}", e.0))
}

/// Merges a ProxyConfig overlay: each field set in the overlay replaces the base's, except
/// `proxyMetadata`, merged key by key (the overlay wins). Every field is type-checked; an unknown
/// field is dropped, as Istio's lenient second decode drops it (the mesh's `defaultConfig` and the
/// `proxy.istio.io/config` annotation alike).
fn merge_proxy_value(overlay: &Value, base: &Value, at: &str) -> Result<Value, MeshError> {
    let Value::Object(overlay) = overlay else {
        return Err(MeshError(format!(
            "{at}: must be a mapping of ProxyConfig fields"
        )));
    };
    let mut merged = base.as_object().cloned().unwrap_or_default();
    for (key, value) in overlay {
        let name = camel_case(key);
        let Some((_, kind)) = PROXY_CONFIG_FIELDS.iter().find(|(field, _)| *field == name) else {
            continue;
        };
        let value =
            check_field(*kind, value).map_err(|reason| MeshError(format!("{at}.{name}: {reason}")))?;
        if name == "proxyMetadata"
            && let (Some(Value::Object(old)), Value::Object(new)) = (merged.get(&name), &value)
        {
            let mut combined = old.clone();
            combined.extend(new.clone());
            merged.insert(name, Value::Object(combined));
            continue;
        }
        merged.insert(name, value);
    }
    Ok(Value::Object(merged))
}

/// Type-checks one field and returns it in protobuf-JSON form.
fn check_field(kind: Kind, value: &Value) -> Result<Value, String> {
    match (kind, value) {
        (_, Value::Null) => Ok(Value::Null),
        (Kind::Str, Value::String(_)) | (Kind::Message, Value::Object(_)) => Ok(value.clone()),
        (Kind::Int | Kind::Int32Value, Value::Number(n))
            if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) =>
        {
            Ok(value.clone())
        }
        (Kind::Int | Kind::Int32Value, Value::String(text)) => text
            .parse::<i32>()
            .map(Value::from)
            .map_err(|_| format!("invalid value for int32: {text:?}")),
        (Kind::BoolValue, Value::Bool(_)) => Ok(value.clone()),
        (Kind::Duration, Value::String(text)) => parse_duration(text).map(|_| value.clone()),
        (Kind::Enum(names), Value::String(text)) if names.contains(&text.as_str()) => Ok(value.clone()),
        (Kind::Enum(names), Value::Number(n)) => n
            .as_u64()
            .and_then(|i| names.get(usize::try_from(i).ok()?))
            .map(|name| Value::from(*name))
            .ok_or_else(|| format!("invalid enum value {n}")),
        (Kind::Enum(names), other) => Err(format!(
            "invalid value {other}, expected one of {}",
            names.join(", ")
        )),
        (Kind::StrMap, Value::Object(map)) if map.values().all(Value::is_string) => Ok(value.clone()),
        (Kind::StrList, Value::Array(items)) if items.iter().all(Value::is_string) => Ok(value.clone()),
        (kind, other) => Err(format!("invalid value {other} for a field of type {kind:?}")),
    }
}

/// A `google.protobuf.Duration` as Istio decodes it, in nanoseconds. Istio reads ProxyConfig and
/// mesh YAML with the legacy `jsonpb`, which parses durations with Go's `time.ParseDuration`: so
/// `1m`, `1h30m`, `500ms` and `-1.5s` are all accepted, as well as protobuf's own `45s`/`0.5s`.
pub fn parse_duration(text: &str) -> Result<i128, String> {
    gocompat::duration::parse(text).map(i128::from)
}

/// Istio's `protoToJSON` of a ProxyConfig for the `PROXY_CONFIG` env var.
pub fn proto_to_json(proxy_config: &Value) -> String {
    let mut out = Map::new();
    for (field, kind, value) in declared_fields(proxy_config) {
        if CLEANED_FIELDS.contains(&field) && same_as_default(value, DEFAULT_PROXY_CONFIG.get(field)) {
            continue;
        }
        if is_proto_zero(kind, value) {
            continue;
        }
        let value = match (kind, value) {
            (Kind::StrMap, Value::Object(map)) => {
                let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            }
            (Kind::Duration, Value::String(text)) => Value::from(canonical_duration(text)),
            _ => value.clone(),
        };
        out.insert(field.to_owned(), value);
    }
    gojson::to_string(&Value::Object(out))
}

/// The ProxyConfig fields `proxy_config` sets, in declaration order, with their kinds. Found by
/// going through its (few) keys rather than looking each of the many declared fields up in it.
fn declared_fields(proxy_config: &Value) -> Vec<(&'static str, Kind, &Value)> {
    let mut fields: Vec<(usize, &'static str, Kind, &Value)> = proxy_config
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let position = PROXY_CONFIG_FIELDS.iter().position(|(field, _)| field == key)?;
            let (field, kind) = PROXY_CONFIG_FIELDS.get(position)?;
            Some((position, *field, *kind, value))
        })
        .collect();
    fields.sort_unstable_by_key(|(position, ..)| *position);
    fields
        .into_iter()
        .map(|(_, field, kind, value)| (field, kind, value))
        .collect()
}

/// Whether protobuf JSON would omit the value (proto3 zero values; wrappers are never zero when set).
fn is_proto_zero(kind: Kind, value: &Value) -> bool {
    match (kind, value) {
        (_, Value::Null) => true,
        (Kind::Str, Value::String(text)) => text.is_empty(),
        (Kind::Int, Value::Number(n)) => n.as_i64() == Some(0),
        (Kind::Enum(names), Value::String(text)) => names.first() == Some(&text.as_str()),
        (Kind::StrMap, Value::Object(map)) => map.is_empty(),
        (Kind::StrList, Value::Array(items)) => items.is_empty(),
        _ => false,
    }
}

/// Whether a field equals its default; durations compare by value (`45s` = `45.000s`).
fn same_as_default(value: &Value, default: Option<&Value>) -> bool {
    match (value, default) {
        (Value::String(a), Some(Value::String(b))) => {
            a == b || matches!((parse_duration(a), parse_duration(b)), (Ok(x), Ok(y)) if x == y)
        }
        (value, Some(default)) => value == default,
        (value, None) => value.is_null(),
    }
}

/// Protobuf JSON's duration form: seconds, with 0, 3, 6 or 9 fractional digits.
/// A duration in protobuf JSON's canonical form (`45s`, `1.500s`); malformed text is returned as is.
pub fn canonical_duration(text: &str) -> String {
    let Ok(nanos) = parse_duration(text) else {
        return text.to_owned();
    };
    let sign = if nanos < 0 { "-" } else { "" };
    let nanos = nanos.abs();
    let (seconds, fraction) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    if fraction == 0 {
        return format!("{sign}{seconds}s");
    }
    let mut digits = format!("{fraction:09}");
    while digits.len() > 3 && digits.ends_with("000") {
        digits.truncate(digits.len() - 3);
    }
    format!("{sign}{seconds}.{digits}s")
}

/// Istio's `formatDuration`: a protobuf duration printed like Go's `time.Duration.String()`.
pub fn go_duration_string(text: &str) -> Option<String> {
    gocompat::duration::parse(text)
        .ok()
        .map(gocompat::duration::format)
}

fn parse_object(yaml: &str, what: &str) -> Result<Map<String, Value>, MeshError> {
    if yaml.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_saphyr_value(yaml) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(MeshError(format!("{what}: must be a mapping"))),
        Err(message) => Err(MeshError(format!("{what}: invalid YAML: {message}"))),
    }
}

fn serde_saphyr_value(yaml: &str) -> Result<Value, String> {
    injector_core::yaml::parse_documents(yaml)
        .map_err(|e| e.message)
        .map(|documents| {
            documents
                .into_iter()
                .next()
                .map_or(Value::Null, |(_, value)| value)
        })
}

/// Protobuf JSON accepts the original snake_case names too.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
