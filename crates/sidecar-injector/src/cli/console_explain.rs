//! `serve --console-addr`: what the console asks of the engine — the explanation of an admitted
//! pod (the report `explain` prints) and of a pasted manifest (the report, patch and pod diff
//! `explain --show-patch` prints), and a description of the configuration in service.
//!
//! The same functions as the `explain` command, on the configuration `serve` has in service,
//! so the browser and the command cannot disagree.

use injector_core::{
    explain::{ConfigOrigin, Context, Explanation, Webhooks, explain},
    gate::NamespaceFacts,
    workload::{self, PodTemplate, SUPPORTED_KINDS},
};
use injector_engine::CompiledConfig;
use injector_server::ExplainSubject;
use serde_json::{Value, json};

use super::{explain_table, input, show_patch};

/// Where the configuration in service came from and which revision `serve` injects.
pub struct ConsoleContext {
    /// The revision (`--revision`): the chart webhooks a pasted pod is checked against.
    pub revision: String,
    /// Where the configuration came from.
    pub origin: ConfigOrigin,
}

/// Explains `subject` against `injector`.
pub fn explain_subject(
    injector: &CompiledConfig,
    context: &ConsoleContext,
    subject: &ExplainSubject,
) -> Result<Value, String> {
    match subject {
        ExplainSubject::Admitted { object, namespace } => {
            Ok(explain_admitted(injector, context, object, namespace))
        }
        ExplainSubject::Pasted {
            manifest,
            namespace,
            namespace_labels,
        } => explain_pasted(
            injector,
            context,
            manifest,
            namespace.as_deref(),
            namespace_labels.clone(),
        ),
    }
}

/// A pod the webhook admitted: the API server called the injector, so the webhooks are taken as
/// called; the decision is the injector's own.
fn explain_admitted(
    injector: &CompiledConfig,
    context: &ConsoleContext,
    pod: &Value,
    namespace: &str,
) -> Value {
    let mut pod = pod.clone();
    // The API server sends the pod with its type; a review written by hand may lack it.
    if let Some(map) = pod.as_object_mut() {
        map.entry("apiVersion").or_insert_with(|| json!("v1"));
        map.entry("kind").or_insert_with(|| json!("Pod"));
    }
    if pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
        && let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert("namespace".into(), json!(namespace));
    }
    let workload = match workload::pod_template(&pod) {
        Ok(Some(workload)) => workload,
        Ok(None) => return json!({"report": "the admitted object is not a pod", "decision": "error"}),
        Err(e) => {
            return json!({"report": format!("the admitted pod does not read as one: {e}"), "decision": "error"});
        }
    };
    let explanation = explain(
        &workload,
        Context {
            namespace: None,
            webhooks: Webhooks::AssumeCalled,
            config: injector.config(),
            origin: &context.origin,
        },
    );
    json!({
        "decision": if explanation.injected { "injected" } else { "skipped" },
        "reasons": reasons(&explanation),
        "report": explain_table::render(std::slice::from_ref(&explanation), false),
        "explanation": explanation,
    })
}

/// A pasted manifest: its first workload, explained and injected as `explain --show-patch`
/// does (the chart's webhooks of `--revision`, the namespace's labels when given).
fn explain_pasted(
    injector: &CompiledConfig,
    context: &ConsoleContext,
    manifest: &str,
    namespace: Option<&str>,
    labels: Option<injector_core::selector::Labels>,
) -> Result<Value, String> {
    let source = input::Source {
        name: "the pasted manifest".to_owned(),
        text: manifest.to_owned(),
    };
    let objects = input::objects(&source).map_err(|e| format!("{e:#}"))?;
    let (mut object, workload) = first_workload(objects)?;
    if let Some(namespace) = namespace.filter(|n| !n.is_empty())
        && workload.owner.namespace.is_none()
        && let Some(metadata) = object.value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert("namespace".into(), json!(namespace));
    }
    let workload = workload::pod_template(&object.value)
        .map_err(|e| format!("{}: {e}", object.describe()))?
        .ok_or_else(|| format!("{}: not a workload", object.describe()))?;
    super::explain::check_decodes(&object).map_err(|e| format!("{e:#}"))?;
    let facts = labels.map(|labels| {
        let name = workload
            .owner
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        NamespaceFacts::new(&name, labels)
    });
    let explanation = explain(
        &workload,
        Context {
            namespace: facts.as_ref(),
            webhooks: Webhooks::IstioChart {
                revision: &context.revision,
            },
            config: injector.config(),
            origin: &context.origin,
        },
    );
    let change = show_patch::pod_change(injector, &object.value, &workload);
    let mut report = explain_table::render(std::slice::from_ref(&explanation), false);
    report.push_str(&show_patch::render_table(&explanation, &change));
    let diff = similar::TextDiff::from_lines(&change.before, &change.after)
        .unified_diff()
        .context_radius(3)
        .header("pod (as created)", "pod (as injected)")
        .to_string();
    // The verdict is explain's (webhooks and injector together); the patch is what the
    // injector answers when it is called, as `explain --show-patch` shows it either way.
    let decision = match (&change.error, explanation.injected, change.patch.is_empty()) {
        (Some(_), _, _) => "denied",
        (None, true, _) => "injected",
        (None, false, false) => {
            "not injected (the webhook is not called for it; if it were, the injector would apply the patch below)"
        }
        (None, false, true) => "skipped",
    };
    Ok(json!({
        "decision": decision,
        "error": change.error,
        "reasons": reasons(&explanation),
        "patch": change.patch_json(),
        "diff": diff,
        "report": report,
        "explanation": explanation,
    }))
}

