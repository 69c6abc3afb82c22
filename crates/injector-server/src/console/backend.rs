//! What the console reads from the server, behind an object-safe trait so the routes can be
//! tested with a fake: the state, the configuration, the metrics text, and the two
//! explanations (of a kept admission, of a pasted manifest), which are CPU work the routes run
//! on the blocking pool.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::admission;
use crate::handler::Shared;
use crate::injector::{Explain, ExplainError, ExplainSubject, Injector};
use crate::logging::rfc3339;

/// The server, as the console sees it.
pub(crate) trait Backend: Send + Sync + 'static {
    /// Readiness and why, configuration generation and reload error, the certificate, cluster
    /// mode's section.
    fn state(&self) -> Value;
    /// The configuration in service (the injector's description) and its load history.
    fn configuration(&self) -> Value;
    /// The Prometheus text `/metrics` serves.
    fn metrics_text(&self) -> String;
    /// Re-explains a kept AdmissionReview against the configuration in service (blocking).
    fn explain_review(&self, review: &[u8]) -> Result<Value, ExplainError>;
    /// Explains a pasted manifest against the configuration in service (blocking).
    fn explain_paste(&self, paste: Paste) -> Result<Value, ExplainError>;
}

/// A pasted manifest and where its pods would be created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Paste {
    /// The Pod or workload, YAML or JSON.
    pub manifest: String,
    /// The namespace, when the manifest names none.
    pub namespace: Option<String>,
    /// The namespace's labels.
    pub namespace_labels: Option<BTreeMap<String, String>>,
}

/// Why the paste form's request cannot be read (answered `400 Bad Request` with this text).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PasteError {
    /// The body is not JSON.
    #[error("the request is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// No manifest was pasted.
    #[error("paste a Pod or workload manifest (YAML or JSON) first")]
    NoManifest,
    /// An entry of the namespace labels is not `key=value`.
    #[error(
        "namespace labels: {entry:?} is not key=value (give one label per line, e.g. istio-injection=enabled)"
    )]
    Label {
        /// The entry, trimmed.
        entry: String,
    },
}

/// `key=value` pairs, one per line or separated by commas; blank entries are ignored.
pub(crate) fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, PasteError> {
    let mut labels = BTreeMap::new();
    for entry in text.split([',', '\n']).map(str::trim).filter(|e| !e.is_empty()) {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(PasteError::Label {
                entry: entry.to_owned(),
            });
        };
        labels.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    Ok(labels)
}

/// Replaces the literal values of every container's environment variables: the console shows
/// explanations of other people's pods, and a literal value may be a secret pasted in by hand
/// (`valueFrom` references are names, not values, and stay).
pub(crate) fn scrub_env_values(pod: &mut Value) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers {
            let Some(env) = container.get_mut("env").and_then(Value::as_array_mut) else {
                continue;
            };
            for var in env {
                if let Some(value) = var.get_mut("value") {
                    *value = json!("(hidden by the console)");
                }
            }
        }
    }
}

