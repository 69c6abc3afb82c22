//! Renders cannot see each other: a template that writes into the data it is given (sprig's
//! `set`, `unset`, `merge` and `mergeOverwrite` change a map in place, as Go's do) changes only
//! its own pod's render. Checked for each function on a map of `.Values`, of `.MeshConfig` and of
//! `.ProxyConfig`, with two tenants' pods injected one after the other and at the same time, and
//! through the render cache: a render that wrote must not change what a later pod gets, whether
//! rendered again or taken from the cache.

// Tests report failures by panicking.
#![allow(clippy::panic)]

use injector_engine::{CompiledConfig, InjectError, Options, Outcome, Request, cache::RenderCache};
use serde_json::{Value, json};

/// A configuration, injected through a render cache (as the webhook does) or rendering every
/// time.
struct Injector {
    config: CompiledConfig,
    cache: Option<RenderCache>,
}

impl Injector {
    fn inject(&self, request: &Request<'_>) -> Result<Outcome, InjectError> {
        match &self.cache {
            Some(cache) => cache.inject(&self.config, request),
            None => self.config.inject(request),
        }
    }
}

/// The maps a template can write into, by the expression that reaches them.
const TARGETS: [&str; 3] = [
    ".Values.tenant",
    ".MeshConfig.DefaultConfig.Tracing.CustomTags",
    ".ProxyConfig.Tracing.CustomTags",
];

/// The writes, with `$m` the map and `$name` the pod's name.
const WRITES: [(&str, &str); 4] = [
    ("set", r#"{{- $_ := set $m "owner" $name }}"#),
    (
        "unset",
        r#"{{- $_ := unset $m "owner" }}{{- $_ := set $m $name "was here" }}"#,
    ),
    (
        "merge",
        r#"{{- $_ := merge $m (dict $name "was here" "owner" "ignored") }}"#,
    ),
    (
        "mergeOverwrite",
        r#"{{- $_ := mergeOverwrite $m (dict "owner" $name) }}"#,
    ),
];

/// A template that shows the map before and after it writes into it (as annotations).
fn template(target: &str, write: &str) -> String {
    format!(
        r#"{{{{- $name := .ObjectMeta.Name }}}}
{{{{- $m := {target} }}}}
{{{{- $before := toJson $m }}}}
{write}
metadata:
  annotations:
    before: {{{{ $before | quote }}}}
    after: {{{{ toJson {target} | quote }}}}
"#
    )
}

/// `cache_bytes`: the render cache's budget (0: none).
fn injector(target: &str, write: &str, cache_bytes: usize) -> Injector {
    let text = serde_json::to_string(&json!({
        "policy": "enabled",
        "defaultTemplates": ["writer"],
        "templates": {"writer": template(target, write)},
    }))
    .expect("JSON");
    let config = injector_core::config::parse_injector_config(&text)
        .expect("the configuration parses")
        .config;
    let values = json!({"tenant": {"owner": "nobody"}});
    let tags = json!({"owner": {"literal": {"value": "nobody"}}});
    let mesh = json!({"defaultConfig": {"tracing": {"customTags": tags}}});
    Injector {
        config: CompiledConfig::new(config, values, mesh, Options::default()).expect("the template parses"),
        cache: (cache_bytes > 0).then(|| RenderCache::new(cache_bytes)),
    }
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": name, "labels": {"app": name},
            "annotations": {"sidecar.istio.io/inject": "true"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// The map as the pod's render saw it: (before its write, after).
fn seen(injector: &Injector, name: &str) -> (Value, Value) {
    let pod = pod(name);
    let outcome = injector
        .inject(&Request {
            pod: Some(&pod),
            namespace: Some(name),
            ..Request::default()
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let Outcome::Injected { pod, .. } = outcome else {
        panic!("{name}: not injected")
    };
    let annotation = |key: &str| {
        let text = pod["metadata"]["annotations"][key]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no {key} annotation in {pod}"));
        serde_json::from_str::<Value>(text).expect("JSON")
    };
    (annotation("before"), annotation("after"))
}

/// What a render of `name` sees: the configuration's map before its write, and after it only its
/// own write.
fn check(case: &str, injector: &Injector, name: &str, original: &Value) {
    let (before, after) = seen(injector, name);
    assert_eq!(&before, original, "{case}: {name} saw another render's write");
    let text = after.to_string();
    assert!(
        text.contains(name) && !text.contains(other(name)),
        "{case}: {name} after its write: {text}"
    );
}

fn other(name: &str) -> &'static str {
    if name == "tenant-a" {
        "tenant-b"
    } else {
        "tenant-a"
    }
}

/// The map each target shows before any write.
fn original(target: &str) -> Value {
    if target.starts_with(".Values") {
        json!({"owner": "nobody"})
    } else {
        json!({"owner": {"literal": {"value": "nobody"}}})
    }
}

#[test]
fn renders_one_after_the_other_see_only_their_own_writes() {
    for target in TARGETS {
        for (function, write) in WRITES {
            // Rendering every time, and through the render cache (the second pods of each tenant
            // get kept renders).
            for cache_bytes in [0, 1 << 20] {
                let case = format!("{function} on {target}, render cache of {cache_bytes} bytes");
                let injector = injector(target, write, cache_bytes);
                for name in ["tenant-a", "tenant-b", "tenant-a", "tenant-b"] {
                    check(&case, &injector, name, &original(target));
                }
            }
        }
    }
}

#[test]
fn renders_at_the_same_time_see_only_their_own_writes() {
    for target in TARGETS {
        for (function, write) in WRITES {
            let case = format!("{function} on {target}");
            let injector = injector(target, write, 0);
            std::thread::scope(|scope| {
                for name in ["tenant-a", "tenant-b"] {
                    let (case, injector) = (&case, &injector);
                    scope.spawn(move || {
                        for _ in 0..20 {
                            check(case, injector, name, &original(target));
                        }
                    });
                }
            });
        }
    }
}

/// A render that wrote into `.Values` leaves the render cache as it found it: a later pod that
/// reads the same (taken from the cache) and one that reads otherwise (rendered) both see the
/// configuration's values.
#[test]
fn a_write_does_not_poison_the_render_cache() {
    let write = r#"{{- $_ := set $m "owner" "poisoned" }}"#;
    // The pods differ in what the template reads (their `app` label) by their name only.
    let text =
        template(".Values.tenant", write).replace(".ObjectMeta.Name", r#"index .ObjectMeta.Labels "app""#);
    let config = injector_core::config::parse_injector_config(
        &serde_json::to_string(
            &json!({"policy": "enabled", "defaultTemplates": ["writer"], "templates": {"writer": text}}),
        )
        .expect("JSON"),
    )
    .expect("parses")
    .config;
    let config = CompiledConfig::new(
        config,
        json!({"tenant": {"owner": "nobody"}}),
        json!({}),
        Options::default(),
    )
    .expect("parses");
    let cache = RenderCache::new(1 << 20);
    let before = |name: &str| {
        let pod = pod(name);
        let Ok(Outcome::Injected { pod, .. }) = cache.inject(
            &config,
            &Request {
                pod: Some(&pod),
                namespace: Some("shop"),
                ..Request::default()
            },
        ) else {
            panic!("{name}: not injected")
        };
        pod["metadata"]["annotations"]["before"]
            .as_str()
            .map(str::to_owned)
    };
    let clean = Some(json!({"owner": "nobody"}).to_string());
    for name in ["tenant-a", "tenant-a", "tenant-b", "tenant-a", "tenant-b"] {
        assert_eq!(before(name), clean, "{name}");
    }
    assert_eq!(cache.len(), 2, "one render kept per tenant");
}
