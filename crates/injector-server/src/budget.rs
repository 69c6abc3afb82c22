//! The memory budget of the admissions in flight: a semaphore of KiB, of which each admission
//! holds a share proportional to its body.
//!
//! A count of admissions alone does not bound memory: 64 admissions of 6 MiB each weigh a
//! hundred times more than 64 ordinary pods. The memory an admission needs grows with its body
//! (the decoded JSON tree and the engine's working copies of the pod), so an admission reserves
//! `body × EXPANSION` before it is decoded, from its declared `Content-Length`, or step by step
//! while a body of unknown length streams in, and keeps the reservation until its response is
//! built. When the budget is spent, an admission waits (as for a slot), then gets `503` with
//! `Retry-After`.
//!
//! The budget has two pools so that big admissions cannot starve ordinary ones: a quarter of
//! it serves admissions costing up to [`SMALL_MAX_KIB`] (pods up to about 85 KB, nearly all),
//! the rest serves bigger ones. A reservation is never more than its pool, so one admission of
//! the largest allowed body always fits alone, and ordinary pods keep being admitted while it
//! runs.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of memory an admission needs per byte of body, at worst: measured on the real engine
/// with a pod of 100,000 small annotations, the shape that weighs most per byte (many small
/// JSON nodes): a 2.98 MB body raised the peak RSS by 130 MB (44x); see README "Reliability".
pub(crate) const EXPANSION: usize = 48;

/// The least an admission reserves: the engine's fixed working set for a small pod.
const MIN_KIB: usize = 256;

/// Admissions reserving up to this much come from the pool for ordinary pods.
pub(crate) const SMALL_MAX_KIB: usize = 4 << 10;

/// The admissions' memory budget.
pub(crate) struct MemoryBudget {
    /// For admissions costing up to [`SMALL_MAX_KIB`].
    small: Arc<Semaphore>,
    small_kib: usize,
    /// For bigger ones.
    large: Arc<Semaphore>,
    large_kib: usize,
    total_kib: usize,
    /// KiB reserved now.
    reserved: Gauge,
}

/// A share of the budget; given back when dropped.
pub(crate) struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    /// Whether `permit` comes from the large pool.
    large: bool,
    /// The body size this reservation covers.
    covers: usize,
    reserved: Gauge,
}

impl MemoryBudget {
    /// A budget of `total_bytes` (at least 4 × [`MIN_KIB`]).
    pub fn new(total_bytes: usize) -> Self {
        let total_kib = (total_bytes / 1024).clamp(4 * MIN_KIB, Semaphore::MAX_PERMITS);
        let small_kib = total_kib / 4;
        let large_kib = total_kib - small_kib;
        MemoryBudget {
            small: Arc::new(Semaphore::new(small_kib)),
            small_kib,
            large: Arc::new(Semaphore::new(large_kib)),
            large_kib,
            total_kib,
            reserved: Gauge::default(),
        }
    }

    /// The gauge of reserved bytes, for `/metrics`.
    pub fn reserved_gauge(&self) -> Gauge {
        self.reserved.clone()
    }

    /// The budget in bytes.
    pub fn total_bytes(&self) -> usize {
        self.total_kib.saturating_mul(1024)
    }

    /// KiB an admission with a body of `body_bytes` reserves.
    pub fn cost_kib(&self, body_bytes: usize) -> usize {
        let cost = body_bytes.div_ceil(1024).saturating_mul(EXPANSION).max(MIN_KIB);
        if cost <= SMALL_MAX_KIB.min(self.small_kib) {
            cost
        } else {
            cost.min(self.large_kib)
        }
    }

    /// Reserves for a body of `body_bytes`, waiting up to `wait`; `None` if the budget stayed
    /// spent.
    pub async fn reserve(&self, body_bytes: usize, wait: Duration) -> Option<Reservation> {
        let mut reservation = Reservation {
            permit: None,
            large: false,
            covers: 0,
            reserved: self.reserved.clone(),
        };
        self.grow(&mut reservation, body_bytes, wait)
            .await
            .then_some(reservation)
    }

