//! The canary pod and the check of what the API server gave back.
//!
//! The canary is an ordinary pod, as small as a pod can be and compliant with the `restricted`
//! Pod Security Standard, with requests and limits (a namespace with a ResourceQuota refuses
//! pods without them), so that what it goes through is what the namespace's real pods go
//! through and nothing about the canary itself gets it refused. The injector treats it like
//! any other pod: nothing in the request path looks at its label.

use serde_json::{Value, json};

/// The label every canary carries (`kubectl get pods -l` finds none: they are never stored).
pub const PROBE_LABEL: &str = "sidecar-injector.istio.io/probe";
/// Each canary's sequence number, so that every probe is computed by the engine rather than
/// answered from the outcome cache (a real workload's first pod is computed too).
pub const SEQUENCE_ANNOTATION: &str = "sidecar-injector.istio.io/probe-sequence";
/// The prefix of the names the API server generates for canaries.
pub const GENERATE_NAME: &str = "sidecar-injector-probe-";
/// The field manager of the dry-run creates.
pub const FIELD_MANAGER: &str = "sidecar-injector-probe";
/// Istio's status annotation, written on every injected pod.
const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";
/// The proxy's container name (a container, or an init container when native).
const PROXY_CONTAINER: &str = "istio-proxy";

/// What must happen to the canary in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expect {
    /// A namespace whose pods get a sidecar (`--probe-namespace`).
    Injected,
    /// A namespace opted out of injection (`--probe-opted-out-namespace`).
    NotInjected,
}

impl Expect {
    /// The value of the `expect` metric label and in `/readyz`.
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Injected => "injected",
            Expect::NotInjected => "not-injected",
        }
    }
}

/// The canary pod for the `sequence`-th probe.
pub fn canary_pod(sequence: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": GENERATE_NAME,
            "labels": {
                PROBE_LABEL: "true",
                "app.kubernetes.io/name": "sidecar-injector-probe",
                "app.kubernetes.io/managed-by": "sidecar-injector",
            },
            "annotations": { SEQUENCE_ANNOTATION: sequence.to_string() },
        },
        "spec": {
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "terminationGracePeriodSeconds": 0,
            "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
            "containers": [{
                "name": "canary",
                "image": "registry.k8s.io/pause:3.10",
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": 65532,
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": { "drop": ["ALL"] },
                },
                "resources": {
                    "requests": { "cpu": "1m", "memory": "8Mi" },
                    "limits": { "cpu": "10m", "memory": "8Mi" },
                },
            }],
        },
    })
}

/// Whether the pod that came back carries a sidecar: the status annotation, or a container
/// or init container named `istio-proxy`.
pub fn is_injected(pod: &Value) -> bool {
    let annotated = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(STATUS_ANNOTATION));
    let has_proxy = ["containers", "initContainers"].iter().any(|list| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.get("name").and_then(Value::as_str) == Some(PROXY_CONTAINER))
            })
    });
    annotated || has_proxy
}

/// `Ok` when the pod that came back is as `expect`ed in `namespace`, else what is wrong and
/// where to look.
pub fn check(expect: Expect, namespace: &str, pod: &Value) -> Result<(), String> {
    match (expect, is_injected(pod)) {
        (Expect::Injected, true) | (Expect::NotInjected, false) => Ok(()),
        (Expect::Injected, false) => Err(format!(
            "the canary pod was admitted in namespace {namespace} without a sidecar (no {PROXY_CONTAINER} container, \
             no {STATUS_ANNOTATION} annotation): no webhook of ours selected it (namespace labels, the webhook's \
             namespaceSelector/objectSelector, failurePolicy Ignore hiding an error) or the configuration's policy skips it"
        )),
        (Expect::NotInjected, true) => Err(format!(
            "the canary pod was injected in namespace {namespace}, which should be opted out of injection: \
             check its labels (istio-injection, istio.io/rev) and the webhooks' namespaceSelector"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_is_a_small_restricted_pod_with_a_generated_name() {
        let pod = canary_pod(7);
        assert_eq!(pod["metadata"]["generateName"], GENERATE_NAME);
        assert!(pod["metadata"].get("name").is_none(), "the API server names it");
        assert_eq!(pod["metadata"]["labels"][PROBE_LABEL], "true");
        assert_eq!(pod["metadata"]["annotations"][SEQUENCE_ANNOTATION], "7");
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["securityContext"]["runAsNonRoot"], true);
        assert_eq!(container["securityContext"]["allowPrivilegeEscalation"], false);
        assert_eq!(container["securityContext"]["capabilities"]["drop"][0], "ALL");
        assert_eq!(
            pod["spec"]["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        assert!(container["resources"]["limits"]["memory"].is_string());
        assert!(!is_injected(&pod), "the canary itself has no sidecar");
    }

    #[test]
    fn two_probes_differ_so_that_neither_is_answered_from_the_outcome_cache() {
        assert_ne!(canary_pod(1), canary_pod(2));
    }

    #[test]
    fn an_injected_pod_is_recognised_by_its_annotation_or_its_proxy() {
        let mut pod = canary_pod(1);
        pod["metadata"]["annotations"][STATUS_ANNOTATION] = json!("{}");
        assert!(is_injected(&pod));
        let mut pod = canary_pod(1);
        pod["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "istio-proxy"}));
        assert!(is_injected(&pod));
        let mut pod = canary_pod(1);
        pod["spec"]["initContainers"] = json!([{"name": "istio-proxy", "restartPolicy": "Always"}]);
        assert!(is_injected(&pod), "native sidecar");
    }

    #[test]
    fn the_check_says_what_is_wrong_both_ways() {
        let plain = canary_pod(1);
        let mut injected = canary_pod(1);
        injected["metadata"]["annotations"][STATUS_ANNOTATION] = json!("{}");
        assert_eq!(check(Expect::Injected, "p", &injected), Ok(()));
        assert_eq!(check(Expect::NotInjected, "p", &plain), Ok(()));
        let missing = check(Expect::Injected, "probe-on", &plain).unwrap_err();
        assert!(
            missing.contains("namespace probe-on without a sidecar"),
            "{missing}"
        );
        let extra = check(Expect::NotInjected, "probe-off", &injected).unwrap_err();
        assert!(extra.contains("injected in namespace probe-off"), "{extra}");
    }
}
