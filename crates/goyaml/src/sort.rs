//! go-yaml v2's "natural" map key order (`sorter.go`) for string keys.
//!
//! Runes are compared one at a time, skipping equal ones. At the first
//! difference: two letters compare by code point; a letter sorts after a
//! non-letter; two non-letters compare the digit runs starting there as
//! numbers (with go-yaml's leading-zero rule), then by run length, then by
//! code point. A key that is a prefix of another sorts first. Letters and
//! digits are Go's `unicode.IsLetter` / `unicode.IsDigit`.

use crate::unicode_tables::{DIGIT, LETTER};
use std::cmp::Ordering;

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                Ordering::Less
            } else if lo > c {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        in_table(LETTER, c)
    }
}

fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_table(DIGIT, c)
    }
}

/// go-yaml's `keyList.Less` for two string keys.
#[cfg(test)]
pub(crate) fn natural_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    less_runes(&ar, &br)
}

/// go-yaml's `keyList.Less` for two keys given as runes.
fn less_runes(ar: &[char], br: &[char]) -> bool {
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = is_letter(ar[i]);
        let bl = is_letter(br[i]);
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            for j in (0..i).rev() {
                if !is_digit(ar[j]) {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        // Go computes `rune - '0'` for any Unicode digit; keep that.
        let value = |c: char| i64::from(u32::from(c)) - i64::from(u32::from('0'));
        let mut ai = i;
        while ai < ar.len() && is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Sort items by key in go-yaml's natural order. A merge sort written out
/// so that no comparison outcome can make it panic (the order is not
/// transitive for every input, and Go's own order is then unspecified too).
///
/// Where the natural order is not transitive, Go's output depends on its
/// random map iteration order. Here the items are put in code point order
/// first, so the result depends only on the set of keys, never on the order
/// they came in.
pub(crate) fn sort_keys<T>(items: Vec<T>, key: impl Fn(&T) -> &str) -> Vec<T> {
    let mut keyed: Vec<(Vec<char>, T)> = items
        .into_iter()
        .map(|item| (key(&item).chars().collect(), item))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    merge_sort(keyed).into_iter().map(|(_, item)| item).collect()
}

fn merge_sort<T>(items: Vec<(Vec<char>, T)>) -> Vec<(Vec<char>, T)> {
    if items.len() <= 1 {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let left = merge_sort(left);
    let right = merge_sort(right);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut l = left.into_iter().peekable();
    let mut r = right.into_iter().peekable();
    loop {
        let take_right = match (l.peek(), r.peek()) {
            (Some(x), Some(y)) => less_runes(&y.0, &x.0),
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (None, None) => break,
        };
        let next = if take_right { r.next() } else { l.next() };
        if let Some(item) = next {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn less() {
        assert!(natural_less("a2", "a10"));
        assert!(natural_less("a10", "a1a"));
        assert!(!natural_less("a1a", "a10"));
        assert!(natural_less("-", "a"));
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        sort_keys(keys.iter().map(|s| s.to_string()).collect(), |s| s.as_str())
    }

    #[test]
    fn natural_order() {
        assert_eq!(sorted(&["a10", "a2", "a1"]), ["a1", "a2", "a10"]);
        assert_eq!(sorted(&["b", "a", "B", "A"]), ["A", "B", "a", "b"]);
        assert_eq!(sorted(&["ab", "a"]), ["a", "ab"]);
        // Not transitive (a10 < a1a < a2 < a10): still independent of input order.
        assert_eq!(sorted(&["a10", "a1a", "a2"]), sorted(&["a2", "a1a", "a10"]));
        assert_eq!(sorted(&["a10", "a1a", "a2"]), sorted(&["a1a", "a10", "a2"]));
    }
}
