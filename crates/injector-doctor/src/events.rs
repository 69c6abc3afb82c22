//! `FailedCreate` events that name an admission webhook, classified by what the operator does
//! about them (the "pods cannot be created at all" section of
//! Istio's troubleshooting page, <https://istio.io/latest/docs/ops/common-problems/injection/>).

use serde::Serialize;

/// Why the API server could not call (or was refused by) the webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureClass {
    /// `x509: …`: the caBundle does not match the serving certificate, or it expired.
    X509,
    /// `no endpoints available`, `no such host`, `connection refused`: the injector is not running or not reachable.
    NoEndpoints,
    /// `context deadline exceeded`, `timeout`: the injector is too slow.
    Timeout,
    /// `admission webhook "…" denied the request`: the injector refused the pod.
    Denied,
    /// Anything else.
    Other,
}

impl FailureClass {
    /// Classifies an event message.
    pub fn of(message: &str) -> FailureClass {
        let lower = message.to_ascii_lowercase();
        if lower.contains("x509:") || lower.contains("tls: failed to verify") || lower.contains("certificate")
        {
            FailureClass::X509
        } else if lower.contains("denied the request") {
            FailureClass::Denied
        } else if lower.contains("no endpoints available")
            || lower.contains("no such host")
            || lower.contains("connection refused")
            || lower.contains("service \"") && lower.contains("not found")
        {
            FailureClass::NoEndpoints
        } else if lower.contains("deadline exceeded")
            || lower.contains("timeout")
            || lower.contains("timed out")
        {
            FailureClass::Timeout
        } else {
            FailureClass::Other
        }
    }

    /// The label in the report.
    pub fn label(self) -> &'static str {
        match self {
            FailureClass::X509 => "x509",
            FailureClass::NoEndpoints => "no endpoints",
            FailureClass::Timeout => "timeout",
            FailureClass::Denied => "denied by the injector",
            FailureClass::Other => "other",
        }
    }

    /// What to do about it.
    pub fn advice(self) -> &'static str {
        match self {
            FailureClass::X509 => {
                "the caBundle does not verify the injector's certificate: see the caBundle check"
            }
            FailureClass::NoEndpoints => {
                "the injector is down or unreachable and the webhook fails closed: see the endpoints check"
            }
            FailureClass::Timeout => {
                "the injector answers too slowly: check its load and the webhook's timeoutSeconds"
            }
            FailureClass::Denied => {
                "the injector refused the pod: its message says why (often a template error)"
            }
            FailureClass::Other => "read the message",
        }
    }
}

/// The webhook named by a `failed calling webhook "NAME"` or `admission webhook "NAME" denied`
/// message, if any.
pub fn webhook_named(message: &str) -> Option<&str> {
    for marker in ["failed calling webhook \"", "admission webhook \""] {
        if let Some(start) = message.find(marker) {
            let rest = &message[start + marker.len()..];
            return rest.split('"').next();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_servers_messages_are_classified_and_name_their_webhook() {
        let x509 = r#"Error creating: Internal error occurred: failed calling webhook "sidecar-injector.istio.io": failed to call webhook: Post "https://127.0.0.1:1/inject?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority"#;
        assert_eq!(FailureClass::of(x509), FailureClass::X509);
        assert_eq!(webhook_named(x509), Some("sidecar-injector.istio.io"));
        let refused = r#"Error creating: Internal error occurred: failed calling webhook "a.b": failed to call webhook: Post "https://127.0.0.1:1/inject?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused"#;
        assert_eq!(FailureClass::of(refused), FailureClass::NoEndpoints);
        let endpoints = r#"failed calling webhook "a.b": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject": no endpoints available for service "istiod""#;
        assert_eq!(FailureClass::of(endpoints), FailureClass::NoEndpoints);
        let slow = r#"failed calling webhook "a.b": failed to call webhook: Post "https://127.0.0.1:1/inject?timeout=1s": context deadline exceeded"#;
        assert_eq!(FailureClass::of(slow), FailureClass::Timeout);
        let denied = r#"Error creating: admission webhook "a.b" denied the request: template sidecar: line 3: nil pointer"#;
        assert_eq!(FailureClass::of(denied), FailureClass::Denied);
        assert_eq!(webhook_named(denied), Some("a.b"));
        assert_eq!(
            FailureClass::of("Error creating: pods \"x\" is forbidden: quota"),
            FailureClass::Other
        );
        assert_eq!(webhook_named("nothing here"), None);
    }
}
