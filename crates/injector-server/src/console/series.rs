//! Live figures: the admission metrics sampled every few seconds into a short in-memory time
//! series (ten minutes by default).
//!
//! The samples are read from the Prometheus text of the very registry `/metrics` serves, so
//! the console's charts and a Prometheus scrape can never disagree. Each point is the change
//! between two samples: admissions, injections, skips, denials and failures per second, and
//! the p50 and p99 latency of the admissions answered in that interval (interpolated within
//! the histogram's buckets, as PromQL's `histogram_quantile` does).

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;

/// The counters one sample reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// `sidecar_injection_requests_total`.
    pub requests: f64,
    /// `sidecar_injection_patched_total`.
    pub injected: f64,
    /// `sidecar_injection_skip_total`.
    pub skipped: f64,
    /// Pods answered `allowed: false`: `sidecar_injection_failure_total` of the types
    /// `injection`, `decode`, `deadline` and `internal`.
    pub denied: f64,
    /// Every `sidecar_injection_failure_total`, HTTP errors included.
    pub failed: f64,
    /// `sidecar_injection_time_seconds_bucket`: (upper bound in seconds, cumulative count).
    pub buckets: Vec<(f64, f64)>,
}

/// Failure types whose answer is an AdmissionReview with `allowed: false`.
const DENIAL_TYPES: [&str; 4] = ["injection", "decode", "deadline", "internal"];

/// Reads the counters from Prometheus text (what `/metrics` serves).
pub fn parse_metrics(text: &str) -> Counters {
    let mut counters = Counters::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else { continue };
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        match name {
            "sidecar_injection_requests_total" => counters.requests = value,
            "sidecar_injection_patched_total" => counters.injected = value,
            "sidecar_injection_skip_total" => counters.skipped = value,
            "sidecar_injection_failure_total" => {
                counters.failed += value;
                if DENIAL_TYPES.iter().any(|t| label(labels, "type") == Some(t)) {
                    counters.denied += value;
                }
            }
            "sidecar_injection_time_seconds_bucket" => {
                let bound = match label(labels, "le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(le) => le.parse().unwrap_or(f64::INFINITY),
                    None => continue,
                };
                counters.buckets.push((bound, value));
            }
            _ => {}
        }
    }
    counters
}

/// The value of `key` in a Prometheus label set (`a="x",b="y"`).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// One point of the charts: the rates and latencies between two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// End of the interval, Unix milliseconds.
    pub at_ms: i64,
    /// Admissions per second.
    pub admissions: f64,
    /// Injected pods per second.
    pub injected: f64,
    /// Skipped pods per second.
    pub skipped: f64,
    /// Denied pods per second.
    pub denied: f64,
    /// Failed requests (any kind) per second.
    pub failed: f64,
    /// Median latency of the interval's admissions, milliseconds (none: no admission).
    pub p50_ms: Option<f64>,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: Option<f64>,
}

/// The point between samples `before` and `after`, `seconds` apart.
pub fn point(before: &Counters, after: &Counters, seconds: f64, at_ms: i64) -> Point {
    let rate = |a: f64, b: f64| {
        if seconds > 0.0 {
            ((b - a) / seconds).max(0.0)
        } else {
            0.0
        }
    };
    let delta: Vec<(f64, f64)> = after
        .buckets
        .iter()
        .map(|&(bound, count)| {
            let old = before
                .buckets
                .iter()
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, c)| *c);
            (bound, (count - old).max(0.0))
        })
        .collect();
    let ms = |q| quantile(&delta, q).map(|s| s * 1000.0);
    Point {
        at_ms,
        admissions: rate(before.requests, after.requests),
        injected: rate(before.injected, after.injected),
        skipped: rate(before.skipped, after.skipped),
        denied: rate(before.denied, after.denied),
        failed: rate(before.failed, after.failed),
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
    }
}

/// The `q` quantile of a cumulative histogram, interpolating linearly within the bucket it
/// falls in (`None` when it is empty). Past the last finite bound, that bound is the answer.
pub fn quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last().map(|b| b.1)?;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let in_bucket = count - lower.1;
            let fraction = if in_bucket > 0.0 {
                (rank - lower.1) / in_bucket
            } else {
                1.0
            };
            return Some(lower.0 + (bound - lower.0) * fraction);
        }
        lower = (bound, count);
    }
    Some(lower.0)
}

