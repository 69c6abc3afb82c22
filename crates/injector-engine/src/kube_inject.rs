//! Manual injection of manifests, like `istioctl kube-inject` (Istio's `IntoResourceFile` and
//! `IntoObject`).
//!
//! The stream is cut into documents the way Kubernetes' YAML reader cuts it. A document whose
//! `apiVersion`/`kind` is not an injectable workload (a Service, an old `extensions/v1beta1`
//! Deployment, a comment) is written back **byte for byte**. A workload is decoded as its Go type
//! would decode it, its pod template is injected, and it is printed as `sigs.k8s.io/yaml` prints
//! it; `kind: List` items are handled one by one. Every document is followed by `---`. Skipped
//! workloads (host network, injection disabled) are printed too, and reported as warnings.
//!
//! [`inject_stream_each`] hands each output document to the caller as soon as it is ready, so a
//! large stream is never held twice (the CLI writes it to a temporary file it puts in place only
//! once the whole stream succeeded); [`inject_stream`] collects it into one string.

use serde_json::{Map, Value};

use crate::{
    CompiledConfig,
    decide::decide,
    normalize::{normalize, root_for},
    pipeline::{Outcome, Request},
    prepare::owner::{Owner, owner_of},
};

/// The result of injecting a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeInjectOutput {
    /// The injected stream.
    pub text: String,
    /// `===> Skipping injection because …` messages, one per skipped workload.
    pub warnings: Vec<String>,
}

/// A stream that cannot be injected, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {document}{}: {message}", .object.as_ref().map(|o| format!(" ({o})")).unwrap_or_default())]
pub struct KubeInjectError {
    /// The document's position in the stream, from 1.
    pub document: usize,
    /// `Kind namespace/name` of the object, when known.
    pub object: Option<String>,
    /// What went wrong.
    pub message: String,
}

/// Why [`inject_stream_each`] stopped.
#[derive(Debug)]
pub enum StreamError<E> {
    /// A document could not be injected.
    Inject(KubeInjectError),
    /// The caller's sink refused a document.
    Sink(E),
}

/// Injects every workload of a YAML stream.
pub fn inject_stream(injector: &CompiledConfig, stream: &str) -> Result<KubeInjectOutput, KubeInjectError> {
    let mut text = String::new();
    let warnings = inject_stream_each(injector, stream, |document| {
        text.push_str(document);
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|error| match error {
        StreamError::Inject(error) => error,
        StreamError::Sink(never) => match never {},
    })?;
    Ok(KubeInjectOutput { text, warnings })
}

/// Injects every workload of a YAML stream, document by document, calling `sink` with each
/// output document (its text followed by `---\n`) as soon as it is ready. Returns the warnings
/// (skipped workloads). On an error, the documents before it have been handed to `sink`: the
/// caller decides whether to keep them (the CLI does not).
pub fn inject_stream_each<E>(
    injector: &CompiledConfig,
    stream: &str,
    mut sink: impl FnMut(&str) -> Result<(), E>,
) -> Result<Vec<String>, StreamError<E>> {
    let documents = injector_core::yaml::split_documents(stream).map_err(|e| {
        StreamError::Inject(KubeInjectError {
            document: e.index,
            object: None,
            message: e.message,
        })
    })?;
    let mut warnings = Vec::new();
    let mut buffer = String::new();
    // Kubernetes' YAML reader keeps a separator line that ends an empty document as the start of
    // the next one, so `---` at the top of a stream (or twice in a row) is written back.
    let mut carried = "";
    for (position, document) in documents.iter().enumerate() {
        let raw = if carried.is_empty() {
            std::borrow::Cow::Borrowed(document.text)
        } else {
            std::borrow::Cow::Owned(format!("{carried}{}", document.text))
        };
        if document.text.is_empty() && carried.is_empty() {
            carried = documents
                .get(position + 1)
                .map_or("", |next| separator_between(stream, document.text, next.text));
            continue;
        }
        carried = "";
        let fail = |object: Option<String>, message: String| {
            StreamError::Inject(KubeInjectError {
                document: document.index,
                object,
                message,
            })
        };
        let value = if document.is_blank() {
            Value::Null
        } else {
            document.parse().map_err(|e| fail(None, e.message))?
        };
        let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        buffer.clear();
        match root_for(api_version, kind) {
            None => buffer.push_str(&raw),
            Some(root) => {
                let described = describe(&value);
                let injected = into_object(injector, root, &value, &mut warnings)
                    .map_err(|message| fail(Some(described), message))?;
                drop(value);
                buffer.push_str(&goyaml::to_string(&injected));
            }
        }
        buffer.push_str("---\n");
        sink(&buffer).map_err(StreamError::Sink)?;
    }
    Ok(warnings)
}

/// The separator line between two documents of `stream` (both slices of it).
fn separator_between<'a>(stream: &'a str, before: &str, after: &str) -> &'a str {
    let offset = |part: &str| (part.as_ptr() as usize).saturating_sub(stream.as_ptr() as usize);
    stream
        .get(offset(before) + before.len()..offset(after))
        .unwrap_or_default()
}

