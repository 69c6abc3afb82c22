//! Istio's webhook path parameters (`parseInjectEnvs`) and the API server's `?timeout=` query.
//!
//! Pure functions, no I/O. The path given to [`parse_inject_envs_with_dropped`] must already be
//! percent-decoded (Go hands `URL.Path` to Istio, which is decoded); use [`percent_decode_path`].

use std::collections::BTreeMap;
use std::time::Duration;

/// Parses proxy environment variables out of an injection path, exactly as Istio's
/// `parseInjectEnvs` does (<https://github.com/istio/istio/blob/master/pkg/kube/inject/webhook.go>).
///
/// * `/inject`, `/inject/` → no variables.
/// * `/inject/k1/v1/k2/v2` → `K1=v1`, `K2=v2`; `--slash--` in a value becomes `/`; an odd trailing
///   key is dropped.
/// * `/inject/:ENV:k1=v1:ENV:k2=v2` → `K1=v1`, `K2=v2`; pairs with an empty key or without `=`
///   are ignored, an empty value is kept.
/// * `cluster` maps to `ISTIO_META_CLUSTER_ID`, `net` to `ISTIO_META_NETWORK`; any other key is
///   upper-cased.
#[cfg(test)]
pub fn parse_inject_envs(path: &str) -> BTreeMap<String, String> {
    parse_inject_envs_with_dropped(path).0
}

/// Like [`parse_inject_envs`], also returning a trailing key dropped for lack of a value.
pub fn parse_inject_envs_with_dropped(path: &str) -> (BTreeMap<String, String>, Option<String>) {
    let path = path.strip_suffix('/').unwrap_or(path);
    let items = split_items(path);
    let mut envs = BTreeMap::new();
    let mut dropped = None;
    let mut i = 0;
    while i < items.len() {
        let key = &items[i];
        let Some(value) = items.get(i + 1) else {
            dropped = Some(key.clone());
            break;
        };
        let env = match key.as_str() {
            "cluster" => "ISTIO_META_CLUSTER_ID".to_owned(),
            "net" => "ISTIO_META_NETWORK".to_owned(),
            other => other.to_uppercase(),
        };
        if !env.is_empty() {
            envs.insert(env, value.clone());
        }
        i += 2;
    }
    (envs, dropped)
}

/// Splits the path into the flat `k, v, k, v…` list Istio iterates over.
fn split_items(path: &str) -> Vec<String> {
    // Go: strings.SplitN(path, "/", 3); fewer than 3 parts means plain "/inject".
    let mut parts = path.splitn(3, '/');
    let (Some(_), Some(_), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Vec::new();
    };
    if rest.starts_with(":ENV:") {
        // Deprecated `:ENV:k=v` syntax; values are taken verbatim (no `--slash--` handling).
        let mut items = Vec::new();
        for pair in rest.split(":ENV:").skip(1) {
            if let Some((k, v)) = pair.split_once('=')
                && !k.is_empty()
            {
                items.push(k.to_owned());
                items.push(v.to_owned());
            }
        }
        return items;
    }
    rest.split('/')
        .enumerate()
        .map(|(i, s)| {
            if i % 2 == 1 {
                s.replace("--slash--", "/")
            } else {
                s.to_owned()
            }
        })
        .collect()
}

