//! The fast path against `serde-saphyr`, construct by construct, and its bail-outs.

use serde_json::{Value, json};

use super::{MAX_DEPTH, parse};
use crate::yaml::parse_with_serde_saphyr;

/// The fast path accepts `text` and agrees with `serde-saphyr` (value, number kinds, key order).
#[track_caller]
fn same(text: &str) -> Value {
    let fast = parse(text).unwrap_or_else(|| panic!("fast path bailed on {text:?}"));
    let slow =
        parse_with_serde_saphyr(text).unwrap_or_else(|e| panic!("serde-saphyr failed on {text:?}: {e}"));
    assert_eq!(fast, slow, "{text:?}");
    assert_eq!(fast.to_string(), slow.to_string(), "{text:?}");
    fast
}

/// The fast path bails on `text`.
#[track_caller]
fn bails(text: &str) {
    assert_eq!(parse(text), None, "{text:?}");
}

#[test]
fn block_mappings_and_sequences() {
    assert_eq!(
        same("a: 1\nb:\n  c: x\n  d:\n  - e\n  -   f: 1\n      g: [h]\n  - - i\n    - j\nk:\n"),
        json!({"a": 1, "b": {"c": "x", "d": ["e", {"f": 1, "g": ["h"]}, ["i", "j"]]}, "k": null})
    );
    same("- a\n-\n- b: \n  c: d\n-\n  - x\n");
    same(
        "a:\n-\nb: 1\n- # c\n  d: 1\n"
            .replace("- # c", "c:\n- # c")
            .as_str(),
    );
    same("é: 1\n$x: 2\n/p: 3\n_u: 4\n(a): 5\n=: 6\na b : 7\n");
    same("  indented: root\n  second: 2\n");
    same("a:\n- x\n- y\nb: 2\n");
    same("- a: |\n    x\n  b: 1\n");
    same("z: 1\nyy: 2\nx: 3\n");
    same("- ");
    same("-");
}

#[test]
fn comments_and_blank_lines() {
    same("# head\n\na: 1 # c\n   # indented comment\n\nb: \"x\" # c\nc: 'y'   # c\nd: # c\n  e: f\ng: a#b\n");
}

#[test]
fn plain_scalars() {
    same(concat!(
        "a: text with spaces\nb: 15090\nc: -7\nd: 0\ne: true\nf: false\ng: null\nh: ~\ni: yes\nj: Off\n",
        "k: 0755\nl: 1.5\nm: 1e3\nnn: 0x1F\no: 2000m\np: 1024Mi\nq: --flag=x:y\nr: $(POD).svc\ns: 1.2.3\n",
        "t: 18446744073709551615\nu: 18446744073709551616\nv: -9223372036854775808\nw: +1\nx: 1_000\nyy: -0\n",
        "z: \"*\"\naa: a:b\nab: ?x\nac: -x\nad: Null\nae: NULL\naf: N\nag: .5\nah: 0o17\nai: é ü\n"
    ));
}

#[test]
fn quoted_scalars() {
    same(concat!(
        "a: \"\"\nb: ''\nc: \"x \\\" \\\\ \\/ \\n \\t \\x41 \\u00e9 \\U0001F600 \\0 \\e\"\nd: 'it''s'\n",
        "e: \"yes\"\nf: '0755'\ng: \"a: b # c\"\n\"h\": 1\n'i j': 2\n\"null\": 3\n'yes': 4\n\"1\": 5\n'01': 6\n"
    ));
}

#[test]
fn literal_block_scalars() {
    same("a: |\n  x\n   y\n\n  z\n\n\nb: |-\n    s\n\nc: |+\n  k\n\n\nd: 1\n");
    same("- |\n x\n-   |-\n   y\n- |+\n  z\n");
    same("a: |\n\n  after blank\nb: |\n  x\n   \n  y\n");
    same("a:\n  b: |  # comment\n    # not a comment\n    ---x\n  c: 1\n");
    same("a: |+\n  x\n\n");
    same("a: |+\n  x\n\n# trailing comment\n\nb: |\n    x\n  # less indented comment\nc: 1\n");
    same("- a: |\n   x\n  b: |-\n    y\n- |\n  z\n");
    same("a: |\n  x\n  \ty\n  \n");
}

#[test]
fn flow_collections() {
    same("a: []\nb: {}\nc: [x, \"y\", 'z', 1, true]\nd: {k: v, \"q\": 'w', nn: 1}\ne: [a,]\n");
    same("annotations: {\n  a.b/c: \"x\",\n  d: \"y\",\n}\nnext: 1\n");
    same("- [a, b]\n- {c: d}\n");
    same(
        "a: [\n  x,  # c\n\n  'y'\n  ]\nb: {\"k\": 1, 'l': [] }\n"
            .replace("[] ", "2 ")
            .as_str(),
    );
    same("a: {\n}\nb: [\n]\n");
    // Entries may sit at the column of the enclosing block collection (not further left).
    same("a: {\nb: c,\n}\n");
    same("- x: [\n  y]\n");
    bails("- x: [\n y]\n");
}

