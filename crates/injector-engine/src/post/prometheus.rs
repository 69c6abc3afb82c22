//! Prometheus metrics merging (Istio's `applyPrometheusMerge` and `applySecurePrometheusAnnotation`).
//!
//! With merging on (the default), the pod's own `prometheus.io/*` scrape annotations are moved into
//! the proxy's `ISTIO_PROMETHEUS_ANNOTATIONS` env var and replaced by annotations pointing at the
//! agent's merged endpoint (`:<statusPort>/stats/prometheus`), which serves the app's metrics and
//! Envoy's together. Annotation keys are compared the way Prometheus compares label names: every
//! character outside `[A-Za-z0-9_]` becomes `_`, so `prometheus.io/scrape`, `prometheus.io.scrape`
//! and `prometheus-io/scrape` are the same key.

use serde_json::{Map, Value};

use crate::{
    gojson,
    member::Members,
    pod::{annotation_pairs, annotations_mut, env_mut, find_sidecar_mut},
};

/// The annotation that turns merging on or off for one pod.
pub const MERGE_METRICS_ANNOTATION: &str = "prometheus.istio.io/merge-metrics";
/// The annotation listing several scrape targets as `port:path,…`.
pub const SCRAPE_TARGETS_ANNOTATION: &str = "prometheus.istio.io/scrape-targets";
/// The env var carrying the app's original scrape configuration to the agent.
pub const SCRAPE_CONFIG_ENV: &str = "ISTIO_PROMETHEUS_ANNOTATIONS";
/// Ports the proxy and agent use, with what for; an app scrape target may not use them.
pub const RESERVED_PORTS: [(u16, &str); 9] = [
    (15000, "Envoy admin"),
    (15001, "outbound traffic capture"),
    (15004, "pilot debug"),
    (15006, "inbound traffic capture"),
    (15008, "HBONE tunnel"),
    (15020, "pilot-agent status / merged Prometheus"),
    (15021, "Envoy health"),
    (15053, "DNS proxy"),
    (15090, "Envoy Prometheus (already merged)"),
];

const SCRAPE: &str = "prometheus_io_scrape";
const PORT: &str = "prometheus_io_port";
const PATH: &str = "prometheus_io_path";
const TARGETS: &str = "prometheus_istio_io_scrape_targets";
const SECURE_PORT: &str = "prometheus_istio_io_secure_port";

/// A failure that aborts injection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PrometheusError(pub String);

/// Prometheus' `SanitizeLabelName`: every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn sanitize_label_name(name: &str) -> String {
    name.chars().map(sanitize_label_char).collect()
}

/// Whether `name` sanitizes to `sanitized` ([`sanitize_label_name`] without building the string:
/// annotation keys are compared with it on every injection).
pub fn sanitizes_to(name: &str, sanitized: &str) -> bool {
    let mut expected = sanitized.chars();
    name.chars()
        .all(|c| expected.next() == Some(sanitize_label_char(c)))
        && expected.next().is_none()
}

fn sanitize_label_char(c: char) -> char {
    if c.is_ascii_alphanumeric() || c == '_' {
        c
    } else {
        '_'
    }
}

/// Whether merging applies: the pod annotation when it parses as a bool, else the mesh's
/// `enablePrometheusMerge` when set, else true.
pub fn merge_enabled(pod: &Value, mesh_enable_merge: Option<bool>) -> bool {
    let annotation = annotation_pairs(pod)
        .into_iter()
        .find(|(k, _)| *k == MERGE_METRICS_ANNOTATION);
    annotation
        .and_then(|(_, value)| parse_go_bool(value))
        .or(mesh_enable_merge)
        .unwrap_or(true)
}

