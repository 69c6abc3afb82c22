//! Merging maps and lists: Go's `mergeMap`, `mergePatchIntoOriginal` (the `$setElementOrder`
//! pass), `mergeSliceHandler` and `mergeSlice`.
//!
//! The Go code mutates slices in place, and in two places the *original* list it later orders by
//! shares its backing array with the list being changed (deleting items in a keyed list and
//! de-duplicating a primitive list append into the original's spare capacity). Where that is
//! observable, [`SliceMerge::view`] reproduces what Go's original slice header sees afterwards,
//! assuming the original came straight from Go's JSON decoder (capacity = next power of two).

use serde_json::{Map, Value};

use crate::directives::{
    DELETE, DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE_MARKER, MERGE, REPLACE, SET_ELEMENT_ORDER,
    apply_retain_keys, depth_check, extract_key, handle_directive_in_map, is_str, no_merge_key,
    non_retain_strategy, remove_directives, remove_nulls_and_directives, validate_patch_with_set_order_list,
};
use crate::error::MergeError;
use crate::gojson::{GoType, SLICE_TYPE, go_eq, go_fmt, go_fmt_s, go_hashable, go_set_contains};
use crate::member::Members;
use crate::order::{ItemKind, find_by_key, normalize_element_order, partition_maps, partition_primitives};
use crate::schema::Schema;

/// Go's `mergeMap` with the server-side options (`MergeParallelList` and `IgnoreUnmatchedNulls`).
pub(crate) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &Schema,
    depth: usize,
) -> Result<Map<String, Value>, MergeError> {
    depth_check(depth)?;
    if let Some(directive) = patch.member(DIRECTIVE_MARKER) {
        let directive = directive.clone();
        return handle_directive_in_map(&directive, patch);
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, schema, depth)?;

    for (key, patch_value) in patch {
        let mut key = key;
        let mut is_delete_list = false;
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let list = extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?.to_owned();
            is_delete_list = true;
            if !list.is_empty() {
                key = list;
            }
        }
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let Some(original_value) = original.member_mut(&key) else {
            if !is_delete_list {
                insert_patch_value(&mut original, key, patch_value, depth)?;
            }
            continue;
        };
        if GoType::of(original_value) != GoType::of(&patch_value) {
            if !is_delete_list {
                insert_patch_value(&mut original, key, patch_value, depth)?;
            }
            continue;
        }
        match (std::mem::take(original_value), patch_value) {
            (Value::Object(o), Value::Object(p)) => {
                let (sub, meta) = schema.lookup_struct(&key)?;
                let strategy = non_retain_strategy(meta.strategy)?;
                let merged = if strategy == REPLACE {
                    p
                } else {
                    merge_map(o, p, &sub, depth + 1)?
                };
                *original_value = Value::Object(merged);
            }
            (Value::Array(o), Value::Array(p)) => {
                let (sub, meta) = schema.lookup_slice(&key)?;
                let strategy = non_retain_strategy(meta.strategy)?;
                let merged = merge_slice_handler(
                    o,
                    p,
                    &sub,
                    ListStrategy {
                        strategy,
                        key: meta.merge_key,
                    },
                    is_delete_list,
                    View::Unused,
                    depth + 1,
                )?;
                *original_value = Value::Array(merged.merged);
            }
            (_, scalar) => *original_value = scalar,
        }
    }
    Ok(original)
}

/// A patch value copied in place of (or in addition to) the original: nulls discarded,
/// directive-carrying objects dropped.
fn insert_patch_value(
    original: &mut Map<String, Value>,
    key: String,
    value: Value,
    depth: usize,
) -> Result<(), MergeError> {
    match remove_nulls_and_directives(value, depth + 1)? {
        Some(v) => {
            original.insert(key, v);
        }
        None => {
            original.shift_remove(&key);
        }
    }
    Ok(())
}

fn expect_slice(v: Option<&Value>) -> Result<Option<Vec<Value>>, MergeError> {
    match v {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(MergeError::BadArgType {
            expected: SLICE_TYPE,
            actual: GoType::of(other).reflect_name(),
        }),
    }
}

