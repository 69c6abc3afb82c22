//! Differential tests of the YAML fast path (`injector_core::yaml::fast::parse`) against
//! `serde-saphyr` (`parse_with_serde_saphyr`): wherever the fast path accepts a document, both
//! give the same `serde_json::Value`, compared with `==` and as JSON text (so number kinds and key
//! order count too).
//!
//! Corpora: a rendered Istio sidecar template (which the fast path must accept), every YAML file
//! and golden `*.injected` output of Istio's corpus (as the `istio-corpus` crate finds it: the
//! shared copy, else the pinned Go module's; skipped with a message when missing), random JSON
//! values written as block YAML by `goyaml` (go-yaml v2 style, what `sigs.k8s.io/yaml` writes),
//! and random values written as nested flow collections (plain or quoted scalars, line breaks).

// Tests report failures by panicking.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

use injector_core::yaml::{fast, parse_with_serde_saphyr, split_documents};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Whether the fast path accepts `text`; when it does, asserts that it agrees with serde-saphyr.
#[track_caller]
fn check(text: &str, origin: &str) -> bool {
    let Some(fast) = fast::parse(text) else {
        return false;
    };
    let slow = parse_with_serde_saphyr(text)
        .unwrap_or_else(|e| panic!("{origin}: fast path accepted what serde-saphyr rejects: {e}\n{text}"));
    assert_eq!(fast, slow, "{origin}: values differ\n{text}");
    assert_eq!(
        fast.to_string(),
        slow.to_string(),
        "{origin}: JSON texts differ\n{text}"
    );
    true
}

const RENDERED: &str = include_str!("data/istio-sidecar-rendered.yaml");

/// The project's embedded default template (`injector-engine/defaults/injector-config.yaml`)
/// rendered for the load benchmark's pod (`bench/webhook-load.sh`): it writes env entries, ports
/// and volumes as nested flow mappings.
const RENDERED_DEFAULT: &str = include_str!("data/default-sidecar-rendered.yaml");

#[track_caller]
fn assert_accepted(rendered: &str, origin: &str) {
    let documents = split_documents(rendered).expect("splits");
    let document = documents.iter().find(|d| !d.is_blank()).expect("a document");
    assert!(
        check(document.text, origin),
        "the fast path must accept the {origin}"
    );
}

#[test]
fn accepts_the_rendered_istio_sidecar_template() {
    assert_accepted(RENDERED, "rendered Istio sidecar template");
}

#[test]
fn accepts_the_rendered_embedded_default_template() {
    assert_accepted(RENDERED_DEFAULT, "rendered embedded default template");
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "injected") {
            out.push(path);
        }
    }
}

#[test]
fn istio_corpus() {
    let Some(corpus) = istio_corpus::istio_or_skip("yaml_fast: the YAML files of Istio's corpus") else {
        return;
    };
    let mut paths = Vec::new();
    files(&corpus.root, &mut paths);
    let (mut documents, mut accepted, mut bytes, mut accepted_bytes) = (0, 0, 0, 0);
    for path in &paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(split) = split_documents(&text) else {
            continue;
        };
        for document in split.iter().filter(|d| !d.is_blank()) {
            documents += 1;
            bytes += document.text.len();
            let origin = format!("{} document {}", path.display(), document.index);
            if check(document.text, &origin) {
                accepted += 1;
                accepted_bytes += document.text.len();
            }
        }
    }
    eprintln!(
        "Istio corpus ({}): {} files, fast path accepted {accepted} of {documents} documents ({accepted_bytes} of {bytes} bytes)",
        corpus.describe(),
        paths.len()
    );
    assert!(
        documents > 100,
        "the corpus looks incomplete: {documents} documents"
    );
}

/// Strings that resolve to something else when plain, or need quoting, or are just awkward.
const TRICKY: &[&str] = &[
    "",
    " a",
    "a ",
    "yes",
    "No",
    "ON",
    "y",
    "n",
    "~",
    "null",
    "NULL",
    "true",
    "False",
    "0755",
    "0x1F",
    "0o17",
    "1e3",
    "1.5",
    ".inf",
    "-.Inf",
    ".nan",
    "+1",
    "-0",
    "1_000",
    "12",
    "-12",
    "007",
    "a: b",
    "a:b",
    "#x",
    "a #b",
    "- a",
    "-a",
    "? a",
    "[a]",
    "{a}",
    "&a",
    "*a",
    "!a",
    "|",
    ">",
    "'",
    "\"",
    "\\",
    "%x",
    "@x",
    "`x",
    "é",
    "日本",
    "😀",
    "a\nb",
    "a\n",
    "\n",
    "a\tb",
    "2000m",
    "1024Mi",
    "--domain",
    "$(POD_NAMESPACE).svc",
    "1.2.3",
    "<<",
    "---",
    "...",
    "a,b",
    "a]",
    "k=v",
    "http://x:1/y",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::sample::select(TRICKY).prop_map(|s| Value::String(s.to_owned())),
        3 => "[a-zA-Z][a-zA-Z0-9 ._/-]{0,12}".prop_map(Value::String),
        1 => "\\PC{0,8}".prop_map(Value::String),
        1 => ".{0,6}".prop_map(Value::String),
        2 => any::<i64>().prop_map(|n| Value::Number(n.into())),
        1 => any::<u64>().prop_map(|n| Value::Number(n.into())),
        1 => (-1e6f64..1e6).prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => "[a-z][a-zA-Z0-9.-]{0,10}(/[a-z]{1,6})?",
        1 => prop::sample::select(TRICKY).prop_map(str::to_owned),
        1 => "\\PC{0,6}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A top-level mapping, as manifests are.
fn document() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), value()), 1..8)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
}

