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
    /// Who, in the order seen.
    pub workloads: Vec<ObjectKey>,
}

/// Groups `items` by `key` (a canonical text of what they share), keeping the order in which
/// each key was first seen.
pub fn group_by<T, K: Eq + std::hash::Hash + Clone>(
    items: impl IntoIterator<Item = (ObjectKey, T)>,
    key: impl Fn(&T) -> K,
) -> Vec<Group<T>> {
    let mut index = std::collections::HashMap::new();
    let mut groups: Vec<Group<T>> = Vec::new();
    for (name, item) in items {
        let k = key(&item);
        match index.get(&k) {
            Some(&at) => {
                let group: &mut Group<T> = &mut groups[at];
                group.count += 1;
                group.workloads.push(name);
            }
            None => {
                index.insert(k, groups.len());
                groups.push(Group {
                    shared: item,
                    count: 1,
                    workloads: vec![name],
                });
            }
        }
    }
    groups
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
