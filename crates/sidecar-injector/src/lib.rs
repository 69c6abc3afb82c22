//! The `sidecar-injector` binary's adapters: command-line parsing and the commands it runs.
//!
//! Logic worth testing lives in the library crates (`injector-core`, …); this crate only reads
//! files, calls them and prints results.

pub mod cli;
