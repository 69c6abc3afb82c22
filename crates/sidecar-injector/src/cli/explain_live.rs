//! Live `explain`: the workload (`TYPE/NAME`, or `-f FILE`), its namespace, the revision's
//! webhook configurations and the injector ConfigMap are read from the cluster, and the same
//! explanation as offline is made from them. For a Pod that exists, it also says whether it
//! *was* injected (its `sidecar.istio.io/status` annotation: by which revision, which
//! containers) and whether what it carries differs from what the current configuration would
//! inject now.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use injector_core::{
    config::{InjectorConfig, parse_injector_config},
    explain::{ConfigOrigin, Context as ExplainContext, Explanation, Webhooks, explain},
    gate::{NamespaceFacts, WebhookConfiguration},
    workload::{self, PodTemplate},
};
use injector_engine::{CompiledConfig, Options, Request, post::status::parse_status};
use injector_kube::live_explain::{self, LiveContext};
use serde::Serialize;
use serde_json::Value;

use super::{explain::ExplainArgs, input};

/// What was read from the cluster, and what an existing pod carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFacts {
    /// The revision explained (`--revision`, else the namespace's `istio.io/rev`, else `default`).
    pub revision: String,
    /// The webhook configurations of that revision found in the cluster.
    pub webhook_configurations: Vec<String>,
    /// `namespace/name` of the injector ConfigMap used, or `null` when it does not exist.
    pub injector_config_map: Option<String>,
    /// For a Pod read from the cluster: what it carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodState>,
}

/// What an existing pod carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// Whether it was injected (it has the status annotation).
    pub injected: bool,
    /// The revision that injected it (from the status annotation).
    pub revision: Option<String>,
    /// The injected containers and init containers (from the status annotation).
    pub injected_containers: Vec<String>,
    /// The templates that apply to it (`inject.istio.io/templates`, else the configuration's defaults).
    pub templates: Vec<String>,
    /// Whether it matches what the current configuration would inject (`null`: not compared).
    pub up_to_date: Option<bool>,
    /// How it differs.
    pub differences: Vec<String>,
}

/// Runs live `explain`: returns each explanation with its cluster facts.
pub fn explain_live(args: &ExplainArgs) -> Result<Vec<(Explanation, ClusterFacts)>> {
    if args.webhook.is_some() || args.injector_config.is_some() || args.show_patch {
        bail!(
            "--webhook, --injector-config and --show-patch are for files; against a cluster the webhooks and the ConfigMap are read from it"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let client = injector_kube::client::command_client(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            std::time::Duration::from_secs(10),
        )
        .await
        .map_err(|e| anyhow!("{e}"))?;
        let default_namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned());
        let objects = match (&args.target, &args.file) {
            (Some(target), _) => {
                let (kind_text, name) = target
                    .split_once('/')
                    .ok_or_else(|| anyhow!("{target}: expected TYPE/NAME, e.g. deployment/web or pod/web-0"))?;
                let kind = live_explain::kind_of(kind_text).ok_or_else(|| {
                    anyhow!("{kind_text}: explain reads pod, deployment, statefulset, daemonset, replicaset, job or cronjob")
                })?;
                vec![live_explain::workload(&client, kind, &default_namespace, name)
                    .await
                    .map_err(|e| anyhow!("{e}"))?]
            }
            (None, Some(path)) => {
                let source = input::read_source(path)?;
                input::objects(&source)?.into_iter().map(|o| o.value).collect()
            }
            (None, None) => bail!("give TYPE/NAME or -f FILE"),
        };
        let mut namespaces: BTreeMap<String, Value> = BTreeMap::new();
        let mut contexts: BTreeMap<String, LiveContext> = BTreeMap::new();
        let mut results = Vec::new();
        let from_cluster = args.target.is_some();
        for object in objects {
            let Some(mut template) = workload::pod_template(&object).map_err(|e| anyhow!("{e}"))? else {
                eprintln!(
                    "note: {}: not a workload with a pod template; skipped",
                    injector_core::terminal::escape(&describe(&object))
                );
                continue;
            };
            let namespace = template.owner.namespace.clone().unwrap_or_else(|| default_namespace.clone());
            template.owner.namespace = Some(namespace.clone());
            if !namespaces.contains_key(&namespace) {
                let value = live_explain::namespace(&client, &namespace).await.map_err(|e| anyhow!("{e}"))?;
                namespaces.insert(namespace.clone(), value);
            }
            let namespace_object = &namespaces[&namespace];
            let facts = NamespaceFacts::from_object(namespace_object).map_err(|e| anyhow!("namespace {namespace}: {e}"))?;
            let revision = args
                .revision
                .clone()
                .or_else(|| facts.labels.get("istio.io/rev").cloned())
                .unwrap_or_else(|| "default".to_owned());
            if !contexts.contains_key(&revision) {
                let context = live_explain::context(&client, namespace_object.clone(), &revision, &args.injector_namespace)
                    .await
                    .map_err(|e| anyhow!("{e}"))?;
                contexts.insert(revision.clone(), context);
            }
            let context = &contexts[&revision];
            let pod = (from_cluster && template.kind == workload::WorkloadKind::Pod).then_some(&object);
            results.push(explain_one(&template, &facts, context, &revision, pod)?);
        }
        if results.is_empty() {
            bail!("no workload with a pod template to explain");
        }
        Ok(results)
    })
}

