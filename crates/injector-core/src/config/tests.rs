//! Reading the injector configuration: both forms, Istio's leniency, and every error path.

use super::*;
use crate::decision::Policy;

fn load(text: &str) -> LoadedConfig {
    parse_injector_config(text).expect("valid configuration")
}

fn fail(text: &str) -> ConfigError {
    parse_injector_config(text).expect_err("invalid configuration")
}

const CONFIG_MAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio-sidecar-injector
  namespace: istio-system
data:
  values: '{"global": {"hub": "docker.io/istio"}}'
  config: |-
    policy: disabled
    alwaysInjectSelector:
      - matchLabels: {app: always}
    neverInjectSelector:
      - matchExpressions:
        - {key: openshift.io/build.name, operator: Exists}
    injectedAnnotations:
      example.com/injected: "yes"
    template: "{{ Template_Version_And_Istio_Version_Mismatched_Check_Installation }}"
    defaultTemplates: [sidecar]
    aliases:
      both: [sidecar, init]
    templates:
      sidecar: |
        spec: {}
      init: |
        spec: {}
"#;

#[test]
fn reads_the_whole_config_map() {
    let loaded = load(CONFIG_MAP);
    assert_eq!(
        loaded.source,
        ConfigSource::ConfigMap {
            name: "istio-system/istio-sidecar-injector".into()
        }
    );
    assert_eq!(
        loaded.values.as_deref(),
        Some(r#"{"global": {"hub": "docker.io/istio"}}"#)
    );
    let config = &loaded.config;
    assert_eq!(config.injection.policy, Policy::Disabled);
    assert_eq!(
        config.injection.always_inject_selector[0].to_string(),
        "app=always"
    );
    assert_eq!(
        config.injection.never_inject_selector[0].to_string(),
        "openshift.io/build.name"
    );
    assert_eq!(config.injected_annotations["example.com/injected"], "yes");
    assert_eq!(config.default_templates, ["sidecar"]);
    assert_eq!(config.aliases["both"], ["sidecar", "init"]);
    assert_eq!(config.templates.keys().collect::<Vec<_>>(), ["init", "sidecar"]);
    assert!(config.legacy_template.is_some());
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn reads_the_raw_config() {
    let loaded = load("policy: enabled\ntemplates:\n  sidecar: 'spec: {}'\n");
    assert_eq!(loaded.source, ConfigSource::Raw);
    assert_eq!(loaded.config.injection.policy, Policy::Enabled);
    assert_eq!(loaded.config.effective_default_templates(), ["sidecar"]);
}

#[test]
fn unknown_policy_is_kept_and_warned_about() {
    let loaded = load("policy: Enabled\ntemplates: {sidecar: x}\n");
    assert_eq!(loaded.config.injection.policy, Policy::Invalid("Enabled".into()));
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("\"Enabled\" is neither")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn missing_policy_means_no_injection() {
    let loaded = load("templates: {sidecar: x}\n");
    assert_eq!(loaded.config.injection.policy, Policy::Invalid(String::new()));
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("config.policy: not set")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn unknown_fields_are_errors_naming_the_closest_key() {
    let e = fail("policy: enabled\npolicies: disabled\ntemplates: {sidecar: x}\n");
    assert_eq!(e.location, "config.policies");
    assert!(
        e.message.starts_with("unknown field (did you mean `policy`?)"),
        "{e}"
    );
    let e = fail("policy: enabled\ndefaultTemplate: [sidecar]\ntemplates: {sidecar: x}\n");
    assert_eq!(e.location, "config.defaultTemplate");
    assert!(e.message.contains("did you mean `defaultTemplates`?"), "{e}");
    let e = fail("policy: enabled\nreplicas: 3\n");
    assert_eq!(e.location, "config.replicas");
    assert!(!e.message.contains("did you mean"), "{e}");
    // Inside a ConfigMap too.
    let e =
        fail("apiVersion: v1\nkind: ConfigMap\ndata:\n  config: |\n    policy: enabled\n    templtes: {}\n");
    assert_eq!(e.location, "data.config.templtes");
    assert!(e.message.contains("did you mean `templates`?"), "{e}");
}

#[test]
fn a_template_mapping_points_at_templates() {
    let e = fail("policy: enabled\ntemplate:\n  sidecar: |\n    spec: {}\n");
    assert_eq!(e.location, "config.template");
    assert!(e.message.contains("did you mean `templates:`"), "{e}");
}

#[test]
fn field_names_match_case_insensitively_with_a_warning() {
    let loaded = load("Policy: disabled\ntemplates: {sidecar: x}\n");
    assert_eq!(loaded.config.injection.policy, Policy::Disabled);
    assert!(
        loaded.warnings.iter().any(|w| w.contains("read as `policy`")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn undefined_default_template_is_warned_about() {
    let loaded = load("policy: enabled\ndefaultTemplates: [sidecar, extra]\ntemplates: {sidecar: x}\n");
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("template \"extra\" is not defined")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn empty_selectors_are_kept_and_warned_about() {
    let loaded = load("policy: enabled\nneverInjectSelector: [{}]\ntemplates: {sidecar: x}\n");
    assert!(loaded.config.injection.never_inject_selector[0].is_empty());
    assert!(
        loaded.warnings.iter().any(|w| w.contains("never matches")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn invalid_selector_names_the_field() {
    let e = fail(
        "policy: enabled\nalwaysInjectSelector:\n  - matchExpressions:\n    - {key: a, operator: Equals, values: [b]}\n",
    );
    assert_eq!(
        e.location,
        "config.alwaysInjectSelector[0].matchExpressions[0].operator"
    );
}

#[test]
fn wrong_types_name_the_field() {
    assert_eq!(fail("policy: true\n").location, "config.policy");
    assert_eq!(
        fail("policy: enabled\ntemplates: [a]\n").location,
        "config.templates"
    );
    assert_eq!(
        fail("policy: enabled\ntemplates: {sidecar: 3}\n").location,
        "config.templates.sidecar"
    );
    assert_eq!(
        fail("policy: enabled\ndefaultTemplates: sidecar\n").location,
        "config.defaultTemplates"
    );
    assert_eq!(
        fail("policy: enabled\naliases: {a: [1]}\n").location,
        "config.aliases.a[0]"
    );
    assert_eq!(
        fail("policy: enabled\ninjectedAnnotations: {a: {b: c}}\n").location,
        "config.injectedAnnotations.a"
    );
    assert_eq!(fail("- policy\n").location, "config");
}

#[test]
fn config_map_without_config_is_an_error() {
    let e = fail("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {values: '{}'}\n");
    assert_eq!(e.location, "data.config");
    assert!(e.message.contains("has no `config` key (it has: values)"), "{e}");
    assert_eq!(
        fail("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").location,
        "data"
    );
    assert_eq!(
        fail("apiVersion: v1\nkind: ConfigMap\ndata: {config: 'policy: [\n'}\n").location,
        "data.config"
    );
}

#[test]
fn other_kinds_and_streams_are_errors() {
    assert_eq!(fail("apiVersion: v1\nkind: Secret\n").location, "kind");
    assert_eq!(
        fail("policy: enabled\n---\npolicy: disabled\n").location,
        "document 2"
    );
    assert_eq!(fail("").location, "(file)");
    assert!(fail("policy: [\n").location.starts_with("document 1"));
}

#[test]
fn bare_templates_are_read_as_the_sidecar_template() {
    let loaded = parse_injector_config_or_template("spec:\n  containers:\n  - name: istio-proxy\n")
        .expect("a template");
    assert_eq!(loaded.config.templates.keys().collect::<Vec<_>>(), ["sidecar"]);
    assert_eq!(loaded.config.injection.policy, Policy::Enabled);
    let config = parse_injector_config_or_template("templates:\n  sidecar: x\n").expect("a config");
    assert_eq!(config.config.templates["sidecar"], "x");
}

fn fail_either(text: &str) -> ConfigError {
    parse_injector_config_or_template(text).expect_err("neither a configuration nor a template")
}

/// The shapes of a broken file that were once read as a "template" (and then failed every
/// injection): each is now an error saying where.
#[test]
fn a_broken_configuration_is_never_read_as_a_template() {
    // Invalid YAML (the reproduction of the issue): the parser's line is in the message.
    let e = fail_either("policy: [enabled\n  templates: {\n");
    assert!(e.location.starts_with("document 1"), "{e}");
    assert!(e.message.contains("line"), "{e}");
    // A typo'd key.
    let e = fail_either("policy: enabled\ntemplate:\n  sidecar: |\n    spec: {}\n");
    assert_eq!(e.location, "config.template");
    let e = fail_either("polcy: enabled\ntemplates:\n  sidecar: 'spec: {}'\n");
    assert_eq!(e.location, "config.polcy");
    // Truncated in a flow mapping, and in a block scalar of a ConfigMap.
    let e = fail_either(
        "policy: enabled\ntemplates: {sidecar: \"spec: {containers: [{name: istio-proxy, image: '{{ .Values",
    );
    assert!(e.location.starts_with("document 1"), "{e}");
    let e = fail_either(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector}\ndata:\n  config: \"policy: enabled\\ntempl",
    );
    assert!(e.location.starts_with("document 1"), "{e}");
    // Neither a configuration nor a pod overlay.
    let e = fail_either("hello: world\n");
    assert_eq!(e.location, "hello");
    assert!(e.message.contains("unknown top-level key"), "{e}");
    // Empty.
    assert_eq!(fail_either("").location, "(file)");
}
