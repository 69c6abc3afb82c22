//! Differential test against Go: every case of `tests/oracle/cases.json` must
//! print exactly as `tools/goyaml-oracle` (the real sigs.k8s.io/yaml +
//! go-yaml v2 code) printed it into `tests/oracle/expected.json`.
#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::path::PathBuf;

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracle")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn oracle_cases_match_go_byte_for_byte() {
    let cases = load("cases.json");
    let expected = load("expected.json");
    let (mut passed, mut failed, mut go_errors) = (0, 0, 0);
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let want = match &expected[name] {
            Value::String(s) => s,
            Value::Object(err) => {
                // Go's path rejects this input; nothing to compare.
                println!(
                    "skip {name}: Go fails: {}",
                    err.get("error").and_then(Value::as_str).unwrap_or("?")
                );
                go_errors += 1;
                continue;
            }
            other => panic!("no expected output for {name}: {other}"),
        };
        let got = goyaml::to_string(&case["json"]);
        if &got == want {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {name}\n--- want\n{want}--- got\n{got}---");
        }
    }
    println!("{passed} passed, {failed} failed ({go_errors} skipped: Go rejects the input)");
    assert_eq!(failed, 0, "{failed} oracle cases differ from Go");
}
