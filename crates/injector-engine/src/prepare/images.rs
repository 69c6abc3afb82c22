//! The proxy and init images (Istio's `ProxyImage`, `ProxyInitImage` and `imageURL`).
//!
//! An image is `<global.hub>/<name>:<tag>`, where the name is `global.proxy.image` (or
//! `global.proxy_init.image`), `proxyv2` by default, and the tag is `global.tag` printed like Go's
//! `%v` (a numeric tag from the values JSON is a float64: `1.28`, `1e+06`). An image type
//! (`distroless`, `debug`, …) replaces a known `-distroless`/`-debug` suffix of the tag, or is
//! appended; type `default` only strips. The proxy's type comes from the ProxyConfig `image` when
//! one is set, else from `global.variant`; the pod annotation `sidecar.istio.io/proxyImageType`
//! overrides both.

use serde_json::Value;

use gocompat::fmt::format_float_v;

/// The annotation overriding the image type for one pod.
pub const PROXY_IMAGE_TYPE_ANNOTATION: &str = "sidecar.istio.io/proxyImageType";

/// Image types Istio publishes, whose suffix is replaced rather than stacked.
const KNOWN_TYPES: [&str; 2] = ["distroless", "debug"];

/// The proxy image. `proxy_config_image_type` is `Some` when the effective ProxyConfig has an
/// `image` (its `imageType`, possibly empty), `None` otherwise.
pub fn proxy_image(
    values: &Value,
    proxy_config_image_type: Option<&str>,
    annotation: Option<&str>,
) -> String {
    let global = values.get("global").unwrap_or(&Value::Null);
    let name = string_at(global, &["proxy", "image"])
        .filter(|n| !n.is_empty())
        .unwrap_or("proxyv2");
    let image_type = annotation
        .or(proxy_config_image_type)
        .unwrap_or_else(|| string_at(global, &["variant"]).unwrap_or(""));
    image_url(global, name, image_type)
}

/// The init container image: `global.proxy_init.image` (default `proxyv2`), typed by
/// `global.variant` and the annotation.
pub fn proxy_init_image(values: &Value, annotation: Option<&str>) -> String {
    let global = values.get("global").unwrap_or(&Value::Null);
    let name = string_at(global, &["proxy_init", "image"])
        .filter(|n| !n.is_empty())
        .unwrap_or("proxyv2");
    let image_type = annotation.unwrap_or_else(|| string_at(global, &["variant"]).unwrap_or(""));
    image_url(global, name, image_type)
}

/// The annotation overriding the agentgateway image type for one Gateway.
pub const AGENTGATEWAY_IMAGE_TYPE_ANNOTATION: &str = "gateway.istio.io/agentgatewayImage";

/// The agentgateway image for the gateway templates (Istio's `AgentgatewayImage`): always named
/// `agentgateway`; typed by the ProxyConfig `image` when set, else `global.variant`, with the
/// Gateway annotation `gateway.istio.io/agentgatewayImage` overriding both.
pub fn agentgateway_image(
    values: &Value,
    proxy_config_image_type: Option<&str>,
    annotation: Option<&str>,
) -> String {
    let global = values.get("global").unwrap_or(&Value::Null);
    let image_type = annotation
        .or(proxy_config_image_type)
        .unwrap_or_else(|| string_at(global, &["variant"]).unwrap_or(""));
    image_url(global, "agentgateway", image_type)
}

fn image_url(global: &Value, name: &str, image_type: &str) -> String {
    let hub = string_at(global, &["hub"]).unwrap_or("");
    let tag = match global.get("tag") {
        Some(Value::String(tag)) => tag.clone(),
        Some(Value::Number(number)) => number.as_f64().map(format_float_v).unwrap_or_default(),
        Some(Value::Bool(flag)) => flag.to_string(),
        _ => String::new(),
    };
    format!("{hub}/{name}:{}", typed_tag(&tag, image_type))
}

/// Istio's `updateImageTypeIfPresent`.
fn typed_tag(tag: &str, image_type: &str) -> String {
    if image_type.is_empty() {
        return tag.to_owned();
    }
    let base = KNOWN_TYPES
        .iter()
        .find_map(|known| tag.strip_suffix(known)?.strip_suffix('-'))
        .unwrap_or(tag);
    if image_type == "default" {
        base.to_owned()
    } else {
        format!("{base}-{image_type}")
    }
}

fn string_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |current, key| current.get(key))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn values(global: Value) -> Value {
        json!({"global": global})
    }

    #[test]
    fn builds_urls_like_istio() {
        let v = values(json!({"hub": "docker.io/istio", "tag": "1.28.0"}));
        assert_eq!(proxy_image(&v, None, None), "docker.io/istio/proxyv2:1.28.0");
        assert_eq!(proxy_init_image(&v, None), "docker.io/istio/proxyv2:1.28.0");
        let custom = values(
            json!({"hub": "h", "tag": "t", "proxy": {"image": "proxyTest"}, "proxy_init": {"image": "initTest"}}),
        );
        assert_eq!(proxy_image(&custom, None, None), "h/proxyTest:t");
        assert_eq!(proxy_init_image(&custom, None), "h/initTest:t");
    }

    #[test]
    fn numeric_tags_print_like_go() {
        assert_eq!(
            proxy_image(&values(json!({"hub": "h", "tag": 1.28})), None, None),
            "h/proxyv2:1.28"
        );
        assert_eq!(
            proxy_image(&values(json!({"hub": "h", "tag": 1000000})), None, None),
            "h/proxyv2:1e+06"
        );
    }

    #[test]
    fn image_types() {
        let v = values(json!({"hub": "h", "tag": "1.12-distroless", "variant": "debug"}));
        assert_eq!(
            proxy_image(&v, None, None),
            "h/proxyv2:1.12-debug",
            "a known suffix is replaced"
        );
        assert_eq!(
            proxy_image(&v, None, Some("default")),
            "h/proxyv2:1.12",
            "the annotation wins; default strips"
        );
        assert_eq!(
            proxy_image(&v, Some("distroless"), None),
            "h/proxyv2:1.12-distroless",
            "ProxyConfig beats variant"
        );
        assert_eq!(
            proxy_image(&v, Some(""), None),
            "h/proxyv2:1.12-distroless",
            "an empty ProxyConfig type leaves the tag"
        );
        assert_eq!(proxy_init_image(&v, None), "h/proxyv2:1.12-debug");
        let asm = values(json!({"hub": "h", "tag": "1.11.2-asm.17", "variant": "distroless"}));
        assert_eq!(
            proxy_image(&asm, None, None),
            "h/proxyv2:1.11.2-asm.17-distroless"
        );
    }
}