/// Runs 2,000 documents written by `write` from `strategy` through [`check`] (the fast path must
/// agree with serde-saphyr wherever it accepts) and says how many the fast path accepted, as
/// `(accepted, total)`.
fn acceptance<S: Strategy>(strategy: S, origin: &str, write: impl Fn(S::Value) -> String) -> (usize, usize) {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let accepted = std::cell::Cell::new(0usize);
    let total = std::cell::Cell::new(0usize);
    runner
        .run(&strategy, |value| {
            total.set(total.get() + 1);
            if check(&write(value), origin) {
                accepted.set(accepted.get() + 1);
            }
            Ok(())
        })
        .expect("fast path agrees with serde-saphyr");
    let (accepted, total) = (accepted.get(), total.get());
    eprintln!(
        "random {origin}s: fast path accepted {accepted} of {total} ({:.1}%)",
        accepted as f64 * 100.0 / total as f64
    );
    (accepted, total)
}

#[test]
fn random_documents_written_by_goyaml() {
    let (accepted, total) = acceptance(document(), "goyaml document", |value| goyaml::to_string(&value));
    // Mostly the tricky keys (booleans, numbers, indicators) send a document to serde-saphyr.
    assert!(
        accepted as f64 > 0.6 * total as f64,
        "acceptance rate too low: {accepted} of {total}"
    );
}

/// Hand-written block YAML variations that goyaml never writes: compact nesting, unindented
/// sequences, comments, literal scalars with every chomping, flow collections.
fn variant_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("a: 1".to_owned()),
        Just("- x".to_owned()),
        Just("- k: v".to_owned()),
        Just("  b: 'q''s'".to_owned()),
        Just("  - \"e\\u00e9\"".to_owned()),
        Just("c:".to_owned()),
        Just("d: |".to_owned()),
        Just("e: |-".to_owned()),
        Just("f: |+".to_owned()),
        Just("    text".to_owned()),
        Just("".to_owned()),
        Just("  # comment".to_owned()),
        Just("g: [h, 'i', 2] # c".to_owned()),
        Just("j: {".to_owned()),
        Just("  k: \"l\",".to_owned()),
        Just("}".to_owned()),
        Just("  m: yes".to_owned()),
        Just("n0: 0755".to_owned()),
        Just("    - - z".to_owned()),
    ];
    prop::collection::vec(line, 1..12).prop_map(|lines| lines.join("\n") + "\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random line soups: mostly invalid YAML. Whatever the fast path accepts, serde-saphyr reads
    /// the same way; it never panics.
    #[test]
    fn random_line_soups(text in variant_text()) {
        check(&text, "line soup");
    }
}

/// `value` in flow style: collections as `[…]`/`{…}` (nested), strings plain or double-quoted as
/// `quote` says, other scalars as their JSON text, and a line break (indented two columns) after
/// a comma wherever `breaks` says.
fn write_flow(
    value: &Value,
    quote: &mut impl Iterator<Item = bool>,
    breaks: &mut impl Iterator<Item = bool>,
    out: &mut String,
) {
    let separator = |out: &mut String, breaks: &mut dyn Iterator<Item = bool>| {
        out.push_str(if breaks.next().unwrap_or(false) {
            ",\n  "
        } else {
            ", "
        });
    };
    match value {
        Value::String(text) if !quote.next().unwrap_or(true) => out.push_str(text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    separator(out, breaks);
                }
                write_flow(item, quote, breaks, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    separator(out, breaks);
                }
                write_flow(&Value::String(key.clone()), quote, breaks, out);
                out.push_str(": ");
                write_flow(item, quote, breaks, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[test]
fn random_nested_flow_collections() {
    let strategy = (
        document(),
        prop::collection::vec(any::<bool>(), 64),
        prop::collection::vec(prop::bool::weighted(0.1), 64),
    );
    let (accepted, total) = acceptance(strategy, "flow-style document", |(document, quotes, breaks)| {
        let mut quote = quotes.into_iter().cycle();
        let mut breaks = breaks.into_iter().cycle();
        let mut text = String::new();
        for (key, value) in document.as_object().into_iter().flatten() {
            text.push_str(&serde_json::to_string(key).unwrap_or_default());
            text.push_str(": ");
            write_flow(value, &mut quote, &mut breaks, &mut text);
            text.push('\n');
        }
        text
    });
    // Plain tricky strings and JSON escapes YAML reads differently send many to serde-saphyr, but
    // nested flow collections must be read by the fast path often.
    assert!(
        accepted * 5 > total,
        "acceptance rate too low: {accepted} of {total}"
    );
}
