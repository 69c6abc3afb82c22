//! Patch directives: `$patch`, `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>`, plus the clean-up Go applies to patch values that are
//! copied instead of merged (`removeDirectives`, `discardNullValuesFromPatch`).

use serde_json::{Map, Value};

use crate::MAX_DEPTH;
use crate::error::MergeError;
use crate::gojson::{GoType, MAP_TYPE, go_eq, go_fmt, go_fmt_s, go_set_contains};
use crate::member::Members;

/// `$patch`.
pub(crate) const DIRECTIVE_MARKER: &str = "$patch";
/// `$patch: delete`.
pub(crate) const DELETE: &str = "delete";
/// `$patch: replace`.
pub(crate) const REPLACE: &str = "replace";
/// `$patch: merge`.
pub(crate) const MERGE: &str = "merge";
/// The `retainKeys` strategy.
pub(crate) const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
/// `$retainKeys`.
pub(crate) const RETAIN_KEYS: &str = "$retainKeys";
/// `$deleteFromPrimitiveList` (followed by `/<list>`).
pub(crate) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
/// `$setElementOrder` (followed by `/<list>`).
pub(crate) const SET_ELEMENT_ORDER: &str = "$setElementOrder";

pub(crate) fn depth_check(depth: usize) -> Result<(), MergeError> {
    if depth > MAX_DEPTH {
        Err(MergeError::TooDeep(MAX_DEPTH))
    } else {
        Ok(())
    }
}

/// Whether `v` is the string `s` (Go's `interface{} == "s"`).
pub(crate) fn is_str(v: Option<&Value>, s: &str) -> bool {
    matches!(v, Some(Value::String(x)) if x == s)
}

/// Go's `removeDirectives`: drops every object that carries `$patch` (and the list items or map
/// entries holding them). Returns `None` when `v` itself must be dropped. Other `$` keys stay.
pub(crate) fn remove_directives(mut v: Value, depth: usize) -> Result<Option<Value>, MergeError> {
    Ok(retain_cleaned(&mut v, depth, Clean::Directives)?.then_some(v))
}

/// Go's `discardNullValuesFromPatch` followed by `removeDirectives`, in one walk: the patch
/// value Go copies into the original. Returns `None` when `v` itself must be dropped.
pub(crate) fn remove_nulls_and_directives(mut v: Value, depth: usize) -> Result<Option<Value>, MergeError> {
    Ok(retain_cleaned(&mut v, depth, Clean::NullsAndDirectives)?.then_some(v))
}

/// What [`retain_cleaned`] removes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clean {
    /// Objects carrying `$patch`.
    Directives,
    /// `null`-valued map entries first, then objects carrying `$patch`.
    NullsAndDirectives,
}

/// Whether a map carries `$patch`. A scan rather than a lookup: the maps are small, every entry
/// is visited next anyway, and a lookup would hash the key with SipHash in every map.
fn has_directive(map: &Map<String, Value>) -> bool {
    map.keys().any(|key| key == DIRECTIVE_MARKER)
}

/// [`remove_directives`] (or [`remove_nulls_and_directives`]) in place, where nothing is rebuilt
/// when there is nothing to drop: whether `v` stays.
fn retain_cleaned(v: &mut Value, depth: usize, clean: Clean) -> Result<bool, MergeError> {
    depth_check(depth)?;
    let mut failure = None;
    let mut keep = |child: &mut Value| match retain_cleaned(child, depth + 1, clean) {
        Ok(keep) => keep,
        Err(error) => {
            failure.get_or_insert(error);
            true
        }
    };
    match v {
        Value::Object(map) => {
            if clean == Clean::NullsAndDirectives {
                map.retain(|_, child| !child.is_null());
            }
            if has_directive(map) {
                if clean == Clean::NullsAndDirectives {
                    // Go discards nulls in the whole value before dropping anything, so a value
                    // nested too deeply fails even inside an object that is dropped.
                    discard_nulls(v, depth)?;
                }
                return Ok(false);
            }
            map.retain(|_, child| keep(child));
        }
        Value::Array(items) => items.retain_mut(|child| keep(child)),
        _ => {}
    }
    failure.map_or(Ok(true), Err)
}