/// Go's `mergePatchIntoOriginal`: every `$setElementOrder/<list>` directive merges `<list>` now
/// and orders the result: `$setElementOrder` first, then patch order, then original order.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &Schema,
    depth: usize,
) -> Result<(), MergeError> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.shift_remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(MergeError::BadArgType {
                expected: SLICE_TYPE,
                actual: GoType::of(&order).reflect_name(),
            });
        };
        let list_key = extract_key(&directive, SET_ELEMENT_ORDER)?.to_owned();
        let original_list = expect_slice(original.member(&list_key))?;
        let patch_list = expect_slice(patch.member(&list_key))?;
        let (sub, meta) = schema.lookup_slice(&list_key)?;
        let strategy = non_retain_strategy(meta.strategy)?;
        let key = meta.merge_key;
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or(&[]), &order, key)?;

        let patch_items = patch_list.clone().unwrap_or_default();
        let (merged, server_order) = match (original_list, patch_list) {
            (Some(o), None) => (o.clone(), o),
            (None, Some(p)) => match remove_directives(Value::Array(p), depth + 1)? {
                Some(Value::Array(v)) => (v, Vec::new()),
                _ => continue,
            },
            (Some(o), Some(p)) => {
                let r = merge_slice_handler(
                    o,
                    p,
                    &sub,
                    ListStrategy { strategy, key },
                    false,
                    View::Wanted,
                    depth + 1,
                )?;
                (r.merged, r.view)
            }
            (None, None) => continue,
        };
        let (in_order, server_only) = if key.is_empty() {
            partition_primitives(merged, &order)?
        } else {
            partition_maps(merged, &order, key)?
        };
        let kind = item_kind(slice_element_type(&[&server_order, &patch_items])?);
        let both = normalize_element_order(in_order, server_only, &order, &server_order, key, kind)?;
        original.insert(list_key.clone(), Value::Array(both));
        patch.shift_remove(&list_key);
    }
    Ok(())
}

/// The merged list and Go's view of the original slice afterwards (see the module docs).
pub(crate) struct SliceMerge {
    pub(crate) merged: Vec<Value>,
    /// Empty for a list of objects when the caller said [`View::Unused`].
    pub(crate) view: Vec<Value>,
}

/// Whether the caller reads [`SliceMerge::view`] (only the `$setElementOrder` pass does): a list
/// of objects is copied for it only then.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    Wanted,
    Unused,
}

/// A list's patch strategy and merge key, from the schema.
#[derive(Clone, Copy)]
pub(crate) struct ListStrategy<'a> {
    strategy: &'a str,
    key: &'a str,
}

/// Go's `mergeSliceHandler`: lists with the `merge` strategy (and delete lists) are merged,
/// any other list is replaced by the patch as is.
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &Schema,
    ListStrategy { strategy, key }: ListStrategy<'_>,
    is_delete_list: bool,
    view: View,
    depth: usize,
) -> Result<SliceMerge, MergeError> {
    if strategy == MERGE || is_delete_list {
        merge_slice(original, patch, schema, key, is_delete_list, view, depth)
    } else {
        Ok(SliceMerge {
            merged: patch,
            view: original,
        })
    }
}

fn item_kind(t: GoType) -> ItemKind {
    if t == GoType::Map {
        ItemKind::Map
    } else {
        ItemKind::Scalar
    }
}

