//! The live console: a read-only web page, on a listener of its own, showing what the injector
//! is doing right now — its state, its recent admissions and their explanations, live
//! figures, the configuration in service with its last reloads, and a paste-a-pod explainer.
//!
//! Nothing here is on the admission path except [`ring::AdmissionRing::push`], which never
//! waits. The console's requests are served by their own tasks; the explanations it re-runs go
//! to the blocking pool one at a time (`Console::explain_slot`), so a browser can never take
//! the CPU that admissions need. Everything the browser loads is embedded in the binary
//! (`assets`); the page fetches nothing from elsewhere (its Content-Security-Policy says so).
//!
//! Modules: [`ring`] (recent admissions), [`history`] (configuration loads and their diffs),
//! [`series`] (the figures), [`host`] (the `Host` names answered), [`csrf`] (the API's token and
//! the POST's protection), `routes` (HTTP), `backend` (what the console reads from the server),
//! `assets` (HTML, JS, CSS).

mod assets;
mod backend;
pub mod csrf;
pub mod history;
pub mod host;
pub mod ring;
mod routes;
pub mod series;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

pub(crate) use backend::Backend;
pub use host::ConsoleHosts;

/// Why the console cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsoleError {
    /// `--console-addr` is not a loopback address and exposing it was not asked for.
    #[error(
        "--console-addr {addr} is not a loopback address: the console shows every admission and the \
         configuration in service to whoever can reach it, without authentication. Bind it to \
         127.0.0.1 and use `kubectl port-forward`, or add --console-allow-remote to expose it on purpose"
    )]
    NotLoopback {
        /// The address given.
        addr: SocketAddr,
    },
    /// The operating system gave no random bytes for the console's token.
    #[error("the operating system gave no random bytes for the console token")]
    NoRandomBytes,
}

/// The console's own state: the ring, the figures and the token.
#[derive(Debug)]
pub(crate) struct Console {
    /// Recent admissions.
    pub ring: ring::AdmissionRing,
    /// The figures.
    pub series: series::Series,
    /// The per-process token the POST needs.
    pub token: csrf::Token,
    /// One explanation at a time on the blocking pool.
    pub explain_slot: Arc<tokio::sync::Semaphore>,
    /// Largest pasted manifest, bytes (the admission body limit).
    pub body_limit: usize,
    /// The `Host` values answered.
    pub hosts: host::HostPolicy,
}

impl Console {
    /// A console with default sizes, listening on `port`, answering `hosts`.
    pub fn new(body_limit: usize, port: u16, hosts: ConsoleHosts) -> Result<Self, ConsoleError> {
        Ok(Console {
            ring: ring::AdmissionRing::new(ring::DEFAULT_CAPACITY),
            series: series::Series::new(series::DEFAULT_POINTS),
            token: csrf::Token::generate()?,
            explain_slot: Arc::new(tokio::sync::Semaphore::new(1)),
            body_limit,
            hosts: host::HostPolicy::new(port, hosts),
        })
    }
}

/// Refuses a `--console-addr` that is not a loopback address, unless `allow_remote`
/// (`--console-allow-remote`).
pub fn check_console_addr(addr: SocketAddr, allow_remote: bool) -> Result<(), ConsoleError> {
    if addr.ip().is_loopback() || allow_remote {
        return Ok(());
    }
    Err(ConsoleError::NotLoopback { addr })
}

/// Serves the console on `listener` and samples the figures until `stop` changes.
pub(crate) async fn serve(
    listener: TcpListener,
    console: Arc<Console>,
    backend: Arc<dyn Backend>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "console listening (HTTP): open http://{addr}/ (read-only)");
    }
    tokio::spawn(sample_figures(console.clone(), backend.clone(), stop.clone()));
    crate::plain_http::serve(listener, stop, move |req| {
        routes::route(console.clone(), backend.clone(), req)
    })
    .await;
}

/// Every few seconds, the admission metrics into the figures' series.
async fn sample_figures(
    console: Arc<Console>,
    backend: Arc<dyn Backend>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(series::SAMPLE_EVERY_SECONDS));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let counters = series::parse_metrics(&backend.metrics_text());
        console.series.sample(counters, now_ms());
    }
}

/// Now, Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_unless_remote_is_asked_for() {
        assert_eq!(
            check_console_addr("127.0.0.1:15080".parse().expect("addr"), false),
            Ok(())
        );
        assert_eq!(
            check_console_addr("[::1]:15080".parse().expect("addr"), false),
            Ok(())
        );
        let open: SocketAddr = "0.0.0.0:15080".parse().expect("addr");
        let error = check_console_addr(open, false).expect_err("not loopback");
        assert_eq!(error, ConsoleError::NotLoopback { addr: open });
        let text = error.to_string();
        assert!(
            text.starts_with("--console-addr 0.0.0.0:15080 is not a loopback address"),
            "{text}"
        );
        assert!(text.contains("--console-allow-remote"), "{text}");
        assert_eq!(check_console_addr(open, true), Ok(()));
    }
}
