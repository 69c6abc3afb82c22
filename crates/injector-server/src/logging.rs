//! Logging setup with `tracing`: where log lines go and how they look.
//!
//! Lines go to stderr, each starting with an RFC 3339 UTC time (`2026-12-01T21:10:15.123456Z`);
//! times inside fields are RFC 3339 too ([`rfc3339`]). Colours (ANSI escape codes) are used only
//! when stderr is a terminal and `NO_COLOR` is unset or empty, so a redirected log or a log
//! collector never receives escape codes.

use std::io::IsTerminal;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// A layer of the global subscriber (the log lines, the admissions' spans for OTLP).
pub type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Why the logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// A global subscriber (or `log` logger) is already installed in this process.
    #[error("{0}")]
    AlreadyInstalled(#[source] tracing_subscriber::util::TryInitError),
}

/// Log output format (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (fields flattened), for log pipelines.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("unknown log format {other:?}; expected `text` or `json`")),
        }
    }
}

/// Whether log lines may carry colours: only on a terminal, and not when `NO_COLOR` is set to a
/// non-empty value (<https://no-color.org>).
pub fn use_ansi(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

/// `unix_seconds` as an RFC 3339 UTC time (`2027-03-01T12:00:00Z`), for log fields; the number
/// itself when it is out of range.
pub fn rfc3339(unix_seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| unix_seconds.to_string())
}

/// The filter without `RUST_LOG`: `info`, except kube-rs's HTTP trace layer, which logs a bare
/// `failed with status 500 Internal Server Error` (no URL, no object) at ERROR for every
/// non-2xx answer. Every caller reports that error itself, with what it was doing; the probe
/// would otherwise print one such line every interval while failing.
pub const DEFAULT_FILTER: &str = "info,kube_client::client::builder=off";

/// Installs the global subscriber: `RUST_LOG` filter (default [`DEFAULT_FILTER`]), to stderr,
/// coloured only when [`use_ansi`] says so.
///
/// Returns an error (instead of panicking) if a subscriber is already installed.
pub fn init_logging(format: LogFormat) -> Result<(), LoggingError> {
    init_logging_with(format, None)
}

/// [`init_logging`], with `spans` beside the log lines: a layer with a filter of its own (the
/// admissions' spans of [`crate::trace::Tracing`]), which the log filter does not limit.
pub fn init_logging_with(format: LogFormat, spans: Option<BoxedLayer>) -> Result<(), LoggingError> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let ansi = use_ansi(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let lines: BoxedLayer = match format {
        LogFormat::Text => lines.with_filter(filter).boxed(),
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_filter(filter)
            .boxed(),
    };
    let layers: Vec<BoxedLayer> = std::iter::once(lines).chain(spans).collect();
    tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .map_err(LoggingError::AlreadyInstalled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_format_parses() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("text".parse::<LogFormat>(), Ok(LogFormat::Text));
        assert!("yaml".parse::<LogFormat>().is_err());
    }

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_ansi(true, None));
        assert!(
            use_ansi(true, Some(OsStr::new(""))),
            "an empty NO_COLOR does not count"
        );
        assert!(!use_ansi(true, Some(OsStr::new("1"))));
        assert!(!use_ansi(false, None), "redirected: no escape codes");
    }

    #[test]
    fn the_default_filter_mutes_kube_rs_bare_http_errors_only() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0
                    .lock()
                    .map_err(|_| std::io::ErrorKind::Other)?
                    .extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_FILTER))
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // Callsites another test thread registered with no subscriber live stay silent
            // unless the interest cache is recomputed with this one in place.
            tracing::callsite::rebuild_interest_cache();
            tracing::error!(target: "kube_client::client::builder", "failed with status 500 Internal Server Error");
            tracing::error!(target: "kube_client::client", "another kube-rs error");
            tracing::info!(target: "injector_kube::probe::runner", "probe failing");
            tracing::debug!(target: "injector_kube::probe::runner", "too verbose");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("failed with status"), "{text}");
        assert!(text.contains("another kube-rs error"), "{text}");
        assert!(text.contains("probe failing"), "{text}");
        assert!(!text.contains("too verbose"), "{text}");
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_803_470_400), "2027-02-24T12:00:00Z");
        assert_eq!(rfc3339(i64::MAX), i64::MAX.to_string());
    }
}
