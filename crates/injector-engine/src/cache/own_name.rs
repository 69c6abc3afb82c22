//! One render for all the pods that are their own owner: a StatefulSet's pods, bare pods.
//!
//! Istio names such a pod's workload after the pod (`.DeploymentMeta.Name` is the pod's name),
//! so every one of them renders with an input of its own, and the render cache, keyed by the
//! owner, could never serve one pod's render to the next. Yet Istio's templates only print that
//! name (`ISTIO_META_WORKLOAD_NAME`, `ISTIO_META_OWNER`) or test that it is not empty.
//!
//! So the render cache ([`super::RenderCache`]) renders such a pod with a [`StandIn`] for the
//! name, an unguessable word made at random for each cache, while a [`NameWatch`] is told of
//! everything the templates hand to a function or method and of every value printed that is not
//! a string ([`gotemplate::Watch`]). A render in which the stand-in only had its truth tested,
//! was printed, or went through functions that give it back unchanged or quote it
//! ([`PASS_THROUGH`]) reads no more of the name than that it is not empty: the name's text went
//! into the output verbatim wherever the stand-in's did. Such a render is kept under the
//! stand-in, and any pod of the same family whose reads match takes it with its own name put in
//! the stand-in's place ([`fill`], at the places [`holes`] finds once per kept render) *before*
//! the merge: the merge and everything after it see exactly the overlays a render with the pod's
//! own name gives. A render that looked into the stand-in is dropped, and the pod is rendered
//! with its own name.
//!
//! Putting the name in after parsing the YAML gives what parsing the text with the name would,
//! because of what [`can_stand_in`] asks of names and [`fill`] checks of each result:
//!
//! - a name is a DNS subdomain (lowercase letters, digits, `-` and `.`, starting and ending with a
//!   letter or digit), like the stand-in: no character that YAML quotes, escapes or reads as
//!   structure, so the text around it parses the same;
//! - every string that held the stand-in must read back, with the name, as the same string when
//!   written as a plain scalar (`web-0` does; `123`, `true` or `null` would not), so its type
//!   does not change whatever style the template wrote it in;
//! - keys that held the stand-in must stay distinct and short (YAML's 1024-character limit on
//!   implicit keys).
//!
//! Anything else (a failed render, a check that does not hold) falls back to rendering the pod
//! with its own name.

use std::cell::Cell;
use std::sync::Arc;

use injector_core::kube_names::TOKEN_VOLUME_PREFIX;
use serde_json::Value;

/// Functions that, given a string, give it back whole or quoted and otherwise only test whether
/// it is empty: `default`, `valueOrDefault`, `coalesce` return one of their arguments chosen by
/// emptiness; `quote` and `squote` wrap each argument (a DNS name needs no escaping).
pub const PASS_THROUGH: &[&str] = &["default", "valueOrDefault", "coalesce", "quote", "squote"];

/// Keys longer than this that hold the name are left to a real render.
const MAX_KEY_LEN: usize = 900;

/// The word that stands for a pod's name in a shared render: made at random once per injector,
/// so no pod, values or mesh config can hold it.
#[derive(Debug, Clone)]
pub struct StandIn(Arc<str>);

impl StandIn {
    /// A new random stand-in: `zz`, then 26 lowercase letters and digits from the operating
    /// system's random source; `None` when it cannot give any (nothing is then shared).
    pub fn new() -> Option<StandIn> {
        const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut random = [0u8; 26];
        getrandom::fill(&mut random).ok()?;
        let text: String = "zz"
            .chars()
            .chain(
                random
                    .iter()
                    .map(|byte| char::from(DIGITS[usize::from(*byte) % DIGITS.len()])),
            )
            .collect();
        Some(StandIn(text.into()))
    }

