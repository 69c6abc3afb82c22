//! Giving memory back to the OS after a burst, without paying for it on every admission.
//!
//! mimalloc returns freed memory to the OS ("purges" it) only after its purge delay, and only
//! when the allocator is called again after that delay: a server that goes quiet after a burst
//! would keep the burst's peak (143 MB after one admission of a pod with 100,000 annotations,
//! with mimalloc's default delay of 1 s).
//!
//! A delay of 0 purges memory as it is freed, but then an admission that frees a page only for
//! the next admission to take it again pays for both: an `madvise` and the page faults that
//! bring the page back. On the ReplicaSet review that was over a quarter of the server's CPU per
//! admission (0.150 against 0.108 ms with a 100 ms delay, 8 in flight, one core).
//!
//! So `serve` runs mimalloc with a short delay ([`PURGE_DELAY_MS`]) and a thread that, a few
//! times a second, allocates and frees one block too big for mimalloc's shared pages. Freeing such
//! a block is one of the calls after which mimalloc carries out the purges whose delay has passed,
//! whichever thread scheduled them: memory a burst freed is given back within a fraction of a
//! second once the server goes quiet, and memory that admissions keep reusing is never purged.

use std::time::Duration;

/// mimalloc's option for how long freed memory stays committed before it is given back.
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// The purge delay `serve` runs with, in milliseconds: longer than an admission reuses its pages
/// for, short next to how long a quiet server should wait to give a burst's memory back.
pub const PURGE_DELAY_MS: u64 = 100;

/// How often the nudging thread gives mimalloc the chance to purge.
pub const NUDGE_INTERVAL: Duration = Duration::from_millis(250);

/// A block larger than mimalloc's largest shared-page object (512 KiB): it gets a page of its
/// own, freed (and so followed by mimalloc's purge of what has expired) as soon as it is dropped.
/// Never written, so never backed by memory.
const NUDGE_BYTES: usize = 1 << 20;

/// mimalloc reads its options from the environment before `main`, so `serve` re-executes itself
/// once with [`PURGE_DELAY_ENV`] set, unless the environment already sets it (an operator's
/// choice wins).
pub fn ensure_purge_delay() {
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(PURGE_DELAY_ENV, PURGE_DELAY_MS.to_string()),
    );
    // Only reached when exec failed: serve anyway, keeping memory a little longer.
    eprintln!(
        "warning: could not re-execute with {PURGE_DELAY_ENV}={PURGE_DELAY_MS} ({error}); memory freed after a burst is given back later"
    );
}

/// Starts the thread that lets mimalloc carry out its expired purges while the server is quiet
/// (see the module's header). It sleeps between nudges and lives as long as the process.
pub fn spawn_purge_nudges() {
    let spawned = std::thread::Builder::new()
        .name("memory-return".to_owned())
        .spawn(|| {
            loop {
                std::thread::sleep(NUDGE_INTERVAL);
                nudge();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "could not start the memory-return thread; memory freed after a burst is given back later");
    }
}

/// One allocation and free of a block with a page of its own.
fn nudge() {
    let block: Vec<u8> = Vec::with_capacity(NUDGE_BYTES);
    // Without this, the compiler may drop an allocation that is never used.
    drop(std::hint::black_box(block));
}
