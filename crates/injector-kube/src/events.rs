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
//!
//! Anyone who reaches the webhook's port can POST a review naming any namespace and owner, so a
//! record becomes an Event only for what the webhook really serves ([`Scope`]): a namespace that
//! exists and that one of our webhooks' `namespaceSelector`s selects (the API server would never
//! send a review for another), a pod that names no other namespace than its review's, and a
//! ReplicaSet or Job owner that exists there with the uid the pod names. Each namespace gets a
//! budget of owner lookups and new Events ([`NamespaceBudget`]), and the groups kept at once are
//! capped ([`MAX_GROUPS`]); what is left out is counted in
//! `sidecar_injector_events_skipped_total{reason}`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, MicroTime, OwnerReference};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{Selector, SelectorExt as _};
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
    /// The record for a pod (the admission's object) in the review's `namespace`, and its
    /// outcome; `None` when the pod names another namespace than its review's (no API server
    /// sends that).
    pub fn from_pod(pod: &Value, namespace: &str, outcome: Outcome) -> Option<Admitted> {
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
        if !ns.is_empty() && ns != namespace {
            return None;
        }
        Some(Admitted {
            namespace: namespace.to_owned(),
            pod: if name.is_empty() {
                text("generateName")
            } else {
                name
            },
            owner,
            outcome,
        })
    }
}

/// What the webhook serves: the namespaces that exist (with their labels) and the
/// `namespaceSelector` of each of our webhooks. Shared between the watches that fill it and the
/// handler's [`EventSink`], which asks it of every record.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    inner: Arc<RwLock<ScopeState>>,
}

#[derive(Debug, Default)]
struct ScopeState {
    /// Each webhook's `namespaceSelector` (`None` for a webhook without one: every namespace);
    /// `None` until our webhook configurations are first listed.
    selectors: Option<Vec<Option<Selector>>>,
    /// The labels of every namespace; `None` until first listed.
    namespaces: Option<HashMap<String, BTreeMap<String, String>>>,
}

impl Scope {
    /// Our webhook configurations, as last seen.
    pub fn set_webhooks(&self, configs: &[MutatingWebhookConfiguration]) {
        let selectors = configs
            .iter()
            .flat_map(|mwc| mwc.webhooks.iter().flatten())
            .map(|w| w.namespace_selector.clone().map(parse_selector))
            .collect();
        if let Ok(mut state) = self.inner.write() {
            state.selectors = Some(selectors);
        }
    }

    /// The namespaces and their labels, as last seen.
    pub fn set_namespaces(&self, namespaces: HashMap<String, BTreeMap<String, String>>) {
        if let Ok(mut state) = self.inner.write() {
            state.namespaces = Some(namespaces);
        }
    }

    /// Whether one of our webhooks selects `namespace` (which must exist). Nothing is served
    /// until both the webhooks and the namespaces have been listed.
    pub fn serves(&self, namespace: &str) -> bool {
        let Ok(state) = self.inner.read() else {
            return false;
        };
        let (Some(selectors), Some(namespaces)) = (&state.selectors, &state.namespaces) else {
            return false;
        };
        namespaces
            .get(namespace)
            .is_some_and(|labels| selects(selectors, labels))
    }
}

/// A webhook's `namespaceSelector`; one that does not parse (the API server refuses those)
/// selects nothing.
fn parse_selector(selector: LabelSelector) -> Selector {
    Selector::try_from(selector).unwrap_or_else(|_| {
        // `NotIn` with no values matches everything; `In` with none, nothing.
        kube::core::Expression::In(String::new(), Default::default()).into()
    })
}

/// Whether any of the webhooks' selectors selects a namespace with these labels. Pure.
pub fn selects(selectors: &[Option<Selector>], labels: &BTreeMap<String, String>) -> bool {
    selectors.iter().any(|selector| match selector {
        None => true,
        Some(selector) => selector.matches(labels),
    })
}

/// New work (an owner lookup, a new Event) one namespace may cause: a burst, then one per
/// interval. Pure.
#[derive(Debug)]
pub struct NamespaceBudget {
    burst: u32,
    every: Duration,
    buckets: HashMap<String, (u32, Instant)>,
}

impl NamespaceBudget {
    /// `burst` at once, then one more every `every`.
    pub fn new(burst: u32, every: Duration) -> Self {
        NamespaceBudget {
            burst,
            every,
            buckets: HashMap::new(),
        }
    }

