//! Validation of the pod annotations the templates read (Istio's `validateAnnotations`).
//!
//! A bad value aborts injection, and the pod is rejected with a message that names the
//! annotation and the value, in Istio's words: `invalid value '<v>' for annotation '<name>':
//! <reason>`, several of them collected as a multi-error (`N errors occurred:` and `\t* ` items).
//! Reasons reproduce Go's (`strconv.ParseUint: parsing "x": invalid syntax`,
//! `netip.ParsePrefix("x"): no '/'`) so that messages match Istio's.

use crate::{post::prometheus::parse_go_bool, quantity::Quantity};

/// One annotation with an invalid value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidAnnotation {
    /// The annotation.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Why it is invalid.
    pub reason: String,
}

/// Every invalid annotation of a pod, formatted like hashicorp's multierror.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", format_multierror(.0))]
pub struct AnnotationErrors(pub Vec<InvalidAnnotation>);

fn format_multierror(errors: &[InvalidAnnotation]) -> String {
    let items: Vec<String> = errors
        .iter()
        .map(|e| {
            format!(
                "\t* invalid value '{}' for annotation '{}': {}",
                e.value, e.name, e.reason
            )
        })
        .collect();
    let noun = if errors.len() == 1 { "error" } else { "errors" };
    format!("{} {noun} occurred:\n{}\n\n", errors.len(), items.join("\n"))
}

/// A rule for one annotation.
type Rule = fn(&str) -> Result<(), String>;

/// The validated annotations and their rules (`proxy.istio.io/config` is validated with the
/// ProxyConfig model, by the caller).
const RULES: [(&str, Rule); 18] = [
    ("sidecar.istio.io/interceptionMode", interception_mode),
    ("status.sidecar.istio.io/port", status_port),
    ("readiness.status.sidecar.istio.io/initialDelaySeconds", uint32),
    ("readiness.status.sidecar.istio.io/periodSeconds", uint32),
    ("readiness.status.sidecar.istio.io/failureThreshold", uint32),
    (
        "traffic.sidecar.istio.io/includeOutboundIPRanges",
        include_ip_ranges,
    ),
    (
        "traffic.sidecar.istio.io/excludeOutboundIPRanges",
        exclude_ip_ranges,
    ),
    (
        "traffic.sidecar.istio.io/includeInboundPorts",
        include_inbound_ports,
    ),
    (
        "traffic.sidecar.istio.io/excludeInboundPorts",
        exclude_inbound_ports,
    ),
    (
        "traffic.sidecar.istio.io/excludeOutboundPorts",
        exclude_outbound_ports,
    ),
    ("traffic.sidecar.istio.io/excludeInterfaces", interfaces),
    ("traffic.sidecar.istio.io/kubevirtInterfaces", interfaces),
    ("istio.io/reroute-virtual-interfaces", interfaces),
    ("prometheus.istio.io/merge-metrics", boolean),
    ("sidecar.istio.io/proxyCPU", resource_quantity),
    ("sidecar.istio.io/proxyMemory", resource_quantity),
    ("sidecar.istio.io/proxyCPULimit", resource_quantity),
    ("sidecar.istio.io/proxyMemoryLimit", resource_quantity),
];

/// Validates the annotations the injector reads; the errors come in the order of `annotations`.
pub fn validate_annotations<'a>(
    annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), AnnotationErrors> {
    let errors: Vec<InvalidAnnotation> = annotations
        .into_iter()
        .filter_map(|(name, value)| {
            let (_, rule) = RULES.iter().find(|(known, _)| *known == name)?;
            rule(value).err().map(|reason| InvalidAnnotation {
                name: name.to_owned(),
                value: value.to_owned(),
                reason,
            })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AnnotationErrors(errors))
    }
}

fn interception_mode(mode: &str) -> Result<(), String> {
    match mode {
        "REDIRECT" | "TPROXY" | "NONE" => Ok(()),
        other => Err(format!(
            "interceptionMode invalid, use REDIRECT,TPROXY,NONE: {other}"
        )),
    }
}

