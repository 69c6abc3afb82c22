//! A bounded cache of admission outcomes, for the pods of one workload.
//!
//! Injection is a pure function of the pod as the API server sends it, the request's namespace,
//! operation and URL path, and the configuration. The pods of a ReplicaSet, Job or StatefulSet
//! scale-up reach the webhook before the API server gives them a name or a uid, so they are
//! byte-for-byte the same object: after the first, each one's outcome is a lookup instead of a
//! template render, merge and diff.
//!
//! Entries are keyed by the exact bytes of those inputs (a hit compares them in full, so a hash
//! collision can never hand one pod another pod's patch), bounded by a byte budget with
//! least-recently-used eviction, and dropped as a whole when the configuration changes.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;

use crate::injector::{AdmissionInput, AdmissionOutcome};

/// The inputs an outcome depends on, as bytes, with their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheKey {
    hash: u64,
    bytes: Vec<u8>,
}

impl CacheKey {
    /// The key of an admission: operation, namespace, path and the object's JSON, each length
    /// prefixed so that no two different inputs share bytes.
    pub fn of(input: &AdmissionInput, hasher: &std::hash::RandomState) -> Option<CacheKey> {
        let object = serde_json::to_vec(&input.object).ok()?;
        let mut bytes = Vec::with_capacity(object.len() + input.namespace.len() + input.path.len() + 48);
        for part in [
            input.operation.as_bytes(),
            input.namespace.as_bytes(),
            input.path.as_bytes(),
            &object,
        ] {
            bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
            bytes.extend_from_slice(part);
        }
        Some(CacheKey {
            hash: hasher.hash_one(&bytes),
            bytes,
        })
    }
}

/// Outcomes of recent admissions for one configuration, at most `budget` bytes of keys and
/// patches.
pub(crate) struct OutcomeCache<C> {
    budget: usize,
    hasher: std::hash::RandomState,
    state: Mutex<State<C>>,
}

struct State<C> {
    /// The configuration the entries were computed with (held, so its address stays unique).
    config: Option<Arc<C>>,
    /// By key hash, least recently used first.
    entries: IndexMap<u64, Entry>,
    bytes: usize,
}

struct Entry {
    key: Vec<u8>,
    outcome: AdmissionOutcome,
    size: usize,
}

impl<C> OutcomeCache<C> {
    /// A cache holding up to `budget` bytes; `None` when the budget is zero (caching off).
    pub fn new(budget: usize) -> Option<Self> {
        (budget > 0).then(|| OutcomeCache {
            budget,
            hasher: std::hash::RandomState::new(),
            state: Mutex::new(State {
                config: None,
                entries: IndexMap::new(),
                bytes: 0,
            }),
        })
    }

    /// The key for an admission, or `None` when it cannot be cached.
    pub fn key(&self, input: &AdmissionInput) -> Option<CacheKey> {
        CacheKey::of(input, &self.hasher)
    }

    /// The outcome stored for `key` under `config`, if any.
    pub fn get(&self, config: &Arc<C>, key: &CacheKey) -> Option<AdmissionOutcome> {
        let mut state = self.state.lock().ok()?;
        state.switch_to(config);
        let index = state.entries.get_index_of(&key.hash)?;
        let last = state.entries.len() - 1;
        let entry = state.entries.get_index(index).map(|(_, entry)| entry)?;
        if entry.key != key.bytes {
            return None;
        }
        let outcome = entry.outcome.clone();
        state.entries.move_index(index, last);
        Some(outcome)
    }

    /// Stores an outcome computed under `config`, evicting the least recently used entries to
    /// stay within the budget. Entries larger than a quarter of the budget are not kept.
    pub fn insert(&self, config: &Arc<C>, key: CacheKey, outcome: AdmissionOutcome) {
        let size = key.bytes.len() + outcome_size(&outcome) + 64;
        if size > self.budget / 4 {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.switch_to(config);
        if let Some(old) = state.entries.shift_remove(&key.hash) {
            state.bytes -= old.size;
        }
        while state.bytes + size > self.budget {
            let Some((_, evicted)) = state.entries.shift_remove_index(0) else {
                break;
            };
            state.bytes -= evicted.size;
        }
        state.bytes += size;
        state.entries.insert(
            key.hash,
            Entry {
                key: key.bytes,
                outcome,
                size,
            },
        );
    }

    /// How many outcomes are stored (for tests and metrics).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().map(|s| s.entries.len()).unwrap_or(0)
    }
}

