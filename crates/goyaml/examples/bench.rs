//! Rough timing: print every kube-inject golden document N times.
#![allow(clippy::unwrap_used, clippy::panic)]

fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".injected") {
            for doc in std::fs::read_to_string(&path).unwrap().split("---\n") {
                if let Ok(v) = serde_saphyr::from_str::<serde_json::Value>(doc) {
                    docs.push(v);
                }
            }
        }
    }
    let start = std::time::Instant::now();
    let mut bytes = 0;
    for _ in 0..n {
        for d in &docs {
            bytes += goyaml::to_string(d).len();
        }
    }
    let el = start.elapsed();
    println!(
        "{} docs x {n}: {:?} total, {:?}/doc, {} MB/s",
        docs.len(),
        el,
        el / (docs.len() * n) as u32,
        bytes as f64 / el.as_secs_f64() / 1e6
    );
}
