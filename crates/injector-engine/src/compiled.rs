//! The compiled configuration: everything an injection needs besides the pod, parsed and
//! converted once. Immutable: a configuration reload compiles a new one (and the server's
//! configuration store swaps it in whole); caches tell configurations apart by [`CompiledConfig::id`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use gotemplate::Template;
use injector_core::config::InjectorConfig;
use serde_json::Value;

/// Settings that do not come from the configuration files.
#[derive(Debug, Clone)]
pub struct Options {
    /// The injector's revision (`.Revision`; `default` in Istio's chart, `""` for kube-inject).
    pub revision: String,
    /// Whether native sidecars are enabled (`.NativeSidecars`).
    pub native_sidecars: bool,
    /// `.CompliancePolicy` (e.g. `fips-140-3`).
    pub compliance_policy: String,
    /// The proxy's UID and GID (`.ProxyUID`, `.ProxyGID`).
    pub proxy_uid: i64,
    /// See `proxy_uid`.
    pub proxy_gid: i64,
    /// Whether the template pod and merges follow kube-inject (no injected annotations, no aliases).
    pub kube_inject: bool,
    /// OpenShift (`PLATFORM=openshift`): a user `istio-proxy` running as the same user as the app
    /// (OpenShift assigns one UID to every container) has that user cleared before injection.
    pub openshift: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            revision: "default".to_owned(),
            native_sidecars: true,
            compliance_policy: String::new(),
            proxy_uid: 1337,
            proxy_gid: 1337,
            kube_inject: false,
            openshift: false,
        }
    }
}

/// A configuration whose templates cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template {name:?}: {message}")]
pub struct TemplateError {
    /// The template's name.
    pub name: String,
    /// The parse error, in Go's words.
    pub message: String,
}

/// The injector configuration, values and mesh config, with the templates parsed.
pub struct CompiledConfig {
    id: u64,
    config: InjectorConfig,
    templates: BTreeMap<String, Template>,
    values: Value,
    /// `values` converted once for the templates (copied per render if they may write into it).
    template_values: crate::render::TemplateValues,
    /// Shared with every render's template data (never copied per pod).
    mesh: Arc<Value>,
    /// The ProxyConfig of every pod without the `proxy.istio.io/config` annotation (shared).
    mesh_proxy_config: Arc<Value>,
    options: Options,
    /// The templates that call no clock or randomness: their renders may be cached.
    deterministic: BTreeSet<String>,
}

impl std::fmt::Debug for CompiledConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledConfig")
            .field("id", &self.id)
            .field("templates", &self.templates.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// kube-inject decides with policy `enabled` and no selectors.
static KUBE_INJECT_CONFIG: LazyLock<InjectorConfig> = LazyLock::new(InjectorConfig::default);

impl CompiledConfig {
    /// Parses every template with Istio's function map. Every template must parse (Istio fails
    /// the whole configuration otherwise).
    pub fn new(
        config: InjectorConfig,
        values: Value,
        mesh: Value,
        options: Options,
    ) -> Result<Self, TemplateError> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let mut templates = BTreeMap::new();
        for (name, text) in &config.templates {
            let owned = crate::owned_env::owned_env(&options);
            let template = crate::render::parse_template_owning(text, owned).map_err(|e| TemplateError {
                name: name.clone(),
                message: e.to_string(),
            })?;
            templates.insert(name.clone(), template);
        }
        let deterministic = config
            .templates
            .iter()
            .filter(|(_, text)| crate::render::deterministic(text))
            .map(|(name, _)| name.clone())
            .collect();
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            template_values: crate::render::TemplateValues::new(&values, templates.values()),
            mesh_proxy_config: Arc::new(crate::mesh::mesh_proxy_config(&mesh)),
            mesh: Arc::new(mesh),
            config,
            templates,
            values,
            options,
            deterministic,
        })
    }

    /// What tells this configuration from every other one compiled by this process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The injector configuration.
    pub fn config(&self) -> &InjectorConfig {
        &self.config
    }

    /// The values the templates see (`.Values`).
    pub fn values(&self) -> &Value {
        &self.values
    }

    /// The mesh configuration.
    pub fn mesh(&self) -> &Value {
        &self.mesh
    }

    /// The settings that do not come from the files.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The parsed template named `name`.
    pub(crate) fn template(&self, name: &str) -> Option<&Template> {
        self.templates.get(name)
    }

    /// The parsed templates by name.
    pub(crate) fn templates(&self) -> &BTreeMap<String, Template> {
        &self.templates
    }

    /// The values as the templates get them.
    pub(crate) fn template_values(&self) -> &crate::render::TemplateValues {
        &self.template_values
    }

    /// The mesh config, shared.
    pub(crate) fn mesh_arc(&self) -> &Arc<Value> {
        &self.mesh
    }

    /// The ProxyConfig of a pod without a `proxy.istio.io/config` annotation, shared.
    pub(crate) fn mesh_proxy_config(&self) -> &Arc<Value> {
        &self.mesh_proxy_config
    }

    /// Whether every one of `templates` that exists calls no clock or randomness.
    pub(crate) fn deterministic(&self, templates: &[String]) -> bool {
        templates
            .iter()
            .all(|name| !self.templates.contains_key(name) || self.deterministic.contains(name))
    }

    /// The configuration the injection decision reads (kube-inject: policy `enabled`, no
    /// selectors).
    pub(crate) fn decision_config(&self) -> &InjectorConfig {
        if self.options.kube_inject {
            &KUBE_INJECT_CONFIG
        } else {
            &self.config
        }
    }

    /// The mesh's `defaultConfig.statusPort` (15020 when unset).
    pub(crate) fn status_port(&self) -> i64 {
        crate::pod::at(&self.mesh, &["defaultConfig", "statusPort"])
            .and_then(Value::as_i64)
            .unwrap_or(15020)
    }
}
