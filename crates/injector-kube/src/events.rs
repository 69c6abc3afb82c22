//! Events on the workload that owns an admitted pod: injected, skipped for a reason a user may
//! not expect, or denied — aggregated, so that a 1,000-replica scale-up makes one Event with a
//! count rather than 1,000, and never on the admission's path.
//!
//! The admission handler hands a small [`Admitted`] record to [`EventSink::observe`], which only
//! `try_send`s it into a bounded queue (a full queue drops it and counts the drop). A task
//! resolves the owner (a ReplicaSet's Deployment, a Job's CronJob, with a short cache), groups
//! records by workload and reason for a window, creates one `events.k8s.io/v1` Event per group
//! and then keeps its `series` count up to date. An Event that cannot be written is logged at
//! debug level and counted; nothing waits for it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::sync::mpsc;

/// What happened to one pod, as the Event writer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name, or its `generateName` when it has none yet.
    pub pod: String,
    /// The pod's controller owner reference, if any.
    pub owner: Option<WorkloadRef>,
    /// What was decided.
    pub outcome: Outcome,
}

/// A reference to a workload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadRef {
    /// `apps/v1`, `batch/v1`, `v1`.
    pub api_version: String,
    /// `Deployment`, `ReplicaSet`, `Job`, `Pod`, …
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its uid, when known.
    pub uid: Option<String>,
}

/// The decision, for the Event's reason and note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Injected.
    Injected,
    /// Not injected, by this rule of the decision (`defaultPolicy`, `neverInjectSelector`, …).
    Skipped(String),
    /// Refused, with the message the user got.
    Denied(String),
}

impl Admitted {
    /// The record for a pod (the admission's object) and its outcome.
    pub fn from_pod(pod: &Value, namespace: &str, outcome: Outcome) -> Admitted {
        let metadata = pod.get("metadata").unwrap_or(&Value::Null);
        let text = |k: &str| metadata.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let name = text("name");
        let owner = metadata
            .get("ownerReferences")
            .and_then(|r| serde_json::from_value::<Vec<OwnerReference>>(r.clone()).ok())
            .and_then(|refs| refs.into_iter().find(|r| r.controller == Some(true)))
            .map(|r| WorkloadRef {
                api_version: r.api_version,
                kind: r.kind,
                name: r.name,
                uid: Some(r.uid),
            });
        let ns = text("namespace");
        Admitted {
            namespace: if ns.is_empty() { namespace.to_owned() } else { ns },
            pod: if name.is_empty() {
                text("generateName")
            } else {
                name
            },
            owner,
            outcome,
        }
    }
}

/// `(type, reason, action, note)` of the Event for an outcome, or `None` when a user would
/// expect it and no Event is written (the pod asked not to be injected).
pub fn describe(outcome: &Outcome) -> Option<(&'static str, &'static str, &'static str, String)> {
    match outcome {
        Outcome::Injected => Some((
            "Normal",
            "SidecarInjected",
            "Inject",
            "Injected the sidecar".to_owned(),
        )),
        Outcome::Skipped(rule) => {
            let why = match rule.as_str() {
                "podOverride" => return None,
                "defaultPolicy" => {
                    "the injector's policy is disabled and the pod template does not ask for a sidecar (sidecar.istio.io/inject: \"true\")"
                }
                "invalidPolicy" => {
                    "the injector's policy is neither enabled nor disabled, which disables injection even for pods that ask"
                }
                "neverInjectSelector" => "the pod's labels match the injector's neverInjectSelector",
                "hostNetwork" => "the pod uses the host network",
                "ignoredNamespace" => "the namespace is a system namespace the injector never injects",
                "alreadyInjected" => return None,
                _ => "the injector decided not to inject it",
            };
            Some((
                "Normal",
                "SidecarInjectionSkipped",
                "Skip",
                format!("No sidecar: {why} ({rule})"),
            ))
        }
        Outcome::Denied(message) => Some((
            "Warning",
            "SidecarInjectionFailed",
            "Deny",
            format!("Pod creation refused by the sidecar injector: {message}"),
        )),
    }
}

/// Groups records per workload and reason within a window. Pure.
#[derive(Debug, Default)]
pub struct Aggregator {
    groups: HashMap<GroupKey, Group>,
}

/// A group: one workload, one reason.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// Namespace.
    pub namespace: String,
    /// The workload.
    pub workload: WorkloadRef,
    /// The Event's reason.
    pub reason: &'static str,
}

#[derive(Debug)]
struct Group {
    /// The Event's name once created.
    event: Option<String>,
    count: u32,
    written_count: u32,
    first: Instant,
    last: Instant,
}

/// What the writer should do for a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A new group: create its Event.
    Create,
    /// Counted into an existing group.
    Counted,
}

