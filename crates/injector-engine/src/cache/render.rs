//! The render cache: the parsed overlays of an injection's renders, reused for any later pod
//! that shows the templates exactly what they read.
//!
//! Rendering Istio's template and parsing its YAML is most of an injection's work, yet pods of
//! one workload (a Deployment's replicas, a Job's pods that differ only in env) mostly read the
//! same: the same labels, annotations and container names. The key of a render is therefore not
//! the pod, but:
//!
//! - its [`Family`]: the inputs that do not come from the pod's JSON and vary per pod (the
//!   selected templates, the owner, the `proxy.istio.io/config` annotation, of which the effective
//!   ProxyConfig is a function, and the two images);
//! - every observation the renders made of the (stripped) pod, logged by the template data
//!   itself ([`crate::render::objects::reads`]): a later pod whose every observation matches
//!   would render the same text.
//!
//! Everything else the templates see (mesh config, values, revision, native sidecars, UID and
//! GID, compliance policy) belongs to the [`CompiledConfig`], and the cache holds the renders of
//! one configuration at a time: a render of an older one is never served.
//!
//! That is the whole soundness argument, and it is local: the cache sits in front of the render
//! stage and hands the merge the same overlays a render would give (with the template pod they
//! make, a function of the overlays alone); nothing after the render knows where they came from.
//! Templates that call a function whose result is not determined by its arguments (`now`,
//! `randAlphaNum`, `uuidv4`, `genCA`, ...) are never cached ([`crate::render::deterministic`]).
//! Pods that are their own owner (a StatefulSet's) share one render with their name put in before
//! the merge ([`super::own_name`]).
//!
//! Bounded in bytes: every entry is charged what it holds ([`super::size`]: the values it
//! observed, its overlays, its template pod or the places of the stand-in), the least recently
//! used go first when the budget is spent, at most [`PER_FAMILY`] entries stay per family, and an
//! entry larger than a [`MAX_SHARE`]th of the budget is not kept.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use super::counts::{RenderCounts, RenderSource};
use super::own_name::{Hole, NameWatch, StandIn, can_stand_in, fill, holes};
use injector_core::kube_names::TOKEN_VOLUME_PREFIX;

use super::size;
use crate::compiled::CompiledConfig;
use crate::member::Members;
use crate::merge::TemplatePod;
use crate::pipeline::{InjectError, Outcome, Request, inject_with};
use crate::prepare::Prepared;
use crate::render::objects::reads::{self, Read, Seen, resolve};
use crate::render::{Plain, Render, Rendered, render_templates, template_data};

/// The most entries kept for one family (the same inputs but the pod's JSON); its least
/// recently used goes first.
pub const PER_FAMILY: usize = 8;

/// An entry larger than this share of the budget is not kept: rendering its pod again costs less
/// than the renders of the many workloads it would push out.
pub const MAX_SHARE: usize = 16;

/// The default budget: 16 MiB (a render of Istio's sidecar template for a typical pod is charged
/// some tens of KB).
pub const DEFAULT_BUDGET: usize = 16 << 20;

/// How many families whose renders looked into the stand-in for the pod's name are remembered.
const NAME_READERS: usize = 4096;

/// The per-pod inputs of a render that are not read from the pod's JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Family {
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

impl Family {
    /// The family of a prepared pod.
    fn of(prepared: &Prepared) -> Family {
        let inputs = &prepared.inputs;
        Family {
            templates: prepared.templates.clone(),
            owner: [
                inputs.owner.api_version.clone(),
                inputs.owner.kind.clone(),
                inputs.owner.name.clone(),
                inputs.owner.namespace.clone(),
            ],
            proxy_config_annotation: prepared
                .annotations
                .get(crate::mesh::PROXY_CONFIG_ANNOTATION)
                .cloned(),
            proxy_image: inputs.proxy_image.clone(),
            proxy_init_image: inputs.proxy_init_image.clone(),
        }
    }

    /// The bytes it holds.
    fn size(&self) -> usize {
        self.templates
            .iter()
            .chain(&self.owner)
            .chain(&self.proxy_config_annotation)
            .chain([&self.proxy_image, &self.proxy_init_image])
            .map(|text| size::text(text))
            .sum()
    }
}

