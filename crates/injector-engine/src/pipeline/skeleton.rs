//! Answers for pods their controller makes alike but for a few values of each pod's own: a
//! Job's completion index, a StatefulSet pod's name and ordinal, the random name of the
//! ServiceAccount token volume, per-pod environment values. The patch of a pod of such a shape
//! is kept with those values as holes ([`Skeleton`]), and each next pod of the shape gets it
//! with its own values written in, without merging, post-processing or diffing again.
//!
//! **The values taken out** ([`shape_of`]), each only when it is a non-empty string:
//!
//! - `metadata.name`, and the values of the labels [`PER_POD_LABELS`] and of the annotations
//!   [`PER_POD_ANNOTATIONS`];
//! - `metadata.generateName` (the owner heuristic reads only whether it is empty);
//! - `spec.hostname`;
//! - a volume's `persistentVolumeClaim.claimName`;
//! - the `value` of the `env` items of `spec.containers`;
//! - the name of the token volume ([`TOKEN_VOLUME_PREFIX`]), where a volume or a volume mount
//!   gives it.
//!
//! **Why a patch holds for every value in those holes.** A shape's first pod is injected as
//! usual and only noted; its second is injected with each of its values replaced by a marker
//! made for that hole ([`Markers`]: a DNS name with a nonce of the injector's), never rendering
//! (the marked pod takes the render kept for the shape's earlier pods, or the next pod tries
//! again, [`MAX_WAITS`] times at most), and that patch is kept, with holes where the markers
//! are, only when:
//!
//! - the renders came from the render cache, merged in place (one template, no container of the
//!   pod that the template's could override), and nothing they read of the pod holds a marker
//!   ([`super::render_cache::RenderCache::blind_to`]): the templates never saw the values (an
//!   injector whose templates read them keeps no skeleton). A pod that is its own owner (a
//!   StatefulSet's) shows the templates its name through the owner: its render must be the
//!   one shared under the stand-in for the name ([`super::own_name`]), merged as a kept render
//!   with the name put in after the merge, which puts the name only into the strings that held
//!   the stand-in, verbatim;
//! - the templates were blind to the token volume's name, as the webhook's outcome cache asks;
//! - every marker in the patch is whole (a number that is a hole, closed).
//!
//! The other stages (annotation validation, the owner heuristic, cluster and network, the merge
//! and post-processing) read label and annotation values only under keys other than the ones
//! taken out, read `generateName` only for being empty, and never read a hostname, a claim, an
//! app container's env value or the token volume's name other than to copy it or compare it
//! for equality with the same place of the pod as received. A pod's value in a hole is thus
//! copied where the marker was, and only there: written into the marker's places it gives the
//! patch the pod's own injection would give. Where a marker was a whole JSON string the value is
//! written escaped as JSON escapes it; inside a longer string (the pod's name in
//! `…/pods/<name>`) only a value that JSON and JSON Pointer write as it is goes in. A pod's name
//! goes in only where its own injection would put it in a shared render: a name the stand-in can
//! stand for, in strings that still read as strings with it
//! ([`super::own_name::reads_as_string`]). Anything else is injected on its own. An empty value
//! is not taken out (Go's round trip leaves some empty strings out, so an empty value is not
//! just copied). Debug builds check every answer made from a skeleton against the pod's own
//! injection, and the conformance test answers a Job's and a StatefulSet's pods made of every
//! golden pod against their own injections.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    hash::BuildHasher as _,
    sync::{Arc, Mutex},
};

use serde_json::Value;

use super::{render_cache::TOKEN_VOLUME_PREFIX, render_counts::RenderSource};
use crate::patch::write_json_str;

/// Labels that a controller sets to a value of each pod's own.
pub const PER_POD_LABELS: [&str; 3] = [
    "batch.kubernetes.io/job-completion-index",
    "apps.kubernetes.io/pod-index",
    "statefulset.kubernetes.io/pod-name",
];

