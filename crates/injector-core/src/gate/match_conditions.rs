//! A webhook's `matchConditions`: CEL expressions the API server evaluates after the selectors,
//! with the pod as `object` and the admission request as `request`. The webhook is called only
//! when every one is true; one false skips it; an error (and none false) makes the API server
//! apply the webhook's `failurePolicy`.
//!
//! Evaluated here with the `cel` crate over what is known of the pod. A condition that reads
//! something this side does not have (`request.userInfo`, `authorizer`, a field the pod view
//! lacks), or that the crate does not support, cannot be evaluated: it is reported, and taken to
//! pass, so that nothing is ever counted as skipped that the API server might call.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde::Serialize;
use serde_json::{Value, json};

/// One entry of `matchConditions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    /// Its name.
    pub name: String,
    /// The CEL expression.
    pub expression: String,
}

/// How a webhook's conditions fared for one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionsOutcome {
    /// The conditions that are false: the API server does not call the webhook.
    pub failed: Vec<String>,
    /// The conditions that could not be evaluated here, each with why (taken to pass).
    pub unevaluated: Vec<String>,
}

impl ConditionsOutcome {
    /// Whether the conditions let the call through (none is false).
    pub fn pass(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Evaluates `conditions` for the creation of `pod` in `namespace`, as the API server does.
pub fn evaluate(conditions: &[MatchCondition], pod: &Value, namespace: &str) -> ConditionsOutcome {
    let mut outcome = ConditionsOutcome::default();
    if conditions.is_empty() {
        return outcome;
    }
    let request = request_of(namespace);
    for condition in conditions {
        match evaluate_one(&condition.expression, pod, &request) {
            Ok(true) => {}
            Ok(false) => outcome.failed.push(condition.name.clone()),
            Err(why) => outcome.unevaluated.push(format!("{}: {why}", condition.name)),
        }
    }
    outcome
}

/// What the API server gives a webhook's conditions as `request` for a pod's creation, as far
/// as it is known here (no user, no name).
fn request_of(namespace: &str) -> Value {
    json!({
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": namespace,
        "operation": "CREATE",
        "dryRun": false,
    })
}

/// One condition: its boolean value, or why there is none.
fn evaluate_one(expression: &str, pod: &Value, request: &Value) -> Result<bool, String> {
    // A parser or interpreter fault on an expression read from a cluster must not stop `explain`
    // or `doctor`: it is one more condition that cannot be evaluated here.
    std::panic::catch_unwind(|| evaluate_unguarded(expression, pod, request))
        .unwrap_or_else(|_| Err("the CEL interpreter failed on it".to_owned()))
}

/// The standard environment, built once (it registers every standard function).
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// Compiled expressions by their text: `doctor` evaluates the same few for every workload.
/// Bounded: emptied when full (a cluster's webhooks hold a handful).
static PROGRAMS: LazyLock<Mutex<HashMap<String, Arc<cel::Program>>>> = LazyLock::new(Mutex::default);
const MAX_PROGRAMS: usize = 256;

fn compiled(expression: &str) -> Result<Arc<cel::Program>, String> {
    if let Some(program) = PROGRAMS.lock().ok().and_then(|p| p.get(expression).cloned()) {
        return Ok(program);
    }
    let program = Arc::new(
        ENV.compile(expression)
            .map_err(|e| format!("cannot parse it ({e})"))?,
    );
    if let Ok(mut programs) = PROGRAMS.lock() {
        if programs.len() >= MAX_PROGRAMS {
            programs.clear();
        }
        programs.insert(expression.to_owned(), program.clone());
    }
    Ok(program)
}

fn evaluate_unguarded(expression: &str, pod: &Value, request: &Value) -> Result<bool, String> {
    let program = compiled(expression)?;
    let mut context = cel::Context::with_env(ENV.clone());
    for (name, value) in [("object", pod), ("request", request), ("oldObject", &Value::Null)] {
        context
            .add_variable(name, value)
            .map_err(|e| format!("cannot pass {name} ({e})"))?;
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(value)) => Ok(value),
        Ok(other) => Err(format!("it gives {other:?}, not a bool")),
        Err(e) => Err(format!("cannot evaluate it here ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(name: &str, expression: &str) -> MatchCondition {
        MatchCondition {
            name: name.to_owned(),
            expression: expression.to_owned(),
        }
    }

    #[test]
    fn false_skips_errors_are_reported_and_pass() {
        let pod = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"hostNetwork": true}});
        let outcome = evaluate(
            &[
                condition("host", "!object.spec.?hostNetwork.orValue(false)"),
                condition("ns", "request.namespace != 'kube-system'"),
                condition("user", "request.userInfo.username != 'system:admin'"),
                condition("broken", "object.("),
            ],
            &pod,
            "shop",
        );
        assert_eq!(outcome.failed, ["host"]);
        assert_eq!(outcome.unevaluated.len(), 2, "{:?}", outcome.unevaluated);
        assert!(outcome.unevaluated[0].starts_with("user: "));
        assert!(outcome.unevaluated[1].starts_with("broken: cannot parse it"));
        assert!(!outcome.pass());
    }

    #[test]
    fn optional_selection_and_indexing() {
        let expression = "object.metadata.?labels[?'sidecar.istio.io/inject']\
                          .orValue(object.metadata.?annotations[?'sidecar.istio.io/inject'].orValue('')) != 'false'";
        let pass = |pod: Value| evaluate(&[condition("c", expression)], &pod, "shop").pass();
        assert!(pass(json!({"metadata": {}, "spec": {}})));
        assert!(!pass(
            json!({"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}})
        ));
        assert!(pass(json!({"metadata": {
            "labels": {"sidecar.istio.io/inject": "true"},
            "annotations": {"sidecar.istio.io/inject": "false"}}})));
        assert!(!pass(
            json!({"metadata": {"labels": {"sidecar.istio.io/inject": "false"}}})
        ));
    }
}
