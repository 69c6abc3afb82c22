//! `serve` gives back the memory of a big admission once it goes quiet: mimalloc purges freed
//! memory only after its purge delay, when the allocator is next called, and `serve` runs a
//! thread that calls it (`src/cli/memory_return.rs`). Without it, a server that goes quiet after
//! a burst keeps the burst's peak.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::{
    served::{Served, have_curl},
    util::{Files, proc_status_kib},
};

/// `VmRSS` or `VmHWM` of a process, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    proc_status_kib(pid, field).unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

#[test]
fn the_memory_of_a_big_admission_is_given_back_once_the_server_is_quiet() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let served = Served::start(&files, &[]);
    let pid = served.child.id();
    let before = status_kib(pid, "VmRSS:");

    let annotations: Map<String, Value> = (0..60_000)
        .map(|i| (format!("example.com/note-{i}"), json!(format!("value {i}"))))
        .collect();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "big", "namespace": "shop", "operation": "CREATE", "object": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-", "annotations": annotations},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    });
    let file = files.write("big.json", &review.to_string());
    let answer = served.admit(&file);
    assert_eq!(
        answer["response"]["allowed"], true,
        "{}",
        answer["response"]["status"]
    );
    let peak = status_kib(pid, "VmHWM:");
    assert!(
        peak > before + 40 * 1024,
        "the admission should have used memory: {before} -> {peak} KiB"
    );

    // Given back within a few seconds (a purge delay and a nudge interval are a fraction of a
    // second; other periodic work in the server would only get to it later): the RSS comes
    // down to within a third of what the admission added at its peak. A quarter was too tight:
    // pages the worker threads keep for their next allocations (a few MiB, varying with which
    // threads the admission ran on) left it half a MiB over, one run in four.
    let bound = before + (peak - before) / 3;
    let start = Instant::now();
    let mut now = status_kib(pid, "VmRSS:");
    while now > bound && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(200));
        now = status_kib(pid, "VmRSS:");
    }
    assert!(
        now <= bound,
        "RSS {now} KiB five seconds after the admission (before it {before} KiB, peak {peak} KiB)"
    );
}