/// The first workload of the stream, with the object it came from.
fn first_workload(objects: Vec<input::Located>) -> Result<(input::Located, PodTemplate), String> {
    let mut first = None;
    for object in objects {
        match workload::pod_template(&object.value) {
            Ok(Some(template)) => return Ok((object, template)),
            Ok(None) => first = first.or(Some(object.describe())),
            Err(e) => return Err(format!("{}: {e}", object.describe())),
        }
    }
    Err(format!(
        "{}: not a workload with a pod template; paste one of: {SUPPORTED_KINDS}",
        first.unwrap_or_else(|| "the pasted manifest".to_owned())
    ))
}

/// The verdict's reason, what decided it, and the warnings, as lines.
fn reasons(explanation: &Explanation) -> Vec<String> {
    let mut lines = vec![
        explanation.reason.clone(),
        format!("decided by: {}", explanation.decided_by),
    ];
    lines.extend(explanation.warnings.iter().map(|w| format!("warning: {w}")));
    lines.extend(
        explanation
            .remedies
            .iter()
            .map(|r| format!("fix: {}", r.description)),
    );
    lines
}

/// The configuration in service, as compiled: policy, templates, values, mesh config.
pub fn describe(injector: &CompiledConfig) -> Value {
    let config = injector.config();
    json!({
        "policy": format!("{:?}", config.injection.policy),
        "neverInjectSelector": format!("{:?}", config.injection.never_inject_selector),
        "alwaysInjectSelector": format!("{:?}", config.injection.always_inject_selector),
        "defaultTemplates": config.default_templates,
        "aliases": config.aliases,
        "injectedAnnotations": config.injected_annotations,
        "templates": config.templates,
        "values": injector.values(),
        "mesh": injector.mesh(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use injector_engine::Options;

    fn injector() -> CompiledConfig {
        let loaded = super::super::settings::from_texts(None, None, None).expect("embedded defaults");
        CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, Options::default()).expect("compiles")
    }

    fn context() -> ConsoleContext {
        ConsoleContext {
            revision: "default".into(),
            origin: ConfigOrigin::Embedded,
        }
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers:\n  - name: app\n    image: nginx\n";

    #[test]
    fn a_pasted_pod_gets_the_report_patch_and_diff() {
        let subject = ExplainSubject::Pasted {
            manifest: POD.into(),
            namespace: None,
            namespace_labels: Some([("istio-injection".to_owned(), "enabled".to_owned())].into()),
        };
        let result = explain_subject(&injector(), &context(), &subject).expect("explains");
        assert_eq!(result["decision"], "injected", "{result}");
        assert!(result["patch"].as_array().is_some_and(|p| !p.is_empty()));
        assert!(
            result["diff"]
                .as_str()
                .unwrap_or("")
                .contains("+  - name: istio-proxy")
                || result["diff"].as_str().unwrap_or("").contains("istio-proxy")
        );
        assert!(result["report"].as_str().unwrap_or("").contains("JSON Patch"));
        // The configuration in service is what was explained against: nothing was assumed of it.
        assert!(
            !result["reasons"].to_string().contains("--injector-config"),
            "{}",
            result["reasons"]
        );
    }

    #[test]
    fn a_paste_that_is_not_a_workload_says_what_to_paste() {
        let subject = ExplainSubject::Pasted {
            manifest: "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n".into(),
            namespace: None,
            namespace_labels: None,
        };
        let error = explain_subject(&injector(), &context(), &subject).expect_err("not a workload");
        assert!(error.contains("not a workload with a pod template"), "{error}");
        let subject = ExplainSubject::Pasted {
            manifest: "kind: [".into(),
            namespace: None,
            namespace_labels: None,
        };
        let error = explain_subject(&injector(), &context(), &subject).expect_err("bad YAML");
        assert!(error.contains("the pasted manifest"), "{error}");
    }

    #[test]
    fn an_admitted_pod_is_explained_as_called_by_the_webhook() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
        let subject = ExplainSubject::Admitted {
            object: pod,
            namespace: "shop".into(),
        };
        let result = explain_subject(&injector(), &context(), &subject).expect("explains");
        assert!(
            result["report"].as_str().is_some_and(|r| r.contains("shop")),
            "{result}"
        );
    }

    #[test]
    fn the_description_names_templates_values_and_mesh() {
        let described = describe(&injector());
        assert!(described["templates"].as_object().is_some_and(|t| !t.is_empty()));
        assert!(described.get("values").is_some() && described.get("mesh").is_some());
    }
}
