//! Multi-document YAML streams, split the way Kubernetes splits them.
//!
//! `kubectl` and Istio's `kube-inject` cut a stream at every line that *begins* with `---`
//! (followed by nothing but blanks or a comment) and keep each document's exact bytes. We do the
//! same, so that documents keep their index and starting line for error messages, and so that a
//! document we do not touch can be written back byte for byte.
//!
//! Each document is parsed on its own into a `serde_json::Value`, with the semantics of
//! `serde-saphyr` and YAML 1.1 options: like `sigs.k8s.io/yaml`, it accepts YAML 1.1 booleans
//! (`yes`, `on`), so a manifest the API server would read as a boolean is a boolean here too.
//! Documents in the block-style subset that templates and typical manifests use go through
//! [`fast::parse`], several times faster and giving the same values; every other document (and
//! every error) goes through `serde-saphyr`. Debug builds parse every document the fast path
//! accepts with `serde-saphyr` too and assert that the values agree.

pub mod fast;

use serde_json::Value;

/// One document of a stream, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument<'a> {
    /// Position in the stream, counting from 1 (including documents that are empty).
    pub index: usize,
    /// The line (from 1) on which the document's text starts.
    pub start_line: usize,
    /// The document's exact text, without the separator line.
    pub text: &'a str,
}

impl RawDocument<'_> {
    /// Whether the document holds nothing but blanks and comments.
    pub fn is_blank(&self) -> bool {
        self.text.lines().all(|line| {
            let line = line.trim();
            line.is_empty() || line.starts_with('#')
        })
    }

    /// Parses the document into a JSON value (`null` for a blank document).
    pub fn parse(&self) -> Result<Value, YamlError> {
        if self.is_blank() {
            return Ok(Value::Null);
        }
        if let Some(value) = fast::parse(self.text) {
            // Debug builds (every test in the workspace: conformance corpus, rendered templates,
            // settings files) check the fast path against serde-saphyr on each document.
            debug_assert_eq!(
                Ok(&value),
                parse_with_serde_saphyr(self.text).as_ref(),
                "the YAML fast path disagrees with serde-saphyr on document {}:\n{}",
                self.index,
                self.text
            );
            return Ok(value);
        }
        // The value does not depend on where the document starts: parsed as it is first, so that
        // a document deep in a long stream costs no more than one at its start.
        if self.start_line > 1
            && let Ok(value) = parse_with_serde_saphyr(self.text)
        {
            return Ok(value);
        }
        // Leading blank lines keep the parser's line numbers (and its snippet) those of the stream.
        let padded = format!("{}{}", "\n".repeat(self.start_line.saturating_sub(1)), self.text);
        serde_saphyr::from_str_with_options::<Value>(&padded, yaml_11_options()).map_err(|error| YamlError {
            index: self.index,
            line: self.start_line,
            message: error.to_string().trim_start_matches("error: ").to_owned(),
        })
    }
}

/// Parses one document (without separator lines) with `serde-saphyr` alone, bypassing the fast
/// path: the reference the fast path is tested and measured against.
pub fn parse_with_serde_saphyr(text: &str) -> Result<Value, String> {
    serde_saphyr::from_str_with_options::<Value>(text, yaml_11_options()).map_err(|error| error.to_string())
}

/// Parses one document as `sigs.k8s.io/yaml`'s non-strict `Unmarshal` does, where a repeated
/// mapping key is not an error and the last value wins (go-yaml v2). Istio reads its rendered
/// injection templates so, and they repeat keys: a `sidecar.istio.io/userVolume` list entry
/// renders `name:` twice. The fast path refuses duplicates, so such text goes to serde-saphyr.
pub fn parse_last_key_wins(text: &str) -> Result<Value, String> {
    if let Some(value) = fast::parse(text) {
        return Ok(value);
    }
    let mut options = yaml_11_options();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    serde_saphyr::from_str_with_options::<Value>(text, options)
        .map_err(|error| error.to_string().trim_start_matches("error: ").to_owned())
}

/// Parser options matching `sigs.k8s.io/yaml` (go-yaml v2, YAML 1.1): `yes`/`on` are booleans
/// and a leading `0` makes an octal integer (`0755` is 493).
fn yaml_11_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    // Manifests are bounded by the callers (6 MiB admission bodies, files the user names); the
    // parser's own resource budget only costs time here.
    options.budget = None;
    options
}

/// A document that is not valid YAML, or a separator line that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {index} (starting at line {line}): {message}")]
pub struct YamlError {
    /// The document's position in the stream, from 1.
    pub index: usize,
    /// The line on which the document starts.
    pub line: usize,
    /// The parser's message, with line numbers of the whole stream.
    pub message: String,
}

/// Splits a stream into documents at lines beginning with `---`.
///
/// As in Kubernetes' YAML reader, text after `---` on the separator line other than a comment is
/// an error.
pub fn split_documents(stream: &str) -> Result<Vec<RawDocument<'_>>, YamlError> {
    let bytes = stream.as_bytes();
    // Separator lines begin with `---`: the stream's first line, or a line after a line feed.
    // Most streams hold one document, and this finds that out without looking at every line.
    let first = bytes.starts_with(b"---").then_some(0);
    let candidates = first
        .into_iter()
        .chain(memchr::memmem::find_iter(bytes, b"\n---").map(|i| i + 1));
    let mut documents = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    // Line numbers are counted incrementally: `line_number` is the line of byte `counted`.
    let mut counted = 0;
    let mut line_number = 1;
    for line_start in candidates {
        line_number += bytes
            .get(counted..line_start)
            .map_or(0, |skipped| memchr::memchr_iter(b'\n', skipped).count());
        counted = line_start;
        let line_end = bytes
            .get(line_start..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
            .map_or(stream.len(), |n| line_start + n + 1);
        let line = stream.get(line_start..line_end).unwrap_or_default();
        let rest = line.get(3..).unwrap_or_default().trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(YamlError {
                index: documents.len() + 1,
                line: line_number,
                message: format!("invalid YAML document separator: text {rest:?} after \"---\""),
            });
        }
        documents.push(RawDocument {
            index: documents.len() + 1,
            start_line,
            text: stream.get(start..line_start).unwrap_or_default(),
        });
        start = line_end;
        start_line = line_number + 1;
    }
    documents.push(RawDocument {
        index: documents.len() + 1,
        start_line,
        text: stream.get(start..).unwrap_or_default(),
    });
    Ok(documents)
}