/// Annotations that a controller sets to a value of each pod's own.
pub const PER_POD_ANNOTATIONS: [&str; 1] = ["batch.kubernetes.io/job-completion-index"];

/// How many shapes are kept; the oldest goes first.
pub const CAPACITY: usize = 256;

/// How many bytes the kept shapes' keys and skeletons may take together; the oldest go first.
pub const BUDGET: usize = 4 * 1024 * 1024;

/// The largest pod (its key) whose skeleton is kept.
const MAX_KEY: usize = 64 * 1024;

/// Marks a hole in a key: a byte JSON text never holds unescaped.
const HOLE: u8 = 0;

/// A pod with its own values taken out, as a key, and those values in the order they came.
pub struct Shape<'a> {
    key: Vec<u8>,
    /// Where the pod's JSON starts in `key` (after the request's namespace and path).
    pod_start: usize,
    values: Vec<&'a str>,
    /// Which of `values` is the pod's name, if it has one.
    name_hole: Option<usize>,
}

impl Shape<'_> {
    /// How many values were taken out.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The shape of `pod` for a request in `namespace` with `path_env`; `None` when the pod is too
/// large to be worth one.
pub fn shape_of<'a>(
    pod: &'a Value,
    namespace: Option<&str>,
    path_env: &BTreeMap<String, String>,
) -> Option<Shape<'a>> {
    let mut writer = ShapeWriter {
        out: Vec::with_capacity(4096),
        values: Vec::new(),
        name_hole: None,
    };
    // The request's namespace and the path's environment decide the answer as much as the pod.
    writer.str(namespace.unwrap_or(""));
    for (name, value) in path_env {
        writer.str(name);
        writer.str(value);
    }
    let pod_start = writer.out.len();
    writer.root(pod);
    (writer.out.len() <= MAX_KEY).then_some(Shape {
        key: writer.out,
        pod_start,
        values: writer.values,
        name_hole: writer.name_hole,
    })
}

/// Writes a pod's key: its compact JSON text (without `managedFields`, which the injection
/// ignores) with [`HOLE`] where a value was taken out.
struct ShapeWriter<'a> {
    out: Vec<u8>,
    values: Vec<&'a str>,
    name_hole: Option<usize>,
}

impl<'a> ShapeWriter<'a> {
    fn str(&mut self, text: &str) {
        write_json_str(&mut self.out, text);
    }

    fn plain(&mut self, value: &Value) {
        crate::patch::write_json_value(&mut self.out, value);
    }

    /// A value of the pod's own when it is a non-empty string, else written as it is.
    fn own(&mut self, value: &'a Value) {
        match value {
            Value::String(text) if !text.is_empty() => {
                self.out.push(HOLE);
                self.values.push(text);
            }
            other => self.plain(other),
        }
    }

    /// A name that is the pod's own when it is the token volume's.
    fn token_name(&mut self, value: &'a Value) {
        match value {
            Value::String(text) if text.starts_with(TOKEN_VOLUME_PREFIX) => self.own(value),
            other => self.plain(other),
        }
    }

    /// Writes `value` as the pod's own when `key` is one of `keys`: `false` (to be written as it
    /// is) otherwise.
    fn own_if(&mut self, key: &str, keys: &[&str], value: &'a Value) -> bool {
        let own = keys.contains(&key);
        if own {
            self.own(value);
        }
        own
    }

