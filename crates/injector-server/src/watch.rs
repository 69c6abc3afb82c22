//! Watching a small set of files for changes: `notify` on the parent directories plus a
//! polling fallback, debounced.
//!
//! Kubernetes updates ConfigMap and Secret volumes by swapping a `..data` symlink inside the
//! mounted directory, so the files themselves are never modified in place: watching the
//! directory catches the swap. Events can still be missed (overlay filesystems, watch limits,
//! a directory that does not exist yet), so the files are also re-read every
//! `poll_interval`. A change is decided by comparing file *contents* with the last attempt,
//! which makes spurious events harmless and means a bad file is tried once, not in a loop.
//!
//! A change is handed over only once it has settled: two reads a debounce apart agree, and no
//! file is empty unless it stayed empty for [`EMPTY_GRACE`]. Writing a file in place (a shell's
//! `>`, many editors' save, `std::fs::write`) truncates it before writing, and on a loaded
//! machine the write may come long after the truncation; without the grace the half-written
//! file would be tried, rejected and reported as the user's edit.
//!
//! The watcher runs on its own thread (no async runtime needed) and stops when its
//! [`WatchHandle`] is dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a change may keep changing before it is taken as it is.
const SETTLE_LIMIT: Duration = Duration::from_secs(3);

/// How long an empty file is given to be written before it is taken as empty.
const EMPTY_GRACE: Duration = Duration::from_secs(1);

/// How files are watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchOptions {
    /// Re-read the files this often even without a notification (fallback). Default 5 s.
    pub poll_interval: Duration,
    /// Wait this long after a notification for the writes to settle. Default 100 ms.
    pub debounce: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            poll_interval: Duration::from_secs(5),
            debounce: Duration::from_millis(100),
        }
    }
}

/// The contents of every watched file, in order, or the first read error.
pub(crate) type Contents = Result<Vec<Vec<u8>>, String>;

/// Reads all files.
pub(crate) fn read_all(paths: &[PathBuf]) -> Contents {
    paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display())))
        .collect()
}

/// Stops the watcher thread when dropped.
pub(crate) struct WatchHandle {
    stop: Arc<AtomicBool>,
    _watcher: Option<notify::RecommendedWatcher>,
    wake: mpsc::Sender<()>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(());
    }
}

impl std::fmt::Debug for WatchHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchHandle").finish_non_exhaustive()
    }
}

