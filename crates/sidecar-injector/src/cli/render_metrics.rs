//! The engine's render metrics on `serve`'s `/metrics`: where injections got their template
//! renders (counted over every configuration the process served) and the render cache of the
//! configuration in service.

use std::sync::Arc;

use injector_engine::pipeline::Injector;
use injector_engine::pipeline::render_counts::{RenderCounts, RenderSource};
use injector_server::ConfigStore;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the counts and the cache at each scrape.
pub(super) struct RenderMetrics {
    counts: Arc<RenderCounts>,
    config: ConfigStore<Injector>,
}

impl std::fmt::Debug for RenderMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderMetrics")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl RenderMetrics {
    /// Metrics of `counts` (the counts every injector `config` loads counts into) and of the
    /// render cache of `config`'s injector in service.
    pub(super) fn new(counts: Arc<RenderCounts>, config: ConfigStore<Injector>) -> Self {
        RenderMetrics { counts, config }
    }
}

impl Collector for RenderMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
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
            ConstCounter::new(self.counts.injections(source)).encode(family.encode_family(&labels)?)?;
        }
        let flushes = ConstCounter::new(self.counts.flushes());
        flushes.encode(encoder.encode_descriptor(
            "sidecar_injector_render_cache_flushes",
            "Times the render cache was full and was emptied (many flushes: more workloads than it holds).",
            None,
            flushes.metric_type(),
        )?)?;
        let entries = self
            .config
            .current()
            .map_or(0, |injector| injector.render_cache().len());
        let entries = ConstGauge::new(i64::try_from(entries).unwrap_or(i64::MAX));
        entries.encode(encoder.encode_descriptor(
            "sidecar_injector_render_cache_entries",
            "Renders the render cache holds for the configuration in service.",
            None,
            entries.metric_type(),
        )?)?;
        Ok(())
    }
}
