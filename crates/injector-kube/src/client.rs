//! The Kubernetes client: `--kubeconfig` (and `--context`), else `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account. TLS is rustls with ring.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Builds a client. Reading the configuration never contacts the API server: an unreachable
/// one shows up later, in the watches, without blocking admissions.
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Client, String> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let file =
                Kubeconfig::read_from(path).map_err(|e| format!("kubeconfig {}: {e}", path.display()))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| format!("kubeconfig (KUBECONFIG or ~/.kube/config): {e}"))?,
        None => Config::infer().await.map_err(|e| {
            format!(
                "no Kubernetes configuration: not in a cluster, and no kubeconfig ({e}); pass --kubeconfig"
            )
        })?,
    };
    Client::try_from(config).map_err(|e| format!("Kubernetes client: {e}"))
}
