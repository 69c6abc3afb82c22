//! The outcome cache's key: the inputs an outcome depends on, as bytes, with the two parts the
//! API server makes differ between the otherwise identical pods of one scale-up taken out.
//!
//! - `metadata.managedFields`: the API server stamps each entry with the second it was written,
//!   so the pods of a burst differ there from one second to the next. They are left out of the
//!   key when the injector says its outcomes ignore them ([`ServeOptions::ignore_managed_fields`];
//!   Istio's injector drops them before injecting and keeps them out of its patch).
//! - The ServiceAccount token volume: ServiceAccount admission, which runs before any webhook,
//!   mounts the token as a projected volume named `kube-api-access-` and five random characters,
//!   in the pod's volumes and every container's volume mounts. When the name appears nowhere
//!   else in the pod, it is replaced by [`PLACEHOLDER`] in the key and in the stored outcome,
//!   and the pod's own name is put back on a hit. That an outcome treats the name as a label it
//!   only copies is not assumed: an entry serves other names only when the injector said so
//!   ([`Admission::any_token_name`]), else only the name it was computed for (see the
//!   cache's `Entry`).
//!
//! [`ServeOptions::ignore_managed_fields`]: crate::ServeOptions::ignore_managed_fields
//! [`Admission::any_token_name`]: crate::Admission::any_token_name

use std::hash::BuildHasher;

use injector_core::kube_names::{RANDOM_SUFFIX_ALPHABET, TOKEN_VOLUME_PREFIX, TOKEN_VOLUME_SUFFIX_LEN};
use memchr::memmem;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::injector::{AdmissionInput, AdmissionOutcome};

/// The prefix of the token volume's name.
const TOKEN_PREFIX: &[u8] = TOKEN_VOLUME_PREFIX.as_bytes();

/// The length of a token volume's name.
pub(crate) const TOKEN_NAME_LEN: usize = TOKEN_PREFIX.len() + TOKEN_VOLUME_SUFFIX_LEN;

/// Stands for the token volume's name in keys and stored outcomes. Its suffix is outside
/// [`RANDOM_SUFFIX_ALPHABET`], so no generated name is ever the placeholder.
pub(crate) const PLACEHOLDER: TokenName = TokenName(*b"kube-api-access-00000");

/// The name of a pod's ServiceAccount token volume, e.g. `kube-api-access-7xk2p`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenName([u8; TOKEN_NAME_LEN]);

impl TokenName {
    /// The name's bytes (ASCII).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// `name` if it is a generated token volume name: the prefix, then five characters of
    /// [`RANDOM_SUFFIX_ALPHABET`].
    fn parse(name: &str) -> Option<TokenName> {
        let bytes: [u8; TOKEN_NAME_LEN] = name.as_bytes().try_into().ok()?;
        let (prefix, suffix) = bytes.split_at(TOKEN_PREFIX.len());
        (prefix == TOKEN_PREFIX && suffix.iter().all(|c| RANDOM_SUFFIX_ALPHABET.contains(c)))
            .then_some(TokenName(bytes))
    }
}

/// The inputs an outcome depends on, as bytes, with their hash; and the token volume name
/// that [`PLACEHOLDER`] stands for in them, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheKey {
    pub(crate) hash: u64,
    pub(crate) bytes: Vec<u8>,
    pub(crate) token: Option<TokenName>,
}

impl CacheKey {
    /// The key of an admission: how it was made, the operation, namespace, path and the
    /// object's JSON, each length prefixed so that no two different inputs share bytes.
    pub fn of(
        input: &AdmissionInput,
        hasher: &std::hash::RandomState,
        ignore_managed_fields: bool,
    ) -> Option<CacheKey> {
        let mut object = if ignore_managed_fields {
            serde_json::to_vec(&WithoutManagedFields(&input.object)).ok()?
        } else {
            serde_json::to_vec(&input.object).ok()?
        };
        // Taken out only where ServiceAccount admission put it; a pod that already holds the
        // placeholder keeps its exact bytes.
        let token = token_volume_name(&input.object)
            .filter(|_| !contains(&object, PLACEHOLDER.as_bytes()))
            .and_then(|token| {
                let at = occurrences(&object, &token);
                (at.len() == 1 + mounts_of(&input.object, &token)).then_some((token, at))
            })
            .map(|(token, at)| {
                write_at(&mut object, &at, &PLACEHOLDER);
                token
            });
        let how = [u8::from(token.is_some()) | (u8::from(ignore_managed_fields) << 1)];
        let mut bytes = Vec::with_capacity(object.len() + input.namespace.len() + input.path.len() + 64);
        for part in [
            &how[..],
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
            token,
        })
    }
}

