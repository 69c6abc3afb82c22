//! The table of open connections: the connection cap, which connection to shed when it is
//! reached, and each connection's activity (requests in flight, idle time, a request head
//! being received).
//!
//! At the cap, a new connection is not left waiting behind thousands of connections that do
//! nothing: the oldest one still in its TLS handshake is closed to make room (a client that has
//! not said hello yet is the cheapest to lose and the likeliest to be a flood), else the
//! established connection idle the longest is closed gracefully; only when every connection
//! has a request in flight does accepting pause until one ends (the kernel backlog holds the
//! rest).
//!
//! One peer address holds at most its own share of the table: at that cap its own oldest
//! handshake, else its own longest idle connection, is closed for the new one, and when every
//! connection of that peer has a request in flight the new one is closed at once. So a single
//! peer never makes accepting pause for everyone else.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::metrics::ConnectionMetrics;

/// Open connections, up to a cap.
pub(crate) struct ConnectionTable {
    max: usize,
    max_per_peer: usize,
    inner: Mutex<Entries>,
    /// Signalled whenever a connection closes.
    freed: Notify,
    metrics: ConnectionMetrics,
}

#[derive(Default)]
struct Entries {
    next_id: u64,
    by_id: HashMap<u64, Entry>,
}

struct Entry {
    peer: IpAddr,
    opened: Instant,
    /// `None` while the TLS handshake runs.
    activity: Option<Arc<Activity>>,
    shed: Arc<Notify>,
    shedding: bool,
}

/// A connection's place in the table; dropping it frees the place.
pub(crate) struct Slot {
    table: Arc<ConnectionTable>,
    id: u64,
    /// Notified when the connection should close to make room for a new one.
    pub shed: Arc<Notify>,
}

impl ConnectionTable {
    /// A table for up to `max` connections (at least one), `max_per_peer` of them from one
    /// peer address (at least one, at most `max`).
    pub fn new(max: usize, max_per_peer: usize, metrics: ConnectionMetrics) -> Arc<Self> {
        let max = max.max(1);
        Arc::new(ConnectionTable {
            max,
            max_per_peer: max_per_peer.clamp(1, max),
            inner: Mutex::new(Entries::default()),
            freed: Notify::new(),
            metrics,
        })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the map inconsistent: keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The connection metrics, shared with the connection tasks.
    pub fn metrics(&self) -> &ConnectionMetrics {
        &self.metrics
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.entries().by_id.len()
    }

    /// A place for a new connection from `peer`, shedding others if the table is full; waits
    /// only while every open connection has a request in flight. `None`: the peer holds its
    /// share and every one of its connections is busy, so this one is to be closed.
    pub async fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Slot> {
        if !self.make_room_for_peer(peer) {
            return None;
        }
        let mut counted = false;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut entries = self.entries();
                if entries.by_id.len() < self.max {
                    let id = entries.next_id;
                    entries.next_id += 1;
                    let shed = Arc::new(Notify::new());
                    entries.by_id.insert(
                        id,
                        Entry {
                            peer,
                            opened: Instant::now(),
                            activity: None,
                            shed: shed.clone(),
                            shedding: false,
                        },
                    );
                    self.metrics
                        .open
                        .set(i64::try_from(entries.by_id.len()).unwrap_or(i64::MAX));
                    return Some(Slot {
                        table: self.clone(),
                        id,
                        shed,
                    });
                }
                if !counted {
                    counted = true;
                    self.metrics.cap_hits.inc();
                }
                // Only one victim per wait: it closes promptly and frees its place.
                let pending = entries.by_id.values().filter(|e| e.shedding).count();
                if pending == 0
                    && let Some(victim) = pick_victim(entries.by_id.iter())
                {
                    self.shed(&mut entries, victim);
                }
            }
            // Re-check now and then even without a close (a victim may ignore its signal while
            // it finishes a request).
            let _ = tokio::time::timeout(Duration::from_millis(100), freed).await;
        }
    }
}

