//! Differential test against Go: every case of `tests/oracle/cases.json` must
//! print exactly as `tools/goyaml-oracle` (the real sigs.k8s.io/yaml +
//! go-yaml v2 code) printed it into `tests/oracle/expected.json`.
#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::path::PathBuf;

/// The corpus directory: `tests/oracle`, or `$GOYAML_ORACLE_DIR` for an
/// ad-hoc corpus made with `tools/goyaml-oracle` (same file names).
fn load(name: &str) -> Value {
    let dir = match std::env::var_os("GOYAML_ORACLE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle"),
    };
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn oracle_cases_match_go_byte_for_byte() {
    let cases = load("cases.json");
    let expected = load("expected.json");
    let (mut passed, mut failed, mut go_errors, mut not_comparable) = (0, 0, 0, 0);
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let want = match &expected[name] {
            Value::String(s) => s,
            Value::Object(err) => {
                // Go's path rejects this input: so must try_to_string.
                let go = err.get("error").and_then(Value::as_str).unwrap_or("?");
                if go.starts_with("nondeterministic") {
                    // Go prints these keys in an order that varies between
                    // runs (the natural order is not transitive for them).
                    println!("{name}: not comparable: {go}");
                    not_comparable += 1;
                    continue;
                }
                match goyaml::try_to_string(&case["json"]) {
                    Err(e) => {
                        println!("{name}: both fail: Go: {go}; goyaml: {e}");
                        go_errors += 1;
                        passed += 1;
                    }
                    Ok(got) => {
                        failed += 1;
                        println!("FAIL {name}: Go fails ({go}) but goyaml printed\n{got}---");
                    }
                }
                continue;
            }
            other => panic!("no expected output for {name}: {other}"),
        };
        let got = match goyaml::try_to_string(&case["json"]) {
            Ok(got) => got,
            Err(e) => {
                failed += 1;
                println!("FAIL {name}: Go prints it but goyaml fails: {e}");
                continue;
            }
        };
        if &got == want {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {name}\n--- want\n{want}--- got\n{got}---");
        }
    }
    println!(
        "{passed} passed, {failed} failed (of the passed, {go_errors} are inputs Go and goyaml both reject; \
         {not_comparable} not comparable: Go's key order varies between runs)"
    );
    assert_eq!(failed, 0, "{failed} oracle cases differ from Go");
}
