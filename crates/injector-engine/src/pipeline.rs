//! The whole injection: `inject(pod, settings) -> Outcome`, Istio's `Webhook.inject` and
//! `injectPod` in one function that the CLI calls, and the webhook server as `answer` (the same
//! without the injected pod).
//!
//! ```text
//! decide → validate annotations → ProxyConfig → strip → template data → for each template:
//!   render → parse YAML → merge into the template pod and into the pod → re-apply user overrides
//!   → post-process (cluster env, Prometheus, probes, status, injected annotations, order)
//!   → JSON Patch from the pod as received
//! ```
//!
//! Each stage is its own folder or module: [`crate::decide`] (annotation validation, template
//! selection), [`crate::prepare`] with `prepare` here (the template data's inputs),
//! [`crate::render`] (the template data and functions) with [`render_cache`] (renders reused
//! by exactly what they read, [`own_name`]: one render for the pods that are their own owner,
//! and [`spares`]: the copies of their items that a webhook answer is done with, handed to the
//! next pod), the merge ([`strategic_merge`], [`crate::normalize`] and
//! `overrides` here), [`crate::post`] (post-processing) and [`crate::patch`].
//!
//! The pod is handled as JSON in the shape Go's `encoding/json` gives it (zero values added,
//! quantities canonical), but fields our schema does not know are kept, so that the patch never
//! removes what we did not put there.

use std::{collections::BTreeMap, sync::Arc};

use gotemplate::Template;
use injector_core::{
    config::InjectorConfig,
    decision::{self, Decision, PodFacts},
};
use serde_json::{Map, Value};
use strategic_merge::Schema;

use crate::{
    cluster::{overwrite_cluster_info, resolve_cluster_and_network},
    member::Members,
    mesh::{PROXY_CONFIG_ANNOTATION, validate_proxy_config},
    normalize::{normalize, normalize_preserving_guided, normalize_preserving_owned, to_go_json},
    owner::Owner,
    patch::{KnownText, create_patch_over_round_trip_known},
    pod::{ContainerList, PROXY_CONTAINER, annotations_mut, containers, containers_mut, labels_mut, name_of},
    probes::apply_rewrite,
    prometheus::{apply_prometheus_merge, apply_secure_port_annotation},
    reorder::reorder_pod,
    selection::{TEMPLATES_ANNOTATION, select_templates},
    status::{STATUS_ANNOTATION, injection_status, parse_status},
    validate::validate_annotations,
};

mod data;
mod merge_guide;
mod overrides;
pub mod own_name;
mod prepare;
mod preview;
pub mod render_cache;
pub mod render_counts;
pub mod skeleton;
pub mod spares;
mod template_pod;

pub use data::TemplateInputs;
use prepare::Prepared;

/// Everything the injector needs besides the pod, with templates already parsed.
pub struct Injector {
    config: InjectorConfig,
    templates: BTreeMap<String, Template>,
    values: Value,
    /// `values` converted once for the templates.
    template_values: gotemplate::Value,
    /// Shared with every render's template data (never copied per pod).
    mesh: std::sync::Arc<Value>,
    /// The ProxyConfig of every pod without the `proxy.istio.io/config` annotation (shared).
    mesh_proxy_config: std::sync::Arc<Value>,
    options: Options,
    /// The templates whose renders may be cached (they call no clock or randomness).
    deterministic: std::collections::BTreeSet<String>,
    /// Renders by exactly what they read of the pod; one per configuration, so a reload starts
    /// empty.
    render_cache: render_cache::RenderCache,
    /// What stands for the name of a pod that is its own owner in the renders such pods share
    /// ([`own_name`]); `None` (nothing shared) when the system gives no randomness.
    stand_in: Option<own_name::StandIn>,
    /// Patches kept with holes for the values a controller gives each pod ([`skeleton`]); one
    /// per configuration, like the render cache, and on only when it is.
    skeletons: skeleton::Skeletons,
    /// What stands for those values in the pod a skeleton is made from; `None` (no skeletons)
    /// when the system gives no randomness.
    markers: Option<skeleton::Markers>,
}

/// Settings that do not come from the configuration files.
#[derive(Debug, Clone)]
pub struct Options {
    /// The injector's revision (`.Revision`; `default` in Istio's chart, `""` for kube-inject).
    pub revision: String,
    /// Whether native sidecars are enabled (`.NativeSidecars`).
    pub native_sidecars: bool,
    /// `.CompliancePolicy` (e.g. `fips-140-3`).
    pub compliance_policy: String,
    /// The proxy's UID and GID (`.ProxyUID`, `.ProxyGID`).
    pub proxy_uid: i64,
    /// See `proxy_uid`.
    pub proxy_gid: i64,
    /// Whether the template pod and merges follow kube-inject (no injected annotations, no aliases).
    pub kube_inject: bool,
    /// OpenShift (`PLATFORM=openshift`): a user `istio-proxy` running as the same user as the app
    /// (OpenShift assigns one UID to every container) has that user cleared before injection.
    pub openshift: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            revision: "default".to_owned(),
            native_sidecars: true,
            compliance_policy: String::new(),
            proxy_uid: 1337,
            proxy_gid: 1337,
            kube_inject: false,
            openshift: false,
        }
    }
}

/// A configuration whose templates cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template {name:?}: {message}")]
pub struct TemplateError {
    /// The template's name.
    pub name: String,
    /// The parse error, in Go's words.
    pub message: String,
}

/// Why a pod could not be injected. The text is what the user sees in the API server's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// The result of [`Injector::inject`].
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
        /// (`kube-api-access-` and five random characters; nothing they read of the pod, nor
        /// anything they gave, holds [`render_cache::TOKEN_VOLUME_PREFIX`]). Every other stage
        /// only copies a volume's name or compares it for equality with another, so the same pod
        /// with another name for that volume gets this patch with that name in its place: the
        /// webhook's outcome cache serves the pods of one Deployment, whose token volumes are
        /// named apart, from one entry. `false` when unknown (the render cache is off, or a
        /// template is not deterministic).
        blind_to_token_volume: bool,
    },
}

/// What [`Injector::answer`] gives: [`Outcome`] without the injected pod.
#[derive(Debug, Clone)]
pub enum Answer {
    /// See [`Outcome::Skipped`].
    Skipped {
        /// Why.
        decision: Decision,
    },
    /// See [`Outcome::Injected`].
    Injected {
        /// The RFC 6902 patch ([`Outcome::Injected::patch`]).
        patch: Vec<u8>,
        /// Why it was injected.
        decision: Decision,
        /// See [`Outcome::Injected::blind_to_token_volume`].
        blind_to_token_volume: bool,
    },
}

