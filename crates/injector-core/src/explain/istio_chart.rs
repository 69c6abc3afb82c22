//! The webhooks Istio's own chart installs, assumed by `explain` when no
//! MutatingWebhookConfiguration is given.
//!
//! Istio's `istiod` chart registers, for a revision, one MutatingWebhookConfiguration
//! (`istio-sidecar-injector`, or `istio-sidecar-injector-REV`) whose webhooks all cover `CREATE` on
//! `pods` and differ only in their selectors:
//!
//! | webhook | namespace labels | pod labels |
//! | --- | --- | --- |
//! | `rev.namespace` | `istio.io/rev` is the revision, no `istio-injection` | `sidecar.istio.io/inject` is not `"false"` |
//! | `rev.object` | neither `istio.io/rev` nor `istio-injection` | `sidecar.istio.io/inject` is not `"false"`, `istio.io/rev` is the revision |
//! | `namespace` (default revision only) | `istio-injection: enabled` | `sidecar.istio.io/inject` is not `"false"` |
//! | `object` (default revision only) | neither `istio-injection` nor `istio.io/rev` | `sidecar.istio.io/inject: "true"`, no `istio.io/rev` |
//!
//! So injection is opt-in: a namespace labelled `istio-injection=disabled`, or one with no label,
//! never calls the injector unless a pod opts in with its own labels. The chart's optional
//! `enableNamespacesByDefault` webhook (`auto.`) is off by default and not assumed.

use serde_json::{Value, json};

use crate::gate::WebhookConfiguration;

/// The revision name the chart uses when none is set.
pub const DEFAULT_REVISION: &str = "default";

/// The MutatingWebhookConfiguration Istio's chart installs for `revision` (`default` or empty: the
/// default revision, which also gets the `namespace.` and `object.` webhooks).
pub fn webhooks(revision: &str) -> WebhookConfiguration {
    let default = revision.is_empty() || revision == DEFAULT_REVISION;
    let revision = if default { DEFAULT_REVISION } else { revision };
    let not_disabled = requirement("sidecar.istio.io/inject", "NotIn", &["false"]);
    let absent = |key: &str| requirement(key, "DoesNotExist", &[]);
    let is_revision = requirement("istio.io/rev", "In", &[revision]);
    let mut entries = vec![
        entry(
            "rev.namespace.",
            revision,
            vec![is_revision.clone(), absent("istio-injection")],
            vec![not_disabled.clone()],
        ),
        entry(
            "rev.object.",
            revision,
            vec![absent("istio.io/rev"), absent("istio-injection")],
            vec![not_disabled.clone(), is_revision],
        ),
    ];
    if default {
        entries.push(entry(
            "namespace.",
            revision,
            vec![requirement("istio-injection", "In", &["enabled"])],
            vec![not_disabled],
        ));
        entries.push(entry(
            "object.",
            revision,
            vec![absent("istio-injection"), absent("istio.io/rev")],
            vec![
                requirement("sidecar.istio.io/inject", "In", &["true"]),
                absent("istio.io/rev"),
            ],
        ));
    }
    let name = if default {
        "istio-sidecar-injector".to_owned()
    } else {
        format!("istio-sidecar-injector-{revision}")
    };
    let object = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": entries,
    });
    // Built from constants above: reading it back cannot fail, but an error is handled, not
    // unwrapped, and yields a configuration without webhooks (which `explain` reports).
    WebhookConfiguration::from_object(&object).unwrap_or(WebhookConfiguration {
        name: "istio-sidecar-injector".to_owned(),
        webhooks: Vec::new(),
    })
}

/// A one-line description of what the assumed webhooks select, for reports.
pub fn summary(revision: &str) -> String {
    let default = revision.is_empty() || revision == DEFAULT_REVISION;
    let revision = if default { DEFAULT_REVISION } else { revision };
    if default {
        format!(
            "a pod is sent to the injector when its namespace is labelled istio-injection=enabled or \
             istio.io/rev={revision}, or, in a namespace with neither label, when the pod itself is labelled \
             sidecar.istio.io/inject=true or istio.io/rev={revision}; a pod labelled sidecar.istio.io/inject=false \
             never is"
        )
    } else {
        format!(
            "a pod is sent to the injector when its namespace is labelled istio.io/rev={revision} (and not \
             istio-injection), or, in a namespace with neither label, when the pod is labelled \
             istio.io/rev={revision}; a pod labelled sidecar.istio.io/inject=false never is"
        )
    }
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": operator})
    } else {
        json!({"key": key, "operator": operator, "values": values})
    }
}

fn entry(prefix: &str, revision: &str, namespace: Vec<Value>, object: Vec<Value>) -> Value {
    let service = if revision == DEFAULT_REVISION {
        "istiod".to_owned()
    } else {
        format!("istiod-{revision}")
    };
    json!({
        "name": format!("{prefix}sidecar-injector.istio.io"),
        "clientConfig": {"service": {"name": service, "namespace": "istio-system", "path": "/inject", "port": 443}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": namespace},
        "objectSelector": {"matchExpressions": object},
    })
}
