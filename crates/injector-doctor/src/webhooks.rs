//! Which MutatingWebhookConfigurations are the injector's, where each webhook sends requests,
//! and which webhooks point at the injector itself.

use std::collections::BTreeSet;

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};

use crate::snapshot::Settings;

/// The configuration Istio's chart names for a revision.
pub fn istio_configuration_name(revision: &str) -> String {
    if revision.is_empty() || revision == "default" {
        "istio-sidecar-injector".to_owned()
    } else {
        format!("istio-sidecar-injector-{revision}")
    }
}

/// Whether a configuration is the injector's: Istio's name for the revision, the label
/// `istio.io/rev=REV` (which revision tags carry too), or named by the user.
pub fn is_ours(configuration: &MutatingWebhookConfiguration, settings: &Settings) -> bool {
    let name = configuration.metadata.name.as_deref().unwrap_or_default();
    let revision = if settings.revision.is_empty() {
        "default"
    } else {
        &settings.revision
    };
    name == istio_configuration_name(revision)
        || settings.extra_webhook_configurations.iter().any(|n| n == name)
        || configuration
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get("istio.io/rev"))
            .is_some_and(|value| value == revision)
}

/// Where a webhook sends its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`.
    Url {
        /// The URL.
        url: String,
        /// Its host (brackets removed from IPv6).
        host: String,
        /// Whether the host is loopback (the only hosts `doctor` dials).
        loopback: bool,
    },
    /// `clientConfig.service`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port (443 when absent).
        port: i32,
        /// The path.
        path: String,
    },
    /// Neither.
    Missing,
}

impl Target {
    /// The webhook's target.
    pub fn of(webhook: &MutatingWebhook) -> Target {
        let config = &webhook.client_config;
        if let Some(url) = &config.url {
            let host = url_host(url);
            let loopback = is_loopback(&host);
            return Target::Url {
                url: url.clone(),
                host,
                loopback,
            };
        }
        if let Some(service) = &config.service {
            return Target::Service {
                namespace: service.namespace.clone(),
                name: service.name.clone(),
                port: service.port.unwrap_or(443),
                path: service.path.clone().unwrap_or_default(),
            };
        }
        Target::Missing
    }

    /// How the target reads in evidence.
    pub fn describe(&self) -> String {
        match self {
            Target::Url { url, .. } => format!("url {url}"),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => format!("service {namespace}/{name}:{port}{path}"),
            Target::Missing => "no clientConfig".to_owned(),
        }
    }

    /// `namespace/name` of a Service target.
    pub fn service_key(&self) -> Option<String> {
        match self {
            Target::Service { namespace, name, .. } => Some(format!("{namespace}/{name}")),
            _ => None,
        }
    }
}

/// The host of an `https://host:port/path` URL, IPv6 brackets removed.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if let Some(bracketed) = authority.strip_prefix('[') {
        return bracketed.split(']').next().unwrap_or("").to_owned();
    }
    authority.split(':').next().unwrap_or("").to_owned()
}

/// Whether `host` is a loopback address (`127.0.0.0/8`, `::1`) or `localhost`.
pub fn is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Where the injector's own webhooks send requests: its Service, or a URL whose host is a name
/// its serving certificate is issued for. A webhook that points anywhere else belongs to someone
/// else, whatever its configuration's name or labels say: the injector never writes it and never
/// waits for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectorEndpoint {
    /// The injector's namespace.
    pub namespace: String,
    /// Its Service.
    pub service: String,
    /// The hosts a `url:` webhook of ours may name (lower case): the Service's DNS names and
    /// the certificate's extra names.
    pub hosts: BTreeSet<String>,
}

impl InjectorEndpoint {
    /// The endpoint of Service `service` in `namespace`, whose certificate also names `extra`.
    pub fn new(namespace: &str, service: &str, extra: &[String]) -> Self {
        let mut hosts: BTreeSet<String> = [
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
            format!("{service}.{namespace}"),
            service.to_owned(),
        ]
        .into_iter()
        .collect();
        hosts.extend(
            extra
                .iter()
                .map(|h| h.trim().trim_matches(['[', ']']).to_ascii_lowercase()),
        );
        InjectorEndpoint {
            namespace: namespace.to_owned(),
            service: service.to_owned(),
            hosts,
        }
    }

    /// Whether `webhook` sends its requests to the injector.
    pub fn receives(&self, webhook: &MutatingWebhook) -> bool {
        match Target::of(webhook) {
            Target::Service { namespace, name, .. } => namespace == self.namespace && name == self.service,
            Target::Url { host, .. } => self.hosts.contains(&host.to_ascii_lowercase()),
            Target::Missing => false,
        }
    }

