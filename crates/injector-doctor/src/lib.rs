//! The checks of `sidecar-injector doctor`: Istio's injection troubleshooting page
//! (<https://istio.io/latest/docs/ops/common-problems/injection/>) as one command.
//!
//! Three stages, and this crate holds the pure two:
//!
//! 1. *gather* (I/O, in `injector-kube`): every read the checks need goes into a [`Snapshot`],
//!    each with its own outcome — a read that was refused ([`ReadFailure`]) says which verb on
//!    which resource it needs, and only the checks that need it are affected;
//! 2. *check* ([`checks`]): plain functions from the snapshot to [`Check`]s, each with a
//!    verdict, the evidence it is based on and the command that fixes it;
//! 3. *render* (in the binary): the table with ✓ / ! / ✗, or JSON.
//!
//! Nothing here talks to a cluster, so every check is unit-tested with hand-built snapshots.

pub mod certificate_source;
pub mod certs;
pub mod checks;
pub mod events;
pub mod read;
pub mod report;
pub mod slim;
pub mod snapshot;
pub mod webhooks;

pub use certificate_source::CertificateSource;
pub use read::{Read, ReadFailure, ReadFailureKind};
pub use report::{Check, Report, Verdict};
pub use snapshot::{Handshake, Probe, Settings, Snapshot};
