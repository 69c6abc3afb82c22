//! `sidecar-injector inject`: manual injection of manifests, like `istioctl kube-inject`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use injector_engine::{
    CompiledConfig, Options,
    kube_inject::{StreamError, inject_stream_each},
};

use super::{
    input,
    output::Output,
    settings::{self, SettingsArgs},
};

/// Inject the sidecar into Kubernetes manifests (Pods, Deployments, StatefulSets, DaemonSets,
/// ReplicaSets, ReplicationControllers, Jobs, CronJobs, DeploymentConfigs, Lists). Other documents
/// are written back unchanged.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sidecar-injector inject -f deployment.yaml | kubectl apply -f -\n  \
    kubectl get deploy web -o yaml | sidecar-injector inject -f - -o web-injected.yaml\n  \
    sidecar-injector inject -f app.yaml --injector-config cm.yaml --values values.json --mesh mesh.yaml")]
pub struct InjectArgs {
    /// The manifests (multi-document YAML or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the result; standard output by default (or `-`). Nothing is written unless
    /// the whole stream is injected: a file is then replaced atomically, keeping its permissions
    /// (a symlink's target is replaced, the link kept); a FIFO or device is written in place.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The configuration files (embedded defaults when not given).
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// An IstioOperator (`install.istio.io/v1alpha1`): its `spec.values` (and `spec.hub`/`spec.tag`)
    /// are merged over the values, winning, and its `spec.meshConfig` is overlaid on the mesh
    /// config, as `istioctl kube-inject --operatorFileName` does.
    #[arg(long, alias = "operatorFileName", value_name = "FILE")]
    pub operator_file: Option<PathBuf>,
    /// The revision the templates see (`.Revision`); empty, as for istioctl's default revision.
    #[arg(long, default_value = "")]
    pub revision: String,
    /// Whether to inject the proxy as a native sidecar (an init container with
    /// restartPolicy: Always, Kubernetes 1.29+).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub native_sidecars: bool,
}

/// Runs `inject`.
pub fn run(args: &InjectArgs) -> Result<()> {
    let mut loaded = settings::load(&args.settings)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some(path) = &args.operator_file {
        let source = input::read_source(path)?;
        let operator = injector_engine::settings::parse_istio_operator(&source.text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
        injector_engine::settings::apply_istio_operator(&operator, &mut loaded.values, &mut loaded.mesh)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
    }
    let options = Options {
        revision: args.revision.clone(),
        native_sidecars: args.native_sidecars,
        kube_inject: true,
        ..Options::default()
    };
    let injector = CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, options)
        .map_err(|e| anyhow::anyhow!("injector configuration: {e}"))?;
    let source = input::read_source(&args.file)?;
    let ignored = ignored_annotations(&source);
    // Opened only now, once the configuration and the input are known to be readable; each
    // document is written as soon as it is injected, and the output put in place at the end.
    let mut output = Output::open(args.output.as_deref())?;
    let warnings = inject_stream_each(&injector, &source.text, |document| {
        output.write_all(document.as_bytes())
    })
    .map_err(|error| match error {
        StreamError::Inject(error) => anyhow::anyhow!("{}: {error}", source.name),
        StreamError::Sink(error) => error,
    })?;
    drop(source);
    output.commit()?;
    for warning in &ignored {
        eprintln!("warning: {warning}");
    }
    if !warnings.is_empty() {
        eprintln!();
        for warning in &warnings {
            eprint!("{warning}");
        }
    }
    Ok(())
}

/// The annotations of the stream's pod templates that have no effect, one message each naming
/// the document. A stream that does not parse yields none here (injecting it reports the error).
fn ignored_annotations(source: &input::Source) -> Vec<String> {
    let Ok(objects) = input::objects(source) else {
        return Vec::new();
    };
    objects
        .iter()
        .filter_map(|object| {
            let template = injector_core::workload::pod_template(&object.value)
                .ok()
                .flatten()?;
            let found = injector_core::ignored_annotations::warnings(&template.annotations);
            Some(
                found
                    .into_iter()
                    .map(|w| format!("{}: {w}", object.describe()))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect()
}
