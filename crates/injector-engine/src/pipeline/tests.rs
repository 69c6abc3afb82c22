//! The whole pipeline on small templates: decision, merge, overrides, post-processing, patch.

use serde_json::{Value, json};

use injector_core::config::InjectorConfig;

use super::*;
use crate::{Options, mesh::default_mesh_config, patch::apply_patch, pod::name_of};

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

fn injector(policy: &str, native: bool) -> CompiledConfig {
    let mut config = InjectorConfig::default();
    config.injection.policy = injector_core::decision::Policy::parse(policy);
    config.templates.insert("sidecar".to_owned(), SIDECAR.to_owned());
    let values = json!({"global": {"hub": "docker.io/istio", "tag": "1.28.0"}, "sidecarInjectorWebhook": {"rewriteAppHTTPProbe": true}});
    let options = Options {
        native_sidecars: native,
        ..Options::default()
    };
    CompiledConfig::new(config, values, default_mesh_config(), options).expect("templates parse")
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
        deadline: None,
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
        deadline: None,
    };
    let (first, _) = injected(injector.inject(&request).expect("injects"));
    let again = Request {
        pod: Some(&first),
        namespace: Some("shop"),
        path_env: Default::default(),
        owner: None,
        deadline: None,
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
        CompiledConfig::new(config, json!({}), default_mesh_config(), Options::default()).expect("parses");
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
        deadline: None,
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
        deadline: None,
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
        deadline: None,
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
        deadline: None,
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
    let error = CompiledConfig::new(config, json!({}), default_mesh_config(), Options::default())
        .expect_err("parse error");
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
    let injector = CompiledConfig::new(
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
        deadline: None,
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

/// A stage's span as a subscriber sees it: its name, and the fields recorded on it.
type SeenSpan = (String, Vec<(String, String)>);

/// What a subscriber sees of the stages' spans, in the order they open.
#[derive(Default, Clone)]
struct SeenSpans(std::sync::Arc<std::sync::Mutex<Vec<SeenSpan>>>);

struct FieldsOf<'a>(&'a mut Vec<(String, String)>);

impl tracing::field::Visit for FieldsOf<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S> tracing_subscriber::Layer<S> for SeenSpans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().target() != STAGES {
            return;
        }
        let mut fields = Vec::new();
        attrs.record(&mut FieldsOf(&mut fields));
        let mut seen = self.0.lock().expect("not poisoned");
        seen.push((attrs.metadata().name().to_owned(), fields));
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let Some(name) = ctx.span(id).map(|span| span.name()) else {
            return;
        };
        let mut seen = self.0.lock().expect("not poisoned");
        if let Some((_, fields)) = seen.iter_mut().rev().find(|(n, _)| n == name) {
            values.record(&mut FieldsOf(fields));
        }
    }
}

/// The spans `inject` opens, with their fields.
///
/// Other tests' threads run the same stages. The first of them to reach a stage registers its
/// callsite and caches its interest from the subscribers live when it looked: a registration that
/// looked before this subscriber existed and stored its answer after this thread rebuilt the cache
/// leaves the stage "never interested", and the stage's span unseen, for one run. Such a
/// registration ends within microseconds, so the injection runs three times, the cache rebuilt
/// before each, and the run that saw the most spans is the answer.
fn stages_of(inject: impl Fn()) -> Vec<SeenSpan> {
    (0..3)
        .map(|attempt| {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            spans_of_one_run(&inject)
        })
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// The spans one run of `inject` opens, under a subscriber of its own.
fn spans_of_one_run(inject: &impl Fn()) -> Vec<SeenSpan> {
    use tracing_subscriber::layer::SubscriberExt as _;
    let seen = SeenSpans::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        inject();
    });
    seen.0.lock().expect("not poisoned").clone()
}

#[test]
fn each_stage_runs_in_a_span_of_its_name() {
    let config = injector("enabled", false);
    let pod = pod();
    let request = Request {
        pod: Some(&pod),
        namespace: Some("shop"),
        ..Request::default()
    };
    let stages = stages_of(|| {
        injected(config.inject(&request).expect("injects"));
    });
    let names: Vec<&str> = stages.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["decide", "prepare", "render", "merge", "post", "patch"]);
    assert_eq!(stages[2].1, [("source".to_owned(), "rendered".to_owned())]);

    let mut skipped = pod.clone();
    skipped["metadata"]["annotations"] = json!({"sidecar.istio.io/inject": "false"});
    let request = Request {
        pod: Some(&skipped),
        ..request
    };
    let stages = stages_of(|| {
        config.inject(&request).expect("decides");
    });
    let names: Vec<&str> = stages.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["decide"], "a skipped pod needs no other stage");
}

/// A template of Istio 1.26 or older decides native sidecars with `env "ENABLE_NATIVE_SIDECARS"`
/// (it predates `.NativeSidecars`): it follows the injector's own setting, not the environment of
/// the injector's process.
#[test]
fn a_template_reading_native_sidecars_from_env_follows_the_setting() {
    const OLD_TEMPLATE: &str = r#"
{{- $native := or (and (not (isset .ObjectMeta.Annotations `sidecar.istio.io/nativeSidecar`)) (eq (env "ENABLE_NATIVE_SIDECARS" "false") "true")) (eq (index .ObjectMeta.Annotations `sidecar.istio.io/nativeSidecar`) "true") }}
spec:
  initContainers:
  - name: istio-init
  {{- if $native }}
  - name: istio-proxy
    image: proxy:1
    restartPolicy: Always
  {{- end }}
  {{- if not $native }}
  containers:
  - name: istio-proxy
    image: proxy:1
  {{- end }}
"#;
    for native in [true, false] {
        let mut config = InjectorConfig::default();
        config
            .templates
            .insert("sidecar".to_owned(), OLD_TEMPLATE.to_owned());
        let options = Options {
            native_sidecars: native,
            ..Options::default()
        };
        let injector =
            CompiledConfig::new(config, json!({}), default_mesh_config(), options).expect("parses");
        let original = pod();
        let request = Request {
            pod: Some(&original),
            namespace: Some("shop"),
            ..Request::default()
        };
        let (result, _) = injected(injector.inject(&request).expect("injects"));
        if native {
            assert_eq!(names(&result, "initContainers"), ["istio-init", "istio-proxy"]);
            assert_eq!(names(&result, "containers"), ["web"]);
        } else {
            assert_eq!(names(&result, "initContainers"), ["istio-init"]);
            assert_eq!(names(&result, "containers"), ["web", "istio-proxy"]);
        }
    }
}
