//! The whole injection, Istio's `Webhook.inject` and `injectPod`, as one straight line of stages:
//!
//! ```text
//! decide → prepare → render → merge → post-process → patch
//! ```
//!
//! Each stage is one call of one function in its own module: the `decide` module (Istio's policy
//! decision), [`crate::prepare`] (the pod decoded and checked, the template data's inputs, the
//! templates selected), [`crate::render`] (the templates executed and parsed, and merged into
//! Istio's empty template pod), the `merge` module (the strategic merges into the pod and the
//! user's overrides re-applied), [`crate::post`] (Istio's `postProcessPod`) and
//! [`crate::patch`] (the JSON Patch from the pod as received).
//!
//! An injection stops at the request's deadline (the `deadline` module): checked between the stages
//! (a template's failure, the deadline's included, is told by the merge), and every few steps
//! while a template executes.
//!
//! The render stage is the one step a caller may change: [`inject_with`] takes any
//! [`Render`]; [`CompiledConfig::inject`] renders every template, and the render cache
//! ([`crate::cache::RenderCache`]) wraps this same pipeline with a [`Render`] that reuses earlier
//! renders.
//!
//! Each stage runs within a DEBUG span of its name under [`STAGES`] (`decide`, `prepare`,
//! `render` with where its renders came from, `merge`, `post`, `patch`): the webhook exports
//! them as children of the admission's span with `serve --otlp-endpoint`; nothing asks for them
//! otherwise, and each then costs one level comparison.
//!
//! The pod is handled as JSON in the shape Go's `encoding/json` gives it (zero values added,
//! quantities canonical), but fields our schema does not know are kept, so that the patch never
//! removes what we did not put there.

use std::collections::BTreeMap;

use injector_core::decision::Decision;
use serde_json::Value;

use crate::cache::RenderSource;
use crate::compiled::CompiledConfig;
use crate::prepare::owner::Owner;
use crate::render::{Plain, Render};

/// The target of the stages' spans: the webhook exports them, as children of the admission's,
/// with `serve --otlp-endpoint`.
pub const STAGES: &str = "sidecar_injector::trace";

/// `$work`, within the DEBUG span of its stage `$name`.
macro_rules! stage {
    ($name:literal, $work:expr) => {
        tracing::debug_span!(target: STAGES, $name).in_scope(|| $work)
    };
}

/// Why a pod could not be injected. The text is what the user sees in the API server's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// One admission: the pod and what the request says about it.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// The pod as the API server sent it.
    pub pod: Option<&'a Value>,
    /// `request.namespace`, used when the pod has none.
    pub namespace: Option<&'a str>,
    /// Environment from the webhook URL's path (`/inject/cluster/C/net/N`).
    pub path_env: BTreeMap<String, String>,
    /// The owning workload when the caller knows it (kube-inject); otherwise Istio's owner
    /// heuristic names it from the pod.
    pub owner: Option<Owner>,
    /// When the caller stops waiting for the answer (the webhook's: the API server's timeout);
    /// past it the injection stops and is denied (the `deadline` module).
    pub deadline: Option<std::time::Instant>,
}

/// The result of an injection.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The injector's policy says no: answer `allowed: true` without a patch.
    Skipped {
        /// Why.
        decision: Decision,
    },
    /// The pod was injected.
    Injected {
        /// The injected pod.
        pod: Value,
        /// The RFC 6902 patch from the pod as received to `pod`, without the operations that would
        /// only restate what Go's round trip of the received pod holds anyway (`status: {}`,
        /// canonical quantities; [`crate::patch::create_patch_over_round_trip`]): applied, and
        /// decoded as the API server decodes it, it gives `pod`.
        patch: Vec<u8>,
        /// Why it was injected.
        decision: Decision,
        /// The templates never saw the name of the pod's ServiceAccount token volume
        /// (`kube-api-access-` and five random characters), nor wrote anything like it. Every
        /// other stage only copies a volume's name or compares it with another, so the same pod
        /// with another name for that volume gets this patch with that name in its place: the
        /// webhook's outcome cache serves the pods of one Deployment, whose token volumes are
        /// named apart, from one entry. `false` when unknown (only the render cache, which
        /// records what the templates read, can tell).
        blind_to_token_volume: bool,
        /// Where the renders came from.
        renders: RenderSource,
    },
}

impl CompiledConfig {
    /// Decides, and injects when the decision says so, rendering every template.
    pub fn inject(&self, request: &Request<'_>) -> Result<Outcome, InjectError> {
        inject_with(self, request, &Plain)
    }

    /// Istio's `injectPod`: the injected pod, without deciding.
    pub fn inject_pod(&self, original: &Value, request: &Request<'_>) -> Result<Value, InjectError> {
        let _deadline = crate::deadline::Scope::enter(request.deadline);
        let prepared = crate::prepare::prepare_pod(self, original.clone(), request)?;
        crate::deadline::check("before rendering the templates")?;
        let rendered = Plain.render(self, &prepared);
        let merged = crate::merge::merge(self, &prepared, rendered.overlays, &rendered.template_pod)?;
        crate::deadline::check("before post-processing the pod")?;
        crate::post::post_process(self, &prepared, merged)
    }

    /// Istio's `SidecarTemplateData` for `pod`, built as an injection builds it (the pod decoded
    /// as a Pod, a previous injection stripped, the effective ProxyConfig, the images), for
    /// rendering a template outside an injection (`sidecar-injector template render --pod`).
    pub fn template_data_for(&self, pod: &Value) -> Result<gotemplate::Value, InjectError> {
        let inputs = crate::prepare::template_inputs_for(self, pod)?;
        Ok(crate::render::template_data(self, &inputs))
    }
}

/// The injection of `request`'s pod with the renders `render` gives.
pub fn inject_with(
    config: &CompiledConfig,
    request: &Request<'_>,
    render: &impl Render,
) -> Result<Outcome, InjectError> {
    let _deadline = crate::deadline::Scope::enter(request.deadline);
    let (received, decision) = stage!("decide", crate::decide::decide_request(config, request))?;
    if !decision.inject {
        return Ok(Outcome::Skipped { decision });
    }
    let prepared = stage!("prepare", crate::prepare::prepare(config, received, request))?;
    crate::deadline::check("before rendering the templates")?;
    let render_span = tracing::debug_span!(target: STAGES, "render", source = tracing::field::Empty);
    let rendered = render_span.in_scope(|| render.render(config, &prepared));
    render_span.record("source", rendered.source.as_str());
    let merged = stage!(
        "merge",
        crate::merge::merge(config, &prepared, rendered.overlays, &rendered.template_pod)
    )?;
    crate::deadline::check("before post-processing the pod")?;
    let pod = stage!("post", crate::post::post_process(config, &prepared, merged))?;
    crate::deadline::check("before writing the patch")?;
    let patch = stage!("patch", crate::patch::patch_of_injection(received, &pod))?;
    Ok(Outcome::Injected {
        pod,
        patch,
        decision,
        blind_to_token_volume: rendered.blind_to_token_volume,
        renders: rendered.source,
    })
}

#[cfg(test)]
mod tests;
