//! Parsing a rendered Istio sidecar template (`tests/data/istio-sidecar-rendered.yaml`) into a
//! `serde_json::Value`: the fast path alone, `serde-saphyr` alone, and `parse_documents` (what the
//! injection calls: split, fast path, fallback).
//!
//! Each is measured twice: in wall time, and in the benchmark thread's CPU time, which stays
//! meaningful on a machine shared with other builds (wall time there mostly measures the load).

// criterion_group! generates undocumented items.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{
    Criterion, black_box, criterion_group, criterion_main,
    measurement::{Measurement, ValueFormatter, WallTime},
};
use injector_core::yaml::{fast, parse_documents, parse_with_serde_saphyr, split_documents};

const RENDERED: &str = include_str!("../tests/data/istio-sidecar-rendered.yaml");

/// CPU time of the benchmark thread.
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = cpu_time::ThreadTime;
    type Value = Duration;

    fn start(&self) -> Self::Intermediate {
        cpu_time::ThreadTime::now()
    }

    fn end(&self, started: Self::Intermediate) -> Self::Value {
        started.elapsed()
    }

    fn add(&self, a: &Self::Value, b: &Self::Value) -> Self::Value {
        *a + *b
    }

    fn zero(&self) -> Self::Value {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Self::Value) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        // Values are nanoseconds, as with wall time: reuse its formatting.
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

fn bench_with<M: Measurement + 'static>(c: &mut Criterion<M>, clock: &str) {
    let documents = split_documents(RENDERED).unwrap_or_default();
    let Some(document) = documents.iter().find(|d| !d.is_blank()) else {
        eprintln!("no document in the sample: nothing measured");
        return;
    };
    let text = document.text;
    if fast::parse(text) != parse_with_serde_saphyr(text).ok() {
        eprintln!("the fast path does not accept the sample (or disagrees): nothing measured");
        return;
    }
    c.bench_function(&format!("yaml rendered sidecar ({clock}): fast path"), |b| {
        b.iter(|| black_box(fast::parse(black_box(text))))
    });
    c.bench_function(&format!("yaml rendered sidecar ({clock}): serde-saphyr"), |b| {
        b.iter(|| black_box(parse_with_serde_saphyr(black_box(text))))
    });
    c.bench_function(
        &format!("yaml rendered sidecar ({clock}): parse_documents"),
        |b| b.iter(|| black_box(parse_documents(black_box(RENDERED)))),
    );
}

fn bench_wall(c: &mut Criterion) {
    eprintln!("sample: {} bytes", RENDERED.len());
    bench_with(c, "wall");
}

fn bench_cpu(c: &mut Criterion<ThreadCpuTime>) {
    bench_with(c, "cpu");
}

criterion_group!(wall, bench_wall);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench_cpu
}
criterion_main!(wall, cpu);
