//! The console in a real browser: Debian's headless Chromium, driven over WebDriver
//! (chromedriver, started here) by fantoccini, against a running `serve` that receives real
//! admissions over verified TLS (curl) during the test.
//!
//! Proves, as an operator would see it: the state page shows the served certificate's SHA-256
//! fingerprint (computed here independently with openssl from the certificate the TLS port
//! presents); admissions sent during the test appear with the right decision, and a click
//! opens their explanation; a broken reload of the mesh file shows as a rejected reload with
//! its error; the paste form returns the very patch `explain --show-patch` prints for the same
//! manifest; a POST without the page's token is refused with 403, so is a GET of the API, and a
//! request for another name (a DNS-rebinding page's) is refused with 421.
//!
//! Without Chromium the test says so loudly and passes, except under `CI_REQUIRE_BROWSER=1`
//! (set by `.ci/run`), where it fails. With `CONSOLE_SCREENSHOTS=DIR` it writes a screenshot
//! of each page there (the README's `docs/console-*.png`).

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::{
    served::{Served, curl, have_curl},
    util::{Files, example, free_port},
};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Chromium and its driver, or `None` (skip) when absent and not required.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from(CHROMIUM), PathBuf::from);
    let driver = std::env::var_os("CHROMEDRIVER").map_or_else(|| PathBuf::from(CHROMEDRIVER), PathBuf::from);
    if chromium.exists() && driver.exists() {
        return Some((chromium, driver));
    }
    let message = format!(
        "{} or {} is missing: the console's browser test needs Debian's `chromium` and `chromium-driver` \
         (apt-get install chromium chromium-driver; .ci/run installs them)",
        chromium.display(),
        driver.display()
    );
    assert!(
        std::env::var("CI_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "{message}"
    );
    eprintln!("\n!!!!!!!!!! SKIPPED: {message} !!!!!!!!!!\n");
    None
}

/// A chromedriver process, killed when dropped.
struct Driver(Child, u16);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_driver(driver: &Path) -> Driver {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver(child, port);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromedriver did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    driver
}

async fn connect(driver: &Driver, chromium: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": chromium, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1300,1000"]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.1))
        .await
        .expect("a WebDriver session in Chromium")
}

