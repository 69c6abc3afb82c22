//! Stage 6, the answer: the JSON Patch (RFC 6902) from the pod the API server sent to the
//! injected pod.
//!
//! Both sides are the full JSON objects, so fields the engine does not model — newer Kubernetes
//! fields, extensions — are equal on both sides and never appear in the patch: we never remove
//! what we did not put there. The patch applies to the object exactly as the API server holds it.

use serde_json::{Map, Value};

use crate::member::Members;

/// A patch that could not be produced or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to create patch: {0}")]
pub struct PatchError(pub String);

/// The RFC 6902 operations turning `original` into `injected`, serialized as JSON.
///
/// Objects are compared key by key; lists keep their common head and tail and are compared item
/// by item in between, so a container inserted at the front is one `add`, not a rewrite of every
/// container after it. Removals in a list go from the highest index down.
pub fn create_patch(original: &Value, injected: &Value) -> Result<Vec<u8>, PatchError> {
    create_patch_keeping(original, injected, &[])
}

/// [`create_patch`], where the fields at the `kept` JSON Pointers of `original` count as equal
/// to whatever `injected` has there (absent included): the patch never touches them.
pub fn create_patch_keeping(
    original: &Value,
    injected: &Value,
    kept: &[&str],
) -> Result<Vec<u8>, PatchError> {
    write_patch(original, injected, kept, None)
}

/// [`create_patch_keeping`] for an `original` as the API server sent it, whose Go round trip
/// through the type `root` (`v1/Pod`) `injected` started from: differences the round trip makes on
/// its own (zero values Go prints for unset fields, `null`s it drops, canonical quantities) are
/// not the injection's and get no operation, as in Istio's patch, which is taken from the round
/// trip (`createPatch`, <https://github.com/istio/istio/blob/master/pkg/kube/inject/webhook.go>). The API server decodes the patched object into the same Go type, so it stores
/// the same pod either way.
pub fn create_patch_over_round_trip(
    root: &str,
    original: &Value,
    injected: &Value,
    kept: &[&str],
) -> Result<Vec<u8>, PatchError> {
    write_patch(original, injected, kept, Some(root))
}

fn write_patch(
    original: &Value,
    injected: &Value,
    kept: &[&str],
    round_trip_root: Option<&str>,
) -> Result<Vec<u8>, PatchError> {
    let mut writer = PatchWriter {
        out: Vec::with_capacity(1024),
        path: String::new(),
        first: true,
        kept,
        round_trip_root,
    };
    writer.out.push(b'[');
    writer.diff(original, injected)?;
    writer.out.push(b']');
    Ok(writer.out)
}

/// Writes operations as they are found, with the JSON Pointer of the current position.
struct PatchWriter<'k> {
    out: Vec<u8>,
    path: String,
    first: bool,
    kept: &'k [&'k str],
    /// The Go type `original` was round-tripped through, when differences the round trip alone
    /// makes are to be left out.
    round_trip_root: Option<&'k str>,
}