/// Percent-decodes a URL path (`%2F` → `/`), as Go's `URL.Path` is. Invalid escapes are kept
/// verbatim and invalid UTF-8 is replaced, so this never fails.
pub fn percent_decode_path(raw: &str) -> String {
    let bytes = raw.as_bytes();
    if !bytes.contains(&b'%') {
        return raw.to_owned();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Finds `timeout=<Go duration>` in a query string (the API server sends `?timeout=10s`).
///
/// Returns `None` when absent or unparsable (the caller then uses its default).
pub fn timeout_from_query(query: Option<&str>) -> Option<Duration> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "timeout")
        .and_then(|(_, v)| gocompat::duration::parse_non_negative(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The 14 cases of Istio's `TestParseInjectEnvs` (pkg/kube/inject/webhook_test.go).
    #[test]
    fn istio_parse_inject_envs_cases() {
        type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
        let cases: &[Case] = &[
            ("empty", "/", &[]),
            ("no-kv", "/inject", &[]),
            ("no-kv-with-tail", "/inject/", &[]),
            (
                "one-kv",
                "/inject/cluster/cluster1",
                &[("ISTIO_META_CLUSTER_ID", "cluster1")],
            ),
            (
                "two-kv",
                "/inject/cluster/cluster1/net/network1/",
                &[
                    ("ISTIO_META_CLUSTER_ID", "cluster1"),
                    ("ISTIO_META_NETWORK", "network1"),
                ],
            ),
            (
                "kv-with-slashes",
                "/inject/cluster/cluster--slash--1/net/network--slash--1",
                &[
                    ("ISTIO_META_CLUSTER_ID", "cluster/1"),
                    ("ISTIO_META_NETWORK", "network/1"),
                ],
            ),
            (
                "not-predefined-kv",
                "/inject/cluster/cluster1/custom_env/foo",
                &[("ISTIO_META_CLUSTER_ID", "cluster1"), ("CUSTOM_ENV", "foo")],
            ),
            ("one-key-without-value", "/inject/cluster", &[]),
            (
                "key-without-value",
                "/inject/cluster/cluster1/network",
                &[("ISTIO_META_CLUSTER_ID", "cluster1")],
            ),
            (
                "key-with-values-contain-slashes",
                "/inject/:ENV:cluster=cluster2:ENV:rootpage=/foo/bar",
                &[("ISTIO_META_CLUSTER_ID", "cluster2"), ("ROOTPAGE", "/foo/bar")],
            ),
            (
                "no-predefined-kv-with-values-contain-ENV-separator",
                "/inject/rootpage1/value1/rootpage2/:ENV:abcd=efgh",
                &[("ROOTPAGE1", "value1"), ("ROOTPAGE2", ":ENV:abcd=efgh")],
            ),
            (
                "no-predefined-kv-with-values-contain-ENV-separator-invalid-format",
                "/inject/:ENV:rootpage1=efgh:ENV:=abb:ENV:=",
                &[("ROOTPAGE1", "efgh")],
            ),
            (
                "no-predefined-kv-with-mixed-values",
                "%2Finject%2Frootpage1%2Ffoo%2Frootpage2%2Fbar",
                &[("ROOTPAGE1", "foo"), ("ROOTPAGE2", "bar")],
            ),
            (
                "no-predefined-kv-with-slashes",
                "%2Finject%2F%3AENV%3Arootpage1%3D%2Ffoo%2Fbar%3AENV%3Arootpage2%3D%2Fbar%2Ftoe",
                &[("ROOTPAGE1", "/foo/bar"), ("ROOTPAGE2", "/bar/toe")],
            ),
        ];
        assert_eq!(cases.len(), 14);
        for (name, input, want) in cases {
            let got = parse_inject_envs(&percent_decode_path(input));
            assert_eq!(got, envs(want), "case {name}: {input}");
        }
    }

    /// Istio's `TestParseInjectEnvsForRemoteClusterPath`.
    #[test]
    fn remote_cluster_path() {
        let got = parse_inject_envs(
            "/inject/DUBBO_META_CLUSTER_ID/remote/XDS_ADDRESS/192.168.15.164:32049/CA_ADDRESS/192.168.15.164:32049",
        );
        assert_eq!(
            got,
            envs(&[
                ("DUBBO_META_CLUSTER_ID", "remote"),
                ("XDS_ADDRESS", "192.168.15.164:32049"),
                ("CA_ADDRESS", "192.168.15.164:32049"),
            ])
        );
    }

    #[test]
    fn dropped_key_is_reported() {
        let (got, dropped) = parse_inject_envs_with_dropped("/inject/cluster/c1/net");
        assert_eq!(got, envs(&[("ISTIO_META_CLUSTER_ID", "c1")]));
        assert_eq!(dropped.as_deref(), Some("net"));
    }

    #[test]
    fn empty_keys_are_ignored() {
        assert_eq!(parse_inject_envs("/inject//v/k/v2"), envs(&[("K", "v2")]));
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode_path("/a%2Fb%zz%4"), "/a/b%zz%4");
        assert_eq!(percent_decode_path("/plain"), "/plain");
    }

    #[test]
    fn timeout_query() {
        assert_eq!(
            timeout_from_query(Some("timeout=10s")),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            timeout_from_query(Some("a=b&timeout=3s")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(timeout_from_query(Some("timeout=bad")), None);
        assert_eq!(timeout_from_query(None), None);
    }
}