/// A decision, and the pod with its patch when it was injected.
enum Injection {
    Skipped(Decision),
    Injected {
        injected: InjectedPod,
        patch: Vec<u8>,
        /// The pod's values the patch wrote as a kept render's known text
        /// ([`crate::patch::KnownPatch::copied`]).
        copied: Vec<crate::patch::Copied>,
        decision: Decision,
    },
}

/// Whether an injection may render templates ([`Injector::answer_without_rendering`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rendering {
    Allowed,
    Refused,
}

/// The error of an injection allowed to render that still stopped for want of a render: never
/// given (rendering is only refused by [`Injector::answer_without_rendering`]).
fn would_render() -> InjectError {
    InjectError("internal error: the injection stopped before rendering its templates".to_owned())
}

/// A pod injected by [`Injector::inject_owned_pod`].
struct InjectedPod {
    pod: Value,
    /// The kept renders it reused, if it did.
    reused: Option<render_cache::Overlays>,
    /// See [`Outcome::Injected::blind_to_token_volume`].
    blind_to_token_volume: bool,
    /// Whether its patch makes a skeleton ([`skeleton`]), when it was injected for one.
    skeleton: SkeletonFit,
}

/// What an injection is run for.
#[derive(Debug, Clone, Copy)]
enum Run<'a> {
    /// An admission (or an offline injection).
    Admission,
    /// A shape's marked pod ([`skeleton`]): its injection says whether it makes a skeleton.
    Marked(&'a skeleton::Markers),
    /// Debug builds' check of an answer made from a skeleton: not counted.
    #[cfg(debug_assertions)]
    Check,
}

impl Run<'_> {
    /// Whether the injection counts where its renders came from (once per admission).
    fn counted(self) -> bool {
        match self {
            Run::Admission | Run::Marked(_) => true,
            #[cfg(debug_assertions)]
            Run::Check => false,
        }
    }
}

/// Whether the injection of a marked pod makes a skeleton ([`skeleton`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkeletonFit {
    /// Its render was kept (or shared under the stand-in for its name: the source is the
    /// render's), merged in place, and read no marker.
    Fits(render_counts::RenderSource),
    /// Not for any pod of the shape.
    Never,
}

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
}

impl Injector {
    /// Parses every template with Istio's function map. Every template must parse (Istio fails
    /// the whole configuration otherwise).
    pub fn new(
        config: InjectorConfig,
        values: Value,
        mesh: Value,
        options: Options,
    ) -> Result<Self, TemplateError> {
        let mut templates = BTreeMap::new();
        let deterministic = config
            .templates
            .iter()
            .filter(|(_, text)| render_cache::deterministic(text))
            .map(|(name, _)| name.clone())
            .collect();
        for (name, text) in &config.templates {
            let template = crate::render::parse_template(text).map_err(|e| TemplateError {
                name: name.clone(),
                message: e.to_string(),
            })?;
            templates.insert(name.clone(), template);
        }
        let template_values = gotemplate::Value::from_json(&values);
        Ok(Self {
            config,
            templates,
            values,
            template_values,
            mesh_proxy_config: std::sync::Arc::new(crate::mesh::mesh_proxy_config(&mesh)),
            mesh: std::sync::Arc::new(mesh),
            options,
            deterministic,
            render_cache: render_cache::RenderCache::new(render_cache::DEFAULT_CAPACITY),
            stand_in: own_name::StandIn::new(),
            skeletons: skeleton::Skeletons::default(),
            markers: skeleton::Markers::new(),
        })
    }

    /// The same injector with a render cache of `capacity` entries (0: none). See
    /// [`render_cache`].
    pub fn with_render_cache(mut self, capacity: usize) -> Self {
        let counts = self.render_cache.counts().clone();
        self.render_cache = render_cache::RenderCache::new(capacity).counting_in(counts);
        self
    }

    /// The same injector, counting where its injections got their renders into `counts`
    /// (cumulative over the injectors a process builds as its configuration changes). See
    /// [`render_counts`].
    pub fn counting_renders_in(mut self, counts: std::sync::Arc<render_counts::RenderCounts>) -> Self {
        let capacity = self.render_cache.capacity();
        self.render_cache = render_cache::RenderCache::new(capacity).counting_in(counts);
        self
    }

    /// The same injector without skeletons ([`skeleton`]): every admission is merged,
    /// post-processed and diffed (for tests and measurements of those stages).
    pub fn without_skeletons(mut self) -> Self {
        self.markers = None;
        self
    }

    /// The render cache (for its size in tests and metrics).
    pub fn render_cache(&self) -> &render_cache::RenderCache {
        &self.render_cache
    }

    /// The injector configuration.
    pub fn config(&self) -> &InjectorConfig {
        &self.config
    }

    /// The values the templates see (`.Values`).
    pub fn values(&self) -> &Value {
        &self.values
    }

    /// The mesh configuration.
    pub fn mesh(&self) -> &Value {
        &self.mesh
    }

    /// Decides, and injects when the decision says so.
    pub fn inject(&self, request: &Request<'_>) -> Result<Outcome, InjectError> {
        let injection = self
            .decide_and_inject(request, Rendering::Allowed, Run::Admission)?
            .ok_or_else(would_render)?;
        Ok(match injection {
            Injection::Skipped(decision) => Outcome::Skipped { decision },
            Injection::Injected {
                injected,
                patch,
                decision,
                ..
            } => Outcome::Injected {
                pod: injected.pod,
                patch,
                decision,
                blind_to_token_volume: injected.blind_to_token_volume,
            },
        })
    }

    /// [`Self::inject`] for a caller that needs only the patch (the webhook). The injected pod
    /// is not kept: the kept renders it reused take back the sidecar's items it holds unchanged,
    /// and hand them to their next pods instead of copies ([`spares`]).
    pub fn answer(&self, request: &Request<'_>) -> Result<Answer, InjectError> {
        self.answer_with(request, Rendering::Allowed)
            .and_then(|answer| answer.ok_or_else(would_render))
    }

    /// [`Self::answer`], when no template has to be rendered for it: the pod is not to be
    /// injected, or its renders come from the render cache (kept, or shared under a stand-in for
    /// its name). `None` when a template would have to be rendered; nothing was rendered then,
    /// and [`Self::answer`] gives the answer. The work done is bounded by the pod's size (no
    /// template runs), so a caller may run it where a long render would be in the way (the
    /// webhook runs it on its async worker, and only sends the admission to its blocking pool
    /// when it gets `None`).
    pub fn answer_without_rendering(&self, request: &Request<'_>) -> Option<Result<Answer, InjectError>> {
        self.answer_with(request, Rendering::Refused).transpose()
    }

