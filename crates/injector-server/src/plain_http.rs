//! The plain-HTTP listeners beside the webhook (monitoring, console): HTTP/1.1 only, 10 s to
//! send the request headers, every connection closed when `stop` changes.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::handler::Body;

/// Accepts connections on `listener` and answers each request with `route`, until `stop` changes.
pub(crate) async fn serve<F, Fut>(
    listener: TcpListener,
    mut stop: tokio::sync::watch::Receiver<bool>,
    route: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    let builder = Arc::new(builder);
    loop {
        let tcp = tokio::select! {
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let (route, builder) = (route.clone(), builder.clone());
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let conn = builder.serve_connection(TokioIo::new(tcp), service_fn(route));
            tokio::select! {
                _ = conn => {}
                _ = stop.changed() => {}
            }
        });
    }
}
