//! The sidecar injector's Kubernetes side (cluster mode of `serve`).
//!
//! In a cluster the injector runs as several replicas of a Deployment and must make the usual
//! webhook failures impossible by construction: an empty or stale `caBundle` (x509 errors), a
//! configuration edit nobody noticed, a replica serving a certificate the API server does not
//! trust. This crate keeps them right, from watches, without ever touching an admission:
//!
//! * [`ca_set`] (pure): the CA Secret's contents and the steps of a CA rotation with overlap;
//! * `webhooks` (pure): which webhook configurations are ours, and the server-side-apply
//!   patch of their caBundle;
//! * `configmaps` (pure): the injector and mesh ConfigMaps as the configuration loader's files;
//! * `nodes` (pure): native sidecars `auto` from the kubelet versions;
//! * `certificates`: the CA Secret, each replica's serving certificate, rotation and
//!   caBundle patches (leader only);
//! * `probe`: the synthetic admission probe (a dry-run canary pod through the API server,
//!   leader only), its classification of failures, metrics and `/readyz` detail;
//! * `runtime`: the watches, the Lease, and the wiring of all of the above;
//! * [`client`]: the Kubernetes client (in-cluster, `--kubeconfig`, `KUBECONFIG`);
//! * [`fleet`]: the reads of `preview` and `outdated`, and `outdated --restart`'s patch;
//! * `reads`, `handshake`, [`doctor_snapshot`], [`live_explain`]: the one-shot reads of live `explain` and
//!   `doctor` (each failure says which permission it needs), TLS handshakes with loopback
//!   webhooks only, and the snapshot `doctor`'s pure checks run on.
//!
//! The engine and the decision logic never depend on this crate.

pub mod ca_set;
mod certificates;
pub mod client;
mod configmaps;
pub mod doctor_snapshot;
pub mod events;
pub mod fleet;
mod handshake;
pub mod live_explain;
mod nodes;
mod probe;
mod reads;
mod runtime;
mod slim;
mod status;
mod watch;
mod webhooks;

pub use certificates::CertificateMode;
pub use configmaps::ConfigMapNames;
pub use probe::{Expect, ProbeOptions, ProbeTarget};
pub use runtime::{Cluster, ClusterOptions, NativeSidecars};
pub use webhooks::WebhookSelection;
