//! `SidecarTemplateData`: the data Istio's injection templates execute on
//! (`*inject.SidecarTemplateData`), as a host object with Go's field names.
//!
//! Build a [`TemplateInput`] per admission request (the pod and its effective ProxyConfig
//! change per request; the mesh config and the values are shared `Arc`s / [`Value`]s built
//! once per configuration), then [`sidecar_template_data`]. Nothing is converted up front:
//! each field becomes a template value on first access and is cached.
//!
//! The data of one pod is its own: a template that writes into a map it was given (sprig's
//! `set`, `unset`, `merge` change maps in place) changes what the later templates of the same
//! pod see, as in Go, and nothing any other pod sees. `.ProxyConfig`, `.MeshConfig` and the
//! pod's fields are made for each pod from JSON; `.Values`, converted once per configuration, is
//! [`TemplateValues`]: shared by the renders when no template can write into it, else copied
//! for each.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use gotemplate::{IntType, Object, Template, Value};
use serde_json::Value as Json;

use super::objects::gostruct::{GoStruct, JsonRef};
use super::objects::{kube, mesh};
use crate::prepare::owner::Owner;

/// Everything the sidecar template data is derived from.
#[derive(Debug, Clone)]
pub struct TemplateInput {
    /// The pod as the templates see it (after stripping previous injections).
    pub pod: Arc<Json>,
    /// The owning workload (`owner_of`).
    pub owner: Owner,
    /// The mesh config, protobuf JSON (`settings::parse_mesh`).
    pub mesh: Arc<Json>,
    /// The pod's effective ProxyConfig, protobuf JSON (`mesh::effective_proxy_config`).
    pub proxy_config: Arc<Json>,
    /// `.Values`: this render's own ([`TemplateValues::for_render`]).
    pub values: Value,
    /// The injector's revision.
    pub revision: String,
    /// Whether native sidecars are enabled for this pod.
    pub native_sidecars: bool,
    /// `COMPLIANCE_POLICY`.
    pub compliance_policy: String,
    /// The proxy's UID (1337 unless OpenShift).
    pub proxy_uid: i64,
    /// The proxy's GID (1337 unless OpenShift).
    pub proxy_gid: i64,
    /// `ProxyImage` (`images::proxy_image`).
    pub proxy_image: String,
    /// `ProxyInitImage` (`images::proxy_init_image`).
    pub proxy_init_image: String,
}

/// The injector-wide inputs of the template data, built once per configuration (they change
/// only when the `istio-sidecar-injector` or `istio` ConfigMap does).
#[derive(Debug, Clone)]
pub struct RenderSettings {
    /// The mesh config, protobuf JSON (`settings::parse_mesh`).
    pub mesh: Arc<Json>,
    /// The `values` as JSON (for the image helpers).
    pub values_json: Arc<Json>,
    /// The `values` as a template value (converted once).
    pub values: Value,
    /// The injector's revision (`REVISION`).
    pub revision: String,
    /// `COMPLIANCE_POLICY`.
    pub compliance_policy: String,
}

impl RenderSettings {
    /// Settings from the parsed mesh config and values.
    pub fn new(mesh: Json, values: Json, revision: &str, compliance_policy: &str) -> RenderSettings {
        RenderSettings {
            values: Value::from_json(&values),
            mesh: Arc::new(mesh),
            values_json: Arc::new(values),
            revision: revision.to_string(),
            compliance_policy: compliance_policy.to_string(),
        }
    }
}

impl TemplateInput {
    /// The input for one (already stripped) pod: derives the owner, the effective ProxyConfig
    /// (mesh `defaultConfig` + the `proxy.istio.io/config` annotation) and the images. Fails
    /// when the annotation is not a valid ProxyConfig.
    pub fn for_pod(
        settings: &RenderSettings,
        pod: Arc<Json>,
        native_sidecars: bool,
        proxy_uid: i64,
        proxy_gid: i64,
    ) -> Result<TemplateInput, crate::mesh::MeshError> {
        let annotation = crate::pod::annotation(&pod, crate::mesh::PROXY_CONFIG_ANNOTATION);
        let proxy_config = crate::mesh::effective_proxy_config(&settings.mesh, annotation)?;
        let (proxy_image, proxy_init_image) = images(&settings.values_json, &proxy_config, &pod);
        Ok(TemplateInput {
            owner: crate::prepare::owner::owner_of(&pod),
            pod,
            mesh: settings.mesh.clone(),
            proxy_config: Arc::new(proxy_config),
            // Settings do not know the templates: a copy, in case they write into it.
            values: settings.values.unshared(),
            revision: settings.revision.clone(),
            native_sidecars,
            compliance_policy: settings.compliance_policy.clone(),
            proxy_uid,
            proxy_gid,
            proxy_image,
            proxy_init_image,
        })
    }
}

/// `.Values` for the renders of one configuration: converted once, and shared by every render
/// when no template of the configuration may write into a map ([`Template::may_write_maps`]),
/// else copied for each render ([`Value::unshared`]), so that a template's `set .Values …`
/// changes its own pod's render and no other (nor the renders the render cache keeps, which
/// assume `.Values` is the same for every pod).
#[derive(Debug, Clone)]
pub struct TemplateValues {
    value: Value,
    copied_per_render: bool,
}

