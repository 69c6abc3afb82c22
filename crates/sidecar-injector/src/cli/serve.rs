//! `sidecar-injector serve`: the admission webhook.
//!
//! The HTTPS server, certificates, reloads, metrics and shutdown live in `injector-server`; this
//! module turns flags into its options and plugs the injection engine into it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use injector_core::creator_warnings;
use injector_core::explain::ConfigOrigin;
use injector_engine::cache::RenderCache;
use injector_engine::{CompiledConfig, InjectError, Options, Outcome, Request};
use injector_kube::Cluster;
use injector_kube::events::{Admitted, EventSink, Outcome as EventOutcome};
use injector_server::{
    Admission, AdmissionInput, AdmissionOutcome, Caches, CertSource, CertStore, ConfigFiles, ConfigStore,
    Explain, ExplainError, ExplainSubject, LogFormat, ServeOptions, WatchOptions, console::ConsoleHosts,
};

use super::cluster::ClusterArgs;
use super::console_explain::{self, ConsoleContext};
use super::render_metrics::RenderMetrics;
use super::settings::{SettingsArgs, from_texts};

/// Run the admission webhook (HTTPS) and its monitoring endpoints.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sidecar-injector serve                       # self-signed CA, embedded configuration\n  \
    sidecar-injector serve --write-ca ca.pem --dns-name sidecar-injector.istio-system.svc\n  \
    sidecar-injector serve --tls-cert /etc/certs/tls.crt --tls-key /etc/certs/tls.key \\\n      \
    --injector-config /etc/istio/inject/config --values /etc/istio/inject/values --mesh /etc/istio/config/mesh")]
