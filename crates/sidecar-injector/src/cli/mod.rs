//! Command-line interface: the clap definitions and the dispatch to each subcommand.
//!
//! Each subcommand lives in its own module with its `Args` struct and a `run` function; this
//! module only parses, dispatches and turns errors into a message on stderr and exit code 1.

mod cluster;
mod completion;
mod console_explain;
mod doctor;
mod doctor_table;
mod explain;
mod explain_live;
mod explain_table;
mod fleet_input;
mod fleet_table;
mod inject;
mod input;
mod man;
mod memory_return;
mod object_stream;
mod outdated;
mod output;
mod preview;
mod progress;
mod render_metrics;
mod restart;
mod serve;
mod settings;
mod show_patch;
mod template;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The binary's name, as shells and manual pages know it.
pub const BINARY: &str = "sidecar-injector";

/// Kubernetes sidecar injection webhook (Istio-compatible) and its troubleshooting tools.
#[derive(Debug, Parser)]
#[command(name = BINARY, version, about, long_about = None)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand of the binary.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain why a pod is, or is not, injected with a sidecar.
    Explain(explain::ExplainArgs),
    /// Check the injection path of a live cluster: the troubleshooting page as one command.
    Doctor(doctor::DoctorArgs),
    /// Run the admission webhook (HTTPS) and its monitoring endpoints.
    Serve(Box<serve::ServeArgs>),
    /// Inject the sidecar into Kubernetes manifests, like `istioctl kube-inject`.
    Inject(inject::InjectArgs),
    /// Work with Go text/template files (render one with Istio's injection functions and sprig).
    Template(template::TemplateArgs),
    /// Preview a configuration change on every workload (current against proposed): decisions,
    /// render errors, the diff of the injected pods, grouped.
    Preview(Box<preview::PreviewArgs>),
    /// List pods whose sidecar is stale (differs from what the current configuration injects),
    /// by owner, with the rollout commands; `--restart` restarts them, paced.
    Outdated(Box<outdated::OutdatedArgs>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completion(completion::CompletionArgs),
    /// Print the manual page (roff), or write every page to a directory.
    Man(man::ManArgs),
}

/// Parses the process arguments, runs the chosen subcommand and returns the process exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Explain(args) => explain::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Doctor(args) => doctor::run(&args),
        Command::Inject(args) => inject::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Serve(args) => serve::run(*args).map(|()| ExitCode::SUCCESS),
        Command::Template(args) => template::run(args),
        Command::Preview(args) => preview::run(&args),
        Command::Outdated(args) => outdated::run(&args),
        Command::Completion(args) => completion::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Man(args) => man::run(&args).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            if error.is::<progress::Interrupted>() {
                // As a shell reports a command ended by Ctrl-C.
                return ExitCode::from(130);
            }
            ExitCode::FAILURE
        }
    }
}
