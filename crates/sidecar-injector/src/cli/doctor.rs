//! `sidecar-injector doctor`: Istio's injection troubleshooting page as one command against a
//! live cluster. Gathers a snapshot (reads only, plus one server-side dry-run create), runs the pure
//! checks of `injector-doctor` on it and prints the verdicts. Exit code: 1 when a check found an
//! error, 2 when none did but a check could not run, 0 otherwise.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use injector_doctor::{Settings, checks};
use injector_kube::doctor_snapshot::{GatherOptions, gather};

use super::{doctor_table, serve::parse_duration};

/// Check the injection path of a live cluster: webhooks, policy, certificates, endpoints, events.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 when every check passes (warnings allowed), 1 when one found an error, \
    2 when none did but a check could not run (a read was refused).\n\nExamples:\n  \
    sidecar-injector doctor\n  \
    sidecar-injector doctor -n shop -o json\n  \
    sidecar-injector doctor --context prod --revision canary"
)]
pub struct DoctorArgs {
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, else the in-cluster service account).
    #[arg(long, value_name = "FILE", env = "KUBECONFIG", hide_env_values = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Focus on one namespace: its scope, workloads, pods and events (and the probe runs there).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The Istio revision whose webhooks and ConfigMap are checked.
    #[arg(long, default_value = "default", value_name = "REVISION")]
    pub revision: String,
    /// The injector's namespace: its ConfigMap and Secrets.
    #[arg(
        long,
        visible_alias = "istio-namespace",
        default_value = "istio-system",
        value_name = "NS"
    )]
    pub injector_namespace: String,
    /// The injector ConfigMap. Default: istio-sidecar-injector[-REVISION].
    #[arg(long, value_name = "NAME")]
    pub injector_configmap: Option<String>,
    /// The Secret holding the injector's CA (cluster mode, self-managed certificates).
    #[arg(long, default_value = "sidecar-injector-ca", value_name = "NAME")]
    pub ca_secret: String,
    /// The Secret holding the serving certificate (tls.crt, ca.crt), when external (cert-manager).
    #[arg(long, value_name = "NAME")]
    pub tls_secret: Option<String>,
    /// Also check this MutatingWebhookConfiguration (repeatable); Istio's names and the label
    /// istio.io/rev=REVISION are always checked.
    #[arg(long = "webhook-config", value_name = "NAME")]
    pub webhook_configs: Vec<String>,
    /// The injector's Service (in --injector-namespace), as given to `serve --service-name`: a
    /// selected webhook pointing anywhere else is reported as not the injector's.
    #[arg(long, default_value = "istiod", value_name = "NAME")]
    pub service_name: String,
    /// A host the injector's certificate names (`serve --dns-name`, repeatable): webhooks
    /// registered by `url:` to it are the injector's. Loopback hosts always are.
    #[arg(long = "dns-name", value_name = "HOST")]
    pub dns_names: Vec<String>,
    /// Where the probe's dry-run pod is created. Default: --namespace, else the first namespace
    /// in scope of the webhooks.
    #[arg(long, value_name = "NS")]
    pub probe_namespace: Option<String>,
    /// Do not run the end-to-end probe (a server-side dry-run create of a pod).
    #[arg(long)]
    pub no_probe: bool,
    /// Only the blast radius: what could not be created if the injector were down now (every
    /// namespace and workload behind a Fail webhook of ours, critical ones highlighted).
    #[arg(long)]
    pub blast_radius: bool,
    /// How long each request to the API server, and each TLS handshake, may take.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = DoctorOutput::Table)]
    pub output: DoctorOutput,
    /// Write the report to FILE instead of standard output: it replaces FILE only once it is
    /// complete (an interrupted or failed run leaves FILE as it was).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

/// How `doctor` prints its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorOutput {
    /// One line per check (✓ ok, ! warning, ✗ error, ? could not run), its evidence and fixes.
    Table,
    /// The report as JSON: `checks` (id, title, verdict, summary, evidence, fixes) and `summary`.
    Json,
}

/// Runs `doctor`.
pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    let settings = Settings {
        revision: args.revision.clone(),
        injector_namespace: args.injector_namespace.clone(),
        injector_configmap: args.injector_configmap.clone().unwrap_or_else(|| {
            injector_kube::ConfigMapNames::istio(&args.injector_namespace, &args.revision).injector
        }),
        ca_secret: args.ca_secret.clone(),
        tls_secret: args.tls_secret.clone(),
        focus: args.namespace.clone(),
        extra_webhook_configurations: args.webhook_configs.clone(),
        service_name: args.service_name.clone(),
        dns_names: args.dns_names.clone(),
    };
    let options = GatherOptions {
        settings,
        probe: (!args.no_probe && !args.blast_radius)
            .then(|| args.probe_namespace.clone().or_else(|| args.namespace.clone())),
        handshake_timeout: args.timeout,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let snapshot = runtime.block_on(async {
        let client = injector_kube::client::command_client(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            args.timeout,
        )
        .await;
        gather(client, options).await
    });
    let report = if args.blast_radius {
        checks::run_blast_radius(&snapshot)
    } else {
        checks::run(&snapshot)
    };
    let text = match args.output {
        DoctorOutput::Table => doctor_table::render(&report),
        DoctorOutput::Json => {
            let mut text = serde_json::to_string_pretty(&report).context("cannot encode the report")?;
            text.push('\n');
            text
        }
    };
    match &args.output_file {
        Some(path) => {
            let mut output = super::output::Output::open(Some(path))?;
            output.write_all(text.as_bytes())?;
            output.commit()?;
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to standard output")?,
    }
    Ok(ExitCode::from(report.exit_code()))
}
