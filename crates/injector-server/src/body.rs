//! Reading an admission's body before it takes an engine slot: bounded in size, in memory (the
//! bytes that arrived are reserved from the budget as they arrive), in time (the request's own
//! deadline) and in pace (a body that stops arriving is cut off), so that what waits here is
//! bounded by memory and time, never by a count a client can fill.
//!
//! When an admission is answered before its body was read in full (too large, or the budget
//! stayed spent), the rest of the body is read and thrown away after the answer, within the same
//! bounds ([`drain`]): an HTTP/1.1 client still sending would otherwise see its connection reset
//! instead of the answer.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::budget::{MemoryBudget, Reservation};

/// The span over which a body's pace is measured: every `min_rate` bytes (one window's worth)
/// must arrive within this long of the previous ones, or of the request head.
pub(crate) const PACE_WINDOW: Duration = Duration::from_secs(1);

/// The pace a body must keep. Pure.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// Bytes due per window (0: no pace).
    quota: usize,
    /// Bytes arrived in the current window.
    got: usize,
    /// When the current window's quota is due.
    due: Instant,
}

impl Pacer {
    /// A body starting at `start` that must bring `min_rate` bytes a second.
    pub fn new(start: Instant, min_rate: usize) -> Self {
        Pacer {
            quota: min_rate.saturating_mul(usize::try_from(PACE_WINDOW.as_secs()).unwrap_or(1)),
            got: 0,
            due: start + PACE_WINDOW,
        }
    }

    /// When the next bytes must have arrived; `None` when no pace is required.
    pub fn due(&self) -> Option<Instant> {
        (self.quota > 0).then_some(self.due)
    }

    /// `n` bytes arrived at `now`: a window's quota met opens the next window.
    pub fn arrived(&mut self, n: usize, now: Instant) {
        self.got = self.got.saturating_add(n);
        if self.got >= self.quota {
            self.got = 0;
            self.due = now + PACE_WINDOW;
        }
    }

    /// The server itself made the body wait for `waited` (for memory): not the client's delay.
    pub fn paused(&mut self, waited: Duration) {
        self.due += waited;
    }
}

/// Why a body could not be read in full.
pub(crate) enum BodyError {
    /// Over the size limit; the rest of the body is still unread.
    TooLarge(Incoming),
    /// The memory budget stayed spent; the rest of the body is still unread.
    BudgetSpent(Incoming),
    /// The body fell behind its pace.
    TooSlow,
    /// The request's deadline passed.
    Late,
    /// The stream failed (the client went away, a malformed chunk, ...).
    Read(String),
}

/// The bounds of one body.
pub(crate) struct Bounds {
    /// The size limit.
    pub limit: usize,
    /// The request's deadline.
    pub deadline: Instant,
    /// How long to wait for memory each time, at most (never past the deadline).
    pub memory_wait: Duration,
}

/// Reads `body` whole, holding each byte that arrives in `reservation`.
pub(crate) async fn collect(
    budget: &MemoryBudget,
    mut body: Incoming,
    bounds: &Bounds,
    mut pacer: Pacer,
    reservation: &mut Reservation,
) -> Result<Bytes, BodyError> {
    // The frames as they came (each a slice of a small read buffer, so what is held is about what
    // arrived), made one buffer of the exact size at the end.
    let mut frames: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        let data = match next_data(&mut body, &pacer, bounds.deadline).await? {
            Some(data) => data,
            None => break,
        };
        total += data.len();
        if total > bounds.limit {
            return Err(BodyError::TooLarge(body));
        }
        let now = Instant::now();
        // The server's own wait: when it runs out, the answer is `503`, not the client's `408`.
        let wait = bounds
            .memory_wait
            .min(bounds.deadline.saturating_duration_since(now));
        if !budget.hold_read(reservation, total, wait).await {
            return Err(BodyError::BudgetSpent(body));
        }
        pacer.paused(now.elapsed());
        pacer.arrived(data.len(), Instant::now());
        frames.push(data);
    }
    Ok(joined(frames, total))
}

/// The frames of a body as one buffer: one frame (the usual case for a small body) as it is,
/// without a copy.
fn joined(mut frames: Vec<Bytes>, total: usize) -> Bytes {
    if frames.len() <= 1 {
        return frames.pop().unwrap_or_default();
    }
    let mut buf = BytesMut::with_capacity(total);
    for frame in frames {
        buf.extend_from_slice(&frame);
    }
    buf.freeze()
}

/// The next data of `body`, `None` at its end, within its pace and the deadline.
async fn next_data(
    body: &mut Incoming,
    pacer: &Pacer,
    deadline: Instant,
) -> Result<Option<Bytes>, BodyError> {
    loop {
        let until = pacer.due().map_or(deadline, |due| due.min(deadline));
        let frame = match tokio::time::timeout_at(until.into(), body.frame()).await {
            Ok(Some(frame)) => frame.map_err(|e| BodyError::Read(e.to_string()))?,
            Ok(None) => return Ok(None),
            Err(_) if until >= deadline => return Err(BodyError::Late),
            Err(_) => return Err(BodyError::TooSlow),
        };
        if let Ok(data) = frame.into_data() {
            return Ok(Some(data));
        }
    }
}

/// Reads and throws away the rest of an unread body, up to `max` bytes, at the body's pace and
/// before `deadline`; returns the bytes thrown away. Holds no memory beyond one frame.
pub(crate) async fn drain(mut body: Incoming, max: usize, min_rate: usize, deadline: Instant) -> usize {
    let mut pacer = Pacer::new(Instant::now(), min_rate);
    let mut thrown = 0usize;
    while thrown < max {
        match next_data(&mut body, &pacer, deadline).await {
            Ok(Some(data)) => {
                thrown = thrown.saturating_add(data.len());
                pacer.arrived(data.len(), Instant::now());
            }
            Ok(None) | Err(_) => break,
        }
    }
    thrown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_joined_into_one_buffer_of_their_size() {
        let one = Bytes::from_static(b"whole");
        assert_eq!(
            joined(vec![one.clone()], 5).as_ptr(),
            one.as_ptr(),
            "one frame: no copy"
        );
        let body = joined(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cde")], 5);
        assert_eq!(&body[..], b"abcde");
        assert!(joined(Vec::new(), 0).is_empty());
    }

    #[test]
    fn each_window_of_body_is_due_within_a_window_of_the_last() {
        let start = Instant::now();
        let mut pacer = Pacer::new(start, 1000);
        assert_eq!(
            pacer.due(),
            Some(start + PACE_WINDOW),
            "the first bytes are due a window after the head"
        );
        let later = start + Duration::from_millis(300);
        pacer.arrived(999, later);
        assert_eq!(
            pacer.due(),
            Some(start + PACE_WINDOW),
            "a window's quota not met yet"
        );
        pacer.arrived(1, later);
        assert_eq!(
            pacer.due(),
            Some(later + PACE_WINDOW),
            "met: the next window starts"
        );
        pacer.arrived(5000, later);
        assert_eq!(
            pacer.due(),
            Some(later + PACE_WINDOW),
            "a burst does not buy a longer pause than one window"
        );
        pacer.paused(Duration::from_millis(200));
        assert_eq!(
            pacer.due(),
            Some(later + PACE_WINDOW + Duration::from_millis(200))
        );
        assert_eq!(Pacer::new(start, 0).due(), None, "no pace");
    }
}