impl ConnectionTable {
    /// The per-peer cap: when `peer` holds its share, one of its own connections is told to
    /// close for the new one; `false` when all of them have a request in flight.
    fn make_room_for_peer(&self, peer: IpAddr) -> bool {
        let mut entries = self.entries();
        let from_peer = || {
            entries
                .by_id
                .iter()
                .filter(|(_, e)| e.peer == peer && !e.shedding)
        };
        if from_peer().count() < self.max_per_peer {
            return true;
        }
        self.metrics.peer_cap_hits.inc();
        match pick_victim(from_peer()) {
            Some(victim) => {
                self.shed(&mut entries, victim);
                true
            }
            None => {
                self.metrics.peer_cap_refusals.inc();
                tracing::debug!(%peer, "the peer holds its share of connections, all busy: closing its new one");
                false
            }
        }
    }

    /// Tells `victim` to close, and counts it.
    fn shed(&self, entries: &mut Entries, victim: u64) {
        if let Some(entry) = entries.by_id.get_mut(&victim) {
            entry.shedding = true;
            entry.shed.notify_one();
            let phase = if entry.activity.is_some() {
                "idle"
            } else {
                "handshake"
            };
            self.metrics.shed(phase);
        }
    }
}

/// The connection to close at a cap, among `entries`: the oldest still in its handshake, else
/// the one idle the longest; `None` when all have requests in flight.
fn pick_victim<'a>(entries: impl Iterator<Item = (&'a u64, &'a Entry)> + Clone) -> Option<u64> {
    let handshaking = entries
        .clone()
        .filter(|(_, e)| e.activity.is_none())
        .min_by_key(|(_, e)| e.opened)
        .map(|(&id, _)| id);
    handshaking.or_else(|| {
        entries
            .filter_map(|(&id, e)| Some((id, e.activity.as_ref()?.idle_for()?)))
            .max_by_key(|&(_, idle)| idle)
            .map(|(id, _)| id)
    })
}