impl Aggregator {
    /// Records one occurrence at `now`; groups older than `window` start again.
    pub fn record(&mut self, key: &GroupKey, now: Instant, window: Duration) -> Step {
        match self.groups.get_mut(key) {
            Some(g) if now.duration_since(g.first) < window => {
                g.count += 1;
                g.last = now;
                Step::Counted
            }
            _ => {
                self.groups.insert(
                    key.clone(),
                    Group {
                        event: None,
                        count: 1,
                        written_count: 0,
                        first: now,
                        last: now,
                    },
                );
                Step::Create
            }
        }
    }

    /// The Event of a group was created with count 1.
    pub fn created(&mut self, key: &GroupKey, name: String) {
        if let Some(g) = self.groups.get_mut(key) {
            g.event = Some(name);
            g.written_count = 1;
        }
    }

    /// Groups whose count moved since it was last written: `(key, event name, count)`.
    pub fn due(&mut self) -> Vec<(GroupKey, String, u32)> {
        let mut out = Vec::new();
        for (key, g) in &mut self.groups {
            if let Some(name) = &g.event
                && g.count != g.written_count
            {
                out.push((key.clone(), name.clone(), g.count));
                g.written_count = g.count;
            }
        }
        out
    }

    /// Forgets groups idle for more than `window`.
    pub fn expire(&mut self, now: Instant, window: Duration) {
        self.groups.retain(|_, g| now.duration_since(g.last) < window);
    }

    /// How many groups are open.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether no group is open.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

/// The handler's side: cheap, never blocks.
#[derive(Debug, Clone)]
pub struct EventSink {
    queue: mpsc::Sender<Admitted>,
    dropped: Counter,
    written: Family<ResultLabel, Counter>,
}

impl EventSink {
    /// Hands a record to the writer; a full queue drops it (counted).
    pub fn observe(&self, record: Admitted) {
        if self.queue.try_send(record).is_err() {
            self.dropped.inc();
        }
    }

    /// Adds the Event metrics.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sidecar_injector_events_dropped",
            "Admission records dropped because the Event queue was full.",
            self.dropped.clone(),
        );
        registry.register(
            "sidecar_injector_events_written",
            "Events created or updated (series count), by result.",
            self.written.clone(),
        );
    }
}

/// Starts the writer; `identity` is the reporting instance (the pod name).
pub fn spawn(client: Client, identity: String) -> EventSink {
    let (tx, rx) = mpsc::channel(1024);
    let sink = EventSink {
        queue: tx,
        dropped: Counter::default(),
        written: Family::default(),
    };
    let writer = Writer {
        client,
        identity,
        owners: HashMap::new(),
        aggregator: Aggregator::default(),
        written: sink.written.clone(),
    };
    tokio::spawn(writer.run(rx));
    sink
}

const WINDOW: Duration = Duration::from_secs(600);
const FLUSH: Duration = Duration::from_secs(5);
const OWNER_TTL: Duration = Duration::from_secs(300);

