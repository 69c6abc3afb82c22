//! A webhook with a fast fake injection engine, for load tests and trying the server out
//! without the real engine: `cargo run --release -p injector-server --example fake_injector`.
//!
//! Every pod gets a realistic, Istio-sized JSON Patch (init container, proxy container,
//! volumes, annotations) built per request from the pod's name and namespace, so the response
//! size and the serialization work resemble the real thing. Pods annotated
//! `sidecar.istio.io/inject: "false"` are skipped.
//!
//! `--patch-from RESPONSE` makes it the server's ceiling for bench/side-by-side.sh: every pod
//! gets the patch bytes of RESPONSE (an AdmissionReview response saved from `sidecar-injector
//! serve` for the same review), so the bytes on the wire are the real engine's while no engine
//! runs. Like the real engine it then ignores the pods' `managedFields` (the server does not
//! decode them). The example runs on mimalloc, the binary's allocator, so that the ceiling
//! differs from `serve` only by the engine; `--outcome-cache-mib 0` turns its outcome cache off,
//! as `serve --outcome-cache-mib 0` does.
//!
//! Options (all optional): `--addr 127.0.0.1:15017 --monitoring-addr 127.0.0.1:15014
//! --write-ca /tmp/ca.pem --patch-from response.json --max-concurrency 64 --outcome-cache-mib 8
//! --log-format text|json --inline` (`--inline`
//! runs the engine on the async worker instead of the blocking pool). Logs per admission are
//! at `info`; set `RUST_LOG=warn` under load.

use std::collections::BTreeMap;

use base64::Engine as _;

use injector_server::{
    Admission, AdmissionInput, AdmissionOutcome, Caches, CertSource, ConfigStore, Injector, LogFormat,
    ServeOptions, WatchOptions,
};
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The fake engine: a canned patch when given one, else an Istio-sized patch built per pod.
struct FakeEngine {
    canned: Option<Vec<u8>>,
}

/// The "configuration": the proxy image and a few values, like the real values file.
struct FakeConfig {
    image: String,
    env: BTreeMap<String, String>,
}

impl Injector for FakeEngine {
    type Config = FakeConfig;

    fn admit(&self, config: &FakeConfig, req: &AdmissionInput, _caches: Caches) -> Admission {
        Admission::computed(self.outcome(config, req))
    }
}

