//! Caches that prove themselves in production: one cached answer in N is computed again without
//! any cache, on a background thread of its own, and compared.
//!
//! Two caches answer admissions without the whole injection: the server's outcome cache
//! (identical admissions) and the engine's own (for this engine, renders reused by what the
//! templates read: [`Admission::cached`]). Each is sound by an argument its tests check, but a
//! wrong answer is a wrong sidecar in somebody's pod, so the server keeps checking: every
//! `every`-th cached answer is handed, with its admission and configuration, to one background
//! thread at the lowest scheduling priority, which asks the engine for the same admission with
//! [`Caches::Skip`] and compares the outcomes. The hand-off never waits: a full queue drops the
//! check. A difference is counted in `sidecar_injector_shadow_mismatches_total{cache}`, logged
//! with the review's uid, and turns that cache off for the configuration in service (until the
//! next configuration is loaded).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::injector::{Admission, AdmissionInput, AdmissionOutcome, Caches, Injector};

/// Checks waiting for the background thread; more are dropped.
const QUEUE: usize = 4;

/// Which cache gave an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cache {
    /// The server's outcome cache.
    Outcome,
    /// The engine's own caches.
    Engine,
}

impl Cache {
    fn label(self) -> &'static str {
        match self {
            Cache::Outcome => "outcome",
            Cache::Engine => "engine",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CacheLabel {
    cache: &'static str,
}

/// One cached answer to compute again.
struct Check<C> {
    config: Arc<C>,
    input: AdmissionInput,
    outcome: AdmissionOutcome,
    cache: Cache,
}

/// The caches found wrong, for one configuration.
struct Trust<C> {
    /// The configuration (held, so that its address names no other while it is recorded).
    held: Mutex<Option<Arc<C>>>,
    /// Its address, for the admissions' look without a lock.
    address: AtomicUsize,
    /// By [`Cache`]: turned off for it.
    off: [AtomicBool; 2],
}

impl<C> Trust<C> {
    fn trusts(&self, config: &Arc<C>, cache: Cache) -> bool {
        self.address.load(Ordering::Acquire) != address_of(config)
            || !self.off[cache as usize].load(Ordering::Acquire)
    }

    /// Turns `cache` off for `config` (the record of an older configuration goes).
    fn distrust(&self, config: &Arc<C>, cache: Cache) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if self.address.load(Ordering::Acquire) != address_of(config) {
            for off in &self.off {
                off.store(false, Ordering::Release);
            }
            *held = Some(config.clone());
            self.address.store(address_of(config), Ordering::Release);
        }
        self.off[cache as usize].store(true, Ordering::Release);
    }
}

fn address_of<C>(config: &Arc<C>) -> usize {
    Arc::as_ptr(config) as usize
}

/// The sampler, the queue and the record of caches turned off.
pub(crate) struct ShadowCheck<C> {
    every: u64,
    cached_answers: AtomicU64,
    queue: Option<SyncSender<Check<C>>>,
    trust: Arc<Trust<C>>,
    metrics: Metrics,
}

#[derive(Clone, Default)]
struct Metrics {
    checks: Counter,
    dropped: Counter,
    mismatches: Family<CacheLabel, Counter>,
}

impl<C: Send + Sync + 'static> ShadowCheck<C> {
    /// Checks one cached answer in `every` (0: none) with `injector`, on a thread of its own.
    pub fn start<I: Injector<Config = C>>(every: u32, injector: Arc<I>, registry: &mut Registry) -> Self {
        let metrics = Metrics::default();
        registry.register(
            "sidecar_injector_shadow_checks",
            "Cached answers computed again without caches and compared (one in --shadow-check-every).",
            metrics.checks.clone(),
        );
        registry.register(
            "sidecar_injector_shadow_checks_dropped",
            "Shadow checks dropped because the checking thread was busy.",
            metrics.dropped.clone(),
        );
        registry.register(
            "sidecar_injector_shadow_mismatches",
            "Cached answers that differed from the answer without caches, by cache (outcome: the \
             server's outcome cache; engine: the engine's own). Each turns that cache off for the \
             configuration in service.",
            metrics.mismatches.clone(),
        );
        let trust = Arc::new(Trust {
            held: Mutex::new(None),
            address: AtomicUsize::new(0),
            off: [AtomicBool::new(false), AtomicBool::new(false)],
        });
        let queue = (every > 0)
            .then(|| {
                let (sender, receiver) = sync_channel(QUEUE);
                let worker = Worker {
                    injector,
                    trust: trust.clone(),
                    metrics: metrics.clone(),
                };
                std::thread::Builder::new()
                    .name("shadow-check".to_owned())
                    .spawn(move || worker.run(receiver))
                    .ok()
                    .map(|_| sender)
            })
            .flatten();
        ShadowCheck {
            every: u64::from(every),
            cached_answers: AtomicU64::new(0),
            queue,
            trust,
            metrics,
        }
    }

    /// Whether `cache` may answer under `config` (no shadow check found it wrong there).
    pub fn trusts(&self, config: &Arc<C>, cache: Cache) -> bool {
        self.trust.trusts(config, cache)
    }

    /// Offers a cached answer: every `every`-th is queued for a check, unless the queue is full.
    pub fn offer(&self, config: &Arc<C>, input: &AdmissionInput, outcome: &AdmissionOutcome, cache: Cache) {
        let Some(queue) = &self.queue else {
            return;
        };
        let seen = self.cached_answers.fetch_add(1, Ordering::Relaxed) + 1;
        if !seen.is_multiple_of(self.every) {
            return;
        }
        let check = Check {
            config: config.clone(),
            input: input.clone(),
            outcome: outcome.clone(),
            cache,
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = queue.try_send(check) {
            self.metrics.dropped.inc();
        }
    }
}

/// The background thread's side.
struct Worker<I: Injector> {
    injector: Arc<I>,
    trust: Arc<Trust<I::Config>>,
    metrics: Metrics,
}

impl<I: Injector> Worker<I> {
    /// Checks what comes until the sampler is dropped.
    fn run(self, checks: Receiver<Check<I::Config>>) {
        lower_priority();
        while let Ok(check) = checks.recv() {
            self.check(check);
        }
    }

    fn check(&self, check: Check<I::Config>) {
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.injector.admit(&check.config, &check.input, Caches::Skip)
        }));
        self.metrics.checks.inc();
        let Ok(Admission { outcome, .. }) = again else {
            return;
        };
        if outcome == check.outcome {
            return;
        }
        self.metrics
            .mismatches
            .get_or_create(&CacheLabel {
                cache: check.cache.label(),
            })
            .inc();
        tracing::error!(
            uid = %check.input.uid,
            namespace = %check.input.namespace,
            cache = check.cache.label(),
            "a cached answer differs from the answer computed without caches: that cache is off for the configuration in service"
        );
        self.trust.distrust(&check.config, check.cache);
    }
}

/// Puts the calling thread at the lowest scheduling priority, so checks run on what admissions
/// leave over (Linux gives each thread a nice value of its own).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
    }
}
