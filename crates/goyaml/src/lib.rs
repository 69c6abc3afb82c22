//! # goyaml
//!
//! A YAML emitter that writes, byte for byte, what Go's
//! `sigs.k8s.io/yaml.Marshal` writes for the same data.
//!
//! ## Why
//!
//! Istio's `kube-inject` prints every object with `sigs.k8s.io/yaml.Marshal`:
//! the Go object is marshalled to JSON, the JSON is read back by go-yaml v2
//! (`go.yaml.in/yaml/v2`, the `gopkg.in/yaml.v2` emitter, a port of libyaml),
//! and go-yaml prints it. For our manual-injection output to compare equal to
//! Istio's golden files, we have to print JSON values exactly as that path
//! does. This crate is pure (no I/O) and has no dependency besides
//! `serde_json`.
//!
//! ## What it reproduces
//!
//! - **Key order**: go-yaml's natural order (`sorter.go`, see the `sort`
//!   module): `a2` before `a10`, upper case before lower case, a non-letter
//!   before a letter. Input order does not matter. For the rare key sets on
//!   which that order is not transitive (`a10 < a1a < a2 < a10`), Go's output
//!   changes from run to run with its random map order; this crate picks one
//!   order that depends only on the set of keys.
//! - **Layout**: indent 2, block mappings, indentless block sequences (`- `
//!   at the parent key's column, nested sequences as `- - x`), `{}` and `[]`
//!   for empty collections, keys longer than 128 bytes or containing line
//!   breaks written as `? key` / `: value`, a final line break.
//! - **Implicit types** (`resolve.go`): strings that would read back as
//!   something else are double-quoted: YAML 1.1 bools and nulls (`"y"`,
//!   `"on"`, `"No"`, `"~"`, `""`), Go-syntax integers (`"15001"`, `"0x1F"`,
//!   `"0o17"`, `"017"`, `"1_000"`, `"0b-1"`), floats (`"1e3"`, `".5"`,
//!   `"1."`, `".inf"`), base-60 numbers (`"1:20"`) and timestamps Go's
//!   `time.Parse` accepts (`"2001-12-14"`).
//! - **Scalar analysis** (libyaml's `yaml_emitter_analyze_scalar`): strings
//!   plain style cannot represent (leading indicators, `: `, ` #`, leading
//!   or trailing spaces, `---`…) are single-quoted; strings with
//!   non-printable characters (tabs, control characters, characters outside
//!   the BMP, a BOM) are double-quoted with libyaml's escapes (`\t`, `\e`,
//!   `\x7F`, `\U0001F600`…); strings with line feeds use literal style
//!   `|`, `|-` or `|+`, with an indentation indicator (`|2-`) when they start
//!   with a space or break, or double quotes when literal style cannot hold
//!   them.
//! - **Folding**: plain and quoted scalars are broken at a single space once
//!   the column passes 80 (`best_width`), continuing at the scalar's
//!   indentation (two more than its key); double-quoted scalars escape a
//!   following space as `\ `.
//! - **Numbers**: integers print as integers; a float64 prints as Go's
//!   `encoding/json` writes it and go-yaml then reads and re-prints it, so
//!   integral values print without a fraction (`1000000`, but `2e+19` past
//!   `uint64`), others with `strconv.FormatFloat(f, 'g', -1, 64)` (`0.5`,
//!   `1e+21`, `1e-07`, `1.2345675e+06`), including Go's ties-to-even choice
//!   of shortest digits.
//! - **The JSON round trip**: a raw NEL (U+0085) in a string is folded the
//!   way go-yaml folds line breaks in the double-quoted JSON string it reads.
//! - **Failures**: [`try_to_string`] fails where Go's path fails (characters
//!   go-yaml's reader rejects, map keys it cannot read back, nesting deeper
//!   than 10000); [`to_string`] prints such values anyway.
//!
//! The behaviour is checked against the real Go code by a differential
//! corpus (`tests/oracle`, produced by `tools/goyaml-oracle`) and by a round
//! trip through Istio's kube-inject golden files (`tests/goldens.rs`).

mod chars;
mod check;
mod emit;
mod fold;
mod jsontext;
mod number;
mod resolve;
mod scalar;
mod sort;
mod timestamp;
mod unicode_tables;
mod writer;

pub use check::Error;
use serde_json::Value;

/// The YAML for `value` exactly as `sigs.k8s.io/yaml.Marshal` prints a Go
/// value with the same JSON form.
///
/// JSON integers (`i64`/`u64`) are treated as Go integers and other numbers
/// as Go `float64`s. The result always ends with a line break.
pub fn to_string(value: &Value) -> String {
    let bytes = emit::document(value);
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Like [`to_string`], but fails where Go's `sigs.k8s.io/yaml.Marshal`
/// fails: for strings holding U+007F–U+0084, U+0086–U+009F, U+FFFE or
/// U+FFFF, and for map keys containing NEL (U+0085) or longer than go-yaml's
/// 1024-character simple-key limit once JSON-escaped.
///
/// # Errors
///
/// [`Error`] describes the first offending string or key.
pub fn try_to_string(value: &Value) -> Result<String, Error> {
    check::check(value)?;
    Ok(to_string(value))
}

#[cfg(test)]
mod tests {
    use super::to_string;
    use serde_json::json;

    #[test]
    fn basics() {
        let v = json!({"b": [1, "2", {"x": null}], "a": {"": true, "k": []}, "c": "x\ny\n"});
        assert_eq!(
            to_string(&v),
            "a:\n  \"\": true\n  k: []\nb:\n- 1\n- \"2\"\n- x: null\nc: |\n  x\n  y\n"
        );
    }
}
