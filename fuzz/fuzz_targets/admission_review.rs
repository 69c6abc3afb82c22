//! Fuzz target: an arbitrary HTTP body goes through what the server does with it — decode the
//! AdmissionReview, run the engine's admission with the embedded configuration, encode the
//! response — without panicking or hanging, and the response is always valid JSON.
#![no_main]

use std::sync::OnceLock;

use injector_engine::{CompiledConfig, Options, Outcome, Request};
use injector_server::admission::{Notes, Verdict, decode, encode_response_with};
use libfuzzer_sys::fuzz_target;

fn injector() -> Option<&'static CompiledConfig> {
    static INJECTOR: OnceLock<Option<CompiledConfig>> = OnceLock::new();
    INJECTOR
        .get_or_init(|| {
            let (config, values, mesh) = injector_engine::embedded_settings().ok()?;
            CompiledConfig::new(config, values, mesh, Options::default()).ok()
        })
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Some(injector) = injector() else {
        return;
    };
    let response = match decode(data) {
        Err(error) => encode_response_with(
            error.version,
            error.uid.as_deref().unwrap_or(""),
            &Verdict::Deny(error.message),
            &Notes::default(),
        ),
        Ok(review) => {
            let request = Request {
                pod: Some(&review.object),
                namespace: Some(review.namespace.as_str()),
                ..Request::default()
            };
            let verdict = match injector.inject(&request) {
                Ok(Outcome::Skipped { .. }) => Verdict::Allow,
                Ok(Outcome::Injected { patch, .. }) => Verdict::Patch(patch),
                Err(error) => Verdict::Deny(error.0),
            };
            encode_response_with(Some(review.version), &review.uid, &verdict, &Notes::default())
        }
    };
    assert!(
        serde_json::from_slice::<serde_json::Value>(&response).is_ok(),
        "the response is not JSON: {}",
        String::from_utf8_lossy(&response)
    );
});
