//! The template data of one pod on its own, for rendering a template outside an injection
//! (`sidecar-injector template render --pod`): what the templates would see for that pod.

use serde_json::Value;

use super::{InjectError, Injector, data, prepare::PrepareError};
use crate::{mesh::PROXY_CONFIG_ANNOTATION, normalize::normalize_preserving};

impl Injector {
    /// Istio's `SidecarTemplateData` for `pod`, built as an injection builds it (the pod decoded
    /// as a Pod, a previous injection stripped, the effective ProxyConfig, the images).
    pub fn template_data_for(&self, pod: &Value) -> Result<gotemplate::Value, InjectError> {
        let pod = normalize_preserving("v1/Pod", pod)
            .map_err(|e| InjectError(format!("failed to decode pod: {e}")))?;
        let prepared = self
            .prepare(&std::sync::Arc::new(pod), None)
            .map_err(|e| match e {
                PrepareError::ProxyConfig(e) => {
                    InjectError(format!("the pod's {PROXY_CONFIG_ANNOTATION}: {e}"))
                }
                PrepareError::Strip(e) => InjectError(format!("failed to strip a previous injection: {e}")),
            })?;
        Ok(data::template_data(
            &self.template_inputs(&prepared),
            &self.template_values,
        ))
    }
}
