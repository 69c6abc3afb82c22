//! The render cache on small templates and on the project's embedded one: every injection
//! through it gives what the plain pipeline gives, and it serves, shares and bounds its renders.

use std::sync::Arc;

use injector_core::config::InjectorConfig;
use serde_json::{Value, json};

use super::*;
use crate::{
    CompiledConfig, InjectError, Options, Outcome, Request,
    mesh::default_mesh_config,
    pod::{ContainerList, PROXY_CONTAINER, all_containers, containers, name_of},
};

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

fn request(pod: &Value) -> Request<'_> {
    Request {
        pod: Some(pod),
        ..Request::default()
    }
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

fn reads_little(template: &str) -> CompiledConfig {
    let mut config = InjectorConfig::default();
    config.injection.policy = injector_core::decision::Policy::parse("enabled");
    config.templates.insert("sidecar".to_owned(), template.to_owned());
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.28.0"}});
    CompiledConfig::new(config, values, default_mesh_config(), Options::default()).expect("templates parse")
}

/// The patch of `pod` through `cache`, checked against the plain pipeline's.
fn patch_of(config: &CompiledConfig, cache: &RenderCache, pod: &Value) -> Vec<u8> {
    let cached = injected(cache.inject(config, &request(pod)).expect("injects")).1;
    let plain = injected(config.inject(&request(pod)).expect("injects")).1;
    assert_eq!(
        String::from_utf8_lossy(&cached),
        String::from_utf8_lossy(&plain),
        "the render cache changed a patch"
    );
    cached
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
    let config = reads_little(READS_LITTLE);
    let cache = RenderCache::default();
    let first = pod();
    let renamed = with(&first, "/metadata/name", json!("web-5d8f9c-x2x7q"));
    let other_image = with(&first, "/spec/containers/0/image", json!("nginx:2"));
    let other_env = with(
        &first,
        "/spec/containers/0/env",
        json!([{"name": "INDEX", "value": "3"}]),
    );
    for pod in [&first, &renamed, &other_image, &other_env] {
        patch_of(&config, &cache, pod);
    }
    assert_eq!(cache.len(), 1, "one render served all four pods");
    assert_eq!(cache.counts().injections(RenderSource::Kept), 3);
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
    let config = reads_little(template);
    let cache = RenderCache::default();
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
        patch_of(&config, &cache, &pod);
    }
    assert_eq!(cache.len(), 1, "the Job's pods share one render");
    let with_cpu = with(
        &first,
        "/metadata/annotations",
        json!({"sidecar.istio.io/proxyCPU": "1"}),
    );
    let (pod, _) = injected(cache.inject(&config, &request(&with_cpu)).unwrap());
    assert_eq!(env_of(&pod, "CPU"), "set");
    assert_eq!(cache.len(), 2);
}

#[test]
fn pods_differing_in_what_the_template_reads_do_not_share_a_render() {
    let config = reads_little(READS_LITTLE);
    let cache = RenderCache::default();
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
    let (pod, _) = injected(cache.inject(&config, &request(&first)).unwrap());
    assert_eq!(env_of(&pod, "APP"), "web");
    for variant in &variants {
        patch_of(&config, &cache, variant);
    }
    assert_eq!(cache.len(), 6, "each variant rendered anew");
    let (pod, _) = injected(cache.inject(&config, &request(&variants[2])).unwrap());
    assert_eq!(env_of(&pod, "LEVEL"), "debug");
    let (pod, _) = injected(cache.inject(&config, &request(&variants[4])).unwrap());
    assert_eq!(env_of(&pod, "APPS"), "web,log,");
}