    /// The stand-in's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether a pod's own name may be stood in for: a DNS subdomain (at most 253 characters of
/// lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit) that
/// holds neither the stand-in nor the prefix of a token volume's name
/// ([`TOKEN_VOLUME_PREFIX`]: whether a render names one must not depend on
/// the name).
pub fn can_stand_in(name: &str, stand_in: &StandIn) -> bool {
    let bytes = name.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-' || *b == b'.')
        && !name.contains(stand_in.as_str())
        && !name.contains(TOKEN_VOLUME_PREFIX)
}

/// Watches a render with the stand-in for whether it looked into the stand-in
/// ([`gotemplate::Watch`]).
pub struct NameWatch<'a> {
    stand_in: &'a str,
    /// The template data and its `DeploymentMeta`: handing either to a function, or printing it,
    /// hands over the name.
    holders: [gotemplate::Value; 2],
    looked_into: Cell<bool>,
}

impl<'a> NameWatch<'a> {
    /// A watch over renders of `data`, whose `DeploymentMeta.Name` is `stand_in`.
    pub fn new(stand_in: &'a StandIn, data: &gotemplate::Value) -> NameWatch<'a> {
        let deployment_meta = match data {
            gotemplate::Value::Object(object) => object.field("DeploymentMeta").unwrap_or_default(),
            _ => gotemplate::Value::Missing,
        };
        NameWatch {
            stand_in: stand_in.as_str(),
            holders: [data.clone(), deployment_meta],
            looked_into: Cell::new(false),
        }
    }

    /// Whether the renders watched so far looked into the stand-in.
    pub fn looked_into(&self) -> bool {
        self.looked_into.get()
    }

    /// Whether `value` is or holds the stand-in, or leads to it.
    ///
    /// Lists and maps are not looked into: the data's hold no stand-in (it is unguessable), so one
    /// that does was made by a function that was handed the stand-in, and was told already.
    fn reaches_name(&self, value: &gotemplate::Value) -> bool {
        match value {
            gotemplate::Value::String(text) => text.contains(self.stand_in),
            gotemplate::Value::Object(object) => self
                .holders
                .iter()
                .any(|holder| matches!(holder, gotemplate::Value::Object(h) if Arc::ptr_eq(h, object))),
            _ => false,
        }
    }
}

impl gotemplate::Watch for NameWatch<'_> {
    fn call(&self, name: &str, args: &[gotemplate::Value]) {
        if !PASS_THROUGH.contains(&name) && args.iter().any(|arg| self.reaches_name(arg)) {
            self.looked_into.set(true);
        }
    }

    fn method(&self, receiver: &gotemplate::Value, _name: &str, args: &[gotemplate::Value]) {
        if self.reaches_name(receiver) || args.iter().any(|arg| self.reaches_name(arg)) {
            self.looked_into.set(true);
        }
    }

    fn print(&self, value: &gotemplate::Value) {
        if self.reaches_name(value) {
            self.looked_into.set(true);
        }
    }
}

/// `overlay`, rendered with `stand_in` for a pod's name, with `name` in its place: `None` when a
/// string that held the stand-in would not read back as the same string with the name, or keys
/// that held it would collide or grow too long (see the module documentation). `name` is one
/// [`can_stand_in`] accepts.
#[cfg(test)]
fn put_name(overlay: &Value, stand_in: &StandIn, name: &str) -> Option<Value> {
    fill(overlay, &holes(overlay, stand_in), stand_in, name)
}

/// One step from a value to one inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object's member.
    Key(String),
    /// An array's item.
    Index(usize),
}

/// Where a render holds the stand-in: a string value, or a key (the path's last step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hole {
    /// From the overlay's root to the string, or to the member whose key holds the stand-in.
    pub path: Vec<Step>,
    /// Whether the key, not the value, holds it.
    pub in_key: bool,
}