    fn answer_with(
        &self,
        request: &Request<'_>,
        rendering: Rendering,
    ) -> Result<Option<Answer>, InjectError> {
        let (received, decision) = self.decide_request(request)?;
        if !decision.inject {
            return Ok(Some(Answer::Skipped { decision }));
        }
        if let Some(patch) = self.patch_from_skeleton(received, request, rendering) {
            // A skeleton is only made of an injection blind to the token volume's name.
            return Ok(Some(Answer::Injected {
                patch,
                decision,
                blind_to_token_volume: true,
            }));
        }
        let Some(injection) = self.inject_decided(received, decision, request, rendering, Run::Admission)?
        else {
            return Ok(None);
        };
        Ok(Some(Self::answer_of(injection)))
    }

    /// The patch for `received`, a pod to be injected, from the skeleton of its shape
    /// ([`skeleton`]), made now when this is the shape's second pod; `None` when the pod is to be
    /// injected on its own.
    fn patch_from_skeleton(
        &self,
        received: &Value,
        request: &Request<'_>,
        rendering: Rendering,
    ) -> Option<Vec<u8>> {
        // A caller that names the owner (kube-inject) is not a webhook's: its owner is no part of
        // a shape.
        if !self.render_cache.enabled() || self.markers.is_none() || request.owner.is_some() {
            return None;
        }
        let shape = skeleton::shape_of(received, request.namespace, &request.path_env)
            .filter(|shape| !shape.is_empty())?;
        // An answer without rendering is asked first, and the same pod again with rendering when
        // it gives none: only the second notes the pod's shape as seen. The injection of the
        // marked pod counts where its render came from for this admission.
        let (known, made_now) = match self.skeletons.get(&shape, rendering == Rendering::Allowed) {
            skeleton::Found::Known(known) => (known, false),
            skeleton::Found::New => return None,
            skeleton::Found::SeenOnce => (self.make_skeleton(&shape, request)?, true),
        };
        let skeleton::Known::Skeleton(skeleton, source) = known else {
            return None;
        };
        let patch = skeleton.fill(&shape, self.stand_in.as_ref())?;
        if !made_now {
            self.render_cache.counts().note(source);
        }
        #[cfg(debug_assertions)]
        self.check_skeleton_answer(request, &patch);
        Some(patch)
    }

    /// The skeleton of `shape` from the injection of its marked pod, kept (or kept as unusable);
    /// `None` when it is not known yet. The marked pod is never rendered for: its render is the
    /// one kept for the shape's earlier pods, found by what the templates read, which is the same
    /// when they read none of the values taken out; when there is none yet (a StatefulSet's
    /// first render is kept only for its second pod) the next pod tries again, and after
    /// [`skeleton::MAX_WAITS`] tries the shape is unusable.
    fn make_skeleton(&self, shape: &skeleton::Shape<'_>, request: &Request<'_>) -> Option<skeleton::Known> {
        let markers = self.markers.as_ref()?;
        let Some(marked) = markers.marked_pod(shape) else {
            return Some(self.remember(shape, skeleton::Known::Unusable));
        };
        let marked_request = Request {
            pod: Some(&marked),
            namespace: request.namespace,
            path_env: request.path_env.clone(),
            owner: request.owner.clone(),
        };
        let injection =
            match self.decide_and_inject(&marked_request, Rendering::Refused, Run::Marked(markers)) {
                Ok(Some(injection)) => injection,
                Ok(None) => {
                    self.skeletons.waited(shape);
                    return None;
                }
                Err(_) => return Some(self.remember(shape, skeleton::Known::Unusable)),
            };
        let fit = match &injection {
            Injection::Injected { injected, .. } if injected.blind_to_token_volume => injected.skeleton,
            Injection::Injected { .. } | Injection::Skipped(_) => SkeletonFit::Never,
        };
        // The marked pod's copies of its render's items go back to the render, as an answer's do.
        let patch = match Self::answer_of(injection) {
            Answer::Injected { patch, .. } => patch,
            Answer::Skipped { .. } => Vec::new(),
        };
        let known = match fit {
            SkeletonFit::Fits(source) => markers
                .skeleton(&patch, shape)
                .map_or(skeleton::Known::Unusable, |skeleton| {
                    skeleton::Known::Skeleton(std::sync::Arc::new(skeleton), source)
                }),
            SkeletonFit::Never => skeleton::Known::Unusable,
        };
        Some(self.remember(shape, known))
    }

    /// Keeps what was learned of `shape`.
    fn remember(&self, shape: &skeleton::Shape<'_>, known: skeleton::Known) -> skeleton::Known {
        self.skeletons.insert(shape, known.clone());
        known
    }

    /// Whether nothing of the kept render shared by pods that are their own owner holds
    /// `needle`: its family ([`render_cache::Fixed`] with the stand-in for the owner's name,
    /// which is the pod's) and what it read of `pod`.
    fn shared_render_blind_to(&self, fixed: &render_cache::Fixed, pod: &Value, needle: &str) -> bool {
        let Some(stand_in) = self.stand_in.as_ref() else {
            return false;
        };
        let mut shared = fixed.clone();
        shared.owner[2] = stand_in.as_str().to_owned();
        self.render_cache.blind_to(&shared, pod, needle)
    }

    /// Debug builds: a patch made from a skeleton is the pod's own injection's.
    #[cfg(debug_assertions)]
    fn check_skeleton_answer(&self, request: &Request<'_>, patch: &[u8]) {
        let own = match self.decide_and_inject(request, Rendering::Allowed, Run::Check) {
            Ok(Some(Injection::Injected { patch, .. })) => String::from_utf8_lossy(&patch).into_owned(),
            Ok(Some(Injection::Skipped(decision))) => format!("skipped: {:?}", decision.rule),
            Ok(None) => "no answer".to_owned(),
            Err(error) => format!("error: {error}"),
        };
        assert_eq!(
            String::from_utf8_lossy(patch),
            own,
            "a patch from a skeleton differs from the pod's own"
        );
    }

    /// The configuration the decision reads.
    fn decision_config(&self) -> &InjectorConfig {
        if self.options.kube_inject {
            &KUBE_INJECT_CONFIG
        } else {
            &self.config
        }
    }

    /// The answer of an injection: the patch without the pod, whose copies of kept items go back
    /// to their renders.
    fn answer_of(injection: Injection) -> Answer {
        match injection {
            Injection::Skipped(decision) => Answer::Skipped { decision },
            Injection::Injected {
                mut injected,
                patch,
                copied,
                decision,
            } => {
                // `copied` holds addresses of values below the pod's root, which live in their
                // lists' and maps' buffers: the pod moved here since the patch was written, they
                // did not.
                for kept in injected.reused.iter().flat_map(|overlays| overlays.iter()) {
                    kept.take_back(&mut injected.pod, &copied);
                }
                Answer::Injected {
                    patch,
                    decision,
                    blind_to_token_volume: injected.blind_to_token_volume,
                }
            }
        }
    }

