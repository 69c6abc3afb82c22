//! Test support: where Istio's injector corpus is, for the tests that compare the injector with
//! Istio's own goldens.
//!
//! The corpus is a directory laid out like Istio's repository (`pkg/kube/inject/testdata`,
//! `manifests/charts/...`, `LICENSE`) with the settings of Istio's test profile under
//! `derived/` and a table of cases (`cases.json`, or `default-profile-cases.json`). It is found,
//! in this order:
//!
//! 1. the shared reference directory, `$SIDECAR_INJECTOR_SHARED/istio` (default `../shared/istio`
//!    beside the checkout), whose `cases.json` lists every case of Istio's test table;
//! 2. the copy `tools/istio-corpus/fetch.sh` made from the Go module `istio.io/istio` at the
//!    version `tools/istio-webhook/go.mod` pins, in `$SIDECAR_INJECTOR_CACHE/istio-corpus/VERSION`
//!    (default `~/.cache/sidecar-injector`), whose `default-profile-cases.json` lists the cases of
//!    the default profile;
//! 3. that copy made now, when Go is installed (downloaded through the Go module proxy and
//!    checked against `tools/istio-webhook/go.sum`).
//!
//! With none of them a test calls [`unavailable`] (or finds the corpus with [`istio_or_skip`]): it
//! says so on the terminal (not captured by the test harness) and skips, or fails when
//! `SIDECAR_INJECTOR_REQUIRE_CORPUS=1` (as CI sets). What only the shared copy has (the settings
//! of Istio's other test profiles, and the chart files whose outputs were recorded from that very
//! copy) is found with [`shared_only`], and missing it is reported the same way
//! ([`shared_missing`]).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

/// The environment variable that turns a missing corpus into a test failure.
pub const REQUIRE_ENV: &str = "SIDECAR_INJECTOR_REQUIRE_CORPUS";

/// The checkout's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared reference directory: `$SIDECAR_INJECTOR_SHARED`, default `../shared` beside the
/// checkout. It may not exist.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("SIDECAR_INJECTOR_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared"))
}

/// Where a corpus came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The shared reference directory (Istio's master branch, with the full case table).
    Shared,
    /// The Go module `istio.io/istio` at this version, through the module proxy.
    ModuleProxy(String),
}

/// Istio's injector corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The directory laid out like Istio's repository.
    pub root: PathBuf,
    /// Where it came from.
    pub source: Source,
}

impl Corpus {
    /// A path relative to the corpus root (e.g. `pkg/kube/inject/testdata/inject`).
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// A path as the shared reference directory names it (`istio/<path in the corpus>`, the form
    /// the template oracle's cases and fixtures use) in this corpus; `None` for a path outside
    /// `istio/`. The file may not exist (the module's copy lacks some of the shared one's).
    pub fn shared_path(&self, path: &str) -> Option<PathBuf> {
        path.strip_prefix("istio/").map(|rest| self.root.join(rest))
    }

    /// The text of a file `relative` to the corpus root, if it is there.
    pub fn read(&self, relative: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(relative)).ok()
    }

    /// The table of cases: `cases.json` (every case) where there is one, else
    /// `default-profile-cases.json` (the default profile's cases).
    pub fn case_table(&self) -> PathBuf {
        let full = self.root.join("cases.json");
        if full.is_file() {
            full
        } else {
            self.root.join("default-profile-cases.json")
        }
    }

    /// Where it came from, for a test's report.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Shared => format!("the shared corpus at {}", self.root.display()),
            Source::ModuleProxy(version) => format!(
                "istio.io/istio {version} from the Go module proxy, at {}",
                self.root.display()
            ),
        }
    }
}

/// Istio's corpus: the shared copy where present, else the pinned module's (fetched if Go is
/// installed). `None` when neither is at hand (then call [`unavailable`]).
pub fn istio() -> Option<Corpus> {
    shared_istio().or_else(module_proxy)
}

/// Istio's corpus, as [`istio`] finds it; when there is none, [`unavailable`] says so for `what`
/// (the test, and what it needs the corpus for) and this gives `None`, for the test to skip.
#[track_caller]
pub fn istio_or_skip(what: &str) -> Option<Corpus> {
    let found = istio();
    if found.is_none() {
        unavailable(what);
    }
    found
}

/// The shared copy of Istio's corpus, for what only it has: its other settings profiles, and
/// the files whose outputs were recorded from that very copy (a different Istio version renders
/// differently). Without it, [`skip_or_fail`] says that `what` needs it, and this gives `None`.
#[track_caller]
pub fn shared_only(what: &str) -> Option<Corpus> {
    let found = shared_istio();
    if found.is_none() {
        shared_missing(what);
    }
    found
}