fn describe(object: &Value) -> String {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    format!("{} {}", text("/kind"), text("/metadata/name"))
}

/// The explanation of one workload from what was read.
fn explain_one(
    template: &PodTemplate,
    namespace: &NamespaceFacts,
    context: &LiveContext,
    revision: &str,
    pod: Option<&Value>,
) -> Result<(Explanation, ClusterFacts)> {
    let configurations: Vec<WebhookConfiguration> = context
        .webhooks
        .iter()
        .map(|v| WebhookConfiguration::from_object(v).map_err(|e| anyhow!("{e}")))
        .collect::<Result<_>>()?;
    let configmap_name = format!("{}/{}", context.names.namespace, context.names.injector);
    let config_text = context
        .injector_configmap
        .as_ref()
        .and_then(|c| c.data.as_ref()?.get("config").cloned());
    let (config, origin, mut warnings) = match &config_text {
        Some(text) => {
            let loaded = parse_injector_config(text)
                .map_err(|e| anyhow!("ConfigMap {configmap_name} data.config: {e}"))?;
            let warnings: Vec<String> = loaded
                .warnings
                .iter()
                .map(|w| format!("ConfigMap {configmap_name}: {w}"))
                .collect();
            (
                loaded.config,
                ConfigOrigin::ConfigMap(configmap_name.clone()),
                warnings,
            )
        }
        None => (
            InjectorConfig::default(),
            ConfigOrigin::IstioDefaults,
            vec![format!(
                "ConfigMap {configmap_name} {}: Istio's defaults assumed (policy enabled)",
                if context.injector_configmap.is_some() {
                    "has no data.config"
                } else {
                    "does not exist"
                }
            )],
        ),
    };
    if configurations.is_empty() {
        warnings.push(format!(
            "no MutatingWebhookConfiguration of revision {revision} in the cluster (istio-sidecar-injector{} or labelled istio.io/rev={revision}): the API server calls no injector",
            if revision == "default" { String::new() } else { format!("-{revision}") }
        ));
    }
    let mut explanation = explain(
        template,
        ExplainContext {
            namespace: Some(namespace),
            webhooks: Webhooks::Given(&configurations),
            config: &config,
            origin: &origin,
        },
    );
    explanation.warnings.extend(warnings);
    let pod_state = pod.map(|pod| pod_state(pod, context, revision, &config, explanation.injected));
    Ok((
        explanation,
        ClusterFacts {
            revision: revision.to_owned(),
            webhook_configurations: context.webhook_names.clone(),
            injector_config_map: context.injector_configmap.as_ref().map(|_| configmap_name),
            pod: pod_state,
        },
    ))
}

