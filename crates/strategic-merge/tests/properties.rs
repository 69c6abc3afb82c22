//! Property tests: an empty patch is the identity, and no input makes the merge panic.

// Test helpers report broken setups by panicking.
#![allow(clippy::panic, clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use strategic_merge::{MAX_DEPTH, MergeError, Schema, strategic_merge};

/// Keys that reach real Pod fields and directives, so random documents exercise the merge paths.
const KEYS: &[&str] = &[
    "metadata",
    "spec",
    "labels",
    "finalizers",
    "containers",
    "initContainers",
    "volumes",
    "env",
    "ports",
    "name",
    "containerPort",
    "mountPath",
    "volumeMounts",
    "image",
    "args",
    "tolerations",
    "emptyDir",
    "securityContext",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "$setElementOrder/",
    "unknown",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        Just(json!(80.0)),
        prop::sample::select(vec!["a", "b", "replace", "delete", "merge", "name", "x"])
            .prop_map(|s| Value::String(s.to_owned())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|kvs| {
                let mut m = Map::new();
                for (k, v) in kvs {
                    m.insert(k.to_owned(), v);
                }
                Value::Object(m)
            }),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(KEYS), value()), 0..6).prop_map(|kvs| {
        let mut m = Map::new();
        for (k, v) in kvs {
            m.insert(k.to_owned(), v);
        }
        Value::Object(m)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn empty_patch_is_identity(original in object()) {
        let merged = strategic_merge(&original, &json!({}), Schema::pod()).unwrap();
        prop_assert_eq!(merged, original);
    }

    #[test]
    fn never_panics(original in value(), patch in value()) {
        let _ = strategic_merge(&original, &patch, Schema::pod());
        let _ = strategic_merge(&original, &patch, Schema::pod_spec());
        let _ = strategic_merge(&original, &patch, Schema::container());
    }

    #[test]
    fn never_panics_on_objects(original in object(), patch in object()) {
        let _ = strategic_merge(&original, &patch, Schema::pod());
    }

    #[test]
    fn patch_into_nothing_keeps_no_nulls(patch in object()) {
        // Into an empty original, every patch value is copied with its nulls discarded
        // (unless the whole patch is a `$patch: replace`, which is taken as is).
        prop_assume!(patch.get("$patch").is_none());
        if let Ok(Value::Object(m)) = strategic_merge(&json!({}), &patch, Schema::pod()) {
            prop_assert!(m.values().all(|v| !v.is_null()));
        }
    }
}

#[test]
fn deep_documents_are_an_error_not_a_stack_overflow() {
    let mut deep = json!("leaf");
    for _ in 0..(MAX_DEPTH * 3) {
        deep = json!({ "spec": deep });
    }
    let original = json!({ "spec": { "spec": {} } });
    let err = strategic_merge(&original, &deep, Schema::pod()).unwrap_err();
    // Go would fail on the unknown field first; either way this must be an error.
    assert!(matches!(
        err,
        MergeError::TooDeep(_) | MergeError::FieldNotFound { .. }
    ));
    let err = strategic_merge(&json!({}), &json!({ "x": deep }), Schema::pod()).unwrap_err();
    assert_eq!(err, MergeError::TooDeep(MAX_DEPTH));
}

#[test]
fn non_object_documents_are_rejected() {
    for bad in [json!([]), json!("x"), json!(1)] {
        assert_eq!(
            strategic_merge(&bad, &json!({}), Schema::pod()),
            Err(MergeError::BadJsonDocument)
        );
        assert_eq!(
            strategic_merge(&json!({}), &bad, Schema::pod()),
            Err(MergeError::BadJsonDocument)
        );
    }
}
