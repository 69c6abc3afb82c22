//! Unit tests of Istio's functions (their edge cases in <https://github.com/istio/istio/blob/master/pkg/kube/inject/template.go>) and of the template data's Go
//! fields and methods, on inline inputs (the oracle test covers the chart templates).

use std::sync::Arc;

use gotemplate::Value;
use serde_json::json;

use super::{TemplateInput, parse_template, sidecar_template_data};
use crate::mesh::{default_mesh_config, effective_proxy_config};
use crate::prepare::owner::owner_of;

fn render(template: &str, data: &Value) -> Result<String, String> {
    let t = parse_template(template).map_err(|e| e.to_string())?;
    t.execute(data).map_err(|e| e.to_string())
}

fn json_render(template: &str, data: serde_json::Value) -> String {
    render(template, &Value::from_json(&data)).unwrap_or_else(|e| format!("ERROR: {e}"))
}

fn pod_data(pod: serde_json::Value) -> Value {
    let mesh = default_mesh_config();
    let annotation = crate::pod::annotation(&pod, crate::mesh::PROXY_CONFIG_ANNOTATION);
    let proxy_config = effective_proxy_config(&mesh, annotation).unwrap_or_default();
    sidecar_template_data(TemplateInput {
        owner: owner_of(&pod),
        pod: Arc::new(pod),
        mesh: Arc::new(mesh),
        proxy_config: Arc::new(proxy_config),
        values: Value::from_json(&json!({"global": {"proxy": {"statusPort": 15020}}})),
        revision: "default".into(),
        native_sidecars: false,
        compliance_policy: String::new(),
        proxy_uid: 1337,
        proxy_gid: 1337,
        proxy_image: "hub/proxyv2:1".into(),
        proxy_init_image: "hub/proxyv2:1".into(),
    })
}

fn sample_pod() -> Value {
    pod_data(json!({
        "metadata": {
            "name": "p", "namespace": "ns",
            "labels": {"app": "a"},
            "annotations": {
                "empty": "",
                "proxy.istio.io/config": "holdApplicationUntilProxyStarts: true\nconcurrency: 0\n"
            }
        },
        "spec": {
            "containers": [{
                "name": "app", "image": "img:1",
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}
            }]
        }
    }))
}

#[test]
fn value_or_default_keeps_zero_and_false() {
    let data = json!({"z": 0, "f": false, "e": "", "n": null});
    assert_eq!(
        json_render(
            "{{valueOrDefault .z 1}} {{valueOrDefault .f true}} {{valueOrDefault .e `d`}} {{valueOrDefault .n `d`}} {{valueOrDefault .missing `d`}}",
            data
        ),
        "0 false d d d"
    );
}

#[test]
fn map_helpers() {
    assert_eq!(json_render("{{strdict `b` `2` `a`}}", json!(null)), "map[a: b:2]");
    assert_eq!(
        json_render("{{toJsonMap}}|{{mergeMaps}}", json!(null)),
        "null|map[]"
    );
    assert_eq!(
        json_render("{{toJsonMap (strdict `a` `1`) (strdict `a` `&`)}}", json!(null)),
        r#"{"a":"\u0026"}"#
    );
    assert_eq!(json_render("{{isset (strdict `a` ``) `a`}}", json!(null)), "true");
    assert_eq!(
        json_render("{{omit (strdict `a` `1` `b` `2` `c` `3`) `a` `c`}}", json!(null)),
        "map[b:2]"
    );
    assert_eq!(json_render("{{toJSON nil}}", json!(null)), "{}");
}

#[test]
fn string_helpers() {
    assert_eq!(json_render("{{contains `b` `abc`}}", json!(null)), "true");
    assert_eq!(json_render("[{{indent -2 \"a\\nb\"}}]", json!(null)), "[a\n  b]");
    assert_eq!(json_render("{{toLower `AbC`}}", json!(null)), "abc");
    assert_eq!(
        json_render(
            "{{env `SIDECAR_INJECTOR_SURELY_UNSET_VARIABLE` `dflt`}}",
            json!(null)
        ),
        "dflt"
    );
    assert_eq!(
        json_render("{{excludeInboundPort .p `1`}}", json!({"p": 15020})),
        "1,15020"
    );
}

#[test]
fn from_json_errors_give_the_string_braces() {
    assert_eq!(
        json_render("{{$x := fromJSON `{bad`}}{{$x}} {{printf `%T` $x}}", json!(null)),
        "{} string"
    );
}

