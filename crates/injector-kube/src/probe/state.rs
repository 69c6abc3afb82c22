//! Each probe target's health, the changes worth a log line, and the `/readyz` detail.
//!
//! A probe every 30 s that logged every result would bury the one line that matters; only a
//! change is logged: the first result, ok → failing (with the class and the API server's
//! message), one failure class → another, failing → ok.

use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{FailureClass, ProbeTarget};

/// Why one probe failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its class.
    pub class: FailureClass,
    /// What the API server said (or what was wrong with the pod it returned).
    pub message: String,
}

/// The result of one probe.
pub type Outcome = Result<(), Failure>;

/// A target's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Not probed yet (or not by this replica: it does not lead).
    Pending,
    /// The last probe came back as expected.
    Ok,
    /// The last probe failed.
    Failing,
}

/// A change of health, to be logged once.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The first probe succeeded.
    FirstOk,
    /// It started failing (from ok or from the start).
    Failing {
        /// Why.
        class: FailureClass,
        /// The API server's message.
        message: String,
    },
    /// It still fails, for another reason.
    ClassChanged {
        /// The reason before.
        from: FailureClass,
        /// The reason now.
        to: FailureClass,
        /// The API server's message.
        message: String,
    },
    /// It succeeds again.
    Recovered {
        /// The class of the last failure.
        class: FailureClass,
        /// How many probes failed in a row.
        failures: u64,
        /// How long it was failing.
        after: Duration,
    },
}

/// One target as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// The namespace.
    pub namespace: String,
    /// `injected` or `not-injected`.
    pub expect: &'static str,
    /// Its health.
    pub state: Health,
    /// The failure class while failing.
    pub class: Option<FailureClass>,
    /// The failure's message while failing.
    pub message: Option<String>,
    /// Since when (RFC 3339) it is ok, or failing (whatever the class).
    pub since: Option<String>,
    /// The last probe that came back as expected (RFC 3339).
    pub last_success: Option<String>,
    /// How long the last probe took, in seconds.
    pub last_duration_seconds: Option<f64>,
    /// Probes failed in a row.
    pub consecutive_failures: u64,
    /// Probes made since this replica started leading.
    pub probes: u64,
    #[serde(skip)]
    since_at: Option<OffsetDateTime>,
}

impl Serialize for FailureClass {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

impl TargetStatus {
    /// A target not probed yet.
    pub fn new(target: &ProbeTarget) -> Self {
        TargetStatus {
            namespace: target.namespace.clone(),
            expect: target.expect.as_str(),
            state: Health::Pending,
            class: None,
            message: None,
            since: None,
            last_success: None,
            last_duration_seconds: None,
            consecutive_failures: 0,
            probes: 0,
            since_at: None,
        }
    }

    /// Records a probe's `outcome` at `now`, taking `duration`; the change to log, if any.
    pub fn record(&mut self, outcome: &Outcome, now: OffsetDateTime, duration: Duration) -> Option<Change> {
        self.probes += 1;
        self.last_duration_seconds = Some(duration.as_secs_f64());
        let before = (self.state, self.class);
        let change = match (outcome, before) {
            (Ok(()), (Health::Ok, _)) => None,
            (Ok(()), (Health::Failing, Some(class))) => Some(Change::Recovered {
                class,
                failures: self.consecutive_failures,
                after: self
                    .since_at
                    .map_or(Duration::ZERO, |t| (now - t).try_into().unwrap_or_default()),
            }),
            (Ok(()), _) => Some(Change::FirstOk),
            (Err(f), (Health::Failing, Some(from))) if from == f.class => None,
            (Err(f), (Health::Failing, Some(from))) => Some(Change::ClassChanged {
                from,
                to: f.class,
                message: f.message.clone(),
            }),
            (Err(f), _) => Some(Change::Failing {
                class: f.class,
                message: f.message.clone(),
            }),
        };
        match outcome {
            Ok(()) => {
                self.state = Health::Ok;
                self.class = None;
                self.message = None;
                self.consecutive_failures = 0;
                self.last_success = Some(rfc3339(now));
            }
            Err(f) => {
                self.state = Health::Failing;
                self.class = Some(f.class);
                self.message = Some(f.message.clone());
                self.consecutive_failures += 1;
            }
        }
        if before.0 != self.state {
            self.since_at = Some(now);
            self.since = Some(rfc3339(now));
        }
        change
    }
}

/// The probe as `/readyz`'s `cluster.probe` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeStatus {
    /// Whether this replica probes (only the leader does; a follower shows its targets
    /// pending).
    pub probing: bool,
    /// Seconds between two probes.
    pub interval_seconds: f64,
    /// Seconds one probe may take.
    pub timeout_seconds: f64,
    /// Every target.
    pub targets: Vec<TargetStatus>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Expect;