/// Go's `sliceElementType`: the one Go type of all items of all lists.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType, MergeError> {
    let mut prev: Option<GoType> = None;
    for list in lists {
        for v in list.iter() {
            let t = GoType::of(v);
            match prev {
                None => {
                    if t == GoType::Nil {
                        // Go calls Kind() on a nil reflect.Type here.
                        return Err(MergeError::GoPanic(
                            "runtime error: invalid memory address or nil pointer dereference".into(),
                        ));
                    }
                    if t == GoType::Slice {
                        return Err(MergeError::ListOfLists);
                    }
                    prev = Some(t);
                }
                Some(p) if p != t => {
                    let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                    return Err(MergeError::ElementTypesDiffer(go_fmt(&Value::Array(all))));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or(MergeError::NoElements)
}

/// Capacity of a slice of `n` items built by Go's JSON decoder (appending one at a time).
/// Exact up to 512 items; beyond that we assume no spare capacity.
fn decoded_capacity(n: usize) -> usize {
    if n == 0 {
        0
    } else if n <= 512 {
        n.next_power_of_two()
    } else {
        n
    }
}

/// Go's `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &Schema,
    key: &str,
    is_delete_list: bool,
    wanted: View,
    depth: usize,
) -> Result<SliceMerge, MergeError> {
    depth_check(depth)?;
    if original.is_empty() && patch.is_empty() {
        return Ok(SliceMerge {
            merged: original,
            view: Vec::new(),
        });
    }
    if !is_delete_list && only_new_items(&original, &patch, key) {
        return Ok(new_items_first(original, patch, wanted));
    }
    merge_slice_in_full(original, patch, schema, key, is_delete_list, wanted, depth)
}

/// Whether merging `patch` into `original` by `key` can only put the patch's items in front of
/// the original's ([`new_items_first`]): every item of both lists is an object without a `$patch`
/// directive whose `key` is a string, and no key is there twice (within a list or across both).
///
/// Go's `mergeSlice` then appends every patch item (none is found in the original), partitions
/// the list into the patch's items and the original's, sorts each by its own list's order (a
/// stable sort of items already in that order, with no ties) and merges the two sorted parts,
/// taking a patch item whenever the original's order does not know it, which is always.
fn only_new_items(original: &[Value], patch: &[Value], key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    let mut keys = Vec::with_capacity(original.len() + patch.len());
    for item in original.iter().chain(patch) {
        let Some(object) = item.as_object() else {
            return false;
        };
        if object.has_member(DIRECTIVE_MARKER) {
            return false;
        }
        let Some(found) = object.member(key).and_then(Value::as_str) else {
            return false;
        };
        keys.push(found);
    }
    keys.sort_unstable();
    !keys.windows(2).any(|pair| pair[0] == pair[1])
}

/// The merge of lists [`only_new_items`] accepts: the patch's items, then the original's, each
/// in its own order; Go's view of the original slice is the original (nothing was deleted, and
/// appends go past its length).
fn new_items_first(original: Vec<Value>, patch: Vec<Value>, wanted: View) -> SliceMerge {
    let view = match wanted {
        View::Wanted => original.clone(),
        View::Unused => Vec::new(),
    };
    let mut merged = patch;
    merged.extend(original);
    SliceMerge { merged, view }
}

/// [`merge_slice`] step by step, as Go does it.
fn merge_slice_in_full(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &Schema,
    key: &str,
    is_delete_list: bool,
    wanted: View,
    depth: usize,
) -> Result<SliceMerge, MergeError> {
    let kind = item_kind(slice_element_type(&[&original, &patch])?);
    let n = original.len();
    let capacity = decoded_capacity(n);

    let (merged, server_order, patch_list, view) = if kind == ItemKind::Scalar {
        let mut view = original.clone();
        if is_delete_list {
            return Ok(SliceMerge {
                merged: delete_from_slice(original, &patch)?,
                view,
            });
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let len = deduplicate_scalars(&mut both)?;
        if n + patch.len() <= capacity {
            // `append(original, patch...)` reused the original's backing array.
            view = both[..n].to_vec();
        }
        both.truncate(len);
        (both, view.clone(), patch, view)
    } else {
        if key.is_empty() {
            return Err(MergeError::NoMergeKeyForList(schema.kind_name().to_owned()));
        }
        let mut view = match wanted {
            View::Wanted => original.clone(),
            View::Unused => Vec::new(),
        };
        let special = merge_slice_with_special_elements(original, patch, key, &mut view)?;
        let server_order = key_stubs(&special.original, key);
        let appended_at = special.original.len();
        let (merged, appended) =
            merge_slice_without_special_elements(special.original, &special.patch, key, schema, depth)?;
        if !special.replaced {
            // Appends land in the original backing array while capacity lasts.
            for (i, item) in appended.into_iter().enumerate() {
                let pos = appended_at + i;
                if pos < capacity
                    && pos < n
                    && let Some(slot) = view.get_mut(pos)
                {
                    *slot = item;
                }
            }
        }
        (merged, server_order, special.patch, view)
    };

    let (patch_items, server_only) = if key.is_empty() {
        partition_primitives(merged, &patch_list)?
    } else {
        partition_maps(merged, &patch_list, key)?
    };
    let merged = normalize_element_order(patch_items, server_only, &patch_list, &server_order, key, kind)?;
    Ok(SliceMerge { merged, view })
}

/// The server's order of a list of objects, for [`normalize_element_order`], which reads of each
/// item only whether it is an object and its merge key: items that have one are copied as
/// `{key: value}`, the others whole (so that an error quotes them as Go does).
fn key_stubs(items: &[Value], key: &str) -> Vec<Value> {
    items
        .iter()
        .map(
            |item| match item.as_object().and_then(|object| object.member(key)) {
                Some(value) => {
                    let mut stub = Map::with_capacity(1);
                    stub.insert(key.to_owned(), value.clone());
                    Value::Object(stub)
                }
                None => item.clone(),
            },
        )
        .collect()
}

/// Go's `deduplicateScalars` (swap-with-last, so it also reorders); returns the new length and
/// leaves the full backing array in `s`, as Go does.
fn deduplicate_scalars(s: &mut [Value]) -> Result<usize, MergeError> {
    let Some(mut length) = s.len().checked_sub(1) else {
        return Ok(0);
    };
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if go_eq(&s[i], &s[j])? {
                s[j] = s[length].clone();
                length -= 1;
                // Go's `j--` then `j++`: look at position j again.
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    Ok(length + 1)
}

/// Go's `deleteFromSlice`: removes every item listed in `to_delete`.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Result<Vec<Value>, MergeError> {
    for v in to_delete {
        go_hashable(v)?;
    }
    let mut kept = Vec::with_capacity(current.len());
    for v in current {
        if !go_set_contains(to_delete, &v)? {
            kept.push(v);
        }
    }
    Ok(kept)
}

struct Special {
    original: Vec<Value>,
    patch: Vec<Value>,
    replaced: bool,
}

/// Go's `mergeSliceWithSpecialElements`: applies `$patch: delete` items, detects
/// `$patch: replace`, and returns the patch without directive items.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    view: &mut [Value],
) -> Result<Special, MergeError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Some(map) = v.as_object() else {
            return Err(crate::directives::not_a_map(&v));
        };
        let Some(directive) = map.member(DIRECTIVE_MARKER) else {
            plain.push(v);
            continue;
        };
        if is_str(Some(directive), DELETE) {
            let Some(value) = map.member(key) else {
                return Err(no_merge_key(&v, key));
            };
            while let Some(i) = find_by_key(&original, key, value)? {
                // Go: append(original[:i], original[i+1:]...) shifts the shared backing array.
                let m = original.len();
                for p in i..m.saturating_sub(1) {
                    if p + 1 < view.len() {
                        view[p] = view[p + 1].clone();
                    }
                }
                original.remove(i);
            }
        } else if is_str(Some(directive), REPLACE) {
            replace = true;
        } else if is_str(Some(directive), MERGE) {
            return Err(MergeError::MergeDirectiveInList);
        } else {
            return Err(MergeError::BadPatchType {
                directive: go_fmt_s(directive),
                map: go_fmt(&v),
            });
        }
    }
    if replace {
        return Ok(Special {
            original: plain,
            patch: Vec::new(),
            replaced: true,
        });
    }
    Ok(Special {
        original,
        patch: plain,
        replaced: false,
    })
}

