//! The memory budget of the admissions in flight: semaphores of KiB, of which each admission
//! holds a share proportional to its body.
//!
//! A count of admissions alone does not bound memory: 64 admissions of 6 MiB each weigh a
//! hundred times more than 64 ordinary pods. An admission holds memory in two phases:
//!
//! 1. **Reading** its body: the bytes that have arrived, one for one, reserved as they arrive
//!    (never from the declared `Content-Length`: a client that announces 6 MiB and stalls holds
//!    nothing it has not sent). The read is paced and bounded by the request's deadline, so
//!    nothing stays reserved for long without the client doing the work.
//! 2. **Running**, once the whole body is in: `body × EXPANSION` (the decoded JSON tree and the
//!    engine's working copies of the pod, at least [`MIN_KIB`]), kept until its response is built.
//!
//! When the budget is spent, an admission waits (as for a slot), then gets `503` with
//! `Retry-After`.
//!
//! The budget has three pools so that big admissions cannot starve ordinary ones, nor the bodies
//! being read the admissions that run:
//!
//! * a quarter serves admissions costing up to [`SMALL_MAX_KIB`] (pods up to about 85 KB, nearly
//!   all), in both phases;
//! * of the rest, a quarter holds the bytes of bigger bodies while they are read, and three
//!   quarters the bigger admissions that run. A running reservation is never more than its pool,
//!   so one admission of the largest allowed body always runs alone, however many big bodies are
//!   being read meanwhile, and ordinary pods keep being admitted while it runs.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of memory an admission needs per byte of body, at worst: measured on the real engine
/// with a pod of 100,000 small annotations, the shape that weighs most per byte (many small
/// JSON nodes): a 2.98 MB body raised the peak RSS by 130 MB (44x); see docs/reliability.md.
pub(crate) const EXPANSION: usize = 48;

/// The least a running admission reserves: the engine's fixed working set for a small pod.
const MIN_KIB: usize = 256;

/// Admissions costing up to this much come from the pool for ordinary pods.
pub(crate) const SMALL_MAX_KIB: usize = 4 << 10;

/// One pool of the budget.
struct Pool {
    semaphore: Arc<Semaphore>,
    kib: usize,
}

impl Pool {
    fn new(kib: usize) -> Self {
        Pool {
            semaphore: Arc::new(Semaphore::new(kib)),
            kib,
        }
    }
}

/// Which pool a reservation draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolId {
    /// Ordinary pods, reading and running.
    Small,
    /// Bigger bodies while they are read.
    Reading,
    /// Bigger admissions while they run.
    Running,
}

/// The admissions' memory budget.
pub(crate) struct MemoryBudget {
    small: Pool,
    reading: Pool,
    running: Pool,
    total_kib: usize,
    /// Bytes reserved now.
    reserved: Gauge,
}

/// A share of the budget; given back when dropped.
pub(crate) struct Reservation {
    permit: Option<(PoolId, OwnedSemaphorePermit)>,
    /// The body size this reservation covers (read so far, or whole once running).
    covers: usize,
    reserved: Gauge,
}

