//! `sidecar-injector outdated`: the pods whose sidecar is not what the current configuration
//! injects today, grouped by owner, with the rollout commands; `--restart` runs them, paced.

use std::{process::ExitCode, time::Duration};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
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
    let webhooks = cluster.decision_webhooks(&args.source);
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
    let notes = cluster.notes_with(&[("current", &current)]);
    let text = match args.output {
        Format::Json => fleet_input::report_json(
            &report,
            vec![
                ("current", current.description.clone().into()),
                ("notes", notes.into()),
            ],
        )?,
        Format::Table => fleet_table::outdated(&report, &current.description, &notes),
    };
    fleet_input::print(&text)?;
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
