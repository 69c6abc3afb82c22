//! Integration tests: the real `sidecar-injector` binary on real files.
//!
//! One test binary (faster to link), one module per subcommand.

mod explain;
mod util;
