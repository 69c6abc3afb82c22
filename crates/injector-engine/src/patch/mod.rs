//! The JSON Patch (RFC 6902) from the pod the API server sent to the injected pod.
//!
//! Both sides are the full JSON objects, so fields the engine does not model — newer Kubernetes
//! fields, extensions — are equal on both sides and never appear in the patch: we never remove
//! what we did not put there. The patch applies to the object exactly as the API server holds it.

use serde_json::{Map, Value};

use crate::member::Members;

mod json_text;

/// A patch that could not be produced or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to create patch: {0}")]
pub struct PatchError(pub String);

/// The RFC 6902 operations turning `original` into `injected`, serialized as JSON.
///
/// Objects are compared key by key; lists keep their common head and tail and are compared item
/// by item in between, so a container inserted at the front is one `add`, not a rewrite of every
/// container after it. Removals in a list go from the highest index down.
pub fn create_patch(original: &Value, injected: &Value) -> Result<Vec<u8>, PatchError> {
    create_patch_keeping(original, injected, &[])
}

/// [`create_patch`], where the fields at the `kept` JSON Pointers of `original` count as equal
/// to whatever `injected` has there (absent included): the patch never touches them.
pub fn create_patch_keeping(
    original: &Value,
    injected: &Value,
    kept: &[&str],
) -> Result<Vec<u8>, PatchError> {
    write_patch(original, injected, kept, None, &[]).map(|written| written.patch)
}

/// [`create_patch_keeping`] for an `original` as the API server sent it, whose Go round trip
/// through the type `root` (`v1/Pod`) `injected` started from: differences the round trip makes on
/// its own (zero values Go prints for unset fields, `null`s it drops, canonical quantities) are
/// not the injection's and get no operation, as in Istio's patch, which is taken from the round
/// trip (SPEC §b.3). The API server decodes the patched object into the same Go type, so it stores
/// the same pod either way.
pub fn create_patch_over_round_trip(
    root: &str,
    original: &Value,
    injected: &Value,
    kept: &[&str],
) -> Result<Vec<u8>, PatchError> {
    write_patch(original, injected, kept, Some(root), &[]).map(|written| written.patch)
}

/// [`create_patch_over_round_trip`], where an added value (or an item of an added list) that is
/// one of the `known` values, member for member in the same order, is copied from the JSON text
/// given with it instead of written again; one that is a known value but for items of its `env`
/// ([`KnownText::env_items`]) is copied with its own items written in. The sidecar's containers
/// and volumes of a reused render are most of a patch, and their text is the same for every pod
/// that gets them.
pub fn create_patch_over_round_trip_known(
    root: &str,
    original: &Value,
    injected: &Value,
    kept: &[&str],
    known: &[KnownText<'_>],
) -> Result<KnownPatch, PatchError> {
    write_patch(original, injected, kept, Some(root), known)
}

/// A value and its compact JSON text (as [`compact_json`] writes it).
#[derive(Debug, Clone, Copy)]
pub struct KnownText<'a> {
    /// The value.
    pub value: &'a Value,
    /// Its text.
    pub text: &'a [u8],
    /// Where `text` holds each item of the value's `env` member, when that is a list with items
    /// ([`compact_json_marking_env`]): a value equal to this one but for its `env`, whose items
    /// are this one's with some replaced and some added at the end (what post-processing and a
    /// name put in after the merge do to the sidecar's proxy container), is written as this text
    /// with the other items put in.
    pub env_items: &'a [(usize, usize)],
}

impl<'a> KnownText<'a> {
    /// `value` and its `text`, with no `env` marked.
    pub fn new(value: &'a Value, text: &'a [u8]) -> Self {
        KnownText {
            value,
            text,
            env_items: &[],
        }
    }
}

/// A value of the injected document written from a known text ([`KnownPatch::copied`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The address of the value in the injected document.
    pub value: usize,
    /// The address of the known value.
    pub known: usize,
    /// How the value's `env` differs from the known value's; nothing when the value equals the
    /// known one, member for member in the same order. Nothing else differs.
    pub env: EnvChange,
}

/// How a value's `env` differs from a known value's ([`Copied::env`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvChange {
    /// The items (by index) that are not the known value's.
    pub replaced: Vec<usize>,
    /// How many items there are past the known value's last.
    pub added: usize,
}