pub struct ServeArgs {
    /// HTTPS address for admissions (Istio's port).
    #[arg(long, default_value = "0.0.0.0:15017")]
    pub addr: SocketAddr,
    /// Plain-HTTP address for /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:15014")]
    pub monitoring_addr: SocketAddr,
    /// Serving certificate chain (PEM); reloaded when the file changes. Without --tls-cert and
    /// --tls-key, a self-generated CA signs a certificate for localhost, 127.0.0.1 and --dns-name.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of the serving certificate (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept only callers with a TLS client certificate from a CA in FILE (PEM): the API
    /// server, given one by its admission configuration (docs/security.md). Reloaded when the
    /// file changes.
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
    /// Extra DNS names for the self-generated certificate (repeatable), e.g.
    /// sidecar-injector.istio-system.svc.
    #[arg(long = "dns-name", value_name = "NAME")]
    pub dns_names: Vec<String>,
    /// Where to write the self-generated CA (PEM, for the webhook's caBundle); its key goes to
    /// FILE.key (mode 0600) and the CA is reused on the next start, unless that key is readable
    /// by others, owned by another user or not the certificate's (then serve refuses to start).
    #[arg(long, value_name = "FILE")]
    pub write_ca: Option<PathBuf>,
    /// The configuration files, reloaded when they change; a bad change is rejected and the last
    /// good configuration keeps serving.
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// The injector's revision (`.Revision` in templates, `revision` in the status annotation).
    #[arg(long, default_value = "default")]
    pub revision: String,
    /// Whether to inject the proxy as a native sidecar: `true`, `false`, or `auto` (cluster mode:
    /// on only when every node's kubelet is 1.33 or newer, as Istio decides). Default: `true`,
    /// and `auto` with --cluster.
    #[arg(long, value_enum, value_name = "true|false|auto")]
    pub native_sidecars: Option<NativeArg>,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    /// On SIGTERM, how long in-flight admissions may take to finish.
    #[arg(long, default_value = "25s", value_parser = parse_duration)]
    pub grace_period: Duration,
    /// Admissions processed at once; more wait briefly, then get 503. An admission takes its
    /// place once its body is in, so a slow client never holds one.
    #[arg(long, default_value_t = 64)]
    pub max_concurrency: usize,
    /// Open connections on the HTTPS port at once. At the cap, a connection still in its TLS
    /// handshake, else the one idle the longest, is closed to make room.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Open connections from one peer address at once (at most --max-connections). At the cap,
    /// that peer's own oldest handshake, else its own longest idle connection, is closed for the
    /// new one; when all of them have a request in flight, the new one is closed.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_peer: u32,
    /// HTTP/2 streams open at once on one connection (the API server's client opens another
    /// connection when it needs more).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent_streams: u32,
    /// The least pace of a request body, in KiB per second: each second's worth must arrive
    /// within a second of the previous one, else the request is answered 408 and its connection
    /// closed. The whole body must also arrive within the request's deadline (its ?timeout=,
    /// else 10 s). 0: no pace, the deadline only.
    #[arg(long, default_value_t = 64, value_name = "KIB")]
    pub min_body_rate_kib: u32,
    /// Memory budget of the admissions in flight, in MiB. Each admission holds the bytes of its
    /// body as they arrive, then its body size times the measured growth of its decoded tree
    /// (48x; at least 256 KiB) before it is decoded; when the budget is spent, admissions wait
    /// briefly, then get 503 with Retry-After.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_inflight_mib: u32,
    /// MiB of recent admission outcomes kept for identical pods (the replicas of a scale-up);
    /// 0 turns the cache off.
    #[arg(long, default_value_t = 8)]
    pub outcome_cache_mib: usize,
    /// MiB of template renders kept for later pods that show the templates the same (the pods
    /// of one workload); 0 turns the render cache off.
    #[arg(long, default_value_t = 16)]
    pub render_cache_mib: usize,
    /// Check one cached answer (outcome cache or render cache) in N: it is computed again
    /// without caches on a low-priority thread and compared; a difference is counted in
    /// /metrics, logged with the review's uid, and turns that cache off for the configuration in
    /// service. 0 turns the checks off.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub shadow_check_every: u32,
    /// Serve the read-only web console (state, recent admissions and their explanations,
    /// live figures, configuration and its reloads, paste a pod) on this plain-HTTP address,
    /// e.g. 127.0.0.1:15080, then `kubectl port-forward`. Off by default; a non-loopback
    /// address needs --console-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub console_addr: Option<SocketAddr>,
    /// Allow --console-addr on a non-loopback address (the console has no authentication:
    /// whoever reaches it sees every admission and the configuration in service). The console
    /// then also answers requests addressed to an IP address, and to the --console-host names.
    #[arg(long, requires = "console_addr")]
    pub console_allow_remote: bool,
    /// A name the console may be reached by, with --console-allow-remote (repeatable), e.g.
    /// console.example.com. Without it, only loopback names and IP addresses are answered: a
    /// request for any other name is refused (421), as a DNS-rebinding page would send.
    #[arg(long = "console-host", value_name = "NAME", requires = "console_allow_remote")]
    pub console_hosts: Vec<String>,
    /// Export each admission as a span over OTLP/gRPC to this collector (http://HOST:PORT),
    /// joined to the API server's trace when its request carries a `traceparent` (the API
    /// server's `--tracing-config-file`); stages as child spans. Off by default.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Cluster mode.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `--native-sidecars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NativeArg {
    /// Always.
    True,
    /// Never.
    False,
    /// From the nodes' kubelet versions (cluster mode).
    Auto,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    gocompat::duration::parse_non_negative(text)
        .ok_or_else(|| format!("invalid duration {text:?} (e.g. 25s, 1m)"))
}

/// The engine, as the server calls it.
struct Engine {
    /// Cluster mode's Event writer.
    events: Option<EventSink>,
    /// The render cache in front of the engine's render stage.
    renders: Arc<RenderCache>,
}

impl injector_server::Injector for Engine {
    type Config = CompiledConfig;

    /// A skip never reads the pod's volumes (the decision and the creator's warnings read labels,
    /// annotations and the namespace); a patch holds for any token volume name when the templates
    /// never saw it (the render cache tells); a denial is not looked into.
    fn admit(&self, config: &CompiledConfig, input: &AdmissionInput, caches: Caches) -> Admission {
        warn_of_ignored_annotations(input);
        let request = request_of(input);
        let outcome = match caches {
            Caches::Use => self.renders.inject(config, &request),
            Caches::Skip => config.inject(&request),
        };
        admission_of(outcome, &input.object)
    }

