//! The `apiVersion` and `request.uid` of an AdmissionReview that does not decode, read as far
//! as the body allows.
//!
//! The API server checks that a response carries the request's `uid` (and its version): a
//! denial with an empty `uid` is reported as a uid mismatch and our message is lost. So when the
//! strict decode fails (invalid JSON or UTF-8 further on, a field of the wrong type, a body cut
//! short), the body is read once more, leniently: a streaming pass that keeps these two strings
//! as soon as it meets them and skips everything else without building it, so an error after
//! them does not lose them.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// What a lenient pass found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ReviewIds {
    /// Top-level `apiVersion`, when it is a string met before any error.
    pub api_version: Option<String>,
    /// `request.uid`, when it is a string met before any error.
    pub uid: Option<String>,
}

/// Reads `apiVersion` and `request.uid` from `body`, ignoring any error after them.
pub(crate) fn read_review_ids(body: &[u8]) -> ReviewIds {
    let mut ids = ReviewIds::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    // The error is the strict decode's business; whatever was met before it is kept.
    let _ = Review(&mut ids).deserialize(&mut de);
    ids
}

/// A string value, or `None` for any other JSON value (skipped without building it).
fn string_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<String>, A::Error> {
    map.next_value_seed(StringOrSkip)
}

struct StringOrSkip;

impl<'de> DeserializeSeed<'de> for StringOrSkip {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StringOrSkip {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// The review object: `apiVersion` is kept, `request` is entered, the rest skipped.
struct Review<'a>(&'a mut ReviewIds);

impl<'de> DeserializeSeed<'de> for Review<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Review<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AdmissionReview object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => self.0.api_version = string_value(&mut map)?,
                "request" => map.next_value_seed(RequestIds(&mut *self.0))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `request` object: `uid` is kept, the rest skipped (a non-object is skipped whole).
struct RequestIds<'a>(&'a mut ReviewIds);

impl<'de> DeserializeSeed<'de> for RequestIds<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RequestIds<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AdmissionReview request")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "uid" {
                self.0.uid = string_value(&mut map)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(body: &[u8]) -> (Option<String>, Option<String>) {
        let ids = read_review_ids(body);
        (ids.api_version, ids.uid)
    }

    #[test]
    fn uid_before_a_syntax_error_is_kept() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-7","object":{"metadata":{,}}}}"#;
        assert_eq!(
            ids(body),
            (Some("admission.k8s.io/v1".into()), Some("u-7".into()))
        );
    }

    #[test]
    fn uid_before_invalid_utf8_and_a_cut_body_is_kept() {
        let mut body =
            br#"{"apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"u-8","name":""#.to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        body.extend_from_slice(br#""}}"#);
        assert_eq!(ids(&body).1.as_deref(), Some("u-8"));
        let cut = br#"{"request":{"uid":"u-9","object":{"spec":"#;
        assert_eq!(ids(cut), (None, Some("u-9".into())));
    }

    #[test]
    fn fields_of_other_types_and_nested_uids_are_not_taken() {
        let body = br#"{"apiVersion":7,"request":{"object":{"uid":"not-this"},"uid":["x"]}}"#;
        assert_eq!(ids(body), (None, None));
        assert_eq!(ids(br#"{"request":"text"}"#), (None, None));
        assert_eq!(ids(b"[1,2]"), (None, None));
        assert_eq!(ids(b""), (None, None));
    }

    #[test]
    fn uid_after_the_error_is_not_invented() {
        assert_eq!(ids(br#"{"request":{"object":{,},"uid":"late"}}"#), (None, None));
    }
}
