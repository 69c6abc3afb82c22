//! Stage 3, rendering: each selected template executed on the pod's template data and its YAML
//! parsed into an overlay, as Istio's `RunTemplate` does.

use serde_json::{Map, Value};

use crate::cache::RenderSource;
use crate::compiled::CompiledConfig;
use crate::merge::TemplatePod;
use crate::pipeline::InjectError;
use crate::prepare::{Prepared, TemplateInputs};

/// What the render stage gives the merge: the overlays, and the template pod they make.
#[derive(Debug)]
pub struct Rendered {
    /// One overlay per selected template that exists, in order. Rendering stops at the first
    /// template that fails: its error is the last item, told once the templates before it are
    /// merged (as Istio renders and merges one template at a time).
    pub overlays: Vec<Result<Value, InjectError>>,
    /// The overlays merged into an empty pod, a function of the overlays alone.
    pub template_pod: TemplatePod,
    /// See [`crate::pipeline::Outcome::Injected::blind_to_token_volume`].
    pub blind_to_token_volume: bool,
    /// Where the overlays came from.
    pub source: RenderSource,
}

impl Rendered {
    /// `overlays` from `source`, with the template pod they make.
    pub fn of(
        overlays: Vec<Result<Value, InjectError>>,
        blind_to_token_volume: bool,
        source: RenderSource,
    ) -> Rendered {
        Rendered {
            template_pod: crate::merge::template_pod(&overlays),
            overlays,
            blind_to_token_volume,
            source,
        }
    }
}

/// The render stage: the overlays of a prepared pod.
pub trait Render {
    /// The overlays of `prepared`'s templates under `config`.
    fn render(&self, config: &CompiledConfig, prepared: &Prepared) -> Rendered;
}

/// Renders every template, every time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Render for Plain {
    fn render(&self, config: &CompiledConfig, prepared: &Prepared) -> Rendered {
        let data = template_data(config, &prepared.inputs);
        Rendered::of(
            render_templates(config, &prepared.templates, &data, None),
            false,
            RenderSource::Rendered,
        )
    }
}

/// The overlays of `templates` rendered on `data` (told to `watch`, if any), stopping at the first
/// that fails.
pub fn render_templates(
    config: &CompiledConfig,
    templates: &[String],
    data: &gotemplate::Value,
    watch: Option<&dyn gotemplate::Watch>,
) -> Vec<Result<Value, InjectError>> {
    let mut overlays = Vec::with_capacity(templates.len());
    for (name, template) in templates
        .iter()
        .filter_map(|name| Some((name, config.template(name)?)))
    {
        let overlay = super::execute(name, template, data, watch).and_then(|text| parse_overlay(&text));
        let failed = overlay.is_err();
        overlays.push(overlay);
        if failed {
            break;
        }
    }
    overlays
}

/// The template data of `inputs` with `config`'s settings: Istio's `SidecarTemplateData`.
pub fn template_data(config: &CompiledConfig, inputs: &TemplateInputs) -> gotemplate::Value {
    let options = config.options();
    super::sidecar_template_data(super::TemplateInput {
        pod: inputs.pod.clone(),
        owner: inputs.owner.clone(),
        mesh: config.mesh_arc().clone(),
        proxy_config: inputs.proxy_config.clone(),
        values: config.template_values().for_render(),
        revision: options.revision.clone(),
        native_sidecars: options.native_sidecars,
        compliance_policy: options.compliance_policy.clone(),
        proxy_uid: options.proxy_uid,
        proxy_gid: options.proxy_gid,
        proxy_image: inputs.proxy_image.clone(),
        proxy_init_image: inputs.proxy_init_image.clone(),
    })
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

/// Functions whose result is not a function of their arguments: a template calling one is never
/// cached.
const NONDETERMINISTIC: &[&str] = &[
    "now",
    "ago",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randInt",
    "randBytes",
    "shuffle",
    "uuidv4",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
];

/// Whether a template's text calls none of the `NONDETERMINISTIC` functions (`now`,
/// `randAlphaNum`, ...). Conservative: the name anywhere as a word (even in a comment or a
/// string) counts as a call.
pub fn deterministic(template_text: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !template_text
        .split(|c: char| !is_word(c))
        .any(|word| NONDETERMINISTIC.contains(&word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_calling_clocks_or_randomness_are_not_cached() {
        assert!(deterministic("{{ .ObjectMeta.Name | quote }} {{ randomly }}"));
        assert!(!deterministic("{{ now | date \"2006\" }}"));
        assert!(!deterministic("{{ uuidv4 }}"));
        assert!(!deterministic("{{- $x := randAlphaNum 5 }}"));
    }

    #[test]
    fn a_rendered_template_may_repeat_a_key_and_the_last_one_wins() {
        // Istio's sidecar template renders a `sidecar.istio.io/userVolume` list entry with `name:`
        // twice; sigs.k8s.io/yaml keeps the last.
        let overlay = parse_overlay("spec:\n  volumes:\n  - name: \"0\"\n    emptyDir: {}\n    name: v\n")
            .expect("parses");
        assert_eq!(
            overlay,
            serde_json::json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
        );
        let error = parse_overlay("spec: [\n").expect_err("malformed");
        assert!(
            error.0.contains("failed to parse the rendered template"),
            "{}",
            error.0
        );
    }
}