/// What an existing pod carries, compared with what the current configuration injects.
fn pod_state(
    pod: &Value,
    context: &LiveContext,
    revision: &str,
    config: &InjectorConfig,
    would_inject: bool,
) -> PodState {
    let status_text = pod
        .pointer("/metadata/annotations/sidecar.istio.io~1status")
        .and_then(Value::as_str);
    let status = status_text.and_then(|text| serde_json::from_str::<Value>(text).ok());
    let previous = status_text.map(parse_status).unwrap_or_default();
    let templates = pod
        .pointer("/metadata/annotations/inject.istio.io~1templates")
        .and_then(Value::as_str)
        .map(|t| t.split(',').map(|s| s.trim().to_owned()).collect())
        .unwrap_or_else(|| config.effective_default_templates());
    let injected = status.is_some();
    let mut state = PodState {
        injected,
        revision: status
            .as_ref()
            .and_then(|s| s.get("revision"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        injected_containers: [
            previous.init_containers.as_slice(),
            previous.containers.as_slice(),
        ]
        .concat(),
        templates,
        up_to_date: None,
        differences: Vec::new(),
    };
    if !injected {
        if would_inject {
            state.up_to_date = Some(false);
            state.differences.push(
                "not injected, but the current configuration would inject it: it was created before the webhook applied to it (recreate it)".to_owned(),
            );
        }
        return state;
    }
    if !would_inject {
        state.up_to_date = Some(false);
        state.differences.push(
            "injected, but the current configuration would not inject it (see the verdict above)".to_owned(),
        );
        return state;
    }
    if let Some(by) = &state.revision
        && by != revision
    {
        state.differences.push(format!(
            "injected by revision {by}; the namespace now selects revision {revision}"
        ));
    }
    match current_injection(pod, context, revision, &previous.init_containers) {
        Ok(current) => {
            state
                .differences
                .extend(sidecar_differences(pod, &current, &state.injected_containers))
        }
        Err(error) => state.differences.push(format!(
            "cannot render the current configuration for this pod: {error}"
        )),
    }
    state.up_to_date = Some(state.differences.is_empty());
    state
}

/// The pod as the current configuration would inject it.
fn current_injection(
    pod: &Value,
    context: &LiveContext,
    revision: &str,
    init_containers: &[String],
) -> Result<Value, String> {
    let data = |cm: Option<&k8s_openapi::api::core::v1::ConfigMap>, key: &str| {
        cm.and_then(|c| c.data.as_ref()?.get(key).cloned())
    };
    let config = data(context.injector_configmap.as_ref(), "config");
    let values = data(context.injector_configmap.as_ref(), "values");
    let mesh = data(context.mesh_configmap.as_ref(), "mesh");
    let named = |key: &str, text: &Option<String>, cm: &str| {
        text.as_ref()
            .map(|t| (format!("configmap/{cm} (data.{key})"), t.clone()))
    };
    let config = named("config", &config, &context.names.injector);
    let values = named("values", &values, &context.names.injector);
    let mesh = named("mesh", &mesh, &context.names.mesh);
    let loaded = super::settings::from_texts(text_of(&config), text_of(&values), text_of(&mesh))?;
    let options = Options {
        revision: revision.to_owned(),
        native_sidecars: init_containers.iter().any(|n| n == "istio-proxy"),
        ..Options::default()
    };
    let injector =
        CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, options).map_err(|e| e.to_string())?;
    let namespace = pod.pointer("/metadata/namespace").and_then(Value::as_str);
    injector
        .inject_pod(
            pod,
            &Request {
                pod: Some(pod),
                namespace,
                ..Request::default()
            },
        )
        .map_err(|e| e.to_string())
}

fn text_of(named: &Option<(String, String)>) -> Option<(&str, &str)> {
    named.as_ref().map(|(n, t)| (n.as_str(), t.as_str()))
}

/// How the injected containers of `existing` differ from those of `current`: the image, and the
/// fields the templates set (fields the API server defaulted on the existing pod are ignored).
pub fn sidecar_differences(existing: &Value, current: &Value, injected: &[String]) -> Vec<String> {
    let find = |pod: &Value, name: &str| -> Option<Value> {
        ["/spec/initContainers", "/spec/containers"]
            .iter()
            .find_map(|path| {
                pod.pointer(path)?
                    .as_array()?
                    .iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
                    .cloned()
            })
    };
    let mut differences = Vec::new();
    for name in injected {
        let (Some(old), Some(new)) = (find(existing, name), find(current, name)) else {
            if find(current, name).is_none() {
                differences.push(format!("{name}: the current configuration no longer injects it"));
            }
            continue;
        };
        let image = |c: &Value| c.get("image").and_then(Value::as_str).unwrap_or("").to_owned();
        if image(&old) != image(&new) {
            differences.push(format!("{name}: image {} → {}", image(&old), image(&new)));
        }
        let fields: Vec<&str> = new
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, v)| k.as_str() != "image" && old.get(k.as_str()) != Some(*v))
                    .map(|(k, _)| k.as_str())
                    .collect()
            })
            .unwrap_or_default();
        if !fields.is_empty() {
            differences.push(format!("{name}: differs in {}", fields.join(", ")));
        }
    }
    differences
}

