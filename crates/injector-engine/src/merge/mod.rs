//! Stage 4, merging: Istio's `applyOverlayYAML` of each rendered template into the pod, then the
//! user's own versions of template containers merged again on top (`overrides.rs`).
//!
//! Istio merges each template into an empty "template pod" too (whose names the status
//! annotation and the overrides read), before merging it into the pod. That pod is a function of
//! the overlays alone: [`template_pod`] builds it once per render, and the render stage hands it
//! over with the overlays ([`crate::render::Rendered`]), so that renders reused by the render
//! cache bring theirs.

mod overrides;

use std::sync::Arc;

use serde_json::{Map, Value};
use strategic_merge::Schema;

use crate::compiled::CompiledConfig;
use crate::member::Members;
use crate::normalize::{normalize, normalize_preserving_owned};
use crate::pipeline::InjectError;
use crate::pod::{ContainerList, PROXY_CONTAINER, containers, containers_mut, name_of};
use crate::prepare::Prepared;

/// The pod with the templates merged in.
#[derive(Debug)]
pub struct Merged {
    /// The pod.
    pub pod: Value,
    /// The templates merged into an empty pod.
    pub template_pod: Arc<Value>,
}

/// The templates' overlays merged into an empty pod, in order.
#[derive(Debug, Clone)]
pub struct TemplatePod {
    /// The pod: every overlay that rendered merged in, or `null` when one did not merge (the
    /// injection then fails there, and nothing reads it).
    pub pod: Arc<Value>,
    /// The overlay that did not merge into it, and why: Istio merges each overlay into the
    /// template pod before the pod, so this error is the one told when the merge reaches it.
    pub failed: Option<(usize, InjectError)>,
}

/// The template pod of `overlays` (as the render stage gives them: up to the first that failed
/// to render).
pub fn template_pod(overlays: &[Result<Value, InjectError>]) -> TemplatePod {
    let mut pod = empty_pod();
    let mut failed = None;
    for (index, overlay) in overlays.iter().enumerate() {
        let Ok(overlay) = overlay else {
            break;
        };
        match merge_overlay(pod, overlay.clone()) {
            Ok(merged) => pod = merged,
            Err(error) => {
                failed = Some((index, error));
                pod = Value::Null;
                break;
            }
        }
    }
    TemplatePod {
        pod: Arc::new(pod),
        failed,
    }
}

/// Merges `overlays` (as the render stage gives them, with their template pod) into the prepared
/// pod, and re-applies the user's overrides.
pub fn merge(
    config: &CompiledConfig,
    prepared: &Prepared,
    overlays: Vec<Result<Value, InjectError>>,
    template: &TemplatePod,
) -> Result<Merged, InjectError> {
    let mut pod = Value::clone(&prepared.pod);
    for (index, overlay) in overlays.into_iter().enumerate() {
        let overlay = overlay?;
        if let Some((_, error)) = template.failed.as_ref().filter(|(at, _)| *at == index) {
            return Err(error.clone());
        }
        if native_applies(config, prepared, &overlay) {
            move_user_proxy_to_init(&mut pod);
        }
        pod = merge_overlay(pod, overlay)?;
    }
    let template_pod = template.pod.clone();
    let pod = overrides::reapply(pod, &prepared.pod, &template_pod, &prepared.inputs.proxy_config)
        .map_err(|e| InjectError(format!("failed to re apply container: {e}")))?;
    Ok(Merged { pod, template_pod })
}

/// Istio's `applyOverlayYAML`: a strategic merge with the Pod schema, then the Go round trip.
fn merge_overlay(pod: Value, overlay: Value) -> Result<Value, InjectError> {
    let merged = strategic_merge::strategic_merge_owned(pod, overlay, Schema::pod())
        .map_err(|e| InjectError(format!("failed to run injection template: strategic merge: {e}")))?;
    normalize_preserving_owned("v1/Pod", merged).map_err(|e| {
        InjectError(format!(
            "failed to run injection template: unmarshal patched pod: {e}"
        ))
    })
}

/// An empty `corev1.Pod` as Go marshals it.
fn empty_pod() -> Value {
    // Worked out once: every template pod starts from it.
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| {
            normalize("v1/Pod", &Value::Object(Map::new())).unwrap_or_else(|_| Value::Object(Map::new()))
        })
        .clone()
}

/// Whether the "native sidecar" adjustment applies to this template output: native on (the
/// pod annotation overrides the setting) and the template puts `istio-proxy` in init containers.
fn native_applies(config: &CompiledConfig, prepared: &Prepared, overlay: &Value) -> bool {
    let native = match prepared
        .annotations
        .get("sidecar.istio.io/nativeSidecar")
        .map(String::as_str)
    {
        Some("true") => true,
        Some("false") => false,
        _ => config.options().native_sidecars,
    };
    native
        && containers(overlay, ContainerList::InitContainers)
            .iter()
            .any(|c| name_of(c) == PROXY_CONTAINER)
}

/// With native sidecars, a user `istio-proxy` in `containers` moves to `initContainers` before the
/// template (which puts the proxy there) is merged.
fn move_user_proxy_to_init(pod: &mut Value) {
    let Some(list) = containers_mut(pod, ContainerList::Containers) else {
        return;
    };
    let Some(index) = list.iter().position(|c| name_of(c) == PROXY_CONTAINER) else {
        return;
    };
    let proxy = list.remove(index);
    let Some(spec) = pod.member_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let init = spec
        .entry("initContainers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !init.is_array() {
        *init = Value::Array(Vec::new());
    }
    if let Value::Array(items) = init {
        items.push(proxy);
    }
}
