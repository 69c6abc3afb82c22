//! Fuzz target: the YAML reader (document splitting, the fast path, serde-saphyr) never panics
//! or hangs, and wherever the fast path accepts a document it agrees with serde-saphyr.
#![no_main]

use injector_core::yaml::{fast, parse_documents, parse_with_serde_saphyr, split_documents};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_documents(text);
    let Ok(documents) = split_documents(text) else {
        return;
    };
    for document in documents {
        let Some(value) = fast::parse(document.text) else {
            continue;
        };
        match parse_with_serde_saphyr(document.text) {
            Ok(reference) => {
                assert_eq!(value, reference, "the fast path disagrees with serde-saphyr:\n{}", document.text);
                assert_eq!(value.to_string(), reference.to_string(), "JSON texts differ:\n{}", document.text);
            }
            Err(error) => panic!("the fast path accepted what serde-saphyr rejects ({error}):\n{}", document.text),
        }
    }
});
