//! Kubernetes **strategic merge patch**, behaving exactly like
//! `k8s.io/apimachinery/pkg/util/strategicpatch.StrategicMergePatch(original, patch, corev1.Pod{})`
//! (apimachinery v0.36.3).
//!
//! # Why this crate exists
//!
//! Istio's injector renders its sidecar templates to YAML and applies each one to the user's pod
//! as a strategic merge patch with the `corev1.Pod` patch metadata (`applyOverlayYAML`). To
//! produce byte-identical injected pods, the Rust injector must merge the same way: merge keys,
//! atomic lists, `null` deleting keys, the `$patch`, `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>` directives, the same errors, and, most visibly, **the same
//! order of merged keyed lists** (template items first, see [`strategic_merge`]).
//!
//! # Design
//!
//! The crate is a direct, behaviour-for-behaviour re-implementation of the Go apply path (not the
//! diff/three-way path), on [`serde_json::Value`]:
//!
//! * `schema` — [`Schema`]: the patch metadata. Go looks it up by reflection over the Go types;
//!   we walk a static type graph (`pod_types.rs`) that `tools/smp-oracle schema` generates by
//!   reflection from `k8s.io/api/core/v1` v0.36.3, cross-checked field by field against Go's own
//!   `LookupPatchMetadataForStruct`. It therefore knows every field (an unknown key merged as an
//!   object or list is an error, as in Go), and every `patchStrategy`/`patchMergeKey` tag.
//! * `merge` — maps and lists (`mergeMap`, `mergeSlice`, the `$setElementOrder` pass).
//! * `directives` — the `$…` directives and the clean-up of copied patch values.
//! * `order` — the ordering of merged lists, including a port of Go's `sort.SliceStable`.
//! * `gojson` — Go's view of JSON values: `int64` vs `float64` numbers, `==` on interfaces
//!   (which panics on maps and slices), `%v` formatting for error messages.
//! * `error` — [`MergeError`], with Go's error texts.
//!
//! Inputs on which Go *panics* (e.g. two objects used as merge key values, a list whose first
//! item is `null` in a merged list) return [`MergeError::GoPanic`]; nothing here panics.
//! Recursion is bounded by [`MAX_DEPTH`].
//!
//! # Result shape
//!
//! The result is the raw document Go's function returns (before Istio's `corev1.Pod` round
//! trip): values that Go keeps are kept, including `null`s and directives inside list items
//! that were appended as is (e.g. a template volume `{"name": "x", "emptyDir": null}` appended to
//! existing volumes keeps `"emptyDir": null`). **Map key order**: original keys keep their
//! position, new keys are appended in patch order (Go's output is a map, re-marshalled with
//! sorted keys, and callers canonicalize struct field order anyway). Go iterates patch maps in
//! random order; we process keys in patch order, which only matters for the (nondeterministic in
//! Go) combination of a list and its own `$deleteFromPrimitiveList` naming the same item, or for
//! which of several errors is reported. Numbers are kept as given (Go would print `1.0` as `1`).
//! **List order is exact.**
//!
//! # Use from the injector
//!
//! Istio's `applyOverlayYAML` is: marshal the current `corev1.Pod` to JSON, parse the rendered
//! template (YAML 1.1), `StrategicMergePatch(podJSON, templateJSON, corev1.Pod{})`, unmarshal into
//! `corev1.Pod`. The Rust equivalent of the middle step is
//! `strategic_merge(&pod_json, &template_json, Schema::pod())`. The caller owns the two ends:
//! `pod_json` must look like Go's marshalling (e.g. an empty pod is
//! `{"metadata":{},"spec":{"containers":null},"status":{}}` and containers always carry
//! `"resources":{}`, which matters for `$patch` directives inside patch values), and the result
//! must go through the typed round trip (drops unknown fields, `null`s and directive leftovers,
//! canonicalizes quantities, orders struct fields).
//!
//! # Known limits
//!
//! * Where Go's outcome depends on its random map iteration (a list and its own
//!   `$deleteFromPrimitiveList` in one patch map, or two independent errors in one map), we
//!   follow patch key order; the oracle detects such cases and skips them.
//! * Go re-formats numbers (`1.0` → `1`); we keep them as given (the values are equal).
//! * Go's slice-aliasing effects on list order are reproduced for lists of up to 512 items.
//! * Quoting of non-ASCII field names in error texts approximates Go's `unicode.IsPrint`.
//! * Only the Pod family of types is generated (`Pod`, `PodSpec`, `PodTemplateSpec`,
//!   `Container`); another kind needs another root in `tools/smp-oracle/schema.go`.
//!
//! # Pod patch metadata (generated from the Go types)
//!
//! | field | patchStrategy | patchMergeKey |
//! | --- | --- | --- |
//! | `ObjectMeta.ownerReferences` | `merge` | `uid` |
//! | `ObjectMeta.finalizers` | `merge` | |
//! | `PodSpec.volumes` | `merge,retainKeys` | `name` |
//! | `PodSpec.initContainers` | `merge` | `name` |
//! | `PodSpec.containers` | `merge` | `name` |
//! | `PodSpec.ephemeralContainers` | `merge` | `name` |
//! | `PodSpec.imagePullSecrets` | `merge` | `name` |
//! | `PodSpec.hostAliases` | `merge` | `ip` |
//! | `PodSpec.topologySpreadConstraints` | `merge` | `topologyKey` |
//! | `PodSpec.schedulingGates` | `merge` | `name` |
//! | `PodSpec.resourceClaims` | `merge,retainKeys` | `name` |
//! | `Container.ports` / `EphemeralContainer.ports` | `merge` | `containerPort` |
//! | `Container.env` / `EphemeralContainer.env` | `merge` | `name` |
//! | `Container.volumeMounts` / `EphemeralContainer.volumeMounts` | `merge` | `mountPath` |
//! | `Container.volumeDevices` / `EphemeralContainer.volumeDevices` | `merge` | `devicePath` |
//! | `PodStatus.conditions` | `merge` | `type` |
//! | `PodStatus.hostIPs`, `PodStatus.podIPs` | `merge` | `ip` |
//! | `PodStatus.resourceClaimStatuses` | `merge,retainKeys` | `name` |
//! | `ContainerStatus.volumeMounts` | `merge` | `mountPath` |
//! | `ContainerStatus.allocatedResourcesStatus` | `merge` | `name` |
//!
//! Every other list is atomic (replaced whole): `args`, `command`, `envFrom`, `tolerations`,
//! `resizePolicy`, `readinessGates`, `capabilities.add/drop`, `sysctls`, `supplementalGroups`,
//! affinity terms, … (container `ports` is `listType=map` on `containerPort`+`protocol` for
//! server-side apply, but strategic merge uses the `containerPort` merge key alone).
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use strategic_merge::{Schema, strategic_merge};
//!
//! let pod = json!({"spec": {"containers": [{"name": "app", "image": "app:1"}]}});
//! let template = json!({"spec": {"containers": [{"name": "istio-proxy", "image": "proxyv2"}]}});
//! let merged = strategic_merge(&pod, &template, Schema::pod())?;
//! assert_eq!(
//!     merged["spec"]["containers"],
//!     json!([{"name": "istio-proxy", "image": "proxyv2"}, {"name": "app", "image": "app:1"}])
//! );
//! # Ok::<(), strategic_merge::MergeError>(())
//! ```

