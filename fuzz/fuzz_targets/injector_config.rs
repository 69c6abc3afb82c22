//! Fuzz target: the injector configuration loader (`--injector-config`: a ConfigMap, the raw
//! `config` YAML, or a bare sidecar template) never panics or hangs, and whatever it accepts
//! builds an injector (its templates parse) or is refused with an error.
#![no_main]

use std::sync::OnceLock;

use injector_core::config::parse_injector_config_or_template;
use injector_engine::{CompiledConfig, Options};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn values_and_mesh() -> &'static Option<(Value, Value)> {
    static SETTINGS: OnceLock<Option<(Value, Value)>> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let (_, values, mesh) = injector_engine::embedded_settings().ok()?;
        Some((values, mesh))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(loaded) = parse_injector_config_or_template(text) else {
        return;
    };
    if let Some((values, mesh)) = values_and_mesh() {
        let _ = CompiledConfig::new(loaded.config, values.clone(), mesh.clone(), Options::default());
    }
});