impl MemoryBudget {
    /// A budget of `total_bytes` (at least 4 × [`MIN_KIB`]).
    pub fn new(total_bytes: usize) -> Self {
        let total_kib = (total_bytes / 1024).clamp(4 * MIN_KIB, Semaphore::MAX_PERMITS);
        let small_kib = total_kib / 4;
        let reading_kib = (total_kib - small_kib) / 4;
        let running_kib = total_kib - small_kib - reading_kib;
        MemoryBudget {
            small: Pool::new(small_kib),
            reading: Pool::new(reading_kib),
            running: Pool::new(running_kib),
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

    fn pool(&self, id: PoolId) -> &Pool {
        match id {
            PoolId::Small => &self.small,
            PoolId::Reading => &self.reading,
            PoolId::Running => &self.running,
        }
    }

    /// Whether a body of `body_bytes` makes an ordinary admission (the small pool).
    fn is_small(&self, body_bytes: usize) -> bool {
        body_kib(body_bytes).saturating_mul(EXPANSION).max(MIN_KIB) <= SMALL_MAX_KIB.min(self.small.kib)
    }

    /// KiB a running admission with a body of `body_bytes` reserves.
    pub fn cost_kib(&self, body_bytes: usize) -> usize {
        let cost = body_kib(body_bytes).saturating_mul(EXPANSION).max(MIN_KIB);
        if self.is_small(body_bytes) {
            cost
        } else {
            cost.min(self.running.kib)
        }
    }

    /// Nothing reserved yet: a body about to be read.
    pub fn empty(&self) -> Reservation {
        Reservation {
            permit: None,
            covers: 0,
            reserved: self.reserved.clone(),
        }
    }

    /// Reading: extends `reservation` to hold `received` bytes of body as they are (one for
    /// one), waiting up to `wait`; `false` if the budget stayed spent (the reservation keeps what
    /// it had).
    pub async fn hold_read(&self, reservation: &mut Reservation, received: usize, wait: Duration) -> bool {
        if received <= reservation.covers {
            return true;
        }
        let pool = if self.is_small(received) {
            PoolId::Small
        } else {
            PoolId::Reading
        };
        let granted = self.hold(reservation, pool, body_kib(received), wait).await;
        if granted {
            reservation.covers = received;
        }
        granted
    }

    /// Running: extends `reservation`, which holds a whole body of `body_bytes`, to the
    /// admission's cost ([`MemoryBudget::cost_kib`]), waiting up to `wait`; `false` if the
    /// budget stayed spent.
    pub async fn hold_run(&self, reservation: &mut Reservation, body_bytes: usize, wait: Duration) -> bool {
        let pool = if self.is_small(body_bytes) {
            PoolId::Small
        } else {
            PoolId::Running
        };
        let granted = self
            .hold(reservation, pool, self.cost_kib(body_bytes), wait)
            .await;
        if granted {
            reservation.covers = body_bytes;
        }
        granted
    }

    /// Makes `reservation` hold `kib` from `pool`. Within a pool it takes only the difference;
    /// moving to another pool takes the whole amount there, then gives the old share back.
    async fn hold(&self, reservation: &mut Reservation, pool: PoolId, kib: usize, wait: Duration) -> bool {
        let kib = kib.min(self.pool(pool).kib);
        let held = match &reservation.permit {
            Some((id, permit)) if *id == pool => permit.num_permits(),
            _ => 0,
        };
        let extra = kib.saturating_sub(held);
        if extra == 0 {
            return true;
        }
        let Ok(extra_u32) = u32::try_from(extra) else {
            return false;
        };
        let semaphore = self.pool(pool).semaphore.clone();
        let acquired = tokio::time::timeout(wait, semaphore.acquire_many_owned(extra_u32)).await;
        let Ok(Ok(permit)) = acquired else {
            return false;
        };
        reservation.reserved.inc_by(kib_to_bytes(extra));
        match &mut reservation.permit {
            Some((id, held)) if *id == pool => held.merge(permit),
            _ => {
                if let Some((_, old)) = reservation.permit.replace((pool, permit)) {
                    reservation.reserved.dec_by(kib_to_bytes(old.num_permits()));
                }
            }
        }
        true
    }
}

/// A body's size in KiB, rounded up.
fn body_kib(body_bytes: usize) -> usize {
    body_bytes.div_ceil(1024)
}

fn kib_to_bytes(kib: usize) -> i64 {
    i64::try_from(kib.saturating_mul(1024)).unwrap_or(i64::MAX)
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some((_, permit)) = &self.permit {
            self.reserved.dec_by(kib_to_bytes(permit.num_permits()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn held(r: &Reservation) -> Option<(PoolId, usize)> {
        r.permit.as_ref().map(|(id, p)| (*id, p.num_permits()))
    }

    async fn reading(budget: &MemoryBudget, body: usize, wait: Duration) -> Option<Reservation> {
        let mut r = budget.empty();
        budget.hold_read(&mut r, body, wait).await.then_some(r)
    }

    async fn running(budget: &MemoryBudget, body: usize, wait: Duration) -> Option<Reservation> {
        let mut r = budget.empty();
        (budget.hold_read(&mut r, body, wait).await && budget.hold_run(&mut r, body, wait).await).then_some(r)
    }

    #[tokio::test]
    async fn admissions_share_the_budget_by_body_size() {
        // 128 MiB: 32 small, 24 reading, 72 running.
        let budget = MemoryBudget::new(128 * MIB);
        let wait = Duration::from_millis(50);
        // 512 KiB × 48 = 24 MiB each from the 72 MiB running pool: three fit, the fourth gives up.
        let a = running(&budget, MIB / 2, wait).await.expect("first fits");
        let b = running(&budget, MIB / 2, wait).await.expect("second fits");
        let c = running(&budget, MIB / 2, wait).await.expect("third fits");
        assert!(
            running(&budget, MIB / 2, wait).await.is_none(),
            "fourth waits, then fails"
        );
        assert_eq!(budget.reserved.get(), i64::try_from(72 * MIB).unwrap_or(0));
        // Ordinary pods still get in: they have their own pool.
        let mut small = Vec::new();
        for _ in 0..100 {
            small.extend(running(&budget, 3_000, wait).await);
        }
        assert_eq!(small.len(), 100, "100 ordinary pods fit beside the big ones");
        drop((a, b, c, small));
        assert_eq!(budget.reserved.get(), 0);
        assert!(running(&budget, MIB, wait).await.is_some(), "given back");
    }

    #[tokio::test]
    async fn a_body_being_read_holds_only_what_arrived() {
        // 128 MiB: 32 small, 24 reading, 72 running.
        let budget = MemoryBudget::new(128 * MIB);
        let wait = Duration::from_millis(50);
        let mut r = budget.empty();
        assert_eq!(held(&r), None, "a declared length reserves nothing");
        assert!(budget.hold_read(&mut r, 1, wait).await);
        assert_eq!(held(&r), Some((PoolId::Small, 1)), "one byte, one KiB");
        assert!(budget.hold_read(&mut r, 64 << 10, wait).await);
        assert_eq!(held(&r), Some((PoolId::Small, 64)));
        assert!(budget.hold_read(&mut r, MIB, wait).await);
        assert_eq!(
            held(&r),
            Some((PoolId::Reading, 1024)),
            "a big body moves to its pool"
        );
        assert_eq!(
            budget.small.semaphore.available_permits(),
            32 * 1024,
            "the small share is back"
        );
        assert!(budget.hold_run(&mut r, MIB, wait).await);
        assert_eq!(held(&r), Some((PoolId::Running, 1024 * 48)));
        assert_eq!(
            budget.reading.semaphore.available_permits(),
            24 * 1024,
            "the read share is back"
        );
        drop(r);
        assert_eq!(budget.reserved.get(), 0);
    }

    #[tokio::test]
    async fn the_largest_body_runs_while_others_are_read() {
        // 64 MiB: 16 small, 12 reading, 36 running.
        let budget = MemoryBudget::new(64 * MIB);
        let wait = Duration::from_millis(50);
        assert_eq!(budget.cost_kib(6 * MIB), 36 * 1024, "capped at the running pool");
        let first = reading(&budget, 6 * MIB, wait).await.expect("a big body is read");
        let runner = running(&budget, 6 * MIB, wait)
            .await
            .expect("another is read, then runs");
        let third = reading(&budget, 6 * MIB, wait)
            .await
            .expect("a third is read while it runs");
        assert!(
            reading(&budget, 6 * MIB, wait).await.is_none(),
            "the reading pool is full: a fourth waits"
        );
        assert!(
            running(&budget, 3_000, wait).await.is_some(),
            "ordinary pods still fit"
        );
        drop((runner, first, third));
        assert_eq!(budget.reserved.get(), 0);
    }
}
