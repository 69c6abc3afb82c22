//! What the templates are rendered from, derived from a decoded pod: shared by the injection and
//! by the template data of one pod on its own ([`super::Injector::template_data_for`]).

use std::sync::Arc;

use serde_json::Value;

use super::{Injector, data::TemplateInputs, mesh_status_port};
use crate::{
    images::{PROXY_IMAGE_TYPE_ANNOTATION, proxy_image, proxy_init_image},
    mesh::{PROXY_CONFIG_ANNOTATION, effective_proxy_config},
    owner::{Owner, owner_of},
    pod::annotation,
    strip::{needs_strip, strip_pod},
};

/// The per-pod inputs of the template data.
pub(super) struct Prepared {
    /// The effective ProxyConfig: the mesh's default with the pod's annotation merged in.
    pub proxy_config: Arc<Value>,
    /// The owning workload.
    pub owner: Owner,
    /// The pod as the templates see it (a previous injection stripped).
    pub stripped: Arc<Value>,
    /// `.ProxyImage`.
    pub proxy_image: String,
    /// `.ProxyInitImage`.
    pub proxy_init_image: String,
}

/// Which input could not be derived (each caller words it its own way).
pub(super) enum PrepareError {
    /// The `proxy.istio.io/config` annotation is not a valid ProxyConfig.
    ProxyConfig(String),
    /// A previous injection could not be stripped.
    Strip(String),
}

impl PrepareError {
    /// The reason, without the caller's context.
    pub fn reason(&self) -> &str {
        match self {
            PrepareError::ProxyConfig(reason) | PrepareError::Strip(reason) => reason,
        }
    }
}

impl Injector {
    /// The template data's per-pod inputs for a decoded pod; `owner` when the caller knows it,
    /// else Istio's owner heuristic.
    pub(super) fn prepare(&self, pod: &Arc<Value>, owner: Option<Owner>) -> Result<Prepared, PrepareError> {
        // Most pods have no ProxyConfig of their own: they share the mesh's.
        let proxy_config = match annotation(pod, PROXY_CONFIG_ANNOTATION) {
            None => self.mesh_proxy_config.clone(),
            Some(text) => Arc::new(
                effective_proxy_config(&self.mesh, Some(text))
                    .map_err(|e| PrepareError::ProxyConfig(e.to_string()))?,
            ),
        };
        let owner = owner.unwrap_or_else(|| owner_of(pod));
        // Most pods were never injected: the templates then see the pod itself (shared).
        let stripped = if needs_strip(pod) {
            Arc::new(
                strip_pod(pod, mesh_status_port(&self.mesh))
                    .map_err(|e| PrepareError::Strip(e.to_string()))?,
            )
        } else {
            pod.clone()
        };
        let image_type = annotation(pod, PROXY_IMAGE_TYPE_ANNOTATION);
        let proxy_config_image_type = proxy_config
            .get("image")
            .filter(|i| i.is_object())
            .map(|image| image.get("imageType").and_then(Value::as_str).unwrap_or(""));
        Ok(Prepared {
            proxy_image: proxy_image(&self.values, proxy_config_image_type, image_type),
            proxy_init_image: proxy_init_image(&self.values, image_type),
            proxy_config,
            owner,
            stripped,
        })
    }

    /// The template inputs of a prepared pod with this injector's settings.
    pub(super) fn template_inputs<'a>(&'a self, prepared: &'a Prepared) -> TemplateInputs<'a> {
        TemplateInputs {
            pod: prepared.stripped.clone(),
            owner: &prepared.owner,
            mesh: self.mesh.clone(),
            proxy_config: prepared.proxy_config.clone(),
            revision: &self.options.revision,
            native_sidecars: self.options.native_sidecars,
            compliance_policy: &self.options.compliance_policy,
            proxy_uid: self.options.proxy_uid,
            proxy_gid: self.options.proxy_gid,
            proxy_image: prepared.proxy_image.clone(),
            proxy_init_image: prepared.proxy_init_image.clone(),
        }
    }
}
