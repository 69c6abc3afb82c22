//! The embedded default configuration loads and injects a typical Deployment's pod.

use injector_engine::{CompiledConfig, Options, Outcome, Request, embedded_settings};
use serde_json::json;

fn injector(native: bool) -> CompiledConfig {
    let (config, values, mesh) = embedded_settings().expect("the embedded defaults load");
    CompiledConfig::new(
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

/// Regression (found by `tests/properties.rs`, re-injection): with interception mode TPROXY the
/// embedded template ran the proxy as 1337 and iptables in REDIRECT mode; a re-injection then
/// forced the proxy's user to 0 (Istio's `adjustInitContainerUser` treats the previously injected
/// proxy as the user's), so injecting twice changed the pod. Like Istio's own template, TPROXY now
/// gives `-m TPROXY` and a root proxy with NET_ADMIN from the first injection on.
#[test]
fn tproxy_interception_is_honoured_and_reinjection_is_idempotent() {
    for native in [true, false] {
        let injector = injector(native);
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "c", "namespace": "shop",
                                      "annotations": {"sidecar.istio.io/interceptionMode": "TPROXY"}},
                         "spec": {"containers": [{"name": "a-0", "image": "nginx"}]}});
        let request = Request {
            pod: Some(&pod),
            namespace: Some("shop"),
            ..Request::default()
        };
        let Ok(Outcome::Injected { pod: injected, .. }) = injector.inject(&request) else {
            panic!("the default policy injects");
        };
        let list = if native { "initContainers" } else { "containers" };
        let proxy = injected["spec"][list]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["name"] == "istio-proxy"))
            .expect("a proxy");
        assert_eq!(proxy["securityContext"]["runAsUser"], 0);
        assert_eq!(proxy["securityContext"]["runAsNonRoot"], false);
        assert_eq!(
            proxy["securityContext"]["capabilities"]["add"],
            json!(["NET_ADMIN"])
        );
        assert_eq!(injected["spec"]["initContainers"][0]["args"][8], "TPROXY");

        let again = Request {
            pod: Some(&injected),
            namespace: Some("shop"),
            ..Request::default()
        };
        let Ok(Outcome::Injected {
            pod: reinjected,
            patch,
            ..
        }) = injector.inject(&again)
        else {
            panic!("an injected pod is injected again");
        };
        assert_eq!(reinjected, injected);
        assert_eq!(patch, b"[]");
    }
}

/// Without the annotation the mesh default (REDIRECT) applies and the proxy runs as 1337.
#[test]
fn redirect_is_the_default_interception_mode() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c", "namespace": "shop"},
                     "spec": {"containers": [{"name": "a-0", "image": "nginx"}]}});
    let request = Request {
        pod: Some(&pod),
        namespace: Some("shop"),
        ..Request::default()
    };
    let Ok(Outcome::Injected { pod: injected, .. }) = injector(false).inject(&request) else {
        panic!("the default policy injects");
    };
    assert_eq!(injected["spec"]["initContainers"][0]["args"][8], "REDIRECT");
    assert_eq!(
        injected["spec"]["containers"][1]["securityContext"]["runAsUser"],
        1337
    );
    assert_eq!(
        injected["spec"]["containers"][1]["securityContext"]["runAsNonRoot"],
        true
    );
}

/// Regression (found by `tests/properties.rs`, unknown fields survive): the embedded template
/// overwrote the pod's own `service.istio.io/canonical-name` (and `security.istio.io/tlsMode`)
/// label with its default. Minimal input: a pod labelled `service.istio.io/canonical-name: a0`.
/// Like Istio's template it now keeps them, and defaults the canonical name to the
/// `app.kubernetes.io/name` or `app` label before the workload name.
#[test]
fn the_pods_own_istio_labels_are_kept() {
    let cases = [
        (
            json!({"service.istio.io/canonical-name": "a0", "security.istio.io/tlsMode": "disabled"}),
            "a0",
            "disabled",
        ),
        (json!({"app": "shop-web"}), "shop-web", "istio"),
        (
            json!({"app": "x", "app.kubernetes.io/name": "web"}),
            "web",
            "istio",
        ),
        (json!({}), "a", "istio"),
    ];
    for (labels, canonical, tls) in cases {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "a", "namespace": "shop", "labels": labels},
                         "spec": {"containers": [{"image": "nginx", "name": "a-0"}]}});
        let request = Request {
            pod: Some(&pod),
            namespace: Some("shop"),
            ..Request::default()
        };
        let Ok(Outcome::Injected { pod: injected, .. }) = injector(true).inject(&request) else {
            panic!("the default policy injects");
        };
        assert_eq!(
            injected["metadata"]["labels"]["service.istio.io/canonical-name"],
            canonical
        );
        assert_eq!(injected["metadata"]["labels"]["security.istio.io/tlsMode"], tls);
    }
}