    fn observe(&self, input: &AdmissionInput, outcome: &AdmissionOutcome) {
        // A dry run must have no side effects, and an Event is one.
        let Some(events) = self.events.as_ref().filter(|_| !input.dry_run) else {
            return;
        };
        let outcome = match outcome {
            AdmissionOutcome::Patched { .. } => EventOutcome::Injected,
            AdmissionOutcome::Skipped { reason, .. } => EventOutcome::Skipped(reason.clone()),
            AdmissionOutcome::Denied { message } => EventOutcome::Denied(message.clone()),
        };
        if let Some(record) = Admitted::from_pod(&input.object, &input.namespace, outcome) {
            events.observe(record);
        }
    }
}

/// The console's explanations, with what they need to know.
struct Console(ConsoleContext);

impl Explain for Console {
    type Config = CompiledConfig;

    fn explain(
        &self,
        config: &CompiledConfig,
        subject: &ExplainSubject,
    ) -> Result<serde_json::Value, ExplainError> {
        // Only a pasted manifest fails, and the message says what is wrong with it.
        console_explain::explain_subject(config, &self.0, subject).map_err(ExplainError::Manifest)
    }

    fn describe(&self, config: &CompiledConfig) -> serde_json::Value {
        console_explain::describe(config)
    }
}

/// The engine's request for an admission: it stops at the admission's deadline.
fn request_of(input: &AdmissionInput) -> Request<'_> {
    Request {
        pod: Some(&input.object),
        namespace: Some(input.namespace.as_str()),
        path_env: input.path_env.clone(),
        owner: None,
        deadline: Some(input.deadline),
    }
}

/// Logs the annotations Istio's injector would ignore, once per admission answered.
fn warn_of_ignored_annotations(input: &AdmissionInput) {
    for warning in injector_core::ignored_annotations::warnings_for_object(&input.object) {
        tracing::warn!(namespace = %input.namespace, "{warning}");
    }
}

/// The engine's answer as the server's admission, with what the creator of `pod` should know.
fn admission_of(outcome: Result<Outcome, InjectError>, pod: &serde_json::Value) -> Admission {
    match outcome {
        Ok(Outcome::Skipped { decision }) => Admission {
            outcome: AdmissionOutcome::Skipped {
                reason: decision.rule.id().to_owned(),
                warnings: creator_warnings::for_pod(&decision, pod),
            },
            any_token_name: true,
            cached: false,
        },
        Ok(Outcome::Injected {
            patch,
            decision,
            blind_to_token_volume,
            renders,
            ..
        }) => Admission {
            outcome: AdmissionOutcome::Patched {
                patch,
                reason: decision.rule.id().to_owned(),
                warnings: creator_warnings::for_pod(&decision, pod),
            },
            any_token_name: blind_to_token_volume,
            cached: renders.cached(),
        },
        Err(error) => Admission::computed(AdmissionOutcome::Denied { message: error.0 }),
    }
}

