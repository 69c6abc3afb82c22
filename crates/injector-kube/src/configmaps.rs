//! The injector's configuration from its ConfigMaps: the injector ConfigMap
//! (`istio-sidecar-injector[-REV]`: `config`, `values`) and the mesh ConfigMap
//! (`istio[-REV]`: `mesh`). Pure: turns what the watches saw into the files the configuration
//! loader reads, with the same names as in file mode.

use injector_server::{ConfigFile, ConfigFiles};
use k8s_openapi::api::core::v1::ConfigMap;

/// Where the configuration lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapNames {
    /// Namespace of both ConfigMaps.
    pub namespace: String,
    /// The injector ConfigMap (`config`, `values`).
    pub injector: String,
    /// The mesh ConfigMap (`mesh`); optional in the cluster (Istio's defaults apply).
    pub mesh: String,
}

impl ConfigMapNames {
    /// Istio's names for a revision: `istio-sidecar-injector[-REV]` and `istio[-REV]`.
    pub fn istio(namespace: &str, revision: &str) -> Self {
        let suffix = if revision.is_empty() || revision == "default" {
            String::new()
        } else {
            format!("-{revision}")
        };
        ConfigMapNames {
            namespace: namespace.to_owned(),
            injector: format!("istio-sidecar-injector{suffix}"),
            mesh: format!("istio{suffix}"),
        }
    }
}

fn file(names: &ConfigMapNames, cm: &str, key: &str, role: &str, contents: &str) -> ConfigFile {
    ConfigFile {
        name: role.to_owned(),
        path: format!("configmap/{}/{cm} (data.{key})", names.namespace).into(),
        contents: contents.to_owned(),
    }
}

/// The loader's files from the ConfigMaps as last seen (`None`: absent).
pub fn config_files(
    names: &ConfigMapNames,
    injector: Option<&ConfigMap>,
    mesh: Option<&ConfigMap>,
) -> Result<ConfigFiles, String> {
    let injector_name = format!("ConfigMap {}/{}", names.namespace, names.injector);
    let Some(injector) = injector else {
        return Err(format!("{injector_name} does not exist"));
    };
    let data = injector.data.clone().unwrap_or_default();
    let Some(config) = data.get("config") else {
        return Err(format!(
            "{injector_name} has no data.config (the injection templates and policy); keys present: [{}]",
            data.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    };
    let mut files = vec![file(names, &names.injector, "config", "injector-config", config)];
    if let Some(values) = data.get("values") {
        files.push(file(names, &names.injector, "values", "values", values));
    }
    if let Some(mesh) = mesh.and_then(|m| m.data.as_ref()).and_then(|d| d.get("mesh")) {
        files.push(file(names, &names.mesh, "mesh", "mesh", mesh));
    }
    Ok(ConfigFiles::new(files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(data: serde_json::Value) -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": data})).expect("cm")
    }

    #[test]
    fn names_follow_the_revision() {
        assert_eq!(
            ConfigMapNames::istio("istio-system", "default").injector,
            "istio-sidecar-injector"
        );
        let c = ConfigMapNames::istio("istio-system", "canary");
        assert_eq!(
            (c.injector.as_str(), c.mesh.as_str()),
            ("istio-sidecar-injector-canary", "istio-canary")
        );
    }

    #[test]
    fn files_and_errors() {
        let names = ConfigMapNames::istio("istio-system", "default");
        let inj = cm(json!({"config": "policy: enabled", "values": "{}"}));
        let mesh = cm(json!({"mesh": "defaultConfig: {}"}));
        let files = config_files(&names, Some(&inj), Some(&mesh)).expect("files");
        assert_eq!(files.get("injector-config"), Some("policy: enabled"));
        assert_eq!(files.get("values"), Some("{}"));
        assert_eq!(files.get("mesh"), Some("defaultConfig: {}"));
        assert_eq!(
            files
                .file("values")
                .map(|f| f.path.display().to_string())
                .as_deref(),
            Some("configmap/istio-system/istio-sidecar-injector (data.values)")
        );
        let no_mesh = config_files(&names, Some(&inj), None).expect("mesh optional");
        assert_eq!(no_mesh.get("mesh"), None);
        let e = config_files(&names, None, None).err().unwrap_or_default();
        assert_eq!(e, "ConfigMap istio-system/istio-sidecar-injector does not exist");
        let e = config_files(&names, Some(&cm(json!({"confg": "x"}))), None)
            .err()
            .unwrap_or_default();
        assert!(e.contains("has no data.config") && e.contains("[confg]"), "{e}");
    }
}
