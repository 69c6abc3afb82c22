//! `doctor`'s fixes for workloads whose annotations an attacker chose, run as an admin would
//! run them: pasted into `bash`, with a stub `kubectl` first on PATH that records its
//! arguments. Nothing but `kubectl` may run (a marker file an injected `touch` would create stays
//! absent, bash reports no other command), and each patch reaches `kubectl` as one argument that
//! decodes to the value the workload carries.

// Tests report failures by panicking.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::{collections::BTreeMap, os::unix::fs::PermissionsExt as _, path::Path, process::Command};

use injector_doctor::{Settings, Snapshot, checks};
use serde_json::{Value, json};

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// Values that break naive quoting in every way a shell offers.
fn hostile_values(marker: &Path) -> Vec<String> {
    let m = marker.display();
    vec![
        format!("x'; touch {m}; echo '"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("true\ntouch {m}"),
        format!("\"; touch {m}; echo \""),
        format!("\\'; touch {m} #"),
        format!("\u{1b}]0;owned\u{7}\u{1b}[2K\r$(touch {m})"),
        format!("!!; touch {m}"),
        format!("\u{202e}; touch {m}"),
    ]
}

fn snapshot(values: &[String]) -> Snapshot {
    let deployments = values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("web-{i}"), "namespace": "shop",
                    "annotations": {"sidecar.istio.io/inject": value}},
                "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
            })
        })
        .collect();
    Snapshot {
        now: 1_800_000_000,
        settings: Settings {
            revision: "default".into(),
            injector_namespace: "istio-system".into(),
            injector_configmap: "istio-sidecar-injector".into(),
            ca_secret: "sidecar-injector-ca".into(),
            tls_secret: None,
            focus: None,
            extra_webhook_configurations: Vec::new(),
            service_name: "istiod".into(),
            dns_names: Vec::new(),
        },
        namespaces: Ok(vec![object(json!({"metadata": {"name": "shop"}}))]),
        webhook_configurations: Ok(Vec::new()),
        injector_configmap: Ok(None),
        workloads: BTreeMap::from([("Deployment".to_owned(), Ok(deployments))]),
        pods: Ok(Vec::new()),
        services: BTreeMap::new(),
        endpoint_slices: BTreeMap::new(),
        service_pods: BTreeMap::new(),
        disruption_budgets: BTreeMap::new(),
        events: Ok(Vec::new()),
        certificates: BTreeMap::new(),
        handshakes: BTreeMap::new(),
        probe: None,
    }
}

/// Every `kubectl` call the stub recorded: each as its argument count, then the arguments,
/// NUL-terminated.
fn recorded_calls(log: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut fields = text.split('\0');
    let mut calls = Vec::new();
    while let Some(count) = fields.next().filter(|c| !c.is_empty()) {
        let count: usize = count.parse().unwrap();
        calls.push((0..count).map(|_| fields.next().unwrap().to_owned()).collect());
    }
    calls
}

#[test]
fn pasted_fixes_run_only_kubectl_with_the_intended_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("owned");
    let log = dir.path().join("kubectl.log");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let stub = bin.join("kubectl");
    std::fs::write(
        &stub,
        "#!/bin/sh\nprintf '%s\\0' \"$#\" \"$@\" >> \"$KUBECTL_LOG\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();

    let values = hostile_values(&marker);
    let report = checks::run(&snapshot(&values));
    let fixes: Vec<&String> = report
        .checks
        .iter()
        .flat_map(|c| &c.fixes)
        .filter(|f| f.starts_with("kubectl "))
        .collect();
    let placement: Vec<&&String> = fixes
        .iter()
        .filter(|f| f.contains(" patch deployment "))
        .collect();
    assert_eq!(
        placement.len(),
        values.len(),
        "one patch per workload: {fixes:#?}"
    );

    let script = fixes.iter().map(|f| format!("{f}\n")).collect::<String>();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("PATH", path)
        .env("KUBECTL_LOG", &log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}\n{script}");
    assert!(
        !marker.exists(),
        "a pasted fix ran an injected command:\n{script}"
    );

    let calls = recorded_calls(&log);
    assert_eq!(
        calls.len(),
        fixes.len(),
        "one kubectl call per fix line:\n{script}"
    );
    for (i, value) in values.iter().enumerate() {
        let name = format!("web-{i}");
        let call = calls
            .iter()
            .find(|c| c.get(4) == Some(&name))
            .unwrap_or_else(|| panic!("no patch of {name}: {calls:#?}"));
        assert_eq!(
            call[..7],
            [
                "-n",
                "shop",
                "patch",
                "deployment",
                name.as_str(),
                "--type=merge",
                "-p"
            ],
            "{call:?}"
        );
        assert_eq!(call.len(), 8, "{call:?}");
        let patch: Value = serde_json::from_str(&call[7]).unwrap();
        assert_eq!(
            patch,
            json!({"spec": {"template": {"metadata": {"annotations": {"sidecar.istio.io/inject": value}}}}})
        );
    }
}