impl PatchWriter<'_> {
    fn diff(&mut self, original: &Value, injected: &Value) -> Result<(), PatchError> {
        if self.kept_here() {
            return Ok(());
        }
        match (original, injected) {
            (Value::Object(before), Value::Object(after)) => self.diff_object(before, after),
            (Value::Array(before), Value::Array(after)) => self.diff_array(before, after),
            _ if original == injected => Ok(()),
            _ if self.restated(Some(original), Some(injected)) => Ok(()),
            _ => self.operation("replace", Some(injected)),
        }
    }

    fn diff_object(
        &mut self,
        before: &Map<String, Value>,
        after: &Map<String, Value>,
    ) -> Result<(), PatchError> {
        // Keys usually come in the same order on both sides: walk them in step while they do.
        let mut in_step = 0;
        for ((key, old), (new_key, new)) in before.iter().zip(after) {
            if key != new_key {
                break;
            }
            self.at_key(key, |w| w.diff(old, new))?;
            in_step += 1;
        }
        for (key, new) in after.iter().skip(in_step) {
            self.at_key(key, |w| match before.member(key) {
                Some(old) => w.diff(old, new),
                None if w.restated(None, Some(new)) => Ok(()),
                None => w.operation("add", Some(new)),
            })?;
        }
        for key in before.keys().skip(in_step) {
            if !after.has_member(key) {
                self.at_key(key, |w| {
                    if w.kept_here() || w.restated(before.member(key), None) {
                        Ok(())
                    } else {
                        w.operation("remove", None)
                    }
                })?;
            }
        }
        Ok(())
    }

    fn diff_array(&mut self, before: &[Value], after: &[Value]) -> Result<(), PatchError> {
        let head = before
            .iter()
            .zip(after)
            .take_while(|(old, new)| same(old, new))
            .count();
        let (old_rest, new_rest) = (&before[head..], &after[head..]);
        let tail = old_rest
            .iter()
            .rev()
            .zip(new_rest.iter().rev())
            .take(old_rest.len().min(new_rest.len()))
            .take_while(|(old, new)| same(old, new))
            .count();
        let old_middle = &old_rest[..old_rest.len() - tail];
        let new_middle = &new_rest[..new_rest.len() - tail];
        let paired = old_middle.len().min(new_middle.len());
        for (offset, (old, new)) in old_middle.iter().zip(new_middle).enumerate() {
            self.at_index(head + offset, |w| w.diff(old, new))?;
        }
        for (offset, new) in new_middle.iter().enumerate().skip(paired) {
            self.at_index(head + offset, |w| w.operation("add", Some(new)))?;
        }
        for offset in (paired..old_middle.len()).rev() {
            self.at_index(head + offset, |w| w.operation("remove", None))?;
        }
        Ok(())
    }

    /// Whether `before` → `after` at the current position is only what the Go round trip of the
    /// original does there (see [`create_patch_over_round_trip`]). Only differences that can be of
    /// that kind are looked up: zero-like values appearing or disappearing, `null` or a scalar
    /// rewritten.
    fn restated(&self, before: Option<&Value>, after: Option<&Value>) -> bool {
        let Some(root) = self.round_trip_root else {
            return false;
        };
        let candidate = match (before, after) {
            (None, Some(value)) | (Some(value), None) => zero_like(value),
            (Some(Value::Null), Some(_)) => true,
            (Some(old), Some(new)) => is_scalar(old) && is_scalar(new),
            (None, None) => false,
        };
        candidate
            && crate::normalize::normalized_at(root, &self.path, before)
                .is_some_and(|printed| printed.as_ref() == after)
    }

    /// Whether the current position is one the patch must leave alone.
    fn kept_here(&self) -> bool {
        self.kept.contains(&self.path.as_str())
    }

    /// Runs `write` with `key` appended to the pointer (escaped: `~` as `~0`, `/` as `~1`).
    fn at_key(
        &mut self,
        key: &str,
        write: impl FnOnce(&mut Self) -> Result<(), PatchError>,
    ) -> Result<(), PatchError> {
        let mark = self.path.len();
        self.path.push('/');
        if key.contains(['~', '/']) {
            for c in key.chars() {
                match c {
                    '~' => self.path.push_str("~0"),
                    '/' => self.path.push_str("~1"),
                    c => self.path.push(c),
                }
            }
        } else {
            self.path.push_str(key);
        }
        let result = write(self);
        self.path.truncate(mark);
        result
    }

    /// Runs `write` with a list index appended to the pointer.
    fn at_index(
        &mut self,
        index: usize,
        write: impl FnOnce(&mut Self) -> Result<(), PatchError>,
    ) -> Result<(), PatchError> {
        let mark = self.path.len();
        self.path.push('/');
        push_decimal(&mut self.path, index);
        let result = write(self);
        self.path.truncate(mark);
        result
    }

    fn operation(&mut self, op: &str, value: Option<&Value>) -> Result<(), PatchError> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        let write = |out: &mut Vec<u8>, path: &str| -> serde_json::Result<()> {
            out.extend_from_slice(br#"{"op":""#);
            out.extend_from_slice(op.as_bytes());
            out.extend_from_slice(br#"","path":"#);
            serde_json::to_writer(&mut *out, path)?;
            if let Some(value) = value {
                out.extend_from_slice(br#","value":"#);
                serde_json::to_writer(&mut *out, value)?;
            }
            out.push(b'}');
            Ok(())
        };
        write(&mut self.out, &self.path).map_err(|e| PatchError(e.to_string()))
    }
}

/// Appends `number` in decimal (a list index in a pointer, without a `String` of its own).
fn push_decimal(out: &mut String, number: usize) {
    if number >= 10 {
        push_decimal(out, number / 10);
    }
    // A digit: `number % 10` is below 10.
    out.push(char::from(b'0' + (number % 10) as u8));
}

/// Whether `value` could be a zero value Go prints (or drops): `null`, `false`, `0`, `""`, `"0"`,
/// `[]`, or an object of such values.
fn zero_like(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty() || text == "0",
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.values().all(zero_like),
        Value::Bool(true) => false,
    }
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Equality that also requires the same key order: cheap (no hashing) and never wrong when it
/// says equal; when it says different the caller just diffs deeper.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        _ => a == b,
    }
}

