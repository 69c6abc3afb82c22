//! The inputs of one render: what [`crate::render::sidecar_template_data`] is built from.

use std::sync::Arc;

use serde_json::Value;

use crate::owner::Owner;

/// What the templates are rendered from, for one pod.
#[derive(Debug, Clone)]
pub struct TemplateInputs<'a> {
    /// The pod, stripped of a previous injection.
    pub pod: Arc<Value>,
    /// The owning workload.
    pub owner: &'a Owner,
    /// The mesh config (protobuf JSON).
    pub mesh: Arc<Value>,
    /// The effective ProxyConfig (protobuf JSON).
    pub proxy_config: Arc<Value>,
    /// `.Revision`.
    pub revision: &'a str,
    /// `.NativeSidecars`.
    pub native_sidecars: bool,
    /// `.CompliancePolicy`.
    pub compliance_policy: &'a str,
    /// `.ProxyUID`.
    pub proxy_uid: i64,
    /// `.ProxyGID`.
    pub proxy_gid: i64,
    /// `.ProxyImage`.
    pub proxy_image: String,
    /// `.ProxyInitImage`.
    pub proxy_init_image: String,
}

/// The template data: Istio's `SidecarTemplateData` as host objects. `values` is the values
/// converted once per configuration.
pub fn template_data(inputs: &TemplateInputs<'_>, values: &gotemplate::Value) -> gotemplate::Value {
    crate::render::sidecar_template_data(crate::render::TemplateInput {
        pod: inputs.pod.clone(),
        owner: inputs.owner.clone(),
        mesh: inputs.mesh.clone(),
        proxy_config: inputs.proxy_config.clone(),
        values: values.clone(),
        revision: inputs.revision.to_owned(),
        native_sidecars: inputs.native_sidecars,
        compliance_policy: inputs.compliance_policy.to_owned(),
        proxy_uid: inputs.proxy_uid,
        proxy_gid: inputs.proxy_gid,
        proxy_image: inputs.proxy_image.clone(),
        proxy_init_image: inputs.proxy_init_image.clone(),
    })
}