#[test]
fn nested_flow_collections() {
    same("a: [1, [2, []], {b: {c: [d, 'e']}, f: {}}]\n");
    same(concat!(
        "env:\n",
        "- {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n",
        "- {name: CA_ADDR, value: \"istiod.istio-system.svc:15012\"}\n",
        "capabilities: {add: [NET_ADMIN, NET_RAW], drop: [ALL]}\n",
        "ports: [{name: http, containerPort: 15090, protocol: TCP},\n  {name: x, containerPort: 1}]\n",
        "x: {a: [\n  {b: c}]}\n",
    ));
    bails("- x: {a: [\n {b: c}]}\n");
    bails("a: [[1] x]\n");
    bails("a: {[b]: c}\n");
}

#[test]
fn bails_on_constructs_outside_the_subset() {
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: !tag x\n",
        "a: >\n  folded\n",
        "a: >-\n  folded\n",
        "a: |2\n  x\n",
        "a: |-2\n  x\n",
        "a: plain\n  continued\n",
        "a: \"double\n  continued\"\n",
        "a: 'single\n  continued'\n",
        "? complex\n: key\n",
        "[a]: b\n",
        "a:\n\tb: 1\n",
        "\ta: 1\n",
        "a: 1\na: 2\n",
        "a: 1\n\"a\": 2\n",
        "<<: {a: 1}\n",
        "\"<<\": 1\n",
        "%YAML 1.1\na: 1\n",
        "a: 1\n...\n",
        "a: ...\n",
        "a: [...]\n",
        "a: -...\n",
        "yes: 1\n",
        "1: a\n",
        "null: a\n",
        "~: a\n",
        "a: |\nb: 1\n",
        "a: |\n  no final line feed",
        "a: \"\\N\"\n",
        "a: \"\\ud800\"\n",
        "plain scalar document\n",
        "{\"json\": [1, 2]}\n",
        "a: b\r\n",
        "\u{feff}a: b\n",
        "a: \u{85}\n",
    ] {
        bails(text);
    }
}

#[test]
fn bails_on_malformed_input_without_panicking() {
    for text in [
        "a: b: c\n",
        "a: 1\n b: 2\n",
        "a:\n  b: 1\n c: 2\n",
        "- a\nb: 1\n",
        "a: 1\n- b\n",
        "a: [1, 2\n",
        "a: {b: 1\n",
        "a: \"open\n",
        "a: 'open\n",
        "a: ]\n",
        "a: }\n",
        "a: ,\n",
        "a: - b\n",
        "a: -\n",
        "a:b\n",
        ": a\n",
        "a: \"x\" y\n",
        "a: |\n   \n  x\n",
        "-\ta\n",
        "- a\n  b\n",
        "a: \"\\",
        "a: \"\\u12",
        "a: '",
        ":",
        "\"",
        "'a",
        "a: [",
        "a: {",
        "a: [a,",
        "a: {k: \"é",
    ] {
        bails(text);
        // serde-saphyr rejects (or reads differently) what we refuse; either way no panic here.
        let _ = parse_with_serde_saphyr(text);
    }
}

#[test]
fn depth_limit() {
    let nested = |depth: usize| {
        let mut text = String::new();
        for level in 0..depth {
            text.push_str(&" ".repeat(level));
            text.push_str("k:\n");
        }
        text.push_str(&" ".repeat(depth));
        text.push_str("v: 1\n");
        text
    };
    // serde-saphyr recurses deeper per level than the test thread's stack allows in debug builds.
    same(&nested(40));
    assert!(parse(&nested(MAX_DEPTH - 1)).is_some());
    bails(&nested(MAX_DEPTH));
    bails(&nested(2_000));
    let sequences = "- ".repeat(100_000) + "x\n";
    bails(&sequences);
    let flows = |depth: usize| format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
    assert!(parse(&flows(MAX_DEPTH - 1)).is_some());
    bails(&flows(MAX_DEPTH));
    bails(&flows(100_000));
}

#[test]
fn every_prefix_of_a_template_is_safe() {
    let text =
        "a:\n  b: [x, {y: 1}]\n  c: |\n    z\n  d: \"q\\u00e9\"\n- e: 'f''g'\n  h: {\n    i: j,\n  }\n";
    for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
        let prefix = &text[..end];
        if let Some(fast) = parse(prefix) {
            assert_eq!(Ok(fast), parse_with_serde_saphyr(prefix), "{prefix:?}");
        }
    }
}
