//! The probe loop: while this replica leads, every interval, one dry-run create per target
//! (concurrently), then the metrics, the `/readyz` detail and a log line if the health
//! changed. Losing the Lease stops it at once (a probe in flight is dropped) and clears what
//! this replica reported, so that only the leader speaks for the probe.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};
use time::OffsetDateTime;
use tokio::sync::watch as channel;
use tokio::time::Instant;

use super::canary::{FIELD_MANAGER, canary_pod, check};
use super::classify::{classify, with_hint};
use super::metrics::ProbeMetrics;
use super::state::{Change, Failure, Outcome, ProbeStatus, TargetStatus};
use super::{FailureClass, ProbeOptions, ProbeTarget};
use crate::status::Shared;

/// Starts the probe; it runs while `leader` says this replica holds the Lease.
pub fn spawn(
    client: Client,
    options: ProbeOptions,
    mut leader: channel::Receiver<bool>,
    shared: Shared,
    metrics: ProbeMetrics,
) {
    let report = {
        let (shared, options) = (shared.clone(), options.clone());
        move |probing: bool, targets: Vec<TargetStatus>| {
            let status = ProbeStatus {
                probing,
                interval_seconds: options.interval.as_secs_f64(),
                timeout_seconds: options.timeout.as_secs_f64(),
                targets,
            };
            shared.update(|s| s.probe = Some(status));
        }
    };
    let fresh = |targets: &[ProbeTarget]| targets.iter().map(TargetStatus::new).collect::<Vec<_>>();
    report(false, fresh(&options.targets));
    tokio::spawn(async move {
        let apis: Vec<Api<Pod>> = options
            .targets
            .iter()
            .map(|t| Api::namespaced(client.clone(), &t.namespace))
            .collect();
        let mut sequence = 0u64;
        loop {
            if leader.wait_for(|leading| *leading).await.is_err() {
                return;
            }
            tracing::info!(namespaces = ?options.targets.iter().map(|t| format!("{} ({})", t.namespace, t.expect.as_str())).collect::<Vec<_>>(),
                interval = ?options.interval, "leading: the synthetic admission probe starts");
            let mut statuses = fresh(&options.targets);
            report(true, statuses.clone());
            let mut tick = tokio::time::interval(options.interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = leader.wait_for(|leading| !*leading) => break,
                }
                sequence += 1;
                let round = futures::future::join_all(
                    options
                        .targets
                        .iter()
                        .zip(&apis)
                        .map(|(target, api)| probe_once(api, target, sequence, options.timeout)),
                );
                let results = tokio::select! {
                    results = round => results,
                    _ = leader.wait_for(|leading| !*leading) => break,
                };
                let now = OffsetDateTime::now_utc();
                for ((target, status), (outcome, took)) in
                    options.targets.iter().zip(&mut statuses).zip(results)
                {
                    let class = outcome.as_ref().err().map(|f| f.class);
                    metrics.observe(target, took.as_secs_f64(), class, now.unix_timestamp());
                    if let Some(change) = status.record(&outcome, now, took) {
                        log_change(target, &change, took);
                    }
                }
                report(true, statuses.clone());
            }
            metrics.stopped();
            report(false, fresh(&options.targets));
            tracing::info!("not leading: the synthetic admission probe stops (the leader probes)");
        }
    });
}

/// One dry-run create of the canary in `target`'s namespace, and how long it took.
async fn probe_once(
    api: &Api<Pod>,
    target: &ProbeTarget,
    sequence: u64,
    timeout: Duration,
) -> (Outcome, Duration) {
    let params = PostParams {
        dry_run: true,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    };
    let pod: Pod = match serde_json::from_value(canary_pod(sequence)) {
        Ok(pod) => pod,
        Err(e) => {
            let failure = Failure {
                class: FailureClass::Other,
                message: format!("the canary pod does not decode: {e}"),
            };
            return (Err(failure), Duration::ZERO);
        }
    };
    let started = Instant::now();
    let answer = tokio::time::timeout(timeout, api.create(&params, &pod)).await;
    let took = started.elapsed();
    let outcome = match answer {
        Err(_) => Err(Failure {
            class: FailureClass::Timeout,
            message: format!(
                "no answer from the API server within {timeout:?} (--probe-timeout) for a dry-run create in namespace {}",
                target.namespace
            ),
        }),
        Ok(Ok(pod)) => {
            let pod = serde_json::to_value(&pod).unwrap_or_default();
            check(target.expect, &target.namespace, &pod).map_err(|message| Failure {
                class: FailureClass::WrongResult,
                message,
            })
        }
        Ok(Err(kube::Error::Api(status))) => Err(Failure {
            class: classify(&status.message),
            message: with_hint(&status.message),
        }),
        Ok(Err(e)) => Err(Failure {
            class: FailureClass::Other,
            message: format!("the API server could not be asked: {e}"),
        }),
    };
    (outcome, took)
}

