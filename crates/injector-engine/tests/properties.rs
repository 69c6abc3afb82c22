//! Property tests for the whole injection (`CompiledConfig::inject`), over generated pods.
//!
//! The golden cases (`conformance.rs`) pin Istio's output for a few dozen hand-written pods; these
//! properties check invariants that must hold for *every* pod, over thousands of realistic but
//! varied ones (1–4 containers, 0–2 init containers, ports, env, resources, probes, volumes,
//! security contexts, Istio annotations, owners, and fields our schema does not model):
//!
//! 1. [`patch_applies_to_the_pod_as_received`]: the RFC 6902 patch the webhook answers with turns
//!    the pod the API server sent into exactly the injected pod.
//! 2. [`reinjection_changes_nothing`]: injecting the injected pod again gives the same pod and an
//!    empty patch (Istio's `RunTemplate` strips what the status annotation lists and re-renders),
//!    narrowed only where Istio itself is not idempotent (see [`check_reinjection`]).
//! 3. [`unknown_fields_survive_and_nothing_of_the_user_is_removed`]: every field of the pod as
//!    received is still there, unchanged, except a precisely defined set Istio itself rewrites.
//! 4. [`invalid_annotations_are_rejected_in_istios_words`]: an invalid annotation value is an
//!    error naming it, never a panic or a silently injected pod.
//! 5. [`arbitrary_json_never_panics`], [`mistyped_pods_never_panic`] and
//!    [`hostile_annotations_never_panic`]: any JSON object, however wrong its types or garbled the
//!    annotations the engine parses, gives `Ok` or `Err`, never a panic (the webhook must answer
//!    every request).
//! 6. [`pods_that_are_their_own_owner_get_what_rendering_gives`]: pods named like a StatefulSet's
//!    (their own owner, so they share a render made with a stand-in for the name) get the
//!    outcome an injector without a render cache gives.
//!
//! The Istio functions named below (`injectPod`, `RunTemplate`, `postProcessPod`, `createPatch`,
//! …) are in <https://github.com/istio/istio/tree/master/pkg/kube/inject>.
//!
//! Every property runs against four injectors: Istio's default chart settings (from Istio's
//! corpus as the `istio-corpus` crate finds it: the shared copy, else the pinned Go module's;
//! skipped with a message when missing, a failure under `SIDECAR_INJECTOR_REQUIRE_CORPUS=1`) and
//! our embedded default configuration, each with native sidecars on and off.
//!
//! The case count keeps the file under a minute in debug builds on two cores; set
//! `PROPTEST_CASES` for longer runs (e.g. `PROPTEST_CASES=2000 cargo test --release -p
//! injector-engine --test properties`), and `PROPERTIES_ISTIO_VALUES` (comma-separated names of
//! `derived/values/*.json` in the corpus, default `default`; the profiles beyond the default are in
//! the shared copy only) to add more of Istio's value profiles.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::LazyLock,
};

use injector_engine::{
    CompiledConfig, InjectError, Options, Outcome, Request,
    cache::RenderCache,
    embedded_defaults,
    normalize::normalize_preserving,
    patch::apply_patch,
    quantity::canonical,
    settings::{parse_mesh, parse_values},
};
use proptest::{prelude::*, test_runner::TestCaseError};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Injectors
// ---------------------------------------------------------------------------------------------

/// One configuration the properties run against.
struct Setup {
    name: String,
    injector: CompiledConfig,
    /// A render cache in front of it.
    cache: RenderCache,
    /// The mesh `defaultConfig.statusPort` (the port rewritten probes point at).
    status_port: i64,
}

fn build(name: &str, config: &str, values: &str, mesh: &str, native: bool) -> Setup {
    let config = injector_core::config::parse_injector_config(config)
        .expect("the injector config loads")
        .config;
    let values = parse_values(values).expect("the values load");
    let mesh = parse_mesh(mesh).expect("the mesh config loads");
    let status_port = mesh
        .pointer("/defaultConfig/statusPort")
        .and_then(Value::as_i64)
        .unwrap_or(15020);
    let make = || {
        CompiledConfig::new(
            config.clone(),
            values.clone(),
            mesh.clone(),
            Options {
                native_sidecars: native,
                ..Options::default()
            },
        )
        .expect("the templates parse")
    };
    Setup {
        name: format!("{name}, native sidecars {}", if native { "on" } else { "off" }),
        injector: make(),
        cache: RenderCache::default(),
        status_port,
    }
}

/// The embedded defaults always; Istio's default chart settings when Istio's corpus is at hand.
static SETUPS: LazyLock<Vec<Setup>> = LazyLock::new(|| {
    let mut setups = Vec::new();
    let (config, values, mesh) = embedded_defaults();
    for native in [true, false] {
        setups.push(build("embedded defaults", config, values, mesh, native));
    }
    let Some(corpus) = istio_corpus::istio_or_skip("properties: Istio's default chart settings") else {
        return setups;
    };
    let derived = corpus.path("derived");
    let read = |path: &str| std::fs::read_to_string(derived.join(path)).ok();
    // More of Istio's value profiles (`values/<name>.json` with the default config), e.g.
    // `PROPERTIES_ISTIO_VALUES=default,cni-enabled,hold-application` for a longer local run.
    let profiles = std::env::var("PROPERTIES_ISTIO_VALUES").unwrap_or_else(|_| "default".to_owned());
    match (read("config/default.yaml"), read("mesh/default.yaml")) {
        (Some(config), Some(mesh)) => {
            for profile in profiles.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let values = read(&format!("values/{profile}.json"));
                assert!(
                    values.is_some(),
                    "no Istio values profile {profile:?} in {} (the profiles beyond `default` are in \
                     the shared copy only)",
                    derived.display()
                );
                let Some(values) = values else { continue };
                for native in [true, false] {
                    let name = if profile == "default" {
                        "Istio default chart".to_owned()
                    } else {
                        format!("Istio values {profile}")
                    };
                    setups.push(build(&name, &config, &values, &mesh, native));
                }
            }
        }
        _ => istio_corpus::skip_or_fail(&format!(
            "properties: Istio's default chart settings are not in {} (derived/config, derived/mesh)",
            corpus.describe()
        )),
    }
    setups
});

/// Cases per property: `PROPTEST_CASES` when set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(default_cases: u32) -> ProptestConfig {
    // The injectors are made before any case runs: a missing corpus under
    // `SIDECAR_INJECTOR_REQUIRE_CORPUS=1` then fails each test once, not in every shrinking step.
    LazyLock::force(&SETUPS);
    ProptestConfig {
        cases: cases(default_cases),
        // Failures are shrunk and printed; no regression files in the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Names Istio's templates and post-processing own (the generator never uses them for user
/// objects, except a deliberate user `istio-proxy` override).
const ISTIO_CONTAINERS: [&str; 4] = [
    "istio-proxy",
    "istio-init",
    "istio-validation",
    "enable-core-dump",
];

/// Keys of fields no schema knows: the `x-prop-` prefix never collides with a Kubernetes field,
/// not even case-insensitively (Go's decoder matches field names that way). `/` and `~` need
/// escaping in patch paths (RFC 6901).
fn unknown_fields() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x-prop-[a-z~/.]{1,6}", any_json(2), 0..=2)
        .prop_map(|fields| fields.into_iter().collect())
}

/// Small arbitrary JSON (no floats that do not round-trip through text exactly).
fn any_json(depth: u32) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        Just(json!(0.5)),
        Just(json!(u64::MAX)),
        "[ -~]{0,12}".prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(depth, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z][a-zA-Z0-9]{0,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn with_unknown(mut object: Map<String, Value>, unknown: Map<String, Value>) -> Value {
    object.extend(unknown);
    Value::Object(object)
}

fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([-a-z0-9]{0,8}[a-z0-9])?"
}

/// Resource quantities as users write them, canonical or not (`0.5` is `500m` to Kubernetes).
fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("100m")),
        Just(json!("250m")),
        Just(json!("0.5")),
        Just(json!("1")),
        Just(json!("2")),
        Just(json!("1.5")),
        Just(json!("128Mi")),
        Just(json!("1Gi")),
        Just(json!("512M")),
        Just(json!("1e3")),
        Just(json!("2000m")),
        Just(json!(1)),
    ]
}