impl EnvChange {
    /// Whether the `env` is the known value's.
    pub fn is_none(&self) -> bool {
        self.replaced.is_empty() && self.added == 0
    }
}

/// A patch written with known texts ([`create_patch_over_round_trip_known`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPatch {
    /// The patch.
    pub patch: Vec<u8>,
    /// The values of the injected document that were found equal to a known value (member for
    /// member, in the same order), or equal but for items of their `env` replaced or added at the
    /// end ([`Copied::env`]), and written from its text.
    pub copied: Vec<Copied>,
}

/// The address of a value, to tell the values of [`KnownPatch::copied`] (never dereferenced).
pub fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

/// The compact JSON text of `value`, byte for byte what the patch writes for it.
pub fn compact_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Into memory, strings and numbers cannot fail to be written.
    let _ = json_text::write_value(&mut out, value);
    out
}

/// [`compact_json`], with the spans of the items of `value`'s `env` member in it when `value` is
/// an object whose `env` is a list with items ([`KnownText::env_items`]).
pub fn compact_json_marking_env(value: &Value) -> (Vec<u8>, Vec<(usize, usize)>) {
    let Value::Object(members) = value else {
        return (compact_json(value), Vec::new());
    };
    let mut out = Vec::new();
    let mut env_items = Vec::new();
    // Into memory, strings and numbers cannot fail to be written.
    out.push(b'{');
    for (index, (key, member)) in members.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let _ = json_text::write_str(&mut out, key);
        out.push(b':');
        match member {
            Value::Array(items) if key == "env" && !items.is_empty() => {
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    let start = out.len();
                    let _ = json_text::write_value(&mut out, item);
                    env_items.push((start, out.len()));
                }
                out.push(b']');
            }
            member => {
                let _ = json_text::write_value(&mut out, member);
            }
        }
    }
    out.push(b'}');
    (out, env_items)
}

/// How `value`'s `env` differs from `known`'s when the two are equal (member for member, in the
/// same order) but for it, and its items are `known`'s with some replaced and some added at the
/// end (no change when the two are equal): `None` when they differ in any other way.
fn env_change(known: &Value, value: &Value) -> Option<EnvChange> {
    let (Value::Object(known), Value::Object(value)) = (known, value) else {
        return None;
    };
    if known.len() != value.len() {
        return None;
    }
    let mut change = EnvChange::default();
    for ((known_key, known_member), (key, member)) in known.iter().zip(value) {
        if known_key != key {
            return None;
        }
        if key == "env"
            && let (Value::Array(before), Value::Array(after)) = (known_member, member)
            && after.len() >= before.len()
        {
            change.replaced = before
                .iter()
                .zip(after)
                .enumerate()
                .filter(|(_, (old, new))| !same(old, new))
                .map(|(index, _)| index)
                .collect();
            change.added = after.len() - before.len();
        } else if !same(known_member, member) {
            return None;
        }
    }
    Some(change)
}

fn write_patch(
    original: &Value,
    injected: &Value,
    kept: &[&str],
    round_trip_root: Option<&str>,
    known: &[KnownText<'_>],
) -> Result<KnownPatch, PatchError> {
    let known_len: usize = known.iter().map(|known| known.text.len()).sum();
    let mut writer = PatchWriter {
        out: Vec::with_capacity(1024 + known_len),
        path: String::new(),
        first: true,
        kept,
        round_trip_root,
        known: Known {
            texts: known,
            copied: Vec::new(),
            next: 0,
        },
    };
    writer.out.push(b'[');
    writer.diff(original, injected)?;
    writer.out.push(b']');
    Ok(KnownPatch {
        patch: writer.out,
        copied: writer.known.copied,
    })
}

/// Writes operations as they are found, with the JSON Pointer of the current position.
struct PatchWriter<'k> {
    out: Vec<u8>,
    path: String,
    first: bool,
    kept: &'k [&'k str],
    /// The Go type `original` was round-tripped through, when differences the round trip alone
    /// makes are to be left out.
    round_trip_root: Option<&'k str>,
    /// Values whose text is known already, and those written from it.
    known: Known<'k>,
}

/// The values whose text is known already ([`create_patch_over_round_trip_known`]), and what the
/// patch copied from them.
struct Known<'k> {
    texts: &'k [KnownText<'k>],
    /// See [`KnownPatch::copied`].
    copied: Vec<Copied>,
    /// The known value to try first: the one after the last found. A pod's new items come in
    /// the order of the known values (its render's lists, in order), so one comparison usually
    /// finds each.
    next: usize,
}

