//! Which parts of a value a round trip must walk: the rest is known to be normalized already.
//!
//! The pipeline normalizes the pod as received once; each later step (a template's strategic
//! merge, post-processing) changes a few places of an otherwise normalized pod. A [`Guide`]
//! names those places, so the next round trip walks them and the structs and maps that hold
//! them (whose layout a change may disturb) and leaves every other subtree as it is. Walking a
//! normalized subtree again would change nothing: the round trip is idempotent.

/// The parts of a value that may differ from their Go round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guide {
    /// Anything may: walk the whole value.
    All,
    /// Nothing does: the value is normalized already.
    Skip,
    /// An object (struct or map) whose own layout may need normalizing (keys added, removed or
    /// reordered), and whose members named here may differ; members not named are normalized.
    Fields(Vec<(String, Guide)>),
    /// A list whose items have these guides, by index (items past the end: [`Guide::All`]).
    Items(Vec<Guide>),
}

static ALL: Guide = Guide::All;
static SKIP: Guide = Guide::Skip;

impl Guide {
    /// The guide of an object's member `key`.
    pub fn field(&self, key: &str) -> &Guide {
        match self {
            Guide::All | Guide::Items(_) => &ALL,
            Guide::Skip => &SKIP,
            Guide::Fields(fields) => fields
                .iter()
                .find(|(name, _)| name == key)
                .map_or(&SKIP, |(_, guide)| guide),
        }
    }

    /// The guide of a list's item at `index`.
    pub fn item(&self, index: usize) -> &Guide {
        match self {
            Guide::All | Guide::Fields(_) => &ALL,
            Guide::Skip => &SKIP,
            Guide::Items(items) => items.get(index).unwrap_or(&ALL),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::normalize::{normalize_preserving, normalize_preserving_guided};

    #[test]
    fn a_guided_walk_normalizes_what_the_guide_names_and_keeps_the_rest() {
        let pod = normalize_preserving(
            "v1/Pod",
            &json!({"metadata": {"name": "a", "labels": {"b": "1", "a": "2"}},
                    "spec": {"containers": [{"name": "app", "image": "x"}]}}),
        )
        .unwrap();
        // A change in one container, and a label added out of order.
        let mut changed = pod.clone();
        changed["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1000m"}});
        changed["metadata"]["labels"]["0"] = json!("3");
        let guide = Guide::Fields(vec![
            (
                "metadata".into(),
                Guide::Fields(vec![("labels".into(), Guide::All)]),
            ),
            (
                "spec".into(),
                Guide::Fields(vec![("containers".into(), Guide::Items(vec![Guide::All]))]),
            ),
        ]);
        let guided = normalize_preserving_guided("v1/Pod", changed.clone(), &guide).unwrap();
        assert_eq!(guided, normalize_preserving("v1/Pod", &changed).unwrap());
        assert_eq!(guided["spec"]["containers"][0]["resources"]["limits"]["cpu"], "1");
        let keys: Vec<&String> = guided["metadata"]["labels"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["0", "a", "b"]);
    }

    #[test]
    fn an_unnamed_member_and_an_unlisted_item_are_taken_as_they_are() {
        let guide = Guide::Fields(vec![("spec".into(), Guide::Items(vec![Guide::Skip]))]);
        assert_eq!(guide.field("metadata"), &Guide::Skip);
        assert_eq!(guide.field("spec").item(0), &Guide::Skip);
        assert_eq!(guide.field("spec").item(1), &Guide::All);
        assert_eq!(Guide::All.field("x").item(3), &Guide::All);
    }
}
