//! The JSON Patch (RFC 6902) from the pod the API server sent to the injected pod.
//!
//! Both sides are the full JSON objects, so fields the engine does not model — newer Kubernetes
//! fields, extensions — are equal on both sides and never appear in the patch: we never remove
//! what we did not put there. The patch applies to the object exactly as the API server holds it.

use serde_json::Value;

/// A patch that could not be produced or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to create patch: {0}")]
pub struct PatchError(pub String);

/// The RFC 6902 operations turning `original` into `injected`, serialized as JSON.
pub fn create_patch(original: &Value, injected: &Value) -> Result<Vec<u8>, PatchError> {
    let patch = json_patch::diff(original, injected);
    serde_json::to_vec(&patch).map_err(|e| PatchError(e.to_string()))
}

/// Applies a serialized patch to a copy of `document` (used by `inject` for manifests and by tests).
pub fn apply_patch(document: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let patch: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| PatchError(e.to_string()))?;
    let mut patched = document.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| PatchError(e.to_string()))?;
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn patch_turns_original_into_injected_and_keeps_unknown_fields() {
        let original = json!({
            "metadata": {"name": "p", "annotations": {"a": "1"}, "x-future-field": {"keep": true}},
            "spec": {"containers": [{"name": "app", "image": "nginx", "futureField": [1, 2]}], "newKnob": "on"}
        });
        let mut injected = original.clone();
        injected["metadata"]["annotations"]["sidecar.istio.io/status"] = json!("{}");
        injected["spec"]["initContainers"] = json!([{"name": "istio-init"}]);
        injected["spec"]["containers"] =
            json!([{"name": "app", "image": "nginx", "futureField": [1, 2]}, {"name": "istio-proxy"}]);
        let patch = create_patch(&original, &injected).expect("creates");
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);
        let text = String::from_utf8(patch).expect("utf-8");
        assert!(
            !text.contains("futureField") && !text.contains("x-future-field") && !text.contains("newKnob"),
            "{text}"
        );
    }

    #[test]
    fn identical_documents_give_an_empty_patch() {
        let pod = json!({"spec": {"containers": []}});
        assert_eq!(create_patch(&pod, &pod).expect("creates"), b"[]");
    }

    #[test]
    fn bad_patches_are_errors() {
        assert!(apply_patch(&json!({}), b"not json").is_err());
        assert!(apply_patch(&json!({}), br#"[{"op":"remove","path":"/missing"}]"#).is_err());
    }
}
