//! The engine under hostile pods, through a real `serve` on loopback: pods of tens of thousands
//! of containers, of 10,000 env entries, of 100,000 annotations are injected while a normal
//! admission sent meanwhile is answered `200`; a render still running at the admission's
//! deadline stops there (no CPU is spent on an answered admission); a template over its step
//! budget is denied, naming it; and two tenants whose pods go through a template that writes into
//! `.Values` at the same time each get a patch with only their own pod's values.
//!
//! The 40,000-container pod runs against `SIDECAR_INJECTOR_BIN` when it is set (a release build
//! injects it in about half a second); the debug test binary gets 20,000.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::served::{Served, curl, have_curl, patch_of};
use crate::util::{Files, binary_under_test, release_binary};

/// The binary to serve with, and the most containers to send it.
fn binary_and_most_containers() -> (String, usize) {
    let most = if release_binary().is_some() {
        40_000
    } else {
        20_000
    };
    (binary_under_test(), most)
}

fn review(uid: &str, pod: Value) -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "namespace": "abuse", "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}})
    .to_string()
}

fn pod(name: &str, containers: Vec<Value>, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "abuse", "annotations": annotations},
        "spec": {"containers": containers}})
}

fn app() -> Value {
    json!({"name": "app", "image": "nginx"})
}

/// One admission of the review in `file` (`?timeout=` as given): (HTTP status, the response).
fn post(served: &Served, file: &str, timeout: &str) -> (u16, Value) {
    let files = Files::new();
    let out = files.path("response.json");
    let (code, status) = curl(&[
        "--max-time",
        "20",
        "--cacert",
        &served.ca,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &format!("@{file}"),
        "-o",
        &out,
        "-w",
        "%{http_code}",
        &format!("https://127.0.0.1:{}/inject?timeout={timeout}", served.port),
    ]);
    assert_eq!(code, 0, "curl: {status}");
    let body = std::fs::read_to_string(&out).unwrap_or_default();
    (
        status.trim().parse().unwrap_or(0),
        serde_json::from_str(&body).unwrap_or(Value::Null),
    )
}

/// The server's CPU time so far (user and system), from /proc.
fn cpu_time(served: &Served) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", served.child.id())).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|t| t.parse::<u64>().ok()))
        .sum();
    // The kernel's USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}

/// Sends the review in `file` while normal admissions (a pod that opts out) are sent one after
/// the other: every normal admission is answered `200` and allowed; the review's answer is
/// returned with the slowest normal admission's time.
fn admit_while_probing(served: &Served, files: &Files, file: &str) -> ((u16, Value), Duration) {
    let probe = files.write(
        "probe.json",
        &review(
            "probe",
            pod("probe", vec![app()], json!({"sidecar.istio.io/inject": "false"})),
        ),
    );
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let big = scope.spawn(|| {
            let answer = post(served, file, "10s");
            done.store(true, Ordering::SeqCst);
            answer
        });
        let mut slowest = Duration::ZERO;
        let mut probes = 0;
        while !done.load(Ordering::SeqCst) || probes == 0 {
            let start = Instant::now();
            let (status, answer) = post(served, &probe, "10s");
            slowest = slowest.max(start.elapsed());
            probes += 1;
            assert_eq!(status, 200, "a normal admission during {file}: {answer}");
            assert_eq!(answer["response"]["allowed"], true, "{answer}");
        }
        (big.join().expect("the admission thread"), slowest)
    })
}

#[test]
fn big_pods_are_injected_while_normal_admissions_are_answered() {
    if !have_curl() {
        return;
    }
    let (binary, most) = binary_and_most_containers();
    let files = Files::new();
    let served = Served::start_binary(&binary, &files, &[]);
    let containers = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"name": format!("c{i}"), "image": "nginx"}))
            .collect()
    };
    let env: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("E{i}"), "value": "v"}))
        .collect();
    let annotations: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("a{i}.example.com/k"), json!("v")))
        .collect();
    let cases = [
        (
            "10,000 containers".to_owned(),
            pod("big", containers(10_000), json!({})),
        ),
        (
            format!("{},{:03} containers", most / 1000, most % 1000),
            pod("big", containers(most), json!({})),
        ),
        (
            "10,000 env entries".to_owned(),
            pod(
                "big",
                vec![json!({"name": "app", "image": "nginx", "env": env})],
                json!({}),
            ),
        ),
        (
            "100,000 annotations".to_owned(),
            pod("big", vec![app()], Value::Object(annotations)),
        ),
    ];
    for (case, pod) in cases {
        let file = files.write("big.json", &review("big", pod));
        let start = Instant::now();
        let ((status, answer), slowest_probe) = admit_while_probing(&served, &files, &file);
        let took = start.elapsed();
        eprintln!("{case}: answered in {took:?}; slowest normal admission meanwhile {slowest_probe:?}");
        assert_eq!(status, 200, "{case}: {answer}");
        assert_eq!(answer["response"]["allowed"], true, "{case}: {answer}");
        let patch = String::from_utf8(patch_of(&answer)).expect("UTF-8");
        assert!(patch.contains("istio-proxy"), "{case}: the patch adds the proxy");
    }
}

