//! The probe loop: while this replica leads, every interval, one dry-run create per target
//! (concurrently), then the metrics, the `/readyz` detail and a log line if the health
//! changed. Losing the Lease stops it at once (a probe in flight is dropped) and clears what
//! this replica reported, so that only the leader speaks for the probe.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};
use time::OffsetDateTime;
use tokio::sync::watch as channel;

use super::canary::{FIELD_MANAGER, canary_pod, check};
use super::classify::classify;
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
            message: status.message.clone(),
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
