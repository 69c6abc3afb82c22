//! `serve --cluster`: the flags of cluster mode and their translation into
//! `injector_kube::ClusterOptions`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use injector_kube::ca_set::RotationPolicy;
use injector_kube::{
    CertificateMode, ClusterOptions, ConfigMapNames, Expect, NativeSidecars, ProbeOptions, ProbeTarget,
    WebhookSelection,
};

use super::serve::parse_duration;

/// Cluster mode: certificates, caBundle, configuration and leader election through the
/// Kubernetes API.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cluster mode (--cluster)")]
pub struct ClusterArgs {
    /// Run as a cluster component: keep the CA and serving certificates in a Secret, patch the
    /// caBundle of our webhook configurations (one leader, by Lease), and read the configuration
    /// from its ConfigMaps, all through the Kubernetes API.
    #[arg(long)]
    pub cluster: bool,
    /// Kubeconfig file (default: in-cluster service account, else KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "FILE", env = "KUBECONFIG", hide_env_values = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The injector's namespace: its Secret, Lease and ConfigMaps (default: POD_NAMESPACE, the
    /// in-cluster service account's namespace, else istio-system).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The Service in front of the replicas; the serving certificate is for NAME.NS.svc,
    /// NAME.NS.svc.cluster.local, NAME.NS and NAME (plus --dns-name).
    #[arg(long, value_name = "NAME", default_value = "istiod")]
    pub service_name: String,
    /// `self-managed`: our own CA in --ca-secret, created if absent, rotated with overlap.
    /// `external`: cert-manager (or any tool) writes --tls-secret (tls.crt, tls.key, ca.crt); we
    /// serve it and put its ca.crt in the caBundle.
    #[arg(long, value_enum, default_value_t = CertMode::SelfManaged)]
    pub certificates: CertMode,
    /// The Secret holding our CA (self-managed).
    #[arg(long, value_name = "NAME", default_value = "sidecar-injector-ca")]
    pub ca_secret: String,
    /// The Secret written by cert-manager or another tool (external).
    #[arg(long, value_name = "NAME", default_value = "sidecar-injector-tls")]
    pub tls_secret: String,
    /// Validity of a new CA; it is rotated when a third is left.
    #[arg(long, value_name = "DURATION", default_value = "8760h", value_parser = parse_duration)]
    pub ca_validity: Duration,
    /// How long a retired CA stays in the caBundle after replicas switched to the new one.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub ca_overlap: Duration,
    /// Validity of each replica's serving certificate; renewed when a third is left.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub cert_validity: Duration,
    /// How long a new CA must have been in every webhook's caBundle before it is served (the
    /// API server needs a moment to see a new caBundle).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub ca_settle: Duration,
    /// A MutatingWebhookConfiguration whose caBundle we keep (repeatable). Default:
    /// istio-sidecar-injector (-REV for a revision) and every one labelled istio.io/rev=REV,
    /// which includes Istio's revision tags. Only its webhooks that point at the injector
    /// (--service-name, or a url to one of the certificate's names) are written; others are
    /// reported.
    #[arg(long = "webhook-config", value_name = "NAME")]
    pub webhook_configs: Vec<String>,
    /// Also every MutatingWebhookConfiguration with this label (KEY=VALUE, repeatable; all must
    /// match).
    #[arg(long = "webhook-label", value_name = "KEY=VALUE")]
    pub webhook_labels: Vec<String>,
    /// The injector ConfigMap (data.config, data.values). Default: istio-sidecar-injector[-REV].
    #[arg(long, value_name = "NAME")]
    pub injector_configmap: Option<String>,
    /// The mesh ConfigMap (data.mesh). Default: istio[-REV]. Optional in the cluster.
    #[arg(long, value_name = "NAME")]
    pub mesh_configmap: Option<String>,
    /// Namespace of the ConfigMaps (default: --namespace).
    #[arg(long, value_name = "NS")]
    pub config_namespace: Option<String>,
    /// The Lease electing the replica that patches caBundles and rotates the CA. Default:
    /// sidecar-injector-leader[-REV].
    #[arg(long, value_name = "NAME")]
    pub lease_name: Option<String>,
    /// How long the Lease lasts without renewal: a replica that dies is replaced within it.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// This replica's identity in the Lease (default: POD_NAME, else the host name and pid).
    #[arg(long, value_name = "NAME")]
    pub identity: Option<String>,
    /// How often time-based steps (CA rotation, certificate renewal) are checked.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub resync: Duration,
    /// Write Events on the workloads of admitted pods (injected, skipped for a reason a user may
    /// not expect, denied), aggregated per workload and reason.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub events: bool,
    /// Turn on the synthetic admission probe: every --probe-interval the leader dry-run creates a
    /// canary pod in NS through the API server and checks that it comes back injected
    /// (repeatable). Needs `pods` `create` in NS (deploy/rbac-cluster-mode.yaml, optional part).
    #[arg(long = "probe-namespace", value_name = "NS")]
    pub probe_namespaces: Vec<String>,
    /// Also probe NS, a namespace opted out of injection: the canary must come back without a
    /// sidecar (repeatable; needs --probe-namespace).
    #[arg(long = "probe-opted-out-namespace", value_name = "NS")]
    pub probe_opted_out_namespaces: Vec<String>,
    /// Time between two probes.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub probe_interval: Duration,
    /// How long one probe may take before it fails as `timeout` (at most --probe-interval; keep
    /// it above the webhook's timeoutSeconds to see the API server's own message).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub probe_timeout: Duration,
}

