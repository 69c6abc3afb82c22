//! `doctor`'s checks on Istio's own installation objects: the MutatingWebhookConfiguration
//! `istio-sidecar-injector` as Istio installs it (four webhooks by Service `istiod`, from
//! istioctl's own test data in Istio's corpus, as the `istio-corpus` crate finds it), Istio's root certificate as
//! istiod publishes it (the `istio-ca-root-cert` ConfigMap, `root-cert.pem`: no key is read) and
//! the `istiod` Service and EndpointSlice.

// Tests report failures by panicking.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::collections::BTreeMap;

use base64::Engine as _;
use injector_doctor::{CertificateSource, Settings, Snapshot, Verdict, checks};
use serde_json::{Value, json};

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn ca_pem() -> String {
    let mut params = rcgen::CertificateParams::default();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "cluster.local");
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

#[test]
fn istios_own_webhooks_secret_and_service_are_checked_as_ours() {
    let Some(corpus) = istio_corpus::istio_or_skip("doctor: Istio's own MutatingWebhookConfiguration") else {
        return;
    };
    let path = corpus.path("istioctl/pkg/checkinject/testdata/check-inject/default-injector.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (_, mut mwc) = injector_core::yaml::parse_documents(&text).unwrap().remove(0);
    let ca = ca_pem();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&ca);
    for webhook in mwc["webhooks"].as_array_mut().unwrap() {
        webhook["clientConfig"]["caBundle"] = json!(b64);
    }
    let settings = Settings {
        revision: "default".into(),
        injector_namespace: "istio-system".into(),
        injector_configmap: "istio-sidecar-injector".into(),
        ca_secret: "sidecar-injector-ca".into(),
        tls_secret: None,
        focus: None,
        extra_webhook_configurations: Vec::new(),
        service_name: "istiod".into(),
        dns_names: Vec::new(),
    };
    let key = "istio-system/istiod".to_owned();
    let snapshot = Snapshot {
        now: 1_900_000_000,
        settings,
        namespaces: Ok(vec![
            object(json!({"metadata": {"name": "istio-system"}})),
            object(json!({"metadata": {"name": "kube-system"}})),
            object(json!({"metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}})),
            object(json!({"metadata": {"name": "canary-shop", "labels": {"istio.io/rev": "default"}}})),
            object(json!({"metadata": {"name": "plain"}})),
        ]),
        webhook_configurations: Ok(vec![object(mwc)]),
        injector_configmap: Ok(Some(object(
            json!({"metadata": {"name": "istio-sidecar-injector"},
            "data": {"config": "policy: enabled\ntemplates:\n  sidecar: |\n    spec: {}\n"}}),
        ))),
        workloads: BTreeMap::new(),
        pods: Ok(Vec::new()),
        services: BTreeMap::from([(
            key.clone(),
            Ok(Some(object(json!({"metadata": {"name": "istiod"},
            "spec": {"selector": {"app": "istiod"}, "ports": [{"name": "https-webhook", "port": 443, "targetPort": 15017}]}})))),
        )]),
        endpoint_slices: BTreeMap::from([(
            key.clone(),
            Ok(vec![object(json!({"addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}],
            "ports": [{"name": "https-webhook", "port": 15017}]}))]),
        )]),
        service_pods: BTreeMap::from([(
            key,
            Ok(vec![
                object(
                    json!({"metadata": {"name": "istiod-1", "labels": {"app": "istiod"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                ),
                object(
                    json!({"metadata": {"name": "istiod-2", "labels": {"app": "istiod"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                ),
            ]),
        )]),
        disruption_budgets: BTreeMap::from([("istio-system".to_owned(), Ok(Vec::new()))]),
        events: Ok(Vec::new()),
        certificates: BTreeMap::from([
            (
                "istio-system/istio-ca-root-cert".to_owned(),
                Ok(Some(CertificateSource::from_config_map(&object(
                    json!({"metadata": {"name": "istio-ca-root-cert"}, "data": {"root-cert.pem": ca}}),
                )))),
            ),
            ("istio-system/sidecar-injector-ca".to_owned(), Ok(None)),
        ]),
        handshakes: BTreeMap::new(),
        probe: None,
    };
    let report = checks::run(&snapshot);
    let by_id = |id: &str| report.checks.iter().find(|c| c.id == id).unwrap();
    let scope = by_id("webhooks");
    assert_eq!(scope.verdict, Verdict::Ok, "{scope:?}");
    assert!(
        scope.summary.contains("namespaces in scope: shop, canary-shop"),
        "{}",
        scope.summary
    );
    assert_eq!(
        scope.evidence.iter().filter(|e| e.contains("opt-in")).count(),
        4,
        "{:?}",
        scope.evidence
    );
    let bundle = by_id("caBundle");
    assert_eq!(bundle.verdict, Verdict::Ok, "{bundle:?}");
    assert!(
        bundle
            .evidence
            .iter()
            .any(|e| e.contains("the CA of ConfigMap istio-system/istio-ca-root-cert (root-cert.pem)"))
    );
    assert_eq!(
        by_id("endpoints").verdict,
        Verdict::Ok,
        "{:?}",
        by_id("endpoints")
    );
    assert_eq!(
        by_id("selfDeadlock").verdict,
        Verdict::Ok,
        "{:?}",
        by_id("selfDeadlock")
    );
    assert_eq!(report.exit_code(), 0, "{report:#?}");
}