    /// The decision, and the injection when it says so; `None` when `rendering` is refused and a
    /// template would have to be rendered. `run` says what the injection is for.
    fn decide_and_inject(
        &self,
        request: &Request<'_>,
        rendering: Rendering,
        run: Run<'_>,
    ) -> Result<Option<Injection>, InjectError> {
        let (received, decision) = self.decide_request(request)?;
        if !decision.inject {
            return Ok(Some(Injection::Skipped(decision)));
        }
        self.inject_decided(received, decision, request, rendering, run)
    }

    /// The request's pod and the decision on it: an error when the request has no pod.
    fn decide_request<'r>(&self, request: &Request<'r>) -> Result<(&'r Value, Decision), InjectError> {
        let Some(received) = request.pod else {
            return Err(InjectError("the admission request has no object".to_owned()));
        };
        if !received.is_object() {
            return Err(InjectError(
                "the admission request's object is not a pod".to_owned(),
            ));
        }
        Ok((
            received,
            decide_in(received, request.namespace, self.decision_config()),
        ))
    }

    /// The injection of `received`, which `decision` says to inject; `None` when `rendering` is
    /// refused and a template would have to be rendered.
    fn inject_decided(
        &self,
        received: &Value,
        decision: Decision,
        request: &Request<'_>,
        rendering: Rendering,
        run: Run<'_>,
    ) -> Result<Option<Injection>, InjectError> {
        // Istio injects the pod without `managedFields` and with the request's namespace when it
        // has none. The patch is taken from the pod as received, leaving `managedFields` alone.
        let mut original = without_managed_fields(received);
        default_namespace(&mut original, request.namespace);
        let Some(injected) = self.inject_owned_pod(original, request, rendering, run)? else {
            return Ok(None);
        };
        // A reused render's containers and volumes have the same text in every pod they go to.
        let known: Vec<KnownText<'_>> = injected
            .reused
            .iter()
            .flat_map(|overlays| overlays.iter())
            .flat_map(render_cache::Kept::known_texts)
            .collect();
        let written = create_patch_over_round_trip_known(
            "v1/Pod",
            received,
            &injected.pod,
            &[MANAGED_FIELDS_POINTER],
            &known,
        )
        .map_err(|e| InjectError(e.to_string()))?;
        drop(known);
        Ok(Some(Injection::Injected {
            injected,
            patch: written.patch,
            copied: written.copied,
            decision,
        }))
    }

    /// Istio's `injectPod`: the injected pod, without deciding.
    pub fn inject_pod(&self, original: &Value, request: &Request<'_>) -> Result<Value, InjectError> {
        self.inject_owned_pod(original.clone(), request, Rendering::Allowed, Run::Admission)?
            .map(|injected| injected.pod)
            .ok_or_else(would_render)
    }

    /// [`Self::inject_pod`] of a pod the caller hands over, with the kept renders it reused (if
    /// it did) and whether its renders were blind to the token volume's name. `None` when
    /// `rendering` is refused and a template would have to be rendered.
    fn inject_owned_pod(
        &self,
        original: Value,
        request: &Request<'_>,
        rendering: Rendering,
        run: Run<'_>,
    ) -> Result<Option<InjectedPod>, InjectError> {
        let mut pod = normalize_preserving_owned("v1/Pod", original)
            .map_err(|e| InjectError(format!("failed to decode pod: {e}")))?;
        if self.options.openshift {
            clear_openshift_proxy_user(&mut pod);
        }
        let annotations = string_map(&pod, "annotations");
        let labels = string_map(&pod, "labels");

        validate_annotations(annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| InjectError(format!("failed to run injection template: {e}")))?;
        if let Some(text) = annotations.get(PROXY_CONFIG_ANNOTATION) {
            validate_proxy_config(text).map_err(|reason| {
                InjectError(format!(
                    "failed to run injection template: 1 error occurred:\n\t* invalid value '{text}' for annotation \
                     '{PROXY_CONFIG_ANNOTATION}': {reason}\n\n"
                ))
            })?;
        }
        let pod = Arc::new(pod);
        let prepared = self
            .prepare(&pod, request.owner.clone())
            .map_err(|e| InjectError(format!("failed to run injection template: {}", e.reason())))?;
        let mut proxy_envs = request.path_env.clone();
        resolve_cluster_and_network(&self.values, &labels, &mut proxy_envs);

        let aliases = if self.options.kube_inject {
            BTreeMap::new()
        } else {
            self.config.aliases.clone()
        };
        let defaults = if self.options.kube_inject {
            Vec::new()
        } else {
            self.config.default_templates.clone()
        };
        let selected = select_templates(
            annotations.get(TEMPLATES_ANNOTATION).map(String::as_str),
            &defaults,
            &aliases,
            &self.templates,
        )
        .map_err(|e| InjectError(format!("failed to run injection template: {e}")))?;

        let fixed = render_cache::Fixed {
            templates: selected.clone(),
            owner: [
                prepared.owner.api_version.clone(),
                prepared.owner.kind.clone(),
                prepared.owner.name.clone(),
                prepared.owner.namespace.clone(),
            ],
            proxy_config_annotation: annotations.get(PROXY_CONFIG_ANNOTATION).cloned(),
            proxy_image: prepared.proxy_image.clone(),
            proxy_init_image: prepared.proxy_init_image.clone(),
        };
        let cacheable = self.render_cache.enabled()
            && selected
                .iter()
                .all(|name| !self.templates.contains_key(name) || self.deterministic.contains(name));
        // A pod that is its own owner takes renders made for any pod of its family, with its name
        // put in (merged as its own renders would be); any other pod, a kept render.
        let found = if cacheable {
            match self.own_name_renders(&fixed, &prepared, &selected, rendering) {
                Some(named) => Found::Named(named),
                None => self
                    .render_cache
                    .get(&fixed, &prepared.stripped)
                    .map_or(Found::Nothing, Found::Kept),
            }
        } else {
            Found::Nothing
        };
        if matches!(found, Found::Nothing) && rendering == Rendering::Refused {
            return Ok(None);
        }
        if run.counted() {
            self.render_cache.counts().note(match &found {
                Found::Named(_) => render_counts::RenderSource::Shared,
                Found::Kept(_) => render_counts::RenderSource::Kept,
                Found::Nothing => render_counts::RenderSource::Rendered,
            });
        }
        // Whether the templates never saw the token volume's name: known only from the reads
        // the render cache records.
        let mut blind_to_token_volume = match &found {
            Found::Named(named) => named.blind_to_token_volume,
            Found::Kept(reuse) => reuse.blind_to_token_volume,
            Found::Nothing => false,
        };
        let mut skeleton = SkeletonFit::Never;
        let mut reused = match &found {
            Found::Kept(reuse) => Some(reuse.overlays.clone()),
            Found::Named(_) | Found::Nothing => None,
        };
        // `original` is the pod before the merge, when something after the merge still reads it.
        let (merged, template_pod, original, proxy_config) = match found {
            Found::Named(mut named) => {
                let (merged, template_pod) =
                    match self.merge_named_as_kept(&selected, &pod, &annotations, &named) {
                        Some((merged, template_pod, renders)) => {
                            reused = Some(renders);
                            if let Run::Marked(markers) = run
                                && !overrides::may_write(&pod, &template_pod)
                                && self.shared_render_blind_to(&fixed, &prepared.stripped, markers.prefix())
                            {
                                skeleton = SkeletonFit::Fits(render_counts::RenderSource::Shared);
                            }
                            (merged, template_pod)
                        }
                        None => {
                            named.name_overlays()?;
                            let mut source = Overlays::Named(named);
                            self.merge_templates(&selected, Value::clone(&pod), &annotations, &mut source)?
                        }
                    };
                (merged, template_pod, Some(pod), prepared.proxy_config.clone())
            }
            Found::Kept(render_cache::Reuse { overlays, .. }) => {
                let in_place = selected.len() == 1
                    && overlays.len() == 1
                    && overlays[0]
                        .names(template_pod::names_only)
                        .is_some_and(|names| !overrides::may_write(&pod, &names));
                if let Run::Marked(markers) = run
                    && in_place
                    && self
                        .render_cache
                        .blind_to(&fixed, &prepared.stripped, markers.prefix())
                {
                    skeleton = SkeletonFit::Fits(render_counts::RenderSource::Kept);
                }
                // The templates are not rendered: once the pod as the templates see it is let go,
                // the pod has no other holder, and a merge in place needs no copy of it.
                let Prepared {
                    proxy_config,
                    stripped,
                    ..
                } = prepared;
                drop(stripped);
                let (base, original) = if in_place {
                    (Arc::unwrap_or_clone(pod), None)
                } else {
                    (Value::clone(&pod), Some(pod))
                };
                let (merged, template_pod) =
                    self.merge_templates(&selected, base, &annotations, &mut Overlays::Cached(overlays))?;
                (merged, template_pod, original, proxy_config)
            }
            Found::Nothing => {
                let inputs = self.template_inputs(&prepared);
                let template_data = data::template_data(&inputs, &self.template_values);
                let noting = if !cacheable {
                    Noting::Nothing
                } else if self.render_cache.keeps(&fixed) {
                    Noting::Copies(Vec::new())
                } else {
                    Noting::TokenVolumeNamed(false)
                };
                let mut source = Overlays::Render {
                    data: &template_data,
                    noting,
                };
                let base = Value::clone(&pod);
                let (merged, reads) = if cacheable {
                    crate::render::objects::reads::record(&prepared.stripped, || {
                        self.merge_templates(&selected, base, &annotations, &mut source)
                    })
                } else {
                    (
                        self.merge_templates(&selected, base, &annotations, &mut source),
                        None,
                    )
                };
                let (merged, template_pod) = merged?;
                match (reads, source) {
                    (
                        Some(reads),
                        Overlays::Render {
                            noting: Noting::Copies(kept),
                            ..
                        },
                    ) => {
                        let kept: Vec<render_cache::Kept> =
                            kept.into_iter().map(render_cache::Kept::new).collect();
                        blind_to_token_volume =
                            self.render_cache
                                .insert(fixed, &prepared.stripped, reads, kept.into());
                    }
                    (
                        Some(reads),
                        Overlays::Render {
                            noting: Noting::TokenVolumeNamed(named),
                            ..
                        },
                    ) => {
                        blind_to_token_volume =
                            render_cache::blind_to_token_volume(&prepared.stripped, &reads, named);
                    }
                    _ => {}
                }
                (merged, template_pod, Some(pod), prepared.proxy_config.clone())
            }
        };

        // Unless the user's containers override the template's, the pod is still normalized here,
        // and the last round trip need only walk where post-processing writes. A pod merged in
        // place has none that do (that is when it may be), and nothing saved to re-apply.
        let (mut merged, normalized) = match &original {
            None => (merged, true),
            Some(pod) => {
                let normalized = !overrides::may_write(pod, &template_pod);
                let merged = overrides::reapply(merged, pod, &template_pod, &proxy_config)
                    .map_err(|e| InjectError(format!("failed to re apply container: {e}")))?;
                (merged, normalized)
            }
        };

        let status_of = |template_pod: &Value| injection_status(template_pod, &self.options.revision);
        // A reused render's status annotation is the same for every pod that gets its names.
        let status = match reused.as_deref() {
            Some([kept]) => kept.status_of(&template_pod, status_of),
            _ => None,
        }
        .unwrap_or_else(|| status_of(&template_pod));
        self.post_process(&mut merged, status, &proxy_envs, &proxy_config, normalized)
            .map_err(|e| InjectError(format!("failed to process pod: {e}")))?;
        Ok(Some(InjectedPod {
            pod: merged,
            reused,
            blind_to_token_volume,
            skeleton,
        }))
    }

    /// A render shared under the stand-in for the pod's name, merged into `pod` as a kept render
    /// and given the name after the merge ([`own_name::after_merge`]): (the merged pod, the
    /// template pod, the render), or `None` when the name cannot go in after the merge, the merge
    /// failed or a check did not hold; the named overlays are then merged as the pod's own (and
    /// tell the error, if any, with the pod's name).
    fn merge_named_as_kept(
        &self,
        selected: &[String],
        pod: &Value,
        annotations: &BTreeMap<String, String>,
        named: &own_name::Named,
    ) -> Option<(Value, Arc<Value>, render_cache::Overlays)> {
        let renders = named.merges_as_kept()?.clone();
        let mut source = Overlays::Cached(renders.clone());
        let (mut merged, template_pod) = self
            .merge_templates(selected, pod.clone(), annotations, &mut source)
            .ok()?;
        // A single render's names are the same for every pod: looked through once.
        let holds_stand_in = match renders.as_ref() {
            [kept] => kept.names_hold_stand_in(&template_pod, |names| named.holds_stand_in(names)),
            _ => None,
        }
        .unwrap_or_else(|| named.holds_stand_in(&template_pod));
        (!holds_stand_in && named.fill_merged(&mut merged)).then_some((merged, template_pod, renders))
    }

    /// Renders (or takes from the cache) each selected template and merges it into the template
    /// pod and into `merged` (the pod): (the merged pod, the template pod, shared with the kept
    /// render when it is that render's names).
    fn merge_templates(
        &self,
        selected: &[String],
        mut merged: Value,
        annotations: &BTreeMap<String, String>,
        source: &mut Overlays<'_>,
    ) -> Result<(Value, Arc<Value>), InjectError> {
        // Made when first needed: a single template's names usually stand for it.
        let mut template_pod: Option<Value> = None;
        // A single template's names, read from its overlay, stand for the whole template pod.
        let mut named = None;
        let single_template = selected.len() == 1;
        let cached = source.cached();
        let mut index = 0;
        for name in selected {
            let Some(template) = self.templates.get(name) else {
                continue;
            };
            let overlay = match cached.as_ref().and_then(|overlays| overlays.get(index)) {
                Some(kept) => Overlay::Kept(kept),
                None => Overlay::Rendered(source.overlay(index, template)?),
            };
            let names = single_template
                .then(|| match &overlay {
                    Overlay::Kept(kept) => kept.names(template_pod::names_only),
                    Overlay::Rendered(rendered) => template_pod::names_only(rendered).map(Arc::new),
                })
                .flatten();
            if names.is_none() {
                template_pod = Some(merge(
                    template_pod.take().unwrap_or_else(empty_pod),
                    overlay.value().clone(),
                )?);
            }
            if self.native_applies(annotations, overlay.value()) {
                move_user_proxy_to_init(&mut merged);
            }
            let result = match overlay {
                Overlay::Kept(kept) => merge_kept(kept, std::mem::take(&mut merged)),
                Overlay::Rendered(rendered) => merge(std::mem::take(&mut merged), rendered),
            };
            merged = match result {
                Ok(merged) => merged,
                // Istio merges into the template pod first, so its error (if any) is the one told.
                Err(error) if names.is_some() => {
                    merge(
                        template_pod.take().unwrap_or_else(empty_pod),
                        source.again(index, template)?,
                    )?;
                    return Err(error);
                }
                Err(error) => return Err(error),
            };
            if let Some(names) = names {
                #[cfg(debug_assertions)]
                if let Ok(full) = merge(empty_pod(), source.again(index, template)?) {
                    assert_eq!(
                        injection_status(&names, ""),
                        injection_status(&full, ""),
                        "the template pod's names read from the overlay differ from the merge's"
                    );
                }
                named = Some(names);
            }
            index += 1;
        }
        Ok((
            merged,
            named.unwrap_or_else(|| Arc::new(template_pod.unwrap_or_else(empty_pod))),
        ))
    }

    /// Whether the "native sidecar" adjustment applies to this template output: native on (the
    /// pod annotation overrides the setting) and the template puts `istio-proxy` in init containers.
    fn native_applies(&self, annotations: &BTreeMap<String, String>, overlay: &Value) -> bool {
        let native = match annotations
            .get("sidecar.istio.io/nativeSidecar")
            .map(String::as_str)
        {
            Some("true") => true,
            Some("false") => false,
            _ => self.options.native_sidecars,
        };
        native
            && containers(overlay, ContainerList::InitContainers)
                .iter()
                .any(|c| name_of(c) == PROXY_CONTAINER)
    }

    /// Istio's `postProcessPod`, with the status annotation of the template pod.
    fn post_process(
        &self,
        pod: &mut Value,
        status: String,
        proxy_envs: &BTreeMap<String, String>,
        proxy_config: &Value,
        normalized: bool,
    ) -> Result<(), String> {
        annotations_mut(pod);
        labels_mut(pod);
        // Where the steps wrote the proxy's env: the first of its items that may differ from their
        // round trip. Only the first step takes items out; the later ones add or replace.
        let mut proxy_env_from = overwrite_cluster_info(pod, proxy_envs);
        let mut wrote_env =
            |from: Option<usize>| proxy_env_from = proxy_env_from.into_iter().chain(from).min();
        let mesh_merge = self.mesh.member("enablePrometheusMerge").and_then(Value::as_bool);
        let status_port = mesh_status_port(&self.mesh);
        wrote_env(
            apply_prometheus_merge(pod, mesh_merge, u32::try_from(status_port).unwrap_or(15020))
                .map_err(|e| e.to_string())?,
        );
        apply_secure_port_annotation(pod);
        let rewrite = crate::pod::at(&self.values, &["sidecarInjectorWebhook", "rewriteAppHTTPProbe"])
            .and_then(Value::as_bool)
            .unwrap_or(false);
        wrote_env(apply_rewrite(pod, rewrite, status_port));

        if let Some(network) = proxy_envs.get(crate::cluster::NETWORK_ENV) {
            labels_mut(pod).insert(crate::cluster::NETWORK_LABEL.to_owned(), network.clone().into());
        }
        annotations_mut(pod).insert(STATUS_ANNOTATION.to_owned(), status.into());
        if !self.options.kube_inject {
            for (key, value) in &self.config.injected_annotations {
                annotations_mut(pod).insert(key.clone(), value.clone().into());
            }
        }
        let hold = hold_application(proxy_config, &self.values);
        reorder_pod(pod, hold);
        let guide = normalized.then(|| crate::post::touched::guide(pod, proxy_env_from));
        let taken = std::mem::take(pod);
        *pod = match guide {
            Some(guide) => normalize_preserving_guided("v1/Pod", taken, &guide),
            None => normalize_preserving_owned("v1/Pod", taken),
        }
        .map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// kube-inject decides with policy `enabled` and no selectors.
static KUBE_INJECT_CONFIG: std::sync::LazyLock<InjectorConfig> =
    std::sync::LazyLock::new(InjectorConfig::default);

/// Istio's injection decision for a pod (as received, namespace defaulted).
pub fn decide(pod: &Value, config: &InjectorConfig) -> Decision {
    decide_in(pod, None, config)
}

/// [`decide`] for a pod whose empty namespace is `request_namespace` (the webhook's default).
fn decide_in(pod: &Value, request_namespace: Option<&str>, config: &InjectorConfig) -> Decision {
    let labels = string_map(pod, "labels");
    let annotations = string_map(pod, "annotations");
    let namespace = own_namespace(pod).or(request_namespace).unwrap_or("");
    let host_network = crate::pod::at(pod, &["spec", "hostNetwork"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    decision::decide(
        PodFacts {
            namespace,
            host_network,
            labels: &labels,
            annotations: &annotations,
        },
        &config.injection,
    )
}

/// The rendered template as a pod overlay (YAML 1.1, like `sigs.k8s.io/yaml`).
/// A repeated key is no error: the last value wins, as in `sigs.k8s.io/yaml`'s `Unmarshal`.
fn parse_overlay(rendered: &str) -> Result<Value, InjectError> {
    let fail = |message: &str| {
        InjectError(format!(
            "failed to run injection template: failed to parse the rendered template: {message}"
        ))
    };
    let documents = injector_core::yaml::split_documents(rendered).map_err(|e| fail(&e.message))?;
    for document in documents.iter().filter(|d| !d.is_blank()) {
        // Leading blank lines keep the parser's line numbers those of the whole text.
        let padded = format!(
            "{}{}",
            "\n".repeat(document.start_line.saturating_sub(1)),
            document.text
        );
        match injector_core::yaml::parse_last_key_wins(&padded).map_err(|e| fail(&e))? {
            Value::Null => continue,
            value @ Value::Object(_) => return Ok(value),
            _ => {
                return Err(InjectError(
                    "failed to run injection template: the rendered template is not a mapping".to_owned(),
                ));
            }
        }
    }
    Ok(Value::Object(Map::new()))
}

/// One template's overlay: kept by the render cache, or just rendered.
enum Overlay<'a> {
    Kept(&'a render_cache::Kept),
    Rendered(Value),
}

impl Overlay<'_> {
    fn value(&self) -> &Value {
        match self {
            Overlay::Kept(kept) => &kept.overlay,
            Overlay::Rendered(value) => value,
        }
    }
}

/// What an injection found to reuse instead of rendering.
enum Found {
    /// Renders shared under a stand-in for the pod's name, with its name put in ([`own_name`]).
    Named(own_name::Named),
    /// A kept render of the pod's family.
    Kept(render_cache::Reuse),
    /// Nothing: the templates are rendered.
    Nothing,
}

/// Where an injection's overlays come from: the render cache, or rendering (noting what the
/// render cache needs of them).
enum Overlays<'a> {
    Cached(render_cache::Overlays),
    Render {
        data: &'a gotemplate::Value,
        noting: Noting,
    },
    /// Renders shared under a stand-in for the pod's name, with its name put in ([`own_name`]).
    Named(own_name::Named),
}

/// What is noted of rendered overlays for the render cache.
enum Noting {
    /// Nothing: the renders are not cacheable.
    Nothing,
    /// Copies of them, for the cache to keep.
    Copies(Vec<Value>),
    /// Whether one names a token volume, for renders the cache does not keep
    /// ([`render_cache::blind_to_token_volume`]).
    TokenVolumeNamed(bool),
}

impl Overlays<'_> {
    /// The kept renders, when they come from the cache.
    fn cached(&self) -> Option<render_cache::Overlays> {
        match self {
            Overlays::Cached(overlays) => Some(overlays.clone()),
            Overlays::Render { .. } | Overlays::Named(_) => None,
        }
    }

    /// The overlay of the `index`-th rendered template.
    fn overlay(&mut self, index: usize, template: &Template) -> Result<Value, InjectError> {
        match self {
            Overlays::Cached(overlays) => Ok(overlays
                .get(index)
                .map(|kept| kept.overlay.clone())
                .unwrap_or_default()),
            Overlays::Named(named) => Ok(named.take(index)),
            Overlays::Render { data, noting } => {
                let overlay = render_overlay(template, data)?;
                match noting {
                    Noting::Nothing => {}
                    Noting::Copies(kept) => kept.push(overlay.clone()),
                    Noting::TokenVolumeNamed(named) => {
                        *named = *named || render_cache::names_token_volume(&overlay);
                    }
                }
                Ok(overlay)
            }
        }
    }

    /// The same overlay once more (for an error path or a check): from the cache or the kept
    /// copy, else rendered again.
    fn again(&self, index: usize, template: &Template) -> Result<Value, InjectError> {
        match self {
            Overlays::Cached(overlays) => Ok(overlays
                .get(index)
                .map(|kept| kept.overlay.clone())
                .unwrap_or_default()),
            Overlays::Named(named) => named.again(index),
            Overlays::Render { data, noting } => match noting {
                Noting::Copies(kept) if index < kept.len() => Ok(kept[index].clone()),
                _ => render_overlay(template, data),
            },
        }
    }
}

