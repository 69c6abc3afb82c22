//! The Go round trip of one field, found by its JSON Pointer: what Istio's `json.Marshal` of the
//! received pod holds at a place where the pod as received and the injected pod differ.
//!
//! The webhook's patch is taken from the pod exactly as the API server sent it, so that fields our
//! schema does not know are never removed. Istio's is taken from the Go round trip of that pod
//! (`createPatch`, <https://github.com/istio/istio/blob/master/pkg/kube/inject/webhook.go>). Where the two bases differ only by what the round trip does on its own — the zero
//! values Go prints for fields nobody set (`status: {}`, `resources: {}`), a `creationTimestamp:
//! null` it leaves out, a quantity it prints canonically (`0.1` → `100m`) — the injection changed
//! nothing, Istio's patch has no operation there, and the API server stores the same object either
//! way. [`normalized_at`] tells the patch writer which differences are of that kind.

use serde_json::{Map, Value};

use super::{Compiled, Kind, Shape, Walker, schema};

/// What the Go round trip of an object of type `root` (`v1/Pod`) holds at `pointer` (RFC 6901)
/// when the object holds `value` there (`None`: the key is absent).
///
/// `Some(None)`: Go leaves the field out; `Some(Some(v))`: Go prints `v`. `None` when the pointer
/// leads outside the schema (a field it does not know, a type mismatch on the way) or the value
/// does not decode: the caller must then treat the difference as real.
///
/// Answers for small values (the zero values, `null`s and scalars the patch writer asks about)
/// are remembered per thread: the walk behind one answer fills in a whole struct (a `Pod`'s zero
/// value for `/status`), and every admission asks the same few questions.
pub fn normalized_at(root: &str, pointer: &str, value: Option<&Value>) -> Option<Option<Value>> {
    let mut budget = MEMO_VALUE_NODES;
    if !value.is_none_or(|value| small(value, &mut budget)) {
        return walked_at(root, pointer, value);
    }
    let key = (root.to_owned(), pointer.to_owned(), value.map(Value::to_string));
    if let Some(known) = MEMO.with_borrow(|memo| memo.get(&key).cloned()) {
        return known;
    }
    let answer = walked_at(root, pointer, value);
    MEMO.with_borrow_mut(|memo| {
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(key, answer.clone());
    });
    answer
}

/// (root, pointer, the value's JSON) → the answer of [`walked_at`].
type Memo = std::collections::HashMap<(String, String, Option<String>), Option<Option<Value>>>;

std::thread_local! {
    static MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::default();
}

/// Past this many answers a thread's memo starts again (pointers carry list indices).
const MEMO_ENTRIES: usize = 1024;

/// Values of at most this many JSON nodes are remembered.
const MEMO_VALUE_NODES: usize = 16;

/// Whether `value` has at most `budget` nodes (counting down).
fn small(value: &Value, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match value {
        Value::Array(items) => items.iter().all(|item| small(item, budget)),
        Value::Object(map) => map.values().all(|item| small(item, budget)),
        _ => true,
    }
}

/// [`normalized_at`], worked out by walking the parent with only this field set.
fn walked_at(root: &str, pointer: &str, value: Option<&Value>) -> Option<Option<Value>> {
    let schema = schema()?;
    let root_index = *schema.roots.get(root)?;
    let root_shape = Shape {
        kind: Kind::Struct,
        type_name: None,
        elem: None,
        go: String::new(),
        index: Some(root_index),
    };
    let segments: Vec<String> = pointer
        .strip_prefix('/')?
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (last, parents) = segments.split_last()?;
    let mut shape = &root_shape;
    for segment in parents {
        shape = child_shape(schema, deref(shape), segment)?;
    }
    let parent = deref(shape);
    match parent.kind {
        Kind::Struct => {
            // The parent struct with only this key set: the walk fills in (or leaves out) the
            // field exactly as it would in the whole object.
            let fields = schema.structs.get(parent.index?)?;
            if !fields.iter().any(|field| field.name == *last) {
                return None;
            }
            let mut object = Map::new();
            if let Some(value) = value {
                object.insert(last.clone(), value.clone());
            }
            let mut object = Value::Object(object);
            walker(schema).value(parent, &mut object).ok()?;
            Some(object.get(last.as_str()).cloned())
        }
        Kind::Slice | Kind::Map => {
            let Some(value) = value else {
                return Some(None); // Go invents no list items and no map entries.
            };
            let mut value = value.clone();
            walker(schema).value(parent.elem.as_deref()?, &mut value).ok()?;
            Some(Some(value))
        }
        _ => None,
    }
}

