//! The whole pipeline on small templates: decision, merge, overrides, post-processing, patch.

use serde_json::{Value, json};

use super::render_counts::{RenderCounts, RenderSource};
use super::*;
use crate::{
    mesh::default_mesh_config,
    patch::apply_patch,
    pod::{all_containers, name_of},
};

const SIDECAR: &str = r#"
metadata:
  labels:
    security.istio.io/tlsMode: istio
spec:
  initContainers:
  - name: istio-init
    image: "{{ .ProxyInitImage }}"
    args: ["istio-iptables", "-u", "{{ .ProxyUID }}"]
    resources:
      limits: {cpu: 2000m, memory: 1024Mi}
  containers:
  - name: istio-proxy
    image: "{{ .ProxyImage }}"
    args: ["proxy", "sidecar", "--domain", "{{ .ObjectMeta.Namespace }}.svc"]
    env:
    - name: ISTIO_META_WORKLOAD_NAME
      value: "{{ .DeploymentMeta.Name }}"
    readinessProbe:
      httpGet: {path: /healthz/ready, port: 15021}
  volumes:
  - name: istio-envoy
    emptyDir:
      medium: Memory
  - name: workload-socket
    emptyDir:
"#;

fn injector(policy: &str, native: bool) -> Injector {
    let mut config = InjectorConfig::default();
    config.injection.policy = injector_core::decision::Policy::parse(policy);
    config.templates.insert("sidecar".to_owned(), SIDECAR.to_owned());
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.28.0"}, "sidecarInjectorWebhook": {"rewriteAppHTTPProbe": true}});
    let options = Options {
        native_sidecars: native,
        ..Options::default()
    };
    Injector::new(config, values, default_mesh_config(), options).expect("templates parse")
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "web-5d8f9c-", "labels": {"app": "web", "pod-template-hash": "5d8f9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c", "controller": true, "uid": "u"}],
            "managedFields": [{"manager": "kube-controller-manager"}]
        },
        "spec": {
            "containers": [{"name": "web", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}],
                            "readinessProbe": {"httpGet": {"port": "http", "path": "/ready"}},
                            "futureField": {"keep": "me"}}],
            "newPodKnob": "on"
        }
    })
}

fn injected(outcome: Outcome) -> (Value, Vec<u8>) {
    match outcome {
        Outcome::Injected { pod, patch, .. } => (pod, patch),
        Outcome::Skipped { decision } => panic!("skipped: {:?}", decision.rule),
    }
}

fn names(pod: &Value, field: &str) -> Vec<String> {
    pod["spec"][field]
        .as_array()
        .map_or(Vec::new(), |l| l.iter().map(|c| name_of(c).to_owned()).collect())
}