/// One template rendered and parsed.
fn render_overlay(template: &Template, data: &gotemplate::Value) -> Result<Value, InjectError> {
    let rendered = template
        .execute(data)
        .map_err(|e| InjectError(format!("failed to run injection template: {e}")))?;
    parse_overlay(&rendered)
}

/// Istio's `applyOverlayYAML`: a strategic merge with the Pod schema, then the Go round trip.
fn merge(pod: Value, overlay: Value) -> Result<Value, InjectError> {
    round_trip_merged(strategic_merge_pod(pod, overlay)?, None)
}

/// [`merge`] of a kept render into `pod`: its new items come normalized, and only what it changed
/// is walked. The overlay is prepared once for the pods that hold none of the render's keyed items
/// yet, else for this pod; debug builds check both the preparation and the merge against the
/// plain ones.
fn merge_kept(kept: &render_cache::Kept, pod: Value) -> Result<Value, InjectError> {
    let normalized = kept.template_pod(|raw| merge(empty_pod(), raw.clone()).ok());
    #[cfg(debug_assertions)]
    let plain = merge(pod.clone(), kept.overlay.clone());
    let prepared = kept.prepared(|raw| merge_guide::prepare_for_any_pod(raw, normalized));
    let own;
    let (overlay, plan) = if prepared.fits(&pod) {
        #[cfg(debug_assertions)]
        assert_eq!(
            merge_guide::prepare(&kept.overlay, normalized, &pod),
            (prepared.overlay.clone(), prepared.plan.clone()),
            "the render's preparation for any pod differs from this pod's"
        );
        (prepared.overlay.clone(), &prepared.plan)
    } else {
        let (overlay, plan) = merge_guide::prepare(&kept.overlay, normalized, &pod);
        own = plan;
        (overlay, &own)
    };
    let guided = merge_guided(pod, overlay, plan, normalized, kept.spares());
    #[cfg(debug_assertions)]
    assert_eq!(
        guided.as_ref().ok(),
        plain.as_ref().ok(),
        "merging a kept render with stubs differs from merging it plainly"
    );
    guided
}