    /// Takes one unit of `namespace`'s budget at `now`; `false` when it is spent.
    pub fn take(&mut self, namespace: &str, now: Instant) -> bool {
        let (burst, every) = (self.burst, self.every);
        let (tokens, since) = self.buckets.entry(namespace.to_owned()).or_insert((burst, now));
        let earned =
            u32::try_from(now.saturating_duration_since(*since).as_nanos() / every.as_nanos().max(1))
                .unwrap_or(u32::MAX);
        if earned > 0 {
            *tokens = tokens.saturating_add(earned).min(burst);
            *since = now;
        }
        if *tokens == 0 {
            return false;
        }
        *tokens -= 1;
        true
    }

    /// Forgets the namespaces whose budget is whole again at `now`.
    pub fn forget_refilled(&mut self, now: Instant) {
        let (burst, every) = (self.burst, self.every);
        self.buckets.retain(|_, (tokens, since)| {
            let missing = burst.saturating_sub(*tokens);
            now.saturating_duration_since(*since) < every.saturating_mul(missing)
        });
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

/// Groups kept at once: a new group beyond it is left out until older ones expire.
pub const MAX_GROUPS: usize = 4096;

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
    /// A new group, but [`MAX_GROUPS`] are open: left out.
    Full,
}

impl Aggregator {
    /// Whether `key`'s group is open at `now` (a record of it would be counted in).
    pub fn is_open(&self, key: &GroupKey, now: Instant, window: Duration) -> bool {
        self.groups
            .get(key)
            .is_some_and(|g| now.duration_since(g.first) < window)
    }

    /// Records one occurrence at `now`; groups older than `window` start again.
    pub fn record(&mut self, key: &GroupKey, now: Instant, window: Duration) -> Step {
        let full = self.groups.len() >= MAX_GROUPS && !self.groups.contains_key(key);
        match self.groups.get_mut(key) {
            Some(g) if now.duration_since(g.first) < window => {
                g.count += 1;
                g.last = now;
                Step::Counted
            }
            None if full => Step::Full,
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// Why a record made no Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// Its namespace is not one our webhooks select (or does not exist).
    Unserved,
    /// Its namespace spent its budget of lookups and new Events.
    RateLimited,
    /// Its ReplicaSet or Job owner does not exist in its namespace (or has another uid).
    NoOwner,
    /// [`MAX_GROUPS`] groups are open.
    Full,
}

impl Skip {
    fn as_str(self) -> &'static str {
        match self {
            Skip::Unserved => "unserved",
            Skip::RateLimited => "rate_limited",
            Skip::NoOwner => "no_owner",
            Skip::Full => "full",
        }
    }
}

/// Counts the records that made no Event, by reason.
#[derive(Debug, Clone, Default)]
struct Skipped(Family<ReasonLabel, Counter>);

impl Skipped {
    fn count(&self, skip: Skip) {
        self.0
            .get_or_create(&ReasonLabel {
                reason: skip.as_str(),
            })
            .inc();
    }
}

/// The handler's side: cheap, never blocks.
#[derive(Debug, Clone)]
pub struct EventSink {
    queue: mpsc::Sender<Admitted>,
    scope: Scope,
    dropped: Counter,
    skipped: Skipped,
    written: Family<ResultLabel, Counter>,
}

impl EventSink {
    /// Hands a record to the writer if its namespace is one the webhook serves; a full queue
    /// drops it (counted).
    pub fn observe(&self, record: Admitted) {
        if !self.scope.serves(&record.namespace) {
            self.skipped.count(Skip::Unserved);
            return;
        }
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
        registry.register(
            "sidecar_injector_events_skipped",
            "Admission records that made no Event, by reason (unserved: a namespace no webhook of ours selects; rate_limited: the namespace's budget of lookups and new Events is spent; no_owner: the owner named does not exist there; full: too many open groups).",
            self.skipped.0.clone(),
        );
    }
}

/// Starts the writer; `identity` is the reporting instance (the pod name); `scope` says which
/// namespaces the webhook serves (filled by cluster mode's watches).
pub fn spawn(client: Client, identity: String, scope: Scope) -> EventSink {
    let (tx, rx) = mpsc::channel(1024);
    let sink = EventSink {
        queue: tx,
        scope,
        dropped: Counter::default(),
        skipped: Skipped::default(),
        written: Family::default(),
    };
    let writer = Writer {
        client,
        identity,
        owners: HashMap::new(),
        aggregator: Aggregator::default(),
        budget: NamespaceBudget::new(NAMESPACE_BURST, NAMESPACE_REFILL),
        written: sink.written.clone(),
        skipped: sink.skipped.clone(),
    };
    tokio::spawn(writer.run(rx));
    sink
}

const WINDOW: Duration = Duration::from_secs(600);
const FLUSH: Duration = Duration::from_secs(5);
const OWNER_TTL: Duration = Duration::from_secs(300);
/// Owners kept in the lookup cache at once.
const MAX_OWNERS: usize = 4096;
/// Owner lookups and new Events one namespace may cause at once (a rollout of a hundred distinct
/// bare pods or Jobs)…
const NAMESPACE_BURST: u32 = 100;
/// …then one more every this long.
const NAMESPACE_REFILL: Duration = Duration::from_secs(1);

struct Writer {
    client: Client,
    identity: String,
    owners: HashMap<(String, WorkloadRef), (WorkloadRef, Instant)>,
    aggregator: Aggregator,
    budget: NamespaceBudget,
    written: Family<ResultLabel, Counter>,
    skipped: Skipped,
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
            Some(owner) => match self.resolve(&record.namespace, owner).await {
                Ok(workload) => workload,
                Err(skip) => {
                    self.skipped.count(skip);
                    return;
                }
            },
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
        let now = Instant::now();
        if !self.aggregator.is_open(&key, now, WINDOW) && !self.budget.take(&record.namespace, now) {
            self.skipped.count(Skip::RateLimited);
            return;
        }
        match self.aggregator.record(&key, now, WINDOW) {
            Step::Create => {}
            Step::Counted => return,
            Step::Full => {
                self.skipped.count(Skip::Full);
                return;
            }
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
        self.budget.forget_refilled(Instant::now());
    }

