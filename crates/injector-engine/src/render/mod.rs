//! Rendering Istio's injection templates: Istio's template functions and the template data.
//!
//! Istio executes its templates (`sidecar`, `gateway`, `grpc-agent`, …) with Go's
//! `text/template`, sprig's functions overridden by its own (`InjectionFuncmap`), on a
//! `*SidecarTemplateData`. The engine is the [`gotemplate`] crate; this module provides the
//! rest, so that templates render byte for byte as in Istio:
//!
//! - [`funcs`]: [`istio_funcs`], the function map with Go signatures and Istio's semantics;
//! - [`data`]: [`sidecar_template_data`], the data as a host object with Go's field names and
//!   methods (`.ObjectMeta.Annotations`, `.ProxyConfig.InterceptionMode.String`,
//!   `.ProxyConfig.GetTracing.GetTlsSettings.GetCaCertificates`, …);
//! - [`gateway`]: [`gateway_template_data`], the gateway deployment controller's input for the
//!   `waypoint`/`kube-gateway`/`agentgateway` templates;
//! - [`objects`]: the Go types behind the data (Kubernetes and mesh structs backed by JSON,
//!   protobuf enums and wrappers);
//! - [`json`] and [`yaml`]: Go's `encoding/json` and `sigs.k8s.io/yaml` output.
//!
//! ```
//! use injector_engine::render::{parse_template, istio_funcs};
//! let t = parse_template("{{ indent 2 \"a\\nb\" }}").unwrap();
//! assert_eq!(t.execute(&gotemplate::Value::Nil).unwrap(), "a\n  b");
//! # let _ = istio_funcs();
//! ```

pub mod data;
pub mod funcs;
pub mod gateway;
pub mod json;
pub mod objects;
pub mod yaml;

#[cfg(test)]
mod tests;

pub use data::{TemplateInput, sidecar_template_data};
pub use funcs::istio_funcs;
pub use gateway::{GatewayInput, gateway_template_data};

use std::sync::OnceLock;

use gotemplate::{FuncMap, ParseError, Template};

/// The name Istio gives every injection template (it appears in error messages).
pub const TEMPLATE_NAME: &str = "inject";

fn shared_funcs() -> &'static FuncMap {
    static FUNCS: OnceLock<FuncMap> = OnceLock::new();
    FUNCS.get_or_init(istio_funcs)
}

/// Parses a template as Istio does (`parseDryTemplate`): named `inject`, with Istio's functions.
/// Parse once per configuration; the result executes concurrently.
pub fn parse_template(text: &str) -> Result<Template, ParseError> {
    Template::new(TEMPLATE_NAME).funcs(shared_funcs()).parse(text)
}
