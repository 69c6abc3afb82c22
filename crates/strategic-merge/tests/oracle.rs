//! Differential test against Kubernetes' Go implementation.
//!
//! `tests/oracle/cases/*.json` hold `{name, original, patch}` cases; `tests/oracle/expected/`
//! holds what `strategicpatch.StrategicMergePatch(original, patch, corev1.Pod{})` returned for
//! each (`tools/smp-oracle/regen.sh`). Results are compared as JSON values with Go's number
//! semantics (map key order is free, **list order is not**); errors by presence and exact text.

// A test harness reports broken fixtures by panicking.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use serde_json::Value;
use strategic_merge::{Schema, strategic_merge};

/// JSON equality where maps ignore key order and numbers compare by value (Go prints `1.0` as `1`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn read(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn oracle() {
    // SMP_ORACLE_DIR points at another corpus (with `cases/` and `expected/`) for ad-hoc fuzzing.
    let root = std::env::var_os("SMP_ORACLE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle"),
        std::path::PathBuf::from,
    );
    let mut files: Vec<_> = fs::read_dir(root.join("cases"))
        .expect("cases dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let (mut passed, mut skipped, mut failed) = (0usize, 0usize, Vec::new());
    for file in files {
        let file_name = file.file_name().expect("file name");
        let expected = read(&root.join("expected").join(file_name));
        let Value::Array(cases) = read(&file) else {
            panic!("{}: not an array", file.display())
        };
        for case in cases {
            let name = format!(
                "{}/{}",
                file_name.to_string_lossy().trim_end_matches(".json"),
                case["name"].as_str().expect("case name")
            );
            let want = expected
                .get(case["name"].as_str().unwrap_or_default())
                .unwrap_or_else(|| panic!("{name}: no expectation; run tools/smp-oracle/regen.sh"));
            if want["nondeterministic"] == Value::Bool(true) {
                // Go's result depends on its random map iteration order here.
                skipped += 1;
                continue;
            }
            let got = strategic_merge(&case["original"], &case["patch"], Schema::pod());
            let verdict = match (got, want["error"].as_str()) {
                (Ok(v), None) if same(&v, &want["result"]) => Ok(()),
                (Ok(v), None) => Err(format!(
                    "result differs\n  want: {}\n  got:  {}",
                    want["result"], v
                )),
                (Ok(v), Some(e)) => Err(format!("want error {e:?}, got {v}")),
                (Err(e), None) => Err(format!("unexpected error {:?}", e.to_string())),
                (Err(e), Some(w)) if e.to_string().trim() == w => Ok(()),
                (Err(e), Some(w)) => Err(format!(
                    "error text differs\n  want: {w:?}\n  got:  {:?}",
                    e.to_string()
                )),
            };
            match verdict {
                Ok(()) => passed += 1,
                Err(why) => failed.push(format!("{name}: {why}")),
            }
        }
    }
    for f in &failed {
        eprintln!("FAIL {f}");
    }
    if skipped > 0 {
        println!("{skipped} skipped (nondeterministic in Go)");
    }
    println!("{passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "{passed} passed, {} failed", failed.len());
}
