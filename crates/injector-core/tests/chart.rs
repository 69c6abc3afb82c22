//! The chart's API-server-side rules against the injector's own: the webhooks' matchConditions
//! skip only pods the injector would not inject, and the warning policies say exactly what
//! `explain` says, where it says it.
//!
//! Renders `deploy/helm/sidecar-injector` with Helm (`HELM`, else the binary
//! `tools/helm/build.sh` caches) and evaluates its CEL with the `cel` crate. Without Helm the
//! tests say so and pass, unless `CI_REQUIRE_HELM=1` (CI runs them once Helm is built).

#![allow(clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use injector_core::{
    decision::{self, INJECT_KEY, InjectionPolicy, PodFacts, Policy},
    gate::match_conditions::{self, MatchCondition},
    ignored_annotations, mistakes,
    selector::{LabelSelector, Labels},
    yaml,
};
use serde_json::{Value, json};

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/helm/sidecar-injector")
}

fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM") {
        return Some(PathBuf::from(path));
    }
    let cache = std::env::var_os("SIDECAR_INJECTOR_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/sidecar-injector")))?;
    let path = cache.join("helm-v3.22.0/helm");
    path.exists().then_some(path)
}

/// The chart rendered with `args`, as objects; `None` when there is no Helm to render it.
fn render(args: &[&str]) -> Option<Vec<Value>> {
    let Some(helm) = helm() else {
        assert!(
            std::env::var_os("CI_REQUIRE_HELM").is_none_or(|v| v.is_empty()),
            "CI_REQUIRE_HELM is set but there is no Helm (HELM, or tools/helm/build.sh's cache)"
        );
        eprintln!("skipped: no Helm (set HELM, or run tools/helm/build.sh)");
        return None;
    };
    let output = Command::new(helm)
        .args(["template", "sidecar-injector"])
        .arg(chart())
        .args(["--namespace", "sidecar-injector"])
        .args(args)
        .output()
        .expect("helm runs");
    assert!(
        output.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let documents = yaml::parse_documents(&text).expect("the chart renders YAML");
    Some(documents.into_iter().map(|(_, object)| object).collect())
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> impl Iterator<Item = &'a Value> {
    objects.iter().filter(move |o| o["kind"] == kind)
}

/// Every webhook's matchConditions; all webhooks of the chart have the same.
fn match_conditions_of(objects: &[Value]) -> Vec<MatchCondition> {
    let webhooks: Vec<&Value> = of_kind(objects, "MutatingWebhookConfiguration")
        .flat_map(|c| c["webhooks"].as_array().expect("webhooks"))
        .collect();
    assert!(!webhooks.is_empty());
    let read = |webhook: &Value| -> Vec<MatchCondition> {
        webhook["matchConditions"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|c| MatchCondition {
                        name: c["name"].as_str().expect("name").to_owned(),
                        expression: c["expression"].as_str().expect("expression").to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = read(webhooks[0]);
    for webhook in &webhooks {
        assert_eq!(read(webhook), first, "{}", webhook["name"]);
    }
    first
}

// ---- The cases: the decision table's pods, and configurations of every kind ----

const NAMESPACES: [&str; 4] = ["shop", "kube-system", "kube-public", "istio-system"];
/// Absent, the two that count, empty, and values that fall back to the policy.
const VALUES: [Option<&str>; 6] = [
    None,
    Some("true"),
    Some("false"),
    Some(""),
    Some("yes"),
    Some("False"),
];

/// A pod of the table: namespace, host network, inject label, inject annotation, other labels,
/// and whether it was injected before (`sidecar.istio.io/status`).
#[derive(Debug, Clone)]
struct Case {
    namespace: &'static str,
    host_network: bool,
    label: Option<&'static str>,
    annotation: Option<&'static str>,
    labels: Labels,
    injected_before: bool,
}

impl Case {
    fn labels(&self) -> Labels {
        let mut labels = self.labels.clone();
        if let Some(value) = self.label {
            labels.insert(INJECT_KEY.to_owned(), value.to_owned());
        }
        labels
    }

    fn annotations(&self) -> Labels {
        let mut annotations = Labels::new();
        if let Some(value) = self.annotation {
            annotations.insert(INJECT_KEY.to_owned(), value.to_owned());
        }
        if self.injected_before {
            annotations.insert(
                "sidecar.istio.io/status".to_owned(),
                r#"{"containers":["istio-proxy"]}"#.to_owned(),
            );
        }
        annotations
    }

    fn pod(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-", "namespace": self.namespace,
                "labels": self.labels(), "annotations": self.annotations()},
            "spec": {"hostNetwork": self.host_network, "containers": [{"name": "web", "image": "nginx"}]},
        })
    }

    fn injected(&self, config: &InjectionPolicy) -> bool {
        let (labels, annotations) = (self.labels(), self.annotations());
        decision::decide(
            PodFacts {
                namespace: self.namespace,
                host_network: self.host_network,
                labels: &labels,
                annotations: &annotations,
            },
            config,
        )
        .inject
    }
}

fn cases() -> Vec<Case> {
    let other_labels: Vec<Labels> = [
        vec![],
        vec![("app", "web")],
        vec![("app", "batch")],
        vec![("tier", "cache")],
        vec![("tier", "cache"), ("legacy", "yes")],
        vec![("release", "canary")],
    ]
    .into_iter()
    .map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
    .collect();
    let mut cases = Vec::new();
    for namespace in NAMESPACES {
        for host_network in [false, true] {
            for label in VALUES {
                for annotation in VALUES {
                    for labels in &other_labels {
                        for injected_before in [false, true] {
                            cases.push(Case {
                                namespace,
                                host_network,
                                label,
                                annotation,
                                labels: labels.clone(),
                                injected_before,
                            });
                        }
                    }
                }
            }
        }
    }
    cases
}

/// The neverInjectSelector the chart is rendered with, as values and as the injector reads it.
fn never_selectors() -> Value {
    json!([
        {"matchLabels": {"app": "batch"}},
        {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["cache", "queue"]},
            {"key": "legacy", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "release", "operator": "Exists"}, {"key": "app", "operator": "NotIn", "values": ["web"]}]},
        {}
    ])
}

