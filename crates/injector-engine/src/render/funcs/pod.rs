//! Functions over Kubernetes and mesh objects: `annotation`, `includeInboundPorts`,
//! `applicationPorts` and `otelResourceAttributes`. They read the host objects through their
//! Go fields, so they work on any object with the right Go type.

use gotemplate::{ArgType, Func, FuncMap, Value};

use super::{arg_str, wrong_type};

pub(crate) fn register(m: &mut FuncMap) {
    use ArgType::{Any, Str, StringMap};
    m.insert(
        "annotation",
        Func::new(&[Any, Str, Any], |a| {
            let annotations = match &a[0] {
                Value::Object(o) if o.type_name() == "v1.ObjectMeta" => o.field("Annotations"),
                v => return Err(wrong_type("v1.ObjectMeta", v)),
            };
            if let Some(Value::Map(m)) = annotations
                && let Some(v) = m.get(arg_str(&a[1]))
            {
                return Ok(v);
            }
            Ok(Value::str(gotemplate::fmt::sprint(&a[2..])))
        }),
    );
    m.insert(
        "includeInboundPorts",
        Func::new(&[Any], |a| container_ports(&a[0], false).map(Value::str)),
    );
    m.insert(
        "applicationPorts",
        Func::new(&[Any], |a| container_ports(&a[0], true).map(Value::str)),
    );
    m.insert(
        "otelResourceAttributes",
        Func::new(&[Any, StringMap, StringMap, Str, Any], |a| {
            otel_resource_attributes(a).map(Value::str)
        }),
    );
}

fn containers(v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::List(l)
            if l.items
                .iter()
                .all(|c| matches!(c, Value::Object(o) if o.type_name() == "v1.Container")) =>
        {
            Ok(l.items.clone())
        }
        Value::Nil | Value::Missing => Ok(vec![]),
        v => Err(wrong_type("[]v1.Container", v)),
    }
}

fn field(v: &Value, name: &str) -> Value {
    match v {
        Value::Object(o) => o.field(name).unwrap_or_default(),
        _ => Value::Missing,
    }
}

/// The comma-joined container ports (skipping UDP and SCTP), optionally without `istio-proxy`.
fn container_ports(v: &Value, skip_proxy: bool) -> Result<String, String> {
    let mut parts = Vec::new();
    for c in containers(v)? {
        if skip_proxy && field(&c, "Name").as_str() == Some(crate::pod::PROXY_CONTAINER) {
            continue;
        }
        if let Value::List(ports) = field(&c, "Ports") {
            for p in &ports.items {
                if matches!(field(p, "Protocol").as_str(), Some("UDP" | "SCTP")) {
                    continue;
                }
                if let Value::Int(n, _) = field(p, "ContainerPort") {
                    parts.push(n.to_string());
                }
            }
        }
    }
    Ok(parts.join(","))
}

/// A non-empty value of a `map[string]string` (Istio treats "" as absent here).
fn get(m: &Value, key: &str) -> Option<String> {
    match m {
        Value::Map(m) => m
            .get(key)
            .and_then(|v| v.as_str().map(str::to_owned))
            .filter(|v| !v.is_empty()),
        _ => None,
    }
}

/// Whether an OpenTelemetry provider asks for semantic-convention service attributes
/// (read through the Go API: `.ExtensionProviders[i].GetOpentelemetry`).
fn otel_enrichment_enabled(mesh: &Value) -> bool {
    let Value::List(providers) = field(mesh, "ExtensionProviders") else {
        return false;
    };
    providers.items.iter().any(|p| {
        let Value::Object(p) = p else { return false };
        let Ok(Value::Object(otel)) = p.call_method("GetOpentelemetry", &[]) else {
            return false;
        };
        match otel.to_data() {
            Some(Value::Map(m)) => {
                m.get("serviceAttributeEnrichment")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .as_deref()
                    == Some("OTEL_SEMANTIC_CONVENTIONS")
            }
            _ => false,
        }
    })
}

/// The version part of an image reference: `tag@digest`, the digest or the tag.
fn image_version(image: &str) -> Option<String> {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.rsplit_once(':').map(|(_, t)| t).filter(|t| !t.is_empty());
    match (tag, digest) {
        (Some(t), Some(d)) => Some(format!("{t}@{d}")),
        (None, Some(d)) => Some(d.to_string()),
        (Some(t), None) => Some(t.to_string()),
        (None, None) => None,
    }
}

fn otel_resource_attributes(a: &[Value]) -> Result<String, String> {
    if !otel_enrichment_enabled(&a[0]) {
        return Ok(String::new());
    }
    let (annotations, labels, namespace) = (&a[1], &a[2], arg_str(&a[3]));
    let containers = containers(&a[4])?;
    let mut items = Vec::new();
    let ns = get(annotations, "resource.opentelemetry.io/service.namespace")
        .or_else(|| (!namespace.is_empty()).then(|| namespace.to_owned()));
    if let Some(ns) = ns {
        items.push(format!("service.namespace={ns}"));
    }
    let version = get(annotations, "resource.opentelemetry.io/service.version")
        .or_else(|| get(labels, "app.kubernetes.io/version"))
        .or_else(|| match containers.as_slice() {
            [only] => field(only, "Image").as_str().and_then(image_version),
            _ => None,
        });
    if let Some(v) = version {
        items.push(format!("service.version={v}"));
    }
    let instance = match get(annotations, "resource.opentelemetry.io/service.instance.id") {
        Some(id) => Some(id),
        None => containers.first().map(|c| {
            let name = field(c, "Name");
            format!("{namespace}.$(POD_NAME).{}", name.as_str().unwrap_or(""))
        }),
    };
    if let Some(id) = instance {
        items.push(format!("service.instance.id={id}"));
    }
    Ok(items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_versions() {
        assert_eq!(image_version("nginx").as_deref(), None);
        assert_eq!(image_version("nginx:1.2").as_deref(), Some("1.2"));
        assert_eq!(image_version("host:5000/nginx").as_deref(), None);
        assert_eq!(image_version("nginx@sha256:ab").as_deref(), Some("sha256:ab"));
        assert_eq!(image_version("nginx:1@sha256:ab").as_deref(), Some("1@sha256:ab"));
    }
}
