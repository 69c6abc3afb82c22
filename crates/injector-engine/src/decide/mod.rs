//! Stage 1, deciding: Istio's policy decision for the pod as received (namespace and pod
//! selectors, the `sidecar.istio.io/inject` label and annotation), which is
//! `injector_core::decision`, shared with the server and the operator tools. The checks of the
//! pod's annotations ([`validate`]) and the choice of templates ([`selection`]) live here too;
//! the prepare stage runs them once the pod is to be injected.

pub mod selection;
pub mod validate;

use std::collections::BTreeMap;

use injector_core::config::InjectorConfig;
use injector_core::decision::{self, Decision, PodFacts};
use serde_json::Value;

use crate::compiled::CompiledConfig;
use crate::pipeline::{InjectError, Request};

/// The request's pod and the decision on it: an error when the request has no pod.
pub fn decide_request<'r>(
    config: &CompiledConfig,
    request: &Request<'r>,
) -> Result<(&'r Value, Decision), InjectError> {
    let Some(received) = request.pod else {
        return Err(InjectError("the admission request has no object".to_owned()));
    };
    if !received.is_object() {
        return Err(InjectError(
            "the admission request's object is not a pod".to_owned(),
        ));
    }
    Ok((
        received,
        decide_in(received, request.namespace, config.decision_config()),
    ))
}

/// Istio's injection decision for a pod (as received, namespace defaulted).
pub fn decide(pod: &Value, config: &InjectorConfig) -> Decision {
    decide_in(pod, None, config)
}

/// [`decide`] for a pod whose empty namespace is `request_namespace` (the webhook's default).
fn decide_in(pod: &Value, request_namespace: Option<&str>, config: &InjectorConfig) -> Decision {
    let labels = string_map(pod, "labels");
    let annotations = string_map(pod, "annotations");
    let namespace = own_namespace(pod).or(request_namespace).unwrap_or("");
    let host_network = crate::pod::at(pod, &["spec", "hostNetwork"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    decision::decide(
        PodFacts {
            namespace,
            host_network,
            labels: &labels,
            annotations: &annotations,
        },
        &config.injection,
    )
}

/// The pod's own namespace, unless it is missing or empty (then the request's applies: the API
/// server sets it the same way).
pub(crate) fn own_namespace(pod: &Value) -> Option<&str> {
    crate::pod::at(pod, &["metadata", "namespace"])
        .and_then(Value::as_str)
        .filter(|namespace| !namespace.is_empty())
}

/// Labels or annotations of a pod as a string map (non-string values skipped).
pub(crate) fn string_map(pod: &Value, field: &str) -> BTreeMap<String, String> {
    crate::pod::at(pod, &["metadata", field])
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}