    fn count(&self, ok: bool) {
        self.written
            .get_or_create(&ResultLabel {
                result: if ok { "success" } else { "failure" },
            })
            .inc();
    }

    /// A ReplicaSet's Deployment, a Job's CronJob (one API read, cached, from the namespace's
    /// budget); anything else as is. A ReplicaSet or Job that is not there, or has another uid
    /// than the pod names, is [`Skip::NoOwner`]; one that cannot be read (the API server
    /// unreachable) is taken as named.
    async fn resolve(&mut self, namespace: &str, owner: &WorkloadRef) -> Result<WorkloadRef, Skip> {
        let cache_key = (namespace.to_owned(), owner.clone());
        if let Some((resolved, _)) = self.owners.get(&cache_key) {
            return Ok(resolved.clone());
        }
        let looked_up = match owner.kind.as_str() {
            "ReplicaSet" if owner.api_version == "apps/v1" => Some(
                self.look_up::<ReplicaSet>(namespace, &owner.name)
                    .await
                    .map(|found| found.map(|rs| rs.metadata)),
            ),
            "Job" if owner.api_version == "batch/v1" => Some(
                self.look_up::<Job>(namespace, &owner.name)
                    .await
                    .map(|found| found.map(|job| job.metadata)),
            ),
            _ => None,
        };
        let parents = match looked_up {
            None => None,
            Some(Err(skip)) => return Err(skip),
            Some(Ok(None)) => None,
            Some(Ok(Some(meta))) => {
                if owner.uid.is_some() && meta.uid != owner.uid {
                    return Err(Skip::NoOwner);
                }
                meta.owner_references
            }
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
        if self.owners.len() < MAX_OWNERS {
            self.owners.insert(cache_key, (resolved.clone(), Instant::now()));
        }
        Ok(resolved)
    }

    /// Reads a namespaced object, from the namespace's budget: `Ok(None)` when it cannot be
    /// read (taken as named), [`Skip::NoOwner`] when it does not exist.
    async fn look_up<K>(&mut self, namespace: &str, name: &str) -> Result<Option<K>, Skip>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        if !self.budget.take(namespace, Instant::now()) {
            return Err(Skip::RateLimited);
        }
        match Api::<K>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
        {
            Ok(Some(object)) => Ok(Some(object)),
            Ok(None) => Err(Skip::NoOwner),
            Err(error) => {
                tracing::debug!(%error, %namespace, %name, "cannot read the owner of a pod; taking it as named");
                Ok(None)
            }
        }
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
        let r = Admitted::from_pod(&pod, "shop", Outcome::Injected).expect("a record");
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
        let elsewhere = json!({"metadata": {"name": "p", "namespace": "kube-system"}});
        assert_eq!(
            Admitted::from_pod(&elsewhere, "shop", Outcome::Injected),
            None,
            "a pod naming another namespace than its review makes no record"
        );
        let same = json!({"metadata": {"name": "p", "namespace": "shop"}});
        assert!(Admitted::from_pod(&same, "shop", Outcome::Injected).is_some());
    }