#[test]
fn a_reloaded_configuration_never_serves_an_old_render() {
    let old = reads_little(READS_LITTLE);
    let cache = RenderCache::default();
    let (before, _) = injected(cache.inject(&old, &request(&pod())).unwrap());
    assert_eq!(cache.len(), 1);
    // A reload compiles a new configuration; the cache drops the old one's renders.
    let mut config = old.config().clone();
    config.templates.insert(
        "sidecar".to_owned(),
        READS_LITTLE.replace("name: APP,", "name: APP_NAME,"),
    );
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.29.0"}});
    let reloaded = CompiledConfig::new(config, values, default_mesh_config(), Options::default()).unwrap();
    let (after, _) = injected(cache.inject(&reloaded, &request(&pod())).unwrap());
    assert_eq!(cache.len(), 1, "the old render was dropped");
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
    let cache = RenderCache::default();
    cache.inject(&clock, &request(&pod())).unwrap();
    cache.inject(&clock, &request(&pod())).unwrap();
    assert!(cache.is_empty());
    assert_eq!(cache.counts().injections(RenderSource::Rendered), 2);
}

/// The project's embedded settings.
fn embedded() -> CompiledConfig {
    let (config, values, mesh) = crate::embedded_settings().expect("the embedded settings load");
    CompiledConfig::new(config, values, mesh, Options::default()).unwrap()
}

#[test]
fn the_render_cache_agrees_with_rendering_on_the_full_template() {
    // The project's own sidecar template reads labels, annotations, containers and more.
    let config = embedded();
    let cache = RenderCache::default();
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
    for pod in &pods {
        patch_of(&config, &cache, pod);
    }
    assert!(cache.len() < pods.len(), "some pods shared a render");
}

#[test]
fn a_kept_render_beside_the_users_overrides_agrees_with_rendering() {
    let config = embedded();
    let cache = RenderCache::default();
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
        let fresh = injected(config.inject(&request(pod)).expect("injects"));
        for round in ["first", "reused"] {
            let kept = injected(cache.inject(&config, &request(pod)).expect("injects"));
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
    assert!(cache.len() <= 3, "each pod's second injection reused its render");
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

/// The patch for `pod` through `cache` (checked against the plain pipeline's), and whether the
/// injection was blind to the token volume's name.
fn patch_and_blindness(config: &CompiledConfig, cache: &RenderCache, pod: &Value) -> (String, bool) {
    let plain = outcome_text(config.inject(&request(pod)));
    match cache.inject(config, &request(pod)) {
        Ok(Outcome::Injected {
            patch,
            blind_to_token_volume,
            ..
        }) => {
            let patch = String::from_utf8(patch).expect("UTF-8");
            assert_eq!(patch, plain, "the render cache changed a patch");
            (patch, blind_to_token_volume)
        }
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
    let config = embedded();
    let cache = RenderCache::default();
    for i in 0..6 {
        let pod = stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
        let (patch, blind) = patch_and_blindness(&config, &cache, &pod);
        assert!(blind, "db-{i}: blind to the token volume");
        assert!(
            patch.contains(&format!("\"db-{i}\"")),
            "db-{i}: its own name: {patch}"
        );
        assert_eq!(cache.len(), 1, "db-{i}: one render for the family");
        assert_eq!(
            cache.counts().injections(RenderSource::Shared),
            i as u64,
            "db-{i}: the render was shared from the second pod on"
        );
    }
}

/// The outcome of an injection: the patch, the decision to skip, or the error.
fn outcome_text(outcome: Result<Outcome, InjectError>) -> String {
    match outcome {
        Ok(Outcome::Injected { patch, .. }) => String::from_utf8(patch).expect("UTF-8"),
        Ok(Outcome::Skipped { decision }) => format!("skipped: {:?}", decision.rule),
        Err(error) => format!("error: {error}"),
    }
}

/// `pod` through `cache` and through the plain pipeline, as text.
fn both(config: &CompiledConfig, cache: &RenderCache, pod: &Value) -> (String, String) {
    (
        outcome_text(cache.inject(config, &request(pod))),
        outcome_text(config.inject(&request(pod))),
    )
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
    let config = reads_little(PRINTS_THE_NAME);
    let cache = RenderCache::default();
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
        let (cached, plain) = both(&config, &cache, &pod);
        assert_eq!(cached, plain, "{name}");
    }
    assert_eq!(cache.len(), 1, "the plain names shared one render");
    assert_eq!(
        cache.counts().injections(RenderSource::Shared),
        7,
        "db-1 to db-3, 1-0, web.0, the longest name and 2001-12-14 took it (a string there)"
    );
}

/// Templates that look into the name (compare it, change it, hand the data holding it to a
/// function) render each pod with its own name, and keep nothing.
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
        let config = reads_little(&template);
        let cache = RenderCache::default();
        for i in 0..4 {
            let pod = stateful_pod_with_token(&format!("db-{i}"), TOKEN_NAMES[i % 3]);
            let (cached, plain) = both(&config, &cache, &pod);
            assert_eq!(cached, plain, "{look}: db-{i}");
        }
        assert!(cache.is_empty(), "{look}: nothing kept");
        assert_eq!(cache.counts().injections(RenderSource::Shared), 0, "{look}");
        assert_eq!(cache.counts().injections(RenderSource::Rendered), 4, "{look}");
    }
}

