//! `sidecar-injector preview`: a proposed configuration against every workload, beside the
//! current one, before it is rolled out.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::collections::BTreeSet;

use injector_fleet::{
    grouping::Names,
    pod_of::namespace_of,
    preview::{Cluster as DecisionInputs, Previewer, Side},
    snapshot::Sorted,
};

use super::{
    fleet_input::{self, ConfigTexts, CurrentArgs, NamedText, ReportArgs, SourceArgs},
    fleet_table,
    progress::{Progress, count},
};

/// The exit status when the proposal breaks at least one workload.
pub const EXIT_BREAKS: u8 = 3;

/// Preview a configuration change on every workload: decisions, render errors and the diff
/// of the injected pods, current against proposed, grouped.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 the proposal breaks no workload; 1 preview could not run (bad input, \
    unreachable cluster); 2 wrong usage; 3 the proposal breaks at least one workload (a render error, or a pod \
    the API server would refuse).\n\nExamples:\n  \
    sidecar-injector preview --values new-values.json                       # the live cluster\n  \
    sidecar-injector preview -f snapshot.yaml --injector-config proposed-cm.yaml \\\n      \
    --current-injector-config current-cm.yaml\n  \
    kubectl get deploy,sts,ds,job,cronjob,rs,pod,ns -A -o yaml > snapshot.yaml"
)]
pub struct PreviewArgs {
    /// The proposed injector ConfigMap, its `config`, or a bare `sidecar` template. Anything not
    /// proposed (values, mesh) stays as it is now.
    #[arg(long, value_name = "FILE")]
    pub injector_config: Option<PathBuf>,
    /// The proposed values (raw, or the injector ConfigMap).
    #[arg(long, value_name = "FILE")]
    pub values: Option<PathBuf>,
    /// The proposed mesh config (raw, or the `istio` ConfigMap).
    #[arg(long, value_name = "FILE")]
    pub mesh: Option<PathBuf>,
    /// A proposed template, `[NAME=]FILE` (NAME defaults to `sidecar`): replaces or adds that
    /// template of the proposed configuration. Repeatable.
    #[arg(long = "template", value_name = "[NAME=]FILE")]
    pub templates: Vec<String>,
    /// The objects and the cluster.
    #[command(flatten)]
    pub source: SourceArgs,
    /// The current configuration, when not the cluster's.
    #[command(flatten)]
    pub current: CurrentArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Workload names shown per group in the table (0: all).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_names: usize,
    /// Where the report goes.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Groups, counts and the diff of each group.
    Table,
    /// The whole report.
    Json,
}

/// Runs `preview`.
pub fn run(args: &PreviewArgs) -> Result<ExitCode> {
    if args.injector_config.is_none()
        && args.values.is_none()
        && args.mesh.is_none()
        && args.templates.is_empty()
    {
        anyhow::bail!(
            "nothing proposed: give the proposed --injector-config, --values, --mesh or --template (what is not \
             given stays as it is now)"
        );
    }
    let templates = args
        .templates
        .iter()
        .map(|spec| {
            let (name, file) = match spec.split_once('=') {
                Some((name, file)) if !name.is_empty() && !name.contains('/') => (name.to_owned(), file),
                _ => ("sidecar".to_owned(), spec.as_str()),
            };
            Ok((name, fleet_input::read_named(std::path::Path::new(file))?))
        })
        .collect::<Result<Vec<(String, NamedText)>>>()?;
    let proposed_config = args
        .injector_config
        .as_deref()
        .map(fleet_input::read_named)
        .transpose()?;
    let proposed_values = args.values.as_deref().map(fleet_input::read_named).transpose()?;
    let proposed_mesh = args.mesh.as_deref().map(fleet_input::read_named).transpose()?;

    let mut progress = Progress::start();
    let runtime = fleet_input::runtime()?;
    let (cluster, mut objects) = fleet_input::read(&args.source, &args.current, &runtime, &mut progress)?;
    let current =
        fleet_input::load_side(&cluster.current, &args.source, &[]).context("the current configuration")?;
    let values = match (&proposed_values, &proposed_config) {
        (Some(values), _) => Some(values.clone()),
        (None, Some(config)) if fleet_input::carries_values(&config.text) => None,
        (None, _) => cluster.current.values.clone(),
    };
    let proposed_texts = ConfigTexts {
        config: proposed_config.or_else(|| cluster.current.config.clone()),
        values,
        mesh: proposed_mesh.or_else(|| cluster.current.mesh.clone()),
    };
    let proposed = fleet_input::load_side(&proposed_texts, &args.source, &templates)
        .context("the proposed configuration")?;

    let webhooks = cluster.decision_webhooks(&args.source);
    let started = std::time::Instant::now();
    // The table shows a few names per group: only those are kept.
    let names = match (args.output, args.max_names) {
        (Format::Table, max) if max > 0 => Names::First(max),
        _ => Names::All,
    };
    let mut previewer = Previewer::new(
        DecisionInputs {
            namespaces: &cluster.namespaces,
            webhooks,
        },
        Side {
            injector: &current.injector,
            renders: Some(&current.renders),
            origin: &current.origin,
        },
        Side {
            injector: &proposed.injector,
            renders: Some(&proposed.renders),
            origin: &proposed.origin,
        },
        names,
    );
    let mut unlabelled = BTreeSet::new();
    let mut read = 0;
    objects.read_objects(
        &runtime,
        &|kind| kind != "Namespace" && kind != "PodDisruptionBudget",
        &mut progress,
        &mut |batch, progress, done| {
            read += batch.len();
            let mut workloads = Vec::with_capacity(batch.len());
            for (place, object) in batch {
                if let Sorted::Templated {
                    workload: true,
                    object,
                } = Sorted::of(&place, object).map_err(|e| anyhow::anyhow!(e))?
                {
                    let namespace = namespace_of(&object);
                    if cluster.unlabelled(&namespace) {
                        unlabelled.insert(namespace);
                    }
                    workloads.push(*object);
                }
            }
            previewer.add(&workloads);
            progress.update(
                &format!(
                    "{} objects read, {} workloads previewed",
                    count(read),
                    count(previewer.previewed())
                ),
                done,
            );
            Ok(())
        },
    )?;
    let report = previewer.finish();
    let elapsed = started.elapsed();
    let notes = cluster.notes_with(&unlabelled, &[("current", &current), ("proposed", &proposed)]);
    let proposed_description = proposed_description(&proposed_texts, &templates);
    let text = match args.output {
        Format::Json => fleet_input::report_json(
            &report,
            vec![
                ("current", current.description.clone().into()),
                ("proposed", proposed_description.into()),
                ("breaks", report.breaks().into()),
                ("notes", notes.into()),
            ],
        )?,
        Format::Table => fleet_table::preview(
            &report,
            &current.description,
            &proposed_description,
            &notes,
            elapsed,
            args.max_names,
        ),
    };
    fleet_input::write_report(&text, &args.report, &progress)?;
    Ok(if report.breaks() {
        ExitCode::from(EXIT_BREAKS)
    } else {
        ExitCode::SUCCESS
    })
}

fn proposed_description(texts: &ConfigTexts, templates: &[(String, NamedText)]) -> String {
    let mut parts = vec![texts.describe()];
    if let Some(values) = &texts.values {
        parts.push(format!("values {}", values.name));
    }
    for (name, file) in templates {
        parts.push(format!("template {name} from {}", file.name));
    }
    parts.join(", ")
}
