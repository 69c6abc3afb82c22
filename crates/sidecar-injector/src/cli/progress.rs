//! What the fleet tools show while they work, and how they stop when asked to.
//!
//! Progress goes to standard error, and only when it is a terminal and the work has taken more
//! than a second: a run piped into a file or another program prints nothing extra. Ctrl-C (and
//! SIGTERM) sets a flag the work checks between batches: the command then stops with exit
//! status 130 before anything is written, so no half-written report is left behind (a second
//! Ctrl-C ends the process at once).

use std::{
    io::IsTerminal,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its progress is shown.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// Progress on standard error, and the interruption flag.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
    terminal: bool,
    interrupted: Arc<AtomicBool>,
}

impl Progress {
    /// Starts counting; Ctrl-C and SIGTERM only set the flag from now on (twice: the process
    /// ends).
    pub fn start() -> Self {
        let interrupted = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // The second signal ends the process (exit status 130 for SIGINT, as a shell's).
            let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted));
            let _ = signal_hook::flag::register(signal, Arc::clone(&interrupted));
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        Self {
            bar,
            started: Instant::now(),
            shown: false,
            terminal: std::io::stderr().is_terminal(),
            interrupted,
        }
    }

    /// Says where the work is (`12,000 objects read, 9,500 workloads compared`), with what is
    /// left when known (`fraction` done, 0 to 1: the time left is estimated from it).
    pub fn update(&mut self, message: &str, fraction: Option<f64>) {
        if !self.shown && self.terminal && self.started.elapsed() >= QUIET_FOR {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(200));
            self.shown = true;
        }
        if !self.shown {
            return;
        }
        let estimate = fraction
            .filter(|f| *f > 0.01 && *f <= 1.0)
            .map(|fraction| {
                let elapsed = self.started.elapsed().as_secs_f64();
                let left = elapsed / fraction - elapsed;
                format!(" ({:.0}%, about {} s left)", fraction * 100.0, left.ceil())
            })
            .unwrap_or_default();
        self.bar.set_message(format!("{message}{estimate}"));
    }

    /// An error when Ctrl-C (or SIGTERM) was received: the caller stops, writing nothing.
    pub fn check(&self) -> Result<()> {
        if self.interrupted.load(Ordering::Relaxed) {
            self.bar.finish_and_clear();
            bail!(Interrupted);
        }
        Ok(())
    }

    /// Clears the progress line (before the report is printed).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// The error of an interrupted run: exit status 130, nothing written.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: nothing was written")]
pub struct Interrupted;

/// A number with thousands separators, for progress lines.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
    }
}