/// Where injections got their renders is counted by source, into counts that outlive a
/// configuration.
#[test]
fn injections_are_counted_by_where_their_renders_came_from() {
    let counts = Arc::new(RenderCounts::default());
    let cache = RenderCache::default().counting_in(counts.clone());
    let first = embedded();
    patch_of(&first, &cache, &pod());
    patch_of(&first, &cache, &pod());
    for (i, token) in TOKEN_NAMES.iter().enumerate() {
        patch_of(
            &first,
            &cache,
            &stateful_pod_with_token(&format!("db-{i}"), token),
        );
    }
    // A reload: a new configuration, the cache emptied, counting on.
    patch_of(&embedded(), &cache, &pod());
    let by_source: Vec<(&str, u64)> = RenderSource::ALL
        .iter()
        .map(|source| (source.as_str(), counts.injections(*source)))
        .collect();
    assert_eq!(by_source, [("rendered", 3), ("kept", 1), ("shared", 2)]);
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
    let config = embedded();
    let cache = RenderCache::default();
    let (first, blind) = patch_and_blindness(&config, &cache, &pod_with_token(TOKEN_NAMES[0]));
    assert!(blind, "the embedded template never reads the pod's volumes");
    assert!(
        first.contains(TOKEN_NAMES[0]),
        "the patch lists the pod's volumes: {first}"
    );
    for name in TOKEN_NAMES {
        let pod = pod_with_token(name);
        let (patch, blind) = patch_and_blindness(&config, &cache, &pod);
        assert!(blind, "{name}: from the kept render");
        assert_eq!(patch, first.replace(TOKEN_NAMES[0], name), "{name}");
        // The plain pipeline gives the same patch, but cannot tell.
        let Ok(Outcome::Injected {
            blind_to_token_volume,
            ..
        }) = config.inject(&request(&pod))
        else {
            panic!("{name}: not injected");
        };
        assert!(!blind_to_token_volume, "{name}");
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
        let config = reads_little(&text);
        let cache = RenderCache::default();
        for name in TOKEN_NAMES {
            let (patch, blind) = patch_and_blindness(&config, &cache, &pod_with_token(name));
            assert_eq!(blind, expected, "{what}: {patch}");
            let (patch, blind) = patch_and_blindness(&config, &cache, &stateful_pod_with_token("db-0", name));
            assert_eq!(blind, expected, "{what}, a shared render: {patch}");
        }
    }
}

/// A pod of its own workload (a distinct owner per pod) carrying a big annotation that the
/// template prints: each render observes it, and holds it again in its overlay.
fn big_pod(workload: usize, annotation: &str) -> Value {
    let mut pod = pod();
    pod["metadata"]["generateName"] = json!(format!("w{workload}-5d8f9c-"));
    pod["metadata"]["ownerReferences"][0]["name"] = json!(format!("w{workload}-5d8f9c"));
    pod["metadata"]["annotations"] = json!({"example.com/big": annotation});
    pod
}

