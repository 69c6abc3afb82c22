//! What the admission path's spans cost without `--otlp-endpoint`: the admission span (with a
//! `traceparent` header, as the API server sends when it traces), the decode and engine spans,
//! the future instrumented with them and the attributes recorded, under the logging `serve`
//! installs (JSON lines at INFO) and no OTLP layer; against the same steps without spans.

// criterion_group! generates undocumented items.
#![allow(missing_docs)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use tracing::Instrument as _;

/// Polls a future that is ready at once.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => unreachable!("ready at once"),
    }
}

fn spans(c: &mut Criterion) {
    injector_server::init_logging(injector_server::LogFormat::Json).expect("logging");
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "traceparent",
        http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    );
    let target = injector_server::trace::TARGET;
    assert_eq!(target, "sidecar_injector::trace");
    c.bench_function("admission steps without spans", |b| {
        b.iter(|| {
            let decoded = black_box(1u32) + 1;
            ready(async move { black_box(decoded) })
        })
    });
    c.bench_function("admission steps with their spans, no OTLP layer", |b| {
        b.iter(|| {
            let span = injector_server::trace::admission_span(black_box(&headers));
            let answer = ready(
                async {
                    let decoded = tracing::debug_span!(target: "sidecar_injector::trace", "decode")
                        .in_scope(|| black_box(1u32) + 1);
                    let engine = tracing::debug_span!(target: "sidecar_injector::trace", "engine", cache = tracing::field::Empty);
                    let result = ready(async move { black_box(decoded) }.instrument(engine.clone()));
                    if !engine.is_disabled() {
                        engine.record("cache", "miss");
                    }
                    result
                }
                .instrument(span.clone()),
            );
            if !span.is_disabled() {
                span.record("decision", "injected");
            }
            answer
        })
    });
}

criterion_group!(benches, spans);
criterion_main!(benches);
