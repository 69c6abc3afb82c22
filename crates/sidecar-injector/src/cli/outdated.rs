//! `sidecar-injector outdated`: the pods whose sidecar is not what the current configuration
//! injects today, grouped by owner, with the rollout commands; `--restart` runs them, paced.

use std::{process::ExitCode, time::Duration};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::collections::{BTreeSet, HashSet};

use injector_fleet::{
    outdated::{Inventory, status_of},
    pod_of::namespace_of,
    preview::{Cluster as DecisionInputs, Side},
    snapshot::{Controllers, ObjectKey, Sorted, controller_of},
};

use super::{
    fleet_input::{self, CurrentArgs, ReportArgs, SourceArgs},
    fleet_table,
    progress::{Progress, count},
    restart,
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
    /// Where the report goes.
    #[command(flatten)]
    pub report: ReportArgs,
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
    let mut progress = Progress::start();
    let runtime = fleet_input::runtime()?;
    let (cluster, mut objects) = fleet_input::read(&args.source, &args.current, &runtime, &mut progress)?;
    let current =
        fleet_input::load_side(&cluster.current, &args.source, &[]).context("the current configuration")?;
    let webhooks = cluster.decision_webhooks(&args.source);
    let is_pod = |kind: &str| kind == "Pod";

    // First the pods, for the controllers the injected ones name: only those are kept.
    let mut named: HashSet<ObjectKey> = HashSet::new();
    let mut seen = 0;
    objects.read_objects(&runtime, &is_pod, &mut progress, &mut |batch, progress, done| {
        seen += batch.len();
        for (_, pod) in &batch {
            if status_of(pod).is_some()
                && let Some((kind, name)) = controller_of(pod)
            {
                named.insert(ObjectKey::new(&kind, &ObjectKey::of(pod).namespace, &name));
            }
        }
        progress.update(&format!("{} pods read (1/3)", count(seen)), done.map(|d| d / 3.0));
        Ok(())
    })?;
    let mut controllers = Controllers::default();
    if !named.is_empty() {
        let kinds: HashSet<String> = named.iter().map(|key| key.kind.clone()).collect();
        let mut read = 0;
        objects.read_objects(
            &runtime,
            &|kind| kinds.contains(kind),
            &mut progress,
            &mut |batch, progress, done| {
                read += batch.len();
                for (place, object) in batch {
                    if let Sorted::Templated { object, .. } =
                        Sorted::of(&place, object).map_err(|e| anyhow::anyhow!(e))?
                        && named.contains(&object.key)
                    {
                        controllers.insert(object.key, &object.object);
                    }
                }
                progress.update(
                    &format!("{} controllers read (2/3)", count(read)),
                    done.map(|d| (1.0 + d) / 3.0),
                );
                Ok(())
            },
        )?;
    }
    drop(named);

    let mut inventory = Inventory::new(
        &controllers,
        DecisionInputs {
            namespaces: &cluster.namespaces,
            webhooks,
        },
        Side {
            injector: &current.injector,
            renders: Some(&current.renders),
            origin: &current.origin,
        },
    );
    let mut unlabelled = BTreeSet::new();
    objects.read_objects(&runtime, &is_pod, &mut progress, &mut |batch, progress, done| {
        let mut pods = Vec::with_capacity(batch.len());
        for (place, object) in batch {
            if let Sorted::Templated { object, .. } =
                Sorted::of(&place, object).map_err(|e| anyhow::anyhow!(e))?
            {
                let namespace = namespace_of(&object);
                if cluster.unlabelled(&namespace) {
                    unlabelled.insert(namespace);
                }
                pods.push(object.object);
            }
        }
        inventory.add(&pods);
        progress.update(
            &format!("{} pods compared (3/3)", count(inventory.looked_at())),
            done.map(|d| (2.0 + d) / 3.0),
        );
        Ok(())
    })?;
    let report = inventory.finish();
    let notes = cluster.notes_with(&unlabelled, &[("current", &current)]);
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
    fleet_input::write_report(&text, &args.report, &progress)?;
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