fn status_port(port: &str) -> Result<(), String> {
    parse_port(port)
        .map(drop)
        .map_err(|e| format!("excludeInboundPorts invalid: {e}"))
}

fn uint32(value: &str) -> Result<(), String> {
    parse_uint(value, u64::from(u32::MAX)).map(drop)
}

fn boolean(value: &str) -> Result<(), String> {
    parse_go_bool(value)
        .map(drop)
        .ok_or_else(|| format!("strconv.ParseBool: parsing {}: invalid syntax", go_quote(value)))
}

fn include_ip_ranges(ranges: &str) -> Result<(), String> {
    if ranges == "*" {
        return Ok(());
    }
    cidr_list(ranges).map_err(|e| format!("includeIPRanges invalid: {e}"))
}

fn exclude_ip_ranges(ranges: &str) -> Result<(), String> {
    cidr_list(ranges).map_err(|e| format!("excludeIPRanges invalid: {e}"))
}

fn include_inbound_ports(ports: &str) -> Result<(), String> {
    if ports == "*" {
        return Ok(());
    }
    port_list("includeInboundPorts", ports)
}

fn exclude_inbound_ports(ports: &str) -> Result<(), String> {
    port_list("excludeInboundPorts", ports)
}

fn exclude_outbound_ports(ports: &str) -> Result<(), String> {
    port_list("excludeOutboundPorts", ports)
}

/// Interface names: comma-separated, each at most 15 bytes (Linux' IFNAMSIZ) without spaces or '/'.
fn interfaces(list: &str) -> Result<(), String> {
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name.len() > 15 || name.contains(|c: char| c.is_whitespace() || c == '/') {
            return Err(format!(
                "invalid interface name '{name}': at most 15 characters, no spaces or '/'"
            ));
        }
    }
    Ok(())
}

fn resource_quantity(value: &str) -> Result<(), String> {
    if value.chars().any(char::is_control) {
        return Err("resource quantity must not contain control characters".to_owned());
    }
    Quantity::parse(value).map(drop).map_err(|e| e.to_string())
}

fn port_list(parameter: &str, ports: &str) -> Result<(), String> {
    let ports = ports.trim();
    if ports.is_empty() {
        return Ok(());
    }
    for port in ports.split(',') {
        if let Err(e) = parse_port(port) {
            return Err(format!("{parameter} invalid: failed parsing port '{port}': {e}"));
        }
    }
    Ok(())
}

/// Istio's `parsePort`: a trimmed uint16.
fn parse_port(port: &str) -> Result<u64, String> {
    parse_uint(port.trim(), u64::from(u16::MAX)).map_err(|e| format!("failed parsing port '{port}': {e}"))
}

/// Go's `strconv.ParseUint(s, 10, bits)`, with its error texts.
fn parse_uint(text: &str, max: u64) -> Result<u64, String> {
    let syntax = || format!("strconv.ParseUint: parsing {}: invalid syntax", go_quote(text));
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax());
    }
    match text.parse::<u64>() {
        Ok(value) if value <= max => Ok(value),
        _ => Err(format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(text)
        )),
    }
}

/// Go's `netip.ParsePrefix` on each comma-separated entry.
fn cidr_list(cidrs: &str) -> Result<(), String> {
    if cidrs.is_empty() {
        return Ok(());
    }
    for cidr in cidrs.split(',') {
        crate::netip::parse_prefix(cidr).map_err(|e| format!("failed parsing cidr '{cidr}': {e}"))?;
    }
    Ok(())
}

