//! The API server's checks on a pod that an injection template can break, so that `preview`
//! reports a pod that would be refused on creation even though the template rendered: names
//! (unique across containers and init containers, DNS labels), images, volume mounts that name
//! no volume, duplicate volumes or mount paths, init containers' `restartPolicy`.
//!
//! Not the whole of Kubernetes' validation — only what the injection adds or changes; each
//! problem names the field as the API server would (`spec.initContainers[1].volumeMounts[0].name`).

use std::collections::BTreeSet;

use serde_json::Value;

/// Every problem found, each naming its field; empty when the pod would be accepted.
pub fn problems(pod: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let volumes: Vec<&str> = items(spec, "volumes")
        .iter()
        .map(|v| v.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let mut seen_volumes = BTreeSet::new();
    for (index, name) in volumes.iter().enumerate() {
        let field = format!("spec.volumes[{index}].name");
        if name.is_empty() {
            problems.push(format!("{field}: Required value"));
        } else if !seen_volumes.insert(*name) {
            problems.push(format!("{field}: Duplicate value: {name:?}"));
        }
    }
    let mut seen_containers = BTreeSet::new();
    for list in ["initContainers", "containers"] {
        for (index, container) in items(spec, list).iter().enumerate() {
            let at = format!("spec.{list}[{index}]");
            let name = container.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                problems.push(format!("{at}.name: Required value"));
            } else if !is_dns_label(name) {
                problems.push(format!(
                    "{at}.name: Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case \
                     alphanumeric characters or '-', and must start and end with an alphanumeric character"
                ));
            } else if !seen_containers.insert(name.to_owned()) {
                problems.push(format!("{at}.name: Duplicate value: {name:?}"));
            }
            if container
                .get("image")
                .and_then(Value::as_str)
                .is_none_or(|i| i.trim().is_empty())
            {
                problems.push(format!("{at}.image: Required value"));
            }
            let policy = container
                .get("restartPolicy")
                .and_then(Value::as_str)
                .unwrap_or("");
            if list == "initContainers" && !policy.is_empty() && policy != "Always" {
                problems.push(format!(
                    "{at}.restartPolicy: Unsupported value: {policy:?}: supported values: \"Always\""
                ));
            }
            let mut paths = BTreeSet::new();
            for (mount_index, mount) in items(container, "volumeMounts").iter().enumerate() {
                let mount_at = format!("{at}.volumeMounts[{mount_index}]");
                let volume = mount.get("name").and_then(Value::as_str).unwrap_or("");
                if !volumes.contains(&volume) {
                    problems.push(format!("{mount_at}.name: Not found: {volume:?}"));
                }
                let path = mount.get("mountPath").and_then(Value::as_str).unwrap_or("");
                if path.is_empty() {
                    problems.push(format!("{mount_at}.mountPath: Required value"));
                } else if !paths.insert(path) {
                    problems.push(format!(
                        "{mount_at}.mountPath: Invalid value: {path:?}: must be unique"
                    ));
                }
            }
        }
    }
    problems
}

fn items<'a>(object: &'a Value, field: &str) -> &'a [Value] {
    object
        .get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// RFC 1123 label: at most 63 lower-case alphanumerics or `-`, alphanumeric at both ends.
fn is_dns_label(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 63
        && name.chars().all(|c| alnum(c) || c == '-')
        && name.starts_with(alnum)
        && name.ends_with(alnum)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_good_pod_has_no_problems() {
        let pod = json!({"spec": {"volumes": [{"name": "v"}],
            "initContainers": [{"name": "istio-proxy", "image": "p", "restartPolicy": "Always"}],
            "containers": [{"name": "app", "image": "a", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}});
        assert_eq!(problems(&pod), Vec::<String>::new());
    }

    #[test]
    fn what_a_bad_template_breaks_is_named_by_field() {
        let pod = json!({"spec": {"volumes": [{"name": "v"}, {"name": "v"}],
            "initContainers": [{"name": "istio-proxy", "image": "p", "restartPolicy": "OnFailure"}],
            "containers": [{"name": "istio-proxy", "image": ""},
                           {"name": "Bad_Name", "image": "a",
                            "volumeMounts": [{"name": "missing", "mountPath": "/x"}, {"name": "v", "mountPath": "/x"}]}]}});
        assert_eq!(
            problems(&pod),
            [
                "spec.volumes[1].name: Duplicate value: \"v\"",
                "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
                "spec.containers[0].name: Duplicate value: \"istio-proxy\"",
                "spec.containers[0].image: Required value",
                "spec.containers[1].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                "spec.containers[1].volumeMounts[0].name: Not found: \"missing\"",
                "spec.containers[1].volumeMounts[1].mountPath: Invalid value: \"/x\": must be unique",
            ]
        );
    }
}
