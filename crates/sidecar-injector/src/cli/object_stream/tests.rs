use std::io::Cursor;

use serde_json::json;

use super::*;
use crate::cli::input::{Source, objects};

/// Every object the reader gives (all kinds wanted), as (place, value).
fn streamed(text: &str, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<(String, Value)>, String> {
    let mut reader = Reader::new(Cursor::new(text.as_bytes().to_vec()));
    let mut found = Vec::new();
    let documents = reader
        .run(wanted, &mut |place, value, _| {
            found.push((format!("s: {place}"), value));
            Ok(())
        })
        .map_err(|e| e.named("s").to_string())?;
    if documents == 0 {
        return Err("s: no YAML documents found".to_owned());
    }
    Ok(found)
}

/// What `input::objects` gives for the same text.
fn whole(text: &str) -> Result<Vec<(String, Value)>, String> {
    let source = Source {
        name: "s".to_owned(),
        text: text.to_owned(),
    };
    objects(&source)
        .map(|objects| objects.into_iter().map(|o| (o.place, o.value)).collect())
        .map_err(|e| e.to_string())
}

fn same(text: &str) {
    let all = |_: &str| true;
    assert_eq!(streamed(text, &all), whole(text), "{text}");
}

const KUBECTL: &str = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: shop\n    labels:\n      istio-injection: enabled\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    annotations:\n      note: |\n        - not an item\n        items:\n    name: web\n    namespace: shop\n  spec:\n    template:\n      spec:\n        containers:\n        - name: a\n          image: a\n# a comment\n- kind: Pod\n  metadata: {name: p, namespace: shop}\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";

#[test]
fn a_kubectl_snapshot_is_read_item_by_item_as_a_whole_parse_reads_it() {
    same(KUBECTL);
    let found = streamed(KUBECTL, &|_| true).expect("reads");
    assert_eq!(found.len(), 3);
    assert_eq!(found[1].0, "s: document 1, item 2");
    assert_eq!(
        found[1].1["metadata"]["annotations"]["note"],
        "- not an item\nitems:\n"
    );
}

#[test]
fn layouts_that_are_not_streamed_read_the_same() {
    for text in [
        // items indented under their key, the kind first, and another document after
        "kind: List\napiVersion: v1\nitems:\n  - kind: Pod\n    metadata: {name: a}\n  -\n    kind: Pod\n    metadata: {name: b}\n---\nkind: Namespace\nmetadata: {name: x}\n",
        // not a List: the items are not objects of the stream
        "kind: PodList\nitems:\n- kind: Pod\n  metadata: {name: a}\n",
        // items that are null, then a List in flow style, JSON
        "kind: List\nitems:\nmetadata: {}\n---\n{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}]}\n",
        // an empty item, a scalar item, a nested sequence
        "kind: List\nitems:\n-\n- x\n- - y\n  - z\n",
        // a multi-line scalar (the fast path refuses it: parsed by serde-saphyr alone)
        "items:\n- kind: ConfigMap\n  data:\n    a: \"one\n      two\"\nkind: List\n",
        // separators with comments, blank documents, CRLF
        "--- # first\n\n---\r\nkind: List\r\nitems:\r\n- kind: Pod\r\n  metadata: {name: a}\r\n---\n# only a comment\n",
        // a top-level literal block that holds `items:` at its start
        "|\nitems:\n- a\n",
        // two `items` keys: the whole document's error
        "kind: List\nitems:\n- a\nitems:\n- b\n",
    ] {
        same(text);
    }
}

#[test]
fn errors_name_the_file_and_document() {
    for text in [
        "kind: List\nitems:\n- kind: Pod\n  metadata: [\n",
        "a: 1\n--- b\n",
        "",
        "# nothing\n",
    ] {
        let streamed = streamed(text, &|_| true).expect_err("bad");
        let whole = whole(text).expect_err("bad");
        assert!(streamed.starts_with("s: "), "{streamed}");
        assert_eq!(
            streamed.split(':').next(),
            whole.split(':').next(),
            "{streamed} / {whole}"
        );
    }
    let item = streamed(&KUBECTL.replace("name: web", "name: [web"), &|_| true).expect_err("bad");
    assert!(item.starts_with("s: document 1 (starting at line 9)"), "{item}");
}

#[test]
fn unwanted_kinds_are_skipped_and_the_rest_keep_their_places() {
    let namespaces = streamed(KUBECTL, &|kind| kind == "Namespace").expect("reads");
    assert_eq!(
        namespaces,
        [(
            "s: document 1, item 1".to_owned(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}})
        )]
    );
    // A malformed object whose kind line says it is not wanted is not parsed.
    let broken = KUBECTL.replace("name: web", "name: [web");
    let pods = streamed(&broken, &|kind| kind == "Pod").expect("the broken Deployment is skipped");
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].0, "s: document 1, item 3");
}

#[test]
fn the_kind_line_is_read_only_when_certain() {
    assert_eq!(sniff_kind("kind: Pod\n", 0), Some("Pod"));
    assert_eq!(sniff_kind("  kind: \"Pod\" # c\n  x: 1\n", 2), Some("Pod"));
    assert_eq!(sniff_kind("kind: Pod\nkind: Job\n", 0), None);
    assert_eq!(sniff_kind("kind: !!str Pod\n", 0), None);
    assert_eq!(sniff_kind("kind:\n  Pod\n", 0), None);
    assert_eq!(sniff_kind("a:\n  kind: Pod\n", 0), None);
    assert!(is_items_key("items:\n") && is_items_key("items:   # the objects\r\n"));
    assert!(!is_items_key("items: []\n") && !is_items_key(" items:\n") && !is_items_key("items:#x\n"));
}
