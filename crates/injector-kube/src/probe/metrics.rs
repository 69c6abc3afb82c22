//! `sidecar_injector_probe_*`.
//!
//! `_success` exists only on the replica that probes (the leader): a follower has no opinion,
//! and a 0 from it would page someone for nothing. Alert on
//! `max by (namespace, expect) (sidecar_injector_probe_success) == 0`, and on the series being
//! absent for longer than a Lease (nobody probes).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::{FailureClass, ProbeTarget};

/// Probe durations, seconds: a healthy probe takes milliseconds; a webhook timing out takes
/// its `timeoutSeconds` (10 s by default, 30 s at most).
const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    namespace: String,
    expect: &'static str,
}

impl TargetLabels {
    fn of(target: &ProbeTarget) -> Self {
        TargetLabels {
            namespace: target.namespace.clone(),
            expect: target.expect.as_str(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabel {
    class: &'static str,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The probe's metrics; cheap to clone.
#[derive(Debug, Clone)]
pub struct ProbeMetrics {
    success: Family<TargetLabels, Gauge>,
    duration: Family<TargetLabels, Histogram, fn() -> Histogram>,
    failures: Family<ClassLabel, Counter>,
    last_success: Family<TargetLabels, Gauge>,
}

impl Default for ProbeMetrics {
    fn default() -> Self {
        let failures: Family<ClassLabel, Counter> = Family::default();
        for class in FailureClass::ALL {
            failures
                .get_or_create(&ClassLabel {
                    class: class.as_str(),
                })
                .inc_by(0);
        }
        ProbeMetrics {
            success: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            failures,
            last_success: Family::default(),
        }
    }
}

impl ProbeMetrics {
    /// Adds them to the server's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sidecar_injector_probe_success",
            "1 when the last synthetic admission probe of the namespace came back as expected (injected, or not in an opted-out namespace), 0 when it failed; only on the leader, which probes.",
            self.success.clone(),
        );
        registry.register(
            "sidecar_injector_probe_duration_seconds",
            "Time of the synthetic admission probe's dry-run create, through the API server and the webhook.",
            self.duration.clone(),
        );
        registry.register(
            "sidecar_injector_probe_failures",
            "Synthetic admission probes that failed, by class: x509, no-endpoints, timeout, denied, wrong-result, other.",
            self.failures.clone(),
        );
        registry.register(
            "sidecar_injector_probe_last_success_timestamp_seconds",
            "When the synthetic admission probe of the namespace last came back as expected, Unix seconds.",
            self.last_success.clone(),
        );
    }

    /// Records one probe of `target`: `failure` is `None` when it came back as expected.
    pub fn observe(&self, target: &ProbeTarget, seconds: f64, failure: Option<FailureClass>, now_unix: i64) {
        let labels = TargetLabels::of(target);
        self.duration.get_or_create(&labels).observe(seconds);
        self.success
            .get_or_create(&labels)
            .set(i64::from(failure.is_none()));
        match failure {
            None => {
                self.last_success.get_or_create(&labels).set(now_unix);
            }
            Some(class) => {
                self.failures
                    .get_or_create(&ClassLabel {
                        class: class.as_str(),
                    })
                    .inc();
            }
        }
    }

    /// This replica stopped probing (it lost the Lease): its success gauges go away.
    pub fn stopped(&self) {
        self.success.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Expect;

    fn encoded(m: &ProbeMetrics) -> String {
        let mut registry = Registry::default();
        m.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn success_failure_classes_and_the_last_success() {
        let m = ProbeMetrics::default();
        let on = ProbeTarget {
            namespace: "probe-on".into(),
            expect: Expect::Injected,
        };
        let text = encoded(&m);
        assert!(
            text.contains(r#"sidecar_injector_probe_failures_total{class="x509"} 0"#),
            "{text}"
        );
        assert!(!text.contains("sidecar_injector_probe_success{"), "{text}");
        m.observe(&on, 0.02, None, 1_800_000_000);
        let text = encoded(&m);
        assert!(
            text.contains(r#"sidecar_injector_probe_success{namespace="probe-on",expect="injected"} 1"#),
            "{text}"
        );
        assert!(text.contains(
            r#"sidecar_injector_probe_last_success_timestamp_seconds{namespace="probe-on",expect="injected"} 1800000000"#
        ));
        assert!(text.contains(
            r#"sidecar_injector_probe_duration_seconds_count{namespace="probe-on",expect="injected"} 1"#
        ));
        m.observe(&on, 0.01, Some(FailureClass::X509), 1_800_000_030);
        let text = encoded(&m);
        assert!(text.contains(r#"sidecar_injector_probe_success{namespace="probe-on",expect="injected"} 0"#));
        assert!(text.contains(r#"sidecar_injector_probe_failures_total{class="x509"} 1"#));
        assert!(text.contains(
            r#"sidecar_injector_probe_last_success_timestamp_seconds{namespace="probe-on",expect="injected"} 1800000000"#
        ));
        m.stopped();
        assert!(
            !encoded(&m).contains("sidecar_injector_probe_success{"),
            "a follower has no success gauge"
        );
    }
}
