//! Stage 2, preparing: the pod decoded as Istio's webhook decodes it and its annotations checked,
//! then the inputs of the template data: what the templates see of a re-injected pod
//! ([`strip`]), the workload that owns it ([`owner`]), the effective ProxyConfig, the proxy
//! images ([`images`]), the cluster and network environment ([`cluster`], whose overwrite of the
//! injected env runs again in post-processing) and the templates selected.

pub mod cluster;
pub mod images;
pub mod owner;
pub mod strip;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::compiled::CompiledConfig;
use crate::decide::{own_namespace, selection, string_map, validate};
use crate::member::Members;
use crate::mesh::{PROXY_CONFIG_ANNOTATION, effective_proxy_config, validate_proxy_config};
use crate::pipeline::{InjectError, Request};
use crate::pod::{ContainerList, PROXY_CONTAINER, annotation, containers_mut, name_of};
use owner::Owner;

/// A pod ready to render and merge.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The pod as decoded (a Go round trip through `corev1.Pod`, unknown fields kept).
    pub pod: Arc<Value>,
    /// Its string annotations.
    pub annotations: BTreeMap<String, String>,
    /// What the templates are rendered from.
    pub inputs: TemplateInputs,
    /// The proxy's cluster and network environment (from the webhook's path and the values).
    pub proxy_envs: BTreeMap<String, String>,
    /// The templates to render, in order.
    pub templates: Vec<String>,
}

/// The per-pod inputs of the template data.
#[derive(Debug, Clone)]
pub struct TemplateInputs {
    /// The pod as the templates see it (a previous injection stripped; the decoded pod itself,
    /// shared, when there was none).
    pub pod: Arc<Value>,
    /// The owning workload (`.TypeMeta`, `.DeploymentMeta`).
    pub owner: Owner,
    /// The effective ProxyConfig: the mesh's default with the pod's annotation merged in.
    pub proxy_config: Arc<Value>,
    /// `.ProxyImage`.
    pub proxy_image: String,
    /// `.ProxyInitImage`.
    pub proxy_init_image: String,
}

/// Where the API server keeps field ownership, which Istio leaves out of the injection.
pub const MANAGED_FIELDS_POINTER: &str = "/metadata/managedFields";

/// The pod an admission sent, prepared as Istio's webhook prepares it: without `managedFields`,
/// with the request's namespace when it has none.
pub fn prepare(
    config: &CompiledConfig,
    received: &Value,
    request: &Request<'_>,
) -> Result<Prepared, InjectError> {
    let mut original = without_managed_fields(received);
    default_namespace(&mut original, request.namespace);
    prepare_pod(config, original, request)
}

/// A pod prepared for injection (Istio's `injectPod` up to the render).
pub fn prepare_pod(
    config: &CompiledConfig,
    pod: Value,
    request: &Request<'_>,
) -> Result<Prepared, InjectError> {
    let fail = |message: String| InjectError(format!("failed to run injection template: {message}"));
    let mut pod = crate::normalize::normalize_preserving_owned("v1/Pod", pod)
        .map_err(|e| InjectError(format!("failed to decode pod: {e}")))?;
    if config.options().openshift {
        clear_openshift_proxy_user(&mut pod);
    }
    let annotations = string_map(&pod, "annotations");
    let labels = string_map(&pod, "labels");
    validate::validate_annotations(annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| fail(e.to_string()))?;
    if let Some(text) = annotations.get(PROXY_CONFIG_ANNOTATION) {
        validate_proxy_config(text).map_err(|reason| {
            fail(format!(
                "1 error occurred:\n\t* invalid value '{text}' for annotation '{PROXY_CONFIG_ANNOTATION}': \
                 {reason}\n\n"
            ))
        })?;
    }
    let pod = Arc::new(pod);
    let inputs = template_inputs(config, &pod, request.owner.clone()).map_err(|e| fail(e.reason()))?;
    let mut proxy_envs = request.path_env.clone();
    cluster::resolve_cluster_and_network(config.values(), &labels, &mut proxy_envs);
    let kube_inject = config.options().kube_inject;
    let (defaults, aliases) = if kube_inject {
        (Vec::new(), BTreeMap::new())
    } else {
        (
            config.config().default_templates.clone(),
            config.config().aliases.clone(),
        )
    };
    let templates = selection::select_templates(
        annotations
            .get(selection::TEMPLATES_ANNOTATION)
            .map(String::as_str),
        &defaults,
        &aliases,
        config.templates(),
    )
    .map_err(|e| fail(e.to_string()))?;
    Ok(Prepared {
        pod,
        annotations,
        inputs,
        proxy_envs,
        templates,
    })
}

