//! `explain --show-patch`: what the webhook would do to the pod a workload creates — the exact
//! JSON Patch, and a readable diff of the pod before and after.

use std::fmt::Write as _;

use injector_core::{explain::Explanation, terminal::escape, workload::PodTemplate};
use injector_engine::{CompiledConfig, Outcome, Request};
use serde_json::{Value, json};

/// The change injection makes to one pod.
pub struct PodChange {
    /// The RFC 6902 patch (empty when the pod is not injected).
    pub patch: Vec<Value>,
    /// The pod before, as YAML.
    pub before: String,
    /// The pod after, as YAML.
    pub after: String,
    /// Why injection failed, when it did.
    pub error: Option<String>,
}

impl PodChange {
    /// The patch as a JSON array.
    pub fn patch_json(&self) -> Value {
        Value::Array(self.patch.clone())
    }
}

/// Builds the pod the workload's controller would create and runs the injector on it.
pub fn pod_change(injector: &CompiledConfig, object: &Value, workload: &PodTemplate) -> PodChange {
    let pod = pod_of(object, workload);
    let namespace = workload
        .owner
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let request = Request {
        pod: Some(&pod),
        namespace: Some(&namespace),
        ..Request::default()
    };
    let before = goyaml::to_string(&pod);
    match injector.inject(&request) {
        Ok(Outcome::Injected {
            pod: injected, patch, ..
        }) => PodChange {
            patch: serde_json::from_slice(&patch).unwrap_or_default(),
            before,
            after: goyaml::to_string(&injected),
            error: None,
        },
        Ok(Outcome::Skipped { .. }) => PodChange {
            patch: Vec::new(),
            after: before.clone(),
            before,
            error: None,
        },
        Err(error) => PodChange {
            patch: Vec::new(),
            after: before.clone(),
            before,
            error: Some(error.0),
        },
    }
}

/// The pod a controller creates from the workload's template (a Pod is itself).
fn pod_of(object: &Value, workload: &PodTemplate) -> Value {
    if workload.template_path.is_empty() {
        return object.clone();
    }
    let template = workload
        .template_path
        .split('.')
        .try_fold(object, |value, key| value.get(key))
        .cloned()
        .unwrap_or(Value::Null);
    let name = &workload.owner.name;
    let mut metadata = template
        .get("metadata")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    metadata["generateName"] = json!(format!("{name}-"));
    metadata["ownerReferences"] = json!([{"apiVersion": workload.owner.api_version, "kind": workload.owner.kind, "name": name, "controller": true}]);
    if let Some(namespace) = &workload.owner.namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or(json!({}))})
}

/// The table report's patch section.
pub fn render_table(explanation: &Explanation, change: &PodChange) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nWhat the injector would change in the pod of {} {}/{}:",
        explanation.kind,
        escape(&explanation.namespace),
        escape(&explanation.name)
    );
    if let Some(error) = &change.error {
        let _ = writeln!(out, "  injection fails: {}", escape(error));
        return out;
    }
    if change.patch.is_empty() {
        let _ = writeln!(out, "  nothing (the injector's own decision skips this pod)");
        return out;
    }
    let _ = writeln!(out, "  JSON Patch ({} operations):", change.patch.len());
    for operation in &change.patch {
        let _ = writeln!(out, "    {}", escape(&operation.to_string()));
    }
    let _ = writeln!(out, "  Diff of the pod:");
    let diff = similar::TextDiff::from_lines(&change.before, &change.after);
    for hunk in diff.unified_diff().context_radius(2).iter_hunks() {
        for line in hunk.to_string().lines() {
            let _ = writeln!(out, "    {}", escape(line));
        }
    }
    out
}