/// Every place `overlay` holds the stand-in: the strings first, in document order, then the keys,
/// deepest first (so that renaming one never moves the path to another).
pub fn holes(overlay: &Value, stand_in: &StandIn) -> Vec<Hole> {
    fn walk(value: &Value, stand_in: &str, path: &mut Vec<Step>, found: &mut Vec<Hole>) {
        match value {
            Value::String(text) if text.contains(stand_in) => found.push(Hole {
                path: path.clone(),
                in_key: false,
            }),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(Step::Index(index));
                    walk(item, stand_in, path, found);
                    path.pop();
                }
            }
            Value::Object(members) => {
                for (key, member) in members {
                    path.push(Step::Key(key.clone()));
                    if key.contains(stand_in) {
                        found.push(Hole {
                            path: path.clone(),
                            in_key: true,
                        });
                    }
                    walk(member, stand_in, path, found);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(overlay, stand_in.as_str(), &mut Vec::new(), &mut found);
    // Stable: strings keep document order; keys go deepest first.
    found.sort_by_key(|hole| (hole.in_key, std::cmp::Reverse(hole.path.len())));
    found
}

/// A copy of `overlay` with `name` for the stand-in at each of its `holes` ([`holes`]), or `None`
/// as [`put_name`] says.
pub fn fill(overlay: &Value, holes: &[Hole], stand_in: &StandIn, name: &str) -> Option<Value> {
    let stand_in = stand_in.as_str();
    let mut named = overlay.clone();
    for hole in holes {
        if hole.in_key {
            let (last, parent) = hole.path.split_last()?;
            let Step::Key(key) = last else { return None };
            let members = at(&mut named, parent)?.as_object_mut()?;
            let renamed = named_string(key, stand_in, name)?;
            if renamed.len() > MAX_KEY_LEN || members.contains_key(&renamed) {
                // Two keys made one by the name: the real render's text would repeat a key.
                return None;
            }
            let index = members.keys().position(|k| k == key)?;
            let value = members.shift_remove(key)?;
            members.shift_insert(index, renamed, value);
        } else {
            let target = at(&mut named, &hole.path)?;
            let text = target.as_str()?;
            *target = Value::String(named_string(text, stand_in, name)?);
        }
    }
    Some(named)
}

/// The value at `path` in `value`.
fn at<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.as_object_mut()?.get_mut(key),
        Step::Index(index) => value.as_array_mut()?.get_mut(*index),
    })
}

/// `text` with `name` for every `stand_in`, when the result is a string whatever YAML style
/// the template wrote it in ([`reads_as_string`]).
fn named_string(text: &str, stand_in: &str, name: &str) -> Option<String> {
    let named = text.replace(stand_in, name);
    reads_as_string(&named).then_some(named)
}

/// Whether a scalar whose value is `value` is the string `value` in any style: YAML resolves a
/// plain scalar's type from its value alone, and no null, boolean or number has white space in
/// it; other values are asked of the parser, written plain (a value that cannot be written so
/// is left to a real render).
pub fn reads_as_string(value: &str) -> bool {
    if value.contains(|c: char| c.is_ascii_whitespace()) || plainly_a_string(value) {
        return true;
    }
    injector_core::yaml::parse_last_key_wins(&format!("k: {value}"))
        .is_ok_and(|read| read.get("k").and_then(Value::as_str) == Some(value))
}

