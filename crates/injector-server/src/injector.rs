//! The seam between the server and the injection engine.
//!
//! The engine implements [`Injector`]: a synchronous, CPU-bound function from an admission
//! request plus the current configuration to an [`AdmissionOutcome`]. The server runs it on
//! tokio's blocking pool so a slow render never stalls the reactor, bounded by the admission
//! concurrency limit.

use std::collections::BTreeMap;
use std::time::Instant;

use prometheus_client::registry::Registry;
use serde_json::Value;

use crate::ConfigStore;

/// The injection engine, as seen by the server.
pub trait Injector: Send + Sync + 'static {
    /// The engine's compiled configuration (templates, values, mesh config…), produced by the
    /// loader of a [`ConfigStore`](crate::ConfigStore) and swapped atomically on reload.
    type Config: Send + Sync + 'static;

    /// Decides and, if needed, computes the patch for one pod.
    ///
    /// The outcome must depend only on `config` and the request's object, namespace, operation
    /// and path (not its uid or dry-run flag): the server answers identical admissions under the
    /// same configuration from a cache (`ServeOptions::outcome_cache_bytes`).
    ///
    /// Must not panic on any input; a panic is caught and answered as `allowed: false`, but
    /// it is a bug. The engine should honour `request.deadline` for long work.
    fn admit(&self, config: &Self::Config, request: &AdmissionInput) -> AdmissionOutcome;

    /// [`Self::admit`], and whether the outcome holds for any name of the pod's ServiceAccount
    /// token volume (`kube-api-access-` and five random characters, which ServiceAccount
    /// admission gives every pod that mounts a token): the same pod with another name there
    /// would get this outcome with that name in its place. When it does, the pods of one
    /// Deployment, whose token volumes are named apart, share an outcome-cache entry. The
    /// server asks this instead of [`Self::admit`] when the pod has such a volume. By default
    /// the outcome is not known to (`false`), and each name keeps its own entry.
    fn admit_for_any_token_name(
        &self,
        config: &Self::Config,
        request: &AdmissionInput,
    ) -> (AdmissionOutcome, bool) {
        (self.admit(config, request), false)
    }

    /// [`Self::admit_for_any_token_name`], when the engine can answer without its slow work
    /// (for an engine that renders templates: a pod it does not inject, or one whose renders
    /// it kept from an earlier pod); `None` when it cannot, having done nothing it would
    /// otherwise do twice (no side effects, no [`Self::observe`]). The server asks this first, on
    /// its async worker, for bodies up to 16 KiB, and sends the admission to the blocking pool
    /// only on `None`: for such an answer the hand-off between threads costs as much as the
    /// answer itself. It must take well under a millisecond, do no I/O and not panic. `None` by
    /// default.
    fn admit_quickly(
        &self,
        _config: &Self::Config,
        _request: &AdmissionInput,
    ) -> Option<(AdmissionOutcome, bool)> {
        None
    }

    /// Whether outcomes ignore the object's `metadata.managedFields`, as Istio's injector does
    /// (it drops them before injecting and keeps them out of its patch). When they do, the
    /// outcome cache leaves them out of its key: the API server stamps each entry with the
    /// second it was written, so the pods of one scale-up differ there from second to second.
    /// The server does not decode them either: the objects the injector is handed have no
    /// `metadata.managedFields`. `false` by default.
    fn ignores_managed_fields(&self) -> bool {
        false
    }

    /// Told of every admission's outcome, computed or answered from the outcome cache (cluster
    /// mode writes Events from it). Called on the admission's path: it must only hand the
    /// record on (e.g. `try_send` to a queue), never block or do I/O. Does nothing by default.
    fn observe(&self, _request: &AdmissionInput, _outcome: &AdmissionOutcome) {}

    /// The console's explanation of a pod against `config`: the same report as
    /// `sidecar-injector explain` (with the patch and pod diff for a pasted manifest), as JSON
    /// the console page shows: `decision`, `reasons`, `report` (text), `patch`, `diff`, `error`.
    /// Runs on the blocking pool, one at a time. Unsupported by default.
    fn explain(&self, _config: &Self::Config, _subject: &ExplainSubject) -> Result<Value, String> {
        Err("this injector does not explain its decisions".to_owned())
    }

    /// The configuration in service, for the console (templates, values, mesh config). Must
    /// hold no secret values. `null` by default.
    fn describe(&self, _config: &Self::Config) -> Value {
        Value::Null
    }

    /// Registers the engine's own metrics on `/metrics`, once, when the server is built.
    /// `config` gives the configuration in service at each scrape, for metrics of its state.
    /// Metrics must be cumulative over reloads where they count. Registers none by default.
    fn register_metrics(&self, _registry: &mut Registry, _config: &ConfigStore<Self::Config>) {}
}

/// What the console asks the [`Injector`] to explain.
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
    /// Proxy environment from the URL path (`/inject/cluster/C/net/N`, SPEC §b.1).
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
        /// Why, for logs (e.g. `namespace not selected`).
        reason: String,
    },
    /// Injected: `allowed: true` with this RFC 6902 JSON Patch (raw JSON bytes).
    Patched {
        /// The JSON Patch document, e.g. `[{"op":"add",...}]`.
        patch: Vec<u8>,
        /// Why, for logs (e.g. `injected sidecar`).
        reason: String,
    },
    /// Injection failed: `allowed: false`; `message` is shown to the user by `kubectl`, so it
    /// should say what to fix.
    Denied {
        /// The `status.message`.
        message: String,
    },
}