#[test]
fn injects_and_the_patch_reproduces_the_pod() {
    let injector = injector("enabled", false);
    let original = pod();
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let (result, patch) = injected(injector.inject(&request).expect("injects"));

    assert_eq!(names(&result, "initContainers"), ["istio-init"]);
    assert_eq!(
        names(&result, "containers"),
        ["web", "istio-proxy"],
        "the proxy goes last"
    );
    assert_eq!(names(&result, "volumes"), ["istio-envoy", "workload-socket"]);
    let init = &result["spec"]["initContainers"][0];
    assert_eq!(init["image"], "docker.io/istio/proxyv2:1.28.0");
    assert_eq!(
        init["resources"]["limits"],
        json!({"cpu": "2", "memory": "1Gi"}),
        "quantities are canonical"
    );
    assert_eq!(init["args"][2], "1337");
    let proxy = &result["spec"]["containers"][1];
    assert_eq!(
        proxy["args"][3], "shop.svc",
        "the request namespace reaches the templates"
    );
    assert_eq!(
        proxy["env"][0]["value"], "web",
        "the owner heuristic names the Deployment"
    );
    assert!(
        result["spec"]["volumes"][1].get("emptyDir").is_none(),
        "null in a template deletes"
    );
    let annotations = &result["metadata"]["annotations"];
    assert_eq!(
        annotations["sidecar.istio.io/status"],
        r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy","workload-socket"],"imagePullSecrets":null,"revision":"default"}"#
    );
    assert_eq!(annotations["prometheus.io/port"], "15020");
    assert_eq!(
        result["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"],
        "/app-health/web/readyz"
    );
    assert_eq!(result["metadata"]["labels"]["security.istio.io/tlsMode"], "istio");

    // The patch applies to the pod exactly as the API server holds it.
    let mut server_side = original.clone();
    server_side["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("managedFields");
    server_side["metadata"]["namespace"] = json!("shop");
    let patched = apply_patch(&server_side, &patch).expect("the patch applies");
    assert_eq!(
        patched["spec"]["containers"][0]["futureField"],
        json!({"keep": "me"}),
        "unknown fields survive"
    );
    assert_eq!(patched["spec"]["newPodKnob"], "on");
    let text = String::from_utf8(patch).expect("utf-8");
    assert!(
        !text.contains("futureField") && !text.contains("newPodKnob") && !text.contains("managedFields"),
        "{text}"
    );
    assert_eq!(
        patched["spec"]["initContainers"],
        result["spec"]["initContainers"]
    );
}

#[test]
fn injecting_an_injected_pod_changes_nothing() {
    let injector = injector("enabled", true);
    let original = pod();
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let (first, _) = injected(injector.inject(&request).expect("injects"));
    let again = Request {
        pod: Some(&first),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let (second, patch) = injected(injector.inject(&again).expect("injects again"));
    assert_eq!(second, first);
    assert_eq!(String::from_utf8(patch).expect("utf-8"), "[]");
}

#[test]
fn native_sidecars_put_the_proxy_in_init_containers_when_the_template_does() {
    let mut config = InjectorConfig::default();
    config.templates.insert(
        "sidecar".to_owned(),
        "spec:\n  initContainers:\n  - name: istio-init\n  - name: istio-proxy\n    image: proxy:1\n    restartPolicy: Always\n".to_owned(),
    );
    let injector =
        Injector::new(config, json!({}), default_mesh_config(), Options::default()).expect("parses");
    let mut original = pod();
    original["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "istio-proxy", "image": "auto", "resources": {"limits": {"cpu": "500m"}}}));
    original["spec"]["initContainers"] = json!([{"name": "user-init"}]);
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let (result, _) = injected(injector.inject(&request).expect("injects"));
    assert_eq!(
        names(&result, "initContainers"),
        ["istio-init", "istio-proxy", "user-init"]
    );
    assert_eq!(names(&result, "containers"), ["web"]);
    let proxy = &result["spec"]["initContainers"][1];
    assert_eq!(
        proxy["resources"]["limits"]["cpu"], "500m",
        "the user's override wins"
    );
    assert_eq!(
        proxy["image"], "proxy:1",
        "image: auto keeps the template's image"
    );
    assert_eq!(
        result["metadata"]["annotations"]["proxy.istio.io/overrides"],
        r#"{"initContainers":[{"name":"istio-proxy","resources":{"limits":{"cpu":"500m"}}}]}"#
    );
}

#[test]
fn policy_skips_without_a_patch() {
    let injector = injector("disabled", false);
    let original = pod();
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    match injector.inject(&request).expect("decides") {
        Outcome::Skipped { decision } => assert_eq!(decision.rule.id(), "defaultPolicy"),
        Outcome::Injected { .. } => panic!("must skip"),
    }
}

#[test]
fn invalid_annotations_are_rejected_with_istio_words() {
    let injector = injector("enabled", false);
    let mut original = pod();
    original["metadata"]["annotations"] = json!({"traffic.sidecar.istio.io/includeOutboundIPRanges": "bad"});
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let error = injector.inject(&request).expect_err("invalid annotation");
    assert!(
        error
            .0
            .starts_with("failed to run injection template: 1 error occurred:"),
        "{error}"
    );
    assert!(error.0.to_lowercase().contains("includeipranges"), "{error}");
}

#[test]
fn unknown_templates_and_bad_templates_are_errors() {
    let injector = injector("enabled", false);
    let mut original = pod();
    original["metadata"]["annotations"] = json!({"inject.istio.io/templates": "nope"});
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let error = injector.inject(&request).expect_err("unknown template");
    assert!(
        error
            .0
            .contains(r#"requested template "nope" not found; have sidecar"#),
        "{error}"
    );

    let mut config = InjectorConfig::default();
    config
        .templates
        .insert("broken".to_owned(), "{{ if }}".to_owned());
    let error = Injector::new(config, json!({}), default_mesh_config(), Options::default())
        .err()
        .expect("parse error");
    assert_eq!(error.name, "broken");
    assert!(
        error.message.contains("missing value for if"),
        "{}",
        error.message
    );
}

#[test]
fn execution_errors_name_the_template_line() {
    let mut config = InjectorConfig::default();
    config
        .templates
        .insert("sidecar".to_owned(), "spec:\n  x: {{ .Values.a.b }}\n".to_owned());
    let injector = Injector::new(
        config,
        json!({"a": null}),
        default_mesh_config(),
        Options::default(),
    )
    .expect("parses");
    let original = pod();
    let request = Request {
        pod: Some(&original),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
    };
    let error = injector.inject(&request).expect_err("exec error");
    assert!(error.0.contains("template: inject:2:"), "{error}");
}

#[test]
fn requests_without_a_pod_are_errors() {
    let injector = injector("enabled", false);
    assert!(injector.inject(&Request::default()).is_err());
    let list = json!([1, 2]);
    assert!(
        injector
            .inject(&Request {
                pod: Some(&list),
                ..Request::default()
            })
            .is_err()
    );
}

#[test]
fn a_rendered_template_may_repeat_a_key_and_the_last_one_wins() {
    // Istio's sidecar template renders a `sidecar.istio.io/userVolume` list entry with `name:`
    // twice; sigs.k8s.io/yaml keeps the last.
    let overlay =
        parse_overlay("spec:\n  volumes:\n  - name: \"0\"\n    emptyDir: {}\n    name: v\n").expect("parses");
    assert_eq!(
        overlay,
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
    );
    let error = parse_overlay("spec: [\n").expect_err("malformed");
    assert!(
        error.0.contains("failed to parse the rendered template"),
        "{}",
        error.0
    );
}

/// Reads one label, one annotation and the containers' names, and nothing else of the pod.
const READS_LITTLE: &str = r#"
spec:
  containers:
  - name: istio-proxy
    image: "{{ .ProxyImage }}"
    env:
    - {name: APP, value: "{{ index .ObjectMeta.Labels `app` }}"}
    - {name: LEVEL, value: "{{ annotation .ObjectMeta `sidecar.istio.io/logLevel` `info` }}"}
    - {name: APPS, value: "{{ range .Spec.Containers }}{{ .Name }},{{ end }}"}
"#;

fn reads_little(template: &str) -> Injector {
    let mut config = InjectorConfig::default();
    config.injection.policy = injector_core::decision::Policy::parse("enabled");
    config.templates.insert("sidecar".to_owned(), template.to_owned());
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.28.0"}});
    Injector::new(config, values, default_mesh_config(), Options::default()).expect("templates parse")
}

fn patch_of(injector: &Injector, pod: &Value) -> Vec<u8> {
    injected(
        injector
            .inject(&Request {
                pod: Some(pod),
                ..Request::default()
            })
            .expect("injects"),
    )
    .1
}

fn env_of(pod: &Value, name: &str) -> String {
    let proxy = containers(pod, ContainerList::Containers)
        .iter()
        .find(|c| name_of(c) == PROXY_CONTAINER)
        .expect("the proxy is injected");
    proxy["env"]
        .as_array()
        .and_then(|env| env.iter().find(|e| e["name"] == name))
        .and_then(|e| e["value"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A copy of `pod` changed at one JSON pointer.
fn with(pod: &Value, pointer: &str, value: Value) -> Value {
    let mut pod = pod.clone();
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    pod.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("the parent exists")
        .insert(key.replace("~1", "/"), value);
    pod
}

#[test]
fn pods_differing_only_in_what_the_template_does_not_read_share_a_render() {
    let cached = reads_little(READS_LITTLE);
    let uncached = reads_little(READS_LITTLE).with_render_cache(0);
    let first = pod();
    let renamed = with(&first, "/metadata/name", json!("web-5d8f9c-x2x7q"));
    let other_image = with(&first, "/spec/containers/0/image", json!("nginx:2"));
    let other_env = with(
        &first,
        "/spec/containers/0/env",
        json!([{"name": "INDEX", "value": "3"}]),
    );
    for pod in [&first, &renamed, &other_image, &other_env] {
        assert_eq!(patch_of(&cached, pod), patch_of(&uncached, pod));
    }
    assert_eq!(cached.render_cache().len(), 1, "one render served all six pods");
    assert!(uncached.render_cache().is_empty());
}

/// Istio's template reads annotations through `annotation .ObjectMeta` and `isset`: both look up
/// one key, so a Job's pods (each with its own completion-index label and annotation) share a
/// render, and a pod that has the key looked up does not.
#[test]
fn lookups_through_functions_read_one_key_not_the_map() {
    let template = r#"
spec:
  containers:
  - name: istio-proxy
    image: "{{ .ProxyImage }}"
    env:
    - {name: LEVEL, value: "{{ annotation .ObjectMeta `sidecar.istio.io/logLevel` `info` }}"}
    - {name: CPU, value: "{{ if isset .ObjectMeta.Annotations `sidecar.istio.io/proxyCPU` }}set{{ else }}unset{{ end }}"}
"#;
    let cached = reads_little(template);
    let uncached = reads_little(template).with_render_cache(0);
    let first = pod();
    let index = |i: &str| {
        let pod = with(
            &first,
            "/metadata/annotations",
            json!({"batch.kubernetes.io/job-completion-index": i}),
        );
        with(
            &pod,
            "/metadata/labels/batch.kubernetes.io~1job-completion-index",
            json!(i),
        )
    };
    for pod in [index("0"), index("1"), index("2")] {
        assert_eq!(patch_of(&cached, &pod), patch_of(&uncached, &pod));
    }
    assert_eq!(cached.render_cache().len(), 1, "the Job's pods share one render");
    let with_cpu = with(
        &first,
        "/metadata/annotations",
        json!({"sidecar.istio.io/proxyCPU": "1"}),
    );
    let (pod, _) = injected(
        cached
            .inject(&Request {
                pod: Some(&with_cpu),
                ..Request::default()
            })
            .unwrap(),
    );
    assert_eq!(env_of(&pod, "CPU"), "set");
    assert_eq!(cached.render_cache().len(), 2);
}

#[test]
fn pods_differing_in_what_the_template_reads_do_not_share_a_render() {
    let cached = reads_little(READS_LITTLE);
    let uncached = reads_little(READS_LITTLE).with_render_cache(0);
    let first = pod();
    let variants = [
        with(&first, "/metadata/labels/app", json!("api")),
        with(&first, "/metadata/labels", json!({"pod-template-hash": "5d8f9c"})),
        with(
            &first,
            "/metadata/annotations",
            json!({"sidecar.istio.io/logLevel": "debug"}),
        ),
        with(&first, "/spec/containers/0/name", json!("api")),
        with(
            &first,
            "/spec/containers",
            json!([{"name": "web", "image": "nginx"}, {"name": "log", "image": "fluent"}]),
        ),
    ];
    let (pod, _) = injected(
        cached
            .inject(&Request {
                pod: Some(&first),
                ..Request::default()
            })
            .unwrap(),
    );
    assert_eq!(env_of(&pod, "APP"), "web");
    for (i, variant) in variants.iter().enumerate() {
        assert_eq!(
            patch_of(&cached, variant),
            patch_of(&uncached, variant),
            "variant {i}"
        );
    }
    assert_eq!(cached.render_cache().len(), 6, "each variant rendered anew");
    let (pod, _) = injected(
        cached
            .inject(&Request {
                pod: Some(&variants[2]),
                ..Request::default()
            })
            .unwrap(),
    );
    assert_eq!(env_of(&pod, "LEVEL"), "debug");
    let (pod, _) = injected(
        cached
            .inject(&Request {
                pod: Some(&variants[4]),
                ..Request::default()
            })
            .unwrap(),
    );
    assert_eq!(env_of(&pod, "APPS"), "web,log,");
}

#[test]
fn a_reloaded_configuration_never_serves_an_old_render() {
    let old = reads_little(READS_LITTLE);
    let (before, _) = injected(
        old.inject(&Request {
            pod: Some(&pod()),
            ..Request::default()
        })
        .unwrap(),
    );
    assert_eq!(old.render_cache().len(), 1);
    // A reload compiles a new injector, with its own (empty) cache, from the new settings.
    let mut config = old.config().clone();
    config.templates.insert(
        "sidecar".to_owned(),
        READS_LITTLE.replace("name: APP,", "name: APP_NAME,"),
    );
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.29.0"}});
    let reloaded = Injector::new(config, values, default_mesh_config(), Options::default()).unwrap();
    assert!(reloaded.render_cache().is_empty());
    let (after, _) = injected(
        reloaded
            .inject(&Request {
                pod: Some(&pod()),
                ..Request::default()
            })
            .unwrap(),
    );
    assert_eq!(env_of(&after, "APP_NAME"), "web");
    let (before, after) = (proxy_image_of(&before), proxy_image_of(&after));
    assert!(
        before.ends_with(":1.28.0") && after.ends_with(":1.29.0"),
        "{before} then {after}"
    );
}

fn proxy_image_of(pod: &Value) -> String {
    containers(pod, ContainerList::Containers)
        .iter()
        .find(|c| name_of(c) == PROXY_CONTAINER)
        .and_then(|c| c["image"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_template_reading_the_clock_is_rendered_every_time() {
    let clock =
        reads_little(&READS_LITTLE.replace("{{ .ProxyImage }}", "{{ .ProxyImage }}-{{ now | date `2006` }}"));
    patch_of(&clock, &pod());
    patch_of(&clock, &pod());
    assert!(clock.render_cache().is_empty());
}

/// Two injectors on the project's embedded settings: one with the render cache, one without.
fn embedded_with_and_without_render_cache() -> (Injector, Injector) {
    let (config, values, mesh) = crate::embedded_settings().expect("the embedded settings load");
    let make = || Injector::new(config.clone(), values.clone(), mesh.clone(), Options::default()).unwrap();
    (make(), make().with_render_cache(0))
}

#[test]
fn the_render_cache_agrees_with_rendering_on_the_full_template() {
    // The project's own sidecar template reads labels, annotations, containers and more.
    let (cached, uncached) = embedded_with_and_without_render_cache();
    let base = pod();
    let pods = [
        base.clone(),
        with(&base, "/metadata/name", json!("web-1")),
        with(&base, "/metadata/labels/app", json!("api")),
        with(
            &base,
            "/metadata/labels/statefulset.kubernetes.io~1pod-name",
            json!("web-0"),
        ),
        with(
            &base,
            "/metadata/annotations",
            json!({"sidecar.istio.io/proxyCPU": "300m"}),
        ),
        with(
            &base,
            "/metadata/annotations",
            json!({"proxy.istio.io/config": "{\"concurrency\": 3}"}),
        ),
        with(
            &base,
            "/spec/containers/0/env",
            json!([{"name": "JOB_COMPLETION_INDEX", "value": "7"}]),
        ),
        with(
            &base,
            "/spec/containers/0/ports",
            json!([{"containerPort": 9090}]),
        ),
        base.clone(),
    ];
    for (i, pod) in pods.iter().enumerate() {
        assert_eq!(
            String::from_utf8(patch_of(&cached, pod)).unwrap(),
            String::from_utf8(patch_of(&uncached, pod)).unwrap(),
            "pod {i}"
        );
    }
    assert!(
        cached.render_cache().len() < pods.len(),
        "some pods shared a render"
    );
}

#[test]
fn a_kept_render_merged_in_place_or_beside_the_users_overrides_agrees_with_rendering() {
    // A reused render is merged into the pod itself unless something after the merge reads the
    // pod before it: a user container named like a template's, or overrides saved earlier.
    let (cached, uncached) = embedded_with_and_without_render_cache();
    let base = pod();
    let mut user_proxy = base.clone();
    user_proxy["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "istio-proxy", "image": "auto",
                     "resources": {"limits": {"cpu": "2"}},
                     "securityContext": {"runAsUser": 1234}}));
    let saved = with(
        &base,
        "/metadata/annotations",
        json!({"proxy.istio.io/overrides":
               "{\"containers\":[{\"name\":\"istio-proxy\",\"resources\":{\"limits\":{\"memory\":\"1Gi\"}}}]}"}),
    );
    for (name, pod) in [
        ("plain", &base),
        ("user istio-proxy", &user_proxy),
        ("saved overrides", &saved),
    ] {
        let request = Request {
            pod: Some(pod),
            ..Request::default()
        };
        let fresh = injected(uncached.inject(&request).expect("injects"));
        for round in ["first", "reused"] {
            let kept = injected(cached.inject(&request).expect("injects"));
            assert_eq!(kept, fresh, "{name}, {round} render");
        }
        let proxy = all_containers(&fresh.0)
            .find(|c| name_of(c) == "istio-proxy")
            .expect("the sidecar");
        let (limit, expected) = match name {
            "user istio-proxy" => ("cpu", "2"),
            "saved overrides" => ("memory", "1Gi"),
            _ => continue,
        };
        assert_eq!(
            proxy["resources"]["limits"][limit], expected,
            "{name}: the user's settings win"
        );
    }
    assert!(
        cached.render_cache().len() <= 3,
        "each pod's second injection reused its render"
    );
}

#[test]
fn answers_from_spare_items_are_the_patches_injection_gives() {
    // A pod without probes leaves the sidecar as the render gave it, and its items come back for
    // the next pod; the probe rewrite changes the proxy's env, and that proxy must not come back.
    let (cached, uncached) = embedded_with_and_without_render_cache();
    let probes = pod();
    let mut plain = pod();
    plain["spec"]["containers"][0]
        .as_object_mut()
        .expect("a container")
        .shift_remove("readinessProbe");
    let mut user_proxy = plain.clone();
    user_proxy["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "istio-proxy", "image": "auto", "resources": {"limits": {"cpu": "2"}}}));
    let rounds = [
        &plain,
        &plain,
        &plain,
        &probes,
        &plain,
        &probes,
        &probes,
        &user_proxy,
        &plain,
    ];
    let mut most_spares = 0;
    for (round, pod) in rounds.into_iter().enumerate() {
        let request = Request {
            pod: Some(pod),
            ..Request::default()
        };
        let expected = injected(uncached.inject(&request).expect("injects")).1;
        let Answer::Injected { patch, .. } = cached.answer(&request).expect("answers") else {
            panic!("round {round}: skipped");
        };
        assert_eq!(
            String::from_utf8(patch).unwrap(),
            String::from_utf8(expected).unwrap(),
            "round {round}"
        );
        most_spares = most_spares.max(cached.render_cache().spares());
    }
    assert!(most_spares > 0, "items came back to the kept renders");
    let Answer::Skipped { .. } = injector("disabled", false)
        .answer(&Request {
            pod: Some(&plain),
            ..Request::default()
        })
        .expect("answers")
    else {
        panic!("policy disabled skips");
    };
}

/// [`pod`] as ServiceAccount admission leaves it: a projected token volume named `token`,
/// mounted by the container.
fn pod_with_token(token: &str) -> Value {
    let mut pod = pod();
    pod["spec"]["volumes"] = json!([{"name": token, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}]);
    pod["spec"]["containers"][0]["volumeMounts"] = json!([{"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]);
    pod
}

/// The patch for `pod`, and whether the injection was blind to the token volume's name.
fn patch_and_blindness(injector: &Injector, pod: &Value) -> (String, bool) {
    match injector.inject(&Request {
        pod: Some(pod),
        ..Request::default()
    }) {
        Ok(Outcome::Injected {
            patch,
            blind_to_token_volume,
            ..
        }) => (String::from_utf8(patch).expect("UTF-8"), blind_to_token_volume),
        other => panic!("not injected: {other:?}"),
    }
}

/// [`pod_with_token`] as a StatefulSet creates it: named, with no `generateName`, so that (by
/// Istio's rule) the pod is its own owner.
fn stateful_pod_with_token(name: &str, token: &str) -> Value {
    let mut pod = pod_with_token(token);
    let metadata = pod["metadata"].as_object_mut().expect("metadata");
    metadata.shift_remove("generateName");
    metadata.insert("name".to_owned(), json!(name));
    metadata.insert(
        "ownerReferences".to_owned(),
        json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": true, "uid": "s"}]),
    );
    pod
}

/// Pods that are their own owner (a StatefulSet's) share one render, made with a stand-in for the
/// name, and each gets the patch a render with its own name gives.
#[test]
fn pods_that_are_their_own_owner_share_a_render_made_with_a_stand_in_for_their_name() {
    let (cached, uncached) = embedded_with_and_without_render_cache();
    for i in 0..6 {
        let pod = stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
        let (patch, blind) = patch_and_blindness(&cached, &pod);
        assert_eq!(patch, patch_and_blindness(&uncached, &pod).0, "db-{i}");
        assert!(blind, "db-{i}: blind to the token volume");
        assert!(
            patch.contains(&format!("\"db-{i}\"")),
            "db-{i}: its own name: {patch}"
        );
        assert_eq!(
            cached.render_cache().len(),
            1,
            "db-{i}: one render for the family"
        );
        assert_eq!(
            cached.render_cache().named_reuses(),
            i as u64 + 1,
            "db-{i}: the render was named"
        );
    }
}

/// The outcome of injecting `pod`: the patch, or the error.
fn outcome_text(injector: &Injector, pod: &Value) -> String {
    match injector.inject(&Request {
        pod: Some(pod),
        ..Request::default()
    }) {
        Ok(Outcome::Injected { patch, .. }) => String::from_utf8(patch).expect("UTF-8"),
        Ok(Outcome::Skipped { decision }) => format!("skipped: {:?}", decision.rule),
        Err(error) => format!("error: {error}"),
    }
}

/// A template printing the owner's name in every YAML style, and as a key.
const PRINTS_THE_NAME: &str = r#"
metadata:
  labels:
    {{ .DeploymentMeta.Name }}: plain-key
    workload: {{ .DeploymentMeta.Name }}
spec:
  containers:
  - name: istio-proxy
    image: "{{ .ProxyImage }}"
    args: [proxy, {{ .DeploymentMeta.Name }}, "{{ .DeploymentMeta.Name }}.{{ .DeploymentMeta.Namespace }}"]
    env:
    - name: PLAIN
      value: {{ .DeploymentMeta.Name }}
    - name: SINGLE
      value: '{{ .DeploymentMeta.Name }}'
    - name: BLOCK
      value: |
        owner {{ .DeploymentMeta.Name }}
    - name: DEFAULTED
      value: {{ index .ObjectMeta.Labels "none" | default .DeploymentMeta.Name | quote }}
    - name: OWNER
      value: {{ if and .TypeMeta.Kind .DeploymentMeta.Name }}pods/{{ valueOrDefault .DeploymentMeta.Name "x" }}{{ end }}
"#;

/// Names that YAML reads as something else than their text when plain, and the longest names:
/// each is injected as a render with its own name would inject it, shared or not.
#[test]
fn every_name_gets_what_a_render_with_its_own_name_gives() {
    let cached = reads_little(PRINTS_THE_NAME);
    let uncached = reads_little(PRINTS_THE_NAME).with_render_cache(0);
    let long = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    let names = [
        "db-0",
        "db-1",
        "123",
        "0755",
        "1e3",
        "0x1f",
        "true",
        "yes",
        "on",
        "y",
        "n",
        "null",
        "2001-12-14",
        "1-0",
        "web.0",
        "db-2",
        "kube-api-access-x",
        long.as_str(),
        "db-3",
    ];
    for name in names {
        let pod = stateful_pod_with_token(name, TOKEN_NAMES[0]);
        assert_eq!(
            outcome_text(&cached, &pod),
            outcome_text(&uncached, &pod),
            "{name}"
        );
    }
    assert_eq!(
        cached.render_cache().len(),
        1,
        "the plain names shared one render"
    );
    assert_eq!(
        cached.render_cache().named_reuses(),
        8,
        "db-0 to db-3, 1-0, web.0, the longest name and 2001-12-14 took it (a string there)"
    );
}

/// A template that prints the owner's name only into env values and label values (as Istio's
/// does, in any YAML style).
const PRINTS_THE_NAME_IN_VALUES: &str = r#"
metadata:
  labels:
    workload: {{ .DeploymentMeta.Name }}
spec:
  containers:
  - name: istio-proxy
    image: "{{ .ProxyImage }}"
    env:
    - name: PLAIN
      value: {{ .DeploymentMeta.Name }}
    - name: OWNER
      value: "kubernetes://apis/v1/namespaces/{{ .DeploymentMeta.Namespace }}/pods/{{ .DeploymentMeta.Name }}"
    - name: DEFAULTED
      value: {{ index .ObjectMeta.Labels "none" | default .DeploymentMeta.Name | quote }}
  volumes:
  - name: istio-data
    emptyDir: {}
"#;

/// Where a shared render holds the name only in env values and label values, it is merged as a
/// kept render and the name goes in after the merge: every pod, whatever it holds at those
/// places already, gets what a render with its own name gives, from `inject` and from the
/// webhook's `answer`.
#[test]
fn a_name_only_in_env_and_label_values_goes_in_after_the_merge() {
    // Without skeletons, so that every answer merges (a skeleton answer merges nothing).
    let cached = reads_little(PRINTS_THE_NAME_IN_VALUES).without_skeletons();
    let uncached = reads_little(PRINTS_THE_NAME_IN_VALUES).with_render_cache(0);
    let mut pods: Vec<(String, Value)> = ["db-0", "db-1", "123", "true", "web.0", "db-2"]
        .into_iter()
        .map(|name| (name.to_owned(), stateful_pod_with_token(name, TOKEN_NAMES[0])))
        .collect();
    let mut user_proxy = stateful_pod_with_token("db-3", TOKEN_NAMES[1]);
    user_proxy["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "istio-proxy", "image": "auto", "env": [{"name": "PLAIN", "value": "mine"}]}));
    pods.push(("a user istio-proxy".to_owned(), user_proxy));
    let mut labelled = stateful_pod_with_token("db-4", TOKEN_NAMES[2]);
    labelled["metadata"]["labels"]["workload"] = json!("mine");
    pods.push(("its own workload label".to_owned(), labelled));
    pods.push((
        "db-0 again".to_owned(),
        stateful_pod_with_token("db-0", TOKEN_NAMES[0]),
    ));
    for (what, pod) in &pods {
        let expected = outcome_text(&uncached, pod);
        assert_eq!(outcome_text(&cached, pod), expected, "{what}");
        let answered = match cached.answer(&Request {
            pod: Some(pod),
            ..Request::default()
        }) {
            Ok(Answer::Injected { patch, .. }) => String::from_utf8(patch).expect("UTF-8"),
            Ok(Answer::Skipped { decision }) => format!("skipped: {:?}", decision.rule),
            Err(error) => format!("error: {error}"),
        };
        assert_eq!(answered, expected, "{what}: answered");
    }
    assert_eq!(cached.render_cache().len(), 1, "one render for the family");
    assert!(
        cached.render_cache().spares() > 0,
        "merged as a kept render: its volume came back for the next pod"
    );
}

/// Templates that look into the name (compare it, change it, hand the data holding it to a
/// function) render each pod with its own name; such a pod's render is kept only when the same
/// pod comes again, and what it answers never depends on that.
#[test]
fn a_template_that_looks_into_the_name_renders_each_pod_with_its_own() {
    let looks = [
        r#"{{ .DeploymentMeta.Name | upper }}"#,
        r#"{{ if eq .DeploymentMeta.Name "db-1" }}one{{ else }}other{{ end }}"#,
        r#"{{ trunc 2 .DeploymentMeta.Name }}"#,
        r#"{{ len .DeploymentMeta.Name }}"#,
        r#"{{ toJson .DeploymentMeta | b64enc }}"#,
        r#"{{ .DeploymentMeta }}"#,
        r#"{{ $n := .DeploymentMeta.Name }}{{ printf "%s-x" $n }}"#,
        r#"{{ with .DeploymentMeta.Name }}{{ hasSuffix "-1" . }}{{ end }}"#,
    ];
    for look in looks {
        let template = format!(
            "spec:\n  containers:\n  - name: istio-proxy\n    env:\n    - name: LOOK\n      value: '{look}'\n"
        );
        let cached = reads_little(&template);
        let uncached = reads_little(&template).with_render_cache(0);
        let first = stateful_pod_with_token("db-0", TOKEN_NAMES[0]);
        let expected = outcome_text(&uncached, &first);
        for (round, kept) in [(1, 0), (2, 1), (3, 1)] {
            assert_eq!(outcome_text(&cached, &first), expected, "{look}: round {round}");
            assert_eq!(cached.render_cache().len(), kept, "{look}: round {round}");
        }
        for i in 1..4 {
            let other = stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
            assert_eq!(
                outcome_text(&cached, &other),
                outcome_text(&uncached, &other),
                "{look}: db-{i}"
            );
        }
        assert_eq!(
            cached.render_cache().len(),
            1,
            "{look}: the other pods, seen once, are not kept"
        );
        assert_eq!(cached.render_cache().named_reuses(), 0, "{look}");
    }
}

/// A template that reads what each pod that is its own owner has of its own (its name) gives no
/// shared render a second pod could take: once its family lost a full family's worth of entries
/// that no pod took, such pods render with their own name again, the renders kept only when
/// the same pod comes again.
#[test]
fn renders_no_other_pod_takes_stop_being_shared() {
    let template = "spec:\n  containers:\n  - name: istio-proxy\n    env:\n    - name: POD\n      value: \"{{ .ObjectMeta.Name }}\"\n    - name: WORKLOAD\n      value: \"{{ .DeploymentMeta.Name }}\"\n";
    let cached = reads_little(template);
    let uncached = reads_little(template).with_render_cache(0);
    let family = render_cache::PER_FAMILY;
    for i in 0..family * 3 {
        let pod = stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
        assert_eq!(
            outcome_text(&cached, &pod),
            outcome_text(&uncached, &pod),
            "db-{i}"
        );
    }
    assert_eq!(
        cached.render_cache().named_reuses(),
        family as u64 * 2,
        "shared until {family} entries were evicted unused, then not"
    );
    assert_eq!(cached.render_cache().len(), family, "the family's last entries");
}

/// Twenty StatefulSets of one namespace rolled out, each with its first pod: the template reads
/// each pod's `app` label, so no pod takes another's render and, once eight were evicted
/// untaken, the family churns. Then one set whose entry is gone is scaled alone: within
/// [`render_cache::RETRY_EVERY`] pods one tries a shared render again, and from the next pod on
/// the family shares again.
#[test]
fn a_family_that_churned_shares_again_when_its_pods_can() {
    let template = "spec:\n  containers:\n  - name: istio-proxy\n    env:\n    - name: APP\n      value: \"{{ index .ObjectMeta.Labels \"app\" }}\"\n    - name: WORKLOAD\n      value: \"{{ .DeploymentMeta.Name }}\"\n";
    let cached = reads_little(template);
    let uncached = reads_little(template).with_render_cache(0);
    let pod_of = |set: usize, i: usize| {
        let mut pod = stateful_pod_with_token(&format!("db{set}-{i}"), TOKEN_NAMES[i % 3]);
        pod["metadata"]["labels"]["app"] = json!(format!("db{set}"));
        pod
    };
    let counts = cached.render_cache().counts().clone();
    for set in 0..20 {
        let pod = pod_of(set, 0);
        assert_eq!(
            outcome_text(&cached, &pod),
            outcome_text(&uncached, &pod),
            "db{set}-0"
        );
    }
    // Shared until the eighth entry was evicted untaken.
    assert_eq!(
        counts.injections(RenderSource::Shared),
        2 * render_cache::PER_FAMILY as u64
    );
    let scaled = 0;
    let shared: Vec<bool> = (1..1 + render_cache::RETRY_EVERY + 10)
        .map(|i| {
            let pod = pod_of(scaled, i);
            let before = counts.injections(RenderSource::Shared);
            assert_eq!(
                outcome_text(&cached, &pod),
                outcome_text(&uncached, &pod),
                "db{scaled}-{i}"
            );
            counts.injections(RenderSource::Shared) > before
        })
        .collect();
    let first = shared.iter().position(|s| *s).expect("a pod tried again");
    assert!(
        first < render_cache::RETRY_EVERY,
        "tried again at the {first}th pod"
    );
    assert!(first > 0, "the family churned: the first pods were refused");
    assert!(
        shared[first..].iter().all(|s| *s),
        "shared from then on: {shared:?}"
    );
}

/// Where injections got their renders is counted by source, into counts that outlive a
/// configuration's injector.
#[test]
fn injections_are_counted_by_where_their_renders_came_from() {
    let counts = std::sync::Arc::new(RenderCounts::default());
    let (config, values, mesh) = crate::embedded_settings().expect("the embedded settings load");
    let make = || {
        Injector::new(config.clone(), values.clone(), mesh.clone(), Options::default())
            .unwrap()
            .counting_renders_in(counts.clone())
    };
    let first = make();
    patch_of(&first, &pod());
    patch_of(&first, &pod());
    for (i, token) in TOKEN_NAMES.iter().enumerate() {
        patch_of(&first, &stateful_pod_with_token(&format!("db-{i}"), token));
    }
    // A reload: a new injector, with an empty cache, counting on.
    let second = make().with_render_cache(render_cache::DEFAULT_CAPACITY);
    patch_of(&second, &pod());
    let by_source: Vec<(&str, u64)> = RenderSource::ALL
        .iter()
        .map(|source| (source.as_str(), counts.injections(*source)))
        .collect();
    assert_eq!(by_source, [("rendered", 2), ("kept", 1), ("shared", 3)]);
}

const TOKEN_NAMES: [&str; 3] = [
    "kube-api-access-7xk2p",
    "kube-api-access-b4zqq",
    "kube-api-access-x9wlr",
];

/// What the webhook's outcome cache relies on: an injection blind to the token volume gives
/// every other name's patch once the name is put in its place.
#[test]
fn a_patch_blind_to_the_token_volume_is_any_names_patch_with_that_name_in_its_place() {
    let (cached, uncached) = embedded_with_and_without_render_cache();
    let (first, blind) = patch_and_blindness(&cached, &pod_with_token(TOKEN_NAMES[0]));
    assert!(blind, "the embedded template never reads the pod's volumes");
    assert!(
        first.contains(TOKEN_NAMES[0]),
        "the patch lists the pod's volumes: {first}"
    );
    for name in TOKEN_NAMES {
        let pod = pod_with_token(name);
        let (patch, blind) = patch_and_blindness(&cached, &pod);
        assert!(blind, "{name}: from the kept render");
        assert_eq!(patch, first.replace(TOKEN_NAMES[0], name), "{name}");
        // Rendering without the cache gives the same patch, but cannot tell.
        assert_eq!(patch_and_blindness(&uncached, &pod), (patch, false), "{name}");
    }
}

#[test]
fn a_template_that_reads_or_writes_such_a_name_is_not_blind_to_the_token_volume() {
    let template = |env: &str, volumes: &str| {
        format!(
            "spec:\n  containers:\n  - name: istio-proxy\n    image: proxy\n    env:\n    - {{name: V, value: \"{env}\"}}\n  volumes:\n  - {{name: {volumes}, emptyDir: {{}}}}\n"
        )
    };
    let cases = [
        (
            "counts the volumes",
            template("{{ len .Spec.Volumes }}", "istio-envoy"),
            true,
        ),
        (
            "dumps the volumes",
            template("{{ toJson .Spec.Volumes | sha256sum }}", "istio-envoy"),
            false,
        ),
        (
            "dumps the containers",
            template("{{ toJson .Spec.Containers | b64enc }}", "istio-envoy"),
            false,
        ),
        (
            "adds a volume named like one",
            template("x", "kube-api-access-proxy"),
            false,
        ),
    ];
    for (what, text, expected) in cases {
        let injector = reads_little(&text);
        for name in TOKEN_NAMES {
            let (patch, blind) = patch_and_blindness(&injector, &pod_with_token(name));
            assert_eq!(blind, expected, "{what}: {patch}");
            // Told alike of a render the cache does not keep (a pod that is its own owner, seen
            // once).
            let (patch, blind) = patch_and_blindness(&injector, &stateful_pod_with_token(name, name));
            assert_eq!(blind, expected, "{what}, a render not kept: {patch}");
        }
    }
}

fn answer_text(answer: Result<Answer, InjectError>) -> String {
    match answer {
        // Blindness to the token volume's name is only known from a render cache's records.
        Ok(Answer::Injected { patch, .. }) => format!("patch: {}", String::from_utf8(patch).expect("UTF-8")),
        Ok(Answer::Skipped { decision }) => format!("skipped: {:?}", decision.rule),
        Err(error) => format!("error: {error}"),
    }
}

/// Without rendering, the engine answers what it can from its render cache (and skips and
/// errors that come before any render), exactly as it would with rendering; anything else is
/// left for a run that may render, with nothing rendered, counted or kept on the way.
#[test]
fn answers_without_rendering_are_the_answers_or_none() {
    let (cached, uncached) = embedded_with_and_without_render_cache();
    let answer = |pod: &Value| {
        let request = Request {
            pod: Some(pod),
            ..Request::default()
        };
        (
            cached.answer_without_rendering(&request).map(answer_text),
            answer_text(uncached.answer(&request)),
        )
    };
    let counts = cached.render_cache().counts().clone();
    let rendered = || counts.injections(RenderSource::Rendered);

    // A first pod: its templates would have to be rendered.
    let first = pod_with_token(TOKEN_NAMES[0]);
    assert_eq!(answer(&first).0, None);
    assert_eq!(
        (cached.render_cache().len(), rendered()),
        (0, 0),
        "nothing rendered or kept"
    );
    let reference = answer(&first).1;
    assert_eq!(
        answer_text(cached.answer(&Request {
            pod: Some(&first),
            ..Request::default()
        })),
        reference
    );
    assert_eq!(rendered(), 1);
    // The next replica takes the kept render, without rendering.
    let second = pod_with_token(TOKEN_NAMES[1]);
    let (quick, full) = answer(&second);
    assert_eq!(quick.as_deref(), Some(full.as_str()));
    assert_eq!(rendered(), 1);

    // A StatefulSet's first pod would render under the stand-in; once one did, the others
    // take it.
    let db = |i: usize| stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
    assert_eq!(answer(&db(0)).0, None);
    cached
        .answer(&Request {
            pod: Some(&db(0)),
            ..Request::default()
        })
        .expect("injects");
    for i in 1..4 {
        let (quick, full) = answer(&db(i));
        assert_eq!(quick.as_deref(), Some(full.as_str()), "db-{i}");
    }

    // Skipped pods and errors before any render are answered too.
    let opted_out = with(
        &first,
        "/metadata/labels/sidecar.istio.io~1inject",
        json!("false"),
    );
    let (quick, full) = answer(&opted_out);
    assert!(full.starts_with("skipped"), "{full}");
    assert_eq!(quick.as_deref(), Some(full.as_str()));
    let bad = with(
        &first,
        "/metadata/annotations",
        json!({"sidecar.istio.io/interceptionMode": "BOGUS"}),
    );
    let (quick, full) = answer(&bad);
    assert!(full.starts_with("error"), "{full}");
    assert_eq!(quick.as_deref(), Some(full.as_str()));
}
