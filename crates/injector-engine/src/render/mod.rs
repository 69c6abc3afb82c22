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
//! - [`json`] and [`yaml`]: Go's `encoding/json` and `sigs.k8s.io/yaml` output;
//! - [`Render`]: the pipeline's render stage ([`Plain`] renders every template every time).
//!
//! ## Using it
//!
//! Once per configuration: parse each template with [`parse_template`] and build the
//! [`RenderSettings`]. Per admission request: [`TemplateInput::for_pod`], then
//! [`sidecar_template_data`], then `Template::execute` (the output is the YAML to merge).
//!
//! ```
//! use std::sync::Arc;
//! use injector_engine::render::{RenderSettings, TemplateInput, parse_template, sidecar_template_data};
//!
//! let template = parse_template(
//!     "{{ .DeploymentMeta.Name }} {{ .ProxyConfig.InterceptionMode }} {{ annotation .ObjectMeta `a` \"none\" }}",
//! )
//! .unwrap();
//! let settings = RenderSettings::new(
//!     injector_engine::mesh::default_mesh_config(),
//!     serde_json::json!({"global": {"hub": "docker.io/istio", "tag": "1.28.0"}}),
//!     "default",
//!     "",
//! );
//! let pod = serde_json::json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {"containers": []}});
//! let input = TemplateInput::for_pod(&settings, Arc::new(pod), false, 1337, 1337).unwrap();
//! let out = template.execute(&sidecar_template_data(input)).unwrap();
//! assert_eq!(out, "web REDIRECT none");
//! ```

//! ## Known differences from Go
//!
//! All come from the engine's value model (`tests/istio-known-failures.txt` lists the oracle
//! cases):
//!
//! - Parameters of Go types the engine cannot declare (`[]v1.Container`, `metav1.ObjectMeta`,
//!   `proto.Message`, `*durationpb.Duration`) are checked inside the function, so a wrong
//!   argument fails with `error calling f: ...` at the call instead of Go's error at the argument.
//! - A protobuf enum prints its name, but `printf "%d"` of it is a bad verb (no integer hook on
//!   host objects), and `kindOf` says `struct` (Go: `int32`).
//! - Slices of host objects are `[]interface {}` for `%T`/`typeOf` (Go: `[]v1.Container`).
//! - Go prints an addressable Kubernetes struct through its pointer `String()` at the top of an
//!   action (`&ContainerPort{...}`) and with the plain struct format elsewhere; host objects have
//!   one printing hook, the plain format.
//! - sprig's `toJson` of a host struct sorts its fields (it goes through `Object::to_data`);
//!   Istio's `structToJSON` keeps Go's order.

pub mod data;
pub mod funcs;
pub mod gateway;
pub mod json;
pub mod objects;
mod overlays;
pub mod yaml;

#[cfg(test)]
mod tests;

pub use data::{RenderSettings, TemplateInput, TemplateValues, sidecar_template_data};
pub use funcs::istio_funcs;
pub use gateway::{GatewayInput, gateway_template_data};
pub use overlays::{Plain, Render, Rendered, deterministic, render_templates, template_data};

use std::sync::OnceLock;

use gotemplate::{ExecErrorKind, ExecOptions, FuncMap, ParseError, Template, Value, Watch};

use crate::pipeline::InjectError;

/// The name Istio gives every injection template (it appears in error messages).
pub const TEMPLATE_NAME: &str = "inject";

fn shared_funcs() -> &'static FuncMap {
    static FUNCS: OnceLock<FuncMap> = OnceLock::new();
    FUNCS.get_or_init(istio_funcs)
}

/// The most steps (range iterations and template calls) one execution of an injection template
/// may take; past it the pod is denied, naming the template.
///
/// Istio's templates and the embedded default take at most about 125,000 steps on the largest
/// pods the API server stores (1.5 MiB filled with containers, ports, or 256 KiB of annotations
/// the templates range over; `examples/template_steps.rs` measures them), and a typical pod a few
/// dozen. Ten times the most leaves room for custom templates that range over the pod more than
/// once, and stops a template that loops without end after about a second of work.
pub const TEMPLATE_STEP_BUDGET: u64 = 1_000_000;

/// Parses a template as Istio does (`parseDryTemplate`): named `inject`, with Istio's functions,
/// and bounded by [`TEMPLATE_STEP_BUDGET`]. Parse once per configuration; the result executes
/// concurrently.
pub fn parse_template(text: &str) -> Result<Template, ParseError> {
    Template::new(TEMPLATE_NAME)
        .funcs(shared_funcs())
        .max_steps(TEMPLATE_STEP_BUDGET)
        .parse(text)
}

/// [`parse_template`], with `env` answering for the names of `owned` (see
/// [`crate::owned_env`]) with their values instead of the process environment's.
pub fn parse_template_owning(text: &str, owned: Vec<(&'static str, String)>) -> Result<Template, ParseError> {
    Template::new(TEMPLATE_NAME)
        .funcs(shared_funcs())
        .funcs(&funcs::text::env_owning(owned))
        .max_steps(TEMPLATE_STEP_BUDGET)
        .parse(text)
}

/// Executes the injection template `name` (of the configuration; Go's name is always
/// [`TEMPLATE_NAME`]) on `data`, told to `watch` if given, within its step budget and the deadline
/// of the injection running on this thread (the `deadline` module). The error is Istio's
/// (`failed to run injection template: ...`), or says which limit stopped the template.
pub fn execute(
    name: &str,
    template: &Template,
    data: &Value,
    watch: Option<&dyn Watch>,
) -> Result<String, InjectError> {
    let options = ExecOptions {
        watch,
        deadline: crate::deadline::current(),
    };
    template.execute_with(data, options).map_err(|e| match e.kind {
        ExecErrorKind::Template => InjectError(format!("failed to run injection template: {e}")),
        ExecErrorKind::StepBudget => InjectError(format!(
            "failed to run injection template: template {name:?} exceeded the injector's step budget \
             (range iterations and template calls; the pod is too large for the template, or it loops \
             without end): {e}"
        )),
        ExecErrorKind::Deadline => crate::deadline::exceeded(&format!("while rendering template {name:?}")),
    })
}