/// Whether `value`, written plain, can only be read as that string, without asking the parser:
/// it starts with a lowercase letter (no number, timestamp, `.inf` or indicator does), holds only
/// lowercase letters, digits, `-`, `.`, `/` and `:` (not last, so no mapping), and is none of the
/// words YAML 1.1 reads as a boolean or null. A pod's name in a path (`pods/db-0`) or a workload
/// name is such a value.
fn plainly_a_string(value: &str) -> bool {
    const WORDS: [&str; 9] = ["y", "yes", "n", "no", "true", "false", "on", "off", "null"];
    let bytes = value.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last() != Some(&b':')
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'/' | b':'))
        && !WORDS.contains(&value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stand_in() -> StandIn {
        StandIn("zzstandin".into())
    }

    #[test]
    fn stand_ins_are_random_words_a_name_may_not_hold() {
        let (a, b) = (StandIn::new().expect("random"), StandIn::new().expect("random"));
        assert_ne!(a.as_str(), b.as_str());
        assert_eq!(a.as_str().len(), 28);
        assert!(can_stand_in(a.as_str(), &b), "a stand-in is itself a DNS name");
        assert!(!can_stand_in(&format!("x{}", a.as_str()), &a));
    }

    #[test]
    fn only_dns_subdomains_without_a_token_volume_prefix_are_stood_in_for() {
        let s = stand_in();
        for name in ["db-0", "web.db-12", "7", "a", &"a".repeat(253)] {
            assert!(can_stand_in(name, &s), "{name}");
        }
        for name in [
            "",
            "-db",
            "db-",
            "Db-0",
            "db_0",
            "db 0",
            "kube-api-access-x",
            &"a".repeat(254),
            ".db",
        ] {
            assert!(!can_stand_in(name, &s), "{name:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn a_plain_string_is_one_the_parser_reads_as_that_string(value in "[a-z0-9./:~yYnN-]{1,8}") {
            if plainly_a_string(&value) {
                let read = injector_core::yaml::parse_last_key_wins(&format!("k: {value}"))
                    .expect("parses");
                proptest::prop_assert_eq!(read.get("k").and_then(Value::as_str), Some(value.as_str()));
            }
        }
    }

    #[test]
    fn a_string_is_one_that_yaml_reads_as_that_string_in_any_style() {
        for text in ["db-0", "pods/db-0", "2001-12-14", "owner db-0\n", "1 2"] {
            assert!(reads_as_string(text), "{text:?}");
        }
        for text in ["123", "0755", "1e3", "0x1f", "true", "yes", "null", "~", "[db]"] {
            assert!(!reads_as_string(text), "{text:?}");
        }
        for text in ["db-0", "kubernetes://apis/v1/namespaces/ns/pods/db-0", "web.ns"] {
            assert!(plainly_a_string(text), "{text:?} needs no parser");
        }
        for text in ["on", "no", "a:", "0db", "Db", "-db", ".inf", "db#1", "<<"] {
            assert!(!plainly_a_string(text), "{text:?} is left to the parser");
        }
    }

    #[test]
    fn the_name_goes_in_every_string_and_key_in_place_and_order() {
        let overlay = json!({
            "metadata": {"labels": {"a": "1", "zzstandin": "key", "z": "2"}},
            "spec": {"containers": [{"name": "p", "args": ["x", "zzstandin", "zzstandin.ns"],
                     "env": [{"name": "W", "value": "pods/zzstandin"}]}]},
            "zzstandin-outer": {"zzstandin-inner": "zzstandin"}
        });
        let named = put_name(&overlay, &stand_in(), "db-0").expect("named");
        assert_eq!(
            named,
            json!({
                "metadata": {"labels": {"a": "1", "db-0": "key", "z": "2"}},
                "spec": {"containers": [{"name": "p", "args": ["x", "db-0", "db-0.ns"],
                         "env": [{"name": "W", "value": "pods/db-0"}]}]},
                "db-0-outer": {"db-0-inner": "db-0"}
            })
        );
        let keys: Vec<&String> = named["metadata"]["labels"]
            .as_object()
            .expect("labels")
            .keys()
            .collect();
        assert_eq!(keys, ["a", "db-0", "z"], "a renamed key keeps its place");
    }

    #[test]
    fn a_name_that_changes_a_type_or_joins_two_keys_is_refused() {
        let value = json!({"env": [{"value": "zzstandin"}]});
        assert!(put_name(&value, &stand_in(), "123").is_none());
        assert!(
            put_name(&value, &stand_in(), "true").is_none(),
            "a DNS name, but a YAML boolean"
        );
        let keys = json!({"labels": {"zzstandin": "a", "db-0": "b"}});
        assert!(put_name(&keys, &stand_in(), "db-0").is_none());
        assert!(put_name(&keys, &stand_in(), "db-1").is_some());
    }
}
