//! The render cache: the parsed overlays of an injection's renders, reused for any later pod
//! that shows the templates exactly what they read.
//!
//! Rendering Istio's template and parsing its YAML is most of an injection's work, yet pods of
//! one workload (a Deployment's replicas, a Job's pods that differ only in env) mostly read the
//! same: the same labels, annotations and container names. The key of a render is therefore not
//! the pod, but:
//!
//! - the inputs that do not come from the pod's JSON and vary per pod: the selected templates, the
//!   owner (`.TypeMeta`, `.DeploymentMeta`), the `proxy.istio.io/config` annotation (the
//!   effective ProxyConfig is a function of it and the mesh) and the two images ([`Fixed`]);
//! - every observation the renders made of the (stripped) pod, logged by the template data
//!   itself ([`crate::render::objects::reads`]): a later pod whose every observation matches
//!   would render the same text.
//!
//! Everything else the templates see (mesh config, values, revision, native sidecars, UID and
//! GID, compliance policy) is the [`super::Injector`]'s own, and the cache lives in the injector:
//! a configuration reload builds a new injector and so starts with an empty cache; a render of an
//! old configuration cannot be served.
//!
//! Templates that call a function whose result is not determined by its arguments (`now`,
//! `randAlphaNum`, `uuidv4`, `genCA`, ...) are never cached ([`deterministic`]).
//!
//! Bounded: at most `capacity` entries, at most [`PER_FAMILY`] per [`Fixed`] key; when the cache
//! is full it is emptied (cheap, and a steady workload refills it at once).
//!
//! A pod that is its own owner (Istio's rule: no `generateName` and controller, as for a
//! StatefulSet's pods, which are named, or a bare pod) is the only pod of its family: the owner's
//! name is the pod's. Such pods first try a render shared under a stand-in for the name
//! ([`super::own_name`]). When the templates look into the name, the pod's own render is kept
//! only the second time its family comes (the same pod created again, a dry run followed by the
//! create): keeping every such render would copy each overlay only to drop it, and a
//! StatefulSet's rollout would empty the cache of every other workload's renders
//! ([`RenderCache::keeps`]).

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::render_counts::{RenderCounts, RenderSource};
use crate::member::Members;
use crate::render::objects::reads::{Read, Seen, resolve};

/// The most entries kept for one [`Fixed`] key; the oldest goes first.
pub const PER_FAMILY: usize = 8;

/// A family that churns ([`RenderCache::churns`]) still lets one pod in this many try a shared
/// render: when the pods that come change (one StatefulSet scaled alone after several were
/// rolled out interleaved), a render a later pod takes ends the churn.
pub const RETRY_EVERY: usize = 32;

/// The default number of entries (each holds the overlays of one injection, some tens of KB).
pub const DEFAULT_CAPACITY: usize = 256;

/// The per-pod inputs of a render that are not read from the pod's JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fixed {
    /// The selected templates, in order.
    pub templates: Vec<String>,
    /// The owner: apiVersion, kind, name, namespace.
    pub owner: [String; 4],
    /// The `proxy.istio.io/config` annotation.
    pub proxy_config_annotation: Option<String>,
    /// `.ProxyImage`.
    pub proxy_image: String,
    /// `.ProxyInitImage`.
    pub proxy_init_image: String,
}

impl Fixed {
    /// Whether any of it holds `needle`.
    pub fn holds(&self, needle: &str) -> bool {
        self.templates
            .iter()
            .chain(&self.owner)
            .chain(&self.proxy_config_annotation)
            .chain([&self.proxy_image, &self.proxy_init_image])
            .any(|text| text.contains(needle))
    }
}

/// The renders of one injection, as parsed overlays (one per selected template, in order).
pub type Overlays = Arc<[Kept]>;