/// The template inputs of one pod on its own, for rendering a template outside an injection:
/// what the templates would see for that pod (no annotation checked).
pub fn template_inputs_for(config: &CompiledConfig, pod: &Value) -> Result<TemplateInputs, InjectError> {
    let pod = crate::normalize::normalize_preserving("v1/Pod", pod)
        .map_err(|e| InjectError(format!("failed to decode pod: {e}")))?;
    template_inputs(config, &Arc::new(pod), None).map_err(|e| match e {
        InputError::ProxyConfig(e) => InjectError(format!("the pod's {PROXY_CONFIG_ANNOTATION}: {e}")),
        InputError::Strip(e) => InjectError(format!("failed to strip a previous injection: {e}")),
    })
}

/// Which template input could not be derived (each caller words it its own way).
enum InputError {
    /// The `proxy.istio.io/config` annotation is not a valid ProxyConfig.
    ProxyConfig(String),
    /// A previous injection could not be stripped.
    Strip(String),
}

impl InputError {
    /// The reason, without the caller's context.
    fn reason(self) -> String {
        match self {
            InputError::ProxyConfig(reason) | InputError::Strip(reason) => reason,
        }
    }
}

/// The template inputs of a decoded pod; `owner` when the caller knows it, else Istio's owner
/// heuristic.
fn template_inputs(
    config: &CompiledConfig,
    pod: &Arc<Value>,
    owner: Option<Owner>,
) -> Result<TemplateInputs, InputError> {
    // Most pods have no ProxyConfig of their own: they share the mesh's.
    let proxy_config = match annotation(pod, PROXY_CONFIG_ANNOTATION) {
        None => config.mesh_proxy_config().clone(),
        Some(text) => Arc::new(
            effective_proxy_config(config.mesh(), Some(text))
                .map_err(|e| InputError::ProxyConfig(e.to_string()))?,
        ),
    };
    let owner = owner.unwrap_or_else(|| owner::owner_of(pod));
    // Most pods were never injected: the templates then see the pod itself (shared).
    let stripped = if strip::needs_strip(pod) {
        Arc::new(strip::strip_pod(pod, config.status_port()).map_err(|e| InputError::Strip(e.to_string()))?)
    } else {
        pod.clone()
    };
    let image_type = annotation(pod, images::PROXY_IMAGE_TYPE_ANNOTATION);
    let proxy_config_image_type = proxy_config
        .get("image")
        .filter(|i| i.is_object())
        .map(|image| image.get("imageType").and_then(Value::as_str).unwrap_or(""));
    Ok(TemplateInputs {
        proxy_image: images::proxy_image(config.values(), proxy_config_image_type, image_type),
        proxy_init_image: images::proxy_init_image(config.values(), image_type),
        proxy_config,
        owner,
        pod: stripped,
    })
}

/// A copy of the pod without `metadata.managedFields` (never copied only to be dropped: on a
/// pod made by a controller it is a good part of the object).
fn without_managed_fields(pod: &Value) -> Value {
    let Value::Object(root) = pod else {
        return pod.clone();
    };
    // The webhook's decoder leaves them out already: a plain copy keeps each map's hashes.
    if crate::pod::at(pod, &["metadata", "managedFields"]).is_none() {
        return pod.clone();
    }
    let copy = root
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::Object(metadata) if key == "metadata" => Value::Object(
                    metadata
                        .iter()
                        .filter(|(field, _)| *field != "managedFields")
                        .map(|(field, value)| (field.clone(), value.clone()))
                        .collect(),
                ),
                value => value.clone(),
            };
            (key.clone(), value)
        })
        .collect();
    Value::Object(copy)
}

fn default_namespace(pod: &mut Value, namespace: Option<&str>) {
    let Some(namespace) = namespace.filter(|n| !n.is_empty()) else {
        return;
    };
    if own_namespace(pod).is_some() {
        return;
    }
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.insert("namespace".to_owned(), namespace.into());
    }
}

/// On OpenShift every container gets the namespace's UID; a user `istio-proxy` with the same
/// `runAsUser` as the app (the last other container that sets one, 0 if none) would break traffic
/// interception, so its `runAsUser`/`runAsGroup` are cleared (Istio's webhook does the same).
fn clear_openshift_proxy_user(pod: &mut Value) {
    let user = |c: &Value| crate::pod::at(c, &["securityContext", "runAsUser"]).and_then(Value::as_i64);
    let istio = |c: &Value| matches!(name_of(c), PROXY_CONTAINER | "istio-validation" | "istio-init");
    let app_user = crate::pod::all_containers(pod)
        .filter(|c| !istio(c))
        .filter_map(user)
        .last()
        .unwrap_or(0);
    for list in [ContainerList::Containers, ContainerList::InitContainers] {
        let Some(proxy) =
            containers_mut(pod, list).and_then(|l| l.iter_mut().find(|c| name_of(c) == PROXY_CONTAINER))
        else {
            continue;
        };
        if user(proxy).unwrap_or(0) == app_user
            && let Some(context) = proxy.member_mut("securityContext").and_then(Value::as_object_mut)
        {
            context.shift_remove("runAsUser");
            context.shift_remove("runAsGroup");
        }
        return;
    }
}