impl PatchWriter<'_> {
    fn diff(&mut self, original: &Value, injected: &Value) -> Result<(), PatchError> {
        if self.kept_here() {
            return Ok(());
        }
        match (original, injected) {
            (Value::Object(before), Value::Object(after)) => self.diff_object(before, after),
            (Value::Array(before), Value::Array(after)) => self.diff_array(before, after),
            _ if original == injected => Ok(()),
            _ if self.restated(Some(original), Some(injected)) => Ok(()),
            _ => self.operation("replace", Some(injected)),
        }
    }

    fn diff_object(
        &mut self,
        before: &Map<String, Value>,
        after: &Map<String, Value>,
    ) -> Result<(), PatchError> {
        // Keys usually come in the same order on both sides: walk them in step while they do.
        let mut in_step = 0;
        for ((key, old), (new_key, new)) in before.iter().zip(after) {
            if key != new_key {
                break;
            }
            self.at_key(key, |w| w.diff(old, new))?;
            in_step += 1;
        }
        for (key, new) in after.iter().skip(in_step) {
            self.at_key(key, |w| match before.member(key) {
                Some(old) => w.diff(old, new),
                None if w.restated(None, Some(new)) => Ok(()),
                None => w.operation("add", Some(new)),
            })?;
        }
        for key in before.keys().skip(in_step) {
            if !after.has_member(key) {
                self.at_key(key, |w| {
                    if w.kept_here() || w.restated(before.member(key), None) {
                        Ok(())
                    } else {
                        w.operation("remove", None)
                    }
                })?;
            }
        }
        Ok(())
    }

    fn diff_array(&mut self, before: &[Value], after: &[Value]) -> Result<(), PatchError> {
        let head = before
            .iter()
            .zip(after)
            .take_while(|(old, new)| same(old, new))
            .count();
        let (old_rest, new_rest) = (&before[head..], &after[head..]);
        let tail = old_rest
            .iter()
            .rev()
            .zip(new_rest.iter().rev())
            .take(old_rest.len().min(new_rest.len()))
            .take_while(|(old, new)| same(old, new))
            .count();
        let old_middle = &old_rest[..old_rest.len() - tail];
        let new_middle = &new_rest[..new_rest.len() - tail];
        let paired = old_middle.len().min(new_middle.len());
        for (offset, (old, new)) in old_middle.iter().zip(new_middle).enumerate() {
            self.at_index(head + offset, |w| w.diff(old, new))?;
        }
        for (offset, new) in new_middle.iter().enumerate().skip(paired) {
            self.at_index(head + offset, |w| w.operation("add", Some(new)))?;
        }
        for offset in (paired..old_middle.len()).rev() {
            self.at_index(head + offset, |w| w.operation("remove", None))?;
        }
        Ok(())
    }

    /// Whether `before` → `after` at the current position is only what the Go round trip of the
    /// original does there (see [`create_patch_over_round_trip`]). Only differences that can be of
    /// that kind are looked up: zero-like values appearing or disappearing, `null` or a scalar
    /// rewritten.
    fn restated(&self, before: Option<&Value>, after: Option<&Value>) -> bool {
        let Some(root) = self.round_trip_root else {
            return false;
        };
        let candidate = match (before, after) {
            (None, Some(value)) | (Some(value), None) => zero_like(value),
            (Some(Value::Null), Some(_)) => true,
            (Some(old), Some(new)) => is_scalar(old) && is_scalar(new),
            (None, None) => false,
        };
        candidate
            && crate::normalize::normalized_at(root, &self.path, before)
                .is_some_and(|printed| printed.as_ref() == after)
    }

    /// Whether the current position is one the patch must leave alone.
    fn kept_here(&self) -> bool {
        self.kept.contains(&self.path.as_str())
    }

    /// Runs `write` with `key` appended to the pointer (escaped: `~` as `~0`, `/` as `~1`).
    fn at_key(
        &mut self,
        key: &str,
        write: impl FnOnce(&mut Self) -> Result<(), PatchError>,
    ) -> Result<(), PatchError> {
        let mark = self.path.len();
        self.path.push('/');
        if key.contains(['~', '/']) {
            for c in key.chars() {
                match c {
                    '~' => self.path.push_str("~0"),
                    '/' => self.path.push_str("~1"),
                    c => self.path.push(c),
                }
            }
        } else {
            self.path.push_str(key);
        }
        let result = write(self);
        self.path.truncate(mark);
        result
    }

    /// Runs `write` with a list index appended to the pointer.
    fn at_index(
        &mut self,
        index: usize,
        write: impl FnOnce(&mut Self) -> Result<(), PatchError>,
    ) -> Result<(), PatchError> {
        let mark = self.path.len();
        self.path.push('/');
        push_decimal(&mut self.path, index);
        let result = write(self);
        self.path.truncate(mark);
        result
    }

    fn operation(&mut self, op: &str, value: Option<&Value>) -> Result<(), PatchError> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        let known = &mut self.known;
        let mut write = |out: &mut Vec<u8>, path: &str| -> serde_json::Result<()> {
            out.extend_from_slice(br#"{"op":""#);
            out.extend_from_slice(op.as_bytes());
            out.extend_from_slice(br#"","path":"#);
            json_text::write_str(out, path)?;
            if let Some(value) = value {
                out.extend_from_slice(br#","value":"#);
                known.write_value(out, value)?;
            }
            out.push(b'}');
            Ok(())
        };
        write(&mut self.out, &self.path).map_err(|e| PatchError(e.to_string()))
    }
}

/// Appends `number` in decimal (a list index in a pointer, without a `String` of its own).
fn push_decimal(out: &mut String, number: usize) {
    if number >= 10 {
        push_decimal(out, number / 10);
    }
    // A digit: `number % 10` is below 10.
    out.push(char::from(b'0' + (number % 10) as u8));
}

impl Known<'_> {
    /// Writes `value`, copying the text of a known value when `value` or an item of it (when it
    /// is a list) is one.
    fn write_value(&mut self, out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
        if self.texts.is_empty() {
            return json_text::write_value(out, value);
        }
        match value {
            Value::Array(items) => {
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    self.write_object(out, item)?;
                }
                out.push(b']');
                Ok(())
            }
            value => self.write_object(out, value),
        }
    }

    /// Writes `value`, as the text of the known value it is, if any, or of the known value it is
    /// but for items of its `env` (and records that it was).
    fn write_object(&mut self, out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
        if !value.is_object() {
            return json_text::write_value(out, value);
        }
        // One pass over each known value tells both whether it is equal and whether it differs
        // only in its `env`. Equal known values have equal texts: which one is found first does
        // not change what is written.
        let count = self.texts.len();
        let matched = (0..count)
            .map(|offset| (self.next + offset) % count)
            .find_map(|index| {
                let candidate = &self.texts[index];
                let change = if candidate.env_items.is_empty() {
                    same(candidate.value, value).then(EnvChange::default)
                } else {
                    env_change(candidate.value, value)
                };
                change.map(|change| (index, change))
            });
        let Some((index, env)) = matched else {
            return json_text::write_value(out, value);
        };
        self.next = index + 1;
        let candidate = &self.texts[index];
        if env.is_none() {
            out.extend_from_slice(candidate.text);
        } else {
            #[cfg(debug_assertions)]
            let start = out.len();
            write_spliced(out, value, candidate, &env)?;
            #[cfg(debug_assertions)]
            assert_eq!(
                out[start..],
                compact_json(value)[..],
                "a known text with the value's own env items differs from the value's text"
            );
        }
        self.copied.push(Copied {
            value: address(value),
            known: address(candidate.value),
            env,
        });
        Ok(())
    }
}