/// The name of the pod's one ServiceAccount token volume: a volume whose name is generated
/// (`kube-api-access-` and five random characters) and which projects a ServiceAccount token.
/// `None` when there is none, or more than one such name.
fn token_volume_name(pod: &Value) -> Option<TokenName> {
    let volumes = pod.get("spec")?.get("volumes")?.as_array()?;
    let mut found = None;
    for volume in volumes {
        let Some(name) = volume
            .get("name")
            .and_then(Value::as_str)
            .and_then(TokenName::parse)
        else {
            continue;
        };
        let projects_token = volume
            .get("projected")
            .and_then(|projected| projected.get("sources"))
            .and_then(Value::as_array)
            .is_some_and(|sources| {
                sources
                    .iter()
                    .any(|source| source.get("serviceAccountToken").is_some())
            });
        if !projects_token || found.is_some() {
            return None;
        }
        found = Some(name);
    }
    found
}

/// How many volume mounts of the pod's containers (init and ephemeral ones included) mount the
/// volume `name`.
fn mounts_of(pod: &Value, name: &TokenName) -> usize {
    let Some(spec) = pod.get("spec") else { return 0 };
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten()
        .filter_map(|container| container.get("volumeMounts").and_then(Value::as_array))
        .flatten()
        .filter(|mount| mount.get("name").and_then(Value::as_str).map(str::as_bytes) == Some(name.as_bytes()))
        .count()
}

/// Whether `needle` occurs in `haystack`.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memmem::find(haystack, needle).is_some()
}

/// Where `name` starts in `bytes`.
fn occurrences(bytes: &[u8], name: &TokenName) -> Vec<usize> {
    memmem::find_iter(bytes, name.as_bytes()).collect()
}

/// Writes `name` at each of `starts` (where a name of the same length stands).
fn write_at(bytes: &mut [u8], starts: &[usize], name: &TokenName) {
    for &start in starts {
        if let Some(slot) = bytes.get_mut(start..start + TOKEN_NAME_LEN) {
            slot.copy_from_slice(name.as_bytes());
        }
    }
}

/// Replaces every occurrence of `from` in `bytes` by `to` (names of the same length, so in
/// place).
pub(crate) fn rename(bytes: &mut [u8], from: &TokenName, to: &TokenName) {
    let at = occurrences(bytes, from);
    write_at(bytes, &at, to);
}

/// [`rename`] of a text.
fn rename_text(text: &mut String, from: &TokenName, to: &TokenName) {
    // Both names are ASCII: a plain replace, only when there is something to replace.
    if contains(text.as_bytes(), from.as_bytes()) {
        let (from, to) = (
            std::str::from_utf8(from.as_bytes()),
            std::str::from_utf8(to.as_bytes()),
        );
        if let (Ok(from), Ok(to)) = (from, to) {
            *text = text.replace(from, to);
        }
    }
}

/// [`rename`] of every text of an outcome: the patch, the reason, the denial.
pub(crate) fn rename_outcome(outcome: &mut AdmissionOutcome, from: &TokenName, to: &TokenName) {
    match outcome {
        AdmissionOutcome::Skipped { reason, warnings } => {
            rename_text(reason, from, to);
            warnings.iter_mut().for_each(|w| rename_text(w, from, to));
        }
        AdmissionOutcome::Patched {
            patch,
            reason,
            warnings,
        } => {
            rename(patch, from, to);
            rename_text(reason, from, to);
            warnings.iter_mut().for_each(|w| rename_text(w, from, to));
        }
        AdmissionOutcome::Denied { message } => rename_text(message, from, to),
    }
}