    fn target() -> TargetStatus {
        TargetStatus::new(&ProbeTarget {
            namespace: "probe".into(),
            expect: Expect::Injected,
        })
    }
    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + s).unwrap()
    }
    fn fail(class: FailureClass, message: &str) -> Outcome {
        Err(Failure {
            class,
            message: message.into(),
        })
    }
    const MS: Duration = Duration::from_millis(20);

    #[test]
    fn only_changes_are_reported() {
        let mut t = target();
        assert_eq!(t.record(&Ok(()), at(0), MS), Some(Change::FirstOk));
        assert_eq!(t.record(&Ok(()), at(30), MS), None, "ok stays ok: no log line");
        assert_eq!(
            t.record(&fail(FailureClass::X509, "x509: unknown authority"), at(60), MS),
            Some(Change::Failing {
                class: FailureClass::X509,
                message: "x509: unknown authority".into()
            })
        );
        assert_eq!(
            t.record(&fail(FailureClass::X509, "x509: again"), at(90), MS),
            None,
            "failing for the same reason: no log line"
        );
        assert_eq!(
            t.record(&fail(FailureClass::Timeout, "deadline"), at(120), MS),
            Some(Change::ClassChanged {
                from: FailureClass::X509,
                to: FailureClass::Timeout,
                message: "deadline".into()
            })
        );
        assert_eq!(
            t.record(&Ok(()), at(150), MS),
            Some(Change::Recovered {
                class: FailureClass::Timeout,
                failures: 3,
                after: Duration::from_secs(90)
            }),
            "failing since the first failure (60 s), whatever the class"
        );
        assert_eq!(t.probes, 6);
    }

    #[test]
    fn the_status_shows_the_failure_and_clears_it_on_success() {
        let mut t = target();
        assert_eq!(t.state, Health::Pending);
        t.record(&fail(FailureClass::NoEndpoints, "connection refused"), at(0), MS);
        assert_eq!(t.state, Health::Failing);
        assert_eq!(t.class, Some(FailureClass::NoEndpoints));
        assert_eq!(t.consecutive_failures, 1);
        assert_eq!(t.last_success, None);
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["class"], "no-endpoints");
        assert_eq!(json["state"], "failing");
        assert_eq!(json["expect"], "injected");
        assert_eq!(json["message"], "connection refused");
        t.record(&Ok(()), at(30), MS);
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["state"], "ok");
        assert!(json["class"].is_null() && json["message"].is_null());
        assert_eq!(json["lastSuccess"], "2027-01-15T08:00:30Z");
        assert_eq!(json["since"], "2027-01-15T08:00:30Z");
        assert_eq!(json["consecutiveFailures"], 0);
    }

    #[test]
    fn a_first_failure_is_reported_as_failing() {
        let mut t = target();
        assert!(matches!(
            t.record(&fail(FailureClass::WrongResult, "not injected"), at(0), MS),
            Some(Change::Failing {
                class: FailureClass::WrongResult,
                ..
            })
        ));
    }
}
