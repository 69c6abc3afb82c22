//! Restarting owners whose pods are stale: the patch `kubectl rollout restart` makes, whether a
//! PodDisruptionBudget forbids starting now, whether a rollout is complete, and the pacing of N
//! owners at a time. Pure; the CLI does the requests and the waiting.

use std::collections::VecDeque;

use injector_core::selector::{LabelSelector, Labels};
use serde_json::{Value, json};

use crate::snapshot::ObjectKey;

/// The pod-template annotation `kubectl rollout restart` sets.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// The strategic-merge patch of `kubectl rollout restart`: the pod template's
/// `kubectl.kubernetes.io/restartedAt` set to `now` (RFC 3339).
pub fn restart_patch(now: &str) -> Value {
    json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}})
}

/// Whether `kind` can be restarted by a rollout (`kubectl rollout restart` supports these).
pub fn restartable(kind: &str) -> bool {
    matches!(kind, "Deployment" | "StatefulSet" | "DaemonSet")
}

/// The PodDisruptionBudget that forbids disrupting pods with `labels` in `namespace` now (its
/// `status.disruptionsAllowed` is 0), with a sentence saying so; `None` when none does.
pub fn blocking_budget(budgets: &[Value], namespace: &str, labels: &Labels) -> Option<String> {
    budgets.iter().find_map(|budget| {
        let key = ObjectKey::of(budget);
        if key.namespace != namespace {
            return None;
        }
        // policy/v1: an empty selector selects every pod of the namespace, a missing one none.
        let selector = budget.pointer("/spec/selector").filter(|s| !s.is_null())?;
        let selector = LabelSelector::from_value(selector, "spec.selector").ok()?;
        if !selector.matches(labels) {
            return None;
        }
        let status = budget.get("status").unwrap_or(&Value::Null);
        let number = |field: &str| status.get(field).and_then(Value::as_i64).unwrap_or(0);
        (number("disruptionsAllowed") <= 0).then(|| {
            format!(
                "PodDisruptionBudget {}/{} allows 0 disruptions now (currentHealthy {}, desiredHealthy {})",
                key.namespace,
                key.name,
                number("currentHealthy"),
                number("desiredHealthy")
            )
        })
    })
}

/// Where a rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Every replica runs the new template and is available.
    Complete,
    /// Still rolling, with what kubectl's `rollout status` would say.
    Waiting(String),
    /// The controller gave up (`ProgressDeadlineExceeded`).
    Failed(String),
}

/// Where the rollout of a Deployment, StatefulSet or DaemonSet stands (kubectl's
/// `rollout status` rules).
pub fn progress(object: &Value) -> Progress {
    let int = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64);
    let generation = int("/metadata/generation").unwrap_or(0);
    if int("/status/observedGeneration").unwrap_or(0) < generation {
        return Progress::Waiting("waiting for the controller to observe the restart".to_owned());
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let status = |field: &str| int(&format!("/status/{field}")).unwrap_or(0);
    match kind {
        "Deployment" => {
            let failed = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| {
                    c.get("type") == Some(&json!("Progressing"))
                        && c.get("reason") == Some(&json!("ProgressDeadlineExceeded"))
                });
            if failed {
                return Progress::Failed("progress deadline exceeded".to_owned());
            }
            let replicas = int("/spec/replicas").unwrap_or(1);
            let updated = status("updatedReplicas");
            if updated < replicas {
                return Progress::Waiting(format!("{updated} of {replicas} new replicas have been updated"));
            }
            if status("replicas") > updated {
                return Progress::Waiting(format!(
                    "{} old replicas are pending termination",
                    status("replicas") - updated
                ));
            }
            if status("availableReplicas") < updated {
                return Progress::Waiting(format!(
                    "{} of {updated} updated replicas are available",
                    status("availableReplicas")
                ));
            }
            Progress::Complete
        }
        "StatefulSet" => {
            if object.pointer("/spec/updateStrategy/type") == Some(&json!("OnDelete")) {
                return Progress::Complete;
            }
            let replicas = int("/spec/replicas").unwrap_or(1);
            if status("readyReplicas") < replicas {
                return Progress::Waiting(format!(
                    "{} of {replicas} pods are ready",
                    status("readyReplicas")
                ));
            }
            let revision = |field: &str| {
                object
                    .pointer(&format!("/status/{field}"))
                    .and_then(Value::as_str)
            };
            if revision("updateRevision") != revision("currentRevision") {
                return Progress::Waiting(format!(
                    "{} of {replicas} pods are updated",
                    status("updatedReplicas")
                ));
            }
            Progress::Complete
        }
        "DaemonSet" => {
            let desired = status("desiredNumberScheduled");
            if status("updatedNumberScheduled") < desired {
                return Progress::Waiting(format!(
                    "{} of {desired} updated pods are scheduled",
                    status("updatedNumberScheduled")
                ));
            }
            if status("numberAvailable") < desired {
                return Progress::Waiting(format!(
                    "{} of {desired} updated pods are available",
                    status("numberAvailable")
                ));
            }
            Progress::Complete
        }
        other => Progress::Failed(format!("a {other} has no rollout")),
    }
}

/// N owners at a time: which to start next as others finish.
#[derive(Debug, Clone)]
pub struct Pacer {
    queue: VecDeque<ObjectKey>,
    in_flight: Vec<ObjectKey>,
    max_concurrent: usize,
}

