//! YAML as `sigs.k8s.io/yaml` writes it (Istio's `toYaml`): the value is first marshalled to
//! JSON, then written by go-yaml v2 in block style with sorted keys. The [`goyaml`] crate does the
//! writing, exactly as Go does; an input Go would refuse gives `""`, as Istio's `toYaml` does.

use serde_json::Value as Json;

/// YAML text for a JSON value, ending with a newline (`null\n` for null); `""` where Go fails.
pub fn to_yaml(json: &Json) -> String {
    goyaml::try_to_string(json).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_like_sigs_k8s_yaml() {
        assert_eq!(to_yaml(&json!({"b": 2, "a": [1, "x"]})), "a:\n- 1\n- x\nb: 2\n");
        assert_eq!(to_yaml(&json!(null)), "null\n");
        assert_eq!(
            to_yaml(&json!({"limits": {"cpu": "2", "memory": "1Gi"}})),
            "limits:\n  cpu: \"2\"\n  memory: 1Gi\n"
        );
    }
}
