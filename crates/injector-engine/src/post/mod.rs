//! Stage 5, post-processing the merged pod, in Istio's `postProcessPod` order: the cluster and
//! network environment ([`crate::prepare::cluster`]), Prometheus merge and the secure-port
//! annotation ([`prometheus`]), probe rewriting ([`probes`]), the injection status annotation
//! ([`status`]) and the container order ([`reorder`]); then the Go round trip of the result.

pub mod probes;
pub mod prometheus;
pub mod reorder;
pub mod status;

use serde_json::Value;

use crate::compiled::CompiledConfig;
use crate::member::Members;
use crate::merge::Merged;
use crate::pipeline::InjectError;
use crate::pod::{annotations_mut, labels_mut};
use crate::prepare::{Prepared, cluster};

/// Istio's `postProcessPod` of the merged pod, with the status annotation of its template pod.
pub fn post_process(
    config: &CompiledConfig,
    prepared: &Prepared,
    merged: Merged,
) -> Result<Value, InjectError> {
    let fail = |message: String| InjectError(format!("failed to process pod: {message}"));
    let Merged {
        mut pod,
        template_pod,
    } = merged;
    let pod = &mut pod;
    annotations_mut(pod);
    labels_mut(pod);
    cluster::overwrite_cluster_info(pod, &prepared.proxy_envs);
    let mesh = config.mesh();
    let status_port = config.status_port();
    let mesh_merge = mesh.member("enablePrometheusMerge").and_then(Value::as_bool);
    prometheus::apply_prometheus_merge(pod, mesh_merge, u32::try_from(status_port).unwrap_or(15020))
        .map_err(|e| fail(e.to_string()))?;
    prometheus::apply_secure_port_annotation(pod);
    let rewrite = crate::pod::at(
        config.values(),
        &["sidecarInjectorWebhook", "rewriteAppHTTPProbe"],
    )
    .and_then(Value::as_bool)
    .unwrap_or(false);
    probes::apply_rewrite(pod, rewrite, status_port);

    if let Some(network) = prepared.proxy_envs.get(cluster::NETWORK_ENV) {
        labels_mut(pod).insert(cluster::NETWORK_LABEL.to_owned(), network.clone().into());
    }
    let status = status::injection_status(&template_pod, &config.options().revision);
    annotations_mut(pod).insert(status::STATUS_ANNOTATION.to_owned(), status.into());
    if !config.options().kube_inject {
        for (key, value) in &config.config().injected_annotations {
            annotations_mut(pod).insert(key.clone(), value.clone().into());
        }
    }
    let hold = hold_application(&prepared.inputs.proxy_config, config.values());
    reorder::reorder_pod(pod, hold);
    crate::normalize::normalize_preserving_owned("v1/Pod", std::mem::take(pod))
        .map_err(|e| fail(e.to_string()))
}

/// `holdApplicationUntilProxyStarts`: from the effective ProxyConfig (the pod's annotation merged
/// into the mesh's default), or the values' `global.proxy.holdApplicationUntilProxyStarts`.
fn hold_application(proxy_config: &Value, values: &Value) -> bool {
    let from_mesh = proxy_config
        .member("holdApplicationUntilProxyStarts")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let from_values = crate::pod::at(values, &["global", "proxy", "holdApplicationUntilProxyStarts"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    from_mesh || from_values
}
