//! The `sidecar.istio.io/status` annotation: what the injection added, so that a later injection
//! can strip it first.
//!
//! Its value is compact JSON in Go's struct order,
//! `{"initContainers":[…],"containers":[…],"volumes":[…],"imagePullSecrets":[…],"revision":"…"}`,
//! listing the names from the **rendered templates only** (not from the final pod). An empty list
//! is written as `null`, and an empty revision as `"default"`.

use serde_json::{Map, Value};

use crate::gojson;
use crate::member::Members;

/// The annotation key.
pub const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";

/// The status annotation value for what the templates rendered (`template_pod`, a pod).
pub fn injection_status(template_pod: &Value, revision: &str) -> String {
    let spec = template_pod.member("spec").unwrap_or(&Value::Null);
    let mut status = Map::new();
    for field in ["initContainers", "containers", "volumes", "imagePullSecrets"] {
        let names: Vec<Value> = spec
            .member(field)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| Value::from(item.member("name").and_then(Value::as_str).unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default();
        status.insert(
            field.to_owned(),
            if names.is_empty() {
                Value::Null
            } else {
                Value::Array(names)
            },
        );
    }
    let revision = if revision.is_empty() { "default" } else { revision };
    status.insert("revision".to_owned(), Value::from(revision));
    gojson::to_string(&Value::Object(status))
}

/// Container names recorded by an earlier injection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviousInjection {
    /// Names of injected containers.
    pub containers: Vec<String>,
    /// Names of injected init containers.
    pub init_containers: Vec<String>,
}

/// Reads a status annotation. An unparseable value yields nothing (Istio logs and carries on).
pub fn parse_status(text: &str) -> PreviousInjection {
    let Ok(Value::Object(status)) = serde_json::from_str::<Value>(text) else {
        return PreviousInjection::default();
    };
    let names = |field: &str| -> Vec<String> {
        status
            .member(field)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    PreviousInjection {
        containers: names("containers"),
        init_containers: names("initContainers"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lists_template_names_in_go_order() {
        let template = json!({"spec": {
            "initContainers": [{"name": "istio-init"}, {"name": "istio-proxy"}],
            "volumes": [{"name": "workload-socket"}, {"name": "istio-envoy"}]
        }});
        assert_eq!(
            injection_status(&template, ""),
            r#"{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket","istio-envoy"],"imagePullSecrets":null,"revision":"default"}"#
        );
        assert!(injection_status(&json!({}), "canary").ends_with(r#""revision":"canary"}"#));
    }

    #[test]
    fn parses_previous_injection() {
        let previous =
            parse_status(r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":null}"#);
        assert_eq!(previous.containers, ["istio-proxy"]);
        assert_eq!(previous.init_containers, ["istio-init"]);
        assert_eq!(parse_status("not json"), PreviousInjection::default());
        assert_eq!(parse_status(r#"{"containers": [1, "x"]}"#).containers, ["x"]);
    }
}