/// [`merge`] of a kept render prepared by [`merge_guide::prepare`] with `template_pod` (whose
/// items replace the overlay's stubs): the round trip walks only what the plan says the merge may
/// have changed.
fn merge_guided(
    pod: Value,
    overlay: Value,
    plan: &merge_guide::Plan,
    template_pod: Option<&Value>,
    spares: &spares::Spares,
) -> Result<Value, InjectError> {
    let mut merged = strategic_merge_pod(pod, overlay)?;
    let guide = plan.finish(&mut merged, template_pod, spares);
    round_trip_merged(merged, Some(&guide))
}

fn strategic_merge_pod(pod: Value, overlay: Value) -> Result<Value, InjectError> {
    strategic_merge::strategic_merge_owned(pod, overlay, Schema::pod())
        .map_err(|e| InjectError(format!("failed to run injection template: strategic merge: {e}")))
}

/// The Go round trip of a merged pod: whole, or only where `guide` says the merge changed it.
fn round_trip_merged(merged: Value, guide: Option<&crate::normalize::Guide>) -> Result<Value, InjectError> {
    match guide {
        Some(guide) => normalize_preserving_guided("v1/Pod", merged, guide),
        None => normalize_preserving_owned("v1/Pod", merged),
    }
    .map_err(|e| {
        InjectError(format!(
            "failed to run injection template: unmarshal patched pod: {e}"
        ))
    })
}

