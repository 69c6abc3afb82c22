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

/// One step of the emission; the work list replaces recursion so that any
/// nesting depth is safe.
enum Task<'a> {
    /// Write a node.
    Node(&'a Value, Context),
    /// Write `- ` and queue the item.
    SeqItem(&'a Value),
    /// Write the key and `:`, and queue the value.
    MapEntry(&'a str, &'a Value),
    /// Restore the indentation of an enclosing collection.
    PopIndent,
}

/// Emit one document holding `value`.
pub(crate) fn document(value: &Value) -> Vec<u8> {
    let mut w = Writer::new();
    let mut tasks = vec![Task::Node(
        value,
        Context {
            mapping: false,
            simple_key: false,
        },
    )];
    while let Some(task) = tasks.pop() {
        match task {
            Task::Node(value, ctx) => node(&mut w, value, ctx, &mut tasks),
            Task::SeqItem(item) => {
                w.write_indent();
                w.write_indicator(b"-", true, false, true);
                tasks.push(Task::Node(
                    item,
                    Context {
                        mapping: false,
                        simple_key: false,
                    },
                ));
            }
            Task::MapEntry(key, value) => {
                map_key(&mut w, key);
                tasks.push(Task::Node(
                    value,
                    Context {
                        mapping: true,
                        simple_key: false,
                    },
                ));
            }
            Task::PopIndent => w.pop_indent(),
        }
    }
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

/// Write a node; collections queue their contents on `tasks`.
fn node<'a>(w: &mut Writer, value: &'a Value, ctx: Context, tasks: &mut Vec<Task<'a>>) {
    match value {
        Value::Null => scalar(w, b"null", Style::Plain, ctx),
        Value::Bool(true) => scalar(w, b"true", Style::Plain, ctx),
        Value::Bool(false) => scalar(w, b"false", Style::Plain, ctx),
        Value::Number(n) => scalar(w, crate::number::format(n).as_bytes(), Style::Plain, ctx),
        Value::String(s) => string(w, s, ctx),
        Value::Array(items) if items.is_empty() => empty_flow(w, b"[", b"]"),
        Value::Object(map) if map.is_empty() => empty_flow(w, b"{", b"}"),
        Value::Array(items) => {
            // Block sequences directly under a mapping key are indentless.
            let indentless = ctx.mapping && !w.indention;
            w.increase_indent(false, indentless);
            tasks.push(Task::PopIndent);
            tasks.extend(items.iter().rev().map(Task::SeqItem));
        }
        Value::Object(map) => {
            let entries: Vec<(&'a str, &'a Value)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
            let entries = crate::sort::sort_keys(entries, |(k, _)| k);
            w.increase_indent(false, false);
            tasks.push(Task::PopIndent);
            tasks.extend(entries.into_iter().rev().map(|(k, v)| Task::MapEntry(k, v)));
        }
    }
}

/// Write a string value or key as go-yaml reads it back from Go's JSON.
fn string(w: &mut Writer, s: &str, ctx: Context) {
    let s = crate::jsontext::read_back(s);
    scalar(w, s.as_bytes(), string_style(&s), ctx);
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

/// Write a mapping key and its `:`: `key:` when it is short and on one line,
/// `? key` then `:` on the next line otherwise.
fn map_key(w: &mut Writer, key: &str) {
    w.write_indent();
    let read = crate::jsontext::read_back(key);
    let simple = !analyze(read.as_bytes()).multiline && read.len() <= MAX_SIMPLE_KEY;
    if simple {
        string(
            w,
            key,
            Context {
                mapping: true,
                simple_key: true,
            },
        );
        w.write_indicator(b":", false, false, false);
    } else {
        w.write_indicator(b"?", true, false, true);
        string(
            w,
            key,
            Context {
                mapping: true,
                simple_key: false,
            },
        );
        w.write_indent();
        w.write_indicator(b":", true, false, true);
    }
}
