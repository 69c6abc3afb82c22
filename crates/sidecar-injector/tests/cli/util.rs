//! Running the binary and writing input files.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// What a run of the binary produced.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The stdout as JSON; panics with the whole output when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts a failure with an empty stdout and a stderr containing every fragment.
    pub fn assert_error(&self, fragments: &[&str]) {
        assert_eq!(
            self.code, 1,
            "expected exit code 1\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        assert!(
            self.stdout.is_empty(),
            "nothing may be printed to stdout on error, got:\n{}",
            self.stdout
        );
        for fragment in fragments {
            assert!(
                self.stderr.contains(fragment),
                "stderr lacks {fragment:?}:\n{}",
                self.stderr
            );
        }
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

/// Runs the binary with `args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("stdin is written");
    }
    let output = child.wait_with_output().expect("the binary finishes");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// A temporary directory holding input files.
pub struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The directory itself.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `name` with `text` and returns its path as a string.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("the file is written");
        path.display().to_string()
    }
}

/// The repository's `examples/` directory.
pub fn example(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    path.display().to_string()
}

impl Files {
    /// The path of `name` in the directory (not created).
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The names in the directory, sorted (to find temporary files left behind).
    pub fn leftovers(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("the directory is read")
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// A size field of a process's `/proc/PID/status` (`VmRSS:`, `VmHWM:`, ...), in KiB; `None` when
/// it cannot be read.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A release build to run instead of this crate's debug build (`SIDECAR_INJECTOR_BIN`), for the
/// cases a debug build is too slow to run whole.
pub fn release_binary() -> Option<String> {
    std::env::var("SIDECAR_INJECTOR_BIN")
        .ok()
        .filter(|b| !b.is_empty())
}

/// The binary to serve with: [`release_binary`] when given, else this crate's debug build.
pub fn binary_under_test() -> String {
    release_binary().unwrap_or_else(|| env!("CARGO_BIN_EXE_sidecar-injector").to_owned())
}

/// A loopback port for a server a test starts: free when asked, and below the system's range of
/// ephemeral ports. A port the kernel hands out for port 0 is an ephemeral one, which any
/// outgoing connection may take as its local port before the server binds it (the abuse suite
/// opens thousands while other tests run), and the server then fails with "address in use".
/// Ports are handed out in turn from a start that differs per process, so that two tests of
/// this process never get the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOWEST: u32 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral.saturating_sub(LOWEST);
    let start = std::process::id().wrapping_mul(7_919);
    for _ in 0..span.min(1_000) {
        let offset = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) % span.max(1);
        let Ok(port) = u16::try_from(LOWEST + offset) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