impl Slot {
    /// The handshake is done: from now on the connection is shed only when idle.
    pub fn established(&self, activity: Arc<Activity>) {
        if let Some(entry) = self.table.entries().by_id.get_mut(&self.id) {
            entry.activity = Some(activity);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let open = {
            let mut entries = self.table.entries();
            entries.by_id.remove(&self.id);
            entries.by_id.len()
        };
        self.table
            .metrics
            .open
            .set(i64::try_from(open).unwrap_or(i64::MAX));
        self.table.freed.notify_waiters();
    }
}

/// No time recorded.
const NONE: u64 = u64::MAX;

/// Requests in flight on one connection, when the last one started or ended, and when the
/// bytes of a request head not yet complete started to arrive.
pub(crate) struct Activity {
    start: Instant,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
    head_started_ms: AtomicU64,
}

impl Activity {
    pub fn new() -> Self {
        Activity {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
            head_started_ms: AtomicU64::new(NONE),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    fn touch(&self) {
        self.last_ms.store(self.now_ms(), Ordering::SeqCst);
    }

    /// A request starts (its head is complete).
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.head_started_ms.store(NONE, Ordering::SeqCst);
        self.touch();
        Busy(self.clone())
    }

    /// Bytes arrived: with no request in flight they are the start of the next request head.
    pub fn received(&self) {
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            let now = self.now_ms();
            let _ = self
                .head_started_ms
                .compare_exchange(NONE, now, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// How long the connection has been idle, or `None` while a request is in flight.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::SeqCst));
        Some(self.start.elapsed().saturating_sub(last))
    }

    /// How long a request head has been arriving without being complete.
    pub fn head_pending_for(&self) -> Option<Duration> {
        match self.head_started_ms.load(Ordering::SeqCst) {
            NONE => None,
            ms => Some(self.start.elapsed().saturating_sub(Duration::from_millis(ms))),
        }
    }
}

/// A request in flight; dropping it ends the request.
pub(crate) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An I/O stream that tells its [`Activity`] when bytes arrive.
pub(crate) struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.received();
        }
        poll
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> ConnectionMetrics {
        ConnectionMetrics::default()
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    async fn admit(table: &Arc<ConnectionTable>) -> Slot {
        table.admit(PEER).await.expect("a place")
    }

    #[tokio::test]
    async fn one_peer_holds_its_share_and_no_more() {
        let table = ConnectionTable::new(8, 2, metrics());
        let busy: Vec<Slot> = vec![admit(&table).await, admit(&table).await];
        let activities: Vec<Arc<Activity>> = busy
            .iter()
            .map(|slot| {
                let activity = Arc::new(Activity::new());
                slot.established(activity.clone());
                activity
            })
            .collect();
        let requests: Vec<Busy> = activities.iter().map(Activity::begin).collect();
        assert!(
            table.admit(PEER).await.is_none(),
            "every connection of the peer is busy: its new one is closed at once"
        );
        assert_eq!(table.metrics.peer_cap_refusals.get(), 1);
        let other = table.admit(OTHER).await.expect("another peer still gets in");
        // An idle connection of the peer makes room for its new one.
        let mut requests = requests.into_iter();
        drop(requests.next());
        let new = tokio::time::timeout(Duration::from_secs(2), table.admit(PEER))
            .await
            .expect("not waiting")
            .expect("admitted");
        tokio::time::timeout(Duration::from_secs(2), busy[0].shed.notified())
            .await
            .expect("the peer's idle connection is told to close");
        assert_eq!(table.metrics.peer_cap_hits.get(), 2);
        drop((new, other, busy, requests));
        assert_eq!(table.open(), 0);
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_handshake_is_shed_first() {
        let table = ConnectionTable::new(2, 2, metrics());
        let old_handshake = admit(&table).await;
        let established = admit(&table).await;
        established.established(Arc::new(Activity::new()));
        let admitting = tokio::spawn({
            let table = table.clone();
            async move { admit(&table).await }
        });
        tokio::time::timeout(Duration::from_secs(2), old_handshake.shed.notified())
            .await
            .expect("the handshaking connection is told to close");
        drop(old_handshake);
        let new = tokio::time::timeout(Duration::from_secs(2), admitting)
            .await
            .expect("the new connection gets its place")
            .expect("join");
        assert_eq!(table.open(), 2);
        assert_eq!(table.metrics.cap_hits.get(), 1);
        drop((new, established));
        assert_eq!(table.open(), 0);
    }

    #[tokio::test]
    async fn busy_connections_are_never_shed_idle_ones_are() {
        let table = ConnectionTable::new(2, 2, metrics());
        let busy = admit(&table).await;
        let busy_activity = Arc::new(Activity::new());
        busy.established(busy_activity.clone());
        let _request = busy_activity.begin();
        let idle = admit(&table).await;
        idle.established(Arc::new(Activity::new()));
        let admitting = tokio::spawn({
            let table = table.clone();
            async move { admit(&table).await }
        });
        tokio::time::timeout(Duration::from_secs(2), idle.shed.notified())
            .await
            .expect("the idle connection is told to close");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), busy.shed.notified())
                .await
                .is_err(),
            "a connection with a request in flight is left alone"
        );
        drop(idle);
        let _new = tokio::time::timeout(Duration::from_secs(2), admitting)
            .await
            .expect("admitted")
            .expect("join");
    }

    #[test]
    fn a_request_head_is_pending_from_its_first_byte_until_it_begins() {
        let activity = Arc::new(Activity::new());
        assert_eq!(activity.head_pending_for(), None);
        activity.received();
        assert!(activity.head_pending_for().is_some());
        let busy = activity.begin();
        assert_eq!(activity.head_pending_for(), None);
        activity.received();
        assert_eq!(
            activity.head_pending_for(),
            None,
            "body bytes of a request in flight"
        );
        drop(busy);
        assert!(activity.idle_for().is_some());
    }
}