struct Writer {
    client: Client,
    identity: String,
    owners: HashMap<(String, WorkloadRef), (WorkloadRef, Instant)>,
    aggregator: Aggregator,
    written: Family<ResultLabel, Counter>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Admitted>) {
        let mut flush = tokio::time::interval(FLUSH);
        loop {
            tokio::select! {
                record = rx.recv() => match record {
                    Some(record) => self.handle(record).await,
                    None => return,
                },
                _ = flush.tick() => self.flush().await,
            }
        }
    }

    async fn handle(&mut self, record: Admitted) {
        let Some((type_, reason, action, note)) = describe(&record.outcome) else {
            return;
        };
        let workload = match &record.owner {
            Some(owner) => self.resolve(&record.namespace, owner).await,
            None => WorkloadRef {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: record.pod.clone(),
                uid: None,
            },
        };
        let key = GroupKey {
            namespace: record.namespace.clone(),
            workload: workload.clone(),
            reason,
        };
        if self.aggregator.record(&key, Instant::now(), WINDOW) == Step::Counted {
            return;
        }
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let name = format!(
            "{}.{:x}",
            workload.name.trim_end_matches('-'),
            k8s_openapi::jiff::Timestamp::now().as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(record.namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(now),
            type_: Some(type_.into()),
            reason: Some(reason.into()),
            action: Some(action.into()),
            note: Some(truncate(&format!("{note} (pod {})", record.pod), 1024)),
            regarding: Some(ObjectReference {
                api_version: Some(workload.api_version.clone()),
                kind: Some(workload.kind.clone()),
                name: Some(workload.name.clone()),
                namespace: Some(record.namespace.clone()),
                uid: workload.uid.clone(),
                ..ObjectReference::default()
            }),
            reporting_controller: Some("sidecar-injector.istio.io".into()),
            reporting_instance: Some(truncate(&self.identity, 128)),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &record.namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                self.aggregator.created(&key, name);
                self.count(true);
            }
            Err(error) => {
                self.count(false);
                tracing::debug!(%error, namespace = %record.namespace, workload = %workload.name, "cannot write the Event");
            }
        }
    }

    /// Updates the count of the groups that grew.
    async fn flush(&mut self) {
        for (key, name, count) in self.aggregator.due() {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &key.namespace);
            let series = EventSeries {
                count: i32::try_from(count).unwrap_or(i32::MAX),
                last_observed_time: MicroTime(k8s_openapi::jiff::Timestamp::now()),
            };
            let patch = serde_json::json!({ "series": series });
            let result = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            self.count(result.is_ok());
            if let Err(error) = result {
                tracing::debug!(%error, event = %name, "cannot update the Event's count");
            }
        }
        self.aggregator.expire(Instant::now(), WINDOW);
        self.owners.retain(|_, (_, at)| at.elapsed() < OWNER_TTL);
    }

    fn count(&self, ok: bool) {
        self.written
            .get_or_create(&ResultLabel {
                result: if ok { "success" } else { "failure" },
            })
            .inc();
    }

    /// A ReplicaSet's Deployment, a Job's CronJob (one API read, cached); anything else as is.
    async fn resolve(&mut self, namespace: &str, owner: &WorkloadRef) -> WorkloadRef {
        let cache_key = (namespace.to_owned(), owner.clone());
        if let Some((resolved, _)) = self.owners.get(&cache_key) {
            return resolved.clone();
        }
        let parents = match owner.kind.as_str() {
            "ReplicaSet" if owner.api_version == "apps/v1" => {
                Api::<ReplicaSet>::namespaced(self.client.clone(), namespace)
                    .get_opt(&owner.name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|rs| rs.metadata.owner_references)
            }
            "Job" if owner.api_version == "batch/v1" => {
                Api::<Job>::namespaced(self.client.clone(), namespace)
                    .get_opt(&owner.name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|job| job.metadata.owner_references)
            }
            _ => None,
        };
        let resolved = parents
            .and_then(|refs| refs.into_iter().find(|r| r.controller == Some(true)))
            .map_or_else(
                || owner.clone(),
                |r| WorkloadRef {
                    api_version: r.api_version,
                    kind: r.kind,
                    name: r.name,
                    uid: Some(r.uid),
                },
            );
        self.owners.insert(cache_key, (resolved.clone(), Instant::now()));
        resolved
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str, reason: &'static str) -> GroupKey {
        GroupKey {
            namespace: "shop".into(),
            workload: WorkloadRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: name.into(),
                uid: None,
            },
            reason,
        }
    }

    #[test]
    fn a_scale_up_makes_one_event_with_a_count() {
        let mut a = Aggregator::default();
        let start = Instant::now();
        let w = Duration::from_secs(600);
        let k = key("web", "SidecarInjected");
        assert_eq!(a.record(&k, start, w), Step::Create);
        a.created(&k, "web.1".into());
        for i in 1..1000 {
            assert_eq!(a.record(&k, start + Duration::from_millis(i), w), Step::Counted);
        }
        assert_eq!(a.due(), vec![(k.clone(), "web.1".to_owned(), 1000)]);
        assert_eq!(a.due(), vec![], "written once");
        assert_eq!(
            a.record(&key("web", "SidecarInjectionFailed"), start, w),
            Step::Create,
            "another reason, another Event"
        );
        assert_eq!(
            a.record(&k, start + w, w),
            Step::Create,
            "a new window starts a new Event"
        );
        a.expire(start + w * 3, w);
        assert!(a.is_empty());
    }

    #[test]
    fn records_and_descriptions() {
        let pod = json!({"metadata": {"generateName": "web-5d8f9-", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9", "uid": "u1", "controller": true}]}});
        let r = Admitted::from_pod(&pod, "shop", Outcome::Injected);
        assert_eq!(r.pod, "web-5d8f9-");
        assert_eq!(r.namespace, "shop");
        assert_eq!(r.owner.as_ref().map(|o| o.kind.as_str()), Some("ReplicaSet"));
        assert!(
            describe(&Outcome::Skipped("podOverride".into())).is_none(),
            "asked for: no Event"
        );
        let (t, reason, _, note) = describe(&Outcome::Skipped("invalidPolicy".into())).expect("event");
        assert_eq!((t, reason), ("Normal", "SidecarInjectionSkipped"));
        assert!(note.contains("neither enabled nor disabled"), "{note}");
        assert_eq!(
            describe(&Outcome::Denied("bad".into())).map(|d| d.0),
            Some("Warning")
        );
        assert_eq!(truncate("héllo", 2), "h");
    }
}