/// An empty `corev1.Pod` as Go marshals it.
fn empty_pod() -> Value {
    // Worked out once: every template pod starts from it.
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| {
            normalize("v1/Pod", &Value::Object(Map::new())).unwrap_or_else(|_| Value::Object(Map::new()))
        })
        .clone()
}

/// With native sidecars, a user `istio-proxy` in `containers` moves to `initContainers` before the
/// template (which puts the proxy there) is merged.
fn move_user_proxy_to_init(pod: &mut Value) {
    let Some(list) = containers_mut(pod, ContainerList::Containers) else {
        return;
    };
    let Some(index) = list.iter().position(|c| name_of(c) == PROXY_CONTAINER) else {
        return;
    };
    let proxy = list.remove(index);
    let Some(spec) = pod.member_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let init = spec
        .entry("initContainers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !init.is_array() {
        *init = Value::Array(Vec::new());
    }
    if let Value::Array(items) = init {
        items.push(proxy);
    }
}

/// On OpenShift every container gets the namespace's UID; a user `istio-proxy` with the same
/// `runAsUser` as the app (the last other container that sets one, 0 if none) would break traffic
/// interception, so its `runAsUser`/`runAsGroup` are cleared (Istio's webhook does the same).
fn clear_openshift_proxy_user(pod: &mut Value) {
    let user = |c: &Value| crate::pod::at(c, &["securityContext", "runAsUser"]).and_then(Value::as_i64);
    let istio = |c: &Value| matches!(name_of(c), PROXY_CONTAINER | "istio-validation" | "istio-init");
    let all: Vec<&Value> = crate::pod::all_containers(pod).collect();
    let app_user = all
        .iter()
        .filter(|c| !istio(c))
        .filter_map(|c| user(c))
        .next_back()
        .unwrap_or(0);
    for list in [ContainerList::Containers, ContainerList::InitContainers] {
        let Some(proxy) =
            containers_mut(pod, list).and_then(|l| l.iter_mut().find(|c| name_of(c) == PROXY_CONTAINER))
        else {
            continue;
        };
        if user(proxy).unwrap_or(0) == app_user
            && let Some(context) = proxy.member_mut("securityContext").and_then(Value::as_object_mut)
        {
            context.shift_remove("runAsUser");
            context.shift_remove("runAsGroup");
        }
        return;
    }
}

