//! Stage 1, deciding: whether the pod's annotations are valid ([`validate`]) and which templates
//! apply to it ([`selection`]). The policy decision itself (namespace and pod selectors, the
//! `sidecar.istio.io/inject` label) is `injector_core::decision`, shared with the server.

pub mod selection;
pub mod validate;