/// The kept renders of one injection.
#[derive(Debug)]
struct Renders {
    /// One parsed overlay per rendered template, in order.
    overlays: Vec<Value>,
    /// How later pods take them.
    reuse: Reuse,
    /// Neither what the renders read nor what they gave holds [`TOKEN_VOLUME_PREFIX`].
    blind_to_token_volume: bool,
}

/// How later pods take kept renders.
#[derive(Debug)]
enum Reuse {
    /// As they are, with the template pod they make (a function of the overlays alone).
    AsRendered(TemplatePod),
    /// With the pod's name put in where each overlay holds the stand-in for it (renders shared by
    /// pods that are their own owner): their template pod is made from the overlays filled in.
    Named(Vec<Vec<Hole>>),
}

impl Reuse {
    /// The bytes it holds beside the overlays.
    fn size(&self) -> usize {
        match self {
            Reuse::AsRendered(template) => size::json(&template.pod),
            Reuse::Named(holes) => holes
                .iter()
                .flatten()
                .map(|hole| std::mem::size_of::<Hole>() + hole.path.len() * 32)
                .sum(),
        }
    }
}

struct Entry {
    family: Arc<Family>,
    reads: Vec<(Read, Seen)>,
    renders: Arc<Renders>,
    /// The bytes charged for it.
    size: usize,
    /// When it was last used: its key in [`State::by_use`].
    used: u64,
}

impl Entry {
    fn matches(&self, pod: &Value) -> bool {
        self.reads.iter().all(|(read, seen)| read.sees_same(pod, seen))
    }
}

/// What the cache holds, for one configuration.
#[derive(Default)]
struct State {
    /// The configuration the entries were rendered with ([`CompiledConfig::id`]).
    config: u64,
    /// Entries by number.
    entries: HashMap<u64, Entry>,
    /// Entry numbers by when they were last used, least recently used first.
    by_use: BTreeMap<u64, u64>,
    /// Entry numbers by family, least recently inserted first.
    families: HashMap<Arc<Family>, Vec<u64>>,
    /// The next entry number, and the next use's stamp.
    next: u64,
    /// The bytes charged for the entries.
    bytes: usize,
    /// Families (by hash) whose renders looked into the stand-in for the pod's name.
    name_readers: HashSet<u64>,
}

impl State {
    fn stamp(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Takes entry `id` out.
    fn remove(&mut self, id: u64) {
        let Some(entry) = self.entries.remove(&id) else {
            return;
        };
        self.by_use.remove(&entry.used);
        self.bytes -= entry.size;
        if let Some(ids) = self.families.get_mut(&entry.family) {
            ids.retain(|other| *other != id);
            if ids.is_empty() {
                self.families.remove(&entry.family);
            }
        }
    }
}

/// The render cache: a [`Render`] that reuses earlier renders, and the pipeline with it
/// ([`RenderCache::inject`]). Shared by the threads that inject; one per process, holding the
/// configuration in service's renders.
pub struct RenderCache {
    budget: usize,
    counts: Arc<RenderCounts>,
    /// What stands for the name of a pod that is its own owner in the renders such pods share;
    /// `None` (nothing shared) when the system gives no randomness.
    stand_in: Option<StandIn>,
    hasher: foldhash::fast::RandomState,
    state: Mutex<State>,
}

impl std::fmt::Debug for RenderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderCache")
            .field("budget", &self.budget)
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

impl Default for RenderCache {
    fn default() -> Self {
        RenderCache::new(DEFAULT_BUDGET)
    }
}

impl RenderCache {
    /// A cache of at most `budget` bytes (0: none; every pod is rendered).
    pub fn new(budget: usize) -> RenderCache {
        RenderCache {
            budget,
            counts: Arc::default(),
            stand_in: StandIn::new(),
            hasher: foldhash::fast::RandomState::default(),
            state: Mutex::default(),
        }
    }

    /// The same cache, counting where its injections got their renders into `counts`.
    pub fn counting_in(mut self, counts: Arc<RenderCounts>) -> RenderCache {
        self.counts = counts;
        self
    }

