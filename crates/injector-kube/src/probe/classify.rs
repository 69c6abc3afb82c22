//! Why a probe failed, from the text of the API server's error.
//!
//! The API server wraps a webhook call's failure as `Internal error occurred: failed calling
//! webhook "NAME": failed to call webhook: Post "URL": CAUSE`, where CAUSE is Go's `net/http`
//! and `crypto/x509` error text; a webhook's refusal reads `admission webhook "NAME" denied the
//! request: MESSAGE`. Those texts are stable (they are what every troubleshooting page quotes),
//! so they are matched here; the order matters, since a webhook URL carries `?timeout=10s`.

/// The kinds of failure the probe tells apart (the `class` label of
/// `sidecar_injector_probe_failures_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureClass {
    /// The API server does not trust the certificate it was served: a caBundle that is empty,
    /// from another CA, or a certificate expired or for another name.
    X509,
    /// Nothing answers at the webhook's address: no endpoints for its Service, connection
    /// refused, no such host.
    NoEndpoints,
    /// The webhook (or the API server) did not answer in time.
    Timeout,
    /// A webhook refused the canary; the message is its own.
    Denied,
    /// The canary was admitted, but injected where it should not be or not where it should.
    WrongResult,
    /// Anything else (another admission plugin, the API server unreachable, …).
    Other,
}

