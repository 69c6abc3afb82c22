//! Fuzz target: a strategic merge of two arbitrary JSON documents (the input's first line is the
//! original, the rest the patch) with the Pod, PodSpec and Container schemas never panics or
//! hangs, and what it returns is a JSON object.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use strategic_merge::{Schema, strategic_merge};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, rest) = text.split_once('\n').unwrap_or((text, "{}"));
    let (Ok(original), Ok(patch)) = (
        serde_json::from_str::<Value>(first),
        serde_json::from_str::<Value>(rest),
    ) else {
        return;
    };
    for schema in [Schema::pod(), Schema::pod_spec(), Schema::container()] {
        if let Ok(merged) = strategic_merge(&original, &patch, schema) {
            assert!(merged.is_object(), "a merge returned {merged}");
        }
    }
});