mod directives;
mod error;
mod gojson;
pub mod member;
mod merge;
mod order;
#[rustfmt::skip]
mod pod_types;
mod schema;

pub use error::MergeError;
pub use schema::{PatchMeta, Schema};
use serde_json::{Map, Value};

/// Maximum nesting of merged objects and lists; deeper documents yield
/// [`MergeError::TooDeep`] instead of exhausting the stack.
pub const MAX_DEPTH: usize = 100;

/// Applies `patch` to `original` as a Kubernetes strategic merge patch described by `schema`,
/// like Go's `strategicpatch.StrategicMergePatch(original, patch, <type>{})`.
///
/// Both documents must be JSON objects (`null` counts as `{}`), otherwise
/// [`MergeError::BadJsonDocument`]. Merged keyed lists are ordered like Go: patch items first in
/// patch order, original-only items interleaved by their original relative order.
pub fn strategic_merge(original: &Value, patch: &Value, schema: &Schema) -> Result<Value, MergeError> {
    strategic_merge_owned(original.clone(), patch.clone(), schema)
}

/// [`strategic_merge`] taking ownership of its inputs (saves two deep copies).
pub fn strategic_merge_owned(original: Value, patch: Value, schema: &Schema) -> Result<Value, MergeError> {
    let original = into_object(original)?;
    let patch = into_object(patch)?;
    merge::merge_map(original, patch, schema, 0).map(Value::Object)
}

fn into_object(v: Value) -> Result<Map<String, Value>, MergeError> {
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(MergeError::BadJsonDocument),
    }
}