fn selectors(value: &Value) -> Vec<LabelSelector> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| LabelSelector::from_value(s, "selector").expect("valid"))
        .collect()
}

/// Configurations: every kind of policy (an invalid one included), with and without
/// alwaysInjectSelector, with `never` as neverInjectSelector.
fn configurations(never: &[LabelSelector]) -> Vec<InjectionPolicy> {
    let always = [
        vec![],
        selectors(
            &json!([{"matchLabels": {"app": "batch"}}, {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}]),
        ),
    ];
    let mut configurations = Vec::new();
    for policy in ["enabled", "disabled", "Enabled", ""] {
        for always in &always {
            configurations.push(InjectionPolicy {
                policy: Policy::parse(policy),
                never_inject_selector: never.to_vec(),
                always_inject_selector: always.clone(),
            });
        }
    }
    configurations
}

/// Whether the API server skips the pod: a condition is false. Every condition of ours must
/// evaluate for every pod (an error would refuse the pod under failurePolicy Fail).
fn skipped(conditions: &[MatchCondition], case: &Case) -> Vec<String> {
    let outcome = match_conditions::evaluate(conditions, &case.pod(), case.namespace);
    assert!(
        outcome.unevaluated.is_empty(),
        "{case:?}: {:?}",
        outcome.unevaluated
    );
    outcome.failed
}

