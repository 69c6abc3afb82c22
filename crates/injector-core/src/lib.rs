//! Pure decision logic of the sidecar injector.
//!
//! Nothing in this crate performs I/O: it takes already-parsed Kubernetes objects (as
//! `serde_json::Value`, so that fields newer than any typed library survive) and answers
//! questions about them. The HTTP server, the Kubernetes client and the CLI are adapters around it.
