//! A generic hot-reloading configuration store.
//!
//! The store holds the last good configuration behind an [`ArcSwapOption`]: readers take an
//! `Arc` snapshot per admission without locking, and a reload replaces it atomically. A reload
//! that fails (unreadable file, parse error, template that does not compile) is **rejected**:
//! the last good configuration stays in service, the error is logged, counted
//! (`sidecar_injector_config_reloads_total{result="failure"}`,
//! `sidecar_injector_config_last_reload_success 0`) and shown on `/readyz`. One bad edit of a
//! ConfigMap must never take down pod creation cluster-wide.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use prometheus_client::registry::Registry;

use crate::console::history::{ConfigHistory, FileText};
use crate::metrics::ReloadMetrics;
use crate::watch::{self, WatchHandle, WatchOptions};

/// The configuration files, read, as handed to the loader.
#[derive(Debug, Clone, Default)]
pub struct ConfigFiles {
    files: Vec<ConfigFile>,
}

/// One named configuration file.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The role of the file, e.g. `injector-config`, `values`, `mesh`.
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Its contents (UTF-8).
    pub contents: String,
}

impl ConfigFiles {
    /// Files read by someone else (e.g. the keys of a ConfigMap, with `path` naming
    /// `configmap/NAMESPACE/NAME:KEY` for messages).
    pub fn new(files: Vec<ConfigFile>) -> Self {
        ConfigFiles { files }
    }

    /// The contents of the file named `name`, if one was given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.file(name).map(|f| f.contents.as_str())
    }

    /// The file named `name`, if one was given.
    pub fn file(&self, name: &str) -> Option<&ConfigFile> {
        self.files.iter().find(|f| f.name == name)
    }

    /// All files, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &ConfigFile> {
        self.files.iter()
    }
}

/// The state of the store, for logs, `/readyz` and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadStatus {
    /// A configuration is in service.
    pub loaded: bool,
    /// How many configurations have been accepted (1 after the initial load).
    pub generation: u64,
    /// The error of the last rejected load, cleared by the next successful one.
    pub last_error: Option<String>,
    /// When the configuration in service was loaded.
    pub last_success: Option<SystemTime>,
}

/// The owner's parser of the files. Its error is a message for people, naming the file and
/// what is wrong in it: the store only logs it ("configuration rejected"), counts it and shows
/// it on `/readyz` and the console, never matches on it, so the text is all it keeps. A
/// `String` (rather than a type parameter) also keeps a loader written as a closure
/// (`|files| Ok(..)`) free of type annotations.
type Loader<C> = dyn Fn(&ConfigFiles) -> Result<C, String> + Send + Sync;

struct Inner<C> {
    current: ArcSwapOption<C>,
    status: Mutex<ReloadStatus>,
    metrics: ReloadMetrics,
    names: Vec<String>,
    paths: Vec<PathBuf>,
    loader: Option<Box<Loader<C>>>,
    watch: Mutex<Option<WatchHandle>>,
    /// What a [`ConfigStore::manual`] store was last given, for [`ConfigStore::reload`].
    last_given: Mutex<Option<ConfigFiles>>,
    /// The files in service and the last accepted and rejected loads, for the console.
    history: Mutex<ConfigHistory>,
}

/// A hot-reloading configuration store; cheap to clone.
pub struct ConfigStore<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for ConfigStore<C> {
    fn clone(&self) -> Self {
        ConfigStore {
            inner: self.inner.clone(),
        }
    }
}

impl<C: Send + Sync + 'static> std::fmt::Debug for ConfigStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigStore")
            .field("paths", &self.inner.paths)
            .field("status", &self.status())
            .finish()
    }
}

