//! Command-line interface: the clap definitions and the dispatch to each subcommand.

use clap::{Parser, Subcommand};

/// Kubernetes sidecar injection webhook (Istio-compatible) and its troubleshooting tools.
#[derive(Debug, Parser)]
#[command(name = "sidecar-injector", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand of the binary.
#[derive(Debug, Subcommand)]
pub enum Command {}

/// Parses the process arguments, runs the chosen subcommand and returns the process exit code.
pub fn run() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