/// Runs `serve` until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> Result<()> {
    super::memory_return::ensure_purge_delay();
    let format = match args.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    // Injection is CPU-bound and runs on the blocking pool: threads beyond the cores only add
    // context switches and per-thread allocator heaps. Admissions beyond them queue (their
    // deadline still runs).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cores.max(2))
        .build()
        .context("cannot start the runtime")?;
    // Declared after the runtime, so dropped (the last spans sent) while it still runs.
    let tracing = ExportedSpans::start(&runtime, args.otlp_endpoint.as_deref())?;
    injector_server::init_logging_with(format, tracing.layer)
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    let _tracing = tracing.exporter;
    if let Some(endpoint) = &args.otlp_endpoint {
        tracing::info!(%endpoint, "admissions exported as spans over OTLP");
    }
    let native_flag = match args.native_sidecars {
        Some(NativeArg::True) => Some(true),
        Some(NativeArg::False) => Some(false),
        Some(NativeArg::Auto) if !args.cluster.cluster => {
            anyhow::bail!("--native-sidecars auto needs --cluster (it reads the nodes' kubelet versions)")
        }
        Some(NativeArg::Auto) => None,
        None if args.cluster.cluster => None,
        None => Some(true),
    };
    if args.cluster.cluster {
        if args.tls_cert.is_some() || args.write_ca.is_some() {
            anyhow::bail!(
                "--tls-cert and --write-ca are for file mode; with --cluster the certificates come from a Secret (--certificates)"
            );
        }
        if args.settings.injector_config.is_some()
            || args.settings.values.is_some()
            || args.settings.mesh.is_some()
        {
            anyhow::bail!(
                "--injector-config, --values and --mesh are for file mode; with --cluster the configuration comes from its ConfigMaps (--injector-configmap, --mesh-configmap)"
            );
        }
    } else if !args.cluster.probe_namespaces.is_empty() || !args.cluster.probe_opted_out_namespaces.is_empty()
    {
        anyhow::bail!(
            "--probe-namespace and --probe-opted-out-namespace need --cluster (the probe dry-run creates pods through the Kubernetes API)"
        );
    }
    if let Some(addr) = args.console_addr {
        injector_server::console::check_console_addr(addr, args.console_allow_remote)
            .map_err(anyhow::Error::msg)?;
    }
    let native = Arc::new(AtomicBool::new(native_flag.unwrap_or(true)));
    let renders = Arc::new(RenderCache::new(args.render_cache_mib.saturating_mul(1 << 20)));
    let loader = config_loader(&args.revision, native.clone());
    super::memory_return::spawn_purge_nudges();
    let mut options = ServeOptions {
        addr: args.addr,
        monitoring_addr: Some(args.monitoring_addr),
        grace_period: args.grace_period,
        max_concurrency: args.max_concurrency,
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        max_connections_per_peer: usize::try_from(args.max_connections_per_peer).unwrap_or(usize::MAX),
        max_concurrent_streams: args.max_concurrent_streams,
        min_body_rate: usize::try_from(args.min_body_rate_kib)
            .unwrap_or(usize::MAX)
            .saturating_mul(1 << 10),
        max_inflight_bytes: usize::try_from(args.max_inflight_mib)
            .unwrap_or(usize::MAX)
            .saturating_mul(1 << 20),
        outcome_cache_bytes: args.outcome_cache_mib.saturating_mul(1 << 20),
        // The engine injects the pod without `managedFields` and its patch leaves them alone.
        ignore_managed_fields: true,
        shadow_check_every: args.shadow_check_every,
        console_addr: args.console_addr,
        client_ca: args.client_ca.clone(),
        console_hosts: if args.console_allow_remote {
            ConsoleHosts::Remote(args.console_hosts.clone())
        } else {
            ConsoleHosts::LoopbackOnly
        },
        revision: args.revision.clone(),
        ..ServeOptions::default()
    };
    let render_metrics = |extension: injector_server::Extension, renders: &Arc<RenderCache>| {
        let renders = renders.clone();
        extension.with_metrics(move |registry| {
            registry.register_collector(Box::new(RenderMetrics::new(renders.clone())));
        })
    };
    if args.cluster.cluster {
        let cluster = args
            .cluster
            .options(&args.revision, &args.dns_names, native_flag)?;
        let origin = ConfigOrigin::ConfigMap(format!("{}/{}", cluster.namespace, cluster.config.injector));
        return runtime.block_on(async move {
            let client = injector_kube::client::client(
                args.cluster.kubeconfig.as_deref(),
                args.cluster.context.as_deref(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            tracing::info!(namespace = %cluster.namespace, service = %cluster.service_name,
                webhooks = %cluster.webhooks.describe(), injector_configmap = %cluster.config.injector,
                mesh_configmap = %cluster.config.mesh, identity = %cluster.identity, "cluster mode");
            let config = ConfigStore::manual(loader);
            let certs = CertStore::manual();
            let running = Cluster::start(client, cluster, certs.clone(), config.clone(), native).await;
            options.extension = render_metrics(running.extension(), &renders);
            let server = injector_server::Server::bind_with_certs(
                options,
                Engine {
                    events: running.events(),
                    renders,
                },
                config,
                certs,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .with_console(Console(ConsoleContext {
                revision: args.revision.clone(),
                origin: origin.clone(),
            }));
            server
                .serve(injector_server::shutdown_signal())
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))
        });
    }
    let mut files = Vec::new();
    for (name, path) in [
        ("injector-config", &args.settings.injector_config),
        ("values", &args.settings.values),
        ("mesh", &args.settings.mesh),
    ] {
        if let Some(path) = path {
            files.push((name.to_owned(), path.clone()));
        }
    }
    let config = ConfigStore::watch_files(files, WatchOptions::default(), loader);
    options.cert = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => CertSource::Files { cert, key },
        _ => CertSource::SelfSigned {
            dns_names: args.dns_names,
            write_ca: args.write_ca,
        },
    };
    options.extension = render_metrics(options.extension, &renders);
    let origin = if args.settings.injector_config.is_some() {
        ConfigOrigin::File
    } else {
        ConfigOrigin::Embedded
    };
    runtime.block_on(async move {
        let server = injector_server::Server::bind(
            options,
            Engine {
                events: None,
                renders,
            },
            config,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .with_console(Console(ConsoleContext {
            revision: args.revision.clone(),
            origin,
        }));
        server
            .serve(injector_server::shutdown_signal())
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))
    })
}

