//! The engine benchmark's injections (`benches/inject.rs`) measured in thread CPU time, which
//! other processes on a busy machine disturb far less than wall time: for each pod, the best and
//! the mean of five rounds, in µs per injection.
//!
//! `cargo run --release -p injector-engine --example inject_cpu [POD] [ROUNDS_SCALE]` (`POD`: a
//! prefix of `typical pod`, `64 KB`, `2000 env`, `typical pod (embedded default)`; `all` by
//! default; `RENDER_CACHE=0` without the render cache). The first three need Istio's derived
//! settings (`SIDECAR_INJECTOR_SHARED`, default `../shared` beside the checkout); the last runs the
//! project's embedded default configuration.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use injector_engine::pipeline::Injector;

#[path = "../benches/pods.rs"]
mod pods;

/// Injections per round for the typical pod; the large pods run a tenth as many.
const TYPICAL_PER_ROUND: u32 = 400;
const ROUNDS: u32 = 5;

fn main() {
    let only = std::env::args().nth(1).filter(|arg| arg != "all");
    let scale: u32 = std::env::args()
        .nth(2)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1)
        .max(1);
    let wanted = |name: &str| {
        only.as_ref()
            .is_none_or(|prefix| name.starts_with(prefix.as_str()))
    };
    let pods = pods::measured_pods();
    match pods::injector() {
        Some(injector) => {
            for (name, pod) in pods.iter().filter(|(name, _)| wanted(name)) {
                let per_round = if *name == "typical pod" {
                    TYPICAL_PER_ROUND
                } else {
                    TYPICAL_PER_ROUND / 10
                };
                measure(name, &injector, pod, per_round * scale);
            }
        }
        None => eprintln!(
            "Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED): Istio's template not measured"
        ),
    }
    let name = "typical pod (embedded default)";
    if wanted(name) {
        let [(_, typical), ..] = &pods;
        match pods::embedded_injector() {
            Ok(injector) => measure(name, &injector, typical, TYPICAL_PER_ROUND * scale),
            Err(error) => {
                eprintln!("the embedded default configuration does not load: {error}");
                std::process::exit(1);
            }
        }
    }
}

/// Prints the best and the mean of [`ROUNDS`] rounds of `per_round` injections of `pod`.
fn measure(name: &str, injector: &Injector, pod: &serde_json::Value, per_round: u32) {
    let Some(request) = pods::injected_request(injector, pod) else {
        eprintln!("{name}: not injected");
        std::process::exit(1);
    };
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let start = cpu_time::ThreadTime::now();
        for _ in 0..per_round {
            std::hint::black_box(injector.inject(std::hint::black_box(&request)).ok());
        }
        rounds.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(per_round));
    }
    let best = rounds.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = rounds.iter().sum::<f64>() / rounds.len() as f64;
    println!("{name}: CPU per injection best {best:.0} µs, mean {mean:.0} µs");
}