fn log_change(target: &ProbeTarget, change: &Change, took: Duration) {
    let (namespace, expect) = (&target.namespace, target.expect.as_str());
    let duration_ms = took.as_secs_f64() * 1000.0;
    match change {
        Change::FirstOk => {
            tracing::info!(%namespace, expect, duration_ms, "probe ok: the canary pod came back as expected")
        }
        Change::Failing { class, message } => {
            tracing::warn!(%namespace, expect, %class, error = %message, duration_ms,
            "probe failing: pods created now in this namespace would fail or be admitted wrongly the same way")
        }
        Change::ClassChanged { from, to, message } => {
            tracing::warn!(%namespace, expect, class = %to, previous = %from,
            error = %message, duration_ms, "probe still failing, for another reason")
        }
        Change::Recovered {
            class,
            failures,
            after,
        } => tracing::info!(%namespace, expect, previous = %class, failures,
            failing_for = ?after, duration_ms, "probe ok again"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::Full;
    use kube::client::Body;
    use prometheus_client::registry::Registry;
    use serde_json::{Value, json};

    use super::*;
    use crate::probe::Expect;
    use crate::probe::state::Health;

    /// What the fake API server answers (HTTP status, JSON body), and the URIs it was asked.
    #[derive(Clone)]
    struct FakeApi {
        answer: Arc<Mutex<(u16, Value)>>,
        asked: Arc<Mutex<Vec<String>>>,
    }

    impl FakeApi {
        fn new(status: u16, body: Value) -> Self {
            FakeApi {
                answer: Arc::new(Mutex::new((status, body))),
                asked: Arc::default(),
            }
        }
        fn answer(&self, status: u16, body: Value) {
            *self.answer.lock().unwrap() = (status, body);
        }
        fn asked(&self) -> Vec<String> {
            self.asked.lock().unwrap().clone()
        }
        fn client(&self) -> Client {
            let api = self.clone();
            let service = tower::service_fn(move |request: Request<Body>| {
                let api = api.clone();
                async move {
                    api.asked.lock().unwrap().push(request.uri().to_string());
                    let (status, body) = api.answer.lock().unwrap().clone();
                    Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(body.to_string())))
                }
            });
            Client::new(service, "default")
        }
    }

    fn injected_pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "sidecar-injector-probe-x7k2q", "namespace": "probe",
                            "annotations": {"sidecar.istio.io/status": "{}"}},
               "spec": {"containers": [{"name": "canary"}, {"name": "istio-proxy"}]}})
    }

    fn api_error(message: &str) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": "InternalError", "code": 500})
    }

    fn metrics_text(metrics: &ProbeMetrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    /// Waits (in paused time) until `what` holds of the probe's status.
    async fn until(shared: &Shared, what: impl Fn(&ProbeStatus) -> bool) -> ProbeStatus {
        for _ in 0..1000 {
            if let Some(status) = shared.snapshot().probe.filter(|s| what(s)) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the probe's status never got there: {:?}",
            shared.snapshot().probe
        );
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_leader_probes_and_losing_the_lease_stops_it_and_clears_its_report() {
        let api = FakeApi::new(200, injected_pod());
        let (leader, leading) = channel::channel(false);
        let (shared, metrics) = (Shared::default(), ProbeMetrics::default());
        let options = ProbeOptions {
            targets: vec![ProbeTarget {
                namespace: "probe".into(),
                expect: Expect::Injected,
            }],
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(15),
        };
        spawn(api.client(), options, leading, shared.clone(), metrics.clone());

        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(api.asked().is_empty(), "a follower never asks");
        let status = shared.snapshot().probe.unwrap();
        assert!(!status.probing);
        assert_eq!(status.targets[0].state, Health::Pending);

        leader.send(true).unwrap();
        let status = until(&shared, |s| s.probing && s.targets[0].state == Health::Ok).await;
        assert_eq!(status.targets[0].probes, 1);
        let asked = api.asked();
        assert!(
            asked[0].starts_with("/api/v1/namespaces/probe/pods?"),
            "{asked:?}"
        );
        assert!(asked[0].contains("dryRun=All"), "{asked:?}");
        assert!(
            asked[0].contains("fieldManager=sidecar-injector-probe"),
            "{asked:?}"
        );
        assert!(
            metrics_text(&metrics)
                .contains(r#"sidecar_injector_probe_success{namespace="probe",expect="injected"} 1"#)
        );

        api.answer(500, api_error(r#"Internal error occurred: failed calling webhook "w": failed to call webhook: Post "https://127.0.0.1:1/inject?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority"#));
        let status = until(&shared, |s| s.targets[0].state == Health::Failing).await;
        assert_eq!(status.targets[0].class, Some(FailureClass::X509));
        assert_eq!(status.targets[0].probes, 2, "one probe per interval");
        let text = metrics_text(&metrics);
        assert!(
            text.contains(r#"sidecar_injector_probe_success{namespace="probe",expect="injected"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"sidecar_injector_probe_failures_total{class="x509"} 1"#),
            "{text}"
        );

        leader.send(false).unwrap();
        let status = until(&shared, |s| !s.probing).await;
        assert_eq!(
            status.targets[0].state,
            Health::Pending,
            "a follower reports nothing"
        );
        assert!(!metrics_text(&metrics).contains("sidecar_injector_probe_success{"));
        let asked = api.asked().len();
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert_eq!(api.asked().len(), asked, "no probe after losing the Lease");
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_the_api_server_does_not_answer_in_time_is_a_timeout() {
        let api = FakeApi::new(200, injected_pod());
        let slow = tower::service_fn(|_request: Request<Body>| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Response::builder().status(200).body(Full::new(Bytes::new()))
        });
        let (leader, leading) = channel::channel(true);
        let shared = Shared::default();
        let options = ProbeOptions {
            targets: vec![ProbeTarget {
                namespace: "probe".into(),
                expect: Expect::Injected,
            }],
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
        };
        spawn(
            Client::new(slow, "default"),
            options,
            leading,
            shared.clone(),
            ProbeMetrics::default(),
        );
        let status = until(&shared, |s| s.targets[0].state == Health::Failing).await;
        assert_eq!(status.targets[0].class, Some(FailureClass::Timeout));
        let message = status.targets[0].message.clone().unwrap();
        assert!(message.contains("within 5s (--probe-timeout)"), "{message}");
        assert!(status.targets[0].last_duration_seconds.unwrap() >= 5.0);
        drop((leader, api));
    }
}