#[test]
fn match_conditions_skip_only_pods_the_injector_never_injects() {
    let never = never_selectors();
    let Some(objects) = render(&[
        "--set-json",
        &format!("injectorConfig.neverInjectSelector={never}"),
    ]) else {
        return;
    };
    let conditions = match_conditions_of(&objects);
    let names: Vec<&str> = conditions.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "not-host-network",
            "not-opted-out",
            "not-ignored-namespace",
            "not-never-inject-selector"
        ]
    );
    // The conditions that hold whatever the configuration, against every configuration; the
    // selector's, against every configuration with the chart's selectors.
    let (always_valid, with_selectors) = conditions.split_at(3);
    let unconditional = configurations(&[]);
    let with_chart_selectors = configurations(&selectors(&never));
    let mut skips = std::collections::BTreeMap::<String, usize>::new();
    let cases = cases();
    for case in &cases {
        for name in skipped(always_valid, case) {
            *skips.entry(name.clone()).or_default() += 1;
            for config in unconditional.iter().chain(&with_chart_selectors) {
                assert!(
                    !case.injected(config),
                    "condition {name} skips {case:?}, which the injector injects under {config:?}"
                );
            }
        }
        for name in skipped(with_selectors, case) {
            *skips.entry(name.clone()).or_default() += 1;
            for config in &with_chart_selectors {
                assert!(
                    !case.injected(config),
                    "condition {name} skips {case:?}, which the injector injects under {config:?}"
                );
            }
        }
    }
    // Each condition skips something, and a pod that asks for nothing is still sent.
    for name in names {
        assert!(
            skips.get(name).copied().unwrap_or(0) > 0,
            "{name} never skips: {skips:?}"
        );
    }
    let plain = cases
        .iter()
        .find(|c| c.namespace == "shop" && !c.host_network && c.label.is_none() && c.annotation.is_none())
        .expect("a plain pod");
    assert!(skipped(&conditions, plain).is_empty());
    // Injected before: the injector strips the earlier injection and injects again, so the
    // status annotation alone never skips.
    let again = Case {
        injected_before: true,
        ..plain.clone()
    };
    assert!(skipped(&conditions, &again).is_empty());
    assert!(again.injected(&InjectionPolicy::default()));
    eprintln!(
        "{} pods x {} configurations; skipped by condition: {skips:?}",
        cases.len(),
        with_chart_selectors.len()
    );
}

#[test]
fn match_conditions_are_on_every_preset_and_off_when_asked() {
    for preset in [None, Some("values-opt-out.yaml"), Some("values-istio.yaml")] {
        let file = preset.map(|p| chart().join(p).display().to_string());
        let args: Vec<&str> = file.iter().flat_map(|f| ["-f", f.as_str()]).collect();
        let Some(objects) = render(&args) else { return };
        let conditions = match_conditions_of(&objects);
        // No neverInjectSelector: the three that hold whatever the configuration.
        assert_eq!(conditions.len(), 3, "{preset:?}");
    }
    let Some(objects) = render(&["--set", "webhook.matchConditions=false"]) else {
        return;
    };
    assert!(match_conditions_of(&objects).is_empty());
    // Istio's own ConfigMap (not the chart's): its selectors are not known when rendering.
    let Some(objects) = render(&[
        "--set",
        "injectorConfig.create=false",
        "--set-json",
        r#"injectorConfig.neverInjectSelector=[{"matchLabels":{"a":"b"}}]"#,
    ]) else {
        return;
    };
    assert_eq!(match_conditions_of(&objects).len(), 3);
}

// ---- The warning policies ----

/// A policy's validations as `(expression, message)`, and its variables as `(name, expression)`
/// in order.
type PolicyParts = (Vec<(String, String)>, Vec<(String, String)>);