impl<C> State<C> {
    /// Forgets every entry when the configuration is not the one they were computed with.
    fn switch_to(&mut self, config: &Arc<C>) {
        if !self.config.as_ref().is_some_and(|held| Arc::ptr_eq(held, config)) {
            self.entries.clear();
            self.bytes = 0;
            self.config = Some(config.clone());
        }
    }
}

fn outcome_size(outcome: &AdmissionOutcome) -> usize {
    match outcome {
        AdmissionOutcome::Skipped { reason } => reason.len(),
        AdmissionOutcome::Patched { patch, reason } => patch.len() + reason.len(),
        AdmissionOutcome::Denied { message } => message.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Instant;

    use serde_json::json;

    use super::*;

    fn input(namespace: &str, path: &str, object: serde_json::Value) -> AdmissionInput {
        AdmissionInput {
            uid: "u".into(),
            namespace: namespace.into(),
            operation: "CREATE".into(),
            dry_run: false,
            object,
            path_env: BTreeMap::new(),
            path: path.into(),
            deadline: Instant::now(),
        }
    }

    fn patched(text: &str) -> AdmissionOutcome {
        AdmissionOutcome::Patched {
            patch: text.as_bytes().to_vec(),
            reason: "injected".into(),
        }
    }

    #[test]
    fn identical_admissions_hit_and_any_difference_misses() {
        let cache = OutcomeCache::new(1 << 20).expect("enabled");
        let config = Arc::new(1);
        let pod = json!({"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "a"}]}});
        let key = cache.key(&input("shop", "/inject", pod.clone())).expect("key");
        assert_eq!(cache.get(&config, &key), None);
        cache.insert(&config, key.clone(), patched("[1]"));
        // Another replica: a different uid, the same object.
        let mut replica = input("shop", "/inject", pod.clone());
        replica.uid = "v".into();
        let replica_key = cache.key(&replica).expect("key");
        assert_eq!(cache.get(&config, &replica_key), Some(patched("[1]")));

        for other in [
            input("other", "/inject", pod.clone()),
            input("shop", "/inject/cluster/c1", pod.clone()),
            input("shop", "/inject", json!({"metadata": {"generateName": "api-"}})),
        ] {
            let key = cache.key(&other).expect("key");
            assert_eq!(cache.get(&config, &key), None, "{other:?}");
        }
    }

    #[test]
    fn a_new_configuration_empties_the_cache() {
        let cache = OutcomeCache::new(1 << 20).expect("enabled");
        let (old, new) = (Arc::new(1), Arc::new(1));
        let key = cache.key(&input("ns", "/inject", json!({}))).expect("key");
        cache.insert(&old, key.clone(), patched("[]"));
        assert_eq!(cache.get(&new, &key), None);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_budget_evicts_the_least_recently_used() {
        let cache = OutcomeCache::new(4096).expect("enabled");
        let config = Arc::new(());
        let keys: Vec<CacheKey> = (0..20)
            .map(|i| {
                cache
                    .key(&input("ns", "/inject", json!({"i": i + 10})))
                    .expect("key")
            })
            .collect();
        let mut inserted = 0;
        // Fill the budget.
        while cache.len() == inserted {
            cache.insert(&config, keys[inserted].clone(), patched(&"x".repeat(300)));
            inserted += 1;
        }
        // The last insertion evicted the oldest entry.
        assert!(cache.get(&config, &keys[0]).is_none());
        // Touch the oldest remaining, then insert one more: the next oldest goes instead.
        assert!(cache.get(&config, &keys[1]).is_some());
        cache.insert(&config, keys[inserted].clone(), patched(&"x".repeat(300)));
        assert!(cache.get(&config, &keys[1]).is_some());
        assert!(cache.get(&config, &keys[2]).is_none());
        assert!(cache.get(&config, &keys[inserted]).is_some());
        // Too large for the budget: not kept.
        let big = cache
            .key(&input("ns", "/inject", json!({"big": true})))
            .expect("key");
        cache.insert(&config, big.clone(), patched(&"x".repeat(2000)));
        assert!(cache.get(&config, &big).is_none());
    }

    #[test]
    fn a_zero_budget_disables_caching() {
        assert!(OutcomeCache::<()>::new(0).is_none());
    }

    #[test]
    fn a_hash_collision_is_a_miss_not_a_wrong_patch() {
        let cache = OutcomeCache::new(1 << 20).expect("enabled");
        let config = Arc::new(());
        let key = cache.key(&input("ns", "/inject", json!({"a": 1}))).expect("key");
        cache.insert(&config, key.clone(), patched("[1]"));
        let forged = CacheKey {
            hash: key.hash,
            bytes: b"something else".to_vec(),
        };
        assert_eq!(cache.get(&config, &forged), None);
    }
}
