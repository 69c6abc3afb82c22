use injector_core::{
    config::InjectorConfig,
    explain::{ConfigOrigin, Webhooks},
};
use injector_engine::{CompiledConfig, Options, Outcome, Request, mesh::default_mesh_config};
use serde_json::json;

use super::*;
use crate::preview::Cluster;

const PROXY: &str = "spec:\n  containers:\n  - name: istio-proxy\n    image: proxy:{{ .Values.tag }}\n    ports:\n    - containerPort: 15090\n      name: http-envoy-prom\n    readinessProbe:\n      httpGet: {path: /healthz/ready, port: 15021}\n      periodSeconds: 15\n    env:\n    - name: LEVEL\n      value: {{ .Values.level | default \"info\" }}\n    - name: POD_NAME\n      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n  volumes:\n  - name: istio-envoy\n    emptyDir: {medium: Memory}\n";

fn injector(values: serde_json::Value) -> CompiledConfig {
    let mut config = InjectorConfig::default();
    config.templates.insert("sidecar".to_owned(), PROXY.to_owned());
    CompiledConfig::new(config, values, default_mesh_config(), Options::default()).expect("parses")
}

fn replica_set(name: &str, deployment: &str) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": name, "namespace": "shop",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "controller": true}]},
           "spec": {"template": {"metadata": {"labels": {"app": deployment, "pod-template-hash": "5d8f"}},
                                 "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}})
}

/// A pod as the API server stores it after the webhook injected it with `injector`: the
/// defaults it adds written out by hand.
fn stored_pod(injector: &CompiledConfig, name: &str, replica_set: &str) -> serde_json::Value {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "generateName": format!("{replica_set}-"), "namespace": "shop",
                     "labels": {"app": "web", "pod-template-hash": "5d8f"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set, "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}});
    let Ok(Outcome::Injected {
        pod: mut injected, ..
    }) = injector.inject(&Request {
        pod: Some(&pod),
        namespace: Some("shop"),
        ..Request::default()
    })
    else {
        panic!("injects");
    };
    for container in injected["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        container["terminationMessagePath"] = json!("/dev/termination-log");
        container["terminationMessagePolicy"] = json!("File");
        container["imagePullPolicy"] = json!("IfNotPresent");
        if container["name"] == "istio-proxy" {
            container["ports"][0]["protocol"] = json!("TCP");
            container["readinessProbe"]["timeoutSeconds"] = json!(1);
            container["readinessProbe"]["successThreshold"] = json!(1);
            container["readinessProbe"]["failureThreshold"] = json!(3);
            container["readinessProbe"]["httpGet"]["scheme"] = json!("HTTP");
            container["env"][1]["valueFrom"]["fieldRef"]["apiVersion"] = json!("v1");
        }
    }
    injected["spec"]["serviceAccountName"] = json!("default");
    injected
}

fn snapshot(objects: Vec<serde_json::Value>) -> Snapshot {
    Snapshot::from_objects(objects.into_iter().map(|o| (String::new(), o))).expect("sorts")
}

/// The origin every test's configuration is told to come from.
const ORIGIN: ConfigOrigin = ConfigOrigin::File;

/// The cluster of `snapshot` (every webhook assumed called) and `current` as today's side.
fn sides<'a>(snapshot: &'a Snapshot, current: &'a CompiledConfig) -> (Cluster<'a>, Side<'a>) {
    (
        Cluster {
            namespaces: &snapshot.namespaces,
            webhooks: Webhooks::AssumeCalled,
        },
        Side {
            injector: current,
            renders: None,
            origin: &ORIGIN,
        },
    )
}

fn run(snapshot: &Snapshot, current: &CompiledConfig) -> Report {
    let (cluster, current) = sides(snapshot, current);
    outdated(snapshot, cluster, current)
}

#[test]
fn a_pod_injected_by_the_current_configuration_is_up_to_date() {
    let v1 = injector(json!({"tag": "1"}));
    let snapshot = snapshot(vec![
        replica_set("web-5d8f", "web"),
        stored_pod(&v1, "web-5d8f-a", "web-5d8f"),
    ]);
    let report = run(&snapshot, &v1);
    assert_eq!(
        (report.pods, report.injected, report.up_to_date),
        (1, 1, 1),
        "{report:#?}"
    );
    assert!(report.owners.is_empty(), "{report:#?}");
}

#[test]
fn an_image_bump_makes_pods_stale_by_image_grouped_by_deployment() {
    let v1 = injector(json!({"tag": "1"}));
    let v2 = injector(json!({"tag": "2"}));
    let snapshot = snapshot(vec![
        replica_set("web-5d8f", "web"),
        stored_pod(&v1, "web-5d8f-b", "web-5d8f"),
        stored_pod(&v1, "web-5d8f-a", "web-5d8f"),
    ]);
    let report = run(&snapshot, &v2);
    assert_eq!(report.stale(), 2);
    let owner = &report.owners[0];
    assert_eq!(owner.owner, ObjectKey::new("Deployment", "shop", "web"));
    assert!(owner.image_only);
    assert_eq!(owner.pods[0].pod, "web-5d8f-a");
    assert_eq!(owner.pods[0].staleness.name(), "image");
    assert_eq!(
        owner.remedy.command.as_deref(),
        Some("kubectl rollout restart deployment/web -n shop")
    );
    assert!(owner.remedy.restartable);
}

#[test]
fn other_changes_are_named() {
    let v1 = injector(json!({"tag": "1"}));
    let debug = injector(json!({"tag": "1", "level": "debug"}));
    let snapshot = snapshot(vec![
        replica_set("web-5d8f", "web"),
        stored_pod(&v1, "web-5d8f-a", "web-5d8f"),
    ]);
    let report = run(&snapshot, &debug);
    let Staleness::Fields { kinds, .. } = &report.owners[0].pods[0].staleness else {
        panic!("{report:#?}");
    };
    assert_eq!(kinds, &["istio-proxy: env"]);
    assert!(!report.owners[0].image_only);
}

#[test]
fn without_its_replica_set_a_pod_is_compared_with_itself_reinjected_and_named_after_its_deployment() {
    let v1 = injector(json!({"tag": "1"}));
    let v2 = injector(json!({"tag": "2"}));
    let snapshot = snapshot(vec![stored_pod(&v1, "web-5d8f-a", "web-5d8f")]);
    assert!(
        run(&snapshot, &v1).owners.is_empty(),
        "{:#?}",
        run(&snapshot, &v1)
    );
    let report = run(&snapshot, &v2);
    assert_eq!(
        report.owners[0].owner,
        ObjectKey::new("Deployment", "shop", "web")
    );
    assert!(report.owners[0].image_only, "{report:#?}");
}

#[test]
fn pods_without_the_status_annotation_are_not_looked_at() {
    let plain = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
                       "spec": {"containers": [{"name": "app", "image": "a"}]}});
    let report = run(&snapshot(vec![plain]), &injector(json!({"tag": "1"})));
    assert_eq!((report.pods, report.injected), (1, 0));
}

