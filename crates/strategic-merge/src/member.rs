//! Object members looked up by comparing keys in order when the object is small.
//!
//! `serde_json::Map` keeps its members in an `IndexMap`, which hashes every key it is asked for
//! with SipHash. The objects a pod is made of are small (a container has about ten members, an
//! env var two), and for them walking the members and comparing keys — lengths first, so most
//! comparisons stop there — costs a fraction of one hash. Larger objects still use the index.
//! Results are always those of `Map::get`: keys are unique, so the first match is the only one.

use serde_json::{Map, Value};

/// Up to this many members, a lookup compares keys instead of hashing.
const SCAN_UP_TO: usize = 16;

/// Member lookup on JSON objects (and on values, which have members only when they are objects).
pub trait Members {
    /// The member `key`, as `get(key)` gives it.
    fn member(&self, key: &str) -> Option<&Value>;
    /// The member `key` for editing, as `get_mut(key)` gives it.
    fn member_mut(&mut self, key: &str) -> Option<&mut Value>;
    /// Whether the member `key` is present.
    fn has_member(&self, key: &str) -> bool {
        self.member(key).is_some()
    }
}

impl Members for Map<String, Value> {
    #[inline]
    fn member(&self, key: &str) -> Option<&Value> {
        if self.len() <= SCAN_UP_TO {
            self.iter()
                .find_map(|(name, value)| (name == key).then_some(value))
        } else {
            self.get(key)
        }
    }

    #[inline]
    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        if self.len() <= SCAN_UP_TO {
            self.iter_mut()
                .find_map(|(name, value)| (name == key).then_some(value))
        } else {
            self.get_mut(key)
        }
    }
}

impl Members for Value {
    #[inline]
    fn member(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => map.member(key),
            _ => None,
        }
    }

    #[inline]
    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Object(map) => map.member_mut(key),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lookups_agree_with_the_map_on_small_and_large_objects() {
        for size in [0, 1, 2, SCAN_UP_TO, SCAN_UP_TO + 1, 40] {
            let mut map = Map::new();
            for i in 0..size {
                // Keys of one length, so that comparisons get past the length check.
                map.insert(format!("k{i:03}"), json!(i));
            }
            let mut value = Value::Object(map.clone());
            for i in 0..size + 2 {
                let key = format!("k{i:03}");
                assert_eq!(map.member(&key), map.get(&key), "{size} members, {key}");
                assert_eq!(value.member(&key), map.get(&key), "{size} members, {key}");
                assert_eq!(value.has_member(&key), map.contains_key(&key));
                if let Some(member) = value.member_mut(&key) {
                    *member = json!("edited");
                }
                assert_eq!(value.get(&key).is_some(), map.contains_key(&key));
            }
            assert!(value.as_object().expect("object").values().all(|v| v == "edited"));
        }
    }

    #[test]
    fn non_objects_have_no_members() {
        for value in [json!(null), json!("spec"), json!(["spec"]), json!(1)] {
            assert_eq!(value.member("spec"), None);
        }
    }
}