/// Applies metrics merging to the pod. `status_port` is the **mesh** `defaultConfig.statusPort`.
pub fn apply_prometheus_merge(
    pod: &mut Value,
    mesh_enable_merge: Option<bool>,
    status_port: u32,
) -> Result<(), PrometheusError> {
    let pairs: Vec<(String, String, String)> = sorted_pairs(pod);
    if !scrape_enabled(&pairs) || !merge_enabled(pod, mesh_enable_merge) {
        return Ok(());
    }
    let target_port = status_port.to_string();
    if pairs
        .iter()
        .any(|(_, key, value)| key == PORT && *value == target_port)
    {
        // Already merged (a re-injection) or set by the user on purpose.
        return Ok(());
    }
    let config = scrape_configuration(&pairs, status_port)?;
    if !config.is_empty()
        && let Some(sidecar) = find_sidecar_mut(pod)
    {
        let mut entry = Map::new();
        entry.insert("name".into(), SCRAPE_CONFIG_ENV.into());
        entry.insert("value".into(), config.to_json().into());
        env_mut(sidecar).push(Value::Object(entry));
    }
    let annotations = annotations_mut(pod);
    annotations.retain(|key, _| {
        ![SCRAPE, PORT, PATH, TARGETS]
            .iter()
            .any(|name| sanitizes_to(key, name))
    });
    annotations.insert("prometheus.io/port".into(), target_port.into());
    annotations.insert("prometheus.io/path".into(), "/stats/prometheus".into());
    annotations.insert("prometheus.io/scrape".into(), "true".into());
    Ok(())
}

/// Sets `prometheus.istio.io/secure-port` from the proxy's `ENVOY_SECURE_MERGED_METRICS_PORT`
/// when the pod has no annotation of that name.
pub fn apply_secure_port_annotation(pod: &mut Value) {
    let has_annotation = annotation_pairs(pod)
        .iter()
        .any(|(key, _)| sanitizes_to(key, SECURE_PORT));
    if has_annotation {
        return;
    }
    let port = find_sidecar_mut(pod).and_then(|sidecar| {
        sidecar.member("env").and_then(Value::as_array).and_then(|env| {
            env.iter()
                .find(|e| {
                    e.member("name").and_then(Value::as_str) == Some("ENVOY_SECURE_MERGED_METRICS_PORT")
                })
                .and_then(|e| e.member("value").and_then(Value::as_str))
                .map(str::to_owned)
        })
    });
    if let Some(port) = port.filter(|p| !p.is_empty() && p != "0") {
        annotations_mut(pod).insert("prometheus.istio.io/secure-port".into(), port.into());
    }
}

/// Whether the pod wants to be scraped: the first scrape annotation that parses as a bool, else true.
fn scrape_enabled(pairs: &[(String, String, String)]) -> bool {
    pairs
        .iter()
        .filter(|(_, key, _)| key == SCRAPE)
        .find_map(|(_, _, value)| parse_go_bool(value))
        .unwrap_or(true)
}

/// (original key, sanitized key, value), sorted by original key so that spellings of the same
/// key are read in a stable order (Istio reads them in Go's random map order).
fn sorted_pairs(pod: &Value) -> Vec<(String, String, String)> {
    let mut pairs: Vec<(String, String, String)> = annotation_pairs(pod)
        .into_iter()
        .map(|(key, value)| (key.to_owned(), sanitize_label_name(key), value.to_owned()))
        .collect();
    pairs.sort();
    pairs
}

/// The app's scrape configuration, as sent to the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ScrapeConfiguration {
    scrape: String,
    path: String,
    port: String,
    targets: Vec<(String, String)>,
}

impl ScrapeConfiguration {
    fn is_empty(&self) -> bool {
        self.scrape.is_empty() && self.path.is_empty() && self.port.is_empty() && self.targets.is_empty()
    }

    /// Go's JSON of `PrometheusScrapeConfiguration`: scrape, path, port, then targets when any.
    fn to_json(&self) -> String {
        let mut object = Map::new();
        object.insert("scrape".into(), self.scrape.clone().into());
        object.insert("path".into(), self.path.clone().into());
        object.insert("port".into(), self.port.clone().into());
        if !self.targets.is_empty() {
            let targets = self
                .targets
                .iter()
                .map(|(port, path)| {
                    let mut target = Map::new();
                    target.insert("port".into(), port.clone().into());
                    target.insert("path".into(), path.clone().into());
                    Value::Object(target)
                })
                .collect();
            object.insert("targets".into(), Value::Array(targets));
        }
        gojson::to_string(&Value::Object(object))
    }
}