/// Injects one object (Istio's `IntoObject`): a List item by item, or a workload's pod template.
fn into_object(
    injector: &CompiledConfig,
    root: &str,
    value: &Value,
    warnings: &mut Vec<String>,
) -> Result<Value, String> {
    let mut object = normalize(root, value).map_err(|e| e.to_string())?;
    if root == "v1/List" {
        let items = value
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let api_version = item.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
            match root_for(api_version, kind).filter(|r| *r != "v1/List") {
                Some(item_root) => out.push(into_object(injector, item_root, &item, warnings)?),
                None => out.push(item),
            }
        }
        if let Some(map) = object.as_object_mut() {
            map.insert("items".to_owned(), Value::Array(out));
        }
        return Ok(object);
    }

    let (metadata_path, spec_path): (&[&str], &[&str]) = match root {
        "batch/v1/CronJob" => (
            &["spec", "jobTemplate", "metadata"],
            &["spec", "jobTemplate", "spec", "template", "spec"],
        ),
        "v1/Pod" => (&["metadata"], &["spec"]),
        _ => (&["spec", "template", "metadata"], &["spec", "template", "spec"]),
    };
    if root != "v1/Pod"
        && root != "batch/v1/CronJob"
        && get(&object, &["spec", "template"]).is_none_or(Value::is_null)
    {
        return Err("spec.template is required value".to_owned());
    }
    let metadata = get(&object, metadata_path)
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let spec = get(&object, spec_path)
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));

    let workload = get(&object, &["metadata"]).cloned().unwrap_or(Value::Null);
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let owner = if root == "v1/Pod" {
        owner_of(&object)
    } else {
        Owner {
            api_version: text(&object, "apiVersion"),
            kind: text(&object, "kind"),
            name: text(&workload, "name"),
            namespace: text(&workload, "namespace"),
        }
    };
    let name = Some(text(&metadata, "name"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| owner.name.clone());
    let full_name = if owner.namespace.is_empty() {
        name
    } else {
        format!("{}/{name}", owner.namespace)
    };
    // Istio names a pod by the workload `GetDeployMetaFromPod` guesses (a ReplicaSet's pod is its
    // Deployment's), every other object by its own kind.
    let kind = owner.kind.clone();
    let subject = if kind.is_empty() {
        format!("{full_name:?}")
    } else {
        format!("{kind} {full_name:?}")
    };

    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        warnings.push(format!(
            "===> Skipping injection because {subject} has host networking enabled\n"
        ));
        return Ok(object);
    }
    // Istio applies the pod's ProxyConfig to the mesh config before deciding, so a malformed one
    // fails even a workload that is not injected.
    if let Some(text) = metadata
        .pointer("/annotations")
        .and_then(|a| a.get(crate::mesh::PROXY_CONFIG_ANNOTATION))
        .and_then(Value::as_str)
    {
        crate::mesh::effective_proxy_config(injector.mesh(), Some(text))
            .map_err(|e| format!("could not parse proxy config: {}", e.0))?;
    }
    let pod = serde_json::json!({"metadata": metadata, "spec": spec});
    if !decide(&pod, &injector_core::config::InjectorConfig::default()).inject {
        warnings.push(format!(
            "===> Skipping injection because {subject} has sidecar injection disabled\n"
        ));
        return Ok(object);
    }
    let request = Request {
        pod: Some(&pod),
        namespace: None,
        path_env: Default::default(),
        owner: Some(owner),
        deadline: None,
    };
    let injected = match injector.inject(&request).map_err(|e| e.0)? {
        Outcome::Injected { pod, .. } => pod,
        Outcome::Skipped { .. } => return Ok(object),
    };
    let mut injected_metadata = injected.get("metadata").cloned().unwrap_or(Value::Null);
    keep_managed_fields(&metadata, &mut injected_metadata);
    set(&mut object, metadata_path, injected_metadata);
    set(
        &mut object,
        spec_path,
        injected.get("spec").cloned().unwrap_or(Value::Null),
    );
    normalize(root, &object).map_err(|e| e.to_string())
}