/// Go's `discardNullValuesFromPatch`: removes `null`-valued map entries at every depth (list
/// items that are `null` stay).
fn discard_nulls(v: &mut Value, depth: usize) -> Result<(), MergeError> {
    depth_check(depth)?;
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for v in map.values_mut() {
                discard_nulls(v, depth + 1)?;
            }
        }
        Value::Array(items) => {
            for item in items {
                discard_nulls(item, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Go's `handleDirectiveInMergeMap`: the result of merging into a map whose patch holds `$patch`.
pub(crate) fn handle_directive_in_map(
    directive: &Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, MergeError> {
    if is_str(Some(directive), REPLACE) {
        patch.shift_remove(DIRECTIVE_MARKER);
        return Ok(patch);
    }
    if is_str(Some(directive), DELETE) {
        return Ok(Map::new());
    }
    Err(MergeError::BadPatchType {
        directive: go_fmt_s(directive),
        map: go_fmt(&Value::Object(patch)),
    })
}

/// Go's `extractKey`: the list name after `<prefix>/`.
pub(crate) fn extract_key<'a>(key: &'a str, prefix: &str) -> Result<&'a str, MergeError> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => Err(MergeError::BadPrimitiveList),
        _ => Err(MergeError::BadSetElementOrder),
    }
}

/// Go's `extractRetainKeysPatchStrategy`: the non-`retainKeys` strategy of a field.
pub(crate) fn non_retain_strategy(strategy: &str) -> Result<&str, MergeError> {
    let parts: Vec<&str> = strategy.split(',').collect();
    match parts.as_slice() {
        [single] if *single == RETAIN_KEYS_STRATEGY => Ok(""),
        [single] => Ok(single),
        [a, b] if *a == RETAIN_KEYS_STRATEGY => Ok(b),
        [a, b] if *b == RETAIN_KEYS_STRATEGY => Ok(a),
        _ => Err(MergeError::UnexpectedPatchStrategy(format!(
            "[{}]",
            parts.join(" ")
        ))),
    }
}

/// Go's `applyRetainKeysDirective` (server side): with `$retainKeys` in the patch, every patch
/// key must be listed, and original keys not listed are cleared. Applies whatever the field's
/// declared strategy is, like Go.
pub(crate) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), MergeError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(MergeError::BadRetainKeys);
    };
    // Building Go's map[interface{}]struct{} panics on unhashable items.
    for item in &retain {
        crate::gojson::go_hashable(item)?;
    }
    let listed =
        |k: &str| -> Result<bool, MergeError> { go_set_contains(&retain, &Value::String(k.to_owned())) };
    for (k, v) in patch.iter() {
        if v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST) || k.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if !listed(k)? {
            return Err(MergeError::BadRetainKeys);
        }
    }
    let mut keep = Map::new();
    for (k, v) in std::mem::take(original) {
        if listed(&k)? {
            keep.insert(k, v);
        }
    }
    *original = keep;
    Ok(())
}

/// Go's `mergepatch.ErrNoMergeKey`.
pub(crate) fn no_merge_key(item: &Value, key: &str) -> MergeError {
    MergeError::NoMergeKey {
        item: go_fmt(item),
        key: key.to_owned(),
    }
}

/// Go's `mergepatch.ErrBadArgType(map[string]interface{}, v)`.
pub(crate) fn not_a_map(v: &Value) -> MergeError {
    MergeError::BadArgType {
        expected: MAP_TYPE,
        actual: GoType::of(v).reflect_name(),
    }
}

/// Go's `mergeKeyValueEqual`.
fn merge_key_value_equal(left: &Value, right: &Value, key: &str) -> Result<bool, MergeError> {
    if key.is_empty() {
        return go_eq(left, right);
    }
    let l = left.as_object().ok_or_else(|| not_a_map(left))?;
    let r = right.as_object().ok_or_else(|| not_a_map(right))?;
    let lv = l.member(key).ok_or_else(|| no_merge_key(left, key))?;
    let rv = r.member(key).ok_or_else(|| no_merge_key(right, key))?;
    go_eq(lv, rv)
}

/// Go's `extractToDeleteItems`: splits list items into kept ones and `$patch: delete` ones.
pub(crate) fn extract_to_delete_items(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in list {
        let m = v.as_object().ok_or_else(|| not_a_map(&v))?;
        if is_str(m.member(DIRECTIVE_MARKER), DELETE) {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

/// Go's `validatePatchWithSetOrderList`: the non-deleted patch items must appear in the
/// `$setElementOrder` list in the same relative order.
pub(crate) fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    key: &str,
) -> Result<(), MergeError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete = if key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        let item = &non_delete[pi];
        if item.as_object().is_some_and(|m| m.has_member(DIRECTIVE_MARKER)) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(item, &order[oi], key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(MergeError::OrderMismatch {
            patch: go_fmt(&Value::Array(patch_list.to_vec())),
            order: go_fmt(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remove_directives_drops_marked_objects() {
        let v = json!({"a": {"$patch": "delete"}, "b": [{"$patch": "x"}, 1], "$retainKeys": ["b"]});
        let out = remove_directives(v, 0).ok().flatten();
        assert_eq!(out, Some(json!({"b": [1], "$retainKeys": ["b"]})));
    }

    #[test]
    fn nulls_go_before_directives() {
        let v = json!({"a": {"$patch": null, "x": 1}, "b": [{"$patch": "x"}, null, {"c": null}], "d": null});
        let out = remove_nulls_and_directives(v, 0).ok().flatten();
        assert_eq!(out, Some(json!({"a": {"x": 1}, "b": [null, {}]})));
    }

    #[test]
    fn too_deep_inside_a_dropped_object_still_fails() {
        let mut deep = json!(1);
        for _ in 0..crate::MAX_DEPTH + 2 {
            deep = json!({ "k": deep });
        }
        let v = json!({"a": {"$patch": "delete", "deep": deep}});
        assert_eq!(
            remove_nulls_and_directives(v.clone(), 0).err(),
            Some(MergeError::TooDeep(crate::MAX_DEPTH))
        );
        assert_eq!(remove_directives(v, 0).ok(), Some(Some(json!({}))));
    }

    #[test]
    fn strategies() {
        assert_eq!(non_retain_strategy("merge,retainKeys").ok(), Some("merge"));
        assert_eq!(non_retain_strategy("retainKeys").ok(), Some(""));
        assert_eq!(non_retain_strategy("").ok(), Some(""));
        assert!(non_retain_strategy("a,b").is_err());
    }
}
