//! Pure decision logic of the sidecar injector.
//!
//! Nothing in this crate performs I/O: it takes already-parsed Kubernetes objects (as
//! `serde_json::Value`, so that fields newer than any typed library survive) and answers
//! questions about them. The HTTP server, the Kubernetes client and the CLI are adapters around it.

pub mod config;
pub mod creator_warnings;
pub mod decision;
pub mod explain;
pub mod gate;
pub mod ignored_annotations;
pub mod kube_names;
pub mod mistakes;
pub mod object;
pub mod selector;
pub mod shell;
pub mod terminal;
pub mod validation;
pub mod workload;
pub mod yaml;
