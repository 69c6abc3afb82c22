//! One structured log line per admission, with uid, namespace, pod, decision, reason, duration.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::*;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// `#[tokio::test]` runs every task on this thread, so a thread-local subscriber sees the
// handler's events.
#[tokio::test]
async fn one_json_line_per_admission() {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(buffer.clone())
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = TestServer::start().await;
    let mut c = server.client(Proto::H1).await;
    c.post("/inject", review("admission.k8s.io/v1", "log-1", json!({})))
        .await
        .expect("resp");
    c.post(
        "/inject",
        review("admission.k8s.io/v1", "log-2", json!({"test/action": "skip"})),
    )
    .await
    .expect("resp");
    c.post(
        "/inject",
        review("admission.k8s.io/v1", "log-3", json!({"test/action": "deny"})),
    )
    .await
    .expect("resp");
    c.post("/inject", b"{oops".to_vec()).await.expect("resp");
    // Cut short after its uid: the denial still carries the uid, for the API server to match.
    let mut cut = review("admission.k8s.io/v1beta1", "log-5", json!({}));
    cut.truncate(cut.len() - 20);
    let resp = c.post("/inject", cut).await.expect("resp");
    assert_eq!(resp.json()["response"]["uid"], "log-5");
    assert_eq!(resp.json()["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(resp.json()["response"]["allowed"], false);
    server.stop().await;

    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).expect("utf8");
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["message"] == "admission")
        .collect();
    assert_eq!(lines.len(), 5, "{text}");
    let by_uid = |uid: &str| {
        lines
            .iter()
            .find(|l| l["uid"] == uid)
            .unwrap_or_else(|| panic!("{uid} in {text}"))
    };
    let l = by_uid("log-1");
    assert_eq!(l["namespace"], "default");
    assert_eq!(l["pod"], "web-7d4b9c-*****");
    assert_eq!(l["decision"], "injected");
    assert_eq!(l["status"], 200);
    assert!(l["duration_ms"].as_f64().is_some());
    assert_eq!(l["level"], "INFO");
    assert!(l["peer"].as_str().unwrap_or("").starts_with("127.0.0.1:"), "{l}");
    assert_eq!(by_uid("log-2")["decision"], "skipped");
    assert_eq!(by_uid("log-2")["reason"], "test says skip");
    assert_eq!(by_uid("log-2")["level"], "INFO");
    assert_eq!(by_uid("log-3")["decision"], "denied");
    assert_eq!(by_uid("log-3")["level"], "WARN");
    let bad = lines.iter().find(|l| l["uid"] == "").expect("decode error line");
    assert!(bad["reason"].as_str().unwrap_or("").contains("invalid JSON"));
    assert_eq!(bad["level"], "WARN");
    assert_eq!(by_uid("log-5")["level"], "WARN");
    assert_eq!(by_uid("log-5")["decision"], "denied");
}

#[tokio::test]
async fn text_lines_quote_the_reason_and_round_the_duration() {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(buffer.clone())
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = TestServer::start().await;
    let mut c = server.client(Proto::H1).await;
    c.post(
        "/inject",
        review("admission.k8s.io/v1", "text-1", json!({"test/action": "skip"})),
    )
    .await
    .expect("resp");
    server.stop().await;
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).expect("utf8");
    let line = text
        .lines()
        .find(|l| l.contains("text-1"))
        .unwrap_or_else(|| panic!("no admission line in {text}"));
    assert!(line.contains(r#"reason="test says skip""#), "{line}");
    assert!(line.contains(r#"uid="text-1""#), "{line}");
    assert!(line.contains("peer=127.0.0.1:"), "{line}");
    let duration = line
        .split("duration_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no duration in {line}"));
    let decimals = duration.split('.').nth(1).map_or(0, str::len);
    assert!(decimals <= 3, "duration {duration} has float noise: {line}");
}
