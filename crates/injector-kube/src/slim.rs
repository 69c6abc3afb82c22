//! Objects decoded without what no tool reads: `metadata.managedFields` (often half an object)
//! and `status` are skipped while the API server's answer is decoded, so a page of a list never
//! holds them as values.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};
use serde_json::{Map, Value};

/// A list as the API server answers it, its items slimmed.
#[derive(Debug, Deserialize)]
pub struct SlimList {
    /// `continue`, `remainingItemCount`, …
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects, without `status` and `metadata.managedFields`.
    #[serde(default)]
    pub items: Vec<SlimObject>,
}

/// An object without `status` and `metadata.managedFields`.
#[derive(Debug)]
pub struct SlimObject(pub Map<String, Value>);

impl<'de> Deserialize<'de> for SlimObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(Skipping {
                skipped: &["status"],
                metadata: true,
            })
            .map(SlimObject)
    }
}

/// `metadata` without `managedFields`.
struct SlimMetadata(Map<String, Value>);

impl<'de> Deserialize<'de> for SlimMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(Skipping {
                skipped: &["managedFields"],
                metadata: false,
            })
            .map(SlimMetadata)
    }
}

/// A map visitor that skips some keys (decoding them into nothing) and, at the top of an
/// object, slims its `metadata`.
struct Skipping {
    skipped: &'static [&'static str],
    metadata: bool,
}

impl<'de> Visitor<'de> for Skipping {
    type Value = Map<String, Value>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.skipped.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
            } else if self.metadata && key == "metadata" {
                let SlimMetadata(metadata) = map.next_value()?;
                out.insert(key, Value::Object(metadata));
            } else {
                let value: Value = map.next_value()?;
                out.insert(key, value);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn status_and_managed_fields_are_not_kept() {
        let answer = json!({"kind": "PodList", "metadata": {"continue": "next", "remainingItemCount": 7},
            "items": [{"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}], "labels": {"a": "b"}},
                       "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}}]});
        let list: SlimList = serde_json::from_value(answer).expect("decodes");
        assert_eq!(list.metadata.continue_.as_deref(), Some("next"));
        assert_eq!(list.metadata.remaining_item_count, Some(7));
        assert_eq!(
            Value::Object(list.items.into_iter().next().expect("one").0),
            json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}})
        );
    }
}
