//! The recent admissions: a bounded ring buffer the admission path pushes into without waiting.
//!
//! A push takes the lock only if it is free (`try_lock`): when the console happens to be
//! copying the ring at that instant, the entry is counted as dropped instead of making the
//! admission wait. The console copies `Arc`s under the lock (microseconds for the whole ring)
//! and does everything else outside it. Each entry may keep a bounded copy of its
//! AdmissionReview so the console can re-run the explanation on demand; larger reviews are not
//! kept (their explanation is then unavailable), so the ring holds at most
//! `capacity × MAX_KEPT_REVIEW` bytes of them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;

/// Admissions kept (the oldest goes when a new one arrives).
pub const DEFAULT_CAPACITY: usize = 200;

/// Reviews up to this size are kept for re-explaining; 200 of them are at most 9.4 MiB.
pub const MAX_KEPT_REVIEW: usize = 48 << 10;

/// The controller that owns a pod (`metadata.ownerReferences[controller=true]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    /// Its kind, e.g. `ReplicaSet`.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// One admission, as the console lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionEntry {
    /// Its number in this process (the first admission is 1).
    pub id: u64,
    /// When it was answered, Unix milliseconds.
    pub at_ms: i64,
    /// `request.namespace`.
    pub namespace: String,
    /// The pod's name, or its generateName followed by `*****`.
    pub pod: String,
    /// The owning controller, if any.
    pub owner: Option<Owner>,
    /// `injected`, `skipped`, `denied` or `error`.
    pub decision: &'static str,
    /// The deciding rule (injected/skipped) or the message (denied/error).
    pub reason: String,
    /// HTTP status of the answer.
    pub status: u16,
    /// Time to answer, microseconds.
    pub duration_us: u64,
    /// Answered from the outcome cache.
    pub cached: bool,
    /// Whether the review was kept, so the explanation can be re-run.
    pub explainable: bool,
    /// The AdmissionReview as received, when small enough to keep.
    #[serde(skip)]
    pub review: Option<Bytes>,
}

/// The ring of recent admissions.
#[derive(Debug)]
pub struct AdmissionRing {
    entries: Mutex<VecDeque<Arc<AdmissionEntry>>>,
    capacity: usize,
    next_id: AtomicU64,
    dropped: AtomicU64,
}