/// Splits and parses a stream, dropping blank documents. Each value keeps its document index.
pub fn parse_documents(stream: &str) -> Result<Vec<(usize, Value)>, YamlError> {
    let mut values = Vec::new();
    for document in split_documents(stream)? {
        if document.is_blank() {
            continue;
        }
        match document.parse()? {
            Value::Null => continue,
            value => values.push((document.index, value)),
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn last_key_wins_when_asked() {
        let text = "volumes:\n- name: \"0\"\n  emptyDir: {}\n  name: v\n";
        assert!(
            parse_documents(text).is_err(),
            "manifests still refuse duplicates"
        );
        assert_eq!(
            parse_last_key_wins(text),
            Ok(json!({"volumes": [{"name": "v", "emptyDir": {}}]}))
        );
    }

    #[test]
    fn splits_at_separator_lines_only() {
        let stream = "a: 1\n---\nb: '---'\nc: |\n  ---x\n--- # comment\nd: 4\n";
        let docs = split_documents(stream).expect("splits");
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0].text, "a: 1\n");
        assert_eq!(docs[1].text, "b: '---'\nc: |\n  ---x\n");
        assert_eq!(
            (docs[2].index, docs[2].start_line, docs[2].text),
            (3, 7, "d: 4\n")
        );
    }

    #[test]
    fn keeps_exact_bytes() {
        let stream = "# leading comment\nkind: A   # trailing\n---\n\n---\nkind: B";
        let docs = split_documents(stream).expect("splits");
        let rebuilt: Vec<&str> = docs.iter().map(|d| d.text).collect();
        assert_eq!(
            rebuilt,
            ["# leading comment\nkind: A   # trailing\n", "\n", "kind: B"]
        );
        assert!(docs[1].is_blank());
    }

    #[test]
    fn rejects_text_after_separator() {
        let error = split_documents("a: 1\n--- b: 2\n").expect_err("bad separator");
        assert_eq!(error.line, 2);
        assert!(
            error.to_string().contains("invalid YAML document separator"),
            "{error}"
        );
    }

    /// The straightforward line-by-line splitter that `split_documents` replaced, as a reference.
    fn split_line_by_line(stream: &str) -> Result<Vec<RawDocument<'_>>, YamlError> {
        let mut documents = Vec::new();
        let (mut start, mut start_line, mut offset) = (0, 1, 0);
        for (number, line) in stream.split_inclusive('\n').enumerate() {
            if let Some(rest) = line.strip_prefix("---") {
                let rest = rest.trim();
                if !rest.is_empty() && !rest.starts_with('#') {
                    return Err(YamlError {
                        index: documents.len() + 1,
                        line: number + 1,
                        message: format!("invalid YAML document separator: text {rest:?} after \"---\""),
                    });
                }
                documents.push(RawDocument {
                    index: documents.len() + 1,
                    start_line,
                    text: &stream[start..offset],
                });
                start = offset + line.len();
                start_line = number + 2;
            }
            offset += line.len();
        }
        documents.push(RawDocument {
            index: documents.len() + 1,
            start_line,
            text: &stream[start..],
        });
        Ok(documents)
    }

    #[test]
    fn splits_like_the_line_by_line_reference() {
        for stream in [
            "",
            "---",
            "---\n",
            "--",
            "\n---",
            "a\n---\n---\nb",
            "---x\n",
            "a\n--- # c\n---  \r\nb\n",
            "a\n ---\n-- -\n----\n",
            "é\n---\né",
        ] {
            assert_eq!(split_documents(stream), split_line_by_line(stream), "{stream:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn splits_like_the_line_by_line_reference_on_any_stream(stream in "[-\n a#\r\u{e9}]{0,40}") {
            proptest::prop_assert_eq!(split_documents(&stream), split_line_by_line(&stream));
        }
    }

    #[test]
    fn parses_documents_and_drops_blank_ones() {
        let values = parse_documents("---\na: yes\n---\n# nothing\n---\nb: [1, 'x']\n").expect("parses");
        assert_eq!(values, [(2, json!({"a": true})), (4, json!({"b": [1, "x"]}))]);
    }

    #[test]
    fn errors_name_document_and_line() {
        let error = parse_documents("a: 1\n---\nb: [1, 2\n").expect_err("malformed");
        assert_eq!((error.index, error.line), (2, 3));
        assert!(
            error.to_string().starts_with("document 2 (starting at line 3): "),
            "{error}"
        );
    }

    #[test]
    fn yaml_11_scalars() {
        let values = parse_documents("a: on\nb: 0755\nc: '0755'\nd: 0x1F\n").expect("parses");
        assert_eq!(values[0].1, json!({"a": true, "b": 493, "c": "0755", "d": 31}));
    }

    #[test]
    fn json_is_yaml() {
        let values = parse_documents("{\"kind\": \"Pod\", \"spec\": {\"containers\": []}}").expect("parses");
        assert_eq!(values[0].1, json!({"kind": "Pod", "spec": {"containers": []}}));
    }
}
