//! The Kubernetes client: `--kubeconfig` (and `--context`), else `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account. TLS is rustls with ring.

use std::path::Path;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Builds a client. Reading the configuration never contacts the API server: an unreachable
/// one shows up later, in the watches, without blocking admissions.
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Client, String> {
    let config = config(kubeconfig, context).await?;
    Client::try_from(config).map_err(|e| format!("Kubernetes client: {e}"))
}

/// A client for one-shot commands (`explain`, `doctor`): every request gives up after
/// `timeout` (connecting, or waiting for the answer), so an unreachable API server is reported
/// in seconds rather than hanging.
pub async fn command_client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    timeout: Duration,
) -> Result<Client, String> {
    let mut config = config(kubeconfig, context).await?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    Client::try_from(config).map_err(|e| format!("Kubernetes client: {e}"))
}

/// The client configuration, from the kubeconfig or the in-cluster service account.
pub async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Config, String> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    match kubeconfig {
        Some(path) => {
            let file =
                Kubeconfig::read_from(path).map_err(|e| format!("kubeconfig {}: {e}", path.display()))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| format!("kubeconfig (KUBECONFIG or ~/.kube/config): {e}")),
        None => Config::infer().await.map_err(|e| {
            format!(
                "no Kubernetes configuration: not in a cluster, and no kubeconfig ({e}); pass --kubeconfig"
            )
        }),
    }
}