/// Go's `%q` for plain strings (enough for the values quoted in these messages).
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    crate::gojson::write_string(&mut out, text);
    out.replace("\\u003c", "<")
        .replace("\\u003e", ">")
        .replace("\\u0026", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, value: &str) -> Result<(), AnnotationErrors> {
        validate_annotations([(name, value)])
    }

    #[test]
    fn accepts_valid_values() {
        for (name, value) in [
            ("sidecar.istio.io/interceptionMode", "TPROXY"),
            ("status.sidecar.istio.io/port", " 15020 "),
            ("readiness.status.sidecar.istio.io/periodSeconds", "4294967295"),
            ("traffic.sidecar.istio.io/includeOutboundIPRanges", "*"),
            (
                "traffic.sidecar.istio.io/includeOutboundIPRanges",
                "10.0.0.0/8,fd00::/8",
            ),
            ("traffic.sidecar.istio.io/excludeOutboundIPRanges", ""),
            ("traffic.sidecar.istio.io/includeInboundPorts", "*"),
            ("traffic.sidecar.istio.io/excludeInboundPorts", "80, 443"),
            ("prometheus.istio.io/merge-metrics", "T"),
            ("sidecar.istio.io/proxyCPU", "100m"),
            ("sidecar.istio.io/proxyMemoryLimit", "1Gi"),
            ("traffic.sidecar.istio.io/excludeInterfaces", "eth1,net1"),
            ("unrelated.example.com/x", "anything"),
        ] {
            assert_eq!(check(name, value), Ok(()), "{name}={value}");
        }
    }

    #[test]
    fn messages_match_istio() {
        let error = check("traffic.sidecar.istio.io/includeOutboundIPRanges", "bad").expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "1 error occurred:\n\t* invalid value 'bad' for annotation 'traffic.sidecar.istio.io/includeOutboundIPRanges': \
             includeIPRanges invalid: failed parsing cidr 'bad': netip.ParsePrefix(\"bad\"): no '/'\n\n"
        );
        let error = check("sidecar.istio.io/interceptionMode", "redirect").expect_err("invalid");
        assert!(
            error
                .to_string()
                .contains("interceptionMode invalid, use REDIRECT,TPROXY,NONE: redirect")
        );
        let error = check("readiness.status.sidecar.istio.io/failureThreshold", "-1").expect_err("invalid");
        assert!(
            error
                .to_string()
                .contains(r#"strconv.ParseUint: parsing "-1": invalid syntax"#),
            "{error}"
        );
        let error = check("traffic.sidecar.istio.io/excludeInboundPorts", "80,99999").expect_err("invalid");
        assert!(
            error.to_string().contains(
                r#"excludeInboundPorts invalid: failed parsing port '99999': failed parsing port '99999': strconv.ParseUint: parsing "99999": value out of range"#
            ),
            "{error}"
        );
        let error = check("status.sidecar.istio.io/port", "x").expect_err("invalid");
        assert!(
            error
                .to_string()
                .contains("excludeInboundPorts invalid: failed parsing port 'x'"),
            "{error}"
        );
        let error = check("prometheus.istio.io/merge-metrics", "yes").expect_err("invalid");
        assert!(
            error
                .to_string()
                .contains(r#"strconv.ParseBool: parsing "yes": invalid syntax"#)
        );
    }

    #[test]
    fn collects_every_error() {
        let error = validate_annotations([
            ("sidecar.istio.io/proxyCPU", "lots"),
            ("traffic.sidecar.istio.io/excludeOutboundIPRanges", "1.2.3.4/33"),
        ])
        .expect_err("invalid");
        assert_eq!(error.0.len(), 2);
        let text = error.to_string();
        assert!(
            text.starts_with(
                "2 errors occurred:\n\t* invalid value 'lots' for annotation 'sidecar.istio.io/proxyCPU'"
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"netip.ParsePrefix("1.2.3.4/33"): prefix length out of range"#),
            "{text}"
        );
    }

    #[test]
    fn rejects_control_characters_in_quantities() {
        assert!(check("sidecar.istio.io/proxyMemory", "1Gi\n").is_err());
    }
}