impl<C: Send + Sync + 'static> ConfigStore<C> {
    /// A store holding one fixed configuration (e.g. the embedded default), never reloaded.
    pub fn fixed(config: C) -> Self {
        let store = Self::empty(Vec::new(), Vec::new(), None);
        store.accept(config, Vec::new());
        store
    }

    /// Loads `files` (`(name, path)` pairs) with `loader` now, then reloads them whenever they
    /// change (notify on the parent directories plus polling, see [`WatchOptions`]).
    ///
    /// The loader gets every file that was given; files not given are absent from
    /// [`ConfigFiles`] and the loader substitutes its embedded defaults. With no files at all,
    /// the loader runs once on an empty [`ConfigFiles`] (the embedded default) and nothing is
    /// watched. A failing initial load leaves the store *not loaded* (not ready) and watching
    /// for a fix; check [`ConfigStore::status`] to fail fast instead.
    ///
    /// The loader's error is the message logged and shown for a rejected load: it should name
    /// the file and what is wrong in it.
    pub fn watch_files<F>(files: Vec<(String, PathBuf)>, options: WatchOptions, loader: F) -> Self
    where
        F: Fn(&ConfigFiles) -> Result<C, String> + Send + Sync + 'static,
    {
        let (names, paths): (Vec<_>, Vec<_>) = files.into_iter().unzip();
        let store = Self::empty(names, paths, Some(Box::new(loader)));
        let initial = watch::read_all(&store.inner.paths);
        store.load(initial.clone());
        if !store.inner.paths.is_empty() {
            let weak: Weak<Inner<C>> = Arc::downgrade(&store.inner);
            let handle = watch::spawn(
                "config",
                store.inner.paths.clone(),
                options,
                initial,
                move |contents| match weak.upgrade() {
                    Some(inner) => {
                        ConfigStore { inner }.load(contents);
                        true
                    }
                    None => false,
                },
            );
            if let Ok(mut w) = store.inner.watch.lock() {
                *w = Some(handle);
            }
        }
        store
    }

    fn empty(names: Vec<String>, paths: Vec<PathBuf>, loader: Option<Box<Loader<C>>>) -> Self {
        ConfigStore {
            inner: Arc::new(Inner {
                current: ArcSwapOption::empty(),
                status: Mutex::new(ReloadStatus::default()),
                metrics: ReloadMetrics::default(),
                names,
                paths,
                loader,
                watch: Mutex::new(None),
                last_given: Mutex::new(None),
                history: Mutex::new(ConfigHistory::default()),
            }),
        }
    }

    /// A store fed by its owner through [`ConfigStore::load_files`] (cluster mode: the keys of
    /// the injector's ConfigMaps, followed by a watch). Not loaded until the first good set.
    pub fn manual<F>(loader: F) -> Self
    where
        F: Fn(&ConfigFiles) -> Result<C, String> + Send + Sync + 'static,
    {
        Self::empty(Vec::new(), Vec::new(), Some(Box::new(loader)))
    }

    /// Loads `files` with the loader, with the same semantics as a file reload: a result that
    /// fails is rejected and the last good configuration stays in service.
    pub fn load_files(&self, files: ConfigFiles) {
        if let Ok(mut last) = self.inner.last_given.lock() {
            *last = Some(files.clone());
        }
        self.load_parsed(Ok(files), &files_label(&self.inner.last_given));
    }

    /// Records that the source of the configuration went wrong (a ConfigMap deleted, a watch
    /// that cannot list): counted and shown like a rejected reload; the configuration in
    /// service, if any, stays.
    pub fn reject(&self, error: String) {
        self.load_parsed(Err(error), &files_label(&self.inner.last_given));
    }

    /// The configuration in service, if any.
    pub fn current(&self) -> Option<Arc<C>> {
        self.inner.current.load_full()
    }

    /// The reload state.
    pub fn status(&self) -> ReloadStatus {
        self.inner.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The files in service and the last accepted and rejected loads (the console's
    /// configuration page).
    pub fn history(&self) -> ConfigHistory {
        self.inner.history.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// The watched paths.
    pub fn paths(&self) -> &[PathBuf] {
        &self.inner.paths
    }

    /// Re-reads the files and reloads now (normally the watcher does this). A
    /// [`ConfigStore::manual`] store reloads what it was last given (e.g. after a setting the
    /// loader reads changed).
    pub fn reload(&self) {
        if self.inner.paths.is_empty() {
            let last = self.inner.last_given.lock().ok().and_then(|l| l.clone());
            if let Some(files) = last {
                self.load_files(files);
            }
            return;
        }
        self.load(watch::read_all(&self.inner.paths));
    }

    pub(crate) fn register_metrics(&self, registry: &mut Registry) {
        self.inner
            .metrics
            .register(registry, "sidecar_injector_config", "injector configuration");
    }

    fn load(&self, contents: watch::Contents) {
        let files = contents.and_then(|contents| {
            let mut files = ConfigFiles::default();
            for ((name, path), bytes) in self.inner.names.iter().zip(&self.inner.paths).zip(contents) {
                let contents = String::from_utf8(bytes)
                    .map_err(|_| format!("{} ({name}) is not valid UTF-8", path.display()))?;
                files.files.push(ConfigFile {
                    name: name.clone(),
                    path: path.clone(),
                    contents,
                });
            }
            Ok(files)
        });
        self.load_parsed(files, &self.display_paths());
    }

    fn load_parsed(&self, files: Result<ConfigFiles, String>, sources: &[String]) {
        let Some(loader) = &self.inner.loader else { return };
        let texts = files.as_ref().ok().map(file_texts);
        let result = files.and_then(|files| {
            // A panicking loader is a bug, but must not kill the watcher or the server.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loader(&files)))
                .unwrap_or_else(|_| Err("configuration loader panicked".to_owned()))
        });
        match result {
            Ok(config) => {
                self.accept(config, texts.unwrap_or_default());
                let gen_ = self.status().generation;
                tracing::info!(files = ?sources, generation = gen_, "configuration loaded");
            }
            Err(error) => {
                self.inner.metrics.record(false);
                let loaded = self.inner.current.load().is_some();
                if let Ok(mut s) = self.inner.status.lock() {
                    s.last_error = Some(error.clone());
                }
                if let Ok(mut h) = self.inner.history.lock() {
                    h.rejected(texts.as_deref(), &error, SystemTime::now());
                }
                if loaded {
                    tracing::error!(files = ?sources, %error,
                        "configuration rejected; keeping the last good configuration");
                } else {
                    tracing::error!(files = ?sources, %error,
                        "configuration could not be loaded; not ready until it is fixed");
                }
            }
        }
    }

    fn accept(&self, config: C, files: Vec<FileText>) {
        self.inner.current.store(Some(Arc::new(config)));
        self.inner.metrics.record(true);
        let now = SystemTime::now();
        let mut generation = 0;
        if let Ok(mut s) = self.inner.status.lock() {
            s.loaded = true;
            s.generation += 1;
            s.last_error = None;
            s.last_success = Some(now);
            generation = s.generation;
        }
        if let Ok(mut h) = self.inner.history.lock() {
            h.accepted(files, generation, now);
        }
    }

    fn display_paths(&self) -> Vec<String> {
        self.inner
            .paths
            .iter()
            .map(|p: &PathBuf| Path::display(p).to_string())
            .collect()
    }
}

/// The files' texts, for the history.
fn file_texts(files: &ConfigFiles) -> Vec<FileText> {
    files
        .iter()
        .map(|f| FileText {
            name: f.name.clone(),
            path: f.path.display().to_string(),
            contents: f.contents.clone(),
        })
        .collect()
}

/// The sources of what a manual store was last given, for log lines.
fn files_label(last: &Mutex<Option<ConfigFiles>>) -> Vec<String> {
    last.lock()
        .ok()
        .and_then(|l| {
            l.as_ref()
                .map(|f| f.iter().map(|f| f.path.display().to_string()).collect())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn parse(files: &ConfigFiles) -> Result<u32, String> {
        let text = files.get("n").unwrap_or("7");
        text.trim().parse::<u32>().map_err(|e| format!("n: {e}"))
    }

    fn wait_for(mut f: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    const FAST: WatchOptions = WatchOptions {
        poll_interval: Duration::from_millis(200),
        debounce: Duration::from_millis(20),
    };

    #[test]
    fn fixed_and_embedded_default() {
        let store = ConfigStore::fixed(3u32);
        assert_eq!(store.current().as_deref(), Some(&3));
        let store = ConfigStore::watch_files(Vec::new(), FAST, parse);
        assert_eq!(store.current().as_deref(), Some(&7));
        assert!(store.status().loaded);
    }

    #[test]
    fn reloads_good_and_rejects_bad() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("n.txt");
        std::fs::write(&path, "1").expect("write");
        let store = ConfigStore::watch_files(vec![("n".into(), path.clone())], FAST, parse);
        assert_eq!(store.current().as_deref(), Some(&1));
        std::fs::write(&path, "2").expect("write");
        assert!(wait_for(|| store.current().as_deref() == Some(&2)));
        std::fs::write(&path, "oops").expect("write");
        // The watcher may first see a truncated (empty) file; wait for the final error.
        assert!(wait_for(|| store
            .status()
            .last_error
            .unwrap_or_default()
            .contains("n: invalid digit")));
        assert_eq!(store.current().as_deref(), Some(&2), "last good kept");
        std::fs::write(&path, "3").expect("write");
        assert!(wait_for(|| store.current().as_deref() == Some(&3)));
        assert!(wait_for(|| store.status().last_error.is_none()));
        assert!(store.status().generation >= 3);
    }

    #[test]
    fn bad_initial_load_is_not_ready_until_fixed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("n.txt");
        let store = ConfigStore::watch_files(vec![("n".into(), path.clone())], FAST, parse);
        assert!(!store.status().loaded);
        assert!(
            store
                .status()
                .last_error
                .unwrap_or_default()
                .contains("cannot read")
        );
        std::fs::write(&path, "5").expect("write");
        assert!(wait_for(|| store.current().as_deref() == Some(&5)));
    }

    fn given(n: &str) -> ConfigFiles {
        ConfigFiles::new(vec![ConfigFile {
            name: "n".into(),
            path: "configmap/ns/cm:n".into(),
            contents: n.into(),
        }])
    }

    #[test]
    fn manual_store_keeps_the_last_good_and_reloads_what_it_was_given() {
        let store = ConfigStore::manual(parse);
        assert!(!store.status().loaded, "not ready before a first configuration");
        store.load_files(given("oops"));
        assert!(!store.status().loaded);
        store.load_files(given("4"));
        assert_eq!(store.current().as_deref(), Some(&4));
        store.load_files(given("bad"));
        assert_eq!(store.current().as_deref(), Some(&4), "last good kept");
        assert!(
            store
                .status()
                .last_error
                .unwrap_or_default()
                .contains("n: invalid digit")
        );
        store.reject("ConfigMap ns/cm was deleted".into());
        assert_eq!(store.current().as_deref(), Some(&4));
        assert_eq!(
            store.status().last_error.as_deref(),
            Some("ConfigMap ns/cm was deleted")
        );
        let generation = store.status().generation;
        store.load_files(given("6"));
        store.reload();
        assert_eq!(store.current().as_deref(), Some(&6));
        assert_eq!(
            store.status().generation,
            generation + 2,
            "reload re-ran the loader"
        );
    }

    #[test]
    fn symlink_swap_like_kubernetes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir(d.join("v1")).expect("mkdir");
        std::fs::write(d.join("v1/n"), "10").expect("write");
        std::os::unix::fs::symlink("v1", d.join("..data")).expect("symlink");
        std::os::unix::fs::symlink("..data/n", d.join("n")).expect("symlink");
        let store = ConfigStore::watch_files(vec![("n".into(), d.join("n"))], FAST, parse);
        assert_eq!(store.current().as_deref(), Some(&10));
        std::fs::create_dir(d.join("v2")).expect("mkdir");
        std::fs::write(d.join("v2/n"), "20").expect("write");
        std::os::unix::fs::symlink("v2", d.join("..data_tmp")).expect("symlink");
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).expect("rename");
        assert!(wait_for(|| store.current().as_deref() == Some(&20)));
    }
}