/// Sampling interval of the charts.
pub const SAMPLE_EVERY_SECONDS: u64 = 2;

/// Points kept: ten minutes at one point every two seconds.
pub const DEFAULT_POINTS: usize = 300;

/// The time series the charts draw.
#[derive(Debug)]
pub struct Series {
    state: Mutex<State>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct State {
    last: Option<(Counters, i64)>,
    points: VecDeque<Point>,
}

impl Series {
    /// An empty series of `capacity` points.
    pub fn new(capacity: usize) -> Self {
        Series {
            state: Mutex::new(State::default()),
            capacity: capacity.max(1),
        }
    }

    /// Adds a sample taken at `at_ms`: the first only sets the baseline.
    pub fn sample(&self, counters: Counters, at_ms: i64) {
        let Ok(mut state) = self.state.lock() else { return };
        if let Some((before, then)) = &state.last {
            #[allow(clippy::cast_precision_loss)]
            let seconds = (at_ms - then) as f64 / 1000.0;
            let p = point(before, &counters, seconds, at_ms);
            if state.points.len() == self.capacity {
                state.points.pop_front();
            }
            state.points.push_back(p);
        }
        state.last = Some((counters, at_ms));
    }

    /// The points, oldest first.
    pub fn points(&self) -> Vec<Point> {
        self.state
            .lock()
            .map(|s| s.points.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP x\n\
        sidecar_injection_requests_total 10\n\
        sidecar_injection_patched_total 6\n\
        sidecar_injection_skip_total 2\n\
        sidecar_injection_failure_total{type=\"injection\"} 1\n\
        sidecar_injection_failure_total{type=\"body_too_large\"} 1\n\
        sidecar_injection_time_seconds_sum 0.5\n\
        sidecar_injection_time_seconds_bucket{le=\"0.001\"} 4\n\
        sidecar_injection_time_seconds_bucket{le=\"0.01\"} 10\n\
        sidecar_injection_time_seconds_bucket{le=\"+Inf\"} 10\n";

    #[test]
    fn reads_the_admission_counters_from_prometheus_text() {
        let c = parse_metrics(TEXT);
        assert_eq!((c.requests, c.injected, c.skipped), (10.0, 6.0, 2.0));
        assert_eq!((c.denied, c.failed), (1.0, 2.0));
        assert_eq!(c.buckets, [(0.001, 4.0), (0.01, 10.0), (f64::INFINITY, 10.0)]);
    }

    #[test]
    fn quantiles_interpolate_within_buckets() {
        let b = [(0.001, 4.0), (0.01, 10.0), (f64::INFINITY, 10.0)];
        assert_eq!(quantile(&b, 0.2), Some(0.0005));
        let p50 = quantile(&b, 0.5).expect("some");
        assert!((p50 - 0.0025).abs() < 1e-12, "{p50}");
        assert_eq!(quantile(&[(0.001, 0.0), (f64::INFINITY, 0.0)], 0.5), None);
        assert_eq!(quantile(&[(0.001, 0.0), (f64::INFINITY, 3.0)], 0.5), Some(0.001));
    }

    #[test]
    fn points_are_rates_between_samples_and_the_series_is_bounded() {
        let series = Series::new(2);
        let zero = Counters {
            buckets: vec![(0.001, 0.0), (f64::INFINITY, 0.0)],
            ..Counters::default()
        };
        series.sample(zero.clone(), 0);
        assert!(series.points().is_empty(), "the first sample is the baseline");
        let mut later = zero.clone();
        later.requests = 20.0;
        later.denied = 2.0;
        later.buckets = vec![(0.001, 20.0), (f64::INFINITY, 20.0)];
        series.sample(later.clone(), 2000);
        let p = &series.points()[0];
        assert_eq!((p.admissions, p.denied), (10.0, 1.0));
        assert_eq!(p.p50_ms, Some(0.5));
        series.sample(later.clone(), 4000);
        assert_eq!(series.points()[1].admissions, 0.0);
        assert_eq!(series.points()[1].p99_ms, None, "no admission in the interval");
        series.sample(later, 6000);
        assert_eq!(series.points().len(), 2);
        assert_eq!(series.points()[0].at_ms, 4000);
    }
}
