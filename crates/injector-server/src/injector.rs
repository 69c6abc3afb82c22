//! The seam between the server and the injection engine.
//!
//! The engine implements [`Injector`]: a synchronous, CPU-bound function from an admission
//! request plus the current configuration to an [`AdmissionOutcome`]. The server runs it on
//! tokio's blocking pool so a slow render never stalls the reactor, bounded by the admission
//! concurrency limit.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

/// The injection engine, as seen by the server: an admission, and an observation of each
/// admission's outcome.
pub trait Injector: Send + Sync + 'static {
    /// The engine's compiled configuration (templates, values, mesh config…), produced by the
    /// loader of a [`ConfigStore`](crate::ConfigStore) and swapped atomically on reload.
    type Config: Send + Sync + 'static;

    /// Decides and, if needed, computes the patch for one pod, answering from the engine's own
    /// caches when `caches` is [`Caches::Use`].
    ///
    /// The outcome must depend only on `config` and the request's object, namespace, operation
    /// and path (not its uid or dry-run flag): the server answers identical admissions under the
    /// same configuration from a cache (`ServeOptions::outcome_cache_bytes`), and checks a sample
    /// of cached answers against the same admission with [`Caches::Skip`]
    /// (`ServeOptions::shadow_check_every`).
    ///
    /// Must not panic on any input; a panic is caught and answered as `allowed: false`, but
    /// it is a bug. The engine should honour `request.deadline` for long work.
    fn admit(&self, config: &Self::Config, request: &AdmissionInput, caches: Caches) -> Admission;

    /// Told of every admission's outcome, computed or answered from the outcome cache (cluster
    /// mode writes Events from it). Called on the admission's path: it must only hand the
    /// record on (e.g. `try_send` to a queue), never block or do I/O. Does nothing by default.
    fn observe(&self, _request: &AdmissionInput, _outcome: &AdmissionOutcome) {}
}

/// Whether an admission may be answered from the engine's own caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caches {
    /// Yes: the answer the engine gives anyway, as fast as it can.
    Use,
    /// No: the engine computes the answer from scratch (a shadow check of a cached answer, or a
    /// configuration whose cache gave a wrong one).
    Skip,
}

/// The engine's answer to one admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// What to answer.
    pub outcome: AdmissionOutcome,
    /// Whether the outcome holds for any name of the pod's ServiceAccount token volume
    /// (`kube-api-access-` and five random characters, which ServiceAccount admission gives
    /// every pod that mounts a token): the same pod with another name there would get this
    /// outcome with that name in its place. When it does, the pods of one Deployment, whose
    /// token volumes are named apart, share an outcome-cache entry; when unknown, `false`.
    pub any_token_name: bool,
    /// Whether the engine's own caches gave it (the server's shadow check recomputes a sample
    /// of such answers with [`Caches::Skip`]).
    pub cached: bool,
}

impl Admission {
    /// An outcome computed from scratch, known to hold only for the pod's own token volume name.
    pub fn computed(outcome: AdmissionOutcome) -> Admission {
        Admission {
            outcome,
            any_token_name: false,
            cached: false,
        }
    }
}

/// What the web console needs of the engine: explanations of pods against a configuration, and a
/// description of it.
pub trait Explain: Send + Sync + 'static {
    /// The engine's compiled configuration, as in [`Injector::Config`].
    type Config: Send + Sync + 'static;

    /// The console's explanation of a pod against `config`: the same report as
    /// `sidecar-injector explain` (with the patch and pod diff for a pasted manifest), as JSON
    /// the console page shows: `decision`, `reasons`, `report` (text), `patch`, `diff`, `error`.
    /// Runs on the blocking pool, one at a time. A manifest that cannot be explained is
    /// [`ExplainError::Manifest`], with what to fix.
    fn explain(&self, config: &Self::Config, subject: &ExplainSubject) -> Result<Value, ExplainError>;

    /// The configuration in service, for the console (templates, values, mesh config). Must
    /// hold no secret values.
    fn describe(&self, config: &Self::Config) -> Value;
}

/// Why the console could not explain a pod; the text is shown in the browser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// The pasted manifest cannot be explained (it does not parse, holds no workload…); the
    /// message names the object and says what to fix. The user's to fix.
    #[error("{0}")]
    Manifest(String),
    /// The kept AdmissionReview does not decode.
    #[error("{0}")]
    Review(#[source] crate::admission::DecodeError),
    /// No configuration is in service yet.
    #[error("no configuration is loaded")]
    NoConfiguration,
    /// The injector does not explain its decisions (it implements no [`Explain`]).
    #[error("this injector does not explain its decisions")]
    Unsupported,
}

/// What the console asks the engine to explain ([`Explain`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ExplainSubject {
    /// A pod the webhook admitted (so the API server did call it), as kept by the console,
    /// with the literal values of its environment variables hidden.
    Admitted {
        /// The pod, as received.
        object: Value,
        /// `request.namespace`.
        namespace: String,
    },
    /// A manifest pasted into the console: a Pod or a workload, YAML or JSON.
    Pasted {
        /// Its text.
        manifest: String,
        /// The namespace its pods are created in, when it names none.
        namespace: Option<String>,
        /// That namespace's labels, when given.
        namespace_labels: Option<BTreeMap<String, String>>,
    },
}

/// One admission request, as handed to the [`Injector`].
#[derive(Debug, Clone)]
pub struct AdmissionInput {
    /// `request.uid`.
    pub uid: String,
    /// `request.namespace`. Istio fills an empty `metadata.namespace` of the pod from it.
    pub namespace: String,
    /// `request.operation` (`CREATE` for pods).
    pub operation: String,
    /// `request.dryRun`.
    pub dry_run: bool,
    /// `request.object`: the pod as raw JSON, untouched (including `managedFields`, which
    /// Istio drops before diffing).
    pub object: Value,
    /// Proxy environment from the URL path (`/inject/cluster/C/net/N`, as Istio's `parseInjectEnvs`).
    pub path_env: BTreeMap<String, String>,
    /// The decoded request path (`/inject/...`).
    pub path: String,
    /// When the API server stops waiting (from `?timeout=`, else the server default).
    pub deadline: Instant,
}

/// What the engine decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdmissionOutcome {
    /// Not injected (policy, annotation, already injected…): `allowed: true`, no patch.
    Skipped {
        /// Why, for logs and the audit log (e.g. `namespace not selected`).
        reason: String,
        /// What the pod's creator should know (kubectl prints each as `Warning: …`): the
        /// response's `warnings`, bounded by the server.
        warnings: Vec<String>,
    },
    /// Injected: `allowed: true` with this RFC 6902 JSON Patch (raw JSON bytes).
    Patched {
        /// The JSON Patch document, e.g. `[{"op":"add",...}]`.
        patch: Vec<u8>,
        /// Why, for logs and the audit log (e.g. `injected sidecar`).
        reason: String,
        /// As for [`AdmissionOutcome::Skipped`].
        warnings: Vec<String>,
    },
    /// Injection failed: `allowed: false`; `message` is shown to the user by `kubectl`, so it
    /// should say what to fix.
    Denied {
        /// The `status.message`.
        message: String,
    },
}
