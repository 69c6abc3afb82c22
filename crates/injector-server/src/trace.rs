//! Admissions in the API server's trace: with an OTLP endpoint, each admission is a span that
//! joins the trace the API server names in its `traceparent` header (W3C trace context), with a
//! child span per stage (decode, the engine's decide, prepare, render, merge, post, patch; `engine` around them
//! with whether the outcome cache answered, and whether the engine's own caches did), exported
//! over OTLP/gRPC by OpenTelemetry's own SDK.
//!
//! The spans are `tracing` spans at DEBUG under [`TARGET`]; the OpenTelemetry layer is the only
//! one that wants them. Without an endpoint there is no such layer, the global maximum level
//! stays at the log filter's (INFO), and each span macro on the admission path costs one
//! comparison with it: no span is built, no header read.

use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Targets;

use crate::logging::BoxedLayer;

/// The target of every span exported: the admission's and its stages' (the engine's included).
pub const TARGET: &str = "sidecar_injector::trace";

/// How long one export may take before it is dropped.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the admissions' spans cannot be exported to the `--otlp-endpoint` given.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The endpoint is not `http://HOST:PORT` (TLS to the collector is not supported).
    #[error("--otlp-endpoint {endpoint:?}: expected http://HOST:PORT, an OTLP/gRPC collector without TLS")]
    NotHttp {
        /// The endpoint given.
        endpoint: String,
    },
    /// The endpoint names no host.
    #[error("--otlp-endpoint {endpoint:?}: no host")]
    NoHost {
        /// The endpoint given.
        endpoint: String,
    },
    /// The OTLP exporter refused the endpoint.
    #[error("--otlp-endpoint {endpoint}: {source}")]
    Exporter {
        /// The endpoint given.
        endpoint: String,
        /// The exporter's error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// The exporter of the admissions' spans; [`Tracing::shutdown`] sends what is left.
pub struct Tracing {
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
}

impl Tracing {
    /// Exports the admissions' spans to `endpoint`, an OTLP/gRPC collector
    /// (`http://HOST:PORT`), as `service`; returns the `tracing` layer to install with the
    /// logging ([`crate::logging::init_logging_with`]). Must be called within a tokio runtime,
    /// which the exporter's connection uses. Nothing is sent until the first span ends; an
    /// unreachable collector loses spans, never slows an admission.
    pub fn start(endpoint: &str, service: &str) -> Result<(Self, BoxedLayer), TraceError> {
        check_endpoint(endpoint)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|source| TraceError::Exporter {
                endpoint: endpoint.to_owned(),
                source,
            })?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service.to_owned())
            .build();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("sidecar-injector");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::DEBUG))
            .boxed();
        Ok((Self { provider }, layer))
    }

    /// Sends the spans not yet exported and stops the exporter.
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "could not export the last admission spans");
        }
    }
}

/// An endpoint the exporter can use: `http://` and a host. (TLS to the collector is not
/// supported: send to a collector on the node or in the cluster.)
fn check_endpoint(endpoint: &str) -> Result<(), TraceError> {
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return Err(TraceError::NotHttp {
            endpoint: endpoint.to_owned(),
        });
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(TraceError::NoHost {
            endpoint: endpoint.to_owned(),
        });
    }
    Ok(())
}

/// The span of one admission, child of the API server's span when its `traceparent` names one;
/// disabled (and nothing read) when no layer exports spans.
pub fn admission_span(headers: &http::HeaderMap) -> tracing::Span {
    let span = tracing::debug_span!(
        target: TARGET,
        "admission",
        otel.kind = "server",
        uid = tracing::field::Empty,
        namespace = tracing::field::Empty,
        pod = tracing::field::Empty,
        decision = tracing::field::Empty,
        reason = tracing::field::Empty,
        cached = tracing::field::Empty,
        http.status_code = tracing::field::Empty,
    );
    if !span.is_disabled()
        && let Some(parent) = parent_of(headers)
    {
        // Fails only for a span the layer does not know, which an enabled one is not.
        let _ = span.set_parent(parent);
    }
    span
}

/// The remote parent a request's `traceparent` (and `tracestate`) names, if valid.
fn parent_of(headers: &http::HeaderMap) -> Option<opentelemetry::Context> {
    let context = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&Headers(headers));
    context.span().span_context().is_valid().then_some(context)
}

/// Request headers as the propagator reads them.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert!(check_endpoint("http://127.0.0.1:4317").is_ok());
        assert!(check_endpoint("http://otel-collector.observability:4317").is_ok());
        for bad in ["127.0.0.1:4317", "https://collector:4317", "grpc://x:1"] {
            assert!(
                matches!(check_endpoint(bad), Err(TraceError::NotHttp { .. })),
                "{bad}"
            );
        }
        let error = check_endpoint("http://").expect_err("no host");
        assert_eq!(error.to_string(), "--otlp-endpoint \"http://\": no host");
    }

    #[test]
    fn the_parent_is_read_from_traceparent() {
        let mut headers = http::HeaderMap::new();
        assert!(parent_of(&headers).is_none());
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let parent = parent_of(&headers).expect("a parent");
        let span = parent.span();
        let context = span.span_context();
        assert_eq!(context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
        assert!(context.is_remote() && context.is_sampled());
        headers.insert("traceparent", http::HeaderValue::from_static("00-zz-00-01"));
        assert!(parent_of(&headers).is_none());
    }

    #[test]
    fn without_an_exporting_layer_the_span_is_disabled() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(crate::logging::DEFAULT_FILTER))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            assert!(admission_span(&headers).is_disabled());
        });
    }
}