    fn mwc(selectors: &[Value]) -> MutatingWebhookConfiguration {
        let webhooks: Vec<Value> = selectors
            .iter()
            .enumerate()
            .map(|(i, selector)| {
                let mut w = json!({"name": format!("w{i}.example.com"),
                    "clientConfig": {"url": "https://127.0.0.1:1/inject"},
                    "admissionReviewVersions": ["v1"], "sideEffects": "None"});
                if !selector.is_null() {
                    w["namespaceSelector"] = selector.clone();
                }
                w
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "istio-sidecar-injector"}, "webhooks": webhooks}))
            .expect("mwc")
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_namespaces_a_webhook_selects_are_served() {
        let scope = Scope::default();
        let namespaces = HashMap::from([
            ("shop".to_owned(), labels(&[("istio-injection", "enabled")])),
            ("canary".to_owned(), labels(&[("istio.io/rev", "canary")])),
            ("kube-system".to_owned(), labels(&[])),
        ]);
        scope.set_namespaces(namespaces.clone());
        assert!(!scope.serves("shop"), "nothing until our webhooks are listed");
        // Istio's two webhooks: by namespace label, and by the pod's label where the namespace
        // says nothing (its objectSelector is the pod's, not looked at here).
        scope.set_webhooks(&[mwc(&[
            json!({"matchExpressions": [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}]}),
            json!({"matchExpressions": [
                {"key": "istio-injection", "operator": "DoesNotExist"},
                {"key": "istio.io/rev", "operator": "DoesNotExist"}]}),
        ])]);
        assert!(scope.serves("shop"));
        assert!(scope.serves("kube-system"), "selected by the second webhook");
        assert!(!scope.serves("canary"), "another revision's namespace");
        assert!(!scope.serves("nowhere"), "a namespace that does not exist");
        scope.set_webhooks(&[mwc(&[json!({"matchLabels": {"istio-injection": "enabled"}})])]);
        assert!(!scope.serves("kube-system"));
        scope.set_webhooks(&[mwc(&[Value::Null])]);
        assert!(scope.serves("canary"), "no namespaceSelector: every namespace");
        assert!(!scope.serves("nowhere"));
        scope.set_webhooks(&[]);
        assert!(!scope.serves("shop"), "no webhook of ours: nothing");
        scope.set_webhooks(&[mwc(&[
            json!({"matchExpressions": [{"key": "x", "operator": "Sideways"}]}),
        ])]);
        assert!(
            !scope.serves("shop"),
            "a selector that does not parse selects nothing"
        );
    }

    #[test]
    fn each_namespace_has_a_budget_of_new_work() {
        let mut budget = NamespaceBudget::new(3, Duration::from_secs(1));
        let start = Instant::now();
        assert!((0..3).all(|_| budget.take("shop", start)), "the burst");
        assert!(!budget.take("shop", start), "spent");
        assert!(budget.take("other", start), "another namespace has its own");
        assert!(!budget.take("shop", start + Duration::from_millis(900)));
        assert!(
            budget.take("shop", start + Duration::from_millis(1900)),
            "one a second"
        );
        assert!(!budget.take("shop", start + Duration::from_millis(1950)));
        budget.forget_refilled(start + Duration::from_secs(2));
        assert_eq!(
            budget.buckets.keys().collect::<Vec<_>>(),
            ["shop"],
            "the other is whole again, shop not yet"
        );
        budget.forget_refilled(start + Duration::from_secs(10));
        assert!(budget.buckets.is_empty(), "whole again: forgotten");
    }

    #[test]
    fn the_groups_kept_at_once_are_capped() {
        let mut a = Aggregator::default();
        let now = Instant::now();
        let w = Duration::from_secs(600);
        for i in 0..MAX_GROUPS {
            assert_eq!(
                a.record(&key(&format!("w{i}"), "SidecarInjected"), now, w),
                Step::Create
            );
        }
        assert_eq!(a.record(&key("one-more", "SidecarInjected"), now, w), Step::Full);
        assert_eq!(
            a.record(&key("w0", "SidecarInjected"), now, w),
            Step::Counted,
            "an open group still counts"
        );
        assert!(a.is_open(&key("w0", "SidecarInjected"), now, w));
        assert!(!a.is_open(&key("one-more", "SidecarInjected"), now, w));
        a.expire(now + w, w);
        assert_eq!(
            a.record(&key("one-more", "SidecarInjected"), now + w, w),
            Step::Create
        );
    }
}