/// Writes `value`, which is `known`'s value but for the items of its `env` that `change` tells:
/// `known`'s text, with those items written in place of (or after) its own.
fn write_spliced(
    out: &mut Vec<u8>,
    value: &Value,
    known: &KnownText<'_>,
    change: &EnvChange,
) -> serde_json::Result<()> {
    let (Some(&(first, _)), Some(&(_, last))) = (known.env_items.first(), known.env_items.last()) else {
        return json_text::write_value(out, value);
    };
    let env = value
        .member("env")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    out.extend_from_slice(&known.text[..first]);
    for (index, item) in env.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match known.env_items.get(index) {
            Some(&(start, end)) if !change.replaced.contains(&index) => {
                out.extend_from_slice(&known.text[start..end]);
            }
            _ => json_text::write_value(out, item)?,
        }
    }
    out.extend_from_slice(&known.text[last..]);
    Ok(())
}

/// Whether `value` could be a zero value Go prints (or drops): `null`, `false`, `0`, `""`, `"0"`,
/// `[]`, or an object of such values.
fn zero_like(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty() || text == "0",
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.values().all(zero_like),
        Value::Bool(true) => false,
    }
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Appends `text` as a JSON string, exactly as the patch writes strings.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    // Into memory, a string cannot fail to be written.
    let _ = json_text::write_str(out, text);
}

