//! The order of a merged list (Go's `normalizeElementOrder` and friends).
//!
//! After merging, the items are split into *patch items* (their key occurs in the patch list, or
//! in the `$setElementOrder` list) and *server-only items*. Patch items are sorted by the patch
//! order, server-only items by the original order, and the two sequences are interleaved: a
//! server-only item is emitted before the next patch item only when both occur in the original
//! and the original has it first (`mergeSortedSlice`). New patch items therefore come first.
//!
//! Go sorts with `sort.SliceStable` and a comparator that answers "less" whenever an item is not
//! found in the order list; that comparator is not a strict weak order, so the result depends on
//! the exact algorithm. [`go_stable_sort`] is a re-implementation of Go's algorithm (insertion
//! sort on blocks of 20, then `symMerge`) so those corner cases come out the same.

use serde_json::Value;

use crate::directives::{extract_to_delete_items, no_merge_key, not_a_map};
use crate::error::MergeError;
use crate::gojson::{go_eq, go_set_contains};
use crate::member::Members;

/// Whether list items are compared by merge key (objects) or by value (scalars).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    /// Objects, compared by merge key value.
    Map,
    /// Anything else, compared by value.
    Scalar,
}

type Less<'a, T> = dyn FnMut(&T, &T) -> Result<bool, MergeError> + 'a;

/// Go's `sort.Stable` (`stable_func`) with a fallible `less`.
pub(crate) fn go_stable_sort<T>(data: &mut [T], less: &mut Less<'_, T>) -> Result<(), MergeError> {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, less)?;
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, less)?;
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, less)?;
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, less)?;
        }
        block *= 2;
    }
    Ok(())
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &mut Less<'_, T>) -> Result<(), MergeError> {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1])? {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
    Ok(())
}

fn sym_merge<T>(
    data: &mut [T],
    a: usize,
    m: usize,
    b: usize,
    less: &mut Less<'_, T>,
) -> Result<(), MergeError> {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a])? {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return Ok(());
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h])? {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return Ok(());
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c])? {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less)?;
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less)?;
    }
    Ok(())
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

/// The value Go compares for an item: its merge key value for objects, itself otherwise.
fn compared_value<'a>(item: &'a Value, key: &str, kind: ItemKind) -> &'a Value {
    match kind {
        ItemKind::Map => item
            .as_object()
            .and_then(|m| m.member(key))
            .unwrap_or(&Value::Null),
        ItemKind::Scalar => item,
    }
}

/// Go's `index`: position of `item` in `list` (by merge key value for objects), or `None`.
pub(crate) fn index(
    list: &[Value],
    item: &Value,
    key: &str,
    kind: ItemKind,
) -> Result<Option<usize>, MergeError> {
    let wanted = compared_value(item, key, kind);
    for (i, v) in list.iter().enumerate() {
        if go_eq(wanted, compared_value(v, key, kind))? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's `validateMergeKeyInLists`.
fn validate_merge_key(key: &str, list: &[Value]) -> Result<(), MergeError> {
    for item in list {
        let m = item.as_object().ok_or_else(|| not_a_map(item))?;
        if !m.has_member(key) {
            return Err(no_merge_key(item, key));
        }
    }
    Ok(())
}

/// Go's `normalizeSliceOrder`: stable sort of `to_sort` by position in `order`; for objects,
/// `$patch: delete` items go last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    key: &str,
    kind: ItemKind,
) -> Result<Vec<Value>, MergeError> {
    let (mut items, deletes) = if kind == ItemKind::Map {
        validate_merge_key(key, &to_sort)?;
        validate_merge_key(key, order)?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    // Each item's position in `order` is looked up once instead of at every comparison. When a
    // lookup fails (Go panics comparing some values), the sort looks them up as Go does, so the
    // same comparison fails first.
    let positions: Result<Vec<Option<usize>>, MergeError> =
        items.iter().map(|item| index(order, item, key, kind)).collect();
    match positions {
        Ok(positions) => {
            let mut placed: Vec<(Option<usize>, Value)> = positions.into_iter().zip(items).collect();
            go_stable_sort(&mut placed, &mut |(x, _), (y, _)| {
                Ok(match (x, y) {
                    (Some(x), Some(y)) => x < y,
                    _ => true,
                })
            })?;
            items = placed.into_iter().map(|(_, item)| item).collect();
        }
        Err(_) => {
            let mut less = |x: &Value, y: &Value| -> Result<bool, MergeError> {
                if let Some(ix) = index(order, x, key, kind)?
                    && let Some(iy) = index(order, y, key, kind)?
                {
                    return Ok(ix < iy);
                }
                Ok(true)
            };
            go_stable_sort(&mut items, &mut less)?;
        }
    }
    items.extend(deletes);
    Ok(items)
}

/// Go's `mergeSortedSlice`: interleaves server-only items (`left`) into patch items (`right`).
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: &str,
    kind: ItemKind,
) -> Result<Vec<Value>, MergeError> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let li = index(server_order, l, key, kind)?;
                let ri = index(server_order, r, key, kind)?;
                matches!((li, ri), (Some(li), Some(ri)) if li < ri)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Go's `normalizeElementOrder`.
pub(crate) fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: &str,
    kind: ItemKind,
) -> Result<Vec<Value>, MergeError> {
    let patch = normalize_slice_order(patch, patch_order, key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, key, kind)?;
    merge_sorted_slice(server_only, patch, server_order, key, kind)
}

