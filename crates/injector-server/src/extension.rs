//! What an embedding program adds to the server without touching the request path: more
//! metrics on `/metrics` and a section of its own in `/readyz`'s detail (cluster mode adds its
//! leader, CA and caBundle state this way).

use std::sync::Arc;

use prometheus_client::registry::Registry;

type StatusFn = dyn Fn() -> serde_json::Value + Send + Sync;
type RegisterFn = dyn Fn(&mut Registry) + Send + Sync;

/// Additions to the server's monitoring; empty by default.
#[derive(Clone, Default)]
pub struct Extension {
    status: Option<(String, Arc<StatusFn>)>,
    metrics: Vec<Arc<RegisterFn>>,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension")
            .field("status", &self.status.as_ref().map(|(name, _)| name))
            .field("metrics", &self.metrics.len())
            .finish()
    }
}

impl Extension {
    /// Adds `status()` to `/readyz`'s JSON detail under `name` (read on each request: keep it
    /// cheap, no I/O). It never changes readiness itself.
    pub fn with_status(
        mut self,
        name: impl Into<String>,
        status: impl Fn() -> serde_json::Value + Send + Sync + 'static,
    ) -> Self {
        self.status = Some((name.into(), Arc::new(status)));
        self
    }

    /// Registers more metrics in the server's registry when it is built (after those added
    /// before).
    pub fn with_metrics(mut self, register: impl Fn(&mut Registry) + Send + Sync + 'static) -> Self {
        self.metrics.push(Arc::new(register));
        self
    }

    pub(crate) fn register_metrics(&self, registry: &mut Registry) {
        for register in &self.metrics {
            register(registry);
        }
    }

    pub(crate) fn status(&self) -> Option<(&str, serde_json::Value)> {
        self.status.as_ref().map(|(name, f)| (name.as_str(), f()))
    }
}