/// Go's `mergeSliceWithoutSpecialElements`: merges each patch item into the first original item
/// with the same key, or appends it (as is: nulls and directives inside are kept, like Go).
/// Returns the merged list and the appended items.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
    schema: &Schema,
    depth: usize,
) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
    let mut appended = Vec::new();
    for v in patch {
        let Some(map) = v.as_object() else {
            return Err(crate::directives::not_a_map(v));
        };
        let Some(value) = map.member(key) else {
            return Err(no_merge_key(v, key));
        };
        match find_by_key(&original, key, value)? {
            Some(i) => {
                let target = std::mem::take(&mut original[i]);
                let Value::Object(target) = target else {
                    return Err(MergeError::NotAMap(i));
                };
                let merged = merge_map(target, map.clone(), schema, depth + 1)?;
                original[i] = Value::Object(merged);
            }
            None => {
                original.push(v.clone());
                appended.push(v.clone());
            }
        }
    }
    Ok((original, appended))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vals(v: Value) -> Vec<Value> {
        match v {
            Value::Array(a) => a,
            _ => Vec::new(),
        }
    }

    #[test]
    fn dedup_matches_go() {
        let mut s = vals(json!(["a", "a", "b", "c"]));
        let n = deduplicate_scalars(&mut s).unwrap_or(0);
        assert_eq!(&s[..n], &vals(json!(["a", "c", "b"]))[..]);
    }

    /// A list item for [`merging_new_items_first_is_the_full_merge`]: its key (a name from a
    /// few, so lists share some; a number; or none), maybe a `$patch` directive, and a value.
    fn item() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        (0..8u8, 0..6u8, 0..3u8).prop_map(|(key, directive, value)| {
            let mut item = Map::new();
            match key {
                0..=5 => {
                    item.insert(
                        "name".into(),
                        json!(["a", "b", "c", "d", "e", "f"][usize::from(key)]),
                    );
                }
                6 => {
                    item.insert("name".into(), json!(1));
                }
                _ => {}
            }
            match directive {
                0 => {
                    item.insert(DIRECTIVE_MARKER.into(), json!(DELETE));
                }
                1 => {
                    item.insert(DIRECTIVE_MARKER.into(), json!(REPLACE));
                }
                _ => {}
            }
            item.insert("emptyDir".into(), json!({"sizeLimit": value}));
            Value::Object(item)
        })
    }

    fn outcome(merge: Result<SliceMerge, MergeError>) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
        merge.map(|SliceMerge { merged, view }| (merged, view))
    }

    proptest::proptest! {
        /// Whatever the lists, the merge with its shortcut for lists of new items gives what
        /// Go's steps give: the same list, the same view of the original, the same error.
        #[test]
        fn merging_new_items_first_is_the_full_merge(
            original in proptest::collection::vec(item(), 0..6),
            patch in proptest::collection::vec(item(), 0..6),
            wanted in proptest::bool::ANY,
        ) {
            let (schema, _) = Schema::pod_spec().lookup_slice("volumes").expect("volumes");
            let wanted = if wanted { View::Wanted } else { View::Unused };
            let shortcut = merge_slice(original.clone(), patch.clone(), &schema, "name", false, wanted, 0);
            // Two empty lists are answered before either way.
            let full = if original.is_empty() && patch.is_empty() {
                Ok(SliceMerge { merged: Vec::new(), view: Vec::new() })
            } else {
                merge_slice_in_full(original, patch, &schema, "name", false, wanted, 0)
            };
            proptest::prop_assert_eq!(outcome(shortcut), outcome(full));
        }
    }

    #[test]
    fn a_list_of_new_items_goes_in_front_of_the_original() {
        let (schema, _) = Schema::pod_spec().lookup_slice("volumes").expect("volumes");
        let original = vals(json!([{"name": "token"}]));
        let patch = vals(json!([{"name": "envoy"}, {"name": "certs"}]));
        assert!(only_new_items(&original, &patch, "name"));
        let merged = merge_slice(original, patch, &schema, "name", false, View::Wanted, 0).unwrap();
        assert_eq!(
            merged.merged,
            vals(json!([{"name": "envoy"}, {"name": "certs"}, {"name": "token"}]))
        );
        assert_eq!(merged.view, vals(json!([{"name": "token"}])));
        for (original, patch) in [
            (json!([{"name": "a"}]), json!([{"name": "a"}])),
            (json!([{"name": "a"}, {"name": "a"}]), json!([{"name": "b"}])),
            (json!([{"name": 1}]), json!([{"name": "b"}])),
            (json!([{"name": "a"}]), json!([{"name": "b", "$patch": "delete"}])),
            (json!(["a"]), json!([{"name": "b"}])),
        ] {
            assert!(!only_new_items(&vals(original), &vals(patch), "name"));
        }
        assert!(!only_new_items(&vals(json!([{"": "a"}])), &[], ""));
    }

    #[test]
    fn element_types() {
        assert!(matches!(
            slice_element_type(&[&vals(json!([1, "a"]))]),
            Err(MergeError::ElementTypesDiffer(_))
        ));
        assert!(matches!(slice_element_type(&[&[]]), Err(MergeError::NoElements)));
        assert!(matches!(
            slice_element_type(&[&vals(json!([[1]]))]),
            Err(MergeError::ListOfLists)
        ));
    }
}