/// Go's `findMapInSliceBasedOnKeyValue`: first object in `list` whose `key` equals `value`.
pub(crate) fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, MergeError> {
    for (i, v) in list.iter().enumerate() {
        let Some(m) = v.as_object() else {
            return Err(MergeError::NotAMap(i));
        };
        if let Some(candidate) = m.member(key)
            && go_eq(candidate, value)?
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's `partitionMapsByPresentInList`: (items whose key is in `by`, the others).
pub(crate) fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for v in merged {
        let m = v.as_object().ok_or_else(|| not_a_map(&v))?;
        let value = m.member(key).ok_or_else(|| no_merge_key(&v, key))?;
        if find_by_key(by, key, value)?.is_some() {
            inside.push(v);
        } else {
            outside.push(v);
        }
    }
    Ok((inside, outside))
}

/// Go's `partitionPrimitivesByPresentInList`.
pub(crate) fn partition_primitives(
    merged: Vec<Value>,
    by: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
    for s in by {
        crate::gojson::go_hashable(s)?;
    }
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for v in merged {
        if go_set_contains(by, &v)? {
            inside.push(v);
        } else {
            outside.push(v);
        }
    }
    Ok((inside, outside))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_less_reverses_small_inputs_like_go() {
        let mut v: Vec<u32> = (0..5).collect();
        go_stable_sort(&mut v, &mut |_, _| Ok(true)).ok();
        assert_eq!(v, vec![4, 3, 2, 1, 0]);
    }

    proptest::proptest! {
        /// Whatever the comparator answers (Go's is not always consistent), the port of Go's
        /// algorithm stays in bounds and returns a permutation.
        #[test]
        fn arbitrary_comparator_never_panics(
            n in 0usize..150,
            answers in proptest::collection::vec(proptest::bool::ANY, 1..64),
        ) {
            let mut v: Vec<usize> = (0..n).collect();
            let mut k = 0;
            go_stable_sort(&mut v, &mut |_, _| {
                k += 1;
                Ok(answers[k % answers.len()])
            })
            .ok();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn sorts_large_inputs_stably() {
        let mut v: Vec<(u32, u32)> = (0..100).map(|i| ((i * 37) % 7, i)).collect();
        go_stable_sort(&mut v, &mut |a, b| Ok(a.0 < b.0)).ok();
        let mut expected: Vec<(u32, u32)> = (0..100).map(|i| ((i * 37) % 7, i)).collect();
        expected.sort_by_key(|x| x.0);
        assert_eq!(v, expected);
    }
}