/// The policy whose name ends with `suffix`.
fn policy(objects: &[Value], suffix: &str) -> PolicyParts {
    let policy = of_kind(objects, "ValidatingAdmissionPolicy")
        .find(|p| {
            p["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(suffix))
        })
        .unwrap_or_else(|| panic!("no policy *{suffix}"));
    assert_eq!(policy["spec"]["failurePolicy"], "Ignore");
    let pairs = |field: &str, a: &str, b: &str| -> Vec<(String, String)> {
        policy["spec"][field]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|v| {
                        (
                            v[a].as_str().expect(a).to_owned(),
                            v[b].as_str().expect(b).to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let binding = of_kind(objects, "ValidatingAdmissionPolicyBinding")
        .find(|b| b["spec"]["policyName"] == policy["metadata"]["name"])
        .expect("a binding");
    assert_eq!(binding["spec"]["validationActions"], json!(["Warn", "Audit"]));
    (
        pairs("validations", "expression", "message"),
        pairs("variables", "name", "expression"),
    )
}

/// The messages of the validations that fail for `object`, created in `namespace`, evaluated as
/// the API server does: variables first, in order.
fn warnings_for(policy: &PolicyParts, object: &Value, namespace: &str) -> Vec<String> {
    let (validations, variables) = policy;
    let request = json!({"namespace": namespace, "operation": "CREATE"});
    let mut known = serde_json::Map::new();
    for (name, expression) in variables {
        let value = eval(expression, object, &request, &Value::Object(known.clone()));
        known.insert(name.clone(), value);
    }
    let variables = Value::Object(known);
    validations
        .iter()
        .filter(|(expression, _)| eval(expression, object, &request, &variables) == json!(false))
        .map(|(_, message)| message.clone())
        .collect()
}

thread_local! {
    static ENV: std::sync::Arc<cel::Env> = std::sync::Arc::new(cel::Env::stdlib());
    static PROGRAMS: std::cell::RefCell<std::collections::HashMap<String, std::sync::Arc<cel::Program>>> =
        Default::default();
}

fn eval(expression: &str, object: &Value, request: &Value, variables: &Value) -> Value {
    let env = ENV.with(|env| env.clone());
    let program = PROGRAMS.with(|programs| {
        programs
            .borrow_mut()
            .entry(expression.to_owned())
            .or_insert_with(|| {
                std::sync::Arc::new(
                    env.compile(expression)
                        .unwrap_or_else(|e| panic!("{expression}: {e}")),
                )
            })
            .clone()
    });
    let mut context = cel::Context::with_env(env);
    context.add_variable("object", object).expect("object");
    context.add_variable("request", request).expect("request");
    context.add_variable("variables", variables).expect("variables");
    let value = program
        .execute(&context)
        .unwrap_or_else(|e| panic!("{expression} on {object}: {e}"));
    cel_to_json(value)
}

fn cel_to_json(value: cel::Value) -> Value {
    match value {
        cel::Value::Bool(b) => json!(b),
        cel::Value::String(s) => json!(s.as_str()),
        cel::Value::Map(map) => Value::Object(
            map.map
                .iter()
                .map(|(key, value)| match key {
                    cel::objects::Key::String(key) => (key.to_string(), cel_to_json(value.clone())),
                    other => panic!("unexpected key {other:?}"),
                })
                .collect(),
        ),
        other => panic!("unexpected value {other:?}"),
    }
}

fn workload(
    kind: &str,
    own: Value,
    template_labels: Value,
    template_annotations: Value,
    host_network: bool,
) -> Value {
    let template = json!({
        "metadata": {"labels": template_labels, "annotations": template_annotations},
        "spec": {"hostNetwork": host_network, "containers": [{"name": "c", "image": "i"}]},
    });
    let (api_version, spec) = match kind {
        "CronJob" => (
            "batch/v1",
            json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}),
        ),
        "Job" => ("batch/v1", json!({"template": template})),
        _ => ("apps/v1", json!({"template": template})),
    };
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "web", "annotations": own}, "spec": spec})
}