impl FailureClass {
    /// Every class, in the order of the enum (metrics start at zero for each).
    pub const ALL: [FailureClass; 6] = [
        FailureClass::X509,
        FailureClass::NoEndpoints,
        FailureClass::Timeout,
        FailureClass::Denied,
        FailureClass::WrongResult,
        FailureClass::Other,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::X509 => "x509",
            FailureClass::NoEndpoints => "no-endpoints",
            FailureClass::Timeout => "timeout",
            FailureClass::Denied => "denied",
            FailureClass::WrongResult => "wrong-result",
            FailureClass::Other => "other",
        }
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const DENIED: &[&str] = &["denied the request"];
const X509: &[&str] = &[
    "x509:",
    "tls: failed to verify certificate",
    "certificate signed by unknown authority",
];
const TIMEOUT: &[&str] = &[
    "context deadline exceeded",
    "client.timeout exceeded",
    "i/o timeout",
    "timeout: request did not complete",
    "unable to return a response in the time allotted",
    "tls handshake timeout",
    "timeout awaiting response headers",
];
const NO_ENDPOINTS: &[&str] = &[
    "no endpoints available for service",
    "connection refused",
    "no such host",
    "no route to host",
    "network is unreachable",
];

/// The class of an error the API server answered a dry-run create with (its `message`).
pub fn classify(message: &str) -> FailureClass {
    let text = message.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    if any(DENIED) {
        FailureClass::Denied
    } else if any(X509) {
        FailureClass::X509
    } else if any(TIMEOUT) {
        FailureClass::Timeout
    } else if any(NO_ENDPOINTS) || is_missing_service(&text) {
        FailureClass::NoEndpoints
    } else {
        FailureClass::Other
    }
}

/// The API server's `message`, with how to fix it when the fault is the probe's own set-up
/// rather than the admission path (its permission, its namespace).
pub fn with_hint(message: &str) -> String {
    let hint = if message.contains("cannot create resource \"pods\"") {
        Some(
            "the probe needs pods create in this namespace: apply the optional probe part of deploy/rbac-cluster-mode.yaml (a Role and RoleBinding there)",
        )
    } else if message.starts_with("namespaces \"") && message.ends_with("\" not found") {
        Some(
            "create the probe namespace, labelled like the workloads it stands for (deploy/rbac-cluster-mode.yaml has both)",
        )
    } else {
        None
    };
    match hint {
        Some(hint) => format!("{message} ({hint})"),
        None => message.to_owned(),
    }
}

/// `service "istiod" not found`: a webhook whose `clientConfig.service` names no Service.
fn is_missing_service(text: &str) -> bool {
    text.find("service \"")
        .is_some_and(|at| text[at..].contains("\" not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is(class: FailureClass, messages: &[&str]) {
        for m in messages {
            assert_eq!(classify(m), class, "{m}");
        }
    }

    #[test]
    fn x509_errors_whatever_the_cause() {
        is(
            FailureClass::X509,
            &[
                // A caBundle of another CA (kube-apiserver v1.36, seen in tests/e2e/probe.sh).
                r#"Internal error occurred: failed calling webhook "restored.sidecar-injector.e2e.invalid": failed to call webhook: Post "https://127.0.0.1:26176/inject?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority"#,
                // The troubleshooting page's (an older API server).
                r#"Internal error occurred: failed calling admission webhook "sidecar-injector.istio.io": Post https://istio-sidecar-injector.istio-system.svc:443/inject: x509: certificate signed by unknown authority (possibly because of "crypto/rsa: verification error" while trying to verify candidate authority certificate "Kubernetes.cluster.local")"#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T01:00:00Z is after 2026-12-01T01:00:00Z"#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": tls: failed to verify certificate: x509: certificate is valid for istiod.other.svc, not istiod.istio-system.svc"#,
            ],
        );
    }

    #[test]
    fn nothing_answering_is_no_endpoints_not_a_timeout_despite_the_urls_timeout_parameter() {
        is(
            FailureClass::NoEndpoints,
            &[
                // A webhook at a closed port (seen in tests/e2e/probe.sh).
                r#"Internal error occurred: failed calling webhook "closed.sidecar-injector.e2e.invalid": failed to call webhook: Post "https://127.0.0.1:30959/inject?timeout=10s": dial tcp 127.0.0.1:30959: connect: connection refused"#,
                r#"Internal error occurred: failed calling admission webhook "istio-sidecar-injector.istio.io": Post https://istio-sidecar-injector.istio-system.svc:443/admitPilot?timeout=30s: no endpoints available for service "istio-sidecar-injector""#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": service "istiod" not found"#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://injector.invalid:443/inject?timeout=10s": dial tcp: lookup injector.invalid on 10.96.0.10:53: no such host"#,
            ],
        );
    }

    #[test]
    fn slow_webhooks_and_slow_api_servers_are_timeouts() {
        is(
            FailureClass::Timeout,
            &[
                // A webhook that accepts and never answers (seen in tests/e2e/probe.sh).
                r#"Internal error occurred: failed calling webhook "hang.sidecar-injector.e2e.invalid": failed to call webhook: Post "https://127.0.0.1:21108/inject?timeout=1s": context deadline exceeded"#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": net/http: request canceled (Client.Timeout exceeded while awaiting headers)"#,
                r#"Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": dial tcp 10.0.0.7:15017: i/o timeout"#,
                "Timeout: request did not complete within requested timeout - context deadline exceeded",
            ],
        );
    }

    #[test]
    fn a_refusal_is_denied_with_the_webhooks_message_whatever_it_says() {
        is(
            FailureClass::Denied,
            &[
                // A template edit failing for the probe's namespace (seen in tests/e2e/probe.sh).
                r#"admission webhook "istio-sidecar-injector.sidecar-injector.e2e.invalid" denied the request: failed to run injection template: template: inject:1:66: executing "inject" at <fail "e2e: this template refuses the namespace">: error calling fail: e2e: this template refuses the namespace"#,
                r#"admission webhook "policy.example.com" denied the request: x509 certificates are not allowed here"#,
            ],
        );
    }

    #[test]
    fn everything_else_is_other() {
        is(
            FailureClass::Other,
            &[
                // The injected pod in a namespace enforcing restricted (seen in tests/e2e/probe.sh).
                r#"pods "sidecar-injector-probe-ldmsj" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "istio-init" must not include "NET_ADMIN", "NET_RAW" in securityContext.capabilities.add), runAsNonRoot != true (container "istio-init" must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "istio-init" must not set runAsUser=0)"#,
                r#"pods is forbidden: User "system:serviceaccount:istio-system:sidecar-injector" cannot create resource "pods" in API group "" in the namespace "probe""#,
                r#"admission webhook "sidecar-injector.istio.io" does not support dry run"#,
                "",
            ],
        );
    }

    #[test]
    fn the_probes_own_set_up_errors_say_how_to_fix_them() {
        let forbidden = r#"pods is forbidden: User "system:serviceaccount:istio-system:sidecar-injector" cannot create resource "pods" in API group "" in the namespace "probe""#;
        assert!(with_hint(forbidden).starts_with(forbidden));
        assert!(with_hint(forbidden).contains("optional probe part of deploy/rbac-cluster-mode.yaml"));
        let missing = r#"namespaces "probe" not found"#;
        assert!(with_hint(missing).contains("create the probe namespace"));
        let x509 = "x509: certificate signed by unknown authority";
        assert_eq!(
            with_hint(x509),
            x509,
            "the admission path's errors are the API server's words"
        );
    }

    #[test]
    fn labels_are_stable() {
        let labels: Vec<_> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            labels,
            [
                "x509",
                "no-endpoints",
                "timeout",
                "denied",
                "wrong-result",
                "other"
            ]
        );
    }
}
