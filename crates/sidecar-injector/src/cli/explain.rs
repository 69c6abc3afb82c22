//! `sidecar-injector explain`: why a pod is, or is not, injected, as a command.

use std::{io::Write, path::PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use injector_core::{
    config::{ConfigSource, InjectorConfig, parse_injector_config},
    explain::{ConfigOrigin, Context as ExplainContext, Explanation, Webhooks, explain},
    gate::{NamespaceFacts, WebhookConfiguration},
    workload::{self, PodTemplate, SUPPORTED_KINDS},
};

use super::{
    explain_table,
    input::{self, Located},
    show_patch,
};

/// Explain why a pod is, or is not, injected with a sidecar.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sidecar-injector explain -f deployment.yaml\n  \
    sidecar-injector explain -f deployment.yaml --namespace ns.yaml --webhook mwc.yaml --injector-config cm.yaml\n  \
    kubectl get deploy web -o yaml | sidecar-injector explain -f - -o json\n\n\
    Against a cluster (the namespace, webhooks and ConfigMap are read from it):\n  \
    sidecar-injector explain -n shop deployment/web\n  \
    sidecar-injector explain -n shop pod/web-7d4b9-x2x7q -o json\n  \
    sidecar-injector explain --context prod -f deployment.yaml")]
pub struct ExplainArgs {
    /// A workload in the cluster, TYPE/NAME: pod/NAME, deployment/NAME, statefulset/NAME,
    /// daemonset/NAME, replicaset/NAME, job/NAME or cronjob/NAME (kubectl's short names work).
    #[arg(value_name = "TYPE/NAME", conflicts_with = "file")]
    pub target: Option<String>,
    /// The workload: a Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
    /// ReplicationController or DeploymentConfig; multi-document YAML and `List`s work; `-` reads stdin.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        required_unless_present = "target"
    )]
    pub file: Option<PathBuf>,
    /// Offline: the Namespace object the pods are created in (`kubectl get ns NAME -o yaml`), for
    /// its labels. Against a cluster: the namespace's name (default: the kubeconfig context's).
    #[arg(short = 'n', long, value_name = "NAMESPACE.yaml|NS")]
    pub namespace: Option<String>,
    /// Read from the cluster even with -f (implied by TYPE/NAME, --kubeconfig and --context): the
    /// namespace, the revision's webhook configurations and the injector ConfigMap.
    #[arg(long)]
    pub live: bool,
    /// Kubeconfig file for live explain (default: KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context for live explain.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Live explain: the namespace of the injector ConfigMap.
    #[arg(
        long,
        visible_alias = "istio-namespace",
        default_value = "istio-system",
        value_name = "NS"
    )]
    pub injector_namespace: String,
    /// The MutatingWebhookConfiguration(s) (`kubectl get mutatingwebhookconfiguration NAME -o yaml`).
    /// Without it, the webhooks Istio's chart installs for --revision are assumed (opt-in with the
    /// namespace label istio-injection=enabled or istio.io/rev, or the pod label
    /// sidecar.istio.io/inject=true); `none` assumes the injector is called whatever the labels.
    #[arg(long, value_name = "MWC.yaml|none")]
    pub webhook: Option<PathBuf>,
    /// The Istio revision whose chart webhooks are assumed when --webhook is not given (offline),
    /// or whose webhooks and ConfigMap are read (live; default: the namespace's istio.io/rev
    /// label, else `default`).
    #[arg(long, value_name = "REVISION")]
    pub revision: Option<String>,
    /// The injector ConfigMap (`istio-sidecar-injector`), or its raw `config` YAML. Without it,
    /// Istio's defaults apply (policy `enabled`).
    #[arg(long, value_name = "CONFIGMAP_OR_CONFIG.yaml")]
    pub injector_config: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Also show what injection would change: the exact JSON Patch the webhook would answer with,
    /// and a readable diff of the pod. Renders the templates of --injector-config (the embedded
    /// configuration when not given) with --values and --mesh.
    #[arg(long)]
    pub show_patch: bool,
    /// The values (raw JSON/YAML or the injector ConfigMap), for --show-patch.
    #[arg(long, value_name = "FILE", requires = "show_patch")]
    pub values: Option<PathBuf>,
    /// The mesh config (raw YAML or the `istio` ConfigMap), for --show-patch.
    #[arg(long, value_name = "FILE", requires = "show_patch")]
    pub mesh: Option<PathBuf>,
}

/// How `explain` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A readable report: the three conditions that decide injection, the verdict, the checks and
    /// the fixes.
    Table,
    /// JSON: one object for one workload, an array for several.
    Json,
    /// YAML, shaped like the JSON.
    Yaml,
}