/// `--otlp-endpoint`: the exporter of the admissions' spans, and the layer that gives them to it.
struct ExportedSpans {
    exporter: Option<SpanExporter>,
    layer: Option<injector_server::logging::BoxedLayer>,
}

/// Sends the last spans when dropped.
struct SpanExporter(injector_server::Tracing);

impl Drop for SpanExporter {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

impl ExportedSpans {
    fn start(runtime: &tokio::runtime::Runtime, endpoint: Option<&str>) -> Result<Self> {
        let Some(endpoint) = endpoint else {
            return Ok(Self {
                exporter: None,
                layer: None,
            });
        };
        // The exporter's connection runs on the runtime.
        let _entered = runtime.enter();
        let (exporter, layer) =
            injector_server::Tracing::start(endpoint, "sidecar-injector").map_err(anyhow::Error::msg)?;
        Ok(Self {
            exporter: Some(SpanExporter(exporter)),
            layer: Some(layer),
        })
    }
}

/// The configuration loader shared by file and cluster mode: the files (or ConfigMap keys)
/// named `injector-config`, `values` and `mesh`, over the embedded defaults. Native sidecars are
/// read from `native` on every load (cluster mode's `auto` changes it and reloads).
fn config_loader(
    revision: &str,
    native: Arc<AtomicBool>,
) -> impl Fn(&ConfigFiles) -> Result<CompiledConfig, String> + Send + Sync + 'static {
    let revision = revision.to_owned();
    move |files: &ConfigFiles| {
        // Errors name the file as given (`--injector-config /etc/istio/inject/config: ...`), or
        // the ConfigMap key (`configmap/NS/NAME (data.KEY)`) in cluster mode.
        let labels: Vec<(&str, String)> = files
            .iter()
            .map(|file| {
                let path = file.path.display().to_string();
                let label = if path.starts_with("configmap/") {
                    path
                } else {
                    format!("--{} {path}", file.name)
                };
                (file.name.as_str(), label)
            })
            .collect();
        let text = |name: &str| {
            let label = labels.iter().find(|(n, _)| *n == name).map(|(_, l)| l.as_str());
            files.get(name).zip(label).map(|(text, label)| (label, text))
        };
        let loaded = from_texts(text("injector-config"), text("values"), text("mesh"))?;
        for warning in &loaded.warnings {
            tracing::warn!(%warning, "configuration");
        }
        let options = Options {
            revision: revision.clone(),
            native_sidecars: native.load(Ordering::SeqCst),
            ..Options::default()
        };
        CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, options).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    /// The engine's stage spans are exported with the admission's: one target for both.
    #[test]
    fn the_engine_stages_share_the_admission_spans_target() {
        assert_eq!(injector_engine::pipeline::STAGES, injector_server::trace::TARGET);
    }
}
