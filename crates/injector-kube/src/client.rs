//! The Kubernetes client: `--kubeconfig` (and `--context`), else `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account. TLS is rustls with ring.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::{InferConfigError, KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

/// Why there is no Kubernetes client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig given (`--kubeconfig`) cannot be read or has no usable context.
    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What kube-rs said.
        source: KubeconfigError,
    },
    /// The default kubeconfig (`KUBECONFIG` or `~/.kube/config`) cannot be read or has no
    /// usable context.
    #[error("kubeconfig (KUBECONFIG or ~/.kube/config): {0}")]
    DefaultKubeconfig(#[source] KubeconfigError),
    /// Neither in a cluster nor with a kubeconfig.
    #[error("no Kubernetes configuration: not in a cluster, and no kubeconfig ({0}); pass --kubeconfig")]
    NoConfiguration(#[source] InferConfigError),
    /// The configuration was read but makes no client (e.g. its TLS settings).
    #[error("Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// Builds a client. Reading the configuration never contacts the API server: an unreachable
/// one shows up later, in the watches, without blocking admissions.
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Client, ClientError> {
    let config = config(kubeconfig, context).await?;
    Client::try_from(config).map_err(ClientError::Client)
}

/// A client for one-shot commands (`explain`, `doctor`): every request gives up after
/// `timeout` (connecting, or waiting for the answer), so an unreachable API server is reported
/// in seconds rather than hanging.
pub async fn command_client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    timeout: Duration,
) -> Result<Client, ClientError> {
    let mut config = config(kubeconfig, context).await?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    Client::try_from(config).map_err(ClientError::Client)
}

/// The client configuration, from the kubeconfig or the in-cluster service account.
pub async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Config, ClientError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    match kubeconfig {
        Some(path) => {
            let in_file = |source| ClientError::Kubeconfig {
                path: path.to_path_buf(),
                source,
            };
            let file = Kubeconfig::read_from(path).map_err(in_file)?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(in_file)
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(ClientError::DefaultKubeconfig),
        None => Config::infer().await.map_err(ClientError::NoConfiguration),
    }
}
