//! `sidecar-injector man`: manual pages in roff, generated from the command definitions
//! (clap_mangen): the main page on standard output, or one page per subcommand in a directory.

use std::{io::Write, path::PathBuf};

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};

/// Print the manual page (roff), or write every page to a directory.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sidecar-injector man | man -l -\n  \
    sidecar-injector man --out-dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write sidecar-injector.1 and one page per subcommand (sidecar-injector-serve.1, ...) into
    /// this directory (created if missing) instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Prints the main page, or writes all pages to `--out-dir` and lists them on stderr.
pub fn run(args: &ManArgs) -> Result<()> {
    let command = super::Cli::command();
    match &args.out_dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .context("cannot render the manual page")?;
            std::io::stdout()
                .lock()
                .write_all(&page)
                .context("cannot write to standard output")
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("cannot write the manual pages to {}", dir.display()))?;
            eprintln!("manual pages written to {}", dir.display());
            Ok(())
        }
    }
}