/// `--certificates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CertMode {
    /// Our own CA in a Secret.
    SelfManaged,
    /// A Secret written by cert-manager or another tool.
    External,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn default_namespace() -> String {
    env_nonempty("POD_NAMESPACE")
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "istio-system".to_owned())
}

fn default_identity() -> String {
    env_nonempty("POD_NAME").unwrap_or_else(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "sidecar-injector".to_owned());
        format!("{host}-{}", std::process::id())
    })
}

fn revision_suffix(revision: &str) -> String {
    if revision.is_empty() || revision == "default" {
        String::new()
    } else {
        format!("-{revision}")
    }
}

impl ClusterArgs {
    /// The options of cluster mode, for `revision`, with `dns_names` as extra certificate names
    /// and `native` as the flag (`None`: auto).
    pub fn options(
        &self,
        revision: &str,
        dns_names: &[String],
        native: Option<bool>,
    ) -> Result<ClusterOptions> {
        let namespace = self.namespace.clone().unwrap_or_else(default_namespace);
        let mut webhooks = if self.webhook_configs.is_empty() && self.webhook_labels.is_empty() {
            WebhookSelection::istio(revision)
        } else {
            WebhookSelection {
                names: BTreeSet::new(),
                labels: BTreeMap::new(),
            }
        };
        webhooks.names.extend(self.webhook_configs.iter().cloned());
        for label in &self.webhook_labels {
            let Some((k, v)) = label.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
                bail!("--webhook-label {label:?}: expected KEY=VALUE");
            };
            webhooks.labels.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        let mut config =
            ConfigMapNames::istio(self.config_namespace.as_deref().unwrap_or(&namespace), revision);
        if let Some(name) = &self.injector_configmap {
            config.injector = name.clone();
        }
        if let Some(name) = &self.mesh_configmap {
            config.mesh = name.clone();
        }
        let certificates = match self.certificates {
            CertMode::SelfManaged => {
                if self.ca_validity < Duration::from_secs(30) {
                    bail!("--ca-validity must be at least 30s");
                }
                CertificateMode::SelfManaged {
                    secret: self.ca_secret.clone(),
                    policy: RotationPolicy {
                        ca_validity: self.ca_validity,
                        overlap: self.ca_overlap,
                    },
                    leaf_validity: self.cert_validity.max(Duration::from_secs(10)),
                    settle: self.ca_settle,
                }
            }
            CertMode::External => CertificateMode::External {
                secret: self.tls_secret.clone(),
            },
        };
        Ok(ClusterOptions {
            namespace,
            service_name: self.service_name.clone(),
            extra_names: dns_names.to_vec(),
            certificates,
            webhooks,
            config,
            lease_name: self
                .lease_name
                .clone()
                .unwrap_or_else(|| format!("sidecar-injector-leader{}", revision_suffix(revision))),
            identity: self.identity.clone().unwrap_or_else(default_identity),
            lease_duration: self.lease_duration,
            native_sidecars: native.map_or(NativeSidecars::Auto, NativeSidecars::Fixed),
            resync: self.resync.max(Duration::from_millis(200)),
            events: self.events,
            probe: self.probe_options()?,
        })
    }