/// Whether any text of an outcome holds `name`.
pub(crate) fn outcome_mentions(outcome: &AdmissionOutcome, name: &TokenName) -> bool {
    let name = name.as_bytes();
    match outcome {
        AdmissionOutcome::Skipped { reason, warnings } => {
            contains(reason.as_bytes(), name) || warnings.iter().any(|w| contains(w.as_bytes(), name))
        }
        AdmissionOutcome::Patched {
            patch,
            reason,
            warnings,
        } => {
            contains(patch, name)
                || contains(reason.as_bytes(), name)
                || warnings.iter().any(|w| contains(w.as_bytes(), name))
        }
        AdmissionOutcome::Denied { message } => contains(message.as_bytes(), name),
    }
}

/// An object serialized as it is, but for `metadata.managedFields`.
struct WithoutManagedFields<'a>(&'a Value);

impl Serialize for WithoutManagedFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(object) = self.0.as_object() else {
            return self.0.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(object.len()))?;
        for (key, value) in object {
            match value.as_object().filter(|_| key == "metadata") {
                Some(metadata) => map.serialize_entry(key, &Skipping(metadata, "managedFields"))?,
                None => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// A JSON object serialized without one of its members.
struct Skipping<'a>(&'a serde_json::Map<String, Value>, &'static str);

impl Serialize for Skipping<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Skipping(object, skipped) = *self;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in object.iter().filter(|(key, _)| key.as_str() != skipped) {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn input(object: Value) -> AdmissionInput {
        super::super::tests::input("shop", "/inject", object)
    }

    /// A pod as ServiceAccount admission leaves it: the token volume and its mount.
    fn pod_with_token(token: &str, written_at: &str) -> Value {
        json!({
            "metadata": {"generateName": "web-5d8f-", "managedFields": [{"manager": "kube-controller-manager", "time": written_at}]},
            "spec": {
                "containers": [{"name": "web", "volumeMounts": [{"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
                "volumes": [{"name": token, "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]
            }
        })
    }

    fn key(object: Value, ignore_managed_fields: bool) -> CacheKey {
        let hasher = std::hash::RandomState::new();
        CacheKey::of(&input(object), &hasher, ignore_managed_fields).expect("a key")
    }

    #[test]
    fn replicas_with_other_token_names_and_write_times_share_a_key() {
        let first = key(
            pod_with_token("kube-api-access-7xk2p", "2026-12-04T10:00:00Z"),
            true,
        );
        let second = key(
            pod_with_token("kube-api-access-b4zqq", "2026-12-04T10:00:01Z"),
            true,
        );
        assert_eq!(first.bytes, second.bytes);
        assert_eq!(first.token, TokenName::parse("kube-api-access-7xk2p"));
        assert_eq!(second.token, TokenName::parse("kube-api-access-b4zqq"));
        let text = String::from_utf8_lossy(&first.bytes);
        assert_eq!(text.matches("kube-api-access-00000").count(), 2, "{text}");
        assert!(!text.contains("managedFields"), "{text}");
    }

    #[test]
    fn managed_fields_stay_in_the_key_unless_the_injector_ignores_them() {
        let first = key(
            pod_with_token("kube-api-access-7xk2p", "2026-12-04T10:00:00Z"),
            false,
        );
        let second = key(
            pod_with_token("kube-api-access-7xk2p", "2026-12-04T10:00:01Z"),
            false,
        );
        assert_ne!(first.bytes, second.bytes);
        // Nor is a key made one way ever the key made the other way.
        let ignoring = key(
            pod_with_token("kube-api-access-7xk2p", "2026-12-04T10:00:00Z"),
            true,
        );
        assert_ne!(first.bytes, ignoring.bytes);
    }

    #[test]
    fn only_one_generated_name_that_projects_a_token_is_taken_out() {
        let not_generated = [
            "kube-api-access-abcde",
            "kube-api-access-7xk2",
            "kube-api-access-7xk2pp",
            "api-access-7xk2p",
        ];
        for name in not_generated {
            assert_eq!(key(pod_with_token(name, "t"), true).token, None, "{name}");
        }
        let mut no_token = pod_with_token("kube-api-access-7xk2p", "t");
        no_token["spec"]["volumes"][0]["projected"]["sources"] =
            json!([{"configMap": {"name": "kube-root-ca.crt"}}]);
        assert_eq!(key(no_token, true).token, None);
        let mut two = pod_with_token("kube-api-access-7xk2p", "t");
        two["spec"]["volumes"].as_array_mut().expect("volumes").push(
            json!({"name": "kube-api-access-b4zqq", "projected": {"sources": [{"serviceAccountToken": {}}]}}),
        );
        assert_eq!(key(two, true).token, None);
    }

    #[test]
    fn a_name_found_anywhere_else_in_the_pod_is_kept() {
        let mut labelled = pod_with_token("kube-api-access-7xk2p", "t");
        labelled["metadata"]["labels"] = json!({"volume": "kube-api-access-7xk2p"});
        assert_eq!(key(labelled, true).token, None);
        let mut in_env = pod_with_token("kube-api-access-7xk2p", "t");
        in_env["spec"]["containers"][0]["env"] = json!([{"name": "V", "value": "/kube-api-access-7xk2p/x"}]);
        assert_eq!(key(in_env, true).token, None);
        // Mounted by init containers too: still only where admission put it.
        let mut init = pod_with_token("kube-api-access-7xk2p", "t");
        init["spec"]["initContainers"] =
            json!([{"name": "init", "volumeMounts": [{"name": "kube-api-access-7xk2p"}]}]);
        assert!(key(init, true).token.is_some());
    }

    #[test]
    fn a_pod_that_holds_the_placeholder_keeps_its_exact_key() {
        let mut pod = pod_with_token("kube-api-access-7xk2p", "t");
        pod["metadata"]["annotations"] = json!({"note": "kube-api-access-00000"});
        assert_eq!(key(pod, true).token, None);
        // A volume named like the placeholder is never taken for a pod whose name was taken out.
        let taken_out = key(pod_with_token("kube-api-access-7xk2p", "t"), true);
        let literal = key(pod_with_token("kube-api-access-00000", "t"), true);
        assert_eq!(literal.token, None);
        assert_ne!(taken_out.bytes, literal.bytes);
    }

    #[test]
    fn outcomes_are_renamed_in_every_text() {
        let (name, other) = (
            TokenName::parse("kube-api-access-7xk2p").expect("generated"),
            TokenName::parse("kube-api-access-b4zqq").expect("generated"),
        );
        let mut outcome = AdmissionOutcome::Patched {
            patch: br#"[{"op":"add","path":"/spec/volumes/0","value":{"name":"kube-api-access-7xk2p"}},{"x":"kube-api-access-7xk2p"}]"#.to_vec(),
            reason: "about kube-api-access-7xk2p".into(),
            warnings: vec!["volume kube-api-access-7xk2p".into()],
        };
        assert!(outcome_mentions(&outcome, &name));
        rename_outcome(&mut outcome, &name, &other);
        assert!(!outcome_mentions(&outcome, &name));
        let AdmissionOutcome::Patched {
            patch,
            reason,
            warnings,
        } = &outcome
        else {
            unreachable!("still a patch")
        };
        assert_eq!(
            String::from_utf8_lossy(patch)
                .matches("kube-api-access-b4zqq")
                .count(),
            2
        );
        assert_eq!(reason, "about kube-api-access-b4zqq");
        assert_eq!(warnings, &["volume kube-api-access-b4zqq"]);
        let skipped = AdmissionOutcome::Skipped {
            reason: "skipped".into(),
            warnings: vec!["about kube-api-access-7xk2p".into()],
        };
        assert!(outcome_mentions(&skipped, &name));
        let mut denied = AdmissionOutcome::Denied {
            message: "volume kube-api-access-7xk2p".into(),
        };
        rename_outcome(&mut denied, &name, &PLACEHOLDER);
        assert_eq!(
            denied,
            AdmissionOutcome::Denied {
                message: "volume kube-api-access-00000".into()
            }
        );
    }

    #[test]
    fn an_object_without_managed_fields_serializes_as_it_is() {
        let pod = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"x": [1, 2]}});
        assert_eq!(
            serde_json::to_vec(&WithoutManagedFields(&pod)).expect("serializes"),
            serde_json::to_vec(&pod).expect("serializes")
        );
        let not_an_object = json!([1]);
        assert_eq!(
            serde_json::to_vec(&WithoutManagedFields(&not_an_object)).expect("serializes"),
            b"[1]"
        );
    }
}
