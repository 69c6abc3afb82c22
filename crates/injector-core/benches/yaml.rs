//! Parsing a rendered Istio sidecar template (`tests/data/istio-sidecar-rendered.yaml`) into a
//! `serde_json::Value`: the fast path alone, `serde-saphyr` alone, and `parse_documents` (what the
//! injection calls: split, fast path, fallback).

// criterion_group! generates undocumented items.
#![allow(missing_docs)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use injector_core::yaml::{fast, parse_documents, parse_with_serde_saphyr, split_documents};

const RENDERED: &str = include_str!("../tests/data/istio-sidecar-rendered.yaml");

fn bench(c: &mut Criterion) {
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
    eprintln!("sample: {} bytes", text.len());
    c.bench_function("yaml rendered sidecar: fast path", |b| {
        b.iter(|| black_box(fast::parse(black_box(text))))
    });
    c.bench_function("yaml rendered sidecar: serde-saphyr", |b| {
        b.iter(|| black_box(parse_with_serde_saphyr(black_box(text))))
    });
    c.bench_function("yaml rendered sidecar: parse_documents", |b| {
        b.iter(|| black_box(parse_documents(black_box(RENDERED))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
