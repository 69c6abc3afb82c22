//! The document structure: block mappings with sorted keys, indentless block
//! sequences, `{}`/`[]` for empty collections, simple and complex (`? `)
//! keys, and the encoder's choice of scalar style (`encode.go`).

use crate::resolve::needs_quotes;
use crate::scalar::{Style, analyze, select_style};
use crate::writer::Writer;
use serde_json::Value;

/// Longest key (in bytes) the emitter writes as a simple `key: value`.
const MAX_SIMPLE_KEY: usize = 128;

/// The contexts `yaml_emitter_emit_node` records for the node being written.
#[derive(Clone, Copy)]
struct Context {
    /// Directly inside a mapping (as key or value).
    mapping: bool,
    /// A key written as `key:`.
    simple_key: bool,
}

/// Emit one document holding `value`.
pub(crate) fn document(value: &Value) -> Vec<u8> {
    let mut w = Writer::new();
    node(
        &mut w,
        value,
        Context {
            mapping: false,
            simple_key: false,
        },
    );
    // Document end: finish the last line.
    w.write_indent();
    w.out
}

/// The style go-yaml's encoder asks for when marshalling a Go string.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if needs_quotes(s) {
        Style::DoubleQuoted
    } else {
        Style::Plain
    }
}

fn node(w: &mut Writer, value: &Value, ctx: Context) {
    match value {
        Value::Null => scalar(w, b"null", Style::Plain, ctx),
        Value::Bool(true) => scalar(w, b"true", Style::Plain, ctx),
        Value::Bool(false) => scalar(w, b"false", Style::Plain, ctx),
        Value::Number(n) => scalar(w, crate::number::format(n).as_bytes(), Style::Plain, ctx),
        Value::String(s) => {
            let s = crate::jsontext::read_back(s);
            scalar(w, s.as_bytes(), string_style(&s), ctx);
        }
        Value::Array(items) if items.is_empty() => empty_flow(w, b"[", b"]"),
        Value::Object(map) if map.is_empty() => empty_flow(w, b"{", b"}"),
        Value::Array(items) => sequence(w, items, ctx),
        Value::Object(map) => {
            let entries: Vec<(&String, &Value)> = map.iter().collect();
            mapping(w, crate::sort::sort_keys(entries, |(k, _)| k.as_str()));
        }
    }
}

fn empty_flow(w: &mut Writer, open: &[u8], close: &[u8]) {
    w.write_indicator(open, true, true, false);
    w.write_indicator(close, false, false, false);
}

fn scalar(w: &mut Writer, value: &[u8], requested: Style, ctx: Context) {
    let analysis = analyze(value);
    let style = select_style(requested, &analysis, value.len(), ctx.simple_key);
    w.increase_indent(true, false);
    let allow_breaks = !ctx.simple_key;
    match style {
        Style::Plain => w.write_plain(value, allow_breaks),
        Style::SingleQuoted => w.write_single_quoted(value, allow_breaks),
        Style::DoubleQuoted => w.write_double_quoted(value, allow_breaks),
        Style::Literal => w.write_literal(value),
    }
    w.pop_indent();
}

fn sequence(w: &mut Writer, items: &[Value], ctx: Context) {
    let indentless = ctx.mapping && !w.indention;
    w.increase_indent(false, indentless);
    for item in items {
        w.write_indent();
        w.write_indicator(b"-", true, false, true);
        node(
            w,
            item,
            Context {
                mapping: false,
                simple_key: false,
            },
        );
    }
    w.pop_indent();
}

fn mapping(w: &mut Writer, entries: Vec<(&String, &Value)>) {
    w.increase_indent(false, false);
    let in_map = Context {
        mapping: true,
        simple_key: false,
    };
    for (key, value) in entries {
        w.write_indent();
        let read = crate::jsontext::read_back(key);
        let simple = !analyze(read.as_bytes()).multiline && read.len() <= MAX_SIMPLE_KEY;
        let key_node = Value::String(key.clone());
        if simple {
            node(
                w,
                &key_node,
                Context {
                    mapping: true,
                    simple_key: true,
                },
            );
            w.write_indicator(b":", false, false, false);
        } else {
            w.write_indicator(b"?", true, false, true);
            node(w, &key_node, in_map);
            w.write_indent();
            w.write_indicator(b":", true, false, true);
        }
        node(w, value, in_map);
    }
    w.pop_indent();
}
