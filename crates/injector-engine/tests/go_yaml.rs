//! The `toYaml` emitter against Go: `tests/data/go-yaml-cases.json` holds JSON values and what
//! `sigs.k8s.io/yaml` v1.6.0 (`yaml.Marshal` of the decoded value, as Istio's `toYaml` does)
//! wrote for them: quoting rules, key order, line folding, block scalars, numbers.
//!
//! Regenerate (needs Go and the module cache or proxy) with
//! `cd tests/data/go-yaml-gen && go build -o /tmp/go-yaml-gen . && /tmp/go-yaml-gen < cases.jsonl > ../go-yaml-cases.json`.

#![allow(clippy::panic, clippy::unwrap_used)] // a test harness: failing loudly is the point

use injector_engine::render::yaml::to_yaml;

#[test]
fn yaml_matches_go() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/go-yaml-cases.json");
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut failures = vec![];
    for case in &cases {
        let input = case["json"].as_str().unwrap();
        let want = case["yaml"].as_str().unwrap();
        let value: serde_json::Value = serde_json::from_str(input).unwrap();
        let got = to_yaml(&value);
        if got != want {
            failures.push(format!("{input}\n  want: {want:?}\n  got:  {got:?}"));
        }
    }
    eprintln!(
        "{} of {} YAML cases match Go",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
