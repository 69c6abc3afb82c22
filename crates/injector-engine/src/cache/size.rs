//! What a cached value holds in memory, in bytes: the sizes the render cache charges its entries.
//!
//! Counted from the values themselves (each JSON node, each string's and list's capacity, each
//! object member's slot in its map and index), so that a pod that hands the templates a 230 KB
//! annotation is charged for the copy of it an entry keeps, and for every copy of it the entry's
//! overlays hold.

use std::mem::size_of;

use serde_json::Value;

use crate::render::objects::reads::{Read, Seen, Seg};

/// The bytes an object member costs its map beyond its key and value: the entry's stored hash
/// and the index table's slot (with its control byte and spare capacity).
const MEMBER_OVERHEAD: usize = size_of::<u64>() + 2 * size_of::<usize>();

/// The bytes held by `value`, its own node included.
pub fn json(value: &Value) -> usize {
    size_of::<Value>() + heap(value)
}

/// The bytes `value` holds beyond its own node.
fn heap(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(text) => text.capacity(),
        Value::Array(items) => {
            (items.capacity() - items.len()) * size_of::<Value>() + items.iter().map(json).sum::<usize>()
        }
        Value::Object(members) => members
            .iter()
            .map(|(key, member)| size_of::<String>() + key.capacity() + MEMBER_OVERHEAD + json(member))
            .sum(),
    }
}

/// The bytes held by one recorded read and what it saw.
pub fn read(read: &Read, seen: &Seen) -> usize {
    let path = match read {
        Read::Whole(path) | Read::Member(path, _) | Read::Length(path) => path.len(),
        Read::Entry(path, key) => path.len() + key.len().div_ceil(size_of::<Seg>()),
    };
    let seen = match seen {
        Seen::Whole(value) | Seen::Entry(Some(value)) => heap(value),
        Seen::Entry(None) | Seen::Member(_) | Seen::Length(_) => 0,
    };
    // The path's `Arc` counts, its segments, and the value seen.
    size_of::<(Read, Seen)>() + 2 * size_of::<usize>() + path * size_of::<Seg>() + seen
}

/// The bytes held by a string kept beside the values (a key's text).
pub fn text(text: &str) -> usize {
    size_of::<String>() + text.len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_value_is_charged_for_its_strings_lists_and_members() {
        let small = json(&json!({"a": "b"}));
        let big = json(&json!({"a": "x".repeat(230_000)}));
        assert!(big >= small + 229_999, "{small} {big}");
        let list = json(&json!(["x".repeat(1000), "y".repeat(1000)]));
        assert!(list >= 2000 + 2 * size_of::<Value>());
        assert!(json(&Value::Null) >= size_of::<Value>());
    }
}
