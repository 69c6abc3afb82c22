//! The synthetic admission probe (`serve --cluster --probe-namespace NS`).
//!
//! Users of every injector learn that injection broke when their pods stop being created or
//! stop getting sidecars. The probe finds out first: every interval the leader asks the API
//! server for a **server-side dry-run create** of a tiny canary pod in each probe namespace,
//! which travels the real path (API server → webhook configuration → caBundle → Service or URL
//! → this injector → response), and checks what comes back: injected in a namespace that should
//! be, untouched in one opted out. Nothing is stored and no Event is written (dry runs make
//! none, here or in the API server).
//!
//! * [`canary`] (pure): the canary pod and the check of the pod that came back;
//! * [`classify`] (pure): why a probe failed, from the API server's error text;
//! * [`state`] (pure): each probe target's health, its changes (logged once each) and the
//!   `/readyz` detail;
//! * [`metrics`]: the `sidecar_injector_probe_*` metrics;
//! * [`runner`]: the loop, leader only.
//!
//! The probe never changes readiness: an injector that went unready because its own probe
//! failed would take itself out of the Service, and with `failurePolicy: Fail` no pod could be
//! created at all: the failure it reports would become an outage.

pub mod canary;
pub mod classify;
pub mod metrics;
pub mod runner;
pub mod state;

use std::time::Duration;

pub use canary::Expect;
pub use classify::FailureClass;

/// One namespace the probe creates its canary in, and what must happen to it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// The namespace (the injector may create pods there: `deploy/rbac-cluster-mode.yaml`).
    pub namespace: String,
    /// Injected, or left alone.
    pub expect: Expect,
}

/// What the probe does and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The namespaces probed, each every interval.
    pub targets: Vec<ProbeTarget>,
    /// Time between two probes of a namespace.
    pub interval: Duration,
    /// How long one dry-run create may take before it counts as a `timeout` failure.
    pub timeout: Duration,
}