impl AdmissionRing {
    /// An empty ring of `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        AdmissionRing {
            entries: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
            next_id: AtomicU64::new(1),
            dropped: AtomicU64::new(0),
        }
    }

    /// Adds an entry (its `id` is assigned here), evicting the oldest when full. Never waits:
    /// if the lock is held, the entry is dropped and counted.
    pub fn push(&self, mut entry: AdmissionEntry) {
        entry.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        entry.explainable = entry.review.is_some();
        let entry = Arc::new(entry);
        let evicted = match self.entries.try_lock() {
            Ok(mut entries) => {
                let evicted = if entries.len() == self.capacity {
                    entries.pop_front()
                } else {
                    None
                };
                entries.push_back(entry);
                evicted
            }
            Err(_) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                None
            }
        };
        // The evicted entry (and its review copy) is freed outside the lock.
        drop(evicted);
    }

    /// The entries, newest first.
    pub fn snapshot(&self) -> Vec<Arc<AdmissionEntry>> {
        match self.entries.lock() {
            Ok(entries) => entries.iter().rev().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The entry numbered `id`, if still in the ring.
    pub fn get(&self, id: u64) -> Option<Arc<AdmissionEntry>> {
        let entries = self.entries.lock().ok()?;
        entries.iter().find(|e| e.id == id).cloned()
    }

    /// Entries that could not be recorded because the console was reading the ring.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// How many entries the ring keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// What the admissions list is filtered by (all optional; empty matches everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Exact namespace.
    pub namespace: String,
    /// Exact decision (`injected`, `skipped`, `denied`, `error`).
    pub decision: String,
    /// Case-insensitive text in the pod, namespace, owner or reason.
    pub text: String,
}

impl Filter {
    /// Reads `namespace`, `decision` and `q` from a URL query string.
    pub fn from_query(query: Option<&str>) -> Self {
        let mut filter = Filter::default();
        for (key, value) in query_pairs(query.unwrap_or("")) {
            match key.as_str() {
                "namespace" => filter.namespace = value,
                "decision" => filter.decision = value,
                "q" => filter.text = value.to_lowercase(),
                _ => {}
            }
        }
        filter
    }

    /// Whether `entry` passes.
    pub fn matches(&self, entry: &AdmissionEntry) -> bool {
        if !self.namespace.is_empty() && entry.namespace != self.namespace {
            return false;
        }
        if !self.decision.is_empty() && entry.decision != self.decision {
            return false;
        }
        if self.text.is_empty() {
            return true;
        }
        let owner = entry
            .owner
            .as_ref()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .unwrap_or_default();
        [&entry.pod, &entry.namespace, &owner, &entry.reason]
            .iter()
            .any(|field| field.to_lowercase().contains(&self.text))
    }
}

/// `a=1&b=x%20y` as decoded pairs (`+` is a space, as forms send it).
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

fn decode_component(text: &str) -> String {
    crate::path_params::percent_decode_path(&text.replace('+', " "))
}

/// The controller among a pod's `ownerReferences`.
pub fn owner_of(pod: &serde_json::Value) -> Option<Owner> {
    let refs = pod.pointer("/metadata/ownerReferences")?.as_array()?;
    let owner = refs
        .iter()
        .find(|r| r.get("controller").and_then(serde_json::Value::as_bool) == Some(true))
        .or_else(|| refs.first())?;
    let text = |key: &str| {
        owner
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Some(Owner {
        kind: text("kind"),
        name: text("name"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(namespace: &str, pod: &str, decision: &'static str) -> AdmissionEntry {
        AdmissionEntry {
            id: 0,
            at_ms: 0,
            namespace: namespace.into(),
            pod: pod.into(),
            owner: None,
            decision,
            reason: "rule".into(),
            status: 200,
            duration_us: 10,
            cached: false,
            explainable: false,
            review: None,
        }
    }

    #[test]
    fn keeps_the_newest_entries_up_to_its_capacity() {
        let ring = AdmissionRing::new(3);
        for i in 0..5 {
            ring.push(entry("ns", &format!("p{i}"), "injected"));
        }
        let pods: Vec<_> = ring.snapshot().iter().map(|e| e.pod.clone()).collect();
        assert_eq!(pods, ["p4", "p3", "p2"]);
        assert_eq!(ring.snapshot()[0].id, 5);
        assert!(ring.get(5).is_some());
        assert!(ring.get(1).is_none(), "evicted");
    }

    #[test]
    fn a_push_never_waits_for_a_reader() {
        let ring = AdmissionRing::new(3);
        let held = ring.entries.lock().expect("lock");
        ring.push(entry("ns", "p", "skipped"));
        drop(held);
        assert_eq!(ring.dropped(), 1);
        assert!(ring.snapshot().is_empty());
    }

    #[test]
    fn only_kept_reviews_are_explainable() {
        let ring = AdmissionRing::new(2);
        let mut kept = entry("ns", "p", "injected");
        kept.review = Some(Bytes::from_static(b"{}"));
        ring.push(kept);
        ring.push(entry("ns", "q", "injected"));
        let pods: Vec<_> = ring
            .snapshot()
            .iter()
            .map(|e| (e.pod.clone(), e.explainable))
            .collect();
        assert_eq!(pods, [("q".to_owned(), false), ("p".to_owned(), true)]);
    }

    #[test]
    fn filters_by_namespace_decision_and_text() {
        let mut e = entry("shop", "web-1", "denied");
        e.owner = Some(Owner {
            kind: "ReplicaSet".into(),
            name: "web-7d4".into(),
        });
        let f = Filter::from_query(Some("namespace=shop&decision=denied&q=REPLICASET%2Fweb"));
        assert_eq!(f.text, "replicaset/web");
        assert!(f.matches(&e));
        assert!(!Filter::from_query(Some("namespace=other")).matches(&e));
        assert!(!Filter::from_query(Some("decision=injected")).matches(&e));
        assert!(!Filter::from_query(Some("q=nothing+here")).matches(&e));
        assert!(Filter::from_query(None).matches(&e));
    }

    #[test]
    fn the_owner_is_the_controller_reference() {
        let pod = serde_json::json!({"metadata": {"ownerReferences": [
            {"kind": "Other", "name": "x"},
            {"kind": "ReplicaSet", "name": "web-7d4", "controller": true}]}});
        assert_eq!(
            owner_of(&pod),
            Some(Owner {
                kind: "ReplicaSet".into(),
                name: "web-7d4".into()
            })
        );
        assert_eq!(owner_of(&serde_json::json!({"metadata": {}})), None);
    }
}
