//! Native sidecars `auto`: Istio's rule, from the kubelet versions the Nodes report.
//!
//! Native sidecars (an init container with `restartPolicy: Always`) need kubelet 1.33 on every
//! node a pod may land on (Istio's `auto`; earlier kubelets accepted the field with known
//! bugs). With no nodes at all, Istio answers yes; a version that does not parse counts as no.

use std::collections::BTreeMap;

/// Whether native sidecars can be used given each node's `status.nodeInfo.kubeletVersion`.
pub fn native_sidecars_supported<'a>(kubelet_versions: impl IntoIterator<Item = &'a str>) -> bool {
    kubelet_versions.into_iter().all(|v| kubelet_at_least(v, 1, 33))
}

/// `v1.33.2`, `1.34.0-eks-…`, `v1.33.1+k3s1`: major and minor at least these.
fn kubelet_at_least(version: &str, major: u64, minor: u64) -> bool {
    let v = version.trim().trim_start_matches('v');
    let mut parts = v.split(['.', '-', '+']);
    let (Some(ma), Some(mi)) = (parts.next(), parts.next()) else {
        return false;
    };
    // Some distributions append letters to the minor (GKE's old `1.9+`).
    let mi: String = mi.chars().take_while(char::is_ascii_digit).collect();
    match (ma.parse::<u64>(), mi.parse::<u64>()) {
        (Ok(ma), Ok(mi)) => (ma, mi) >= (major, minor),
        _ => false,
    }
}

/// The nodes seen by the watch, by name.
#[derive(Debug, Clone, Default)]
pub struct NodeVersions(pub BTreeMap<String, String>);

impl NodeVersions {
    /// Istio's `auto` answer for these nodes.
    pub fn supported(&self) -> bool {
        native_sidecars_supported(self.0.values().map(String::as_str))
    }

    /// The nodes whose kubelet is too old, for the log line.
    pub fn too_old(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, v)| !kubelet_at_least(v, 1, 33))
            .map(|(n, v)| format!("{n} ({v})"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn istio_rule() {
        assert!(native_sidecars_supported([]), "no nodes: yes, as Istio");
        assert!(native_sidecars_supported([
            "v1.33.0",
            "v1.36.3",
            "1.34.1-eks-abc",
            "v1.33.1+k3s1"
        ]));
        assert!(!native_sidecars_supported(["v1.33.0", "v1.32.9"]));
        assert!(!native_sidecars_supported(["garbage"]), "unparsable counts as no");
        assert!(native_sidecars_supported(["v2.0.0"]));
        let nodes = NodeVersions(BTreeMap::from([
            ("a".into(), "v1.31.0".into()),
            ("b".into(), "v1.34.0".into()),
        ]));
        assert!(!nodes.supported());
        assert_eq!(nodes.too_old(), vec!["a (v1.31.0)"]);
    }
}