fn serve_template(files: &Files, name: &str, template: &str, values: &Value) -> Served {
    let config = files.write(
        "config.json",
        &json!({"policy": "enabled", "defaultTemplates": [name], "templates": {name: template}}).to_string(),
    );
    let values = files.write("values.json", &values.to_string());
    let (binary, _) = binary_and_most_containers();
    Served::start_binary(
        &binary,
        files,
        &["--injector-config", &config, "--values", &values],
    )
}

/// An admission whose render is still running at its deadline is denied saying so, and the
/// engine stops there: the server's CPU time barely grows in the second after the answer (the
/// render would run for many seconds more).
#[test]
fn a_render_at_the_deadline_stops_with_the_answer() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    // Each iteration writes 100 KB: the budget's million iterations take well over a minute.
    let slow = r#"{{ range 2000000000 }}{{ $x := repeat 100000 "x" }}{{ end }}"#;
    let served = serve_template(&files, "slow", slow, &json!({}));
    let file = files.write("slow.json", &review("slow", pod("slow", vec![app()], json!({}))));
    let (status, answer) = post(&served, &file, "2s");
    let answered = cpu_time(&served);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("did not complete within"), "{message}");
    std::thread::sleep(Duration::from_millis(1100));
    let after = cpu_time(&served).saturating_sub(answered);
    eprintln!("CPU time in the 1.1 s after the answer: {after:?}");
    assert!(
        after < Duration::from_millis(500),
        "the render went on after the answer: {after:?} of CPU in the 1.1 s after it"
    );
}

#[test]
fn a_template_over_its_step_budget_is_denied_naming_it() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let loops = "{{ range until 2000 }}{{ range until 1000 }}{{ end }}{{ end }}";
    let served = serve_template(&files, "loops", loops, &json!({}));
    let file = files.write(
        "loops.json",
        &review("loops", pod("loops", vec![app()], json!({}))),
    );
    let (status, answer) = post(&served, &file, "10s");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("template \"loops\" exceeded the injector's step budget"),
        "{message}"
    );
}

/// Two tenants' pods go through a template that writes the pod's name into `.Values`, at the same
/// time: every patch holds its own pod's name as the value written, and `.Values` as
/// configured before the write.
#[test]
fn tenants_writing_into_values_at_once_see_only_their_own_pods() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let writer = r#"{{- $before := toJson .Values.tenant }}
{{- $_ := set .Values.tenant "owner" .ObjectMeta.Name }}
metadata:
  annotations:
    before: {{ $before | quote }}
    after: {{ toJson .Values.tenant | quote }}
"#;
    let served = serve_template(&files, "writer", writer, &json!({"tenant": {"owner": "nobody"}}));
    std::thread::scope(|scope| {
        for tenant in ["tenant-a", "tenant-b"] {
            let (served, files) = (&served, &files);
            scope.spawn(move || {
                for i in 0..15 {
                    let name = format!("{tenant}-{i}");
                    let file = files.write(
                        &format!("{name}.json"),
                        &review(&name, pod(&name, vec![app()], json!({}))),
                    );
                    let (status, answer) = post(served, &file, "10s");
                    assert_eq!(status, 200, "{name}: {answer}");
                    let patch: Value = serde_json::from_slice(&patch_of(&answer)).expect("a JSON patch");
                    let annotation = |key: &str| {
                        patch
                            .as_array()
                            .into_iter()
                            .flatten()
                            .find_map(|op| {
                                let path = op["path"].as_str()?;
                                match path {
                                    "/metadata/annotations" => op["value"][key].as_str().map(str::to_owned),
                                    _ if path == format!("/metadata/annotations/{key}") => {
                                        op["value"].as_str().map(str::to_owned)
                                    }
                                    _ => None,
                                }
                            })
                            .unwrap_or_else(|| panic!("{name}: no {key} annotation in {patch}"))
                    };
                    assert_eq!(annotation("before"), r#"{"owner":"nobody"}"#, "{name}");
                    assert_eq!(annotation("after"), format!(r#"{{"owner":"{name}"}}"#), "{name}");
                }
            });
        }
    });
}