/// `what` needs the shared copy of Istio's corpus, which is not there: [`skip_or_fail`] with
/// where it was looked for.
#[track_caller]
pub fn shared_missing(what: &str) {
    skip_or_fail(&format!(
        "{what}: needs the shared copy of Istio's corpus, {}/istio (set SIDECAR_INJECTOR_SHARED); \
         the module proxy's copy of istio.io/istio does not have it",
        shared_dir().display()
    ));
}

/// The shared copy of Istio's corpus, where present.
pub fn shared_istio() -> Option<Corpus> {
    let root = shared_dir().join("istio");
    root.join("pkg/kube/inject/testdata/inject")
        .is_dir()
        .then_some(Corpus {
            root,
            source: Source::Shared,
        })
}

/// The version of `istio.io/istio` that `tools/istio-webhook/go.mod` pins.
pub fn pinned_version() -> Option<String> {
    let go_mod = std::fs::read_to_string(workspace_root().join("tools/istio-webhook/go.mod")).ok()?;
    go_mod.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("istio.io/istio"))
            .then(|| words.next().map(str::to_owned))
            .flatten()
    })
}

fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("SIDECAR_INJECTOR_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/sidecar-injector")))
}

/// The pinned module's corpus: the cached copy, or one `tools/istio-corpus/fetch.sh` makes now
/// when Go is installed (once per test process).
pub fn module_proxy() -> Option<Corpus> {
    static FOUND: OnceLock<Option<Corpus>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let version = pinned_version()?;
            let complete = |root: &Path| {
                root.join(".complete").is_file() && root.join("default-profile-cases.json").is_file()
            };
            let cached = cache_dir()?.join("istio-corpus").join(&version);
            let root = if complete(&cached) { cached } else { fetch()? };
            complete(&root).then_some(Corpus {
                root,
                source: Source::ModuleProxy(version),
            })
        })
        .clone()
}

/// Runs `tools/istio-corpus/fetch.sh` if Go is installed; the corpus directory it printed.
fn fetch() -> Option<PathBuf> {
    let go = Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !go.is_ok_and(|status| status.success()) {
        return None;
    }
    let script = workspace_root().join("tools/istio-corpus/fetch.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    if !output.status.success() {
        shout(&format!("{} failed ({})", script.display(), output.status));
        return None;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().last().map(PathBuf::from)
}

/// An Istio release whose injector goldens are in the shared directory's `istio-releases/`.
#[derive(Debug, Clone)]
pub struct Release {
    /// The release, e.g. `1.26.8`.
    pub version: String,
    /// Its folder: `inject/` (inputs and goldens) and `settings/` (`config.yaml`,
    /// `values.json`, `mesh.yaml` its own chart renders).
    pub dir: PathBuf,
}

impl Release {
    /// The release's minor version, e.g. `(1, 26)`.
    pub fn minor(&self) -> (u32, u32) {
        let mut parts = self.version.split('.').map(|p| p.parse().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }
}

/// The releases in `$SIDECAR_INJECTOR_SHARED/istio-releases/`, oldest first (empty when absent).
pub fn releases() -> Vec<Release> {
    let root = shared_dir().join("istio-releases");
    let mut found: Vec<Release> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().join("inject").is_dir())
        .map(|entry| Release {
            version: entry.file_name().to_string_lossy().into_owned(),
            dir: entry.path(),
        })
        .collect();
    found.sort_by_key(|release| {
        release
            .version
            .split('.')
            .map(|p| p.parse::<u32>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    found
}

/// Whether a missing corpus fails the test (`SIDECAR_INJECTOR_REQUIRE_CORPUS=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|value| value == "1")
}

/// Istio's corpus is not at hand for `what`: [`skip_or_fail`] with where it was looked for.
#[track_caller]
pub fn unavailable(what: &str) {
    skip_or_fail(&format!(
        "{what}: Istio's corpus is not at hand: neither {}/istio nor istio.io/istio {} from the Go \
         module proxy (cached under $SIDECAR_INJECTOR_CACHE or ~/.cache/sidecar-injector/istio-corpus, \
         or fetched by tools/istio-corpus/fetch.sh when Go is installed)",
        shared_dir().display(),
        pinned_version().unwrap_or_else(|| "(no pin in tools/istio-webhook/go.mod)".to_owned()),
    ));
}

/// Something a test needs is missing (`message` says what and where): fails the test when
/// [`required`], else says so on the terminal (past the test harness's capture) and returns, for
/// the test to skip.
#[track_caller]
pub fn skip_or_fail(message: &str) {
    if required() {
        #[allow(clippy::panic)]
        {
            panic!("{message}; {REQUIRE_ENV}=1 makes this a failure");
        }
    }
    shout(&format!("SKIPPED {message}"));
}

/// A line on the terminal's stderr, not captured by the test harness.
fn shout(message: &str) {
    let _ = writeln!(std::io::stderr(), "\n!!!!!!!!!! {message} !!!!!!!!!!\n");
}