/// Stage 6: the patch of an injection, from the pod as the API server sent it to the injected
/// pod, over the Go round trip of a `corev1.Pod`, leaving `managedFields` alone (Istio injects
/// without them).
pub fn patch_of_injection(
    received: &Value,
    injected: &Value,
) -> Result<Vec<u8>, crate::pipeline::InjectError> {
    create_patch_over_round_trip(
        "v1/Pod",
        received,
        injected,
        &[crate::prepare::MANAGED_FIELDS_POINTER],
    )
    .map_err(|e| crate::pipeline::InjectError(e.to_string()))
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
    fn a_container_inserted_first_is_one_add() {
        let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let injected =
            json!({"spec": {"containers": [{"name": "istio-proxy"}, {"name": "a"}, {"name": "b"}]}});
        let patch = create_patch(&original, &injected).expect("creates");
        assert_eq!(
            String::from_utf8(patch.clone()).expect("utf-8"),
            r#"[{"op":"add","path":"/spec/containers/0","value":{"name":"istio-proxy"}}]"#
        );
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);
    }

    #[test]
    fn lists_shrink_from_the_end_and_keys_are_escaped() {
        let original = json!({"a/b~c": [1, 2, 3, 4, 5], "gone": true, "order": {"x": 1, "y": 2}});
        let injected = json!({"a/b~c": [1, 9, 5], "order": {"y": 2, "x": 3}, "new": null});
        let patch = create_patch(&original, &injected).expect("creates");
        let text = String::from_utf8(patch.clone()).expect("utf-8");
        assert!(text.contains(r#""path":"/a~1b~0c/3""#), "{text}");
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);

        let long: Vec<u32> = (0..120).collect();
        let mut changed = long.clone();
        changed[0] = 1000;
        changed[10] = 1010;
        changed[109] = 1109;
        let patch = create_patch(&json!({"l": long}), &json!({"l": changed})).expect("creates");
        let text = String::from_utf8(patch).expect("utf-8");
        for index in ["0", "10", "109"] {
            assert!(text.contains(&format!(r#""path":"/l/{index}""#)), "{text}");
        }
    }

    #[test]
    fn kept_fields_are_never_touched() {
        let received = json!({"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}]}});
        let injected = json!({"metadata": {"name": "p", "labels": {"a": "b"}}});
        let patch =
            create_patch_keeping(&received, &injected, &["/metadata/managedFields"]).expect("creates");
        assert_eq!(
            String::from_utf8(patch).expect("utf-8"),
            r#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#
        );
    }

    #[test]
    fn non_object_roots_are_replaced() {
        let patch = create_patch(&json!([1]), &json!("x")).expect("creates");
        assert_eq!(patch, br#"[{"op":"replace","path":"","value":"x"}]"#);
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

    #[test]
    fn what_the_go_round_trip_does_alone_gets_no_operation() {
        // As the API server sends a pod: `creationTimestamp: null`, no `status`, a container
        // without `resources`, a quantity written non-canonically.
        let received = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "creationTimestamp": null},
            "spec": {"containers": [
                {"name": "app", "image": "nginx"},
                {"name": "db", "image": "pg", "resources": {"requests": {"cpu": "0.1"}}}
            ]}
        });
        let injected = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"sidecar.istio.io/status": "{}"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx", "resources": {}},
                {"name": "db", "image": "pg", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "istio-proxy", "image": "proxyv2", "resources": {}}
            ]},
            "status": {}
        });
        let patch = create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates");
        let text = String::from_utf8(patch.clone()).expect("utf-8");
        assert_eq!(
            text,
            r#"[{"op":"add","path":"/metadata/annotations","value":{"sidecar.istio.io/status":"{}"}},{"op":"add","path":"/spec/containers/2","value":{"name":"istio-proxy","image":"proxyv2","resources":{}}}]"#
        );
        // Decoded as the API server decodes it, the patched pod is the injected one.
        let decoded = |pod: &Value| crate::normalize::normalize_preserving("v1/Pod", pod).expect("decodes");
        assert_eq!(
            decoded(&apply_patch(&received, &patch).expect("applies")),
            decoded(&injected)
        );

        // The plain diff restates all of it.
        let plain = String::from_utf8(create_patch(&received, &injected).expect("creates")).expect("utf-8");
        for restated in [
            "/status",
            "/spec/containers/0/resources",
            "/metadata/creationTimestamp",
            "/cpu",
        ] {
            assert!(plain.contains(restated), "{restated} in {plain}");
        }
    }

    #[test]
    fn real_changes_near_zero_values_keep_their_operations() {
        let received = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "a"}],
            "hostNetwork": true, "nodeName": "n1"}});
        let injected = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "a",
            "resources": {"limits": {"cpu": "1"}}}], "hostNetwork": false, "futureKnob": {}}});
        let text = String::from_utf8(
            create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates"),
        )
        .expect("utf-8");
        for kept in [
            r#"{"op":"add","path":"/spec/containers/0/resources","value":{"limits":{"cpu":"1"}}}"#,
            r#"{"op":"replace","path":"/spec/hostNetwork","value":false}"#,
            r#"{"op":"remove","path":"/spec/nodeName"}"#,
            r#"{"op":"add","path":"/spec/futureKnob","value":{}}"#,
        ] {
            assert!(text.contains(kept), "{kept} missing from {text}");
        }
    }
}
