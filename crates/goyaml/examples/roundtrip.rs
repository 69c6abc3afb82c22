//! Print each `---`-separated document of the YAML files given as arguments
//! back through `goyaml`, reporting documents whose text changes.
#![allow(clippy::unwrap_used, clippy::panic)]

fn main() {
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, doc) in text.split("---\n").enumerate() {
            if doc.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
            let got = goyaml::to_string(&value);
            let verdict = if got == doc { "same" } else { "DIFFERENT" };
            println!("{path} document {i}: {verdict}");
            if got != doc {
                for (a, b) in doc.lines().zip(got.lines()).filter(|(a, b)| a != b).take(3) {
                    println!("  want: {a}\n  got:  {b}");
                }
            }
        }
    }
}
