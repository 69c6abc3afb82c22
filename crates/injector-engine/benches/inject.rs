//! The whole injection (`Injector::inject`: decide, render, merge, post-process, patch) with
//! Istio's default chart configuration, for three pods: a typical one-container pod, a pod of about
//! 64 KB, and a pod with 2,000 env vars. Istio's own injector once needed 22 s for the second and
//! still about 0.9 s for the third.
//!
//! Needs Istio's derived settings from the shared corpus (`SIDECAR_INJECTOR_SHARED`, default
//! `../shared` beside the checkout); without them the benchmark says so and measures nothing.
//!
//! On a machine shared with other work, `cargo run --release -p injector-engine --example
//! inject_cpu` measures the same injections in thread CPU time, which load disturbs far less.
//!
//! It runs on mimalloc, the allocator of the `sidecar-injector` binary, so it measures what
//! `serve` and `inject` run (delete the `#[global_allocator]` item to compare with glibc malloc).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use injector_engine::pipeline::{Outcome, Request};

mod pods;

fn bench(c: &mut Criterion) {
    let Some(injector) = pods::injector() else {
        eprintln!("Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED): nothing measured");
        return;
    };
    let pods = pods::measured_pods();
    for (name, pod) in &pods {
        eprintln!("{name}: {} B", pod.to_string().len());
    }
    for (name, pod) in &pods {
        let request = Request {
            pod: Some(pod),
            namespace: Some("shop"),
            ..Request::default()
        };
        assert!(
            matches!(injector.inject(&request), Ok(Outcome::Injected { .. })),
            "{name} must be injected"
        );
        c.bench_function(&format!("inject {name}"), |b| {
            b.iter(|| black_box(injector.inject(black_box(&request))))
        });
    }
}

#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, bench);
}
use group::benches;
criterion_main!(benches);
