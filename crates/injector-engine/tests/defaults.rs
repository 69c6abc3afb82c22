//! The embedded default configuration loads and injects a typical Deployment's pod.

use injector_engine::{
    embedded_defaults,
    pipeline::{Injector, Options, Outcome, Request},
    settings::{parse_mesh, parse_values},
};
use serde_json::json;

fn injector(native: bool) -> Injector {
    let (config, values, mesh) = embedded_defaults();
    let config = injector_core::config::parse_injector_config(config)
        .expect("the default config loads")
        .config;
    let values = parse_values(values).expect("the default values load");
    let mesh = parse_mesh(mesh).expect("the default mesh loads");
    Injector::new(
        config,
        values,
        mesh,
        Options {
            native_sidecars: native,
            ..Options::default()
        },
    )
    .expect("templates parse")
}

#[test]
fn default_template_injects_proxy_init_and_volumes() {
    for native in [true, false] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
                         "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        let request = Request {
            pod: Some(&pod),
            namespace: Some("shop"),
            ..Request::default()
        };
        let Outcome::Injected { pod: injected, .. } = injector(native).inject(&request).expect("injects")
        else {
            panic!("the default policy injects");
        };
        let names = |field: &str| -> Vec<String> {
            injected["spec"][field]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|c| c["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        if native {
            assert_eq!(names("initContainers"), ["istio-init", "istio-proxy"]);
            assert_eq!(names("containers"), ["web"]);
        } else {
            assert_eq!(names("initContainers"), ["istio-init"]);
            assert_eq!(names("containers"), ["web", "istio-proxy"]);
        }
        assert_eq!(
            names("volumes"),
            [
                "istio-envoy",
                "istio-data",
                "istio-podinfo",
                "istio-token",
                "istiod-ca-cert"
            ]
        );
        let init = &injected["spec"]["initContainers"][0];
        assert_eq!(init["image"], "docker.io/istio/proxyv2:1.28.0");
        assert_eq!(init["resources"]["limits"], json!({"cpu": "2", "memory": "1Gi"}));
        assert_eq!(init["args"][2], "15001");
        assert_eq!(init["args"][16], "15090,15021,15020");
    }
}