#[test]
fn to_yaml_of_json_values() {
    assert_eq!(
        json_render("{{toYaml .}}", json!({"b": {"c": "true"}, "a": [1, "x"]})),
        "a:\n- 1\n- x\nb:\n  c: \"true\"\n"
    );
}

#[test]
fn object_meta_and_annotation() {
    let data = sample_pod();
    assert_eq!(
        render(
            "[{{annotation .ObjectMeta `empty` `d`}}] {{annotation .ObjectMeta `nope` nil}} {{annotation .ObjectMeta `x` .ProxyConfig.InterceptionMode}}",
            &data
        ),
        Ok("[] <nil> REDIRECT".into())
    );
    assert_eq!(
        render(
            "{{.ObjectMeta.Name}} {{.ObjectMeta.GetNamespace}} {{.ObjectMeta.Labels}} {{.DeploymentMeta}}",
            &data
        ),
        Ok("p ns map[app:a] ns/p".into())
    );
    let bare = pod_data(json!({"metadata": {"name": "b"}, "spec": {}}));
    assert_eq!(
        render(
            "{{.ObjectMeta.Annotations}} {{len .ObjectMeta.Labels}} {{.Spec.Containers}}",
            &bare
        ),
        Ok("map[] 0 []".into())
    );
}

#[test]
fn container_structs() {
    let data = sample_pod();
    assert_eq!(
        render(
            "{{range (index .Spec.Containers 0).Ports}}{{structToJSON .}};{{end}}",
            &data
        ),
        Ok(
            r#"{"name":"http","containerPort":80,"protocol":"TCP"};{"containerPort":53,"protocol":"UDP"};"#
                .into()
        )
    );
    assert_eq!(
        render(
            "{{includeInboundPorts .Spec.Containers}} {{printf `%T` (index (index .Spec.Containers 0).Ports 0).ContainerPort}}",
            &data
        ),
        Ok("80 int32".into())
    );
    assert_eq!(
        render("{{toYaml (index .Spec.Containers 0).ReadinessProbe}}", &data),
        Ok("httpGet:\n  path: /ready\n  port: 8080\n".into())
    );
    assert_eq!(
        render("{{structToJSON (index .Spec.Containers 0)}}", &data),
        Ok(r#"{"name":"app","image":"img:1","ports":[{"name":"http","containerPort":80,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP"}],"resources":{},"readinessProbe":{"httpGet":{"path":"/ready","port":8080}}}"#.into())
    );
}

#[test]
fn proxy_config_fields_and_methods() {
    let data = sample_pod();
    assert_eq!(
        render(
            "{{.ProxyConfig.HoldApplicationUntilProxyStarts.GetValue}} {{.ProxyConfig.Concurrency.GetValue}} {{.ProxyConfig.InterceptionMode.String}} {{.ProxyConfig.StatusPort}} {{formatDuration .ProxyConfig.DrainDuration}}",
            &data
        ),
        Ok("true 0 REDIRECT 15020 45s".into())
    );
    assert_eq!(
        render("{{protoToJSON .ProxyConfig}}", &data),
        Ok(r#"{"concurrency":0,"holdApplicationUntilProxyStarts":true}"#.into())
    );
    assert_eq!(
        render(
            "[{{.ProxyConfig.GetTracing.GetTlsSettings.GetCaCertificates}}] {{.ProxyConfig.GetServiceCluster}}",
            &data
        ),
        Ok("[] istio-proxy".into())
    );
    assert_eq!(
        render("{{.ProxyConfig.Tracing.Sampling}}", &data),
        Err("template: inject:1:14: executing \"inject\" at <.ProxyConfig.Tracing.Sampling>: nil pointer evaluating *v1alpha1.Tracing.Sampling".into())
    );
}

#[test]
fn mesh_config_fields() {
    let data = sample_pod();
    assert_eq!(
        render(
            "{{.MeshConfig.ProxyListenPort}} {{eq .MeshConfig.ProxyInboundListenPort 15006}} {{.MeshConfig.DefaultConfig.StatusPort}} {{.MeshConfig.GetDefaultConfig.DrainDuration.Seconds}} {{.InboundTrafficPolicyMode}}",
            &data
        ),
        Ok("15001 true 15020 45 passthrough".into())
    );
    assert_eq!(
        render(
            "[{{otelResourceAttributes .MeshConfig .ObjectMeta.Annotations .ObjectMeta.Labels .DeploymentMeta.Namespace .Spec.Containers}}]",
            &data
        ),
        Ok("[]".into())
    );
}
