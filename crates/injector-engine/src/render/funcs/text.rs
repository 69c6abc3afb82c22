//! String functions: `indent` (Istio's: every line but the first), `contains` (needle
//! first), `toLower`, `directory`, `env`, `excludeInboundPort`, `appendMultusNetwork`,
//! `kubevirtInterfaces`, `excludeInterfaces`.

use gotemplate::{ArgType, Func, FuncMap, Value};

use super::arg_str;

pub(crate) fn register(m: &mut FuncMap) {
    use ArgType::{Any, Int, Str};
    m.insert(
        "indent",
        Func::new(&[Int, Str], |a| {
            let n = match a[0] {
                Value::Int(n, _) => n.unsigned_abs() as usize,
                _ => 0,
            };
            Ok(Value::str(indent(n, arg_str(&a[1]))))
        }),
    );
    m.insert(
        "contains",
        Func::new(&[Str, Str], |a| {
            Ok(Value::Bool(arg_str(&a[1]).contains(arg_str(&a[0]))))
        }),
    );
    m.insert(
        "toLower",
        Func::new(&[Str], |a| Ok(Value::str(arg_str(&a[0]).to_lowercase()))),
    );
    m.insert(
        "directory",
        Func::new(&[Str], |a| Ok(Value::str(directory(arg_str(&a[0]))))),
    );
    m.insert("env", env_func(Vec::new()));
    m.insert(
        "excludeInboundPort",
        Func::new(&[Any, Str], |a| {
            let port = gotemplate::fmt::sprint(&a[..1]);
            Ok(Value::str(exclude_inbound_port(&port, arg_str(&a[1]))))
        }),
    );
    m.insert(
        "appendMultusNetwork",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(append_multus_network(arg_str(&a[0]), arg_str(&a[1]))))
        }),
    );
    for name in ["kubevirtInterfaces", "excludeInterfaces"] {
        m.insert(name, Func::new(&[Str], |a| Ok(a[0].clone())));
    }
}