/// Whether `explain` reads from the cluster.
fn is_live(args: &ExplainArgs) -> bool {
    args.live || args.target.is_some() || args.kubeconfig.is_some() || args.context.is_some()
}

/// Runs `explain`. Everything is read and checked before anything is printed.
pub fn run(args: &ExplainArgs) -> Result<()> {
    if is_live(args) {
        return run_live(args);
    }
    let Some(file) = args.file.as_deref() else {
        bail!("give -f FILE, or TYPE/NAME to read the workload from the cluster");
    };
    let (config, origin, config_warnings) = load_config(args)?;
    let namespace = args
        .namespace
        .as_deref()
        .map(|p| load_namespace(std::path::Path::new(p)))
        .transpose()?;
    let given = match args.webhook.as_deref() {
        Some(path) if path.as_os_str() == "none" => None,
        Some(path) => Some(load_webhooks(path)?),
        None => None,
    };
    let webhooks = match (&given, args.webhook.is_some()) {
        (Some(configurations), _) => Webhooks::Given(configurations),
        (None, true) => Webhooks::AssumeCalled,
        (None, false) => Webhooks::IstioChart {
            revision: args.revision.as_deref().unwrap_or("default"),
        },
    };
    let workloads = load_workloads(file)?;

    let explanations: Vec<Explanation> = workloads
        .iter()
        .map(|workload| {
            let mut explanation = explain(
                workload,
                ExplainContext {
                    namespace: namespace.as_ref(),
                    webhooks,
                    config: &config,
                    origin: &origin,
                },
            );
            explanation.warnings.extend(config_warnings.iter().cloned());
            explanation
        })
        .collect();

    let patches = if args.show_patch {
        Some(patches(args, &workloads)?)
    } else {
        None
    };
    let rendered = match (args.output, &patches) {
        (OutputFormat::Json, None) => render_json(&explanations)?,
        (OutputFormat::Yaml, None) => render_yaml(&explanations)?,
        (OutputFormat::Json | OutputFormat::Yaml, Some(patches)) => {
            let combined = with_patches(&explanations, patches)?;
            if args.output == OutputFormat::Json {
                render_json(&combined)?
            } else {
                render_yaml(&combined)?
            }
        }
        (OutputFormat::Table, _) => {
            let mut text = explain_table::render(&explanations, explain_table::use_color());
            for (explanation, patch) in explanations.iter().zip(patches.iter().flatten()) {
                text.push_str(&show_patch::render_table(explanation, patch));
            }
            text
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(rendered.as_bytes())
        .context("cannot write to standard output")?;
    Ok(())
}

/// Live explain: the same report, with what was read from the cluster (`cluster` in JSON).
fn run_live(args: &ExplainArgs) -> Result<()> {
    let results = super::explain_live::explain_live(args)?;
    let rendered = match args.output {
        OutputFormat::Table => {
            let mut text = String::new();
            for (index, (explanation, facts)) in results.iter().enumerate() {
                if index > 0 {
                    text.push('\n');
                }
                text.push_str(&explain_table::render(
                    std::slice::from_ref(explanation),
                    explain_table::use_color(),
                ));
                text.push_str(&super::explain_live::render_facts(explanation, facts));
            }
            text
        }
        OutputFormat::Json | OutputFormat::Yaml => {
            let combined: Vec<serde_json::Value> = results
                .iter()
                .map(|(explanation, facts)| {
                    let mut value = serde_json::to_value(explanation).context("cannot encode the result")?;
                    if let Some(map) = value.as_object_mut() {
                        map.insert(
                            "cluster".to_owned(),
                            serde_json::to_value(facts).context("cannot encode the result")?,
                        );
                    }
                    Ok(value)
                })
                .collect::<Result<_>>()?;
            if args.output == OutputFormat::Json {
                render_json(&combined)?
            } else {
                render_yaml(&combined)?
            }
        }
    };
    std::io::stdout()
        .lock()
        .write_all(rendered.as_bytes())
        .context("cannot write to standard output")?;
    Ok(())
}

fn load_config(args: &ExplainArgs) -> Result<(InjectorConfig, ConfigOrigin, Vec<String>)> {
    let Some(path) = &args.injector_config else {
        return Ok((InjectorConfig::default(), ConfigOrigin::IstioDefaults, Vec::new()));
    };
    let source = input::read_source(path)?;
    let loaded = parse_injector_config(&source.text).map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
    let origin = match loaded.source {
        ConfigSource::ConfigMap { name } => ConfigOrigin::ConfigMap(name),
        ConfigSource::Raw => ConfigOrigin::File,
    };
    let warnings = loaded
        .warnings
        .iter()
        .map(|w| format!("injector config {}: {w}", source.name))
        .collect();
    Ok((loaded.config, origin, warnings))
}

fn load_namespace(path: &std::path::Path) -> Result<NamespaceFacts> {
    let object = input::single_object(path)?;
    NamespaceFacts::from_object(&object.value).map_err(|e| anyhow::anyhow!("{}: {e}", object.describe()))
}

fn load_webhooks(path: &std::path::Path) -> Result<Vec<WebhookConfiguration>> {
    let source = input::read_source(path)?;
    input::objects(&source)?
        .iter()
        .map(|object| {
            WebhookConfiguration::from_object(&object.value)
                .map_err(|e| anyhow::anyhow!("{}: {e}", object.describe()))
        })
        .collect()
}

/// Reads the workloads. Objects that are not workloads (a Service next to a Deployment) are
/// skipped with a note; a stream without any workload is an error. A workload that `inject` could
/// not decode (`containers: "x"`) is the same error here, with the same message.
fn load_workloads(file: &std::path::Path) -> Result<Vec<PodTemplate>> {
    let source = input::read_source(file)?;
    let mut workloads = Vec::new();
    let mut skipped: Vec<Located> = Vec::new();
    for object in input::objects(&source)? {
        match workload::pod_template(&object.value) {
            Ok(Some(template)) => {
                check_decodes(&object)?;
                workloads.push(template);
            }
            Ok(None) => skipped.push(object),
            Err(error) => bail!("{}: {error}", object.describe()),
        }
    }
    if workloads.is_empty() {
        let first = skipped
            .first()
            .map(Located::describe)
            .unwrap_or_else(|| source.name.clone());
        bail!("{first}: not a workload with a pod template; explain takes one of: {SUPPORTED_KINDS}");
    }
    for object in &skipped {
        eprintln!(
            "note: {}: not a workload with a pod template; skipped",
            injector_core::terminal::escape(&object.describe())
        );
    }
    Ok(workloads)
}

/// Fails as `inject` does when the object does not decode as its Kubernetes type.
pub(super) fn check_decodes(object: &Located) -> Result<()> {
    use injector_engine::normalize::{normalize, root_for};
    let text = |key: &str| {
        object
            .value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    match root_for(text("apiVersion"), text("kind")) {
        Some(root) => normalize(root, &object.value)
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{}: {e}", object.describe())),
        None => Ok(()),
    }
}

/// What injection would change for each workload's pod.
fn patches(args: &ExplainArgs, workloads: &[PodTemplate]) -> Result<Vec<show_patch::PodChange>> {
    let settings_args = super::settings::SettingsArgs {
        injector_config: args.injector_config.clone(),
        values: args.values.clone(),
        mesh: args.mesh.clone(),
    };
    let loaded = super::settings::load(&settings_args)?;
    let injector = injector_engine::CompiledConfig::new(
        loaded.config,
        loaded.values,
        loaded.mesh,
        injector_engine::Options::default(),
    )
    .map_err(|e| anyhow::anyhow!("injector configuration: {e}"))?;
    let Some(file) = args.file.as_deref() else {
        return Ok(Vec::new());
    };
    let source = input::read_source(file)?;
    let mut changes = Vec::new();
    let mut objects = input::objects(&source)?.into_iter();
    for workload in workloads {
        let object = objects
            .by_ref()
            .find(|o| workload::pod_template(&o.value).ok().flatten().as_ref() == Some(workload));
        let Some(object) = object else { continue };
        changes.push(show_patch::pod_change(&injector, &object.value, workload));
    }
    Ok(changes)
}

fn with_patches<T: serde::Serialize>(
    explanations: &[T],
    patches: &[show_patch::PodChange],
) -> Result<Vec<serde_json::Value>> {
    explanations
        .iter()
        .zip(patches)
        .map(|(explanation, change)| {
            let mut value = serde_json::to_value(explanation).context("cannot encode the result")?;
            if let Some(map) = value.as_object_mut() {
                map.insert("patch".to_owned(), change.patch_json());
                if let Some(error) = &change.error {
                    map.insert("patchError".to_owned(), error.clone().into());
                }
            }
            Ok(value)
        })
        .collect()
}

fn render_json<T: serde::Serialize>(explanations: &[T]) -> Result<String> {
    let mut text = match explanations {
        [one] => serde_json::to_string_pretty(one),
        many => serde_json::to_string_pretty(many),
    }
    .context("cannot encode the result as JSON")?;
    text.push('\n');
    Ok(text)
}

fn render_yaml<T: serde::Serialize>(explanations: &[T]) -> Result<String> {
    match explanations {
        [one] => serde_saphyr::to_string(one),
        many => serde_saphyr::to_string(&many),
    }
    .context("cannot encode the result as YAML")
}
