//! A loopback OTLP/gRPC trace receiver, for the end-to-end test of `serve --otlp-endpoint`:
//! the test API server (`--tracing-config-file`) and the injector both export to it, and the
//! test reads which spans share a trace.
//!
//! ```text
//! cargo run -p injector-server --example otlp_receiver -- 127.0.0.1:0 > spans.jsonl
//! ```
//!
//! Listens on the given loopback address (port 0: any free port) and prints
//! `{"listening":"127.0.0.1:PORT"}` first, then one JSON line per span received:
//! `service`, `name`, `traceId`, `spanId`, `parentSpanId` (hex; empty for a root) and its
//! string, bool and int `attributes`. Plain HTTP/2 (no TLS), loopback addresses only.

use std::io::Write as _;
use std::net::SocketAddr;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use serde_json::{Map, Value, json};

/// Prints every span it is sent.
struct Printer;

#[tonic::async_trait]
impl TraceService for Printer {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut out = std::io::stdout().lock();
        for resource_spans in &request.get_ref().resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
                .and_then(|a| text(a.value.as_ref()))
                .unwrap_or_default();
            for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
                let line = json!({
                    "service": service,
                    "name": span.name,
                    "traceId": hex(&span.trace_id),
                    "spanId": hex(&span.span_id),
                    "parentSpanId": hex(&span.parent_span_id),
                    "attributes": attributes(&span.attributes),
                });
                let _ = writeln!(out, "{line}");
            }
        }
        let _ = out.flush();
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&AnyValue>) -> Option<String> {
    match value?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn attributes(attributes: &[KeyValue]) -> Value {
    let mut map = Map::new();
    for attribute in attributes {
        let value = match attribute.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => json!(s),
            Some(any_value::Value::BoolValue(b)) => json!(b),
            Some(any_value::Value::IntValue(i)) => json!(i),
            Some(any_value::Value::DoubleValue(d)) => json!(d),
            _ => Value::Null,
        };
        map.insert(attribute.key.clone(), value);
    }
    Value::Object(map)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned())
        .parse()
        .map_err(|e| format!("usage: otlp_receiver 127.0.0.1:PORT ({e})"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr}: loopback addresses only"));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("{}", json!({"listening": local.to_string()}));
    let service = TraceServiceServer::new(Printer);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .http2_only()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