impl<I: Injector> Backend for Shared<I> {
    fn state(&self) -> Value {
        let (ready, detail) = self.readiness_report();
        let mut state: Value = serde_json::from_str(&detail).unwrap_or_else(|_| json!({}));
        let config = self.config.status();
        let loaded_at = config
            .last_success
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| rfc3339(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)));
        let cert = self.certs.status();
        let ca_sha256 = self
            .certs
            .ca_pem()
            .and_then(|pem| injector_pki::pem_certificates(pem).ok())
            .and_then(|certs| certs.first().map(|c| injector_pki::fingerprint(c.as_ref())));
        let now = crate::console::now_ms() / 1000;
        let info = cert.info.as_ref();
        let why = why_not_ready(&state);
        if let Some(map) = state.as_object_mut() {
            map.insert("ready".into(), json!(ready));
            map.insert("why".into(), json!(why));
            map.insert(
                "configuration".into(),
                json!({
                    "loaded": config.loaded,
                    "generation": config.generation,
                    "loadedAt": loaded_at,
                    "lastReloadError": config.last_error,
                }),
            );
            map.insert(
                "servingCertificate".into(),
                json!({
                    "loaded": cert.loaded,
                    "subject": info.map(|i| i.subject.clone()),
                    "names": info.map(|i| i.names.clone()),
                    "serial": info.map(|i| i.serial.clone()),
                    "notAfter": info.map(|i| rfc3339(i.not_after)),
                    "daysLeft": info.map(|i| (i.not_after - now) / 86400),
                    "sha256": info.map(|i| i.sha256.clone()),
                    "caSha256": ca_sha256,
                    "lastReloadError": cert.last_error,
                }),
            );
        }
        state
    }

    fn configuration(&self) -> Value {
        let described = self
            .config
            .current()
            .zip(self.explain.as_ref())
            .map_or(Value::Null, |(config, explain)| explain.describe(&config));
        json!({
            "inService": described,
            "history": self.config.history(),
        })
    }

    fn metrics_text(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }

    fn explain_review(&self, review: &[u8]) -> Result<Value, ExplainError> {
        let request = admission::decode(review).map_err(ExplainError::Review)?;
        let config = self.config.current().ok_or(ExplainError::NoConfiguration)?;
        let mut object = request.object;
        scrub_env_values(&mut object);
        self.explainer()?.explain(
            &config,
            &ExplainSubject::Admitted {
                object,
                namespace: request.namespace,
            },
        )
    }

    fn explain_paste(&self, paste: Paste) -> Result<Value, ExplainError> {
        let config = self.config.current().ok_or(ExplainError::NoConfiguration)?;
        self.explainer()?.explain(
            &config,
            &ExplainSubject::Pasted {
                manifest: paste.manifest,
                namespace: paste.namespace,
                namespace_labels: paste.namespace_labels,
            },
        )
    }
}

impl<I: Injector> Shared<I> {
    /// What explains pods, or why nothing does.
    fn explainer(&self) -> Result<&dyn Explain<Config = I::Config>, ExplainError> {
        self.explain.as_deref().ok_or(ExplainError::Unsupported)
    }
}

/// Why the readiness detail says not ready, in words (empty when ready).
pub(crate) fn why_not_ready(detail: &Value) -> Vec<String> {
    let mut why = Vec::new();
    if detail.pointer("/config/loaded") != Some(&json!(true)) {
        let error = detail.pointer("/config/lastReloadError").and_then(Value::as_str);
        why.push(match error {
            Some(e) => format!("no configuration loaded: {e}"),
            None => "no configuration loaded yet".to_owned(),
        });
    }
    if detail.pointer("/certificate/loaded") != Some(&json!(true)) {
        let error = detail
            .pointer("/certificate/lastReloadError")
            .and_then(Value::as_str);
        why.push(match error {
            Some(e) => format!("no serving certificate: {e}"),
            None => "no serving certificate yet".to_owned(),
        });
    }
    if detail.get("listening") != Some(&json!(true)) {
        why.push("the HTTPS listener is not accepting yet".to_owned());
    }
    if detail.get("draining") == Some(&json!(true)) {
        why.push("draining for shutdown".to_owned());
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_pairs() {
        let labels = parse_labels("istio-injection=enabled, team = shop\n\n").expect("parses");
        assert_eq!(labels.get("istio-injection").map(String::as_str), Some("enabled"));
        assert_eq!(labels.get("team").map(String::as_str), Some("shop"));
        let error = parse_labels("istio-injection").expect_err("no =");
        assert!(
            matches!(&error, PasteError::Label { entry } if entry == "istio-injection"),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("\"istio-injection\" is not key=value"),
            "{error}"
        );
    }

    #[test]
    fn literal_env_values_are_hidden_and_references_kept() {
        let mut pod = json!({"spec": {"containers": [{"env": [
            {"name": "PASSWORD", "value": "hunter2"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}});
        scrub_env_values(&mut pod);
        let text = pod.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("secretKeyRef"), "{text}");
    }

    #[test]
    fn not_ready_says_why() {
        let detail = json!({"listening": true, "draining": false,
            "config": {"loaded": false, "lastReloadError": "mesh: bad"},
            "certificate": {"loaded": true}});
        assert_eq!(why_not_ready(&detail), ["no configuration loaded: mesh: bad"]);
        let ready = json!({"listening": true, "draining": false,
            "config": {"loaded": true}, "certificate": {"loaded": true}});
        assert!(why_not_ready(&ready).is_empty());
    }
}
