//! Pod annotations a user may expect to work that the injector does not act on.
//!
//! Istio's annotation reference still lists a few pod annotations that Istio's own injector (its
//! sidecar template and its post-processing) no longer reads, and one spelling is a common slip
//! for a real annotation. Rather than ignore them silently, `serve`, `inject` and `explain` say so.

use std::collections::BTreeMap;

/// `(annotation, why it has no effect and what to do instead)`.
pub const IGNORED: &[(&str, &str)] = &[
    (
        "sidecar.istio.io/enableCoreDump",
        "Istio's sidecar template no longer reads it, and neither does this injector; to get Envoy core \
         dumps, add your own privileged init container that sets kernel.core_pattern",
    ),
    (
        "readiness.status.sidecar.istio.io/applicationPorts",
        "the proxy's readiness probe checks the proxy only; application ports are not probed",
    ),
    (
        "sidecar.istio.io/statusPort",
        "not an annotation Istio reads; the status port is status.sidecar.istio.io/port",
    ),
];

/// One sentence per ignored annotation that `annotations` sets.
pub fn warnings(annotations: &BTreeMap<String, String>) -> Vec<String> {
    IGNORED
        .iter()
        .filter(|(key, _)| annotations.contains_key(*key))
        .map(|(key, why)| format!("annotation {key} has no effect: {why}"))
        .collect()
}

/// [`warnings`] for a pod or pod template given as JSON (its `metadata.annotations`).
pub fn warnings_for_object(object: &serde_json::Value) -> Vec<String> {
    let Some(annotations) = object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(serde_json::Value::as_object)
    else {
        return Vec::new();
    };
    IGNORED
        .iter()
        .filter(|(key, _)| annotations.contains_key(*key))
        .map(|(key, why)| format!("annotation {key} has no effect: {why}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ignored_annotations_are_reported() {
        let annotations: BTreeMap<String, String> = [
            ("sidecar.istio.io/enableCoreDump", "true"),
            ("sidecar.istio.io/proxyCPU", "100m"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let found = warnings(&annotations);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("annotation sidecar.istio.io/enableCoreDump has no effect: "));
        let object = serde_json::json!({"metadata": {"annotations": {"sidecar.istio.io/statusPort": "1"}}});
        assert_eq!(
            warnings_for_object(&object),
            [
                "annotation sidecar.istio.io/statusPort has no effect: not an annotation Istio reads; the status port \
              is status.sidecar.istio.io/port"
            ]
        );
        assert!(warnings_for_object(&serde_json::json!({})).is_empty());
    }
}