    /// `value` as an object whose members `each` writes (it returns `false` for a member it did
    /// not write, which is then written as it is), leaving out the member `left_out`; anything
    /// else as it is.
    fn object(
        &mut self,
        value: &'a Value,
        left_out: Option<&str>,
        mut each: impl FnMut(&mut Self, &str, &'a Value) -> bool,
    ) {
        let Value::Object(members) = value else {
            return self.plain(value);
        };
        self.out.push(b'{');
        let mut first = true;
        for (key, member) in members {
            if left_out == Some(key.as_str()) {
                continue;
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.str(key);
            self.out.push(b':');
            if !each(self, key, member) {
                self.plain(member);
            }
        }
        self.out.push(b'}');
    }

    /// `value` as a list whose items `each` writes; anything else as it is.
    fn list(&mut self, value: &'a Value, mut each: impl FnMut(&mut Self, &'a Value)) {
        let Value::Array(items) = value else {
            return self.plain(value);
        };
        self.out.push(b'[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            each(self, item);
        }
        self.out.push(b']');
    }

    fn root(&mut self, pod: &'a Value) {
        self.object(pod, None, |writer, key, member| match key {
            "metadata" => {
                writer.metadata(member);
                true
            }
            "spec" => {
                writer.spec(member);
                true
            }
            _ => false,
        });
    }

    /// The pod's metadata, without `managedFields`.
    fn metadata(&mut self, metadata: &'a Value) {
        self.object(metadata, Some("managedFields"), |writer, key, member| {
            match key {
                "labels" => writer.object(member, None, |writer, key, value| {
                    writer.own_if(key, &PER_POD_LABELS, value)
                }),
                "annotations" => writer.object(member, None, |writer, key, value| {
                    writer.own_if(key, &PER_POD_ANNOTATIONS, value)
                }),
                "generateName" => writer.own(member),
                "name" => {
                    let hole = writer.values.len();
                    writer.own(member);
                    if writer.values.len() > hole {
                        writer.name_hole = Some(hole);
                    }
                }
                _ => return false,
            }
            true
        });
    }

    fn spec(&mut self, spec: &'a Value) {
        self.object(spec, None, |writer, key, member| {
            match key {
                "hostname" => writer.own(member),
                "volumes" => writer.list(member, |writer, volume| writer.volume(volume)),
                "containers" => writer.list(member, |writer, container| writer.container(container, true)),
                "initContainers" => {
                    writer.list(member, |writer, container| writer.container(container, false))
                }
                _ => return false,
            }
            true
        });
    }

    fn volume(&mut self, volume: &'a Value) {
        self.object(volume, None, |writer, key, member| {
            match key {
                "name" => writer.token_name(member),
                "persistentVolumeClaim" => writer.object(member, None, |writer, key, value| {
                    writer.own_if(key, &["claimName"], value)
                }),
                _ => return false,
            }
            true
        });
    }

    /// A container: the token volume's name in its mounts, and (`env_values`) its env values.
    fn container(&mut self, container: &'a Value, env_values: bool) {
        self.object(container, None, |writer, key, member| {
            match key {
                "env" if env_values => writer.list(member, |writer, item| {
                    writer.object(item, None, |writer, key, value| {
                        writer.own_if(key, &["value"], value)
                    })
                }),
                "volumeMounts" => writer.list(member, |writer, mount| {
                    writer.object(mount, None, |writer, key, value| {
                        let name = key == "name";
                        if name {
                            writer.token_name(value);
                        }
                        name
                    })
                }),
                _ => return false,
            }
            true
        });
    }
}

/// The markers that stand for a shape's values in the pod injected for its skeleton.
///
/// A marker is `zq`, a nonce of 20 lowercase letters and digits, `-`, the hole's number and `z`:
/// a DNS name, so that it may stand for a pod's name as the pod's name would
/// ([`super::own_name::can_stand_in`]), and text JSON writes as it is.
#[derive(Debug)]
pub struct Markers {
    /// What every marker starts with.
    prefix: String,
}

impl Markers {
    /// Markers with a nonce from the operating system's random source; `None` when it gives
    /// none (no skeleton is then made).
    pub fn new() -> Option<Self> {
        const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut random = [0u8; 20];
        getrandom::fill(&mut random).ok()?;
        let nonce: String = random
            .iter()
            .map(|byte| char::from(DIGITS[usize::from(*byte) % DIGITS.len()]))
            .collect();
        Some(Self {
            prefix: format!("zq{nonce}-"),
        })
    }

    /// The text every marker starts with (what a read that saw a marker holds).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn marker(&self, index: usize) -> String {
        format!("{}{index}z", self.prefix)
    }

