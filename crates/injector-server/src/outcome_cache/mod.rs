//! A bounded cache of admission outcomes, for the pods of one workload.
//!
//! Injection is a pure function of the pod as the API server sends it, the request's namespace,
//! operation and URL path, and the configuration. The pods of a ReplicaSet, Job or StatefulSet
//! scale-up reach the webhook before the API server gives them a name or a uid, so they are
//! the same object but for what [`key`] takes out (the time stamps of `managedFields` and the
//! name of the ServiceAccount token volume): after the first, each one's outcome is a lookup
//! instead of a template render, merge and diff.
//!
//! Entries are keyed by the exact bytes of those inputs (a hit compares them in full, so a hash
//! collision can never hand one pod another pod's patch), bounded by a byte budget with
//! least-recently-used eviction, and dropped as a whole when the configuration changes.

use std::sync::{Arc, Mutex};

use indexmap::IndexMap;

use crate::injector::{AdmissionInput, AdmissionOutcome};

mod key;

pub(crate) use key::CacheKey;
use key::{PLACEHOLDER, TokenName, outcome_mentions, rename_outcome};

/// Outcomes of recent admissions for one configuration, at most `budget` bytes of keys and
/// patches.
pub(crate) struct OutcomeCache<C> {
    budget: usize,
    hasher: std::hash::RandomState,
    /// The injector's outcomes ignore `metadata.managedFields`: they are left out of keys.
    ignore_managed_fields: bool,
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
    /// With [`PLACEHOLDER`] for the token volume's name when the key has one.
    outcome: AdmissionOutcome,
    size: usize,
    /// For a key that took a token volume's name out, when the injector could not tell that
    /// the outcome holds for any name: the one name it holds for.
    only_for: Option<TokenName>,
}

impl<C> OutcomeCache<C> {
    /// A cache holding up to `budget` bytes; `None` when the budget is zero (caching off).
    /// `ignore_managed_fields`: the injector's outcomes do not depend on `managedFields`.
    pub fn new(budget: usize, ignore_managed_fields: bool) -> Option<Self> {
        (budget > 0).then(|| OutcomeCache {
            budget,
            hasher: std::hash::RandomState::new(),
            ignore_managed_fields,
            state: Mutex::new(State {
                config: None,
                entries: IndexMap::new(),
                bytes: 0,
            }),
        })
    }

    /// The key for an admission, or `None` when it cannot be cached.
    pub fn key(&self, input: &AdmissionInput) -> Option<CacheKey> {
        CacheKey::of(input, &self.hasher, self.ignore_managed_fields)
    }

    /// The outcome stored for `key` under `config`, if any, with the pod's own token volume
    /// name put back.
    pub fn get(&self, config: &Arc<C>, key: &CacheKey) -> Option<AdmissionOutcome> {
        let mut outcome = {
            let mut state = self.state.lock().ok()?;
            state.switch_to(config);
            let index = state.entries.get_index_of(&key.hash)?;
            let last = state.entries.len() - 1;
            let entry = state.entries.get_index(index).map(|(_, entry)| entry)?;
            if entry.key != key.bytes || entry.only_for.is_some_and(|only| Some(only) != key.token) {
                return None;
            }
            let outcome = entry.outcome.clone();
            state.entries.move_index(index, last);
            outcome
        };
        if let Some(token) = &key.token {
            rename_outcome(&mut outcome, &PLACEHOLDER, token);
        }
        Some(outcome)
    }

    /// Stores an outcome computed under `config`, evicting the least recently used entries to
    /// stay within the budget. Entries larger than a quarter of the budget are not kept.
    ///
    /// For a key that took a token volume's name out, the outcome is stored with the
    /// placeholder for the name, and serves other names only when `any_token_name` (the
    /// injector knows the outcome holds for any name, the name only copied where the pod has
    /// it); otherwise it serves the pod's own name only.
    pub fn insert(
        &self,
        config: &Arc<C>,
        key: CacheKey,
        mut outcome: AdmissionOutcome,
        any_token_name: bool,
    ) {
        let size = key.bytes.len() + outcome_size(&outcome) + 64;
        if size > self.budget / 4 {
            return;
        }
        if let Some(token) = &key.token {
            // The placeholder must stand only for the name, or putting the name back would
            // change what the engine wrote.
            if outcome_mentions(&outcome, &PLACEHOLDER) {
                return;
            }
            rename_outcome(&mut outcome, token, &PLACEHOLDER);
        }
        let only_for = key.token.filter(|_| !any_token_name);
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
                only_for,
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

fn texts_size(texts: &[String]) -> usize {
    texts.iter().map(|text| text.len() + 24).sum()
}

fn outcome_size(outcome: &AdmissionOutcome) -> usize {
    match outcome {
        AdmissionOutcome::Skipped { reason, warnings } => reason.len() + texts_size(warnings),
        AdmissionOutcome::Patched {
            patch,
            reason,
            warnings,
        } => patch.len() + reason.len() + texts_size(warnings),
        AdmissionOutcome::Denied { message } => message.len(),
    }
}

#[cfg(test)]
mod sibling_tests;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Instant;

    use serde_json::json;

    use super::*;

    /// An admission of `object` in `namespace` at `path` (also for the key's tests).
    pub(super) fn input(namespace: &str, path: &str, object: serde_json::Value) -> AdmissionInput {
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
            warnings: Vec::new(),
        }
    }