impl FakeEngine {
    fn outcome(&self, config: &FakeConfig, req: &AdmissionInput) -> AdmissionOutcome {
        let meta = &req.object["metadata"];
        if meta["annotations"]["sidecar.istio.io/inject"] == "false" {
            return AdmissionOutcome::Skipped {
                reason: "annotation sidecar.istio.io/inject=false".into(),
                warnings: Vec::new(),
            };
        }
        if let Some(patch) = &self.canned {
            return AdmissionOutcome::Patched {
                patch: patch.clone(),
                reason: "injected (canned patch)".into(),
                warnings: Vec::new(),
            };
        }
        let name = meta["name"]
            .as_str()
            .or(meta["generateName"].as_str())
            .unwrap_or("pod");
        let mut env: Vec<Value> = config
            .env
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        for (k, v) in &req.path_env {
            env.push(json!({"name": k, "value": v}));
        }
        env.push(json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}));
        env.push(json!({"name": "POD_NAMESPACE", "value": req.namespace}));
        let patch = json!([
            {"op": "add", "path": "/spec/initContainers", "value": [{
                "name": "istio-init", "image": config.image,
                "args": ["istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"],
                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "10m", "memory": "40Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]}, "privileged": false, "readOnlyRootFilesystem": false, "runAsGroup": 0, "runAsNonRoot": false, "runAsUser": 0}
            }]},
            {"op": "add", "path": "/spec/containers/-", "value": {
                "name": "istio-proxy", "image": config.image,
                "args": ["proxy", "sidecar", "--domain", format!("{}.svc.cluster.local", req.namespace), "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"],
                "env": env,
                "ports": [{"containerPort": 15090, "name": "http-envoy-prom", "protocol": "TCP"}],
                "readinessProbe": {"failureThreshold": 4, "httpGet": {"path": "/healthz/ready", "port": 15021}, "periodSeconds": 15, "timeoutSeconds": 3},
                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "privileged": false, "readOnlyRootFilesystem": true, "runAsGroup": 1337, "runAsNonRoot": true, "runAsUser": 1337},
                "volumeMounts": [
                    {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket"},
                    {"mountPath": "/var/run/secrets/credential-uds", "name": "credential-socket"},
                    {"mountPath": "/var/run/secrets/workload-spiffe-credentials", "name": "workload-certs"},
                    {"mountPath": "/var/run/secrets/istio", "name": "istiod-ca-cert"},
                    {"mountPath": "/var/lib/istio/data", "name": "istio-data"},
                    {"mountPath": "/etc/istio/proxy", "name": "istio-envoy"},
                    {"mountPath": "/var/run/secrets/tokens", "name": "istio-token"},
                    {"mountPath": "/etc/istio/pod", "name": "istio-podinfo"}
                ]
            }},
            {"op": "add", "path": "/spec/volumes", "value": [
                {"emptyDir": {}, "name": "workload-socket"},
                {"emptyDir": {}, "name": "credential-socket"},
                {"emptyDir": {}, "name": "workload-certs"},
                {"emptyDir": {"medium": "Memory"}, "name": "istio-envoy"},
                {"emptyDir": {}, "name": "istio-data"},
                {"downwardAPI": {"items": [{"fieldRef": {"fieldPath": "metadata.labels"}, "path": "labels"}, {"fieldRef": {"fieldPath": "metadata.annotations"}, "path": "annotations"}]}, "name": "istio-podinfo"},
                {"name": "istio-token", "projected": {"sources": [{"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}},
                {"configMap": {"name": "istio-ca-root-cert"}, "name": "istiod-ca-cert"}
            ]},
            {"op": "add", "path": "/metadata/annotations/sidecar.istio.io~1status", "value": format!("{{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":[\"workload-socket\",\"credential-socket\",\"workload-certs\",\"istio-envoy\",\"istio-data\",\"istio-podinfo\",\"istio-token\",\"istiod-ca-cert\"],\"imagePullSecrets\":null,\"revision\":\"default\",\"pod\":\"{name}\"}}")},
            {"op": "add", "path": "/metadata/labels/security.istio.io~1tlsMode", "value": "istio"},
            {"op": "add", "path": "/metadata/labels/service.istio.io~1canonical-name", "value": name.trim_end_matches('-')}
        ]);
        match serde_json::to_vec(&patch) {
            Ok(patch) => AdmissionOutcome::Patched {
                patch,
                reason: "injected".into(),
                warnings: Vec::new(),
            },
            Err(e) => AdmissionOutcome::Denied {
                message: format!("failed to create patch: {e}"),
            },
        }
    }
}

/// The JSON Patch of a saved AdmissionReview response, decoded from `response.patch`.
fn patch_of_response(path: &str) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("--patch-from {path}: {e}"))?;
    let review: Value =
        serde_json::from_slice(&raw).map_err(|e| format!("--patch-from {path}: not JSON: {e}"))?;
    let encoded = review["response"]["patch"]
        .as_str()
        .ok_or_else(|| format!("--patch-from {path}: no response.patch (was the pod injected?)"))?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("--patch-from {path}: response.patch is not base64: {e}"))
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let format: LogFormat = arg(&args, "--log-format")
        .unwrap_or_else(|| "text".into())
        .parse()?;
    init(format);
    let mut options = ServeOptions {
        addr: arg(&args, "--addr")
            .unwrap_or_else(|| "127.0.0.1:15017".into())
            .parse()?,
        monitoring_addr: Some(
            arg(&args, "--monitoring-addr")
                .unwrap_or_else(|| "127.0.0.1:15014".into())
                .parse()?,
        ),
        cert: CertSource::SelfSigned {
            dns_names: vec!["sidecar-injector.istio-system.svc".into()],
            write_ca: Some(
                arg(&args, "--write-ca")
                    .unwrap_or_else(|| "/tmp/sidecar-injector-ca.pem".into())
                    .into(),
            ),
        },
        ..ServeOptions::default()
    };
    options.inline_injector = args.iter().any(|a| a == "--inline");
    if let Some(n) = arg(&args, "--max-concurrency") {
        options.max_concurrency = n.parse()?;
    }
    if let Some(mib) = arg(&args, "--outcome-cache-mib") {
        options.outcome_cache_bytes = mib.parse::<usize>()? << 20;
    }
    let config = ConfigStore::watch_files(Vec::new(), WatchOptions::default(), |_files| {
        Ok(FakeConfig {
            image: "docker.io/istio/proxyv2:1.28.0".into(),
            env: [
                ("ISTIO_META_CLUSTER_ID", "Kubernetes"),
                ("ISTIO_META_MESH_ID", "cluster.local"),
                ("TRUST_DOMAIN", "cluster.local"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        })
    });
    let canned = arg(&args, "--patch-from")
        .map(|path| patch_of_response(&path))
        .transpose()?;
    // With a canned patch it stands in for the real engine, which ignores them.
    options.ignore_managed_fields = canned.is_some();
    injector_server::run(
        options,
        FakeEngine { canned },
        config,
        injector_server::shutdown_signal(),
    )
    .await?;
    Ok(())
}

fn init(format: LogFormat) {
    if let Err(e) = injector_server::init_logging(format) {
        eprintln!("logging: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(object: Value) -> AdmissionInput {
        AdmissionInput {
            uid: "u".into(),
            namespace: "shop".into(),
            operation: "CREATE".into(),
            dry_run: false,
            object,
            path_env: BTreeMap::new(),
            path: "/inject".into(),
            deadline: std::time::Instant::now(),
        }
    }

    fn config() -> FakeConfig {
        FakeConfig {
            image: "proxy".into(),
            env: BTreeMap::new(),
        }
    }

    fn saved_response(body: &Value) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), serde_json::to_vec(body).expect("json")).expect("write");
        file
    }

    #[test]
    fn the_ceiling_answers_the_saved_responses_patch_bytes_exactly() {
        let patch = br#"[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy"}}]"#;
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch);
        let file = saved_response(&json!({"response": {"uid": "x", "allowed": true, "patch": encoded}}));
        let canned = patch_of_response(file.path().to_str().expect("utf-8")).expect("decodes");
        let engine = FakeEngine { canned: Some(canned) };
        let pod = json!({"metadata": {"generateName": "web-"}, "spec": {"containers": []}});
        match engine.outcome(&config(), &input(pod)) {
            AdmissionOutcome::Patched { patch: answered, .. } => assert_eq!(answered, patch),
            other => panic!("expected the canned patch, got {other:?}"),
        }
    }

    #[test]
    fn a_response_without_a_patch_is_refused_naming_the_file() {
        let file = saved_response(&json!({"response": {"uid": "x", "allowed": true}}));
        let path = file.path().to_str().expect("utf-8");
        let error = patch_of_response(path).expect_err("no patch");
        assert!(
            error.contains(path) && error.contains("no response.patch"),
            "{error}"
        );
    }

    #[test]
    fn opted_out_pods_are_still_skipped_with_a_canned_patch() {
        let engine = FakeEngine {
            canned: Some(b"[]".to_vec()),
        };
        let pod = json!({"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}});
        assert!(matches!(
            engine.outcome(&config(), &input(pod)),
            AdmissionOutcome::Skipped { .. }
        ));
    }
}