impl Pacer {
    /// Restarts `owners`, in this order, at most `max_concurrent` (at least 1) at a time.
    pub fn new(owners: impl IntoIterator<Item = ObjectKey>, max_concurrent: usize) -> Self {
        Self {
            queue: owners.into_iter().collect(),
            in_flight: Vec::new(),
            max_concurrent: max_concurrent.max(1),
        }
    }

    /// The owners to start now (filling the free slots), marked in flight.
    pub fn start(&mut self) -> Vec<ObjectKey> {
        let mut started = Vec::new();
        while self.in_flight.len() < self.max_concurrent {
            let Some(next) = self.queue.pop_front() else { break };
            self.in_flight.push(next.clone());
            started.push(next);
        }
        started
    }

    /// Marks `owner` finished (completed, skipped or failed), freeing its slot.
    pub fn finish(&mut self, owner: &ObjectKey) {
        self.in_flight.retain(|o| o != owner);
    }

    /// The owners in flight.
    pub fn in_flight(&self) -> &[ObjectKey] {
        &self.in_flight
    }

    /// Gives up on what has not started, returning it.
    pub fn abandon(&mut self) -> Vec<ObjectKey> {
        self.queue.drain(..).collect()
    }

    /// Whether everything has started and finished.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("Deployment", "shop", name)
    }

    #[test]
    fn the_patch_is_kubectls() {
        assert_eq!(
            restart_patch("2026-12-02T01:00:00Z"),
            json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-12-02T01:00:00Z"}}}}})
        );
        assert!(restartable("StatefulSet") && !restartable("Job"));
    }

    #[test]
    fn a_budget_with_no_disruptions_left_blocks_its_pods_only() {
        let budgets = [
            json!({"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"selector": {"matchLabels": {"app": "web"}}},
                   "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 1}}),
            json!({"kind": "PodDisruptionBudget", "metadata": {"name": "api", "namespace": "shop"},
                   "spec": {"selector": {"matchLabels": {"app": "api"}}}, "status": {"disruptionsAllowed": 1}}),
            json!({"kind": "PodDisruptionBudget", "metadata": {"name": "none", "namespace": "shop"}, "spec": {}}),
        ];
        let labels = |app: &str| Labels::from([("app".to_owned(), app.to_owned())]);
        assert_eq!(
            blocking_budget(&budgets, "shop", &labels("web")).as_deref(),
            Some(
                "PodDisruptionBudget shop/web allows 0 disruptions now (currentHealthy 0, desiredHealthy 1)"
            )
        );
        assert_eq!(blocking_budget(&budgets, "shop", &labels("api")), None);
        assert_eq!(blocking_budget(&budgets, "shop", &labels("other")), None);
        assert_eq!(blocking_budget(&budgets, "other", &labels("web")), None);
        let everything = [
            json!({"kind": "PodDisruptionBudget", "metadata": {"name": "all", "namespace": "shop"},
                                 "spec": {"selector": {}}, "status": {"disruptionsAllowed": 0}}),
        ];
        assert!(blocking_budget(&everything, "shop", &labels("x")).is_some());
    }

    #[test]
    fn deployment_progress_follows_kubectl() {
        let deployment = |generation: i64, status: Value| json!({"kind": "Deployment", "metadata": {"generation": generation}, "spec": {"replicas": 2}, "status": status});
        assert!(matches!(
            progress(&deployment(2, json!({"observedGeneration": 1}))),
            Progress::Waiting(_)
        ));
        assert_eq!(
            progress(&deployment(
                2,
                json!({"observedGeneration": 2, "updatedReplicas": 1, "replicas": 3})
            )),
            Progress::Waiting("1 of 2 new replicas have been updated".to_owned())
        );
        assert_eq!(
            progress(&deployment(
                2,
                json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3})
            )),
            Progress::Waiting("1 old replicas are pending termination".to_owned())
        );
        assert_eq!(
            progress(&deployment(
                2,
                json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2})
            )),
            Progress::Complete
        );
        let stuck = deployment(
            2,
            json!({"observedGeneration": 2, "conditions": [{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}]}),
        );
        assert!(matches!(progress(&stuck), Progress::Failed(_)));
        let daemon_set = json!({"kind": "DaemonSet", "metadata": {"generation": 1},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 2}});
        assert!(matches!(progress(&daemon_set), Progress::Waiting(_)));
        let stateful_set = json!({"kind": "StatefulSet", "metadata": {"generation": 1}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "readyReplicas": 1, "currentRevision": "a", "updateRevision": "a"}});
        assert_eq!(progress(&stateful_set), Progress::Complete);
    }

    #[test]
    fn the_pacer_keeps_n_in_flight() {
        let mut pacer = Pacer::new(["a", "b", "c", "d", "e"].map(key), 2);
        assert_eq!(pacer.start(), [key("a"), key("b")]);
        assert_eq!(pacer.start(), Vec::<ObjectKey>::new());
        pacer.finish(&key("b"));
        assert_eq!(pacer.start(), [key("c")]);
        assert_eq!(pacer.in_flight(), [key("a"), key("c")]);
        assert_eq!(pacer.abandon(), [key("d"), key("e")]);
        pacer.finish(&key("a"));
        pacer.finish(&key("c"));
        assert!(pacer.is_done());
        assert_eq!(Pacer::new([key("a")], 0).start(), [key("a")]);
    }
}