fn scrape_configuration(
    pairs: &[(String, String, String)],
    status_port: u32,
) -> Result<ScrapeConfiguration, PrometheusError> {
    let mut config = ScrapeConfiguration::default();
    let mut targets_text = None;
    for (_, key, value) in pairs {
        match key.as_str() {
            SCRAPE => config.scrape = value.clone(),
            PORT => config.port = value.clone(),
            PATH => config.path = value.clone(),
            TARGETS => targets_text = Some(value.clone()),
            _ => {}
        }
    }
    // Istio logs a targets annotation it cannot parse and goes on as if it were absent.
    if let Some(targets) = targets_text.as_deref().and_then(parse_targets) {
        config.targets = targets;
    }
    if let Some((port, path)) = config.targets.first() {
        config.port = port.clone();
        config.path = path.clone();
        for (port, _) in &config.targets {
            check_port(port, status_port, PortSource::Targets)?;
        }
    } else if !config.port.is_empty() {
        check_port(&config.port, status_port, PortSource::Port)?;
    }
    Ok(config)
}

/// Parses `port:path,port:path` (Istio's `ParseScrapeTargets`): entries and their parts are
/// trimmed, empty entries skipped, an empty path is `/metrics`. `None` when an entry has no port.
fn parse_targets(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (port, path) = entry.split_once(':').unwrap_or((entry, ""));
            let (port, path) = (port.trim(), path.trim());
            let path = if path.is_empty() { "/metrics" } else { path };
            (!port.is_empty()).then(|| (port.to_owned(), path.to_owned()))
        })
        .collect()
}

/// Which annotation a checked port came from; Istio words its errors after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortSource {
    /// `prometheus.istio.io/scrape-targets`.
    Targets,
    /// `prometheus.io/port`.
    Port,
}

/// Istio's checks of a scrape port, in its order and words: a decimal integer (Go's `Atoi`) from 1
/// to 65535, not the agent's status port, not a port the proxy reserves.
fn check_port(port: &str, status_port: u32, source: PortSource) -> Result<(), PrometheusError> {
    let (what, subject) = match source {
        PortSource::Targets => ("scrape targets", "target port"),
        PortSource::Port => ("scrape configuration", "port"),
    };
    let fail = |reason: String| PrometheusError(format!("invalid prometheus {what}: {reason}"));
    let number = port
        .parse::<i64>()
        .ok()
        .filter(|n| (1..=65535).contains(n))
        .ok_or_else(|| fail(format!("invalid {subject} {port:?}")))?;
    if number == i64::from(status_port) {
        return Err(fail(format!("{subject} {port} conflicts with agent port")));
    }
    if let Some(reason) = reserved_port_reason(number) {
        return Err(fail(format!(
            "{subject} {port} is reserved for Istio ({reason}) and cannot be scraped"
        )));
    }
    Ok(())
}