fn resources() -> BoxedStrategy<Value> {
    let list = prop::collection::btree_map(
        prop_oneof![
            Just("cpu".to_owned()),
            Just("memory".to_owned()),
            Just("ephemeral-storage".to_owned()),
            Just("example.com/gpu".to_owned()),
        ],
        quantity(),
        1..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
    .boxed();
    (prop::option::of(list.clone()), prop::option::of(list))
        .prop_map(|(requests, limits)| {
            let mut out = Map::new();
            if let Some(r) = requests {
                out.insert("requests".into(), r);
            }
            if let Some(l) = limits {
                out.insert("limits".into(), l);
            }
            Value::Object(out)
        })
        .boxed()
}

/// A probe port: a number or the name of one of the container's ports (or of none).
fn probe_port() -> impl Strategy<Value = Value> {
    prop_oneof![
        (1..=65535i64).prop_map(Value::from),
        Just(json!(8080)),
        Just(json!("http0")),
        Just(json!("grpc1")),
        Just(json!("metrics2")),
        Just(json!("missing")),
    ]
}

fn http_get() -> BoxedStrategy<Value> {
    (
        "/[a-z]{0,6}",
        probe_port(),
        prop::option::of(prop_oneof![Just("HTTP"), Just("HTTPS")]),
        prop::option::of("[a-z]{1,6}\\.example\\.com"),
        any::<bool>(),
    )
        .prop_map(|(path, port, scheme, host, headers)| {
            let mut out = Map::new();
            out.insert("path".into(), path.into());
            out.insert("port".into(), port);
            if let Some(scheme) = scheme {
                out.insert("scheme".into(), scheme.into());
            }
            if let Some(host) = host {
                out.insert("host".into(), host.into());
            }
            if headers {
                out.insert("httpHeaders".into(), json!([{"name": "X-Probe", "value": "1"}]));
            }
            Value::Object(out)
        })
        .boxed()
}

fn probe() -> BoxedStrategy<Value> {
    let handler = prop_oneof![
        http_get().prop_map(|h| ("httpGet", h)),
        probe_port().prop_map(|p| ("tcpSocket", json!({ "port": p }))),
        Just(("exec", json!({"command": ["cat", "/tmp/healthy"]}))),
        ((1..=65535i64), prop::option::of("[a-z]{1,6}")).prop_map(|(port, service)| {
            let mut grpc = json!({ "port": port });
            if let Some(service) = service {
                grpc["service"] = service.into();
            }
            ("grpc", grpc)
        }),
    ];
    (
        handler,
        prop::option::of(1..30i64),
        prop::option::of(1..60i64),
        prop::option::of(1..10i64),
        prop::option::of(1..5i64),
        unknown_fields(),
    )
        .prop_map(|((kind, handler), delay, period, timeout, failure, unknown)| {
            let mut out = Map::new();
            out.insert(kind.into(), handler);
            for (key, value) in [
                ("initialDelaySeconds", delay),
                ("periodSeconds", period),
                ("timeoutSeconds", timeout),
                ("failureThreshold", failure),
            ] {
                if let Some(value) = value {
                    out.insert(key.into(), value.into());
                }
            }
            with_unknown(out, unknown)
        })
        .boxed()
}

fn lifecycle_handler() -> BoxedStrategy<Value> {
    prop_oneof![
        http_get().prop_map(|h| json!({ "httpGet": h })),
        Just(json!({"exec": {"command": ["sh", "-c", "sleep 5"]}})),
        Just(json!({"sleep": {"seconds": 5}})),
        probe_port().prop_map(|p| json!({"tcpSocket": {"port": p}})),
    ]
    .boxed()
}

fn env_var(index: usize) -> impl Strategy<Value = Value> {
    (
        "[A-Z][A-Z0-9_]{0,8}",
        prop_oneof![
            "[ -~]{1,16}".prop_map(|v| json!({ "value": v })),
            Just(json!({"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})),
            Just(json!({"valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}})),
            Just(json!({"valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}})),
            Just(json!({"valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode", "optional": true}}})),
            Just(json!({"valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}})),
        ],
    )
        .prop_map(move |(name, mut body)| {
            body["name"] = format!("{name}_{index}").into();
            body
        })
}

fn ports() -> BoxedStrategy<Value> {
    prop::collection::btree_map(
        1..=65535i64,
        (
            prop::option::of(prop_oneof![
                Just("http"),
                Just("grpc"),
                Just("metrics"),
                Just("tcp")
            ]),
            prop::option::of(prop_oneof![Just("TCP"), Just("UDP"), Just("SCTP")]),
        ),
        0..3,
    )
    .prop_map(|ports| {
        Value::Array(
            ports
                .into_iter()
                .enumerate()
                .map(|(i, (number, (name, protocol)))| {
                    let mut port = json!({ "containerPort": number });
                    if let Some(name) = name {
                        port["name"] = format!("{name}{i}").into();
                    }
                    if let Some(protocol) = protocol {
                        port["protocol"] = protocol.into();
                    }
                    port
                })
                .collect(),
        )
    })
    .boxed()
}

fn container_security_context() -> BoxedStrategy<Value> {
    (
        prop::option::of(0..70000i64),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        any::<bool>(),
    )
        .prop_map(|(user, non_root, read_only, caps)| {
            let mut out = Map::new();
            if let Some(user) = user {
                out.insert("runAsUser".into(), user.into());
            }
            if let Some(non_root) = non_root {
                out.insert("runAsNonRoot".into(), non_root.into());
            }
            if let Some(read_only) = read_only {
                out.insert("readOnlyRootFilesystem".into(), read_only.into());
            }
            if caps {
                out.insert(
                    "capabilities".into(),
                    json!({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}),
                );
                out.insert("allowPrivilegeEscalation".into(), false.into());
            }
            Value::Object(out)
        })
        .boxed()
}

fn image() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("nginx".to_owned()),
        "[a-z]{1,8}(:[a-z0-9.]{1,6})?",
        "registry\\.example\\.com/[a-z]{1,6}/[a-z]{1,6}:v[0-9]\\.[0-9]",
        "ghcr\\.io/[a-z]{1,6}/[a-z]{1,6}@sha256:[0-9a-f]{64}",
    ]
}

/// A container without its name (names are given by the pod generator, unique in the pod).
fn container_body() -> BoxedStrategy<Map<String, Value>> {
    let basics = (
        image(),
        prop::option::of(prop_oneof![Just("Always"), Just("IfNotPresent"), Just("Never")]),
        prop::option::of(prop::collection::vec("[a-z-]{1,8}", 1..3)),
        ports(),
        prop::collection::vec(any::<u8>(), 0..4),
        prop::option::of(resources()),
    );
    let probes = (
        prop::option::of(probe()),
        prop::option::of(probe()),
        prop::option::of(probe()),
        prop::option::of((
            prop::option::of(lifecycle_handler()),
            prop::option::of(lifecycle_handler()),
        )),
    );
    let rest = (
        prop::collection::btree_map("/[a-z]{1,6}(/[a-z]{1,4})?", (0..3usize, any::<bool>()), 0..3),
        prop::option::of(container_security_context()),
        unknown_fields(),
    );
    (basics, probes, rest)
        .prop_flat_map(|(basics, probes, rest)| {
            let env_count = basics.4.len();
            let env = (0..env_count).map(env_var).collect::<Vec<_>>();
            (Just((basics, probes, rest)), env)
        })
        .prop_map(
            |(((image, pull, args, ports, _, resources), probes, rest), env)| {
                let (readiness, liveness, startup, lifecycle) = probes;
                let (mounts, security, unknown) = rest;
                let mut out = Map::new();
                out.insert("image".into(), image.into());
                if let Some(pull) = pull {
                    out.insert("imagePullPolicy".into(), pull.into());
                }
                if let Some(args) = args {
                    out.insert("args".into(), args.into());
                }
                if ports.as_array().is_some_and(|p| !p.is_empty()) {
                    out.insert("ports".into(), ports);
                }
                if !env.is_empty() {
                    out.insert("env".into(), Value::Array(env));
                }
                if let Some(resources) = resources {
                    out.insert("resources".into(), resources);
                }
                for (key, probe) in [
                    ("readinessProbe", readiness),
                    ("livenessProbe", liveness),
                    ("startupProbe", startup),
                ] {
                    if let Some(probe) = probe {
                        out.insert(key.into(), probe);
                    }
                }
                if let Some((pre_stop, post_start)) = lifecycle {
                    let mut handlers = Map::new();
                    if let Some(h) = pre_stop {
                        handlers.insert("preStop".into(), h);
                    }
                    if let Some(h) = post_start {
                        handlers.insert("postStart".into(), h);
                    }
                    out.insert("lifecycle".into(), Value::Object(handlers));
                }
                if !mounts.is_empty() {
                    let mounts = mounts
                        .into_iter()
                        .map(|(path, (volume, read_only))| {
                            let mut mount = json!({"name": format!("vol-{volume}"), "mountPath": path});
                            if read_only {
                                mount["readOnly"] = true.into();
                            }
                            mount
                        })
                        .collect();
                    out.insert("volumeMounts".into(), Value::Array(mounts));
                }
                if let Some(security) = security {
                    out.insert("securityContext".into(), security);
                }
                out.extend(unknown);
                out
            },
        )
        .boxed()
}

fn volume_body() -> BoxedStrategy<Map<String, Value>> {
    (
        prop_oneof![
            Just(json!({"emptyDir": {}})),
            Just(json!({"emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}})),
            Just(json!({"emptyDir": {"sizeLimit": "0.5Gi"}})),
            dns_label().prop_map(|n| json!({"configMap": {"name": n, "defaultMode": 420}})),
            dns_label().prop_map(|n| json!({"secret": {"secretName": n, "optional": true}})),
            dns_label().prop_map(|n| json!({"persistentVolumeClaim": {"claimName": n}})),
            Just(json!({"hostPath": {"path": "/var/log", "type": "Directory"}})),
            Just(json!({"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}})),
        ],
        unknown_fields(),
    )
        .prop_map(|(source, unknown)| {
            let mut out = source.as_object().cloned().unwrap_or_default();
            out.extend(unknown);
            out
        })
    .boxed()
}

/// Istio annotations with valid values (each optional).
fn istio_annotations() -> BoxedStrategy<Vec<(&'static str, String)>> {
    let choose = |key: &'static str, values: &'static [&'static str]| {
        prop::option::weighted(
            0.2,
            prop::sample::select(values).prop_map(move |v| (key, v.to_owned())),
        )
    };
    (
        (
            choose(
                "sidecar.istio.io/inject",
                &["true", "true", "true", "false", "yes"],
            ),
            choose(
                "proxy.istio.io/config",
                &[
                    "holdApplicationUntilProxyStarts: true",
                    "{\"holdApplicationUntilProxyStarts\": false}",
                    "concurrency: 2",
                    "terminationDrainDuration: 30s",
                    "proxyMetadata:\n  FOO: bar\n",
                ],
            ),
            choose(
                "traffic.sidecar.istio.io/includeOutboundIPRanges",
                &["*", "10.0.0.0/8", "10.0.0.0/8,192.168.0.0/16", ""],
            ),
            choose(
                "traffic.sidecar.istio.io/excludeOutboundPorts",
                &["8080", "8080,9090", ""],
            ),
            choose(
                "traffic.sidecar.istio.io/excludeInboundPorts",
                &["9000", "9000, 9001"],
            ),
            choose("sidecar.istio.io/proxyCPU", &["200m", "0.5", "1"]),
            choose("sidecar.istio.io/proxyMemory", &["256Mi", "1Gi"]),
        ),
        (
            choose("sidecar.istio.io/rewriteAppHTTPProbers", &["true", "false"]),
            choose("sidecar.istio.io/interceptionMode", &["REDIRECT", "TPROXY"]),
            choose("prometheus.io/scrape", &["true", "false"]),
            choose("prometheus.io/port", &["8080", "9090", "1234"]),
            choose("prometheus.io/path", &["/metrics", "/stats"]),
            choose("prometheus.istio.io/merge-metrics", &["true", "false"]),
            choose("sidecar.istio.io/nativeSidecar", &["true", "false"]),
            choose("inject.istio.io/templates", &["sidecar"]),
        ),
        (
            choose("status.sidecar.istio.io/port", &["15020", "15030"]),
            choose("readiness.status.sidecar.istio.io/periodSeconds", &["5", "30"]),
            choose("kubectl.kubernetes.io/default-container", &["main", ""]),
            choose("sidecar.istio.io/agentLogLevel", &["debug", "default:info"]),
            choose("istio.io/rev", &["default", "canary"]),
        ),
    )
        .prop_map(|(a, b, c)| {
            [
                a.0, a.1, a.2, a.3, a.4, a.5, a.6, b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, c.0, c.1, c.2,
                c.3, c.4,
            ]
            .into_iter()
            .flatten()
            .collect()
        })
        .boxed()
}

/// Labels the templates read (canonical service name and revision, TLS mode), each optional.
fn well_known_labels() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let label = |key: &'static str| prop::option::weighted(0.25, LABEL_VALUE.prop_map(move |v| (key, v)));
    (
        label("app"),
        label("version"),
        label("app.kubernetes.io/name"),
        label("service.istio.io/canonical-name"),
        label("service.istio.io/canonical-revision"),
        prop::option::weighted(0.1, Just(("security.istio.io/tlsMode", "disabled".to_owned()))),
    )
        .prop_map(|(a, b, c, d, e, f)| [a, b, c, d, e, f].into_iter().flatten().collect())
}

/// A valid label value: empty, or alphanumerics at both ends with `-_.` allowed inside (the API
/// server refuses anything else, and Istio's templates rely on it, e.g. `trimAll "-_."`).
const LABEL_VALUE: &str = "([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,8}[a-zA-Z0-9])?)?";

/// Labels, annotations, node selectors: `min..3` entries with valid label values (empty too).
fn string_map(key: &'static str, min: usize) -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(key, LABEL_VALUE, min..3)
}

fn owner_reference() -> BoxedStrategy<Value> {
    (
        prop_oneof![
            Just(("apps/v1", "ReplicaSet")),
            Just(("apps/v1", "StatefulSet")),
            Just(("apps/v1", "DaemonSet")),
            Just(("batch/v1", "Job")),
        ],
        dns_label(),
        "[0-9a-f]{8}",
        unknown_fields(),
    )
        .prop_map(|((api_version, kind), name, uid, unknown)| {
            let object = json!({"apiVersion": api_version, "kind": kind, "name": format!("{name}-{uid}"),
                                "uid": uid, "controller": true, "blockOwnerDeletion": true});
            with_unknown(object.as_object().cloned().unwrap_or_default(), unknown)
        })
        .boxed()
}

/// What a generated pod carries besides the JSON.
#[derive(Clone)]
struct Generated {
    pod: Value,
    /// `request.namespace` (the pod may have none of its own).
    namespace: String,
}

/// Shrunk failures print as JSON, ready to paste into a regression test.
impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "namespace {:?}, pod {}", self.namespace, self.pod)
    }
}

/// A realistic but varied pod, as the API server sends it: it has decoded the pod into its Go
/// types and encoded it again, so known `omitempty` fields never hold empty values (`args: []`,
/// `nodeSelector: {}`, `initialDelaySeconds: 0`; the engine's Go round trip drops those, a
/// removal no real request can see), label values are valid, and container, volume and port
/// names are unique. Fields it does not know (`x-prop-*`) are arbitrary.
fn pod() -> BoxedStrategy<Generated> {
    let containers = (
        dns_label(),
        prop::collection::vec(container_body(), 1..=4),
        prop::collection::vec((container_body(), prop::bool::weighted(0.15)), 0..=2),
        // A user `istio-proxy` customizing the injected one (Istio's overrides).
        prop::option::weighted(0.1, (resources(), prop::option::of(Just("auto")))),
    );
    let metadata = (
        (dns_label(), any::<bool>(), prop::option::of(dns_label())),
        string_map("[a-z]{1,5}(\\.example\\.com/)?[a-z]{1,8}", 0),
        (
            prop::option::weighted(0.2, prop::sample::select(&["true", "false", ""][..])),
            well_known_labels(),
        ),
        string_map("[a-z]{1,5}(\\.example\\.com/)?[a-z]{1,8}", 0),
        istio_annotations(),
        prop::option::of(owner_reference()),
        unknown_fields(),
    );
    let spec = (
        prop::collection::vec(volume_body(), 0..=3),
        prop::bool::weighted(0.05),
        prop::option::of((prop::option::of(1000..2000i64), prop::option::of(1000..2000i64))),
        prop::option::of(dns_label()),
        prop::option::of(string_map("[a-z]{1,5}(\\.example\\.com/)?[a-z]{1,8}", 1)),
        unknown_fields(),
        unknown_fields(),
    );
    let extras = (
        prop::collection::btree_set(dns_label(), 0..3),
        any::<bool>(),
        prop::bool::weighted(0.2),
    );
    (containers, metadata, spec, extras)
        .prop_map(|(containers, metadata, spec, extras)| {
            let (pull_secrets, tolerations, managed_fields) = extras;
            let (base, bodies, init_bodies, user_proxy) = containers;
            let (
                (name, generate_name, namespace),
                labels,
                inject_label,
                annotations,
                istio,
                owner,
                meta_unknown,
            ) = metadata;
            let (
                volumes,
                host_network,
                pod_security,
                service_account,
                node_selector,
                spec_unknown,
                top_unknown,
            ) = spec;

            let volume_names: BTreeSet<String> = (0..volumes.len()).map(|i| format!("vol-{i}")).collect();
            let fix_mounts = |mut body: Map<String, Value>| {
                if let Some(Value::Array(mounts)) = body.get_mut("volumeMounts") {
                    mounts.retain(|m| m["name"].as_str().is_some_and(|n| volume_names.contains(n)));
                    if mounts.is_empty() {
                        body.remove("volumeMounts");
                    }
                }
                body
            };
            let mut list: Vec<Value> = bodies
                .into_iter()
                .enumerate()
                .map(|(i, body)| {
                    let mut body = fix_mounts(body);
                    body.insert("name".into(), format!("{base}-{i}").into());
                    Value::Object(body)
                })
                .collect();
            if let Some((resources, image)) = user_proxy {
                let mut proxy = json!({"name": "istio-proxy", "resources": resources});
                if let Some(image) = image {
                    proxy["image"] = image.into();
                }
                list.push(proxy);
            }
            let init: Vec<Value> = init_bodies
                .into_iter()
                .enumerate()
                .map(|(i, (body, sidecar))| {
                    let mut body = fix_mounts(body);
                    body.insert("name".into(), format!("{base}-init-{i}").into());
                    if sidecar {
                        body.insert("restartPolicy".into(), "Always".into());
                    }
                    Value::Object(body)
                })
                .collect();

            let mut spec = Map::new();
            spec.insert("containers".into(), Value::Array(list));
            if !init.is_empty() {
                spec.insert("initContainers".into(), Value::Array(init));
            }
            if !volumes.is_empty() {
                let volumes = volumes
                    .into_iter()
                    .enumerate()
                    .map(|(i, mut body)| {
                        body.insert("name".into(), format!("vol-{i}").into());
                        Value::Object(body)
                    })
                    .collect();
                spec.insert("volumes".into(), Value::Array(volumes));
            }
            if host_network {
                spec.insert("hostNetwork".into(), true.into());
            }
            if let Some((user, group)) = pod_security {
                let mut context = json!({"seccompProfile": {"type": "RuntimeDefault"}});
                if let Some(user) = user {
                    context["runAsUser"] = user.into();
                }
                if let Some(group) = group {
                    context["fsGroup"] = group.into();
                }
                spec.insert("securityContext".into(), context);
            }
            if let Some(account) = service_account {
                spec.insert("serviceAccountName".into(), account.into());
            }
            if let Some(selector) = node_selector {
                spec.insert("nodeSelector".into(), json!(selector));
            }
            if !pull_secrets.is_empty() {
                let secrets = pull_secrets
                    .into_iter()
                    .map(|name| json!({ "name": name }))
                    .collect();
                spec.insert("imagePullSecrets".into(), Value::Array(secrets));
            }
            if tolerations {
                spec.insert(
                    "tolerations".into(),
                    json!([{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
                       {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]),
                );
            }
            spec.extend(spec_unknown);

            let mut metadata = Map::new();
            if generate_name {
                metadata.insert("generateName".into(), format!("{name}-").into());
            } else {
                metadata.insert("name".into(), name.into());
            }
            if let Some(namespace) = &namespace {
                metadata.insert("namespace".into(), namespace.clone().into());
            }
            let mut labels: Map<String, Value> = labels.into_iter().map(|(k, v)| (k, v.into())).collect();
            let (inject_label, well_known) = inject_label;
            if let Some(value) = inject_label {
                labels.insert("sidecar.istio.io/inject".into(), value.into());
            }
            for (key, value) in well_known {
                labels.insert(key.into(), value.into());
            }
            if !labels.is_empty() {
                metadata.insert("labels".into(), Value::Object(labels));
            }
            let mut annotations: Map<String, Value> =
                annotations.into_iter().map(|(k, v)| (k, v.into())).collect();
            for (key, value) in istio {
                annotations.insert(key.into(), value.into());
            }
            if !annotations.is_empty() {
                metadata.insert("annotations".into(), Value::Object(annotations));
            }
            if let Some(owner) = owner {
                metadata.insert("ownerReferences".into(), json!([owner]));
            }
            if managed_fields {
                // The engine drops these before diffing (Istio's `injectPod` does too).
                metadata.insert(
                    "managedFields".into(),
                    json!([{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]),
                );
            }
            metadata.extend(meta_unknown);

            let mut pod = Map::new();
            pod.insert("apiVersion".into(), "v1".into());
            pod.insert("kind".into(), "Pod".into());
            pod.insert("metadata".into(), Value::Object(metadata));
            pod.insert("spec".into(), Value::Object(spec));
            pod.extend(top_unknown);
            Generated {
                pod: Value::Object(pod),
                namespace: namespace.unwrap_or_else(|| "shop".to_owned()),
            }
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn request<'a>(pod: &'a Value, namespace: &'a str) -> Request<'a> {
    Request {
        pod: Some(pod),
        namespace: Some(namespace),
        ..Request::default()
    }
}

/// The pod the engine diffs against: the received pod with `managedFields` dropped and the
/// namespace defaulted from the request (Istio's `injectPod` does both before marshalling the
/// original). The patch is relative to this document; on the API server the
/// two differ in nothing the patch touches (`managedFields` is the server's, and the server fills
/// in the request namespace itself).
fn as_diffed(received: &Value, namespace: &str) -> Value {
    let mut pod = received.clone();
    if let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.shift_remove("managedFields");
        if metadata
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            metadata.insert("namespace".into(), namespace.into());
        }
    }
    pod
}

/// A short, readable difference between two JSON documents (their patch).
fn difference(from: &Value, to: &Value) -> String {
    serde_json::to_string_pretty(&json_patch::diff(from, to)).unwrap_or_default()
}

fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if condition {
        Ok(())
    } else {
        Err(TestCaseError::fail(message()))
    }
}

// ---------------------------------------------------------------------------------------------
// Property 1: the patch
// ---------------------------------------------------------------------------------------------

/// The patch applied to the pod as received, then decoded into the Go type as the API server
/// decodes it, gives exactly the injected pod; and the patch has no operation that only restates
/// that decoding (`status: {}`, a canonical quantity), as Istio's has none (`createPatch` diffs the Go round trip).
///
/// This is the only thing the API server sees: if the patch does not apply, the admission fails;
/// if it applies but yields something else than the pod the engine computed (a patch built from a
/// different base, a lost escape in a path such as `/metadata/annotations/sidecar.istio.io~1status`
/// or an unknown key holding `/` or `~`, a mis-indexed array op), the stored pod silently differs
/// from the one we tested. `managedFields` are, as in Istio's `injectPod`, not the patch's
/// business: the engine drops them from its base, the patch leaves them alone and the API server
/// keeps them. A pod without a namespace gets the request's from the patch (the API server would
/// fill in the same). Fields our schema does not know are kept by the decoding here (the API
/// server, newer than our schema, knows them).
fn check_patch(setup: &Setup, generated: &Generated) -> Result<(), TestCaseError> {
    let received = &generated.pod;
    let outcome = setup
        .injector
        .inject(&request(received, &generated.namespace))
        .map_err(|e| TestCaseError::fail(format!("[{}] a valid pod was refused: {e}", setup.name)))?;
    let Outcome::Injected { pod, patch, .. } = outcome else {
        return Ok(());
    };
    let applied = apply_patch(&as_diffed(received, &generated.namespace), &patch)
        .map_err(|e| TestCaseError::fail(format!("[{}] the patch does not apply: {e}", setup.name)))?;
    let applied = as_decoded(&applied)?;
    ensure(applied == pod, || {
        format!(
            "[{}] the patched pod differs from the injected pod:\n{}",
            setup.name,
            difference(&pod, &applied)
        )
    })?;

    // Verbatim on the pod as received.
    let applied = apply_patch(received, &patch).map_err(|e| {
        TestCaseError::fail(format!(
            "[{}] the patch does not apply to the pod as received: {e}",
            setup.name
        ))
    })?;
    let mut applied = as_decoded(&applied)?;
    let managed = applied
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|metadata| metadata.shift_remove("managedFields"));
    ensure(
        managed.as_ref()
            == received
                .pointer("/metadata/managedFields")
                .map(as_decoded_managed)
                .as_ref(),
        || format!("[{}] the patch touched managedFields", setup.name),
    )?;
    ensure(applied == pod, || {
        format!(
            "[{}] the pod as received, patched, differs from the injected pod:\n{}",
            setup.name,
            difference(&pod, &applied)
        )
    })?;

    // No operation only restates the decoding: removing any one of them changes the decoded pod.
    let operations: Vec<Value> = serde_json::from_slice(&patch).expect("the patch is JSON");
    for (index, operation) in operations.iter().enumerate() {
        let mut fewer = operations.clone();
        fewer.remove(index);
        let fewer = serde_json::to_vec(&fewer).expect("serializes");
        let Ok(without) = apply_patch(received, &fewer) else {
            continue; // A later operation needed this one: it is not a restatement.
        };
        let mut without = as_decoded(&without)?;
        if let Some(metadata) = without.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.shift_remove("managedFields");
        }
        ensure(without != pod, || {
            format!(
                "[{}] operation {operation} only restates what the API server's decoding gives",
                setup.name
            )
        })?;
    }
    Ok(())
}

/// The pod as the API server holds it after decoding a patched object into its Go type (fields
/// the schema does not know kept).
fn as_decoded(pod: &Value) -> Result<Value, TestCaseError> {
    normalize_preserving("v1/Pod", pod)
        .map_err(|e| TestCaseError::fail(format!("the patched pod does not decode: {e}")))
}

/// `managedFields` as they come out of the same decoding.
fn as_decoded_managed(managed: &Value) -> Value {
    let pod = json!({"metadata": {"managedFields": managed}});
    normalize_preserving("v1/Pod", &pod)
        .ok()
        .and_then(|pod| pod.pointer("/metadata/managedFields").cloned())
        .unwrap_or_else(|| managed.clone())
}

proptest! {
    #![proptest_config(config(24))]

    /// See [`check_patch`].
    #[test]
    fn patch_applies_to_the_pod_as_received(generated in pod()) {
        for setup in SETUPS.iter() {
            check_patch(setup, &generated)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property 2: re-injection
// ---------------------------------------------------------------------------------------------

/// Injecting an injected pod again changes nothing: same pod, empty patch.
///
/// Istio's decision no longer skips injected pods (`injectRequired` has no status-annotation
/// check), so a pod can reach the webhook twice (`reinvocationPolicy: IfNeeded`, a
/// second webhook, `istioctl kube-inject` output applied to a namespace with injection on). The
/// second pass strips the containers the status annotation lists (only for the template data),
/// re-renders, merges onto the un-stripped pod, merges the old `ISTIO_KUBE_APP_PROBERS` with old
/// keys winning, leaves already-merged Prometheus annotations alone, and does not re-apply the
/// old injection's containers as user overrides (`RunTemplate`, `reapplyOverwrittenContainers`,
/// `postProcessPod`). A difference
/// means duplicated env vars, probes rewritten twice, containers or annotations moving.
///
/// Where Istio itself is not idempotent the comparison is narrowed, and only there: a pod that
/// customizes one of Istio's containers (such overrides are kept in `proxy.istio.io/overrides`,
/// but `reapplyOverwrittenContainers` lets the new template win for every container the status
/// lists), [`records_probes_late`] and [`cluster_env_moves`].
fn check_reinjection(setup: &Setup, generated: &Generated) -> Result<(), TestCaseError> {
    let first = setup
        .injector
        .inject(&request(&generated.pod, &generated.namespace))
        .map_err(|e| TestCaseError::fail(format!("[{}] a valid pod was refused: {e}", setup.name)))?;
    let Outcome::Injected { pod: injected, .. } = first else {
        return Ok(());
    };
    let second = setup
        .injector
        .inject(&request(&injected, &generated.namespace))
        .map_err(|e| TestCaseError::fail(format!("[{}] re-injection was refused: {e}", setup.name)))?;
    let Outcome::Injected {
        pod: again, patch, ..
    } = second
    else {
        return Err(TestCaseError::fail(format!(
            "[{}] the injected pod was not injected again",
            setup.name
        )));
    };
    if again == injected {
        // Equal pods diff to nothing; the patch must say so too.
        return ensure(patch == b"[]", || {
            format!(
                "[{}] re-injection gave a non-empty patch: {}",
                setup.name,
                String::from_utf8_lossy(&patch)
            )
        });
    }
    // Narrowings, each Istio's own behaviour, applied only when the pods differ and the pod is in
    // the situation described; everything else must still be unchanged.
    //
    // 1. The user customized one of Istio's containers. On re-injection Istio lets the template
    //    win for it: `reapplyOverwrittenContainers` skips every container the status annotation
    //    lists ("we want to apply the new settings"), so template fields the
    //    user had overridden (resources, args, image …) revert.
    // 2. See [`records_probes_late`]: only the proxy's `ISTIO_KUBE_APP_PROBERS` may change.
    // 3. See [`cluster_env_moves`]: the cluster and network env vars may move, not change.
    let customized = declares_istio_container(&generated.pod);
    let late_probes = records_probes_late(&generated.pod, setup.status_port);
    let moved_env = cluster_env_moves(&injected);
    let comparable = |pod: &Value| {
        let mut pod = pod.clone();
        if customized {
            pod = without_istio_containers(&pod);
        }
        if late_probes {
            without_app_probers(&mut pod);
        }
        if moved_env {
            sort_cluster_env_last(&mut pod);
        }
        pod
    };
    let (injected, again) = (comparable(&injected), comparable(&again));
    ensure(again == injected, || {
        format!(
            "[{}] re-injection changed the pod{}:\n{}",
            setup.name,
            if customized || late_probes || moved_env {
                " beyond what Istio changes"
            } else {
                ""
            },
            difference(&injected, &again)
        )
    })
}

/// Istio's quirk with `status.sidecar.istio.io/port` (probe rewriting in `postProcessPod`): the
/// rewrite points
/// probes at the annotation's port, but the "already rewritten" check compares with the *mesh*
/// status port. A probe or lifecycle handler whose named port the container does not declare is
/// rewritten on the first injection but not recorded in `ISTIO_KUBE_APP_PROBERS` (unknown names
/// are skipped); on re-injection it no longer looks rewritten and is recorded then. Whether this
/// pod can hit that: the annotation differs from the mesh port (an unparseable one means 0) and
/// some app container has such a dangling named port.
fn records_probes_late(pod: &Value, mesh_status_port: i64) -> bool {
    let Some(port) = pod
        .pointer("/metadata/annotations/status.sidecar.istio.io~1port")
        .and_then(Value::as_str)
    else {
        return false;
    };
    if port.parse::<i64>().unwrap_or(0) == mesh_status_port {
        return false;
    }
    ["containers", "initContainers"].iter().any(|list| {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .any(|container| {
                let declared: Vec<&str> = container["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                let handlers = [
                    "/readinessProbe",
                    "/livenessProbe",
                    "/startupProbe",
                    "/lifecycle/preStop",
                    "/lifecycle/postStart",
                ];
                handlers.iter().any(|handler| {
                    ["/httpGet/port", "/tcpSocket/port"].iter().any(|port| {
                        container
                            .pointer(&format!("{handler}{port}"))
                            .and_then(Value::as_str)
                            .is_some_and(|name| !declared.contains(&name))
                    })
                })
            })
    })
}

/// The env vars `overwriteClusterInfo` moves: cluster and network from the values (or the URL
/// path, or the pod's network label).
const CLUSTER_ENV: [&str; 2] = ["ISTIO_META_CLUSTER_ID", "ISTIO_META_NETWORK"];

/// Istio's `overwriteClusterInfo` (in `postProcessPod`) removes the cluster and network env
/// vars from the proxy and appends them at the end, *before* post-processing appends
/// `ISTIO_PROMETHEUS_ANNOTATIONS` and `ISTIO_KUBE_APP_PROBERS`. On re-injection those two are
/// already there, so the cluster vars end up after them: same vars and values, another order.
/// Whether the injected pod's proxy has a cluster var followed by one of those two.
fn cluster_env_moves(pod: &Value) -> bool {
    proxy_env(pod).is_some_and(|env| {
        let is_cluster = |e: &Value| e["name"].as_str().is_some_and(|n| CLUSTER_ENV.contains(&n));
        let post_processing =
            |e: &Value| e["name"] == "ISTIO_PROMETHEUS_ANNOTATIONS" || e["name"] == "ISTIO_KUBE_APP_PROBERS";
        env.iter()
            .position(is_cluster)
            .is_some_and(|first| env[first..].iter().any(post_processing))
    })
}

fn proxy_env(pod: &Value) -> Option<&Vec<Value>> {
    ["containers", "initContainers"].iter().find_map(|list| {
        pod["spec"][list]
            .as_array()?
            .iter()
            .find(|c| c["name"] == "istio-proxy")?["env"]
            .as_array()
    })
}

/// Moves the cluster env vars to the end of the proxy's env (in name order).
fn sort_cluster_env_last(pod: &mut Value) {
    for list in ["containers", "initContainers"] {
        for container in pod["spec"][list].as_array_mut().into_iter().flatten() {
            if container["name"] == "istio-proxy"
                && let Some(env) = container["env"].as_array_mut()
            {
                let is_cluster = |e: &Value| e["name"].as_str().is_some_and(|n| CLUSTER_ENV.contains(&n));
                let (mut cluster, rest): (Vec<Value>, Vec<Value>) = env.drain(..).partition(is_cluster);
                cluster.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
                env.extend(rest);
                env.extend(cluster);
            }
        }
    }
}

/// Drops `ISTIO_KUBE_APP_PROBERS` from the proxy's env.
fn without_app_probers(pod: &mut Value) {
    for list in ["containers", "initContainers"] {
        for container in pod["spec"][list].as_array_mut().into_iter().flatten() {
            if container["name"] == "istio-proxy"
                && let Some(env) = container["env"].as_array_mut()
            {
                env.retain(|e| e["name"] != "ISTIO_KUBE_APP_PROBERS");
            }
        }
    }
}

/// Whether the pod declares a container with the name of one of Istio's (a customization).
fn declares_istio_container(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["name"].as_str().is_some_and(|n| ISTIO_CONTAINERS.contains(&n)))
    })
}

/// The pod without Istio's containers.
fn without_istio_containers(pod: &Value) -> Value {
    let mut pod = pod.clone();
    for list in ["containers", "initContainers"] {
        if let Some(items) = pod["spec"][list].as_array_mut() {
            items.retain(|c| !c["name"].as_str().is_some_and(|n| ISTIO_CONTAINERS.contains(&n)));
        }
    }
    pod
}

proptest! {
    #![proptest_config(config(16))]

    /// See [`check_reinjection`].
    #[test]
    fn reinjection_changes_nothing(generated in pod()) {
        for setup in SETUPS.iter() {
            check_reinjection(setup, &generated)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property 3: nothing of the user's is lost
// ---------------------------------------------------------------------------------------------

/// Annotations Istio rewrites or removes on purpose:
/// - `sidecar.istio.io/status` is rewritten by every injection (`postProcessPod`);
/// - `istio.io/rev` is the injector's revision, which the templates write over the pod's
///   (Istio's `sidecar` template: `istio.io/rev: {{ .Revision | default "default" }}`);
/// - the Prometheus scrape annotations (compared after label sanitizing) are replaced by the
///   agent's when metrics merging applies (`postProcessPod`);
/// - with CNI, `traffic.sidecar.istio.io/excludeInboundPorts` gains the status port
///   (the template function `excludeInboundPort`): every port the user listed must still be there.
///
/// `new` is the injected pod's value (`None` when removed).
fn annotation_may_change(key: &str, old: &Value, new: Option<&Value>) -> bool {
    if key == "traffic.sidecar.istio.io/excludeInboundPorts" {
        let ports = |v: &Value| -> BTreeSet<String> {
            v.as_str()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        };
        return new.is_some_and(|new| ports(old).is_subset(&ports(new)));
    }
    let sanitized: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    matches!(key, "sidecar.istio.io/status" | "istio.io/rev")
        || matches!(
            sanitized.as_str(),
            "prometheus_io_port"
                | "prometheus_io_path"
                | "prometheus_io_scrape"
                | "prometheus_istio_io_scrape_targets"
        )
}

/// Labels Istio's templates fill in with sprig's `default`, which treats an empty value as
/// missing: an *empty* `security.istio.io/tlsMode`, `service.istio.io/canonical-name` or
/// `service.istio.io/canonical-revision` becomes the template's default (`istio`, the app or
/// workload name, `latest`; Istio's `sidecar` template, `injection-template.yaml`). Non-empty values are kept.
fn label_may_change(key: &str, value: &Value) -> bool {
    value == ""
        && matches!(
            key,
            "security.istio.io/tlsMode"
                | "service.istio.io/canonical-name"
                | "service.istio.io/canonical-revision"
        )
}

/// Walks `original` and `injected` side by side: every object key of the original is still there
/// with a covering value, arrays keep their length, scalars are equal. Added keys are allowed (the
/// injector adds, and Go's marshaller adds zero values such as `resources: {}`). Resource
/// quantities may change to their canonical form (`0.5` → `500m`), which is the same quantity to
/// Kubernetes (Go's round trip of the merged pod writes it so).
fn covers(original: &Value, injected: &Value, path: &str) -> Result<(), String> {
    match (original, injected) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let inner = format!("{path}/{key}");
                match b.get(key) {
                    Some(other) => covers(value, other, &inner)?,
                    None => return Err(format!("{inner} was removed")),
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                covers(x, y, &format!("{path}/{i}"))?;
            }
            Ok(())
        }
        _ if original == injected => Ok(()),
        (Value::String(_) | Value::Number(_), Value::String(new)) if is_quantity_path(path) => {
            let text = match original {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if canonical(&text).as_deref() == Some(new.as_str()) {
                Ok(())
            } else {
                Err(format!("{path}: {original} became {injected}"))
            }
        }
        _ => Err(format!("{path}: {original} became {injected}")),
    }
}

fn is_quantity_path(path: &str) -> bool {
    path.contains("/resources/requests/")
        || path.contains("/resources/limits/")
        || path.ends_with("/sizeLimit")
        || path.ends_with("/divisor")
}

/// A probe or lifecycle handler rewritten to the agent (`postProcessPod`): its `httpGet`,
/// `tcpSocket` and `grpc` become one `httpGet` on the status port at `/<prefix>/<container>/…`;
/// every other field (delays, thresholds, unknown fields) is kept.
fn rewritten(
    original: &Value,
    injected: &Value,
    prefix: &str,
    status_port: i64,
    path: &str,
) -> Result<(), String> {
    let port_ok = injected.pointer("/httpGet/port").and_then(Value::as_i64) == Some(status_port);
    let path_ok = injected
        .pointer("/httpGet/path")
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with(prefix));
    if !(port_ok && path_ok) {
        return Err(format!(
            "{path}: {original} became {injected}, which is no rewrite"
        ));
    }
    let (Some(a), Some(b)) = (original.as_object(), injected.as_object()) else {
        return Err(format!("{path}: not an object"));
    };
    for (key, value) in a {
        if matches!(key.as_str(), "httpGet" | "tcpSocket" | "grpc") {
            continue;
        }
        match b.get(key) {
            Some(other) => covers(value, other, &format!("{path}/{key}"))?,
            None => return Err(format!("{path}/{key} was removed by the probe rewrite")),
        }
    }
    Ok(())
}

fn check_container(original: &Value, injected: &Value, path: &str, status_port: i64) -> Result<(), String> {
    let name = original["name"].as_str().unwrap_or_default();
    let (Some(a), Some(b)) = (original.as_object(), injected.as_object()) else {
        return covers(original, injected, path);
    };
    for (key, value) in a {
        let inner = format!("{path}/{key}");
        let Some(other) = b.get(key) else {
            return Err(format!("{inner} was removed"));
        };
        match key.as_str() {
            "readinessProbe" | "livenessProbe" | "startupProbe" => covers(value, other, &inner)
                .or_else(|_| rewritten(value, other, &format!("/app-health/{name}/"), status_port, &inner))?,
            "lifecycle" => {
                let (Some(x), Some(y)) = (value.as_object(), other.as_object()) else {
                    return covers(value, other, &inner);
                };
                for (hook, handler) in x {
                    let hook_path = format!("{inner}/{hook}");
                    let Some(new) = y.get(hook) else {
                        return Err(format!("{hook_path} was removed"));
                    };
                    covers(handler, new, &hook_path).or_else(|_| {
                        rewritten(
                            handler,
                            new,
                            &format!("/app-lifecycle/{name}/"),
                            status_port,
                            &hook_path,
                        )
                    })?;
                }
            }
            _ => covers(value, other, &inner)?,
        }
    }
    Ok(())
}

/// Named list items of the original are all in the injected list, in the same relative order,
/// each covered (containers also allow probe rewrites). Items with Istio's names are Istio's.
/// `status_port` is given for container lists (the port rewritten probes point at), `None` for
/// other lists.
fn check_named_list(
    original: &Value,
    injected: &Value,
    path: &str,
    status_port: Option<i64>,
) -> Result<(), String> {
    let containers = status_port.is_some();
    let empty = Vec::new();
    let before = original.as_array().unwrap_or(&empty);
    let after = injected.as_array().unwrap_or(&empty);
    let user = |items: &Vec<Value>| -> Vec<String> {
        items
            .iter()
            .filter_map(|i| i["name"].as_str())
            .filter(|n| !containers || !ISTIO_CONTAINERS.contains(n))
            .map(str::to_owned)
            .collect()
    };
    let names_before = user(before);
    let names_after: Vec<String> = user(after)
        .into_iter()
        .filter(|n| names_before.contains(n))
        .collect();
    if names_before != names_after {
        return Err(format!(
            "{path}: the user's items were {names_before:?}, now {names_after:?}"
        ));
    }
    for item in before {
        let Some(name) = item["name"].as_str() else {
            continue;
        };
        if containers && ISTIO_CONTAINERS.contains(&name) {
            continue;
        }
        let found = after
            .iter()
            .find(|i| i["name"].as_str() == Some(name))
            .ok_or_else(|| format!("{path}: {name} was removed"))?;
        let inner = format!("{path}/{name}");
        if let Some(port) = status_port {
            check_container(item, found, &inner, port)?;
        } else {
            covers(item, found, &inner)?;
        }
    }
    Ok(())
}

/// Everything of the pod as received is in the injected pod, unchanged, except Istio's own
/// rewrites; see [`unknown_fields_survive_and_nothing_of_the_user_is_removed`].
fn check_preserved(received: &Value, injected: &Value, status_port: i64) -> Result<(), String> {
    let (Some(a), Some(b)) = (received.as_object(), injected.as_object()) else {
        return Err("not objects".to_owned());
    };
    for (key, value) in a {
        let Some(other) = b.get(key) else {
            return Err(format!("/{key} was removed"));
        };
        match key.as_str() {
            "metadata" => {
                for (field, value) in value.as_object().into_iter().flatten() {
                    let path = format!("/metadata/{field}");
                    let other = other.get(field).ok_or_else(|| format!("{path} was removed"))?;
                    match field.as_str() {
                        "annotations" => {
                            for (k, v) in value.as_object().into_iter().flatten() {
                                let new = other.get(k);
                                if annotation_may_change(k, v, new) {
                                    continue;
                                }
                                if new != Some(v) {
                                    return Err(format!("{path}/{k}: {v} became {new:?}"));
                                }
                            }
                        }
                        "labels" => {
                            for (k, v) in value.as_object().into_iter().flatten() {
                                if label_may_change(k, v) {
                                    continue;
                                }
                                let new = other.get(k);
                                if new != Some(v) {
                                    return Err(format!("{path}/{k}: {v} became {new:?}"));
                                }
                            }
                        }
                        _ => covers(value, other, &path)?,
                    }
                }
            }
            "spec" => {
                for (field, value) in value.as_object().into_iter().flatten() {
                    let path = format!("/spec/{field}");
                    let other = other.get(field).ok_or_else(|| format!("{path} was removed"))?;
                    match field.as_str() {
                        "containers" | "initContainers" => {
                            check_named_list(value, other, &path, Some(status_port))?
                        }
                        "volumes" | "imagePullSecrets" => check_named_list(value, other, &path, None)?,
                        _ => covers(value, other, &path)?,
                    }
                }
            }
            _ => covers(value, other, &format!("/{key}"))?,
        }
    }
    Ok(())
}

/// The patch's own operations: outside arrays, a `remove` or `replace` only ever targets an
/// annotation or label Istio rewrites ([`annotation_may_change`], [`label_may_change`]). Inside arrays the diff is positional
/// (`createPatch`: an item inserted before the user's shifts them into element-wise ops), so
/// those are judged on the resulting pod by [`check_preserved`] instead.
fn check_patch_ops(base: &Value, patch: &[u8]) -> Result<(), String> {
    let ops: Vec<Value> = serde_json::from_slice(patch).map_err(|e| format!("the patch is not JSON: {e}"))?;
    for op in &ops {
        let kind = op["op"].as_str().unwrap_or_default();
        if kind == "add" {
            continue;
        }
        let path = op["path"].as_str().unwrap_or_default();
        let segments: Vec<String> = path
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        let mut node = base;
        let mut positional = false;
        for segment in &segments {
            if node.is_array() {
                positional = true;
                break;
            }
            match node.get(segment) {
                Some(next) => node = next,
                None => break,
            }
        }
        if positional || node.is_array() {
            continue;
        }
        if let [metadata, map, key] = segments.as_slice()
            && metadata == "metadata"
            && ((map == "annotations" && annotation_may_change(key, node, op.get("value")))
                || (map == "labels" && label_may_change(key, node)))
        {
            continue;
        }
        return Err(format!(
            "the patch has `{kind} {path}`, which Istio does not rewrite"
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    /// Fields our schema does not model (random `x-prop-*` keys at pod, metadata, spec, container,
    /// volume, probe and owner-reference level), unknown keys and values inside known maps
    /// (labels, annotations, node selectors, extended resources), and everything else the user
    /// wrote are present and unchanged in the injected pod. Since the patch yields exactly the
    /// injected pod (property 1), this is the patch never removing or replacing what the injector
    /// did not put there. It is checked on the pod rather than on the patch ops because the patch
    /// diffs containers and volumes by index: a proxy inserted before the user's containers turns
    /// into element-wise `replace` ops that move, not change, the user's data.
    ///
    /// What Istio changes on purpose, and is therefore allowed:
    /// - added keys anywhere (the injection, and the zero values Go's marshaller writes:
    ///   `creationTimestamp: null`, `resources: {}`, `status: {}`);
    /// - quantities in canonical form (`0.5` → `500m`, as Go's round trip writes them);
    /// - Istio's containers (`istio-proxy`, `istio-init`, `istio-validation`,
    ///   `enable-core-dump`), which a user declares only to customize (`reapplyOverwrittenContainers`); the
    ///   user's other containers, volumes and pull secrets keep their relative order;
    /// - probe and lifecycle handlers rewritten to the agent (`postProcessPod`);
    /// - the status, revision and Prometheus annotations ([`annotation_may_change`]), and empty
    ///   Istio labels the templates default ([`label_may_change`]).
    ///
    /// The patch ops themselves are checked too where they are not positional
    /// ([`check_patch_ops`]).
    #[test]
    fn unknown_fields_survive_and_nothing_of_the_user_is_removed(generated in pod()) {
        for setup in SETUPS.iter() {
            let outcome = setup
                .injector
                .inject(&request(&generated.pod, &generated.namespace))
                .map_err(|e| TestCaseError::fail(format!("[{}] a valid pod was refused: {e}", setup.name)))?;
            if let Outcome::Injected { pod, patch, .. } = outcome {
                let base = as_diffed(&generated.pod, &generated.namespace);
                // Rewritten probes point at the annotation's port when there is one (Istio's quirk).
                let port = generated
                    .pod
                    .pointer("/metadata/annotations/status.sidecar.istio.io~1port")
                    .and_then(Value::as_str)
                    .map_or(setup.status_port, |p| p.parse().unwrap_or(0));
                check_preserved(&base, &pod, port)
                    .and_then(|()| check_patch_ops(&base, &patch))
                    .map_err(|e| TestCaseError::fail(format!("[{}] {e}", setup.name)))?;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property 4: invalid annotations
// ---------------------------------------------------------------------------------------------

/// Invalid values for annotations Istio validates (`validateAnnotations`, before rendering).
const INVALID: [(&str, &str); 9] = [
    ("sidecar.istio.io/interceptionMode", "BOGUS"),
    ("traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0/33"),
    ("traffic.sidecar.istio.io/excludeOutboundIPRanges", "*"),
    ("traffic.sidecar.istio.io/includeInboundPorts", "http"),
    ("traffic.sidecar.istio.io/excludeInboundPorts", "70000"),
    ("status.sidecar.istio.io/port", "-1"),
    ("prometheus.istio.io/merge-metrics", "maybe"),
    ("sidecar.istio.io/proxyCPU", "lots"),
    ("proxy.istio.io/config", "concurrency: [1"),
];

proptest! {
    #![proptest_config(config(24))]

    /// A pod that must be injected but carries an invalid annotation value is refused with
    /// Istio's `invalid value '<v>' for annotation '<name>'`, whatever else the pod holds: the
    /// user sees which annotation is wrong, and the engine neither panics nor injects a pod with
    /// settings it could not understand.
    #[test]
    fn invalid_annotations_are_rejected_in_istios_words(
        generated in pod(),
        (key, value) in prop::sample::select(&INVALID[..]),
    ) {
        let mut pod = generated.pod.clone();
        pod["spec"]["hostNetwork"] = false.into();
        pod["metadata"]["labels"]["sidecar.istio.io/inject"] = "true".into();
        pod["metadata"]["annotations"][key] = value.into();
        for setup in SETUPS.iter() {
            match setup.injector.inject(&request(&pod, &generated.namespace)) {
                Err(e) => prop_assert!(
                    e.0.contains(&format!("invalid value '{value}' for annotation '{key}'")),
                    "[{}] unexpected message: {}", setup.name, e.0
                ),
                Ok(_) => prop_assert!(false, "[{}] {key}={value:?} was accepted", setup.name),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property 5: never panic
// ---------------------------------------------------------------------------------------------

/// Keys the engine looks at, so that arbitrary JSON reaches deep into the pipeline.
const VOCABULARY: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "name",
    "namespace",
    "generateName",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "uid",
    "managedFields",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "value",
    "valueFrom",
    "fieldRef",
    "resources",
    "limits",
    "requests",
    "cpu",
    "memory",
    "readinessProbe",
    "livenessProbe",
    "startupProbe",
    "httpGet",
    "tcpSocket",
    "grpc",
    "exec",
    "port",
    "path",
    "scheme",
    "lifecycle",
    "preStop",
    "postStart",
    "volumes",
    "volumeMounts",
    "mountPath",
    "emptyDir",
    "securityContext",
    "runAsUser",
    "runAsGroup",
    "hostNetwork",
    "imagePullSecrets",
    "restartPolicy",
    "args",
    "command",
    "sidecar.istio.io/status",
    "proxy.istio.io/overrides",
    "proxy.istio.io/config",
    "sidecar.istio.io/inject",
    "prometheus.io/port",
    "prometheus.io/scrape",
    "sidecar.istio.io/rewriteAppHTTPProbers",
    "status.sidecar.istio.io/port",
    "inject.istio.io/templates",
    "sidecar.istio.io/nativeSidecar",
    "sidecar.istio.io/proxyCPU",
    "$patch",
    "$retainKeys",
    "istio-proxy",
    "istio-init",
];

/// Annotations the engine reads and parses.
const ENGINE_ANNOTATIONS: &[&str] = &[
    "sidecar.istio.io/status",
    "proxy.istio.io/overrides",
    "proxy.istio.io/config",
    "sidecar.istio.io/inject",
    "sidecar.istio.io/interceptionMode",
    "status.sidecar.istio.io/port",
    "readiness.status.sidecar.istio.io/periodSeconds",
    "traffic.sidecar.istio.io/includeOutboundIPRanges",
    "traffic.sidecar.istio.io/excludeInboundPorts",
    "prometheus.io/port",
    "prometheus.io/scrape",
    "prometheus.io/path",
    "prometheus.istio.io/merge-metrics",
    "prometheus.istio.io/scrape-targets",
    "sidecar.istio.io/rewriteAppHTTPProbers",
    "sidecar.istio.io/nativeSidecar",
    "inject.istio.io/templates",
    "sidecar.istio.io/proxyCPU",
    "sidecar.istio.io/proxyMemoryLimit",
    "sidecar.istio.io/proxyImageType",
    "sidecar.istio.io/userVolume",
    "sidecar.istio.io/userVolumeMount",
    "sidecar.istio.io/bootstrapOverride",
    "kubectl.kubernetes.io/default-container",
];

/// Strings the engine parses: JSON in annotations, quantities, ports, YAML.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,12}",
        prop::sample::select(
            &[
                "",
                "true",
                "false",
                "0",
                "-1",
                "15020",
                "99999999999999999999",
                "1e400",
                "0.5",
                "1Gi",
                "auto",
                "istio-proxy",
                "{}",
                "[]",
                "null",
                "{\"containers\":[\"x\"]}",
                "{\"containers\":[{\"name\":\"istio-proxy\",\"image\":5}]}",
                "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":null}",
                "{\"containers\":[{\"name\":\"istio-proxy\",\"image\":\"auto\"}]}",
                "holdApplicationUntilProxyStarts: true",
                "concurrency: x",
                "{{ .Values }}",
                "a: [",
                "~",
                "http",
                "TPROXY",
                "*",
                "10.0.0.0/8",
                "8080:/metrics,9090",
                ":",
                "0:",
                "65536",
                "[{\"name\":\"v\",\"emptyDir\":{}}]",
                "{\"v\":{\"mountPath\":5}}",
                "sidecar,sidecar",
                "sidecar,nope",
                "distroless",
                "{\"initContainers\":5}",
                "{\"containers\":{}}",
            ][..]
        )
        .prop_map(str::to_owned),
    ]
}

fn hostile_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(&[1e308, -1e308, 0.5, -0.0, 1e-300, 2147483648.0, 4294967296.5][..])
            .prop_map(Value::from),
        tricky_string().prop_map(Value::from),
    ];
    let key =
        prop_oneof![3 => prop::sample::select(VOCABULARY).prop_map(str::to_owned), 1 => "[a-zA-Z$/.~]{1,8}"];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn run_without_panicking(pod: &Value, namespace: Option<&str>) {
    for setup in SETUPS.iter() {
        let request = Request {
            pod: Some(pod),
            namespace,
            ..Request::default()
        };
        // Ok or Err are both fine; a panic fails the property (proptest catches and shrinks it).
        let _ = setup.injector.inject(&request);
        // The path that re-injects without deciding must hold too.
        let _ = setup.injector.inject_pod(pod, &request);
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Any JSON object (random nesting, wrong types where the schema expects others, huge
    /// numbers, garbage in the annotations the engine parses) gives `Ok` or `Err`, never a panic:
    /// a panicking webhook fails every admission it serves (or, with `failurePolicy: Ignore`,
    /// silently admits pods without a proxy).
    #[test]
    fn arbitrary_json_never_panics(
        object in prop::collection::btree_map(
            prop_oneof![3 => prop::sample::select(VOCABULARY).prop_map(str::to_owned), 1 => "[a-z]{1,6}"],
            hostile_json(),
            0..6,
        ),
        namespace in prop::option::of(prop::sample::select(&["shop", "", "kube-system"][..])),
    ) {
        let pod = Value::Object(object.into_iter().collect());
        run_without_panicking(&pod, namespace);
    }

    /// A realistic pod whose annotations the engine parses (status, overrides, ProxyConfig, ports,
    /// Prometheus, templates …) hold garbage: JSON of the wrong shape, YAML that does not parse,
    /// out-of-range numbers. Each is an `Err` in Istio's words or ignored, never a panic.
    #[test]
    fn hostile_annotations_never_panic(
        generated in pod(),
        hostile in prop::collection::btree_map(
            prop::sample::select(ENGINE_ANNOTATIONS),
            tricky_string(),
            1..4,
        ),
    ) {
        let mut pod = generated.pod.clone();
        for (key, value) in hostile {
            pod["metadata"]["annotations"][key] = value.into();
        }
        run_without_panicking(&pod, Some(&generated.namespace));
    }

    /// A realistic pod with one value somewhere replaced by a value of another type or a huge
    /// number (`containers: "x"`, `ports: [1]`, `containerPort: 1e308`): reaches every stage with
    /// one thing wrong, and must still answer `Ok` or `Err`.
    #[test]
    fn mistyped_pods_never_panic(
        generated in pod(),
        route in prop::collection::vec(any::<prop::sample::Index>(), 1..7),
        replacement in hostile_json(),
    ) {
        let mut pod = generated.pod.clone();
        // Walk down `route` (each step picks a key or an element), then replace that node.
        let mut pointer = String::new();
        let mut node = &pod;
        for step in &route {
            let next = match node {
                Value::Object(map) if !map.is_empty() => map
                    .iter()
                    .nth(step.index(map.len()))
                    .map(|(key, value)| (key.replace('~', "~0").replace('/', "~1"), value)),
                Value::Array(items) if !items.is_empty() => {
                    let i = step.index(items.len());
                    items.get(i).map(|value| (i.to_string(), value))
                }
                _ => None,
            };
            let Some((segment, value)) = next else {
                break;
            };
            pointer.push('/');
            pointer.push_str(&segment);
            node = value;
        }
        if let Some(node) = pod.pointer_mut(&pointer) {
            *node = replacement;
        }
        run_without_panicking(&pod, Some(&generated.namespace));
    }
}

// ---------------------------------------------------------------------------------------------
// Property 6: renders shared by pods that are their own owner
// ---------------------------------------------------------------------------------------------

/// The outcome of an injection as text: the patch, the decision to skip, or the error.
fn outcome_text(outcome: Result<Outcome, InjectError>) -> String {
    match outcome {
        Ok(Outcome::Injected { patch, .. }) => String::from_utf8_lossy(&patch).into_owned(),
        Ok(Outcome::Skipped { decision }) => format!("skipped: {:?}", decision.rule),
        Err(error) => format!("error: {error}"),
    }
}

/// Pods named like a StatefulSet's (no `generateName`: by Istio's rule each is its own owner and
/// the workload is named after it) share a render made with a stand-in for the name; each must
/// get what rendering with its own name gives.
fn check_own_name(setup: &Setup, generated: &Generated) -> Result<(), TestCaseError> {
    for name in ["db-0", "db-1", "web.db-12", "7", "db-0"] {
        let mut pod = generated.pod.clone();
        if let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.shift_remove("generateName");
            metadata.insert("name".to_owned(), json!(name));
        }
        let (shared, rendered) = (
            outcome_text(
                setup
                    .cache
                    .inject(&setup.injector, &request(&pod, &generated.namespace)),
            ),
            outcome_text(setup.injector.inject(&request(&pod, &generated.namespace))),
        );
        ensure(shared == rendered, || {
            format!(
                "[{}] pod {name}: the render cache gave\n{shared}\nrendering gave\n{rendered}",
                setup.name
            )
        })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    /// See [`check_own_name`].
    #[test]
    fn pods_that_are_their_own_owner_get_what_rendering_gives(generated in pod()) {
        for setup in SETUPS.iter() {
            check_own_name(setup, &generated)?;
        }
    }
}
