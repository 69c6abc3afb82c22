//! Which MutatingWebhookConfigurations are the injector's, and where each webhook sends requests.

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