/// The cluster section of the table.
pub fn render_facts(explanation: &Explanation, facts: &ClusterFacts) -> String {
    use std::fmt::Write as _;

    use injector_core::terminal::escape;
    let mut out = String::new();
    let _ = writeln!(out, "\nIn the cluster:");
    let _ = writeln!(
        out,
        "  revision {}; webhook configurations: {}; injector ConfigMap: {}",
        escape(&facts.revision),
        if facts.webhook_configurations.is_empty() {
            "none".to_owned()
        } else {
            escape(&facts.webhook_configurations.join(", ")).into_owned()
        },
        escape(
            facts
                .injector_config_map
                .as_deref()
                .unwrap_or("none (Istio's defaults)")
        )
    );
    if let Some(pod) = &facts.pod {
        if pod.injected {
            let _ = writeln!(
                out,
                "  Pod {}/{} WAS injected by revision {} ({}); templates {}",
                escape(&explanation.namespace),
                escape(&explanation.name),
                escape(pod.revision.as_deref().unwrap_or("?")),
                escape(&pod.injected_containers.join(", ")),
                escape(&pod.templates.join(","))
            );
        } else {
            let _ = writeln!(
                out,
                "  Pod {}/{} was NOT injected (no sidecar.istio.io/status)",
                escape(&explanation.namespace),
                escape(&explanation.name)
            );
        }
        match pod.up_to_date {
            Some(true) => {
                let _ = writeln!(out, "  it carries what the current configuration injects");
            }
            Some(false) => {
                let _ = writeln!(out, "  it differs from what the current configuration injects:");
                for difference in &pod.differences {
                    let _ = writeln!(out, "    - {}", escape(difference));
                }
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_image_bump_and_a_changed_field_are_told_apart_from_api_server_defaults() {
        let existing = json!({"spec": {"initContainers": [{"name": "istio-proxy", "image": "proxy:1", "args": ["a"],
            "terminationMessagePath": "/dev/termination-log"}], "containers": [{"name": "app"}]}});
        let same =
            json!({"spec": {"initContainers": [{"name": "istio-proxy", "image": "proxy:1", "args": ["a"]}]}});
        assert!(sidecar_differences(&existing, &same, &["istio-proxy".into()]).is_empty());
        let bumped =
            json!({"spec": {"initContainers": [{"name": "istio-proxy", "image": "proxy:2", "args": ["b"]}]}});
        assert_eq!(
            sidecar_differences(&existing, &bumped, &["istio-proxy".into()]),
            vec![
                "istio-proxy: image proxy:1 → proxy:2",
                "istio-proxy: differs in args"
            ]
        );
        let gone = json!({"spec": {"containers": [{"name": "app"}]}});
        assert_eq!(
            sidecar_differences(&existing, &gone, &["istio-proxy".into()]),
            vec!["istio-proxy: the current configuration no longer injects it"]
        );
    }
}
