//! Ad-hoc differential testing against Go: when `GOTEMPLATE_DIFF_CASES` (JSON lines of
//! `{"template": ..., "data": ...}`) and `GOTEMPLATE_DIFF_EXPECTED` (JSON lines of Go's
//! `{"output": ..., "error": ...}`, same order) are set, renders every case and prints the
//! mismatches. Without them the test does nothing. Used with randomly generated templates to
//! find cases worth adding to the oracle corpus.

use gotemplate::{Template, Value, sprig};

#[test]
fn differential_against_go() {
    let (Some(cases), Some(expected)) = (
        std::env::var_os("GOTEMPLATE_DIFF_CASES"),
        std::env::var_os("GOTEMPLATE_DIFF_EXPECTED"),
    ) else {
        return;
    };
    let cases = std::fs::read_to_string(cases).unwrap_or_default();
    let expected = std::fs::read_to_string(expected).unwrap_or_default();
    let funcs = std::sync::Arc::new(sprig::funcs());
    let (mut same, mut diff) = (0, 0);
    for (c, e) in cases.lines().zip(expected.lines()) {
        let c: serde_json::Value = serde_json::from_str(c).unwrap_or_default();
        let e: serde_json::Value = serde_json::from_str(e).unwrap_or_default();
        let text = c["template"].as_str().unwrap_or("");
        let (out, err) = match Template::new("t")
            .shared_funcs(funcs.clone())
            .max_steps(100_000)
            .parse(text)
        {
            Err(e) => (String::new(), Some(e.to_string())),
            Ok(t) => {
                let mut out = String::new();
                let r = t.execute_to(&mut out, &Value::from_json(&c["data"]));
                (out, r.err().map(|e| e.to_string()))
            }
        };
        if out == e["output"].as_str().unwrap_or("") && err.as_deref() == e["error"].as_str() {
            same += 1;
        } else {
            diff += 1;
            eprintln!(
                "DIFF {text:?}\n  go:   {:?} {:?}\n  rust: {out:?} {err:?}",
                e["output"], e["error"]
            );
        }
    }
    eprintln!("{same} same, {diff} different");
}