/// One kept render.
#[derive(Debug)]
pub struct Kept {
    /// The parsed overlay.
    pub overlay: Value,
    /// What merging the overlay alone into an empty pod gives, normalized: worked out once, on
    /// the first reuse.
    template_pod: OnceLock<Option<Value>>,
    /// The overlay prepared for merging into pods that hold none of its keyed items
    /// ([`super::merge_guide::prepare_for_any_pod`]): worked out once, on the first reuse after
    /// the template pod.
    prepared: OnceLock<super::merge_guide::Prepared>,
    /// The names the template pod gets from the overlay alone
    /// ([`super::template_pod::names_only`]): worked out once, on the first reuse.
    names: OnceLock<Option<Arc<Value>>>,
    /// The compact JSON of each of the template pod's list items ([`fresh_items`]), with where
    /// it holds the items of its `env` ([`crate::patch::KnownText::env_items`]): worked out once,
    /// on the first reuse after the template pod.
    texts: OnceLock<Vec<ItemText>>,
    /// The status annotation of the template pod that [`Self::names`] stands for: worked out once.
    status: OnceLock<String>,
    /// Whether [`Self::names`] hold the injector's stand-in for the pod's name (then the name
    /// cannot go in after the merge): worked out once.
    names_hold_stand_in: OnceLock<bool>,
    /// Copies of the template pod's list items that pods were done with.
    spares: super::spares::Spares,
    /// Where a render made with a stand-in for the pod's name holds it
    /// ([`super::own_name::holes`]): worked out once, on the first reuse.
    name_holes: OnceLock<Vec<super::own_name::Hole>>,
    /// The same places in a pod it is merged into, when the name may go in after the merge
    /// ([`super::own_name::after_merge`]): worked out once, on the first reuse.
    merged_holes: OnceLock<Option<Arc<[super::own_name::after_merge::MergedHole]>>>,
}

/// A list item's compact JSON, and the spans of its `env` items in it
/// ([`crate::patch::compact_json_marking_env`]).
type ItemText = (Vec<u8>, Vec<(usize, usize)>);

impl Kept {
    /// A render to keep.
    pub fn new(overlay: Value) -> Kept {
        Kept {
            overlay,
            template_pod: OnceLock::new(),
            prepared: OnceLock::new(),
            names: OnceLock::new(),
            texts: OnceLock::new(),
            status: OnceLock::new(),
            names_hold_stand_in: OnceLock::new(),
            spares: super::spares::Spares::default(),
            name_holes: OnceLock::new(),
            merged_holes: OnceLock::new(),
        }
    }

    /// Where this render, made with a stand-in for the pod's name, holds it (`make` finds the
    /// places the first time).
    pub fn name_holes(
        &self,
        make: impl FnOnce(&Value) -> Vec<super::own_name::Hole>,
    ) -> &[super::own_name::Hole] {
        self.name_holes.get_or_init(|| make(&self.overlay))
    }

    /// Where this render, made with a stand-in for the pod's name, holds it in a pod it is
    /// merged into (`make` finds the places the first time; `None` when the name cannot go in
    /// after the merge).
    pub fn merged_holes(
        &self,
        make: impl FnOnce(&Value) -> Option<Arc<[super::own_name::after_merge::MergedHole]>>,
    ) -> Option<Arc<[super::own_name::after_merge::MergedHole]>> {
        self.merged_holes.get_or_init(|| make(&self.overlay)).clone()
    }

    /// Spare copies of the template pod's list items ([`super::spares`]).
    pub fn spares(&self) -> &super::spares::Spares {
        &self.spares
    }

    /// Takes back from `pod`, which its caller is done with, the template pod's list items it
    /// holds unchanged, for later pods of this render ([`super::spares`]). `proven` tells the
    /// values of `pod` the patch found equal to the template pod's items (or equal but for items
    /// of their `env`).
    pub fn take_back(&self, pod: &mut Value, proven: &[crate::patch::Copied]) {
        if let Some(Some(template_pod)) = self.template_pod.get() {
            self.spares.take_back(template_pod, pod, proven);
        }
    }

    /// The overlay merged into an empty pod and normalized (`make` works it out the first time;
    /// `None` when that merge fails).
    pub fn template_pod(&self, make: impl FnOnce(&Value) -> Option<Value>) -> Option<&Value> {
        self.template_pod.get_or_init(|| make(&self.overlay)).as_ref()
    }

    /// The overlay prepared for merging into pods that hold none of its keyed items (`make`
    /// prepares it the first time).
    pub(super) fn prepared(
        &self,
        make: impl FnOnce(&Value) -> super::merge_guide::Prepared,
    ) -> &super::merge_guide::Prepared {
        self.prepared.get_or_init(|| make(&self.overlay))
    }

    /// The names of the template pod read from the overlay (`make` reads them the first time;
    /// `None` when the overlay is not plain enough for that).
    pub fn names(&self, make: impl FnOnce(&Value) -> Option<Value>) -> Option<Arc<Value>> {
        self.names
            .get_or_init(|| make(&self.overlay).map(Arc::new))
            .clone()
    }