/// `holdApplicationUntilProxyStarts`: from the effective ProxyConfig (the pod's annotation merged
/// into the mesh's default), or the values' `global.proxy.holdApplicationUntilProxyStarts`.
fn hold_application(proxy_config: &Value, values: &Value) -> bool {
    let from_mesh = proxy_config
        .member("holdApplicationUntilProxyStarts")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let from_values = crate::pod::at(values, &["global", "proxy", "holdApplicationUntilProxyStarts"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    from_mesh || from_values
}

fn mesh_status_port(mesh: &Value) -> i64 {
    crate::pod::at(mesh, &["defaultConfig", "statusPort"])
        .and_then(Value::as_i64)
        .unwrap_or(15020)
}

/// Where the API server keeps field ownership, which Istio leaves out of the injection.
const MANAGED_FIELDS_POINTER: &str = "/metadata/managedFields";

/// A copy of the pod without `metadata.managedFields` (never copied only to be dropped: on a
/// pod made by a controller it is a good part of the object).
fn without_managed_fields(pod: &Value) -> Value {
    let Value::Object(root) = pod else {
        return pod.clone();
    };
    // The webhook's decoder leaves them out already: a plain copy keeps each map's hashes.
    if root
        .member("metadata")
        .and_then(|m| m.member("managedFields"))
        .is_none()
    {
        return pod.clone();
    }
    let copy = root
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::Object(metadata) if key == "metadata" => Value::Object(
                    metadata
                        .iter()
                        .filter(|(field, _)| *field != "managedFields")
                        .map(|(field, value)| (field.clone(), value.clone()))
                        .collect(),
                ),
                value => value.clone(),
            };
            (key.clone(), value)
        })
        .collect();
    Value::Object(copy)
}

fn default_namespace(pod: &mut Value, namespace: Option<&str>) {
    let Some(namespace) = namespace.filter(|n| !n.is_empty()) else {
        return;
    };
    if own_namespace(pod).is_some() {
        return;
    }
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.insert("namespace".to_owned(), namespace.into());
    }
}

/// The pod's own namespace, unless it is missing or empty (then the request's applies: the API
/// server sets it the same way).
fn own_namespace(pod: &Value) -> Option<&str> {
    crate::pod::at(pod, &["metadata", "namespace"])
        .and_then(Value::as_str)
        .filter(|namespace| !namespace.is_empty())
}

/// Labels or annotations of a pod as a string map (non-string values skipped).
fn string_map(pod: &Value, field: &str) -> BTreeMap<String, String> {
    pod.member("metadata")
        .and_then(|m| m.member(field))
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// What a previous injection recorded in the pod's status annotation, if it was injected before.
fn previous_injection(pod: &Value) -> Option<crate::status::PreviousInjection> {
    crate::pod::annotation(pod, STATUS_ANNOTATION).map(parse_status)
}

/// The Go JSON of the overrides annotation value.
fn overrides_json(containers: &[Value], init_containers: &[Value]) -> String {
    let mut object = Map::new();
    if !containers.is_empty() {
        object.insert("containers".to_owned(), Value::Array(containers.to_vec()));
    }
    if !init_containers.is_empty() {
        object.insert(
            "initContainers".to_owned(),
            Value::Array(init_containers.to_vec()),
        );
    }
    to_go_json(&Value::Object(object))
}

#[cfg(test)]
mod tests;