#[test]
fn a_pod_injected_offline_compares_equal_without_the_api_servers_defaults() {
    let v1 = injector(json!({"tag": "1"}));
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "solo", "namespace": "shop"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}});
    let Ok(Outcome::Injected { pod: injected, .. }) = v1.inject(&Request {
        pod: Some(&pod),
        namespace: Some("shop"),
        ..Request::default()
    }) else {
        panic!("injects");
    };
    let report = run(&snapshot(vec![injected]), &v1);
    assert_eq!(report.up_to_date, 1, "{report:#?}");
}

#[test]
fn page_by_page_only_the_pages_sources_stay_rendered() {
    let v1 = injector(json!({"tag": "1"}));
    let snapshot = snapshot(vec![replica_set("api-7c", "api"), replica_set("web-5d8f", "web")]);
    let (cluster, current) = sides(&snapshot, &v1);
    let mut inventory = Inventory::new(&snapshot.controllers, cluster, current);
    let rendered_sources = |inventory: &Inventory<'_>| {
        let mut names: Vec<String> = inventory.renders.keys().map(|key| key.0.name.clone()).collect();
        names.sort();
        names
    };
    inventory.add(&[
        stored_pod(&v1, "api-7c-a", "api-7c"),
        stored_pod(&v1, "web-5d8f-a", "web-5d8f"),
    ]);
    assert_eq!(rendered_sources(&inventory), ["api-7c", "web-5d8f"]);
    let web_render = |inventory: &Inventory<'_>| {
        inventory
            .renders
            .iter()
            .find(|(key, _)| key.0.name == "web-5d8f")
            .map(|(_, render)| render.clone())
            .expect("the web pods' source is rendered")
    };
    let first = web_render(&inventory);
    // The next page has only the web pods: the api render goes, the web one is not rendered again.
    inventory.add(&[
        stored_pod(&v1, "web-5d8f-b", "web-5d8f"),
        stored_pod(&v1, "web-5d8f-c", "web-5d8f"),
    ]);
    assert_eq!(rendered_sources(&inventory), ["web-5d8f"]);
    assert!(Arc::ptr_eq(&first, &web_render(&inventory)), "rendered again");
    let report = inventory.finish();
    assert_eq!(
        (report.pods, report.injected, report.up_to_date),
        (4, 4, 4),
        "{report:#?}"
    );
}