/// Istio's `env NAME DEFAULT`: the variable's value, or `DEFAULT` when it is unset or empty. The
/// names of `owned` take the value given there rather than the process environment's.
fn env_func(owned: Vec<(&'static str, String)>) -> Func {
    use ArgType::Str;
    Func::new(&[Str, Str], move |a| {
        let name = arg_str(&a[0]);
        let value = match owned.iter().find(|(owned, _)| *owned == name) {
            Some((_, value)) => value.clone(),
            None => std::env::var(name).unwrap_or_default(),
        };
        Ok(Value::str(if value.is_empty() {
            arg_str(&a[1]).to_string()
        } else {
            value
        }))
    })
}

/// A function map with only `env`, answering for the names of `owned` with their values (laid
/// over Istio's functions, see [`crate::owned_env`]).
pub fn env_owning(owned: Vec<(&'static str, String)>) -> FuncMap {
    let mut m = FuncMap::new();
    m.insert("env", env_func(owned));
    m
}

/// Istio's `indent`: `n` spaces before every line except the first (empty lines too).
pub fn indent(n: usize, source: &str) -> String {
    let pad = " ".repeat(n);
    let mut out = String::with_capacity(source.len() + 16 * n);
    for (i, line) in source.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    out
}

/// Go's `path.Split` directory part (with the trailing slash).
pub fn directory(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    }
}

/// Istio's `excludeInboundPort`: adds `port` (already printed) to a comma-separated list.
pub fn exclude_inbound_port(port: &str, list: &str) -> String {
    let port = port.trim();
    if port.is_empty() || port == "0" {
        return list.to_string();
    }
    let mut out: Vec<&str> = Vec::new();
    for entry in list.split(',') {
        if entry == port {
            return list.to_string();
        }
        let entry = entry.trim();
        if !entry.is_empty() {
            out.push(entry);
        }
    }
    out.push(port);
    out.join(",")
}

/// Istio's `appendMultusNetwork`: adds `network` (`[namespace/]name`) to a Multus networks
/// annotation, a JSON list or a comma-separated list.
pub fn append_multus_network(existing: &str, network: &str) -> String {
    if existing.is_empty() {
        return network.to_string();
    }
    if let Some(i) = existing.rfind(']') {
        // `[]map[string]any`: a null element is a nil map.
        let Ok(entries) =
            serde_json::from_str::<Vec<Option<serde_json::Map<String, serde_json::Value>>>>(existing)
        else {
            return existing.to_string();
        };
        let entries: Vec<_> = entries.into_iter().flatten().collect();
        // Kubernetes' SplitQualifiedName: `ns/name` (further slashes are ignored).
        let mut parts = network.split('/');
        let (namespace, name) = match (parts.next(), parts.next()) {
            (Some(ns), Some(name)) => (ns, name),
            _ => ("", network),
        };
        let present = entries.iter().any(|e| {
            let same_name = e.get("name").and_then(serde_json::Value::as_str) == Some(name);
            // A missing or null namespace is ""; a non-string one never matches.
            let same_ns = match e.get("namespace") {
                None | Some(serde_json::Value::Null) => namespace.is_empty(),
                Some(serde_json::Value::String(ns)) => ns == namespace,
                Some(_) => false,
            };
            same_name && same_ns
        });
        if present {
            return existing.to_string();
        }
        let entry = if namespace.is_empty() {
            format!(r#", {{"name": "{name}"}}"#)
        } else {
            format!(r#", {{"name": "{name}", "namespace": "{namespace}"}}"#)
        };
        return format!("{}{entry}{}", &existing[..i], &existing[i..]);
    }
    if existing.split(',').any(|n| n.trim() == network) {
        return existing.to_string();
    }
    format!("{existing}, {network}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indent_pads_all_but_first_line() {
        assert_eq!(indent(2, "a\nb\n\nc"), "a\n  b\n  \n  c");
        assert_eq!(indent(4, "a\n"), "a\n    ");
        assert_eq!(indent(0, "a\nb"), "a\nb");
        assert_eq!(indent(2, ""), "");
    }

    #[test]
    fn directory_like_path_split() {
        assert_eq!(directory("/etc/certs/ca.pem"), "/etc/certs/");
        assert_eq!(directory("ca.pem"), "");
        assert_eq!(directory("/"), "/");
        assert_eq!(directory("/a/b/"), "/a/b/");
    }

    #[test]
    fn exclude_inbound_port_cases() {
        assert_eq!(exclude_inbound_port("15020", ""), "15020");
        assert_eq!(exclude_inbound_port("15020", "8080,15020"), "8080,15020");
        assert_eq!(exclude_inbound_port("15020", "8080, 9090 ,"), "8080,9090,15020");
        assert_eq!(exclude_inbound_port("0", "1,2"), "1,2");
        assert_eq!(exclude_inbound_port(" 7 ", "1"), "1,7");
        assert_eq!(exclude_inbound_port("80", "80 , 90"), "80,90,80");
    }

    #[test]
    fn multus() {
        assert_eq!(
            append_multus_network("", "default/istio-cni"),
            "default/istio-cni"
        );
        assert_eq!(
            append_multus_network("macvlan", "istio-cni"),
            "macvlan, istio-cni"
        );
        assert_eq!(append_multus_network("a, istio-cni", "istio-cni"), "a, istio-cni");
        assert_eq!(
            append_multus_network(r#"[{"name": "macvlan-conf"}]"#, "default/istio-cni"),
            r#"[{"name": "macvlan-conf"}, {"name": "istio-cni", "namespace": "default"}]"#
        );
        assert_eq!(
            append_multus_network(
                r#"[{"name": "istio-cni", "namespace": "default"}]"#,
                "default/istio-cni"
            ),
            r#"[{"name": "istio-cni", "namespace": "default"}]"#
        );
        assert_eq!(append_multus_network("[{bad]", "istio-cni"), "[{bad]");
    }
}
