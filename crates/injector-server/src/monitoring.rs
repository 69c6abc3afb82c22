//! The plain-HTTP monitoring server: `/metrics`, `/healthz`, `/readyz` (and `/ready`).
//! HTTP/1.1 only, 10 s to send the request headers; it keeps serving while the webhook drains.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use tokio::net::TcpListener;

use crate::handler::{Body, Shared, json, text};
use crate::injector::Injector;

pub(crate) async fn serve<I: Injector>(
    listener: TcpListener,
    shared: Arc<Shared<I>>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "monitoring listening (HTTP): /metrics /healthz /readyz");
    }
    crate::plain_http::serve(listener, stop, move |req| route(shared.clone(), req)).await;
}

async fn route<I: Injector>(
    shared: Arc<Shared<I>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    Ok(match req.uri().path() {
        "/metrics" => {
            let mut out = String::new();
            match prometheus_client::encoding::prometheus_text::encode(&mut out, &shared.registry) {
                Ok(()) => {
                    let mut resp = Response::new(Full::new(Bytes::from(out)));
                    resp.headers_mut().insert(
                        CONTENT_TYPE,
                        http::HeaderValue::from_static(
                            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                        ),
                    );
                    resp
                }
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("encoding metrics: {e}"),
                ),
            }
        }
        "/healthz" => text(StatusCode::OK, "ok"),
        "/readyz" | "/ready" => {
            let (ready, detail) = shared.readiness_report();
            json(
                if ready {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                },
                detail.into_bytes(),
            )
        }
        _ => text(StatusCode::NOT_FOUND, "404 page not found"),
    })
}
