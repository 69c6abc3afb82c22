//! Istio's template functions (`InjectionFuncmap`) over sprig's, with Go signatures.
//!
//! One module per family: [`text`] (string helpers and Istio's `indent`/`contains`
//! overrides), [`maps`] (`map[string]string` helpers, `valueOrDefault`, `omitNil`), [`encode`]
//! (JSON and YAML), [`pod`] (functions that read Kubernetes objects: `annotation`, ports,
//! `otelResourceAttributes`).

pub mod encode;
pub mod maps;
pub mod pod;
pub mod text;

use gotemplate::{FuncMap, Value, sprig};

/// The function map Istio's injector runs templates with: `sprig.TxtFuncMap()` overridden by
/// Istio's `InjectionFuncmap` (so `indent`, `contains`, `omit`, `toYaml` and `env` are Istio's).
pub fn istio_funcs() -> FuncMap {
    let mut m = sprig::funcs();
    m.extend(&injection_funcs());
    m
}

/// Istio's own functions only.
pub fn injection_funcs() -> FuncMap {
    let mut m = FuncMap::new();
    text::register(&mut m);
    maps::register(&mut m);
    encode::register(&mut m);
    pod::register(&mut m);
    m
}

/// The string inside a `string` argument (the executor has checked the type).
pub(crate) fn arg_str(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// Go's error for an argument of the wrong type, for parameters the executor cannot check
/// (Go types such as `[]v1.Container`).
pub(crate) fn wrong_type(expected: &str, got: &Value) -> String {
    format!(
        "wrong type for value; expected {expected}; got {}",
        got.type_name()
    )
}
