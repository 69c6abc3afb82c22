//! Round trip through Istio's kube-inject golden files: every document of
//! every `*.injected` file under Istio's `pkg/kube/inject/testdata/inject/` and
//! `istioctl/pkg/kubeinject/testdata/deployment/` (Istio's corpus, as the
//! `istio-corpus` crate finds it) is parsed to JSON and printed again; the output
//! must equal the document's text. Istio printed those documents with
//! `sigs.k8s.io/yaml.Marshal`, so this proves exactness on the very output the
//! injector must reproduce.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

/// Goldens that Istio's own test does not compare as text (stale files).
fn skipped(name: &str) -> bool {
    name.starts_with("hello-openshift")
}

/// The directories of golden files, if Istio's corpus is at hand.
fn golden_dirs() -> Option<Vec<PathBuf>> {
    let corpus = istio_corpus::istio_or_skip("goyaml: the round trip of Istio's kube-inject goldens")?;
    Some(vec![
        corpus.path("pkg/kube/inject/testdata/inject"),
        corpus.path("istioctl/pkg/kubeinject/testdata/deployment"),
    ])
}

/// Split kube-inject output into documents: each ends with a `---` line.
fn documents(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if line == "---\n" || line == "---" {
            docs.push(std::mem::take(&mut current));
        } else {
            current.push_str(line);
        }
    }
    if !current.trim().is_empty() {
        docs.push(current);
    }
    docs
}

#[test]
fn kube_inject_goldens_round_trip() {
    let Some(dirs) = golden_dirs() else {
        return;
    };
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter(|dir| dir.is_dir())
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".injected"))
        })
        .collect();
    files.sort();
    let (mut passed, mut failed, mut skipped_files, mut pass_through) = (0, 0, 0, 0);
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let dir = path.parent().unwrap();
        if skipped(&name) {
            skipped_files += 1;
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // The kube-inject input: documents kube-inject does not touch (a
        // Service, say) are copied from it byte for byte, not re-marshalled.
        let input = name
            .split(".yaml")
            .next()
            .map(|base| dir.join(format!("{base}.yaml")));
        let input = input
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        for (i, doc) in documents(&text).iter().enumerate() {
            let value: serde_json::Value = match serde_saphyr::from_str(doc) {
                Ok(v) => v,
                Err(e) => {
                    failed += 1;
                    println!("FAIL {name} document {i}: does not parse: {e}");
                    continue;
                }
            };
            let got = goyaml::try_to_string(&value).unwrap_or_else(|e| format!("error: {e}\n"));
            if &got == doc {
                passed += 1;
            } else if !doc.is_empty() && input.contains(doc.as_str()) {
                pass_through += 1;
                println!("pass-through {name} document {i}: copied from the input, not written by go-yaml");
            } else {
                failed += 1;
                println!("FAIL {name} document {i}");
                for (want, got) in doc.lines().zip(got.lines()).filter(|(a, b)| a != b).take(3) {
                    println!("  want: {want}\n  got:  {got}");
                }
            }
        }
    }
    println!(
        "{passed} documents passed, {failed} failed ({pass_through} pass-through documents not compared, \
         {skipped_files} stale goldens skipped)"
    );
    assert_eq!(failed, 0, "{failed} golden documents differ");
    assert!(passed > 0, "no golden documents under {dirs:?}");
}