    /// The pipeline ([`inject_with`]) with this cache in front of the render stage.
    pub fn inject(&self, config: &CompiledConfig, request: &Request<'_>) -> Result<Outcome, InjectError> {
        inject_with(config, request, self)
    }

    /// Where injections got their renders.
    pub fn counts(&self) -> &Arc<RenderCounts> {
        &self.counts
    }

    /// The budget, in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// The bytes charged for the renders held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The number of renders held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no render is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent state (every update is one step).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state for `config` (emptied when it held another configuration's renders).
    fn state_for(&self, config: &CompiledConfig) -> MutexGuard<'_, State> {
        let mut state = self.lock();
        if state.config != config.id() {
            *state = State {
                config: config.id(),
                ..State::default()
            };
        }
        state
    }

    /// The kept renders of `family` whose reads `pod` matches.
    fn get(&self, config: &CompiledConfig, family: &Family, pod: &Value) -> Option<Arc<Renders>> {
        let mut state = self.state_for(config);
        let ids = state.families.get(family)?;
        let id = ids
            .iter()
            .rev()
            .copied()
            .find(|id| state.entries.get(id).is_some_and(|entry| entry.matches(pod)))?;
        let stamp = state.stamp();
        let entry = state.entries.get_mut(&id)?;
        let last = std::mem::replace(&mut entry.used, stamp);
        let renders = entry.renders.clone();
        state.by_use.remove(&last);
        state.by_use.insert(stamp, id);
        Some(renders)
    }

    /// Keeps `renders` of `family`, which read `reads` of `pod`, within the budget; gives them
    /// back with whether they were blind to the token volume's name (told also when not kept).
    fn insert(
        &self,
        config: &CompiledConfig,
        family: Family,
        pod: &Value,
        reads: Vec<Read>,
        overlays: Vec<Value>,
        reuse: Reuse,
    ) -> Arc<Renders> {
        let blind_to_token_volume = !overlays.iter().any(|overlay| holds(overlay, TOKEN_VOLUME_PREFIX))
            && !reads
                .iter()
                .any(|read| read_holds(read, pod, TOKEN_VOLUME_PREFIX));
        let renders = Arc::new(Renders {
            overlays,
            reuse,
            blind_to_token_volume,
        });
        let reads: Vec<(Read, Seen)> = reads
            .into_iter()
            .map(|read| {
                let seen = read.observe(pod);
                (read, seen)
            })
            .collect();
        let size = family.size()
            + reads
                .iter()
                .map(|(read, seen)| size::read(read, seen))
                .sum::<usize>()
            + renders.overlays.iter().map(size::json).sum::<usize>()
            + renders.reuse.size()
            + std::mem::size_of::<Entry>()
            + std::mem::size_of::<Renders>();
        if size > self.budget / MAX_SHARE {
            return renders;
        }
        let mut state = self.state_for(config);
        let family = Arc::new(family);
        while let Some(oldest) = state
            .families
            .get(&family)
            .filter(|ids| ids.len() >= PER_FAMILY)
            .and_then(|ids| ids.first().copied())
        {
            state.remove(oldest);
            self.counts.note_eviction();
        }
        while state.bytes + size > self.budget {
            let Some(oldest) = state.by_use.values().next().copied() else {
                break;
            };
            state.remove(oldest);
            self.counts.note_eviction();
        }
        let id = state.stamp();
        state.by_use.insert(id, id);
        state.families.entry(family.clone()).or_default().push(id);
        state.bytes += size;
        state.entries.insert(
            id,
            Entry {
                family,
                reads,
                renders: renders.clone(),
                size,
                used: id,
            },
        );
        renders
    }

    /// Whether renders of `family` (with the stand-in for the pod's name) looked into the name.
    fn reads_the_name(&self, config: &CompiledConfig, family: &Family) -> bool {
        let hash = self.hasher.hash_one(family);
        self.state_for(config).name_readers.contains(&hash)
    }

    /// Notes that renders of `family` looked into the stand-in for the pod's name: later pods of
    /// the family render with their own.
    fn note_name_read(&self, config: &CompiledConfig, family: &Family) {
        let hash = self.hasher.hash_one(family);
        let mut state = self.state_for(config);
        if state.name_readers.len() >= NAME_READERS {
            state.name_readers.clear();
        }
        state.name_readers.insert(hash);
    }