    #[test]
    fn identical_admissions_hit_and_any_difference_misses() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let config = Arc::new(1);
        let pod = json!({"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "a"}]}});
        let key = cache.key(&input("shop", "/inject", pod.clone())).expect("key");
        assert_eq!(cache.get(&config, &key), None);
        cache.insert(&config, key.clone(), patched("[1]"), true);
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

    /// A pod of a Deployment as the API server sends it: its token volume has a name of its own.
    fn replica(token: &str) -> AdmissionInput {
        input(
            "shop",
            "/inject",
            json!({"metadata": {"generateName": "web-"},
                   "spec": {"containers": [{"name": "web", "volumeMounts": [{"name": token}]}],
                            "volumes": [{"name": token, "projected": {"sources": [{"serviceAccountToken": {}}]}}]}}),
        )
    }

    /// What an injector that copies the pod's volumes into its patch answers.
    fn patched_for(token: &str) -> AdmissionOutcome {
        patched(&format!(
            r#"[{{"op":"add","path":"/spec/volumes/1","value":{{"name":"{token}"}}}}]"#
        ))
    }

    #[test]
    fn replicas_with_their_own_token_names_share_an_outcome_that_holds_for_any_name() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let config = Arc::new(());
        let names = [
            "kube-api-access-7xk2p",
            "kube-api-access-b4zqq",
            "kube-api-access-x9wlr",
        ];
        let keys: Vec<CacheKey> = names
            .iter()
            .map(|n| cache.key(&replica(n)).expect("key"))
            .collect();
        assert_eq!(cache.get(&config, &keys[0]), None);
        cache.insert(&config, keys[0].clone(), patched_for(names[0]), true);
        for (name, key) in names.iter().zip(&keys) {
            assert_eq!(
                cache.get(&config, key),
                Some(patched_for(name)),
                "{name}: its own name put back"
            );
        }
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn an_outcome_that_may_depend_on_the_token_name_serves_that_name_only() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let config = Arc::new(());
        let (first, second) = (
            cache.key(&replica("kube-api-access-7xk2p")).expect("key"),
            cache.key(&replica("kube-api-access-b4zqq")).expect("key"),
        );
        cache.insert(&config, first.clone(), patched("[true]"), false);
        assert_eq!(cache.get(&config, &first), Some(patched("[true]")));
        assert_eq!(cache.get(&config, &second), None);
        // The other name's own outcome takes the entry over, for that name.
        cache.insert(&config, second.clone(), patched("[false]"), false);
        assert_eq!(cache.get(&config, &second), Some(patched("[false]")));
        assert_eq!(cache.get(&config, &first), None);
    }

    #[test]
    fn an_outcome_holding_the_placeholder_itself_is_not_kept() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let config = Arc::new(());
        let key = cache.key(&replica("kube-api-access-7xk2p")).expect("key");
        cache.insert(
            &config,
            key.clone(),
            patched(r#"["kube-api-access-00000"]"#),
            true,
        );
        assert_eq!(cache.get(&config, &key), None);
    }

    #[test]
    fn a_new_configuration_empties_the_cache() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let (old, new) = (Arc::new(1), Arc::new(1));
        let key = cache.key(&input("ns", "/inject", json!({}))).expect("key");
        cache.insert(&old, key.clone(), patched("[]"), true);
        assert_eq!(cache.get(&new, &key), None);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_budget_evicts_the_least_recently_used() {
        let cache = OutcomeCache::new(4096, true).expect("enabled");
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
            cache.insert(&config, keys[inserted].clone(), patched(&"x".repeat(300)), true);
            inserted += 1;
        }
        // The last insertion evicted the oldest entry.
        assert!(cache.get(&config, &keys[0]).is_none());
        // Touch the oldest remaining, then insert one more: the next oldest goes instead.
        assert!(cache.get(&config, &keys[1]).is_some());
        cache.insert(&config, keys[inserted].clone(), patched(&"x".repeat(300)), true);
        assert!(cache.get(&config, &keys[1]).is_some());
        assert!(cache.get(&config, &keys[2]).is_none());
        assert!(cache.get(&config, &keys[inserted]).is_some());
        // Too large for the budget: not kept.
        let big = cache
            .key(&input("ns", "/inject", json!({"big": true})))
            .expect("key");
        cache.insert(&config, big.clone(), patched(&"x".repeat(2000)), true);
        assert!(cache.get(&config, &big).is_none());
    }

    #[test]
    fn a_zero_budget_disables_caching() {
        assert!(OutcomeCache::<()>::new(0, true).is_none());
    }

    #[test]
    fn a_hash_collision_is_a_miss_not_a_wrong_patch() {
        let cache = OutcomeCache::new(1 << 20, true).expect("enabled");
        let config = Arc::new(());
        let key = cache.key(&input("ns", "/inject", json!({"a": 1}))).expect("key");
        cache.insert(&config, key.clone(), patched("[1]"), true);
        let forged = CacheKey {
            hash: key.hash,
            bytes: b"something else".to_vec(),
            token: None,
        };
        assert_eq!(cache.get(&config, &forged), None);
    }
}
