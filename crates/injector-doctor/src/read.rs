//! The outcome of one read from the cluster, and why it failed.

use injector_core::shell;
use serde::Serialize;

/// What one read returned: the objects, or why there are none.
pub type Read<T> = Result<T, ReadFailure>;

/// Why a read failed, in the classes an operator acts on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadFailureKind {
    /// No Kubernetes configuration at all (no kubeconfig, not in a cluster).
    NoConfiguration,
    /// The API server did not answer (connection refused, timeout, TLS).
    Unreachable,
    /// RBAC refused the request (403).
    Forbidden,
    /// Any other error the API server returned.
    Other,
}

/// A read that did not happen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadFailure {
    /// What was attempted, as RBAC words it: `list namespaces`, `get secrets istio-system/x`.
    pub attempted: String,
    /// The class of failure.
    pub kind: ReadFailureKind,
    /// The error as received.
    pub message: String,
}

impl ReadFailure {
    /// One sentence for a check that could not run because of this read.
    pub fn explain(&self) -> String {
        match self.kind {
            ReadFailureKind::NoConfiguration => {
                format!(
                    "cannot {}: no Kubernetes configuration ({})",
                    self.attempted, self.message
                )
            }
            ReadFailureKind::Unreachable => {
                format!(
                    "cannot {}: the API server is unreachable ({})",
                    self.attempted, self.message
                )
            }
            ReadFailureKind::Forbidden => format!(
                "cannot {}: forbidden; this check needs the permission to {} ({})",
                self.attempted, self.attempted, self.message
            ),
            ReadFailureKind::Other => format!("cannot {}: {}", self.attempted, self.message),
        }
    }

    /// A command that shows whether the current credentials have the permission.
    pub fn permission_check(&self) -> String {
        let mut words = self.attempted.split_whitespace();
        let verb = words.next().unwrap_or("get");
        let resource = words.next().unwrap_or("");
        let target = words.next().unwrap_or("");
        let cluster_scoped = matches!(resource, "namespaces" | "mutatingwebhookconfigurations" | "nodes");
        let (namespace, name) = match target.split_once('/') {
            Some(pair) => pair,
            None if cluster_scoped => ("", target),
            None => (target, ""),
        };
        let object = if name.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}/{name}")
        };
        let mut words = vec!["kubectl", "auth", "can-i", verb, &object];
        if !namespace.is_empty() {
            words.extend(["-n", namespace]);
        } else if target.is_empty() && verb == "list" {
            words.push("--all-namespaces");
        }
        shell::command(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forbidden_read_names_the_permission_and_how_to_check_it() {
        let failure = ReadFailure {
            attempted: "get secrets istio-system/sidecar-injector-ca".into(),
            kind: ReadFailureKind::Forbidden,
            message: "secrets is forbidden".into(),
        };
        assert!(
            failure
                .explain()
                .contains("needs the permission to get secrets istio-system/sidecar-injector-ca")
        );
        assert_eq!(
            failure.permission_check(),
            "kubectl auth can-i get secrets/sidecar-injector-ca -n istio-system"
        );
        let list = ReadFailure {
            attempted: "list events".into(),
            kind: ReadFailureKind::Forbidden,
            message: String::new(),
        };
        assert_eq!(
            list.permission_check(),
            "kubectl auth can-i list events --all-namespaces"
        );
    }
}