    /// The renders of a pod whose templates call no clock or randomness: kept, or rendered (and
    /// kept).
    fn render_cacheable(&self, config: &CompiledConfig, prepared: &Prepared) -> Rendered {
        let family = Family::of(prepared);
        let pod = &prepared.inputs.pod;
        if family.owner[1] == "Pod" {
            return self
                .render_shared(config, prepared, family)
                .unwrap_or_else(|| Plain.render(config, prepared));
        }
        if let Some(renders) = self.get(config, &family, pod)
            && let Reuse::AsRendered(template_pod) = &renders.reuse
        {
            return Rendered {
                overlays: renders.overlays.iter().cloned().map(Ok).collect(),
                template_pod: template_pod.clone(),
                blind_to_token_volume: renders.blind_to_token_volume,
                source: RenderSource::Kept,
            };
        }
        let (mut rendered, reads) = reads::record(pod, || Plain.render(config, prepared));
        let overlays: Option<Vec<Value>> = rendered
            .overlays
            .iter()
            .map(|overlay| overlay.as_ref().ok().cloned())
            .collect();
        if let (Some(reads), Some(overlays)) = (reads, overlays) {
            let reuse = Reuse::AsRendered(rendered.template_pod.clone());
            let renders = self.insert(config, family, pod, reads, overlays, reuse);
            rendered.blind_to_token_volume = renders.blind_to_token_volume;
        }
        rendered
    }

    /// The renders of a pod that is its own owner, shared under the stand-in for its name, with
    /// its name put in ([`super::own_name`]); `None` when the pod is to be rendered with its own
    /// name.
    fn render_shared(
        &self,
        config: &CompiledConfig,
        prepared: &Prepared,
        family: Family,
    ) -> Option<Rendered> {
        let stand_in = self.stand_in.as_ref()?;
        let name = &prepared.inputs.owner.name;
        if !can_stand_in(name, stand_in) {
            return None;
        }
        let shared = Family {
            owner: [
                family.owner[0].clone(),
                family.owner[1].clone(),
                stand_in.as_str().to_owned(),
                family.owner[3].clone(),
            ],
            ..family
        };
        let pod = &prepared.inputs.pod;
        let (renders, source) = match self.get(config, &shared, pod) {
            Some(renders) => (renders, RenderSource::Shared),
            None if self.reads_the_name(config, &shared) => return None,
            None => {
                let mut inputs = prepared.inputs.clone();
                inputs.owner.name = stand_in.as_str().to_owned();
                let data = template_data(config, &inputs);
                let watch = NameWatch::new(stand_in, &data);
                let (overlays, reads) = reads::record(pod, || {
                    render_templates(config, &prepared.templates, &data, Some(&watch))
                });
                if watch.looked_into() {
                    self.note_name_read(config, &shared);
                    return None;
                }
                // A render that fails is told by the pod's own.
                let overlays = overlays.into_iter().collect::<Result<Vec<Value>, _>>().ok()?;
                let places = overlays.iter().map(|overlay| holes(overlay, stand_in)).collect();
                let renders = self.insert(config, shared, pod, reads?, overlays, Reuse::Named(places));
                (renders, RenderSource::Rendered)
            }
        };
        let Reuse::Named(places) = &renders.reuse else {
            return None;
        };
        let overlays = renders
            .overlays
            .iter()
            .zip(places)
            .map(|(overlay, holes)| fill(overlay, holes, stand_in, name).map(Ok))
            .collect::<Option<Vec<_>>>()?;
        Some(Rendered::of(overlays, renders.blind_to_token_volume, source))
    }
}

impl Render for RenderCache {
    fn render(&self, config: &CompiledConfig, prepared: &Prepared) -> Rendered {
        let rendered = if self.budget > 0 && config.deterministic(&prepared.templates) {
            self.render_cacheable(config, prepared)
        } else {
            Plain.render(config, prepared)
        };
        self.counts.note(rendered.source);
        rendered
    }
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