const PRINTS_A_BIG_ANNOTATION: &str = r#"
spec:
  containers:
  - name: istio-proxy
    env:
    - {name: BIG, value: "{{ index .ObjectMeta.Annotations `example.com/big` }}"}
"#;

#[test]
fn renders_are_charged_what_they_hold_and_the_least_recently_used_go_first() {
    let config = reads_little(PRINTS_A_BIG_ANNOTATION);
    let budget = 8 << 20;
    let cache = RenderCache::new(budget);
    let big = "x".repeat(100_000);
    for workload in 0..3 {
        patch_of(&config, &cache, &big_pod(workload, &big));
    }
    assert_eq!(cache.len(), 3);
    assert!(
        cache.bytes() >= 3 * 3 * big.len(),
        "each entry holds the value it observed, its overlay's copy and its template pod's: {} bytes",
        cache.bytes()
    );
    // Workload 0 used again, then enough new ones to fill the budget: the least recently used
    // (1, then 2) go first.
    patch_of(&config, &cache, &big_pod(0, &big));
    let mut workload = 3;
    while cache.counts().evictions() < 2 {
        patch_of(&config, &cache, &big_pod(workload, &big));
        workload += 1;
        assert!(cache.bytes() <= budget, "{} > {budget}", cache.bytes());
    }
    let kept = |workload: usize| {
        let before = cache.counts().injections(RenderSource::Kept);
        patch_of(&config, &cache, &big_pod(workload, &big));
        cache.counts().injections(RenderSource::Kept) > before
    };
    assert!(kept(0), "used last but for the new ones: kept");
    assert!(!kept(1), "the least recently used went first");
}

#[test]
fn a_render_larger_than_its_share_of_the_budget_is_not_kept() {
    let config = reads_little(PRINTS_A_BIG_ANNOTATION);
    let cache = RenderCache::new(16 << 20);
    let big = "x".repeat((16 << 20) / MAX_SHARE);
    patch_of(&config, &cache, &big_pod(0, &big));
    assert!(cache.is_empty());
    let cache = RenderCache::new(0);
    patch_of(&config, &cache, &big_pod(0, "small"));
    patch_of(&config, &cache, &big_pod(0, "small"));
    assert!(cache.is_empty(), "a budget of 0 keeps nothing");
    assert_eq!(cache.counts().injections(RenderSource::Rendered), 2);
}

#[test]
fn a_family_keeps_its_most_recent_renders() {
    let config = reads_little(READS_LITTLE);
    let cache = RenderCache::default();
    for i in 0..PER_FAMILY + 3 {
        patch_of(
            &config,
            &cache,
            &with(&pod(), "/metadata/labels/app", json!(format!("a{i}"))),
        );
    }
    assert_eq!(cache.len(), PER_FAMILY);
    assert_eq!(cache.counts().evictions(), 3);
}

/// A thousand workloads whose pods each hand the template a 230 KB annotation: the cache stays
/// within its budget, charging each render for the three copies of the annotation it holds (the
/// value it observed, its overlay's and its template pod's).
#[test]
fn a_thousand_workloads_with_230_kb_annotations_stay_within_the_budget() {
    let config = reads_little(PRINTS_A_BIG_ANNOTATION);
    let budget = DEFAULT_BUDGET;
    let cache = RenderCache::new(budget);
    for workload in 0..1000 {
        let big = format!("{workload:06}{}", "x".repeat(230_000));
        cache
            .inject(&config, &request(&big_pod(workload, &big)))
            .expect("injects");
        assert!(cache.bytes() <= budget, "{} > {budget}", cache.bytes());
    }
    assert!(cache.len() >= 16, "{} renders kept", cache.len());
    assert!(
        cache.bytes() >= cache.len() * 3 * 230_000,
        "charged less than the renders hold: {} bytes for {}",
        cache.bytes(),
        cache.len()
    );
    assert_eq!(cache.counts().evictions() as usize + cache.len(), 1000);
}
