//! How many steps (range iterations and template calls, [`gotemplate::Template::max_steps`])
//! Istio's injection templates and the embedded default take on the largest pods the API server
//! stores: the measure behind [`injector_engine::render::TEMPLATE_STEP_BUDGET`].
//!
//! `cargo run --release -p injector-engine --example template_steps`
//!
//! A pod is at most about 1.5 MiB (etcd's default request limit), and its annotations at most
//! 256 KiB together (the API server's validation). Each pod below fills that room with what one
//! of the templates ranges over: containers, ports, the user volume mounts and the proxy metadata
//! an annotation holds. Rendering a 1.5 MiB pod takes seconds (sprig's `append` copies its list,
//! and Istio's template appends every container's name), so each pod is measured at a twentieth
//! and a tenth of its size, and the count extrapolated: it grows linearly when the two agree.

use std::sync::Arc;

use gotemplate::{ExecErrorKind, Template};
use injector_engine::render::{RenderSettings, TemplateInput, parse_template, sidecar_template_data};
use serde_json::{Value, json};

/// The largest pod object, in bytes.
const MAX_POD_BYTES: usize = 1536 * 1024;
/// The largest annotations, in bytes.
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

fn main() {
    let shared = std::env::var("SIDECAR_INJECTOR_SHARED").unwrap_or_else(|_| "../shared".to_owned());
    let derived = std::path::Path::new(&shared).join("istio/derived");
    let read = |path: &str| std::fs::read_to_string(derived.join(path)).ok();
    let mut configs = vec![("embedded", injector_engine::embedded_settings().ok())];
    if let (Some(config), Some(values), Some(mesh)) = (
        read("config/default.yaml"),
        read("values/default.json"),
        read("mesh/default.yaml"),
    ) {
        let settings = injector_core::config::parse_injector_config(&config)
            .ok()
            .map(|parsed| parsed.config)
            .zip(injector_engine::settings::parse_values(&values).ok())
            .zip(injector_engine::settings::parse_mesh(&mesh).ok())
            .map(|((config, values), mesh)| (config, values, mesh));
        configs.push(("istio", settings));
    } else {
        eprintln!(
            "Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED): only the embedded default"
        );
    }
    println!(
        "steps at full size (a 20th and a 10th measured); budget {}",
        injector_engine::render::TEMPLATE_STEP_BUDGET
    );
    let mut worst = 0;
    for (config_name, settings) in configs {
        let Some((config, values, mesh)) = settings else {
            eprintln!("{config_name}: the settings do not load");
            continue;
        };
        let settings = RenderSettings::new(mesh, values, "default", "");
        // The templates a pod can select (the gateway controller renders the others).
        for (name, text) in config
            .templates
            .iter()
            .filter(|(name, _)| ["sidecar", "gateway", "grpc-agent", "grpc-simple"].contains(&name.as_str()))
        {
            let Ok(template) = parse_template(text) else {
                eprintln!("{config_name}/{name}: does not parse");
                continue;
            };
            for (shape, make) in SHAPES {
                let [twentieth, tenth] = [20, 10].map(|part| {
                    let pod = make(part);
                    let input = TemplateInput::for_pod(&settings, Arc::new(pod), true, 1337, 1337)
                        .expect("a valid ProxyConfig");
                    steps(&template, &sidecar_template_data(input))
                });
                let full = tenth * 10;
                let linear = tenth.abs_diff(twentieth * 2) <= tenth / 20 + 10;
                worst = worst.max(full);
                println!(
                    "{config_name:>8} {name:<12} {shape:<34} {twentieth:>8} {tenth:>8} -> {full:>9}{}",
                    if linear { "" } else { "  (not linear)" }
                );
            }
        }
    }
    println!("most steps of a template on a full-size pod: {worst}");
}

/// The fewest steps the template needs on `data`: a binary search over its step budget.
fn steps(template: &Template, data: &gotemplate::Value) -> u64 {
    let over = |max: u64| match template.clone().max_steps(max).execute(data) {
        Err(e) if e.kind == ExecErrorKind::StepBudget => true,
        Err(e) if max > 0 => {
            eprintln!("the template fails: {e}");
            std::process::exit(1);
        }
        _ => false,
    };
    if !over(0) {
        return 0;
    }
    let (mut low, mut high) = (0, 1);
    while over(high) {
        low = high;
        high *= 2;
    }
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if over(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

type Shape = (&'static str, fn(usize) -> Value);

/// Pods filling `1/part` of the room with one kind of item.
const SHAPES: &[Shape] = &[
    ("containers (40,000 at full size)", |part| {
        let n = MAX_POD_BYTES / 38 / part;
        pod(
            json!({}),
            (0..n)
                .map(|i| json!({"name": format!("c{i}"), "image": "x"}))
                .collect(),
        )
    }),
    ("ports of one container", |part| {
        let n = MAX_POD_BYTES / 22 / part;
        let ports: Vec<Value> = (0..n).map(|i| json!({"containerPort": i % 65535 + 1})).collect();
        pod(
            json!({}),
            vec![json!({"name": "app", "image": "x", "ports": ports})],
        )
    }),
    ("userVolumeMount entries", |part| {
        let n = MAX_ANNOTATION_BYTES / 45 / part;
        let mounts: serde_json::Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("v{i}"),
                    json!({"name": format!("v{i}"), "mountPath": "/m"}),
                )
            })
            .collect();
        pod(
            json!({"sidecar.istio.io/userVolumeMount": Value::Object(mounts).to_string()}),
            vec![json!({"name": "app", "image": "x"})],
        )
    }),
    ("proxyMetadata entries", |part| {
        let n = MAX_ANNOTATION_BYTES / 12 / part;
        let metadata: serde_json::Map<String, Value> =
            (0..n).map(|i| (format!("K{i}"), json!("v"))).collect();
        pod(
            json!({"proxy.istio.io/config": json!({"proxyMetadata": metadata}).to_string()}),
            vec![json!({"name": "app", "image": "x"})],
        )
    }),
];

fn pod(annotations: Value, containers: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "big", "namespace": "shop", "annotations": annotations},
        "spec": {"containers": containers}})
}