/// Why the Istio data plane reserves `port`, in the words of the agent's `IstioReservedPortReason`.
pub fn reserved_port_reason(port: i64) -> Option<&'static str> {
    RESERVED_PORTS
        .iter()
        .find(|(reserved, _)| i64::from(*reserved) == port)
        .map(|(_, reason)| *reason)
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(annotations: Value) -> Value {
        json!({"metadata": {"annotations": annotations}, "spec": {"containers": [
            {"name": "app"}, {"name": "istio-proxy", "env": [{"name": "A", "value": "1"}]}]}})
    }

    fn proxy_env(pod: &Value) -> Vec<(String, String)> {
        pod["spec"]["containers"][1]["env"]
            .as_array()
            .map(|env| {
                env.iter()
                    .map(|e| {
                        (
                            e["name"].as_str().unwrap_or("").into(),
                            e["value"].as_str().unwrap_or("").into(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn moves_app_annotations_into_the_proxy_env() {
        let mut p = pod(
            json!({"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "prometheus.io/path": "/m"}),
        );
        apply_prometheus_merge(&mut p, None, 15020).expect("merges");
        assert_eq!(
            p["metadata"]["annotations"],
            json!({
            "prometheus.io/port": "15020", "prometheus.io/path": "/stats/prometheus", "prometheus.io/scrape": "true"})
        );
        assert_eq!(
            proxy_env(&p)[1],
            (
                SCRAPE_CONFIG_ENV.into(),
                r#"{"scrape":"true","path":"/m","port":"9090"}"#.into()
            )
        );
    }

    #[test]
    fn pod_without_annotations_gets_the_agent_annotations_only() {
        let mut p = pod(json!({}));
        apply_prometheus_merge(&mut p, None, 15020).expect("merges");
        assert_eq!(p["metadata"]["annotations"]["prometheus.io/port"], "15020");
        assert_eq!(proxy_env(&p).len(), 1, "no scrape configuration to pass on");
    }

    #[test]
    fn other_spellings_are_the_same_key() {
        let mut p = pod(json!({"prometheus-io/scrape": "true", "prometheus.io.port": "8080"}));
        apply_prometheus_merge(&mut p, None, 15020).expect("merges");
        let annotations = p["metadata"]["annotations"].as_object().expect("annotations");
        assert!(
            !annotations.contains_key("prometheus-io/scrape")
                && !annotations.contains_key("prometheus.io.port")
        );
        assert_eq!(proxy_env(&p)[1].1, r#"{"scrape":"true","path":"","port":"8080"}"#);
    }

    #[test]
    fn scrape_false_or_merge_off_leaves_the_pod_alone() {
        for (annotations, mesh) in [
            (json!({"prometheus.io/scrape": "false"}), None),
            (json!({"prometheus.istio.io/merge-metrics": "false"}), None),
            (json!({}), Some(false)),
        ] {
            let mut p = pod(annotations.clone());
            let before = p.clone();
            apply_prometheus_merge(&mut p, mesh, 15020).expect("no-op");
            assert_eq!(p, before, "{annotations} {mesh:?}");
        }
        // The annotation wins over the mesh setting.
        assert!(merge_enabled(
            &pod(json!({"prometheus.istio.io/merge-metrics": "true"})),
            Some(false)
        ));
        assert!(!merge_enabled(&pod(json!({})), Some(false)));
        assert!(merge_enabled(
            &pod(json!({"prometheus.istio.io/merge-metrics": "bogus"})),
            None
        ));
    }

    #[test]
    fn already_merged_pods_are_left_alone() {
        let mut p = pod(json!({"prometheus.io/port": "15020", "prometheus.io/path": "/custom"}));
        let before = p.clone();
        apply_prometheus_merge(&mut p, None, 15020).expect("no-op");
        assert_eq!(p, before);
    }

    #[test]
    fn scrape_targets() {
        let mut p = pod(
            json!({"prometheus.io/scrape": "true", "prometheus.istio.io/scrape-targets": "8080:/metrics,9100:/custom-metrics"}),
        );
        apply_prometheus_merge(&mut p, None, 15020).expect("merges");
        assert_eq!(
            proxy_env(&p)[1].1,
            r#"{"scrape":"true","path":"/metrics","port":"8080","targets":[{"port":"8080","path":"/metrics"},{"port":"9100","path":"/custom-metrics"}]}"#
        );
        assert!(
            p["metadata"]["annotations"]
                .get(SCRAPE_TARGETS_ANNOTATION)
                .is_none()
        );
        assert_eq!(
            parse_targets("9100:, 8080").expect("parses"),
            [
                ("9100".into(), "/metrics".into()),
                ("8080".into(), "/metrics".into())
            ]
        );
        assert_eq!(
            parse_targets(" 9100 : stats ,,").expect("parses"),
            [("9100".into(), "stats".into())],
            "parts are trimmed; the path is taken as written"
        );
        assert_eq!(parse_targets("8080:/m, :/x"), None, "an entry without a port");
    }

    #[test]
    fn unparsable_targets_are_ignored_as_istio_does() {
        let mut p =
            pod(json!({"prometheus.io/port": "9000", "prometheus.istio.io/scrape-targets": "8080:/m,:/x"}));
        apply_prometheus_merge(&mut p, None, 15020).expect("merges");
        assert_eq!(proxy_env(&p)[1].1, r#"{"scrape":"","path":"","port":"9000"}"#);
    }

    #[test]
    fn bad_ports_fail_with_istios_words() {
        for (annotations, message) in [
            (
                json!({"prometheus.io/port": "15090"}),
                "invalid prometheus scrape configuration: port 15090 is reserved for Istio (Envoy Prometheus (already merged)) and cannot be scraped",
            ),
            (
                json!({"prometheus.io/port": "+15000"}),
                "invalid prometheus scrape configuration: port +15000 is reserved for Istio (Envoy admin) and cannot be scraped",
            ),
            (
                // "15020" itself means "already merged"; another spelling of it is a conflict.
                json!({"prometheus.io/port": "015020"}),
                "invalid prometheus scrape configuration: port 015020 conflicts with agent port",
            ),
            (
                json!({"prometheus.io/port": "0"}),
                "invalid prometheus scrape configuration: invalid port \"0\"",
            ),
            (
                json!({"prometheus.io/port": "http"}),
                "invalid prometheus scrape configuration: invalid port \"http\"",
            ),
            (
                json!({"prometheus.istio.io/scrape-targets": "8080:/m,15020:/x"}),
                "invalid prometheus scrape targets: target port 15020 conflicts with agent port",
            ),
            (
                json!({"prometheus.istio.io/scrape-targets": "8080:/m,15053"}),
                "invalid prometheus scrape targets: target port 15053 is reserved for Istio (DNS proxy) and cannot be scraped",
            ),
            (
                json!({"prometheus.istio.io/scrape-targets": "70000:/m"}),
                "invalid prometheus scrape targets: invalid target port \"70000\"",
            ),
        ] {
            let mut p = pod(annotations.clone());
            let error = apply_prometheus_merge(&mut p, None, 15020).expect_err(message);
            assert_eq!(error.to_string(), message, "{annotations}");
        }
    }

    #[test]
    fn bad_ports_fail_injection() {
        for annotations in [
            json!({"prometheus.io/port": "15090"}),
            json!({"prometheus.io/port": "0"}),
            json!({"prometheus.io/port": "http"}),
            json!({"prometheus.istio.io/scrape-targets": "8080:/m,15020:/x"}),
        ] {
            let mut p = pod(annotations.clone());
            assert!(
                apply_prometheus_merge(&mut p, None, 15020).is_err(),
                "{annotations}"
            );
        }
    }

    #[test]
    fn secure_port_annotation() {
        let mut p = pod(json!({}));
        p["spec"]["containers"][1]["env"] =
            json!([{"name": "ENVOY_SECURE_MERGED_METRICS_PORT", "value": "15091"}]);
        apply_secure_port_annotation(&mut p);
        assert_eq!(
            p["metadata"]["annotations"]["prometheus.istio.io/secure-port"],
            "15091"
        );
        let mut zero = pod(json!({}));
        zero["spec"]["containers"][1]["env"] =
            json!([{"name": "ENVOY_SECURE_MERGED_METRICS_PORT", "value": "0"}]);
        apply_secure_port_annotation(&mut zero);
        assert!(
            zero["metadata"]["annotations"]
                .get("prometheus.istio.io/secure-port")
                .is_none()
        );
    }

    #[test]
    fn sanitizes_like_prometheus() {
        assert_eq!(
            sanitize_label_name("prometheus.io/scrape"),
            "prometheus_io_scrape"
        );
        assert_eq!(sanitize_label_name("prometheus-io.port"), "prometheus_io_port");
        for (name, sanitized) in [
            ("prometheus.io/port", "prometheus_io_port"),
            ("prometheus_io_port", "prometheus_io_port"),
            ("prometheus.io/portx", "prometheus_io_port"),
            ("prometheus.io/por", "prometheus_io_port"),
            ("prometheus.io/pörte", "prometheus_io_p_rte"),
            ("", ""),
            ("é", "_"),
            ("é", "__"),
        ] {
            assert_eq!(
                sanitizes_to(name, sanitized),
                sanitize_label_name(name) == sanitized,
                "{name} → {sanitized}"
            );
        }
    }
}