impl TemplateValues {
    /// The values for renders of `templates`.
    pub fn new<'a>(values: &Json, templates: impl IntoIterator<Item = &'a Template>) -> TemplateValues {
        TemplateValues {
            value: Value::from_json(values),
            copied_per_render: templates.into_iter().any(Template::may_write_maps),
        }
    }

    /// The `.Values` of one render: its own copy when a template may write into it.
    pub fn for_render(&self) -> Value {
        if self.copied_per_render {
            self.value.unshared()
        } else {
            self.value.clone()
        }
    }
}

/// `InboundTrafficPolicyMode`: `localhost` for mesh `inboundTrafficPolicy.mode: LOCALHOST`.
pub fn inbound_traffic_policy_mode(mesh: &Json) -> &'static str {
    if mesh.pointer("/inboundTrafficPolicy/mode").and_then(Json::as_str) == Some("LOCALHOST") {
        "localhost"
    } else {
        "passthrough"
    }
}

/// The proxy and init images for a pod (Istio's `ProxyImage` and `ProxyInitImage`).
pub fn images(values: &Json, proxy_config: &Json, pod: &Json) -> (String, String) {
    let annotation = crate::pod::annotation(pod, crate::prepare::images::PROXY_IMAGE_TYPE_ANNOTATION);
    let image_type = proxy_config
        .get("image")
        .map(|image| image.get("imageType").and_then(Json::as_str).unwrap_or(""));
    (
        crate::prepare::images::proxy_image(values, image_type, annotation),
        crate::prepare::images::proxy_init_image(values, annotation),
    )
}

const FIELDS: &[&str] = &[
    "TypeMeta",
    "DeploymentMeta",
    "ObjectMeta",
    "Spec",
    "ProxyConfig",
    "MeshConfig",
    "Values",
    "Revision",
    "NativeSidecars",
    "ProxyImage",
    "ProxyInitImage",
    "InboundTrafficPolicyMode",
    "CompliancePolicy",
    "ProxyUID",
    "ProxyGID",
];

/// `*inject.SidecarTemplateData`.
#[derive(Debug)]
struct SidecarTemplateData {
    input: TemplateInput,
    cache: [OnceLock<Value>; FIELDS.len()],
}

/// The template data for one pod: pass it to `Template::execute`.
pub fn sidecar_template_data(input: TemplateInput) -> Value {
    Value::object(SidecarTemplateData {
        input,
        cache: Default::default(),
    })
}

impl SidecarTemplateData {
    fn make(&self, name: &str) -> Value {
        let i = &self.input;
        let pod = JsonRef::root(i.pod.clone());
        match name {
            "TypeMeta" => Value::object(GoStruct::value(
                &kube::TYPE_META,
                Some(JsonRef::root(Arc::new(serde_json::json!({
                    "kind": i.owner.kind, "apiVersion": i.owner.api_version
                })))),
            )),
            "DeploymentMeta" => Value::object(GoStruct::value(
                &kube::NAMESPACED_NAME,
                Some(JsonRef::root(Arc::new(serde_json::json!({
                    "Namespace": i.owner.namespace, "Name": i.owner.name
                })))),
            )),
            "ObjectMeta" => Value::object(GoStruct::value(&kube::OBJECT_META, pod.key("metadata"))),
            "Spec" => Value::object(GoStruct::value(&kube::POD_SPEC, pod.key("spec"))),
            "ProxyConfig" => mesh::proxy_config_value(&i.proxy_config),
            "MeshConfig" => mesh::mesh_config_value(&i.mesh),
            "Values" => i.values.clone(),
            "Revision" => Value::str(i.revision.as_str()),
            "NativeSidecars" => Value::Bool(i.native_sidecars),
            "ProxyImage" => Value::str(i.proxy_image.as_str()),
            "ProxyInitImage" => Value::str(i.proxy_init_image.as_str()),
            "InboundTrafficPolicyMode" => Value::str(inbound_traffic_policy_mode(&i.mesh)),
            "CompliancePolicy" => Value::str(i.compliance_policy.as_str()),
            "ProxyUID" => Value::Int(i.proxy_uid, IntType::Int64),
            "ProxyGID" => Value::Int(i.proxy_gid, IntType::Int64),
            _ => Value::Missing,
        }
    }
}

impl Object for SidecarTemplateData {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("*inject.SidecarTemplateData")
    }

    fn has_field(&self, name: &str) -> bool {
        FIELDS.contains(&name)
    }

    fn field(&self, name: &str) -> Option<Value> {
        let index = FIELDS.iter().position(|f| *f == name)?;
        Some(self.cache[index].get_or_init(|| self.make(name)).clone())
    }

    fn format_v(&self, _plus: bool) -> String {
        let parts: Vec<String> = FIELDS
            .iter()
            .map(|f| gotemplate::fmt::sprint(&[self.field(f).unwrap_or_default()]))
            .collect();
        format!("&{{{}}}", parts.join(" "))
    }
}