#[test]
fn warning_policies_say_what_explain_says_where_it_says_it() {
    let Some(objects) = render(&[]) else { return };
    let workloads = policy(&objects, "-warn-workloads");
    let cronjobs = policy(&objects, "-warn-cronjobs");
    let namespaces = policy(&objects, "-warn-namespaces");

    // The messages are the injector's, each once.
    let ignored: Vec<String> = ignored_annotations::IGNORED
        .iter()
        .map(|(key, why)| format!("annotation {key} has no effect: {why}"))
        .collect();
    let messages = |p: &PolicyParts| -> Vec<String> { p.0.iter().map(|(_, m)| m.clone()).collect() };
    let template_messages: Vec<String> = mistakes::WORKLOAD_MISTAKES[2..]
        .iter()
        .map(|m| m.message.to_owned())
        .collect();
    let expected = |misplaced: mistakes::Mistake| -> Vec<String> {
        std::iter::once(misplaced.message.to_owned())
            .chain(template_messages.iter().cloned())
            .chain(ignored.iter().cloned())
            .collect()
    };
    assert_eq!(
        messages(&workloads),
        expected(mistakes::INJECT_ON_WORKLOAD_METADATA)
    );
    assert_eq!(
        messages(&cronjobs),
        expected(mistakes::INJECT_ON_CRONJOB_METADATA)
    );
    assert_eq!(
        messages(&namespaces),
        mistakes::NAMESPACE_MISTAKES.map(|m| m.message.to_owned())
    );

    // Where they fire: the injector's own diagnosis of the same object.
    let values = [None, Some("true"), Some("false"), Some("yes"), Some("")];
    let map = |value: Option<&str>, extra: &[(&str, &str)]| -> Value {
        let mut map: serde_json::Map<String, Value> =
            extra.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
        if let Some(value) = value {
            map.insert(INJECT_KEY.to_owned(), json!(value));
        }
        Value::Object(map)
    };
    let mut checked = 0;
    for kind in [
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob",
    ] {
        let policy = if kind == "CronJob" { &cronjobs } else { &workloads };
        for own in [None, Some("true")] {
            for label in values {
                for annotation in values {
                    for host_network in [false, true] {
                        for namespace in ["shop", "kube-public"] {
                            let extra: &[(&str, &str)] = if host_network {
                                &[("sidecar.istio.io/statusPort", "1")]
                            } else {
                                &[]
                            };
                            let object = workload(
                                kind,
                                map(own, &[]),
                                map(label, &[]),
                                map(annotation, extra),
                                host_network,
                            );
                            let template = injector_core::workload::pod_template(&object)
                                .expect("valid")
                                .expect("a workload");
                            let mut expected: Vec<String> = Vec::new();
                            if !template.misplaced_settings().is_empty() {
                                expected.push(template.misplaced_mistake().message.to_owned());
                            }
                            expected.extend(
                                mistakes::template_mistakes(
                                    Some(namespace),
                                    host_network,
                                    &template.labels,
                                    &template.annotations,
                                )
                                .into_iter()
                                .map(|m| m.message.to_owned()),
                            );
                            expected.extend(ignored_annotations::warnings(&template.annotations));
                            assert_eq!(
                                warnings_for(policy, &object, namespace),
                                expected,
                                "{kind} in {namespace}: {object}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    for labels in [
        json!({}),
        json!({"istio-injection": "enabled"}),
        json!({"istio-injection": "disabled"}),
        json!({"istio-injection": "enable"}),
        json!({"istio.io/rev": "canary"}),
        json!({"istio-injection": "enabled", "istio.io/rev": "canary"}),
        json!({"istio-injection": "", "istio.io/rev": "canary"}),
    ] {
        let object =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": labels}});
        let facts = injector_core::gate::NamespaceFacts::from_object(&object).expect("valid");
        let expected: Vec<String> = mistakes::namespace_mistakes(&facts.labels)
            .into_iter()
            .map(|m| m.message.to_owned())
            .collect();
        assert_eq!(warnings_for(&namespaces, &object, ""), expected, "{labels}");
        checked += 1;
    }
    eprintln!("{checked} objects: the policies warn exactly where the injector's diagnosis does");
}

#[test]
fn warning_policies_are_on_by_default_and_off_when_asked() {
    let Some(objects) = render(&[]) else { return };
    assert_eq!(
        of_kind(&objects, "ValidatingAdmissionPolicyBinding")
            .filter(|b| b["spec"]["validationActions"] == json!(["Warn", "Audit"]))
            .count(),
        3
    );
    let Some(objects) = render(&["--set", "applyWarnings.enabled=false"]) else {
        return;
    };
    assert_eq!(
        of_kind(&objects, "ValidatingAdmissionPolicyBinding")
            .filter(|b| b["spec"]["validationActions"] == json!(["Warn", "Audit"]))
            .count(),
        0
    );
}
