//! `sidecar-injector outdated`: the pods whose sidecar is not what the current configuration
//! injects today, grouped by owner, with the rollout commands; `--restart` runs them, paced.

use std::{io::Write, process::ExitCode, time::Duration};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use injector_core::explain::Webhooks;
use injector_fleet::{
    outdated::outdated,
    preview::{Cluster as DecisionInputs, Side},
};

use super::{
    fleet_input::{self, CurrentArgs, SourceArgs},
    fleet_table, restart,
    serve::parse_duration,
};

/// The exit status when `--restart` left an owner not restarted (blocked, failed, timed out).
pub const EXIT_INCOMPLETE: u8 = 3;

/// List injected pods whose sidecar differs from what the current configuration would inject
/// (grouped by owner, with the kind of difference and the rollout commands); `--restart` rolls
/// the owners, a few at a time.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 listed (and, with --restart, every restartable owner restarted and, \
    unless --wait=false, rolled out); 1 could not run; 2 wrong usage; 3 with --restart, an owner was not \
    restarted or did not roll out (a PodDisruptionBudget allowing no disruption, a failed patch, --timeout).\n\n\
    Examples:\n  \
    sidecar-injector outdated                                     # the live cluster\n  \
    sidecar-injector outdated --restart --max-concurrent 2 --dry-run\n  \
    sidecar-injector outdated -f snapshot.yaml --current-injector-config cm.yaml -o json"
)]
pub struct OutdatedArgs {
    /// The objects and the cluster.
    #[command(flatten)]
    pub source: SourceArgs,
    /// The configuration to compare with, when not the cluster's.
    #[command(flatten)]
    pub current: CurrentArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Restart the owners of stale pods (Deployments, StatefulSets, DaemonSets) with the patch
    /// `kubectl rollout restart` makes, --max-concurrent at a time (live cluster only).
    #[arg(long)]
    pub restart: bool,
    /// Owners restarting at once.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "restart")]
    pub max_concurrent: usize,
    /// Wait for each rollout to be available before starting the next.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub wait: bool,
    /// How long one rollout may take; when it is exceeded nothing more is started.
    #[arg(long, default_value = "10m", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// Print what --restart would do, without patching anything.
    #[arg(long, requires = "restart")]
    pub dry_run: bool,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Owners, pods, differences and commands.
    Table,
    /// The whole report.
    Json,
}

/// Runs `outdated`.
pub fn run(args: &OutdatedArgs) -> Result<ExitCode> {
    if args.restart && !fleet_input::is_live(&args.source) {
        bail!(
            "--restart acts on the live cluster: drop -f (and give --kubeconfig), or run the printed commands"
        );
    }
    let runtime = fleet_input::runtime()?;
    let cluster = fleet_input::read(&args.source, &args.current, &runtime)?;
    let current =
        fleet_input::load_side(&cluster.current, &args.source, &[]).context("the current configuration")?;
    let webhooks = match (&cluster.webhooks, cluster.assume_called) {
        (_, true) => Webhooks::AssumeCalled,
        (Some(given), false) => Webhooks::Given(given),
        (None, false) => Webhooks::IstioChart {
            revision: &args.source.revision,
        },
    };
    let report = outdated(
        &cluster.snapshot,
        DecisionInputs {
            namespaces: &cluster.snapshot.namespaces,
            webhooks,
        },
        Side {
            injector: &current.injector,
            origin: &current.origin,
        },
    );
    let mut notes = cluster.notes.clone();
    notes.extend(
        current
            .warnings
            .iter()
            .map(|w| format!("current configuration: {w}")),
    );
    let text = match args.output {
        Format::Json => {
            let mut value = serde_json::to_value(&report).context("cannot encode the report")?;
            if let Some(map) = value.as_object_mut() {
                map.insert("current".to_owned(), current.description.clone().into());
                map.insert("notes".to_owned(), notes.into());
            }
            let mut text = serde_json::to_string_pretty(&value).context("cannot encode the report")?;
            text.push('\n');
            text
        }
        Format::Table => fleet_table::outdated(&report, &current.description, &notes),
    };
    {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .context("cannot write to standard output")?;
        stdout.flush().context("cannot write to standard output")?;
    }
    if !args.restart {
        return Ok(ExitCode::SUCCESS);
    }
    let Some(client) = cluster.client.clone() else {
        bail!("--restart needs the live cluster");
    };
    let plan = restart::Plan {
        max_concurrent: args.max_concurrent,
        wait: args.wait,
        timeout: args.timeout,
        dry_run: args.dry_run,
    };
    let complete = runtime.block_on(restart::run(&client, &report, &plan))?;
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    })
}