/// Waits until `check` returns `Some`, polling the page; panics with `what` after 20 s.
async fn wait_until<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn text_of(client: &Client, id: &str) -> String {
    match client.find(Locator::Id(id)).await {
        Ok(element) => element.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn screenshot(client: &Client, page: &str) {
    let Some(dir) = std::env::var_os("CONSOLE_SCREENSHOTS") else {
        return;
    };
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(Path::new(&dir).join(format!("console-{page}.png")), png).expect("screenshot written");
}

/// The SHA-256 fingerprint of the certificate the TLS port presents, from openssl.
fn served_fingerprint(port: u16) -> String {
    let script = format!(
        "openssl s_client -connect 127.0.0.1:{port} -servername localhost </dev/null 2>/dev/null \
         | openssl x509 -noout -fingerprint -sha256"
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .output()
        .expect("openssl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let fingerprint = text.trim().rsplit('=').next().unwrap_or("").to_owned();
    assert_eq!(fingerprint.len(), 95, "openssl's fingerprint: {text:?}");
    fingerprint
}

fn review(files: &Files, name: &str, pod: &Value) -> String {
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("uid-{name}"), "namespace": "shop", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}});
    files.write(&format!("{name}.json"), &review.to_string())
}

const GOOD_MESH: &str = "defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n";

#[test]
fn the_console_in_a_real_browser() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let mesh = files.write("mesh.yaml", GOOD_MESH);
    let good_mesh = files.write("good-mesh.yaml", GOOD_MESH);
    let console_port = free_port();
    let console = format!("http://127.0.0.1:{console_port}");
    let served = Served::start(
        &files,
        &[
            "--mesh",
            &mesh,
            "--console-addr",
            &format!("127.0.0.1:{console_port}"),
        ],
    );

    // Admissions, over verified TLS: one injected, one skipped, one denied.
    let injected = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4", "controller": true, "uid": "u"}]},
        "spec": {"containers": [{"name": "web", "image": "nginx", "env": [{"name": "PASSWORD", "value": "hunter2"}]}]}});
    let skipped = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "batch-1", "annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"containers": [{"name": "job", "image": "busybox"}]}});
    let denied = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "broken-1"}, "spec": {"containers": "not a list"}});
    for (name, pod, allowed) in [
        ("injected", &injected, true),
        ("skipped", &skipped, true),
        ("denied", &denied, false),
    ] {
        let answer = served.admit(&review(&files, name, pod));
        assert_eq!(answer["response"]["allowed"], allowed, "{name}: {answer}");
    }
    let injected_review = review(&files, "injected", &injected);

    let driver = start_driver(&driver);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = connect(&driver, &chromium).await;

        // State: the served certificate's fingerprint, as openssl computes it.
        client.goto(&format!("{console}/#state")).await.expect("the console opens");
        let expected = served_fingerprint(served.port);
        let shown = wait_until("the fingerprint on the state page", || async {
            let text = text_of(&client, "state-fingerprint").await;
            (text.len() == 95).then_some(text)
        })
        .await;
        assert_eq!(shown, expected, "the state page shows the served certificate's SHA-256");
        assert_eq!(text_of(&client, "state-ready").await, "yes");
        screenshot(&client, "state").await;

        // Admissions: each with its decision; a click opens the explanation.
        client.goto(&format!("{console}/#admissions")).await.expect("admissions");
        let rows = wait_until("the three admissions", || async {
            let rows = client.find_all(Locator::Css("#admissions-table tbody tr")).await.ok()?;
            let mut seen = Vec::new();
            for row in rows {
                let pod = row.attr("data-pod").await.ok()??;
                let decision = row.attr("data-decision").await.ok()??;
                seen.push((pod, decision));
            }
            (seen.len() >= 3).then_some(seen)
        })
        .await;
        for (pod, decision) in [("web-1", "injected"), ("batch-1", "skipped"), ("broken-1", "denied")] {
            assert!(rows.contains(&(pod.to_owned(), decision.to_owned())), "{pod} {decision} in {rows:?}");
        }
        let table = text_of(&client, "admissions-table").await;
        assert!(table.contains("ReplicaSet/web-7d4"), "the owner is shown: {table}");
        client
            .find(Locator::Css("#admissions-table tbody tr[data-pod='web-1']"))
            .await
            .expect("the injected row")
            .click()
            .await
            .expect("click");
        let report = wait_until("the explanation", || async {
            let text = text_of(&client, "explanation-report").await;
            (text.contains("shop/web-1") && !text.contains("explaining")).then_some(text)
        })
        .await;
        assert!(report.contains("injected"), "{report}");
        assert!(!client.source().await.unwrap_or_default().contains("hunter2"), "no secret values");
        screenshot(&client, "admissions").await;

        // A broken reload: rejected, with its error, the last good configuration kept.
        std::fs::write(&mesh, "defaultConfig: [\n").expect("rewrite the mesh file");
        // (Blocking this runtime while polling /readyz is fine: the browser is another process.)
        let error = served.wait_for("a rejected reload", Duration::from_secs(30), |r| {
            r["config"]["lastReloadError"].as_str().is_some_and(|e| e.contains("mesh"))
        });
        let error = error["config"]["lastReloadError"].as_str().unwrap_or("").to_owned();
        client.goto(&format!("{console}/#config")).await.expect("configuration");
        let shown = wait_until("the rejected reload", || async {
            let text = text_of(&client, "config-rejected-error").await;
            (!text.is_empty()).then_some(text)
        })
        .await;
        assert_eq!(shown.trim(), error.trim(), "the rejected reload's error");
        let diff = text_of(&client, "config-rejected-diff").await;
        assert!(diff.contains("+defaultConfig: ["), "the rejected change: {diff}");
        screenshot(&client, "config").await;

        // Figures: samples of the same metrics as /metrics, under a little traffic.
        client.goto(&format!("{console}/#figures")).await.expect("figures");
        let skipped_review = review(&files, "skipped", &skipped);
        let traffic = Instant::now();
        let mut sent = 0;
        while traffic.elapsed() < Duration::from_secs(7) {
            let review = if sent % 3 == 0 { &skipped_review } else { &injected_review };
            assert!(served.admit(review)["response"]["allowed"] == true);
            sent += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let points = wait_until("three samples", || async {
            let figures: Value = client
                .execute(
                    "return fetch('/api/figures', {headers: {'X-Console-Token': \
                     document.querySelector('meta[name=\"console-token\"]').content}}).then(r => r.json());",
                    vec![],
                )
                .await
                .ok()?;
            let points = figures["points"].as_array()?.clone();
            (points.len() >= 3).then_some(points)
        })
        .await;
        assert!(
            points.iter().any(|p| p["admissions"].as_f64().is_some_and(|a| a > 0.0)),
            "the figures saw the traffic: {points:?}"
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        screenshot(&client, "figures").await;

        // Paste a pod: the same patch as `explain --show-patch`, against the configuration in
        // service (the last good mesh).
        let manifest = std::fs::read_to_string(example("deployment.yaml")).expect("the example");
        client.goto(&format!("{console}/#paste")).await.expect("paste");
        client
            .execute(
                "document.getElementById('paste-manifest').value = arguments[0]; \
                 document.getElementById('paste-labels').value = 'istio-injection=enabled';",
                vec![json!(manifest)],
            )
            .await
            .expect("fill the form");
        client.find(Locator::Id("paste-submit")).await.expect("button").click().await.expect("submit");
        let patch = wait_until("the pasted pod's patch", || async {
            serde_json::from_str::<Value>(&text_of(&client, "paste-patch").await).ok()
        })
        .await;
        let explain = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
            .args(["explain", "-f", &example("deployment.yaml"), "--show-patch", "--mesh", &good_mesh, "-o", "json"])
            .output()
            .expect("explain runs");
        assert!(explain.status.success(), "{}", String::from_utf8_lossy(&explain.stderr));
        let explained: Value = serde_json::from_slice(&explain.stdout).expect("JSON");
        assert!(patch.as_array().is_some_and(|p| !p.is_empty()), "{patch}");
        assert_eq!(patch, explained["patch"], "the console's patch is explain --show-patch's");
        assert_eq!(text_of(&client, "paste-decision").await, "injected");
        screenshot(&client, "paste").await;

        // Without the page's token, the POST is refused: from the page itself and from curl.
        let status = client
            .execute(
                "return fetch('/api/explain', {method: 'POST', headers: {'Content-Type': 'application/json'}, \
                 body: JSON.stringify({manifest: arguments[0]})}).then(r => r.status);",
                vec![json!(manifest)],
            )
            .await
            .expect("fetch runs");
        assert_eq!(status, json!(403));
        client.close().await.expect("close the browser");
    });
    let body = json!({"manifest": "kind: Pod"}).to_string();
    let (_, status) = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        "Content-Type: application/json",
        "--data",
        &body,
        &format!("{console}/api/explain"),
    ]);
    assert_eq!(status, "403");
    let (_, status) = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("{console}/api/state"),
    ]);
    assert_eq!(status, "403", "the API needs the page's token");
    let (_, status) = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        &format!("Host: evil.example:{console_port}"),
        &format!("{console}/"),
    ]);
    assert_eq!(
        status, "421",
        "a rebinding page's Host gets neither the page nor its token"
    );
}
