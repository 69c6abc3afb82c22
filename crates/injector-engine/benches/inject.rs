//! The whole injection (`RenderCache::inject`, as `serve` runs it: decide, render, merge, post-process, patch) with
//! Istio's default chart configuration, for three pods: a typical one-container pod, a pod of about
//! 64 KB, and a pod with 2,000 env vars. Istio's own injector once needed 22 s for the second and
//! still about 0.9 s for the third.
//!
//! A fourth measurement injects the typical pod with the project's embedded default configuration,
//! what `serve` and `inject` run without flags.
//!
//! Needs Istio's derived settings from the shared corpus (`SIDECAR_INJECTOR_SHARED`, default
//! `../shared` beside the checkout); without them the benchmark says so and measures only the
//! embedded default.
//!
//! On a machine shared with other work, `cargo run --release -p injector-engine --example
//! inject_cpu` measures the same injections in thread CPU time, which load disturbs far less.
//!
//! It runs on mimalloc, the allocator of the `sidecar-injector` binary, so it measures what
//! `serve` and `inject` run (delete the `#[global_allocator]` item to compare with glibc malloc).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, black_box, criterion_group, criterion_main};

mod pods;

fn bench(c: &mut Criterion) {
    let pods = pods::measured_pods();
    for (name, pod) in &pods {
        eprintln!("{name}: {} B", pod.to_string().len());
    }
    match pods::injector() {
        Some(injector) => {
            for (name, pod) in &pods {
                bench_pod(c, &format!("inject {name}"), &injector, pod);
            }
        }
        None => eprintln!(
            "Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED): Istio's template not measured"
        ),
    }
    // What `serve` and `inject` run without flags.
    let [(_, typical), ..] = &pods;
    match pods::embedded_injector() {
        Ok(injector) => bench_pod(c, "inject typical pod (embedded default)", &injector, typical),
        Err(error) => eprintln!("the embedded default configuration does not load: {error}"),
    }
}

fn bench_pod(c: &mut Criterion, id: &str, injector: &pods::Engine, pod: &serde_json::Value) {
    let request = pods::injected_request(injector, pod);
    assert!(request.is_some(), "{id}: the pod must be injected");
    let Some(request) = request else {
        return;
    };
    c.bench_function(id, |b| b.iter(|| black_box(injector.inject(black_box(&request)))));
}

#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, bench);
}
use group::benches;
criterion_main!(benches);
