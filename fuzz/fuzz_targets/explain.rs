//! Fuzz target: `explain` on an arbitrary YAML stream never panics or hangs. Namespace and
//! MutatingWebhookConfiguration documents in the stream become the context; every other
//! document is read as a workload and explained, with and without that context.
#![no_main]

use injector_core::{
    config::InjectorConfig,
    explain::{ConfigOrigin, Context, Webhooks, explain},
    gate::{NamespaceFacts, WebhookConfiguration},
    workload::{flatten_lists, pod_template},
    yaml::parse_documents,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = parse_documents(text) else {
        return;
    };
    let mut namespace = None;
    let mut webhooks = Vec::new();
    let mut workloads = Vec::new();
    for (_, object) in flatten_lists(documents) {
        match object.get("kind").and_then(serde_json::Value::as_str) {
            Some("Namespace") => namespace = NamespaceFacts::from_object(&object).ok(),
            Some("MutatingWebhookConfiguration") => {
                webhooks.extend(WebhookConfiguration::from_object(&object).ok());
            }
            _ => workloads.extend(pod_template(&object).ok().flatten()),
        }
    }
    let config = InjectorConfig::default();
    let origin = ConfigOrigin::IstioDefaults;
    for workload in &workloads {
        let _ = explain(
            workload,
            Context {
                namespace: None,
                webhooks: Webhooks::AssumeCalled,
                config: &config,
                origin: &origin,
            },
        );
        let _ = explain(
            workload,
            Context {
                namespace: namespace.as_ref(),
                webhooks: Webhooks::IstioChart { revision: "default" },
                config: &config,
                origin: &origin,
            },
        );
        let _ = explain(
            workload,
            Context {
                namespace: namespace.as_ref(),
                webhooks: Webhooks::Given(&webhooks),
                config: &config,
                origin: &origin,
            },
        );
    }
});