    /// The status annotation of `template_pod` when it is this render's [`Self::names`] (the same
    /// `Arc`): `make` works it out the first time. The injector's revision, which it also reads,
    /// is the same for every pod of the cache.
    pub fn status_of(
        &self,
        template_pod: &Arc<Value>,
        make: impl FnOnce(&Value) -> String,
    ) -> Option<String> {
        self.of_names(&self.status, template_pod, make).cloned()
    }

    /// Whether `template_pod`, when it is this render's [`Self::names`] (the same `Arc`), holds the
    /// injector's stand-in for the pod's name (`holds` looks the first time); `None` for any
    /// other template pod.
    pub fn names_hold_stand_in(
        &self,
        template_pod: &Arc<Value>,
        holds: impl FnOnce(&Value) -> bool,
    ) -> Option<bool> {
        self.of_names(&self.names_hold_stand_in, template_pod, holds)
            .copied()
    }

    /// What `make` tells of this render's [`Self::names`], kept in `cell` from the first time,
    /// when `template_pod` is them (the same `Arc`); `None` for any other template pod.
    fn of_names<'a, T>(
        &'a self,
        cell: &'a OnceLock<T>,
        template_pod: &Arc<Value>,
        make: impl FnOnce(&Value) -> T,
    ) -> Option<&'a T> {
        let names = self
            .names
            .get()?
            .as_ref()
            .filter(|names| Arc::ptr_eq(names, template_pod))?;
        Some(cell.get_or_init(|| make(names)))
    }

    /// The items of the template pod's lists (containers, volumes, ...) with their compact JSON,
    /// for the patch to copy when a pod gets one of them unchanged
    /// ([`crate::patch::create_patch_over_round_trip_known`]). Empty until the template pod has
    /// been worked out.
    pub fn known_texts(&self) -> Vec<crate::patch::KnownText<'_>> {
        let Some(Some(template_pod)) = self.template_pod.get() else {
            return Vec::new();
        };
        let texts = self.texts.get_or_init(|| {
            fresh_items(template_pod)
                .map(crate::patch::compact_json_marking_env)
                .collect()
        });
        fresh_items(template_pod)
            .zip(texts)
            .map(|(value, (text, env_items))| crate::patch::KnownText {
                value,
                text,
                env_items,
            })
            .collect()
    }
}

/// The objects in the lists of a template pod's `spec`, in order.
fn fresh_items(template_pod: &Value) -> impl Iterator<Item = &Value> {
    template_pod
        .member("spec")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|spec| spec.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter(|item| item.is_object())
}

impl PartialEq for Kept {
    fn eq(&self, other: &Kept) -> bool {
        self.overlay == other.overlay
    }
}

struct Entry {
    reads: Vec<(Read, Seen)>,
    overlays: Overlays,
    /// Neither what the renders read nor what they gave holds [`TOKEN_VOLUME_PREFIX`].
    blind_to_token_volume: bool,
    /// Whether a later pod took it.
    used: bool,
}

/// How ServiceAccount admission names the projected token volume it adds to every pod that
/// mounts a token: this prefix and five random characters, so every pod of a Deployment has a
/// volume (and volume mounts) of its own name.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// A render the cache served, with whether it could tell one token volume name from another.
#[derive(Debug, Clone)]
pub struct Reuse {
    /// The kept renders.
    pub overlays: Overlays,
    /// Nothing the renders read of the pod, and nothing they gave, holds
    /// [`TOKEN_VOLUME_PREFIX`]: the templates never saw the name of the pod's token volume, nor
    /// named a volume like it.
    pub blind_to_token_volume: bool,
}

/// [`Reuse::blind_to_token_volume`] of renders that are not kept: whether none of what they read
/// of `pod` (`reads`) holds [`TOKEN_VOLUME_PREFIX`], given whether one of their overlays does
/// ([`names_token_volume`]).
pub fn blind_to_token_volume(pod: &Value, reads: &[Read], an_overlay_names_it: bool) -> bool {
    !an_overlay_names_it
        && !reads
            .iter()
            .any(|read| read_holds(read, pod, TOKEN_VOLUME_PREFIX))
}