/// The webhook injects a pod without its `managedFields` (the API server keeps them apart), but
/// `kube-inject` applies the patch to the object as read, so they stay: puts the original's back.
fn keep_managed_fields(original: &Value, injected: &mut Value) {
    let Some(managed_fields) = original.get("managedFields") else {
        return;
    };
    if let Some(metadata) = injected.as_object_mut() {
        metadata.insert("managedFields".to_owned(), managed_fields.clone());
    }
}

fn describe(value: &Value) -> String {
    injector_core::object::ObjectRef::of(value)
        .map(|r| r.to_string())
        .unwrap_or_default()
}

fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |current, key| current.get(key))
}

fn set(value: &mut Value, path: &[&str], new: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = value;
    for key in parents {
        let Some(map) = current.as_object_mut() else {
            return;
        };
        current = map
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(map) = current.as_object_mut() {
        map.insert((*last).to_owned(), new);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Options, mesh::default_mesh_config};

    fn injector() -> CompiledConfig {
        let mut config = injector_core::config::InjectorConfig::default();
        config.templates.insert(
            "sidecar".to_owned(),
            "spec:\n  containers:\n  - name: istio-proxy\n    image: proxy:1\n".to_owned(),
        );
        let options = Options {
            kube_inject: true,
            revision: String::new(),
            native_sidecars: false,
            ..Options::default()
        };
        CompiledConfig::new(config, json!({}), default_mesh_config(), options).expect("parses")
    }

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n";

    #[test]
    fn other_documents_pass_through_byte_for_byte() {
        let stream = format!(
            "# a comment\napiVersion: v1\nkind: Service\nmetadata:   {{name: web}}\n---\n{DEPLOYMENT}"
        );
        let output = inject_stream(&injector(), &stream).expect("injects");
        assert!(
            output
                .text
                .starts_with("# a comment\napiVersion: v1\nkind: Service\nmetadata:   {name: web}\n---\n"),
            "{}",
            output.text
        );
        assert!(output.text.ends_with("---\n"));
        assert!(
            output
                .text
                .contains("  - image: proxy:1\n        name: istio-proxy\n"),
            "{}",
            output.text
        );
        assert!(
            output.text.contains("sidecar.istio.io/status:"),
            "{}",
            output.text
        );
        assert!(
            output.text.contains("strategy: {}"),
            "Go zero values are printed: {}",
            output.text
        );
        assert!(output.warnings.is_empty());
    }

    #[test]
    fn skips_are_reported_and_the_object_is_still_printed() {
        let disabled = DEPLOYMENT.replace(
            "labels: {app: web}\n    spec:",
            "labels: {app: web}\n      annotations: {sidecar.istio.io/inject: \"false\"}\n    spec:",
        );
        let output = inject_stream(&injector(), &disabled).expect("skips");
        assert_eq!(
            output.warnings,
            ["===> Skipping injection because Deployment \"web\" has sidecar injection disabled\n"]
        );
        assert!(!output.text.contains("istio-proxy"));
        assert!(output.text.contains("resources: {}"));
        let host = DEPLOYMENT.replace(
            "    spec:\n      containers:",
            "    spec:\n      hostNetwork: true\n      containers:",
        );
        let output = inject_stream(&injector(), &host).expect("skips");
        assert_eq!(
            output.warnings,
            ["===> Skipping injection because Deployment \"web\" has host networking enabled\n"]
        );
    }

    const POD_OF_A_REPLICA_SET: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-5d8f7c9b4-\n  namespace: shop\n  labels: {app: web, pod-template-hash: 5d8f7c9b4}\n  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7c9b4, uid: u1, controller: true}\n  managedFields:\n  - manager: kube-controller-manager\n    operation: Update\n    apiVersion: v1\n    time: \"2026-07-01T10:00:00Z\"\n    fieldsType: FieldsV1\n    fieldsV1: {f:metadata: {f:generateName: {}}}\nspec:\n  containers:\n  - name: web\n    image: nginx\n";

    #[test]
    fn a_bare_pod_keeps_its_managed_fields() {
        let output = inject_stream(&injector(), POD_OF_A_REPLICA_SET).expect("injects");
        assert!(output.text.contains("name: istio-proxy"), "{}", output.text);
        assert!(
            output.text.contains(
                "  managedFields:\n  - apiVersion: v1\n    fieldsType: FieldsV1\n    fieldsV1:\n      f:metadata:\n        f:generateName: {}\n    manager: kube-controller-manager\n    operation: Update\n    time: \"2026-07-01T10:00:00Z\"\n"
            ),
            "{}",
            output.text
        );
    }

    #[test]
    fn a_skipped_pod_is_named_after_the_workload_istio_guesses() {
        let disabled = POD_OF_A_REPLICA_SET.replace(
            "  namespace: shop\n",
            "  namespace: shop\n  annotations: {sidecar.istio.io/inject: \"false\"}\n",
        );
        let output = inject_stream(&injector(), &disabled).expect("skips");
        assert_eq!(
            output.warnings,
            ["===> Skipping injection because Deployment \"shop/web\" has sidecar injection disabled\n"]
        );
        let named = disabled.replace(
            "  generateName: web-5d8f7c9b4-\n",
            "  generateName: web-5d8f7c9b4-\n  name: web-5d8f7c9b4-x2x7q\n",
        );
        let output = inject_stream(&injector(), &named).expect("skips");
        assert_eq!(
            output.warnings,
            [
                "===> Skipping injection because Deployment \"shop/web-5d8f7c9b4-x2x7q\" has sidecar injection disabled\n"
            ]
        );
        let bare = "apiVersion: v1\nkind: Pod\nmetadata: {name: solo, annotations: {sidecar.istio.io/inject: \"false\"}}\nspec: {containers: [{name: a, image: a}]}\n";
        let output = inject_stream(&injector(), bare).expect("skips");
        assert_eq!(
            output.warnings,
            ["===> Skipping injection because Pod \"solo\" has sidecar injection disabled\n"]
        );
    }

    #[test]
    fn a_malformed_proxy_config_fails_even_a_skipped_workload() {
        // Istio's IntoObject applies the annotation to the mesh config before deciding.
        let disabled = DEPLOYMENT.replace(
            "labels: {app: web}\n    spec:",
            "labels: {app: web}\n      annotations: {sidecar.istio.io/inject: \"false\", proxy.istio.io/config: \"concurrency: [\"}\n    spec:",
        );
        let error = inject_stream(&injector(), &disabled).expect_err("malformed");
        assert!(
            error.message.starts_with("could not parse proxy config: "),
            "{error}"
        );
        let unknown = disabled.replace("concurrency: [", "concurrency: 3\\nnoSuchField: 1");
        let output = inject_stream(&injector(), &unknown).expect("unknown fields are dropped");
        assert_eq!(output.warnings.len(), 1, "{:?}", output.warnings);
    }

    #[test]
    fn a_separator_after_an_empty_document_is_written_back() {
        // Kubernetes' YAML reader makes it part of the next document, so istioctl prints it.
        let stream = "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n--- # two\n---\nx: 1\n---\n";
        let output = inject_stream(&injector(), stream).expect("injects");
        assert_eq!(
            inject_stream(&injector(), "---\n---\n").expect("empty").text,
            "---\n---\n"
        );
        assert_eq!(
            output.text,
            "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n---\nx: 1\n---\n"
        );
    }

    #[test]
    fn lists_are_injected_item_by_item() {
        let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers: [{name: app, image: a}]\n";
        let output = inject_stream(&injector(), list).expect("injects");
        assert!(output.text.contains("name: istio-proxy"), "{}", output.text);
        assert!(output.text.contains("kind: Service"), "{}", output.text);
    }

    #[test]
    fn errors_name_the_document() {
        let error = inject_stream(&injector(), "apiVersion: v1\nkind: Service\n---\napiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec: {}\n")
            .expect_err("no template");
        assert_eq!(error.document, 2);
        assert!(
            error.to_string().contains("spec.template is required value"),
            "{error}"
        );
        let error = inject_stream(&injector(), "a: [\n").expect_err("bad yaml");
        assert_eq!(error.document, 1);
    }
}
