//! Which Istio releases this injector is tested with, and which release a configuration is of.
//!
//! The release matrix (`tests/conformance/releases.rs`, `docs/compatibility.md`) runs every
//! golden of Istio's default profile of each tested release through the engine. A configuration
//! of a release outside that range is named in a warning when it is loaded: its templates may use
//! functions, fields or settings this injector has not been compared on.
//!
//! The release is read from the values the configuration carries: `global.tag`, the proxy image
//! tag Istio's chart sets to its own version (`1.28.10`, `1.28.10-distroless`), else the tag of a
//! full `global.proxy.image` reference. A tag that is no release (`latest`, a build's hash) names
//! none, and gives no warning.

use serde_json::Value;

/// The oldest Istio release (major, minor) this injector is tested with.
pub const OLDEST_TESTED: (u32, u32) = (1, 26);
/// The newest Istio release (major, minor) this injector is tested with (Istio's master branch
/// at the time of writing, which calls itself 1.31).
pub const NEWEST_TESTED: (u32, u32) = (1, 31);

/// An Istio release named by a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IstioRelease {
    /// Major and minor version, e.g. `(1, 24)`.
    pub minor: (u32, u32),
    /// The tag it was read from, e.g. `1.24.3-distroless`.
    pub tag: String,
    /// The values field the tag is in, e.g. `global.tag`.
    pub field: &'static str,
}

/// The Istio release the values name, if their proxy image tag is a release's.
pub fn istio_release(values: &Value) -> Option<IstioRelease> {
    let global = values.get("global")?;
    let tag = match global.get("tag") {
        Some(Value::String(tag)) if !tag.is_empty() => Some((tag.clone(), "global.tag")),
        Some(Value::Number(tag)) => Some((tag.to_string(), "global.tag")),
        _ => None,
    };
    let image_tag = || {
        let image = global.pointer("/proxy/image")?.as_str()?;
        let (_, last) = image.rsplit_once('/')?;
        let (_, tag) = last.split('@').next()?.split_once(':')?;
        Some((tag.to_owned(), "global.proxy.image"))
    };
    tag.or_else(image_tag)
        .and_then(|(tag, field)| release_of_tag(&tag).map(|minor| IstioRelease { minor, tag, field }))
}

/// `1.24.3`, `v1.24.3`, `1.24.3-distroless`, `1.24` → `(1, 24)`; anything else → `None`.
fn release_of_tag(tag: &str) -> Option<(u32, u32)> {
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let mut parts = tag.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The warning for values of an Istio release outside the tested range; `None` inside it, or
/// when the values name no release.
pub fn release_warning(values: &Value) -> Option<String> {
    let release = istio_release(values)?;
    if (OLDEST_TESTED..=NEWEST_TESTED).contains(&release.minor) {
        return None;
    }
    let (major, minor) = release.minor;
    Some(format!(
        "values: {} {:?} is of Istio {major}.{minor}, outside the releases this injector is tested with \
         ({}.{} to {}.{}; see docs/compatibility.md): its templates may use functions or settings that \
         behave differently here; compare a pod with `sidecar-injector inject` before relying on it",
        release.field, release.tag, OLDEST_TESTED.0, OLDEST_TESTED.1, NEWEST_TESTED.0, NEWEST_TESTED.1,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_release_is_read_from_the_proxy_tag() {
        let of = |values: Value| istio_release(&values).map(|r| (r.minor, r.field));
        assert_eq!(
            of(json!({"global": {"tag": "1.28.10"}})),
            Some(((1, 28), "global.tag"))
        );
        assert_eq!(
            of(json!({"global": {"tag": "1.24.3-distroless"}})),
            Some(((1, 24), "global.tag"))
        );
        assert_eq!(
            of(json!({"global": {"tag": "v1.30.0-rc.1"}})),
            Some(((1, 30), "global.tag"))
        );
        assert_eq!(
            of(json!({"global": {"tag": 1.22}})),
            Some(((1, 22), "global.tag"))
        );
        assert_eq!(
            of(json!({"global": {"tag": "", "proxy": {"image": "registry:5000/istio/proxyv2:1.20.1"}}})),
            Some(((1, 20), "global.proxy.image"))
        );
        for none in [
            json!({"global": {"tag": "latest"}}),
            json!({"global": {"tag": "0e3ac1d9"}}),
            json!({"global": {"proxy": {"image": "proxyv2"}}}),
            json!({"global": {"proxy": {"image": "registry:5000/proxyv2"}}}),
            json!({}),
        ] {
            assert_eq!(of(none.clone()), None, "{none}");
        }
    }

    #[test]
    fn a_release_outside_the_tested_range_is_named() {
        let warning = release_warning(&json!({"global": {"tag": "1.24.3"}})).expect("1.24 is outside");
        assert_eq!(
            warning,
            "values: global.tag \"1.24.3\" is of Istio 1.24, outside the releases this injector is tested \
             with (1.26 to 1.31; see docs/compatibility.md): its templates may use functions or settings \
             that behave differently here; compare a pod with `sidecar-injector inject` before relying on it"
        );
        assert!(release_warning(&json!({"global": {"tag": "1.32.0"}})).is_some());
        assert!(release_warning(&json!({"global": {"tag": "2.0.0"}})).is_some());
        for inside in ["1.26.8", "1.28.10", "1.30.3", "1.31.0-alpha.0", "latest"] {
            assert_eq!(
                release_warning(&json!({"global": {"tag": inside}})),
                None,
                "{inside}"
            );
        }
    }
}