/// Appends `value` as compact JSON, exactly as the patch writes values.
pub(crate) fn write_json_value(out: &mut Vec<u8>, value: &Value) {
    // Into memory, strings and numbers cannot fail to be written.
    let _ = json_text::write_value(out, value);
}

/// Equality that also requires the same key order: cheap (no hashing) and never wrong when it
/// says equal; when it says different the caller just diffs deeper.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        _ => a == b,
    }
}

/// Applies a serialized patch to a copy of `document` (used by `inject` for manifests and by tests).
pub fn apply_patch(document: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let patch: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| PatchError(e.to_string()))?;
    let mut patched = document.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| PatchError(e.to_string()))?;
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn patch_turns_original_into_injected_and_keeps_unknown_fields() {
        let original = json!({
            "metadata": {"name": "p", "annotations": {"a": "1"}, "x-future-field": {"keep": true}},
            "spec": {"containers": [{"name": "app", "image": "nginx", "futureField": [1, 2]}], "newKnob": "on"}
        });
        let mut injected = original.clone();
        injected["metadata"]["annotations"]["sidecar.istio.io/status"] = json!("{}");
        injected["spec"]["initContainers"] = json!([{"name": "istio-init"}]);
        injected["spec"]["containers"] =
            json!([{"name": "app", "image": "nginx", "futureField": [1, 2]}, {"name": "istio-proxy"}]);
        let patch = create_patch(&original, &injected).expect("creates");
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);
        let text = String::from_utf8(patch).expect("utf-8");
        assert!(
            !text.contains("futureField") && !text.contains("x-future-field") && !text.contains("newKnob"),
            "{text}"
        );
    }

    #[test]
    fn a_container_inserted_first_is_one_add() {
        let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let injected =
            json!({"spec": {"containers": [{"name": "istio-proxy"}, {"name": "a"}, {"name": "b"}]}});
        let patch = create_patch(&original, &injected).expect("creates");
        assert_eq!(
            String::from_utf8(patch.clone()).expect("utf-8"),
            r#"[{"op":"add","path":"/spec/containers/0","value":{"name":"istio-proxy"}}]"#
        );
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);
    }

    #[test]
    fn lists_shrink_from_the_end_and_keys_are_escaped() {
        let original = json!({"a/b~c": [1, 2, 3, 4, 5], "gone": true, "order": {"x": 1, "y": 2}});
        let injected = json!({"a/b~c": [1, 9, 5], "order": {"y": 2, "x": 3}, "new": null});
        let patch = create_patch(&original, &injected).expect("creates");
        let text = String::from_utf8(patch.clone()).expect("utf-8");
        assert!(text.contains(r#""path":"/a~1b~0c/3""#), "{text}");
        assert_eq!(apply_patch(&original, &patch).expect("applies"), injected);

        let long: Vec<u32> = (0..120).collect();
        let mut changed = long.clone();
        changed[0] = 1000;
        changed[10] = 1010;
        changed[109] = 1109;
        let patch = create_patch(&json!({"l": long}), &json!({"l": changed})).expect("creates");
        let text = String::from_utf8(patch).expect("utf-8");
        for index in ["0", "10", "109"] {
            assert!(text.contains(&format!(r#""path":"/l/{index}""#)), "{text}");
        }
    }

    #[test]
    fn kept_fields_are_never_touched() {
        let received = json!({"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}]}});
        let injected = json!({"metadata": {"name": "p", "labels": {"a": "b"}}});
        let patch =
            create_patch_keeping(&received, &injected, &["/metadata/managedFields"]).expect("creates");
        assert_eq!(
            String::from_utf8(patch).expect("utf-8"),
            r#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#
        );
    }

    #[test]
    fn non_object_roots_are_replaced() {
        let patch = create_patch(&json!([1]), &json!("x")).expect("creates");
        assert_eq!(patch, br#"[{"op":"replace","path":"","value":"x"}]"#);
    }

    #[test]
    fn an_added_value_that_is_known_is_copied_from_its_text_and_any_other_is_written() {
        let received = json!({"spec": {"containers": [{"name": "app"}]}});
        let proxy = json!({"name": "istio-proxy", "args": ["proxy", "sidecar"]});
        let volume = json!({"name": "istio-envoy", "emptyDir": {}});
        let injected = json!({"spec": {
            "containers": [{"name": "app"}, proxy],
            "initContainers": [{"name": "istio-init"}, proxy],
            "volumes": [volume, {"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}],
        }});
        let plain = create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates");
        let proxy_text = compact_json(&proxy);
        let volume_text = compact_json(&volume);
        let known = [
            KnownText::new(&proxy, &proxy_text),
            KnownText::new(&volume, &volume_text),
        ];
        let written =
            create_patch_over_round_trip_known("v1/Pod", &received, &injected, &[], &known).expect("creates");
        assert_eq!(
            String::from_utf8(written.patch).unwrap(),
            String::from_utf8(plain).unwrap()
        );
        let copied = |value: &Value, known: &Value| Copied {
            value: address(value),
            known: address(known),
            env: EnvChange::default(),
        };
        assert_eq!(
            written.copied,
            [
                copied(&injected["spec"]["containers"][1], &proxy),
                copied(&injected["spec"]["initContainers"][1], &proxy),
                copied(&injected["spec"]["volumes"][0], &volume),
            ],
            "each value written as a known text is told, with the known value it equals"
        );

        // The text is what gets copied (a marker shows it), only for values equal to the known one
        // member for member: the changed volume and the reordered proxy are written.
        let reordered = json!({"args": ["proxy", "sidecar"], "name": "istio-proxy"});
        let injected = json!({"spec": {
            "containers": [{"name": "app"}, proxy],
            "initContainers": [reordered],
            "volumes": [volume, {"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}],
        }});
        let known = [
            KnownText::new(&proxy, b"\"PROXY\""),
            KnownText::new(&volume, b"\"VOLUME\""),
        ];
        let text = String::from_utf8(
            create_patch_over_round_trip_known("v1/Pod", &received, &injected, &[], &known)
                .expect("creates")
                .patch,
        )
        .unwrap();
        assert_eq!(
            text,
            concat!(
                r#"[{"op":"add","path":"/spec/containers/1","value":"PROXY"},"#,
                r#"{"op":"add","path":"/spec/initContainers","value":[{"args":["proxy","sidecar"],"name":"istio-proxy"}]},"#,
                r#"{"op":"add","path":"/spec/volumes","value":["VOLUME",{"name":"istio-envoy","emptyDir":{"medium":"Memory"}}]}]"#
            )
        );
    }

    #[test]
    fn a_known_value_with_env_items_replaced_or_added_is_copied_with_them_put_in() {
        let received = json!({"spec": {"containers": [{"name": "app"}]}});
        let proxy = json!({"name": "istio-proxy", "env": [
            {"name": "A", "value": "1"}, {"name": "W", "value": "stand-in"}, {"name": "Z"}
        ], "image": "p"});
        let (text, env_items) = compact_json_marking_env(&proxy);
        assert_eq!(text, compact_json(&proxy));
        assert_eq!(
            &text[env_items[0].0..env_items[0].1],
            br#"{"name":"A","value":"1"}"#
        );
        let known = [KnownText {
            value: &proxy,
            text: &text,
            env_items: &env_items,
        }];
        let mut probed = proxy.clone();
        probed["env"][1]["value"] = json!("web-0");
        probed["env"]
            .as_array_mut()
            .unwrap()
            .extend([json!({"name": "B", "value": "<2>"}), json!({"name": "C"})]);
        let injected = json!({"spec": {"containers": [{"name": "app"}], "initContainers": [probed]}});
        let written =
            create_patch_over_round_trip_known("v1/Pod", &received, &injected, &[], &known).expect("creates");
        let plain = create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates");
        assert_eq!(
            String::from_utf8(written.patch).unwrap(),
            String::from_utf8(plain).unwrap()
        );
        assert_eq!(
            written.copied,
            [Copied {
                value: address(&injected["spec"]["initContainers"][0]),
                known: address(&proxy),
                env: EnvChange {
                    replaced: vec![1],
                    added: 2
                },
            }]
        );

        // Anything else that differs, or an env with fewer items, is written.
        for changed in [
            json!({"name": "istio-proxy", "env": [{"name": "A", "value": "1"}], "image": "p"}),
            json!({"name": "istio-proxy", "env": [
                {"name": "A", "value": "1"}, {"name": "W", "value": "stand-in"}, {"name": "Z"}, {"name": "B"}
            ], "image": "q"}),
            json!({"name": "istio-proxy", "image": "p", "env": [
                {"name": "A", "value": "1"}, {"name": "W", "value": "stand-in"}, {"name": "Z"}, {"name": "B"}
            ]}),
        ] {
            let injected = json!({"spec": {"containers": [{"name": "app"}], "initContainers": [changed]}});
            let written = create_patch_over_round_trip_known("v1/Pod", &received, &injected, &[], &known)
                .expect("creates");
            assert!(written.copied.is_empty(), "{changed}");
        }
        assert_eq!(
            env_change(&proxy, &proxy),
            Some(EnvChange::default()),
            "an equal value has no change"
        );
        let no_env = json!({"name": "istio-proxy", "env": []});
        assert!(
            compact_json_marking_env(&no_env).1.is_empty(),
            "an empty env is not marked"
        );
    }

    #[test]
    fn identical_documents_give_an_empty_patch() {
        let pod = json!({"spec": {"containers": []}});
        assert_eq!(create_patch(&pod, &pod).expect("creates"), b"[]");
    }

    #[test]
    fn bad_patches_are_errors() {
        assert!(apply_patch(&json!({}), b"not json").is_err());
        assert!(apply_patch(&json!({}), br#"[{"op":"remove","path":"/missing"}]"#).is_err());
    }

    #[test]
    fn what_the_go_round_trip_does_alone_gets_no_operation() {
        // As the API server sends a pod: `creationTimestamp: null`, no `status`, a container
        // without `resources`, a quantity written non-canonically.
        let received = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "creationTimestamp": null},
            "spec": {"containers": [
                {"name": "app", "image": "nginx"},
                {"name": "db", "image": "pg", "resources": {"requests": {"cpu": "0.1"}}}
            ]}
        });
        let injected = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"sidecar.istio.io/status": "{}"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx", "resources": {}},
                {"name": "db", "image": "pg", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "istio-proxy", "image": "proxyv2", "resources": {}}
            ]},
            "status": {}
        });
        let patch = create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates");
        let text = String::from_utf8(patch.clone()).expect("utf-8");
        assert_eq!(
            text,
            r#"[{"op":"add","path":"/metadata/annotations","value":{"sidecar.istio.io/status":"{}"}},{"op":"add","path":"/spec/containers/2","value":{"name":"istio-proxy","image":"proxyv2","resources":{}}}]"#
        );
        // Decoded as the API server decodes it, the patched pod is the injected one.
        let decoded = |pod: &Value| crate::normalize::normalize_preserving("v1/Pod", pod).expect("decodes");
        assert_eq!(
            decoded(&apply_patch(&received, &patch).expect("applies")),
            decoded(&injected)
        );

        // The plain diff restates all of it.
        let plain = String::from_utf8(create_patch(&received, &injected).expect("creates")).expect("utf-8");
        for restated in [
            "/status",
            "/spec/containers/0/resources",
            "/metadata/creationTimestamp",
            "/cpu",
        ] {
            assert!(plain.contains(restated), "{restated} in {plain}");
        }
    }

    #[test]
    fn real_changes_near_zero_values_keep_their_operations() {
        let received = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "a"}],
            "hostNetwork": true, "nodeName": "n1"}});
        let injected = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "a",
            "resources": {"limits": {"cpu": "1"}}}], "hostNetwork": false, "futureKnob": {}}});
        let text = String::from_utf8(
            create_patch_over_round_trip("v1/Pod", &received, &injected, &[]).expect("creates"),
        )
        .expect("utf-8");
        for kept in [
            r#"{"op":"add","path":"/spec/containers/0/resources","value":{"limits":{"cpu":"1"}}}"#,
            r#"{"op":"replace","path":"/spec/hostNetwork","value":false}"#,
            r#"{"op":"remove","path":"/spec/nodeName"}"#,
            r#"{"op":"add","path":"/spec/futureKnob","value":{}}"#,
        ] {
            assert!(text.contains(kept), "{kept} missing from {text}");
        }
    }
}