fn walker(schema: &Compiled) -> Walker<'_> {
    Walker {
        schema,
        structs: Vec::new(),
        path: Vec::new(),
        depth: 0,
        preserve_unknown: true,
        positions: Vec::new(),
    }
}

/// The shape behind any pointers.
fn deref(mut shape: &Shape) -> &Shape {
    while shape.kind == Kind::Ptr {
        match shape.elem.as_deref() {
            Some(elem) => shape = elem,
            None => break,
        }
    }
    shape
}

/// The shape of `segment` inside a value of `shape`: a struct's field by its exact JSON name, a
/// list's item (the segment must be an index), a map's value.
fn child_shape<'a>(schema: &'a Compiled, shape: &'a Shape, segment: &str) -> Option<&'a Shape> {
    match shape.kind {
        Kind::Struct => schema
            .structs
            .get(shape.index?)?
            .iter()
            .find(|field| field.name == segment)
            .map(|field| &field.shape),
        Kind::Slice => {
            segment.parse::<usize>().ok()?;
            shape.elem.as_deref()
        }
        Kind::Map => shape.elem.as_deref(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{MEMO_ENTRIES, normalized_at, walked_at};

    #[test]
    fn zero_values_go_prints_for_unset_fields() {
        assert_eq!(normalized_at("v1/Pod", "/status", None), Some(Some(json!({}))));
        assert_eq!(
            normalized_at("v1/Pod", "/spec/containers/0/resources", None),
            Some(Some(json!({})))
        );
        // An omitempty scalar Go leaves out.
        assert_eq!(normalized_at("v1/Pod", "/spec/nodeName", None), Some(None));
    }

    #[test]
    fn remembered_answers_are_the_walks_own_even_after_the_memo_starts_again() {
        let questions = [
            ("/status", None),
            ("/metadata/creationTimestamp", Some(json!(null))),
            ("/spec/containers/0/resources/requests/cpu", Some(json!("0.1"))),
            // The same place with another value: the value is part of the question.
            ("/spec/containers/0/resources/requests/cpu", Some(json!("1000m"))),
            ("/spec/nodeName", Some(json!(""))),
        ];
        for round in 0..3 {
            for (pointer, value) in &questions {
                assert_eq!(
                    normalized_at("v1/Pod", pointer, value.as_ref()),
                    walked_at("v1/Pod", pointer, value.as_ref()),
                    "{pointer} in round {round}"
                );
            }
            // Enough other questions to fill the memo, so that the next round starts it again.
            for index in 0..MEMO_ENTRIES {
                normalized_at("v1/Pod", &format!("/spec/containers/{index}/resources"), None);
            }
        }
    }

    #[test]
    fn values_go_rewrites_or_drops() {
        assert_eq!(
            normalized_at(
                "v1/Pod",
                "/spec/containers/0/resources/requests/cpu",
                Some(&json!("0.1"))
            ),
            Some(Some(json!("100m")))
        );
        assert_eq!(
            normalized_at("v1/Pod", "/metadata/creationTimestamp", Some(&json!(null))),
            Some(None)
        );
        assert_eq!(
            normalized_at("v1/Pod", "/metadata/labels/app", Some(&json!("web"))),
            Some(Some(json!("web")))
        );
    }

    #[test]
    fn escaped_segments_and_unknown_places() {
        assert_eq!(
            normalized_at("v1/Pod", "/metadata/annotations/a~1b", Some(&json!("x"))),
            Some(Some(json!("x")))
        );
        assert_eq!(normalized_at("v1/Pod", "/spec/futureKnob", None), None);
        assert_eq!(normalized_at("v1/Pod", "/spec/containers/x/name", None), None);
        assert_eq!(normalized_at("v1/NoSuchKind", "/status", None), None);
        assert_eq!(normalized_at("v1/Pod", "", None), None);
        // A value that does not decode is a real difference, not a restatement.
        assert_eq!(
            normalized_at(
                "v1/Pod",
                "/spec/containers/0/resources/requests/cpu",
                Some(&json!("lots"))
            ),
            None
        );
    }

    #[test]
    fn list_items_and_map_entries_are_never_invented() {
        assert_eq!(normalized_at("v1/Pod", "/spec/containers/1", None), Some(None));
        assert_eq!(normalized_at("v1/Pod", "/metadata/labels/app", None), Some(None));
    }
}