    /// Extends `reservation` to cover a body of `body_bytes`, waiting up to `wait`; `false`
    /// if the budget stayed spent (the reservation keeps what it had).
    pub async fn grow(&self, reservation: &mut Reservation, body_bytes: usize, wait: Duration) -> bool {
        if body_bytes <= reservation.covers {
            return true;
        }
        let cost = self.cost_kib(body_bytes);
        let large = cost > SMALL_MAX_KIB.min(self.small_kib);
        // Moving to the large pool: the whole cost comes from it, the small share goes back.
        let held = match &reservation.permit {
            Some(p) if large == reservation.large => p.num_permits(),
            _ => 0,
        };
        let extra = cost.saturating_sub(held);
        if extra > 0 {
            let Ok(extra_u32) = u32::try_from(extra) else {
                return false;
            };
            let pool = if large { &self.large } else { &self.small };
            let acquired = tokio::time::timeout(wait, pool.clone().acquire_many_owned(extra_u32)).await;
            let Ok(Ok(permit)) = acquired else {
                return false;
            };
            reservation.reserved.inc_by(kib_to_bytes(extra));
            match &mut reservation.permit {
                Some(held) if large == reservation.large => held.merge(permit),
                _ => {
                    if let Some(old) = reservation.permit.replace(permit) {
                        reservation.reserved.dec_by(kib_to_bytes(old.num_permits()));
                    }
                }
            }
            reservation.large = large;
        }
        reservation.covers = body_bytes;
        true
    }
}

impl Reservation {
    /// Whether the reservation covers a body of `body_bytes`.
    pub fn covers(&self, body_bytes: usize) -> bool {
        body_bytes <= self.covers
    }

    /// The body size covered.
    pub fn covered(&self) -> usize {
        self.covers
    }
}

fn kib_to_bytes(kib: usize) -> i64 {
    i64::try_from(kib.saturating_mul(1024)).unwrap_or(i64::MAX)
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(permit) = &self.permit {
            self.reserved.dec_by(kib_to_bytes(permit.num_permits()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[tokio::test]
    async fn admissions_share_the_budget_by_body_size() {
        let budget = MemoryBudget::new(128 * MIB);
        let wait = Duration::from_millis(50);
        // 1 MiB × 48 = 48 MiB each from the 96 MiB large pool: two fit, the third gives up.
        let a = budget.reserve(MIB, wait).await.expect("first fits");
        let b = budget.reserve(MIB, wait).await.expect("second fits");
        assert!(
            budget.reserve(MIB, wait).await.is_none(),
            "third waits, then fails"
        );
        assert_eq!(budget.reserved.get(), i64::try_from(96 * MIB).unwrap_or(0));
        // Ordinary pods still get in: they have their own pool.
        let mut small = Vec::new();
        for _ in 0..100 {
            small.extend(budget.reserve(3_000, wait).await);
        }
        assert_eq!(small.len(), 100, "100 ordinary pods fit beside the big ones");
        drop((a, b, small));
        assert_eq!(budget.reserved.get(), 0);
        assert!(budget.reserve(MIB, wait).await.is_some(), "given back");
    }

    #[tokio::test]
    async fn the_largest_body_fits_alone_and_reservations_grow_while_streaming() {
        let budget = MemoryBudget::new(64 * MIB);
        let wait = Duration::from_millis(50);
        assert_eq!(budget.cost_kib(6 * MIB), 48 * 1024, "capped at the large pool");
        let mut r = budget.reserve(64 << 10, wait).await.expect("reserved");
        assert_eq!(
            r.permit.as_ref().map(OwnedSemaphorePermit::num_permits),
            Some(64 * 48)
        );
        assert!(!r.large);
        assert!(budget.grow(&mut r, 1 << 20, wait).await);
        assert_eq!(
            r.permit.as_ref().map(OwnedSemaphorePermit::num_permits),
            Some(1024 * 48)
        );
        assert!(r.large, "moved to the large pool");
        assert_eq!(
            budget.small.available_permits(),
            16 * 1024,
            "the small share is back"
        );
        assert!(budget.grow(&mut r, 6 * MIB, wait).await);
        assert!(
            budget.reserve(MIB, wait).await.is_none(),
            "the large pool is held"
        );
        assert!(
            budget.reserve(3_000, wait).await.is_some(),
            "ordinary pods still fit"
        );
        drop(r);
        assert_eq!(budget.reserved.get(), 0);
    }
}
