//! `sidecar-injector completion SHELL`: a shell completion script, generated from the command
//! definitions (clap_complete), so it always knows every subcommand, flag and value.

use std::io::Write;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Print a shell completion script (bash, zsh, fish, powershell, elvish).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    source <(sidecar-injector completion bash)                       # this bash session\n  \
    sidecar-injector completion bash > /etc/bash_completion.d/sidecar-injector\n  \
    sidecar-injector completion zsh > \"${fpath[1]}/_sidecar-injector\"\n  \
    sidecar-injector completion fish > ~/.config/fish/completions/sidecar-injector.fish")]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the script for `args.shell` to standard output.
pub fn run(args: &CompletionArgs) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut super::Cli::command(), super::BINARY, &mut script);
    std::io::stdout()
        .lock()
        .write_all(&script)
        .context("cannot write to standard output")
}