    /// The pod of `shape` with the marker of each hole in its place: the key's pod text, holes
    /// filled, parsed again.
    pub fn marked_pod(&self, shape: &Shape<'_>) -> Option<Value> {
        let pod = &shape.key[shape.pod_start..];
        let mut text = Vec::with_capacity(pod.len() + shape.values.len() * 32);
        let mut index = 0;
        for &byte in pod {
            if byte == HOLE {
                write_json_str(&mut text, &self.marker(index));
                index += 1;
            } else {
                text.push(byte);
            }
        }
        serde_json::from_slice(&text).ok()
    }

    /// The skeleton of a patch made for a marked pod of `shape`: `None` when a marker is in it
    /// other than whole, or when a string that holds the pod's name marker holds an escape (the
    /// name's checks read the string as it is).
    pub fn skeleton(&self, patch: &[u8], shape: &Shape<'_>) -> Option<Skeleton> {
        let mut parts = Vec::new();
        let mut name_strings = Vec::new();
        let mut text_start = 0;
        for (start, end) in json_strings(patch) {
            let content = &patch[start + 1..end - 1];
            let mut found = self.markers_in(content, shape.len())?;
            if found.is_empty() {
                continue;
            }
            let whole = found.len() == 1 && found[0].0 == 0 && found[0].1 == content.len();
            let mut segments = Vec::new();
            let mut literal = start + 1;
            for (from, to, index) in found.drain(..) {
                let (from, to) = (start + 1 + from, start + 1 + to);
                segments.push(Segment::Literal(literal, from));
                segments.push(Segment::Value(index));
                literal = to;
                if whole {
                    // The whole string, quotes and all, is the value's.
                    parts.push(Part::Text(text_start, start));
                    parts.push(Part::Whole(index));
                    text_start = end;
                } else {
                    parts.push(Part::Text(text_start, from));
                    parts.push(Part::Inside(index));
                    text_start = to;
                }
            }
            segments.push(Segment::Literal(literal, end - 1));
            if let Some(name) = shape.name_hole
                && segments.contains(&Segment::Value(name))
            {
                if content.contains(&b'\\') {
                    return None;
                }
                name_strings.push(segments);
            }
        }
        parts.push(Part::Text(text_start, patch.len()));
        Some(Skeleton {
            text: patch.to_vec(),
            parts,
            name_strings,
        })
    }