    /// The probe's options (`None` without `--probe-namespace`).
    fn probe_options(&self) -> Result<Option<ProbeOptions>> {
        if self.probe_namespaces.is_empty() {
            if !self.probe_opted_out_namespaces.is_empty() {
                bail!(
                    "--probe-opted-out-namespace needs --probe-namespace (the namespace whose pods must be injected)"
                );
            }
            return Ok(None);
        }
        if self.probe_interval < Duration::from_secs(1) {
            bail!("--probe-interval must be at least 1s");
        }
        if self.probe_timeout.is_zero() || self.probe_timeout > self.probe_interval {
            bail!(
                "--probe-timeout ({:?}) must be more than 0 and at most --probe-interval ({:?})",
                self.probe_timeout,
                self.probe_interval
            );
        }
        let mut targets: Vec<ProbeTarget> = Vec::new();
        let flags = [
            (&self.probe_namespaces, Expect::Injected),
            (&self.probe_opted_out_namespaces, Expect::NotInjected),
        ];
        for (namespaces, expect) in flags {
            for namespace in namespaces {
                let namespace = namespace.trim();
                if !is_dns_label(namespace) {
                    bail!(
                        "--probe-namespace/--probe-opted-out-namespace {namespace:?}: not a namespace name (lowercase letters, digits and '-', at most 63)"
                    );
                }
                if let Some(other) = targets.iter().find(|t| t.namespace == namespace) {
                    bail!(
                        "namespace {namespace:?} is given twice to the probe (expect {} and {})",
                        other.expect.as_str(),
                        expect.as_str()
                    );
                }
                targets.push(ProbeTarget {
                    namespace: namespace.to_owned(),
                    expect,
                });
            }
        }
        Ok(Some(ProbeOptions {
            targets,
            interval: self.probe_interval,
            timeout: self.probe_timeout,
        }))
    }
}

/// A namespace name: an RFC 1123 label.
fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        cluster: ClusterArgs,
    }

    fn probe(args: &[&str]) -> Result<Option<ProbeOptions>> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))?;
        Ok(cli.cluster.options("default", &[], None)?.probe)
    }

    #[test]
    fn the_probe_is_off_unless_a_namespace_is_given() {
        assert_eq!(probe(&["--cluster"]).unwrap(), None);
    }

    #[test]
    fn probe_namespaces_become_targets_with_their_expectation() {
        let options = probe(&[
            "--probe-namespace",
            "probe-on",
            "--probe-opted-out-namespace",
            "probe-off",
            "--probe-interval",
            "10s",
            "--probe-timeout",
            "5s",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            options.targets,
            [
                ProbeTarget {
                    namespace: "probe-on".into(),
                    expect: Expect::Injected
                },
                ProbeTarget {
                    namespace: "probe-off".into(),
                    expect: Expect::NotInjected
                },
            ]
        );
        assert_eq!(options.interval, Duration::from_secs(10));
        assert_eq!(options.timeout, Duration::from_secs(5));
        let defaults = probe(&["--probe-namespace", "p"]).unwrap().unwrap();
        assert_eq!(
            (defaults.interval, defaults.timeout),
            (Duration::from_secs(30), Duration::from_secs(15))
        );
    }

    #[test]
    fn bad_probe_flags_are_refused_with_the_flag_named() {
        let error = |args: &[&str]| probe(args).unwrap_err().to_string();
        assert!(error(&["--probe-opted-out-namespace", "off"]).contains("needs --probe-namespace"));
        assert!(error(&["--probe-namespace", "Probe_NS"]).contains("\"Probe_NS\": not a namespace name"));
        assert!(
            error(&["--probe-namespace", "p", "--probe-opted-out-namespace", "p"])
                .contains("namespace \"p\" is given twice")
        );
        assert!(
            error(&[
                "--probe-namespace",
                "p",
                "--probe-interval",
                "5s",
                "--probe-timeout",
                "10s"
            ])
            .contains("--probe-timeout (10s) must be more than 0 and at most --probe-interval (5s)")
        );
        assert!(error(&["--probe-namespace", "p", "--probe-interval", "500ms"]).contains("at least 1s"));
        assert!(error(&["--probe-namespace", "p", "--probe-interval", "soon"]).contains("invalid duration"));
    }
}
