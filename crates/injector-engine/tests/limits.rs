//! An injection stops when its request's deadline passes, and a template when it exceeds its step
//! budget: each is denied with a message that says so (and names the template), and a pod
//! within both is injected as before.

// Tests report failures by panicking.
#![allow(clippy::panic)]

use std::time::{Duration, Instant};

use injector_engine::{
    CompiledConfig, InjectError, Options, Outcome, Request, cache::RenderCache, embedded_settings,
    render::TEMPLATE_STEP_BUDGET,
};
use serde_json::{Value, json};

/// A ReplicaSet's pod of `containers` containers.
fn pod(containers: usize) -> Value {
    let containers: Vec<Value> = (0..containers)
        .map(|i| json!({"name": format!("app-{i}"), "image": "nginx"}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-5d8f7c9b4-x2x9z", "namespace": "shop",
            "annotations": {"sidecar.istio.io/inject": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b4",
                "uid": "1", "controller": true}]},
        "spec": {"containers": containers}})
}

fn embedded() -> CompiledConfig {
    let (config, values, mesh) = embedded_settings().expect("the embedded defaults load");
    CompiledConfig::new(config, values, mesh, Options::default()).expect("the embedded templates parse")
}

/// A configuration whose only template is `text`, named `name`.
fn with_template(name: &str, text: &str) -> CompiledConfig {
    let config = serde_json::to_string(&json!({
        "policy": "enabled", "defaultTemplates": [name], "templates": {name: text},
    }))
    .expect("JSON");
    let config = injector_core::config::parse_injector_config(&config)
        .expect("the configuration parses")
        .config;
    CompiledConfig::new(config, json!({}), json!({}), Options::default()).expect("the template parses")
}

fn request(pod: &Value, deadline: Option<Instant>) -> Request<'_> {
    Request {
        pod: Some(pod),
        namespace: Some("shop"),
        deadline,
        ..Request::default()
    }
}

fn assert_late(error: &InjectError, stopped: &str) {
    assert!(
        error.0.starts_with(
            "sidecar injection did not complete within the admission request's deadline: it stopped "
        ) && error.0.contains(stopped),
        "{error}"
    );
}

#[test]
fn a_pod_past_its_deadline_is_denied_saying_so() {
    let config = embedded();
    let cache = RenderCache::new(1 << 20);
    let pod = pod(1);
    let passed = Some(Instant::now());
    let error = config.inject(&request(&pod, passed)).expect_err("too late");
    assert_late(&error, "before rendering the templates");
    // The render cache's injection (the webhook's) too, with the pod's renders kept or not.
    for _ in 0..2 {
        let error = cache
            .inject(&config, &request(&pod, passed))
            .expect_err("too late");
        assert_late(&error, "before rendering the templates");
        assert!(matches!(
            cache.inject(&config, &request(&pod, None)),
            Ok(Outcome::Injected { .. })
        ));
    }
    // Within its deadline (and without one), the same pod is injected.
    let later = Some(Instant::now() + Duration::from_secs(3600));
    for deadline in [later, None] {
        assert!(matches!(
            config.inject(&request(&pod, deadline)),
            Ok(Outcome::Injected { .. })
        ));
    }
    let error = config
        .inject_pod(&pod, &request(&pod, passed))
        .expect_err("too late");
    assert_late(&error, "before rendering the templates");
}

/// A template still running at the deadline stops there: its step budget of iterations, each
/// writing 100 KB, would take seconds.
#[test]
fn a_long_render_stops_at_the_deadline() {
    let config = with_template(
        "slow",
        r#"{{ range 2000000000 }}{{ $x := repeat 100000 "x" }}{{ end }}"#,
    );
    let pod = pod(1);
    let soon = Instant::now() + Duration::from_millis(200);
    let error = config.inject(&request(&pod, Some(soon))).expect_err("stopped");
    assert_late(&error, "while rendering template \"slow\"");
}

/// A template that takes more than the budget's steps is denied, naming the template; one step
/// fewer renders.
#[test]
fn a_template_over_its_step_budget_is_denied_naming_it() {
    // Two nested ranges: `outer` iterations, each of `inner` (and its own step).
    let nested = |outer: u64| {
        let inner = TEMPLATE_STEP_BUDGET / outer - 1;
        format!("{{{{ range until {outer} }}}}{{{{ range until {inner} }}}}{{{{ end }}}}{{{{ end }}}}")
    };
    let pod = pod(1);
    // 1000 × (999 + 1) steps: exactly the budget.
    let config = with_template("loops", &nested(1000));
    assert!(matches!(
        config.inject(&request(&pod, None)),
        Ok(Outcome::Injected { .. })
    ));
    // 1000 × (1000 + 1): over it.
    let config = with_template("loops", &nested(1000).replace("until 999 ", "until 1000 "));
    let error = config.inject(&request(&pod, None)).expect_err("over the budget");
    assert!(
        error.0.starts_with(
            "failed to run injection template: template \"loops\" exceeded the injector's step budget"
        ) && error.0.contains(&format!(
            "execution step budget exceeded ({TEMPLATE_STEP_BUDGET} steps)"
        )),
        "{error}"
    );
}
