//! The template data of one pod on its own, for rendering a template outside an injection
//! (`sidecar-injector template render --pod`): what the templates would see for that pod.

use std::sync::Arc;

use serde_json::Value;

use super::{InjectError, Injector, data};
use crate::{
    images::{PROXY_IMAGE_TYPE_ANNOTATION, proxy_image, proxy_init_image},
    mesh::{PROXY_CONFIG_ANNOTATION, effective_proxy_config},
    normalize::normalize_preserving,
    owner::owner_of,
    strip::strip_pod,
};

impl Injector {
    /// Istio's `SidecarTemplateData` for `pod`, built as an injection builds it (the pod decoded
    /// as a Pod, a previous injection stripped, the effective ProxyConfig, the images).
    pub fn template_data_for(&self, pod: &Value) -> Result<gotemplate::Value, InjectError> {
        let pod = normalize_preserving("v1/Pod", pod)
            .map_err(|e| InjectError(format!("failed to decode pod: {e}")))?;
        let annotation = |key: &str| {
            pod.get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
        };
        let proxy_config = Arc::new(
            effective_proxy_config(&self.mesh, annotation(PROXY_CONFIG_ANNOTATION))
                .map_err(|e| InjectError(format!("the pod's {PROXY_CONFIG_ANNOTATION}: {e}")))?,
        );
        let owner = owner_of(&pod);
        let stripped = strip_pod(&pod, super::mesh_status_port(&self.mesh))
            .map_err(|e| InjectError(format!("failed to strip a previous injection: {e}")))?;
        let image_type = annotation(PROXY_IMAGE_TYPE_ANNOTATION);
        let proxy_config_image_type = proxy_config
            .get("image")
            .filter(|i| i.is_object())
            .map(|image| image.get("imageType").and_then(Value::as_str).unwrap_or(""));
        let inputs = data::TemplateInputs {
            pod: Arc::new(stripped),
            owner: &owner,
            mesh: self.mesh.clone(),
            proxy_config: proxy_config.clone(),
            revision: &self.options.revision,
            native_sidecars: self.options.native_sidecars,
            compliance_policy: &self.options.compliance_policy,
            proxy_uid: self.options.proxy_uid,
            proxy_gid: self.options.proxy_gid,
            proxy_image: proxy_image(&self.values, proxy_config_image_type, image_type),
            proxy_init_image: proxy_init_image(&self.values, image_type),
        };
        Ok(data::template_data(&inputs, &self.template_values))
    }
}