/// Whether what `read` sees in `pod` (or the key it looks up) holds `needle`: [`Read::observe`]
/// without the copy.
fn read_holds(read: &Read, pod: &Value, needle: &str) -> bool {
    match read {
        Read::Whole(path) => holds(resolve(pod, path), needle),
        Read::Entry(path, key) => {
            key.contains(needle)
                || resolve(pod, path)
                    .member(key)
                    .is_some_and(|value| holds(value, needle))
        }
        Read::Member(..) | Read::Length(_) => false,
    }
}

/// Whether an overlay holds [`TOKEN_VOLUME_PREFIX`] (in a string or a key).
pub fn names_token_volume(overlay: &Value) -> bool {
    holds(overlay, TOKEN_VOLUME_PREFIX)
}

/// Whether a JSON value holds `needle` in a string or a key.
fn holds(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(text) => text.contains(needle),
        Value::Array(items) => items.iter().any(|item| holds(item, needle)),
        Value::Object(members) => members
            .iter()
            .any(|(key, value)| key.contains(needle) || holds(value, needle)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

impl Entry {
    fn matches(&self, pod: &Value) -> bool {
        self.reads.iter().all(|(read, seen)| read.sees_same(pod, seen))
    }
}

#[derive(Default)]
struct Families {
    by_key: HashMap<Fixed, Vec<Entry>, foldhash::fast::RandomState>,
    entries: usize,
    /// The families of one pod (see the module documentation) seen once and not kept: their
    /// keys' hashes, emptied with the entries.
    seen_once: HashSet<u64, foldhash::fast::RandomState>,
    /// The families whose templates looked into a stand-in for the pod's name
    /// ([`super::own_name`]): their keys' hashes, emptied with the entries.
    name_read: HashSet<u64, foldhash::fast::RandomState>,
    /// How many entries each family has lost in a row that no pod took (by its key's hash),
    /// emptied with the entries ([`RenderCache::churns`]).
    evicted_unused: HashMap<u64, usize, foldhash::fast::RandomState>,
    /// How many pods of each churning family were refused a shared render since one was let
    /// try again ([`RenderCache::shares_stand_in_renders`]), emptied with the entries.
    refused: HashMap<u64, usize, foldhash::fast::RandomState>,
}

impl Families {
    /// [`RenderCache::churns`] of the family whose key hashes to `hash`.
    fn churns(&self, hash: u64) -> bool {
        self.evicted_unused
            .get(&hash)
            .is_some_and(|count| *count >= PER_FAMILY)
    }
}

/// A bounded cache of renders keyed by exactly what they read. See the module documentation.
pub struct RenderCache {
    capacity: usize,
    families: Mutex<Families>,
    /// Where injections got their renders, and how often the cache was emptied: shared by the
    /// injectors of one process ([`super::render_counts`]).
    counts: Arc<RenderCounts>,
}

impl std::fmt::Debug for RenderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RenderCache(capacity {}, {} entries)",
            self.capacity,
            self.len()
        )
    }
}

impl RenderCache {
    /// A cache of at most `capacity` entries (0: nothing is cached).
    pub fn new(capacity: usize) -> RenderCache {
        RenderCache {
            capacity,
            families: Mutex::new(Families::default()),
            counts: Arc::default(),
        }
    }

    /// The same cache, counting into `counts` (shared with other injectors' caches).
    pub fn counting_in(mut self, counts: Arc<RenderCounts>) -> RenderCache {
        self.counts = counts;
        self
    }

    /// Where injections got their renders ([`super::render_counts`]).
    pub fn counts(&self) -> &Arc<RenderCounts> {
        &self.counts
    }

