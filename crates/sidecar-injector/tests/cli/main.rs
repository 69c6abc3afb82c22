//! Integration tests: the real `sidecar-injector` binary on real files.
//!
//! One test binary (faster to link), one module per subcommand.

// Tests report failures by panicking.
#![allow(clippy::panic)]

mod abuse;
mod abuse_engine;
mod completion;
mod console;
mod docs_links;
mod doctor;
mod explain;
mod fleet;
mod inject;
mod inject_config;
mod inject_output;
mod readme;
mod serve;
mod serve_memory;
mod serve_reload;
mod serve_startup;
mod served;
mod template;
mod util;
