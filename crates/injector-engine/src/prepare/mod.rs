//! Stage 2, preparing the template data: what the templates see of a re-injected pod
//! ([`strip`]), the workload that owns it ([`owner`]), the proxy images ([`images`]) and the
//! cluster and network environment ([`cluster`], whose overwrite of the injected env runs again
//! in post-processing).

pub mod cluster;
pub mod images;
pub mod owner;
pub mod strip;