    /// How the endpoint reads in messages.
    pub fn describe(&self) -> String {
        format!(
            "service {}/{} or a url to {}",
            self.namespace,
            self.service,
            self.hosts.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

/// A webhook of a configuration selected as ours that does not point at the injector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignWebhook {
    /// Its MutatingWebhookConfiguration.
    pub configuration: String,
    /// The webhook's name.
    pub webhook: String,
    /// Where it points instead (`service NS/NAME:PORT/PATH`, `url URL`).
    pub target: String,
}

/// The webhooks of `configurations` that do not point at `endpoint`.
pub fn foreign_webhooks<'a>(
    configurations: impl IntoIterator<Item = &'a MutatingWebhookConfiguration>,
    endpoint: &InjectorEndpoint,
) -> Vec<ForeignWebhook> {
    configurations
        .into_iter()
        .flat_map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            c.webhooks
                .iter()
                .flatten()
                .filter(|w| !endpoint.receives(w))
                .map(move |w| ForeignWebhook {
                    configuration: name.clone(),
                    webhook: w.name.clone(),
                    target: Target::of(w).describe(),
                })
        })
        .collect()
}

/// `configuration` with only the webhooks that point at `endpoint` (`None`: none does).
pub fn only_receiving(
    configuration: &MutatingWebhookConfiguration,
    endpoint: &InjectorEndpoint,
) -> Option<MutatingWebhookConfiguration> {
    let webhooks: Vec<MutatingWebhook> = configuration
        .webhooks
        .iter()
        .flatten()
        .filter(|w| endpoint.receives(w))
        .cloned()
        .collect();
    (!webhooks.is_empty()).then(|| MutatingWebhookConfiguration {
        webhooks: Some(webhooks),
        ..configuration.clone()
    })
}

/// Our configurations' webhooks, with their configuration's name.
pub fn our_webhooks<'a>(
    configurations: &'a [MutatingWebhookConfiguration],
    settings: &Settings,
) -> Vec<(&'a str, &'a MutatingWebhook)> {
    configurations
        .iter()
        .filter(|c| is_ours(c, settings))
        .flat_map(|c| {
            let name = c.metadata.name.as_deref().unwrap_or_default();
            c.webhooks.iter().flatten().map(move |w| (name, w))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(name: &str, client_config: serde_json::Value) -> MutatingWebhook {
        serde_json::from_value(serde_json::json!({"name": name, "clientConfig": client_config,
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}))
        .expect("webhook")
    }

    #[test]
    fn only_webhooks_pointing_at_the_injector_are_received() {
        let endpoint = InjectorEndpoint::new("istio-system", "istiod", &["127.0.0.1".into(), "[::1]".into()]);
        let ours = [
            webhook(
                "svc",
                serde_json::json!({"service": {"namespace": "istio-system", "name": "istiod"}}),
            ),
            webhook(
                "dns",
                serde_json::json!({"url": "https://istiod.istio-system.svc:443/inject"}),
            ),
            webhook(
                "dns-upper",
                serde_json::json!({"url": "https://IstioD.istio-system.SVC/inject"}),
            ),
            webhook(
                "extra",
                serde_json::json!({"url": "https://127.0.0.1:8443/inject"}),
            ),
            webhook("v6", serde_json::json!({"url": "https://[::1]:8443/inject"})),
        ];
        for w in &ours {
            assert!(endpoint.receives(w), "{}", w.name);
        }
        let foreign = [
            webhook(
                "other-svc",
                serde_json::json!({"service": {"namespace": "istio-system", "name": "other"}}),
            ),
            webhook(
                "other-ns",
                serde_json::json!({"service": {"namespace": "attacker", "name": "istiod"}}),
            ),
            webhook(
                "other-host",
                serde_json::json!({"url": "https://evil.example.com/inject"}),
            ),
            webhook(
                "suffix",
                serde_json::json!({"url": "https://istiod.istio-system.svc.evil.example.com/inject"}),
            ),
            webhook(
                "userinfo",
                serde_json::json!({"url": "https://istiod@evil.example.com/inject"}),
            ),
            webhook("none", serde_json::json!({})),
        ];
        for w in &foreign {
            assert!(!endpoint.receives(w), "{}", w.name);
        }
        let mixed: MutatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "mixed"}, "webhooks": [ours[0], foreign[2]]}))
        .expect("mwc");
        let kept = only_receiving(&mixed, &endpoint).expect("one of ours");
        assert_eq!(kept.webhooks.as_ref().map(Vec::len), Some(1));
        assert_eq!(
            foreign_webhooks([&mixed], &endpoint),
            vec![ForeignWebhook {
                configuration: "mixed".into(),
                webhook: "other-host".into(),
                target: "url https://evil.example.com/inject".into(),
            }]
        );
        let all_foreign: MutatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "f"}, "webhooks": [foreign[0]]}))
        .expect("mwc");
        assert_eq!(only_receiving(&all_foreign, &endpoint), None);
    }

    #[test]
    fn loopback_hosts_are_told_from_every_other() {
        assert_eq!(url_host("https://127.0.0.1:8443/inject"), "127.0.0.1");
        assert_eq!(url_host("https://[::1]:8443/inject"), "::1");
        assert_eq!(url_host("https://user@localhost/inject"), "localhost");
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("localhost"));
        assert!(!is_loopback("10.0.0.1"));
        assert!(!is_loopback("istiod.istio-system.svc"));
        assert!(!is_loopback("127.0.0.1.nip.io"));
    }
}