/// Starts watching `paths`. `on_change` is called (on the watcher thread) with the new contents
/// whenever they differ from `initial` / the previous call. It returns `false` to stop.
pub(crate) fn spawn(
    name: &'static str,
    paths: Vec<PathBuf>,
    options: WatchOptions,
    initial: Contents,
    mut on_change: impl FnMut(Contents) -> bool + Send + 'static,
) -> WatchHandle {
    let (tx, rx) = mpsc::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_dirs(name, &paths, tx.clone());
    let thread_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("watch-{name}"))
        .spawn(move || {
            let mut last = initial;
            loop {
                match rx.recv_timeout(options.poll_interval) {
                    Ok(()) => {
                        // Debounce: let a burst of writes settle, then drain queued events.
                        std::thread::sleep(options.debounce);
                        while rx.try_recv().is_ok() {}
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
                if thread_stop.load(Ordering::SeqCst) {
                    return;
                }
                let first = read_all(&paths);
                if first == last {
                    continue;
                }
                let now = settled_read(&paths, first, options.debounce, &rx);
                if thread_stop.load(Ordering::SeqCst) {
                    return;
                }
                if now != last {
                    last = now.clone();
                    if !on_change(now) {
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(watch = name, error = %e, "cannot start file watcher thread; changes will not be picked up");
    }
    WatchHandle {
        stop,
        _watcher: watcher,
        wake: tx,
    }
}

/// Reads the files, from `first` (a read just made), until they have stopped changing: two
/// reads `pause` apart agree and no file is empty, or an empty file stayed empty for
/// [`EMPTY_GRACE`], or [`SETTLE_LIMIT`] passed. Notifications that arrive meanwhile are
/// drained: the reads themselves tell whether writing goes on.
fn settled_read(
    paths: &[PathBuf],
    first: Contents,
    pause: Duration,
    events: &mpsc::Receiver<()>,
) -> Contents {
    let start = Instant::now();
    let mut read = first;
    loop {
        std::thread::sleep(pause);
        while events.try_recv().is_ok() {}
        let again = read_all(paths);
        let stable = again == read;
        read = again;
        let waited = start.elapsed();
        if waited >= SETTLE_LIMIT || (stable && (!has_empty_file(&read) || waited >= EMPTY_GRACE)) {
            return read;
        }
    }
}

/// Whether some file was read and found empty (possibly truncated and not yet written).
fn has_empty_file(contents: &Contents) -> bool {
    contents
        .as_ref()
        .is_ok_and(|files| files.iter().any(Vec::is_empty))
}

fn watch_dirs(
    name: &'static str,
    paths: &[PathBuf],
    tx: mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher as _;
    let mut watcher = match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = tx.send(());
        }
    }) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(watch = name, error = %e, "file notifications unavailable; polling only");
            return None;
        }
    };
    let mut dirs: Vec<&Path> = paths
        .iter()
        .map(|p| p.parent().unwrap_or(Path::new(".")))
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Err(e) = watcher.watch(dir, notify::RecursiveMode::NonRecursive) {
            tracing::warn!(watch = name, dir = %dir.display(), error = %e, "cannot watch directory; polling only");
        }
    }
    Some(watcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atomic_write(path: &std::path::Path, contents: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, contents).expect("write");
        std::fs::rename(&tmp, path).expect("rename");
    }

    /// A watched file holding `one` in a fresh directory, polled every `poll_ms`: the directory
    /// (dropped last), the file, the watcher and the contents it hands over.
    struct Watched {
        path: std::path::PathBuf,
        handle: WatchHandle,
        changes: mpsc::Receiver<Contents>,
        _dir: tempfile::TempDir,
    }

    fn watched(poll_ms: u64) -> Watched {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "one").expect("write");
        let paths = vec![path.clone()];
        let (tx, changes) = mpsc::channel();
        let options = WatchOptions {
            poll_interval: Duration::from_millis(poll_ms),
            debounce: Duration::from_millis(20),
        };
        let handle = spawn("test", paths.clone(), options, read_all(&paths), move |c| {
            let _ = tx.send(c);
            true
        });
        Watched {
            path,
            handle,
            changes,
            _dir: dir,
        }
    }

    #[test]
    fn notices_changes_and_stops_on_drop() {
        let Watched {
            path,
            handle,
            changes,
            _dir,
        } = watched(200);
        atomic_write(&path, "two");
        let got = changes.recv_timeout(Duration::from_secs(5)).expect("change seen");
        assert_eq!(got, Ok(vec![b"two".to_vec()]));
        // Same contents again: no callback.
        atomic_write(&path, "two");
        assert!(changes.recv_timeout(Duration::from_millis(500)).is_err());
        drop(handle);
        let start = Instant::now();
        atomic_write(&path, "three");
        // After drop the thread exits; at most one racing callback.
        let _ = changes.recv_timeout(Duration::from_millis(500));
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    /// A file written in place is truncated first; a write that comes long after the truncation
    /// (a loaded machine) is still seen as one change, never as an empty file.
    #[test]
    fn a_file_truncated_then_written_late_is_handed_over_written() {
        let watched = watched(50);
        let file = std::fs::File::create(&watched.path).expect("truncate");
        std::thread::sleep(Duration::from_millis(400));
        std::io::Write::write_all(&mut &file, b"two").expect("write");
        drop(file);
        let got = watched
            .changes
            .recv_timeout(Duration::from_secs(5))
            .expect("change seen");
        assert_eq!(got, Ok(vec![b"two".to_vec()]));
        assert!(watched.changes.recv_timeout(Duration::from_millis(300)).is_err());
    }

    /// A file that is emptied on purpose is handed over as empty once the grace has passed, so
    /// the loader can reject it by name.
    #[test]
    fn a_file_left_empty_is_handed_over_after_the_grace() {
        let watched = watched(50);
        let start = Instant::now();
        std::fs::write(&watched.path, "").expect("empty");
        let got = watched
            .changes
            .recv_timeout(Duration::from_secs(5))
            .expect("change seen");
        assert_eq!(got, Ok(vec![Vec::new()]));
        assert!(start.elapsed() >= EMPTY_GRACE);
    }
}