    /// The most entries it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether anything is ever cached.
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The number of entries held.
    pub fn len(&self) -> usize {
        self.lock().entries
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of spare item copies the entries hold ([`super::spares`]).
    pub fn spares(&self) -> usize {
        self.lock()
            .by_key
            .values()
            .flatten()
            .flat_map(|entry| entry.overlays.iter())
            .map(|kept| kept.spares().len())
            .sum()
    }

    /// The overlays of an earlier injection whose renders read, in `pod`, what they read then.
    pub fn get(&self, fixed: &Fixed, pod: &Value) -> Option<Reuse> {
        if !self.enabled() {
            return None;
        }
        let mut families = self.lock();
        let entry = families
            .by_key
            .get_mut(fixed)?
            .iter_mut()
            .rev()
            .find(|entry| entry.matches(pod))?;
        entry.used = true;
        let reuse = Reuse {
            overlays: entry.overlays.clone(),
            blind_to_token_volume: entry.blind_to_token_volume,
        };
        // A pod took one of the family's entries: its streak of untaken ones is over.
        if !families.evicted_unused.is_empty() {
            let hash = families.by_key.hasher().hash_one(fixed);
            families.evicted_unused.remove(&hash);
            families.refused.remove(&hash);
        }
        Some(reuse)
    }

    /// Whether [`Self::get`] serves `pod` a kept render that never saw `needle`: neither its
    /// family (`fixed`) nor what it read of `pod` holds it (in a string or a key). `false` when
    /// there is no such render.
    pub fn blind_to(&self, fixed: &Fixed, pod: &Value, needle: &str) -> bool {
        if fixed.holds(needle) {
            return false;
        }
        let families = self.lock();
        families
            .by_key
            .get(fixed)
            .and_then(|entries| entries.iter().rev().find(|entry| entry.matches(pod)))
            .is_some_and(|entry| !entry.reads.iter().any(|(read, _)| read_holds(read, pod, needle)))
    }

    /// Whether this family lost its last [`PER_FAMILY`] entries, or more, without a pod taking
    /// any: its templates read something of each pod that the next one does not share, and
    /// keeping its renders only copies them.
    pub fn churns(&self, fixed: &Fixed) -> bool {
        let families = self.lock();
        let hash = families.by_key.hasher().hash_one(fixed);
        families.churns(hash)
    }

    /// Whether the renders of a pod of this family are to be kept: always, unless the pod is its
    /// own owner and its family has not come before (see the module documentation). A family of
    /// one pod seen for the first time is noted, and its next render is kept.
    pub fn keeps(&self, fixed: &Fixed) -> bool {
        if !self.enabled() {
            return false;
        }
        let [_, kind, ..] = &fixed.owner;
        if kind != "Pod" {
            return true;
        }
        let mut families = self.lock();
        if families.by_key.contains_key(fixed) {
            return true;
        }
        let hash = families.by_key.hasher().hash_one(fixed);
        if families.seen_once.len() >= self.capacity.saturating_mul(4) {
            families.seen_once.clear();
        }
        !families.seen_once.insert(hash)
    }

    /// How many injections took a render made with a stand-in for their name
    /// ([`super::own_name`]).
    pub fn named_reuses(&self) -> u64 {
        self.counts.injections(RenderSource::Shared)
    }

    /// Whether this family (keyed with a stand-in for the pod's name, [`super::own_name`]) is
    /// still to try renders shared under the stand-in: none of its renders looked into the
    /// stand-in ([`Self::note_name_read`]), and it does not churn ([`Self::churns`]) or this pod
    /// is the one in [`RETRY_EVERY`] that tries anyway.
    pub fn shares_stand_in_renders(&self, fixed: &Fixed) -> bool {
        let mut families = self.lock();
        let hash = families.by_key.hasher().hash_one(fixed);
        if families.name_read.contains(&hash) {
            return false;
        }
        if !families.churns(hash) {
            return true;
        }
        let refused = families.refused.entry(hash).or_default();
        *refused += 1;
        if *refused < RETRY_EVERY {
            return false;
        }
        *refused = 0;
        true
    }

    /// Notes that a render of this family looked into the stand-in for the pod's name: later
    /// pods of the family are rendered with their own.
    pub fn note_name_read(&self, fixed: &Fixed) {
        if !self.enabled() {
            return;
        }
        let mut families = self.lock();
        if families.name_read.len() >= self.capacity.saturating_mul(4) {
            families.name_read.clear();
        }
        let hash = families.by_key.hasher().hash_one(fixed);
        families.name_read.insert(hash);
    }

    /// Keeps the overlays rendered for `pod`, which read `reads` of it. Returns whether the
    /// renders were blind to the token volume's name ([`Reuse::blind_to_token_volume`]), also
    /// when nothing is kept.
    pub fn insert(&self, fixed: Fixed, pod: &Value, reads: Vec<Read>, overlays: Overlays) -> bool {
        let blind_to_token_volume = blind_to_token_volume(
            pod,
            &reads,
            overlays.iter().any(|kept| names_token_volume(&kept.overlay)),
        );
        let reads: Vec<(Read, Seen)> = reads
            .into_iter()
            .map(|read| {
                let seen = read.observe(pod);
                (read, seen)
            })
            .collect();
        if !self.enabled() {
            return blind_to_token_volume;
        }
        let entry = Entry {
            reads,
            overlays,
            blind_to_token_volume,
            used: false,
        };
        let mut families = self.lock();
        if families.entries >= self.capacity {
            self.counts.note_flush();
            families.by_key.clear();
            families.seen_once.clear();
            families.name_read.clear();
            families.evicted_unused.clear();
            families.refused.clear();
            families.entries = 0;
        }
        let hash = families.by_key.hasher().hash_one(&fixed);
        let family = families.by_key.entry(fixed).or_default();
        let evicted = (family.len() >= PER_FAMILY).then(|| family.remove(0));
        family.push(entry);
        if let Some(evicted) = &evicted {
            let unused = families.evicted_unused.entry(hash).or_default();
            *unused = if evicted.used { 0 } else { *unused + 1 };
        }
        families.entries = families.entries + 1 - usize::from(evicted.is_some());
        blind_to_token_volume
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Families> {
        // A panic while holding the lock leaves a consistent map (every update is one step).
        self.families
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Functions whose result is not a function of their arguments: a template calling one is never
/// cached.
const NONDETERMINISTIC: &[&str] = &[
    "now",
    "ago",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randInt",
    "randBytes",
    "shuffle",
    "uuidv4",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
];

/// Whether a template's text calls none of the `NONDETERMINISTIC` functions (`now`,
/// `randAlphaNum`, ...). Conservative: the name anywhere as a word (even in a comment or a
/// string) counts as a call.
pub fn deterministic(template_text: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !template_text
        .split(|c: char| !is_word(c))
        .any(|word| NONDETERMINISTIC.contains(&word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::objects::reads::Seg;

    fn fixed(name: &str) -> Fixed {
        Fixed {
            templates: vec!["sidecar".to_owned()],
            owner: ["apps/v1".into(), "Deployment".into(), name.into(), "ns".into()],
            proxy_config_annotation: None,
            proxy_image: "proxyv2".into(),
            proxy_init_image: "proxyv2".into(),
        }
    }

    fn app_label() -> Read {
        Read::Whole(Arc::from(vec![Seg::Key("metadata"), Seg::Key("labels")]))
    }

    fn overlays(text: &str) -> Overlays {
        Arc::from(vec![Kept::new(Value::String(text.to_owned()))])
    }

    fn own(name: &str) -> Fixed {
        Fixed {
            owner: ["v1".into(), "Pod".into(), name.into(), "ns".into()],
            ..fixed(name)
        }
    }

    #[test]
    fn a_family_of_one_pod_is_kept_from_its_second_coming() {
        let cache = RenderCache::new(2);
        assert!(cache.keeps(&fixed("web")), "a workload's family is always kept");
        assert!(!cache.keeps(&own("db-0")), "first sight: noted only");
        assert!(!cache.keeps(&own("db-1")));
        assert!(cache.keeps(&own("db-0")), "second sight: kept");
        cache.insert(own("db-0"), &Value::Null, vec![], overlays("a"));
        assert!(cache.keeps(&own("db-0")), "held");
        // The notes are bounded: past four times the capacity they start over.
        for i in 2..10 {
            cache.keeps(&own(&format!("db-{i}")));
        }
        assert!(!cache.keeps(&own("db-1")), "forgotten");
        assert!(
            !RenderCache::new(0).keeps(&fixed("web")),
            "a disabled cache keeps nothing"
        );
    }

    #[test]
    fn the_status_is_worked_out_once_and_only_for_the_renders_own_names() {
        let kept = Kept::new(serde_json::json!({"spec": {"containers": [{"name": "istio-proxy"}]}}));
        let other = Arc::new(serde_json::json!({"spec": {}}));
        assert_eq!(kept.status_of(&other, |_| unreachable!()), None, "no names yet");
        let names = kept.names(|overlay| Some(overlay.clone())).expect("names");
        let mut made = 0;
        for _ in 0..3 {
            let status = kept.status_of(&names, |pod| {
                made += 1;
                pod["spec"]["containers"][0]["name"].as_str().unwrap().to_owned()
            });
            assert_eq!(status.as_deref(), Some("istio-proxy"));
        }
        assert_eq!(made, 1);
        // An equal template pod that is not the render's own (several templates merged) is not
        // taken for it.
        let copy = Arc::new(Value::clone(&names));
        assert_eq!(kept.status_of(&copy, |_| unreachable!()), None);
    }

    #[test]
    fn the_known_texts_are_the_template_pods_list_items_once_it_is_worked_out() {
        let kept = Kept::new(serde_json::json!({"spec": {"containers": [{"name": "istio-proxy"}]}}));
        assert!(kept.known_texts().is_empty(), "no template pod yet");
        let template_pod = serde_json::json!({"metadata": {"labels": {"a": "b"}}, "spec": {
            "containers": [{"name": "istio-proxy", "args": ["proxy"]}],
            "dnsPolicy": "ClusterFirst",
            "volumes": [{"name": "istio-envoy", "emptyDir": {}}, "not an object"],
        }});
        kept.template_pod(|_| Some(template_pod.clone()));
        let known: Vec<(Value, String)> = kept
            .known_texts()
            .into_iter()
            .map(|known| {
                (
                    known.value.clone(),
                    String::from_utf8(known.text.to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            known,
            [
                (
                    template_pod["spec"]["containers"][0].clone(),
                    r#"{"name":"istio-proxy","args":["proxy"]}"#.to_owned()
                ),
                (
                    template_pod["spec"]["volumes"][0].clone(),
                    r#"{"name":"istio-envoy","emptyDir":{}}"#.to_owned()
                ),
            ]
        );
    }

    #[test]
    fn an_entry_serves_a_pod_that_shows_the_same_reads_and_no_other() {
        let cache = RenderCache::new(4);
        let a = serde_json::json!({"metadata": {"name": "a-1", "labels": {"app": "a"}}});
        cache.insert(fixed("a"), &a, vec![app_label()], overlays("a"));
        let other_name = serde_json::json!({"metadata": {"name": "a-2", "labels": {"app": "a"}}});
        assert_eq!(
            cache
                .get(&fixed("a"), &other_name)
                .map(|reuse| reuse.overlays)
                .as_deref(),
            Some(&overlays("a")[..])
        );
        let other_label = serde_json::json!({"metadata": {"name": "a-1", "labels": {"app": "b"}}});
        assert!(cache.get(&fixed("a"), &other_label).is_none());
        assert!(
            cache.get(&fixed("b"), &a).is_none(),
            "another owner is another key"
        );
    }

    #[test]
    fn an_entry_is_blind_to_the_token_volume_unless_a_read_or_an_overlay_holds_its_prefix() {
        let cache = RenderCache::new(8);
        let pod = serde_json::json!({
            "metadata": {"labels": {"app": "a"}, "annotations": {"kube-api-access-note": "x"}},
            "spec": {"volumes": [{"name": "kube-api-access-7xk2p"}]}
        });
        let volumes = Read::Whole(Arc::from(vec![Seg::Key("spec"), Seg::Key("volumes")]));
        let count = Read::Length(Arc::from(vec![Seg::Key("spec"), Seg::Key("volumes")]));
        let note = Read::Entry(
            Arc::from(vec![Seg::Key("metadata"), Seg::Key("annotations")]),
            Arc::from("kube-api-access-note"),
        );
        assert!(cache.insert(
            fixed("labels"),
            &pod,
            vec![app_label(), count.clone()],
            overlays("a")
        ));
        assert!(!cache.insert(fixed("volumes"), &pod, vec![volumes], overlays("a")));
        assert!(!cache.insert(fixed("key"), &pod, vec![note], overlays("a")));
        assert!(!cache.insert(fixed("overlay"), &pod, vec![count], overlays("kube-api-access-x")));
        let blind = |name: &str| {
            cache
                .get(&fixed(name), &pod)
                .map(|reuse| reuse.blind_to_token_volume)
        };
        assert_eq!(blind("labels"), Some(true));
        assert_eq!(blind("volumes"), Some(false));
        assert_eq!(blind("key"), Some(false));
        assert_eq!(blind("overlay"), Some(false));
        // Told also when nothing is kept.
        assert!(RenderCache::new(0).insert(fixed("a"), &pod, vec![app_label()], overlays("a")));
    }

    #[test]
    fn a_family_churns_once_it_lost_a_full_familys_worth_of_entries_no_pod_took() {
        let cache = RenderCache::new(PER_FAMILY * 8);
        let label = |i: usize| serde_json::json!({"metadata": {"labels": {"app": format!("a{i}")}}});
        let insert = |i: usize| {
            cache.insert(fixed("a"), &label(i), vec![app_label()], overlays("x"));
        };
        for i in 0..PER_FAMILY * 2 - 1 {
            insert(i);
            assert!(!cache.churns(&fixed("a")), "after {} inserts", i + 1);
        }
        insert(PER_FAMILY * 2 - 1);
        assert!(cache.churns(&fixed("a")), "{PER_FAMILY} entries evicted unused");
        assert!(!cache.churns(&fixed("b")), "another family");

        // An entry a pod took resets the count when it goes.
        let cache = RenderCache::new(PER_FAMILY * 8);
        let insert = |i: usize| {
            cache.insert(fixed("a"), &label(i), vec![app_label()], overlays("x"));
        };
        for i in 0..PER_FAMILY {
            insert(i);
        }
        assert!(cache.get(&fixed("a"), &label(0)).is_some());
        for i in PER_FAMILY..PER_FAMILY * 2 {
            insert(i);
        }
        assert!(
            !cache.churns(&fixed("a")),
            "the first entry evicted had been taken"
        );
        insert(PER_FAMILY * 2);
        assert!(cache.churns(&fixed("a")));
    }

    #[test]
    fn a_churning_family_lets_one_pod_in_so_many_try_and_ends_its_churn_when_a_pod_takes_a_render() {
        let cache = RenderCache::new(PER_FAMILY * 8);
        let label = |i: usize| serde_json::json!({"metadata": {"labels": {"app": format!("a{i}")}}});
        for i in 0..PER_FAMILY * 2 {
            cache.insert(fixed("a"), &label(i), vec![app_label()], overlays("x"));
        }
        assert!(cache.churns(&fixed("a")));
        let tries: Vec<bool> = (0..RETRY_EVERY * 2)
            .map(|_| cache.shares_stand_in_renders(&fixed("a")))
            .collect();
        let let_in: Vec<usize> = (0..tries.len()).filter(|i| tries[*i]).collect();
        assert_eq!(let_in, [RETRY_EVERY - 1, RETRY_EVERY * 2 - 1]);

        // The pods that come change: the one let in keeps its render, and the next pod like it
        // takes it.
        cache.insert(fixed("a"), &label(1000), vec![app_label()], overlays("x"));
        assert!(cache.get(&fixed("a"), &label(1000)).is_some());
        assert!(!cache.churns(&fixed("a")));
        assert!(cache.shares_stand_in_renders(&fixed("a")));
    }

    #[test]
    fn flushes_are_counted() {
        let counts = Arc::new(RenderCounts::default());
        let cache = RenderCache::new(2).counting_in(counts.clone());
        for i in 0..5 {
            let pod = serde_json::json!({"metadata": {"labels": {"app": format!("a{i}")}}});
            cache.insert(fixed("a"), &pod, vec![app_label()], overlays("x"));
        }
        assert_eq!(
            counts.flushes(),
            2,
            "emptied before the third and the fifth entry"
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        let cache = RenderCache::new(PER_FAMILY * 2);
        for i in 0..PER_FAMILY + 3 {
            let pod = serde_json::json!({"metadata": {"labels": {"i": i}}});
            cache.insert(fixed("a"), &pod, vec![app_label()], overlays("x"));
        }
        assert_eq!(
            cache.len(),
            PER_FAMILY,
            "one family keeps its newest {PER_FAMILY}"
        );
        let first = serde_json::json!({"metadata": {"labels": {"i": 0}}});
        assert!(cache.get(&fixed("a"), &first).is_none(), "the oldest went first");
        for i in 0..PER_FAMILY * 3 {
            cache.insert(fixed(&format!("w{i}")), &first, vec![], overlays("y"));
            assert!(cache.len() <= PER_FAMILY * 2);
        }
        let off = RenderCache::new(0);
        off.insert(fixed("a"), &first, vec![], overlays("z"));
        assert!(off.get(&fixed("a"), &first).is_none() && off.is_empty());
    }

    #[test]
    fn templates_calling_clocks_or_randomness_are_not_cached() {
        assert!(deterministic("{{ .ObjectMeta.Name | quote }} {{ randomly }}"));
        assert!(!deterministic("{{ now | date \"2006\" }}"));
        assert!(!deterministic("{{ uuidv4 }}"));
        assert!(!deterministic("{{- $x := randAlphaNum 5 }}"));
    }
}
