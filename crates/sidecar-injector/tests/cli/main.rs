//! Integration tests: the real `sidecar-injector` binary on real files.
//!
//! One test binary (faster to link), one module per subcommand.

// Tests report failures by panicking.
#![allow(clippy::panic)]

mod abuse;
mod explain;
mod inject;
mod serve;
mod util;