    /// The markers in a string's JSON text: (start, end, hole) of each, or `None` when one is
    /// cut short or numbers no hole.
    fn markers_in(&self, content: &[u8], holes: usize) -> Option<Vec<(usize, usize, usize)>> {
        let prefix = self.prefix.as_bytes();
        let mut found = Vec::new();
        let mut at = 0;
        while let Some(offset) = find(&content[at..], prefix) {
            let start = at + offset;
            let digits_start = start + prefix.len();
            let digits = content[digits_start..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            let index: usize = std::str::from_utf8(&content[digits_start..digits_start + digits])
                .ok()?
                .parse()
                .ok()?;
            let end = digits_start + digits + 1;
            if content.get(end - 1) != Some(&b'z') || index >= holes {
                return None;
            }
            found.push((start, end, index));
            at = end;
        }
        Some(found)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// The spans of the JSON strings in `text` (quotes included), keys and values alike.
fn json_strings(text: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut index = 0;
    while index < text.len() {
        if text[index] == b'"' {
            let start = index;
            index += 1;
            while index < text.len() && text[index] != b'"' {
                index += if text[index] == b'\\' { 2 } else { 1 };
            }
            spans.push((start, (index + 1).min(text.len())));
        }
        index += 1;
    }
    spans
}

/// A patch with holes for a shape's values.
#[derive(Debug)]
pub struct Skeleton {
    text: Vec<u8>,
    parts: Vec<Part>,
    /// The strings that hold the pod's name, in pieces: the pod's own injection puts the name in
    /// only where the string with it still reads as a string ([`super::own_name`]).
    name_strings: Vec<Vec<Segment>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `text[start..end]`.
    Text(usize, usize),
    /// The value of this hole as a JSON string, in place of a string that was its marker.
    Whole(usize),
    /// The value of this hole, in place of a marker inside a longer string.
    Inside(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    /// `text[start..end]`, written as it is.
    Literal(usize, usize),
    /// The value of this hole.
    Value(usize),
}

impl Skeleton {
    /// The patch for a pod of this shape: its values written into the holes. `None` when the
    /// pod's own injection could differ in more than its values: a value inside a longer string
    /// that JSON would escape, or a pod's name that its own injection would not put in
    /// ([`super::own_name::can_stand_in`], [`super::own_name::reads_as_string`]).
    pub fn fill(&self, shape: &Shape<'_>, stand_in: Option<&super::own_name::StandIn>) -> Option<Vec<u8>> {
        let value = |index: usize| shape.values.get(index).copied();
        if let Some(name) = shape.name_hole {
            let name = value(name)?;
            if !stand_in.is_some_and(|stand_in| super::own_name::can_stand_in(name, stand_in)) {
                return None;
            }
            for segments in &self.name_strings {
                let mut text = Vec::new();
                for segment in segments {
                    match *segment {
                        Segment::Literal(start, end) => text.extend_from_slice(&self.text[start..end]),
                        Segment::Value(index) => text.extend_from_slice(value(index)?.as_bytes()),
                    }
                }
                if !super::own_name::reads_as_string(std::str::from_utf8(&text).ok()?) {
                    return None;
                }
            }
        }
        let mut out = Vec::with_capacity(self.text.len() + 64);
        for part in &self.parts {
            match *part {
                Part::Text(start, end) => out.extend_from_slice(&self.text[start..end]),
                Part::Whole(index) => write_json_str(&mut out, value(index)?),
                Part::Inside(index) => {
                    let text = value(index)?;
                    if !writes_as_is(text) {
                        return None;
                    }
                    out.extend_from_slice(text.as_bytes());
                }
            }
        }
        Some(out)
    }
}

/// Whether JSON writes `text` inside a string as it is, and a JSON Pointer holds it as it is
/// (no `"`, `\\`, control character, `~` or `/`).
fn writes_as_is(text: &str) -> bool {
    !text
        .bytes()
        .any(|byte| byte < 0x20 || matches!(byte, b'"' | b'\\' | b'~' | b'/'))
}

/// What is known of a shape.
#[derive(Debug, Clone)]
pub enum Known {
    /// Its skeleton, and where its render came from (kept, or shared under the stand-in for the
    /// pod's name): each answer made of it counts that.
    Skeleton(Arc<Skeleton>, RenderSource),
    /// Its pods are injected each on their own (the marked pod's injection did not hold for
    /// every value).
    Unusable,
}

/// What [`Skeletons::get`] found.
#[derive(Debug, Clone)]
pub enum Found {
    /// The shape is known.
    Known(Known),
    /// A pod of this shape came before: this one is to make its skeleton.
    SeenOnce,
    /// The shape is new (and is now seen once).
    New,
}

/// How many pods of a shape may find no kept render for its marked pod
/// ([`Skeletons::waited`]) before the shape is taken as unusable.
pub const MAX_WAITS: u8 = 4;

/// The shapes seen, oldest first out. A shape's skeleton is made by its second pod: a pod
/// unlike any other costs only its key.
#[derive(Debug, Default)]
pub struct Skeletons {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    by_key: HashMap<Box<[u8]>, Known, foldhash::fast::RandomState>,
    /// The bytes of the kept keys and skeletons.
    bytes: usize,
    order: VecDeque<Box<[u8]>>,
    /// The hashes of the keys of shapes seen and not known yet, with how many of their pods
    /// waited ([`Skeletons::waited`]); emptied when it reaches [`CAPACITY`] × 16.
    seen: HashMap<u64, u8, foldhash::fast::RandomState>,
}

impl State {
    fn insert(&mut self, key: &[u8], known: Known) {
        if self.by_key.contains_key(key) {
            return;
        }
        let key: Box<[u8]> = key.into();
        self.bytes += size(&key, &known);
        self.by_key.insert(key.clone(), known);
        self.order.push_back(key);
        while self.order.len() > CAPACITY || self.bytes > BUDGET {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(known) = self.by_key.remove(&oldest) {
                self.bytes -= size(&oldest, &known);
            }
        }
    }
}

impl Skeletons {
    /// What is known of `shape`; a new shape is noted as seen once when `note` says so.
    pub fn get(&self, shape: &Shape<'_>, note: bool) -> Found {
        let Ok(mut state) = self.state.lock() else {
            return Found::New;
        };
        if let Some(known) = state.by_key.get(shape.key.as_slice()) {
            return Found::Known(known.clone());
        }
        let hash = state.seen.hasher().hash_one(shape.key.as_slice());
        if state.seen.contains_key(&hash) {
            return Found::SeenOnce;
        }
        if !note {
            return Found::New;
        }
        if state.seen.len() >= CAPACITY * 16 {
            state.seen.clear();
        }
        state.seen.insert(hash, 0);
        Found::New
    }

    /// A pod of `shape` found no kept render for its marked pod (its first pods' render is not
    /// kept yet, or the templates read a value taken out, so the marked pod's is another): the
    /// [`MAX_WAITS`]th such pod makes the shape unusable.
    pub fn waited(&self, shape: &Shape<'_>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let hash = state.seen.hasher().hash_one(shape.key.as_slice());
        let waits = state.seen.entry(hash).or_insert(0);
        *waits = waits.saturating_add(1);
        if *waits >= MAX_WAITS {
            state.seen.remove(&hash);
            state.insert(&shape.key, Known::Unusable);
        }
    }

    /// Keeps what was learned of `shape`, the oldest shapes going when there are more than
    /// [`CAPACITY`] or they take more than [`BUDGET`] bytes.
    pub fn insert(&self, shape: &Shape<'_>, known: Known) {
        if let Ok(mut state) = self.state.lock() {
            let hash = state.seen.hasher().hash_one(shape.key.as_slice());
            state.seen.remove(&hash);
            state.insert(&shape.key, known);
        }
    }

    /// How many shapes are known.
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |state| state.by_key.len())
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The bytes a kept shape takes.
fn size(key: &[u8], known: &Known) -> usize {
    key.len()
        + match known {
            Known::Skeleton(skeleton, _) => skeleton.text.len() + skeleton.parts.len() * 24,
            Known::Unusable => 0,
        }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job_pod(index: usize, token: &str, shard: &str) -> Value {
        json!({
            "metadata": {"generateName": format!("batch-{index}-"), "namespace": "load",
                "labels": {"job-name": "batch", "batch.kubernetes.io/job-completion-index": index.to_string()},
                "annotations": {"batch.kubernetes.io/job-completion-index": index.to_string()},
                "ownerReferences": [{"kind": "Job", "name": "batch", "controller": true}],
                "managedFields": [{"manager": "kube-controller-manager", "time": format!("t{index}")}]},
            "spec": {"hostname": format!("batch-{index}"),
                "containers": [{"name": "worker", "env": [{"name": "SHARD", "value": shard}, {"name": "EMPTY", "value": ""}],
                    "volumeMounts": [{"name": token, "mountPath": "/var/run/secrets"}, {"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": token, "projected": {}}, {"name": "data", "persistentVolumeClaim": {"claimName": format!("data-{index}")}}]}
        })
    }

    fn stateful_pod(name: &str) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "load",
                "labels": {"app": "db", "statefulset.kubernetes.io/pod-name": name},
                "ownerReferences": [{"kind": "StatefulSet", "name": "db", "controller": true}]},
            "spec": {"hostname": name, "containers": [{"name": "db"}]}
        })
    }

    #[test]
    fn pods_of_one_controller_share_a_shape_and_give_their_own_values_in_order() {
        let env = BTreeMap::new();
        let (first, second) = (
            job_pod(0, "kube-api-access-7xk2p", "a"),
            job_pod(17, "kube-api-access-b4zqq", "\"q\""),
        );
        let a = shape_of(&first, Some("load"), &env).expect("a shape");
        let b = shape_of(&second, Some("load"), &env).expect("a shape");
        assert_eq!(a.key, b.key);
        assert_eq!(
            b.values,
            [
                "batch-17-",
                "17",
                "17",
                "batch-17",
                "\"q\"",
                "kube-api-access-b4zqq",
                "kube-api-access-b4zqq",
                "data-17"
            ]
        );
        assert_eq!(b.name_hole, None);
        // What is not a pod's own value is in the key, and so is the namespace.
        let other_name = {
            let mut pod = first.clone();
            pod["metadata"]["labels"]["job-name"] = json!("other");
            pod
        };
        assert_ne!(
            shape_of(&other_name, Some("load"), &env).expect("a shape").key,
            a.key
        );
        assert_ne!(
            shape_of(&first, Some("elsewhere"), &env).expect("a shape").key,
            a.key
        );
        // An empty value is not taken out: it stays in the key.
        let emptied = {
            let mut pod = first.clone();
            pod["spec"]["hostname"] = json!("");
            pod
        };
        assert_ne!(
            shape_of(&emptied, Some("load"), &env).expect("a shape").key,
            a.key
        );
        // A StatefulSet's pods: their name too.
        let (db0, db1) = (stateful_pod("db-0"), stateful_pod("db-1"));
        let (a, b) = (
            shape_of(&db0, None, &env).expect("a shape"),
            shape_of(&db1, None, &env).expect("a shape"),
        );
        assert_eq!(a.key, b.key);
        assert_eq!(b.values, ["db-1", "db-1", "db-1"]);
        assert_eq!(b.name_hole, Some(0));
    }

    #[test]
    fn a_marked_pod_holds_a_marker_for_each_value_and_its_patch_is_filled_with_the_pods_own() {
        let env = BTreeMap::new();
        let markers = Markers::new().expect("randomness");
        let pod = job_pod(3, "kube-api-access-7xk2p", "x");
        let shape = shape_of(&pod, None, &env).expect("a shape");
        let marked = markers.marked_pod(&shape).expect("parses");
        assert_eq!(marked["spec"]["hostname"], json!(markers.marker(3)));
        assert_eq!(marked["spec"]["containers"][0]["env"][1]["value"], json!(""));
        assert!(marked["metadata"].get("managedFields").is_none());
        // A patch that copies two of the markers whole, and one inside a string.
        let patch = format!(
            r#"[{{"op":"add","path":"/a","value":"{}"}},{{"op":"add","path":"/b","value":["{}","{}","at {}"]}}]"#,
            markers.marker(3),
            markers.marker(4),
            markers.marker(3),
            markers.marker(7),
        );
        let skeleton = markers.skeleton(patch.as_bytes(), &shape).expect("whole markers");
        let sibling = job_pod(9, "kube-api-access-zzzzz", "say \"hi\"\n");
        let sibling_shape = shape_of(&sibling, None, &env).expect("a shape");
        assert_eq!(
            String::from_utf8(skeleton.fill(&sibling_shape, None).expect("fills")).expect("UTF-8"),
            r#"[{"op":"add","path":"/a","value":"batch-9"},{"op":"add","path":"/b","value":["say \"hi\"\n","batch-9","at data-9"]}]"#
        );
        // A value JSON would escape, inside a longer string: the pod is injected on its own.
        let quoted = job_pod(9, "kube-api-access-zzzzz", "x");
        let mut quoted_claim = quoted.clone();
        quoted_claim["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"] = json!("a\"b");
        let quoted_shape = shape_of(&quoted_claim, None, &env).expect("a shape");
        assert!(skeleton.fill(&quoted_shape, None).is_none());
        // A marker cut short, or of no hole, makes no skeleton.
        let cut = format!(
            r#"[{{"value":"{}"}}]"#,
            &markers.marker(3)[..markers.prefix().len() + 1]
        );
        assert!(markers.skeleton(cut.as_bytes(), &shape).is_none());
        let beyond = format!(r#"[{{"value":"{}"}}]"#, markers.marker(shape.len()));
        assert!(markers.skeleton(beyond.as_bytes(), &shape).is_none());
    }

    #[test]
    fn a_pods_name_goes_in_only_where_its_own_injection_would_put_it() {
        let env = BTreeMap::new();
        let markers = Markers::new().expect("randomness");
        let stand_in = super::super::own_name::StandIn::new().expect("randomness");
        let db0 = stateful_pod("db-0");
        let shape = shape_of(&db0, None, &env).expect("a shape");
        let patch = format!(
            r#"[{{"op":"add","path":"/o","value":"pods/{}"}},{{"op":"add","path":"/w","value":"{}"}}]"#,
            markers.marker(0),
            markers.marker(0)
        );
        let skeleton = markers.skeleton(patch.as_bytes(), &shape).expect("a skeleton");
        let fill = |name: &str| {
            let pod = stateful_pod(name);
            let shape = shape_of(&pod, None, &env).expect("a shape");
            skeleton
                .fill(&shape, Some(&stand_in))
                .map(|patch| String::from_utf8(patch).expect("UTF-8"))
        };
        assert_eq!(
            fill("db-7").as_deref(),
            Some(r#"[{"op":"add","path":"/o","value":"pods/db-7"},{"op":"add","path":"/w","value":"db-7"}]"#)
        );
        // Names the pod's own injection would not put in a shared render: a number, a word YAML
        // reads as a boolean, a name that is no DNS name.
        assert_eq!(fill("123"), None);
        assert_eq!(fill("true"), None);
        assert_eq!(fill("DB_0"), None);
        // Without a stand-in, no shared render: nothing is filled.
        let pod = stateful_pod("db-7");
        assert!(
            skeleton
                .fill(&shape_of(&pod, None, &env).expect("a shape"), None)
                .is_none()
        );
    }

    #[test]
    fn kept_shapes_stay_within_their_count_and_bytes() {
        let env = BTreeMap::new();
        let skeletons = Skeletons::default();
        for index in 0..CAPACITY + 10 {
            let mut pod = job_pod(1, "kube-api-access-7xk2p", "x");
            pod["metadata"]["labels"]["job-name"] = json!(format!("batch-{index}"));
            let shape = shape_of(&pod, None, &env).expect("a shape");
            assert!(matches!(skeletons.get(&shape, false), Found::New));
            assert!(matches!(skeletons.get(&shape, true), Found::New));
            assert!(matches!(skeletons.get(&shape, true), Found::SeenOnce));
            skeletons.insert(&shape, Known::Unusable);
            assert!(matches!(
                skeletons.get(&shape, false),
                Found::Known(Known::Unusable)
            ));
        }
        assert_eq!(skeletons.len(), CAPACITY);
        let state = skeletons.state.lock().expect("not poisoned");
        assert!(state.bytes <= BUDGET);
    }

    #[test]
    fn a_shape_whose_marked_pod_keeps_finding_no_render_is_given_up() {
        let env = BTreeMap::new();
        let skeletons = Skeletons::default();
        let pod = job_pod(1, "kube-api-access-7xk2p", "x");
        let shape = shape_of(&pod, None, &env).expect("a shape");
        assert!(matches!(skeletons.get(&shape, true), Found::New));
        for _ in 1..MAX_WAITS {
            skeletons.waited(&shape);
            assert!(matches!(skeletons.get(&shape, true), Found::SeenOnce));
        }
        skeletons.waited(&shape);
        assert!(matches!(
            skeletons.get(&shape, true),
            Found::Known(Known::Unusable)
        ));
    }
}
