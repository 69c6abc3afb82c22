//! The engine benchmark's injections (`benches/inject.rs`) measured in thread CPU time, which
//! other processes on a busy machine disturb far less than wall time: for each pod, the best and
//! the mean of five rounds, in µs per injection.
//!
//! `cargo run --release -p injector-engine --example inject_cpu [POD] [ROUNDS_SCALE]` (`POD`: a
//! prefix of `typical pod`, `64 KB`, `2000 env`, `typical pod (embedded default)`; `all` by
//! default; `RENDER_CACHE=0` without the render cache). The first three need Istio's derived
//! settings (`SIDECAR_INJECTOR_SHARED`, default `../shared` beside the checkout); the last runs the
//! project's embedded default configuration.
//!
//! `inject_cpu distinct FILE` injects the pods of a file of AdmissionReviews (one per line,
//! `bench/reviews.py`'s `distinct.jsonl`) in turn, five rounds over the file, with Istio's
//! settings, and prints the CPU per injection and how many renders the render cache holds.
//! Every injection goes through the render cache, as `serve` runs it (`RENDER_CACHE=0`: without).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use injector_engine::Request;
use pods::Engine;

#[path = "../benches/pods.rs"]
mod pods;

/// Injections per round for the typical pod; the large pods run a tenth as many.
const TYPICAL_PER_ROUND: u32 = 400;
const ROUNDS: u32 = 5;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("distinct") {
        let Some(path) = std::env::args().nth(2) else {
            eprintln!("usage: inject_cpu distinct FILE");
            std::process::exit(2);
        };
        distinct(&path);
        return;
    }
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

/// One injection of `request`.
fn run_once(injector: &Engine, request: &Request<'_>) {
    std::hint::black_box(injector.inject(std::hint::black_box(request)).ok());
}

/// Prints the best and the mean of [`ROUNDS`] rounds of `per_round` injections of `pod`.
fn measure(name: &str, injector: &Engine, pod: &serde_json::Value, per_round: u32) {
    let Some(request) = pods::injected_request(injector, pod) else {
        eprintln!("{name}: not injected");
        std::process::exit(1);
    };
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let start = cpu_time::ThreadTime::now();
        for _ in 0..per_round {
            run_once(injector, &request);
        }
        rounds.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(per_round));
    }
    let best = rounds.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = rounds.iter().sum::<f64>() / rounds.len() as f64;
    println!("{name}: CPU per injection best {best:.0} µs, mean {mean:.0} µs");
}

/// CPU per injection over the distinct pods of `path`, in turn.
fn distinct(path: &str) {
    let reviews: Vec<serde_json::Value> = match std::fs::read_to_string(path) {
        Ok(text) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        Err(error) => {
            eprintln!("{path}: {error}");
            std::process::exit(1);
        }
    };
    let Some(injector) = pods::injector() else {
        eprintln!("Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED)");
        std::process::exit(1);
    };
    let requests: Vec<_> = reviews
        .iter()
        .map(|r| Request {
            pod: r.pointer("/request/object"),
            namespace: r
                .pointer("/request/namespace")
                .and_then(serde_json::Value::as_str),
            ..Default::default()
        })
        .collect();
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let start = cpu_time::ThreadTime::now();
        for request in &requests {
            run_once(&injector, request);
        }
        rounds.push(start.elapsed().as_secs_f64() * 1e6 / requests.len() as f64);
    }
    let best = rounds.iter().copied().fold(f64::INFINITY, f64::min);
    let first = rounds[0];
    println!(
        "{} distinct reviews: CPU per injection first round {first:.0} µs, best {best:.0} µs; renders cached {} ({} KiB)",
        requests.len(),
        injector.cache.len(),
        injector.cache.bytes() >> 10
    );
}
