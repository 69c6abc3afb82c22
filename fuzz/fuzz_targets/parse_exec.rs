//! Fuzz target: parsing then executing arbitrary templates (with a bounded number of loop
//! iterations) never panics or hangs. The first line of the input is JSON data when it parses.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

fn funcs() -> Arc<gotemplate::FuncMap> {
    static F: OnceLock<Arc<gotemplate::FuncMap>> = OnceLock::new();
    F.get_or_init(|| Arc::new(gotemplate::sprig::funcs())).clone()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, rest) = text.split_once('\n').unwrap_or(("", text));
    let value = serde_json::from_str::<serde_json::Value>(first)
        .map(|j| gotemplate::Value::from_json(&j))
        .unwrap_or_else(|_| {
            gotemplate::Value::from_json(&serde_json::json!({
                "a": 1, "s": "str", "l": [1, "x", null], "m": {"k": "v"}, "n": null
            }))
        });
    let Ok(t) = gotemplate::Template::new("t")
        .shared_funcs(funcs())
        .max_steps(10_000)
        .parse(rest)
    else {
        return;
    };
    let mut out = String::new();
    let _ = t.execute_to(&mut out, &value);
});
