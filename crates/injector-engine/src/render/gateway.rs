//! The gateway deployment controller's template input (`gatewaycommon.derivedInput`) for the
//! `waypoint`, `kube-gateway`, `agentgateway` and `agentgateway-waypoint` templates.
//!
//! The injector never executes these templates; istiod's gateway controller does. We build
//! the same data so the templates can be rendered and tested (`istioctl`-style tooling). The
//! struct embeds `TemplateInput`, which embeds `*gatewayv1.Gateway`, so the Gateway's fields
//! (`.Spec`, `.ObjectMeta`) and those of its own embedded `ObjectMeta` and `TypeMeta` (`.Name`,
//! `.Namespace`, `.UID`, `.Kind`) are promoted, with `ObjectMeta`'s `GetX` methods.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use gotemplate::{Object, ObjectKind, Value};
use serde_json::Value as Json;

use super::objects::gostruct::{GoStruct, JsonRef};
use super::objects::{kube, mesh};

/// Everything the gateway template data is derived from.
#[derive(Debug, Clone)]
pub struct GatewayInput {
    /// The `gateway.networking.k8s.io/v1` Gateway.
    pub gateway: Arc<Json>,
    /// The controller's computed `TemplateInput` fields, keyed by their Go names
    /// (`GatewayClass`, `DeploymentName`, `Ports`, `KubeVersion`, …).
    pub input: Arc<Json>,
    /// The mesh config (protobuf JSON).
    pub mesh: Arc<Json>,
    /// The ProxyConfig: the mesh `defaultConfig` (protobuf JSON).
    pub proxy_config: Arc<Json>,
    /// `.Values`: this render's own when the templates may write into it
    /// ([`super::data::TemplateValues::for_render`]).
    pub values: Value,
    /// `ProxyImage`.
    pub proxy_image: String,
    /// `AgentgatewayImage`.
    pub agentgateway_image: String,
}

const OWN: &[&str] = &[
    "ProxyImage",
    "AgentgatewayImage",
    "ProxyConfig",
    "MeshConfig",
    "Values",
    // The embedded structs themselves, by their type names.
    "TemplateInput",
    "Gateway",
];

#[derive(Debug)]
struct GatewayTemplateData {
    input: GatewayInput,
    own: [OnceLock<Value>; OWN.len()],
    /// The embedded structs, outermost first: TemplateInput, *Gateway, ObjectMeta, TypeMeta.
    embedded: [Arc<dyn Object>; 4],
}

/// The gateway template data (passed by value, as the controller does).
pub fn gateway_template_data(input: GatewayInput) -> Value {
    let gateway = JsonRef::root(input.gateway.clone());
    let embedded: [Arc<dyn Object>; 4] = [
        Arc::new(GoStruct::value(
            &kube::GATEWAY_INPUT,
            Some(JsonRef::root(input.input.clone())),
        )),
        Arc::new(GoStruct::pointer(&kube::GATEWAY, Some(gateway.clone()))),
        Arc::new(GoStruct::value(&kube::OBJECT_META, gateway.key("metadata"))),
        Arc::new(GoStruct::value(&kube::TYPE_META, Some(gateway))),
    ];
    Value::object(GatewayTemplateData {
        input,
        own: Default::default(),
        embedded,
    })
}

impl GatewayTemplateData {
    fn make(&self, name: &str) -> Value {
        let i = &self.input;
        match name {
            "ProxyImage" => Value::str(i.proxy_image.as_str()),
            "AgentgatewayImage" => Value::str(i.agentgateway_image.as_str()),
            "ProxyConfig" => mesh::proxy_config_value(&i.proxy_config),
            "MeshConfig" => mesh::mesh_config_value(&i.mesh),
            "Values" => i.values.clone(),
            "TemplateInput" => Value::Object(self.embedded[0].clone()),
            "Gateway" => Value::Object(self.embedded[1].clone()),
            _ => Value::Missing,
        }
    }
}

impl Object for GatewayTemplateData {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("gatewaycommon.derivedInput")
    }

    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }

    fn has_field(&self, name: &str) -> bool {
        OWN.contains(&name) || self.embedded.iter().any(|e| e.has_field(name))
    }

    fn field(&self, name: &str) -> Option<Value> {
        if let Some(index) = OWN.iter().position(|f| *f == name) {
            return Some(self.own[index].get_or_init(|| self.make(name)).clone());
        }
        self.embedded
            .iter()
            .find(|e| e.has_field(name))
            .and_then(|e| e.field(name))
    }

    fn method_arity(&self, name: &str) -> Option<usize> {
        self.embedded.iter().find_map(|e| e.method_arity(name))
    }

    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match self.embedded.iter().find(|e| e.method_arity(name).is_some()) {
            Some(e) => e.call_method(name, args),
            None => Err(format!("no method {name}")),
        }
    }
}
