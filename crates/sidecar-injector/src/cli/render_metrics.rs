//! The engine's render metrics on `serve`'s `/metrics`: where injections got their template
//! renders (counted over every configuration the process served) and what the render cache
//! holds.

use std::sync::Arc;

use injector_engine::cache::{RenderCache, RenderSource};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the render cache at each scrape.
#[derive(Debug)]
pub(super) struct RenderMetrics {
    cache: Arc<RenderCache>,
}

impl RenderMetrics {
    /// Metrics of `cache`.
    pub(super) fn new(cache: Arc<RenderCache>) -> Self {
        RenderMetrics { cache }
    }
}

fn gauge(value: usize) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

impl Collector for RenderMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.cache.counts();
        let mut family = encoder.encode_descriptor(
            "sidecar_injector_renders",
            "Injections that ran the templates, by where their renders came from: rendered for the pod, \
             kept (a render of an earlier pod that read the same of it) or shared (a render made for pods \
             that are their own owner, such as a StatefulSet's, with the pod's name put in).",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for source in RenderSource::ALL {
            let labels = [("source", source.as_str())];
            ConstCounter::new(counts.injections(source)).encode(family.encode_family(&labels)?)?;
        }
        let evictions = ConstCounter::new(counts.evictions());
        evictions.encode(encoder.encode_descriptor(
            "sidecar_injector_render_cache_evictions",
            "Renders the render cache let go to stay within its budget (many: more workloads than it holds).",
            None,
            evictions.metric_type(),
        )?)?;
        let entries = gauge(self.cache.len());
        entries.encode(encoder.encode_descriptor(
            "sidecar_injector_render_cache_entries",
            "Renders the render cache holds for the configuration in service.",
            None,
            entries.metric_type(),
        )?)?;
        let bytes = gauge(self.cache.bytes());
        bytes.encode(encoder.encode_descriptor(
            "sidecar_injector_render_cache_bytes",
            "Bytes the render cache's renders hold (at most --render-cache-mib).",
            None,
            bytes.metric_type(),
        )?)?;
        Ok(())
    }
}
