//! Workloads that change the same way, as one group: a proxy image bump across 9,000 workloads
//! is one line with a count, not 9,000.

use serde::Serialize;

use crate::snapshot::ObjectKey;

/// Items that share a key, with their names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group<T> {
    /// What the members share.
    #[serde(flatten)]
    pub shared: T,
    /// How many.
    pub count: usize,
    /// Who, in the order seen (the first few only, when the report was asked to keep no more:
    /// see [`Names`]).
    pub workloads: Vec<ObjectKey>,
}

/// Groups `items` by `key` (a canonical text of what they share), keeping the order in which
/// each key was first seen.
pub fn group_by<T, K: Eq + std::hash::Hash + Clone>(
    items: impl IntoIterator<Item = (ObjectKey, T)>,
    key: impl Fn(&T) -> K,
) -> Vec<Group<T>> {
    let mut grouper = Grouper::new(Names::All);
    for (name, item) in items {
        let k = key(&item);
        grouper.add(k, name, item);
    }
    grouper.finish()
}

/// How many names a group keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// Every member's (the JSON report lists them all).
    All,
    /// The first N (a table shows that many): the group's memory no longer grows with its count.
    First(usize),
}

impl Names {
    fn keeps(self, kept: usize) -> bool {
        match self {
            Names::All => true,
            Names::First(limit) => kept < limit,
        }
    }
}

/// Groups built one item at a time: memory bounded by the number of distinct keys (and the
/// names kept), not by the number of items.
#[derive(Debug, Clone)]
pub struct Grouper<T, K> {
    index: std::collections::HashMap<K, usize>,
    groups: Vec<Group<T>>,
    names: Names,
}

impl<T, K: Eq + std::hash::Hash> Grouper<T, K> {
    /// No groups yet; each keeps `names`.
    pub fn new(names: Names) -> Self {
        Self {
            index: std::collections::HashMap::new(),
            groups: Vec::new(),
            names,
        }
    }

    /// Adds `item`, named `name`, to the group of `key` (a new group, holding `item`, when the
    /// key is new).
    pub fn add(&mut self, key: K, name: ObjectKey, item: T) {
        match self.index.get(&key) {
            Some(&at) => {
                if let Some(group) = self.groups.get_mut(at) {
                    group.count += 1;
                    if self.names.keeps(group.workloads.len()) {
                        group.workloads.push(name);
                    }
                }
            }
            None => {
                self.index.insert(key, self.groups.len());
                self.groups.push(Group {
                    shared: item,
                    count: 1,
                    workloads: if self.names.keeps(0) {
                        vec![name]
                    } else {
                        Vec::new()
                    },
                });
            }
        }
    }

    /// The groups, in the order their keys were first seen.
    pub fn finish(self) -> Vec<Group<T>> {
        self.groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_share_a_group_in_first_seen_order() {
        let key = |n: &str| ObjectKey::new("Deployment", "ns", n);
        let groups = group_by([(key("a"), "x"), (key("b"), "y"), (key("c"), "x")], |item| {
            item.to_string()
        });
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].shared, groups[0].count), ("x", 2));
        assert_eq!(groups[0].workloads, [key("a"), key("c")]);
        assert_eq!((groups[1].shared, groups[1].count), ("y", 1));
    }
}
