//! Check 4: each webhook's `caBundle` against the CA that actually signs the serving
//! certificate — where Istio's troubleshooting page compares md5 sums, this does what the API
//! server does: the chain the
//! injector serves (a TLS handshake, only with webhooks registered by a loopback `url:`) or the
//! certificate in its Secret is verified against the bundle for the name the API server dials.

use injector_core::shell;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhook;

use super::{no_webhooks, ours};
use crate::{
    Check, Snapshot, Verdict,
    certs::{CertInfo, fingerprint, pem_certificates, verify_chain},
    webhooks::Target,
};

const ID: &str = "caBundle";
const TITLE: &str = "caBundle verifies the serving certificate";

/// Data keys that hold a CA: ours (`ca.crt`, `next-ca.crt`), Istio's root as istiod publishes
/// it (the `istio-ca-root-cert` ConfigMap: `root-cert.pem`) and Istio's CA Secrets' own names
/// (`ca-cert.pem`).
pub const CA_KEYS: &[&str] = &["ca.crt", "next-ca.crt", "ca-cert.pem", "root-cert.pem"];

/// The ConfigMap in which istiod publishes its root certificate (`root-cert.pem`), in every
/// namespace: Istio's CA without its key.
pub const ISTIO_ROOT_CONFIGMAP: &str = "istio-ca-root-cert";

/// The name the API server verifies the certificate for.
pub fn dialled_name(target: &Target) -> Option<String> {
    match target {
        Target::Url { host, .. } => Some(host.clone()),
        Target::Service { namespace, name, .. } => Some(format!("{name}.{namespace}.svc")),
        Target::Missing => None,
    }
}

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let configurations = match ours(snapshot) {
        Ok(found) if !found.is_empty() => found,
        _ => return no_webhooks(ID, TITLE, snapshot),
    };
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut problems = Vec::new();
    let mut verified = 0;
    for configuration in configurations {
        let name = configuration.metadata.name.as_deref().unwrap_or_default();
        for (index, webhook) in configuration.webhooks.iter().flatten().enumerate() {
            let label = format!("{name}/{}", webhook.name);
            match one_webhook(snapshot, webhook, &label) {
                Outcome::Verified(evidence) => {
                    verified += 1;
                    check.evidence.extend(evidence);
                }
                Outcome::Broken { problem, evidence } => {
                    check.raise(Verdict::Error);
                    check.evidence.extend(evidence);
                    problems.push(format!("{label}: {problem}"));
                    check.fixes.extend(fixes(snapshot, name, index, webhook));
                }
                Outcome::Unknown { why, evidence } => {
                    check.raise(Verdict::Unknown);
                    if why.contains("(forbidden)") {
                        check.fixes.push(shell::command([
                            "kubectl",
                            "auth",
                            "can-i",
                            "get",
                            "secrets",
                            "-n",
                            &snapshot.settings.injector_namespace,
                        ]));
                    }
                    check.evidence.extend(evidence);
                    problems.push(format!("{label}: {why}"));
                }
            }
        }
    }
    check.summary = if problems.is_empty() {
        format!("{verified} webhook(s): the caBundle verifies the certificate the injector serves")
    } else {
        problems.join("; ")
    };
    check.fixes.dedup();
    check
}

enum Outcome {
    Verified(Vec<String>),
    Broken { problem: String, evidence: Vec<String> },
    Unknown { why: String, evidence: Vec<String> },
}

fn one_webhook(snapshot: &Snapshot, webhook: &MutatingWebhook, label: &str) -> Outcome {
    let target = Target::of(webhook);
    let mut evidence = Vec::new();
    let raw = webhook
        .client_config
        .ca_bundle
        .as_ref()
        .map(|b| b.0.clone())
        .unwrap_or_default();
    let bundle = match pem_certificates(&raw) {
        Ok(bundle) => bundle,
        Err(why) => {
            return Outcome::Broken {
                problem: format!(
                    "caBundle is {why}: the API server cannot verify the injector (x509: certificate signed by unknown authority)"
                ),
                evidence: vec![format!("{label} ({}): caBundle {why}", target.describe())],
            };
        }
    };
    for der in &bundle {
        let info = CertInfo::of(der).map_or_else(|e| e, |i| i.describe());
        evidence.push(format!("{label}: caBundle holds {info}"));
    }
    let Some(server_name) = dialled_name(&target) else {
        return Outcome::Broken {
            problem: "the webhook has neither url nor service".to_owned(),
            evidence,
        };
    };
    // 1. The chain the injector really serves, where doctor may dial it.
    if let Target::Url {
        url, loopback: true, ..
    } = &target
    {
        match snapshot.handshakes.get(url).map(|h| &h.chain) {
            Some(Ok(chain)) => {
                if let Some(leaf) = chain.first().and_then(|d| CertInfo::of(d).ok()) {
                    evidence.push(format!(
                        "{label}: {url} serves {}, issued by {}",
                        leaf.describe(),
                        leaf.issuer
                    ));
                }
                return match verify_chain(&bundle, chain, &server_name, snapshot.now) {
                    Ok(()) => Outcome::Verified(evidence),
                    Err(problem) => Outcome::Broken {
                        problem: problem.describe(),
                        evidence,
                    },
                };
            }
            Some(Err(error)) => evidence.push(format!("{label}: no TLS handshake with {url}: {error}")),
            None => {}
        }
    }
    // 2. The serving certificate in the TLS Secret (certificates managed by cert-manager or similar).
    if let Some(tls) = &snapshot.settings.tls_secret {
        let key = format!("{}/{tls}", snapshot.settings.injector_namespace);
        if let Some(Ok(Some(source))) = snapshot.certificates.get(&key)
            && let Some(chain) = source.get("tls.crt")
        {
            evidence.push(format!("{label}: compared with tls.crt of Secret {key}"));
            return match verify_chain(&bundle, chain, &server_name, snapshot.now) {
                Ok(()) => Outcome::Verified(evidence),
                Err(problem) => Outcome::Broken {
                    problem: format!("{} (Secret {key})", problem.describe()),
                    evidence,
                },
            };
        }
    }
    // 3. The CA Secrets (and Istio's published root): the bundle must hold the CA that signs.
    let in_bundle: Vec<String> = bundle.iter().map(|d| fingerprint(d)).collect();
    let mut unreadable = Vec::new();
    let mut compared = Vec::new();
    for (key, read) in &snapshot.certificates {
        match read {
            Ok(Some(source)) => {
                for ca_key in CA_KEYS {
                    let Some(cas) = source.get(ca_key) else {
                        continue;
                    };
                    for ca in cas {
                        let print = fingerprint(ca);
                        compared.push(format!("{key} {ca_key}"));
                        if in_bundle.contains(&print) && *ca_key != "next-ca.crt" {
                            evidence.push(format!(
                                "{label}: the caBundle holds the CA of {} ({ca_key})",
                                source.describe(key)
                            ));
                            return Outcome::Verified(evidence);
                        }
                    }
                }
            }
            Ok(None) => {}
            Err(failure) => unreadable.push(failure),
        }
    }
    if !compared.is_empty() {
        return Outcome::Broken {
            problem: format!(
                "the caBundle holds none of the CAs in {} (x509: certificate signed by unknown authority)",
                compared.join(", ")
            ),
            evidence,
        };
    }
    let why = if unreadable.is_empty() {
        format!(
            "no served certificate to compare with ({} is not dialled: doctor only dials loopback url webhooks) and no CA Secret found",
            target.describe()
        )
    } else {
        let attempts: Vec<String> = unreadable
            .iter()
            .map(|f| format!("{} ({:?})", f.attempted, f.kind).to_lowercase())
            .collect();
        evidence.extend(unreadable.iter().map(|f| f.explain()));
        format!(
            "not dialled ({}), and the CA Secrets cannot be read: {}",
            target.describe(),
            attempts.join(", ")
        )
    };
    Outcome::Unknown { why, evidence }
}

/// The commands that put the right CA in the bundle.
fn fixes(snapshot: &Snapshot, configuration: &str, index: usize, webhook: &MutatingWebhook) -> Vec<String> {
    let settings = &snapshot.settings;
    let namespace = &settings.injector_namespace;
    let mut fixes = Vec::new();
    // The bundle is read by a command substitution inside the double-quoted patch: the only shell
    // text here that is not a quoted word is ours.
    let patch_from = |secret: &str, key: &str| {
        let read = shell::command([
            "kubectl",
            "-n",
            namespace,
            "get",
            "secret",
            secret,
            "-o",
            &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
        ]);
        format!(
            "{} --type=json -p \"[{{\\\"op\\\":\\\"add\\\",\\\"path\\\":\\\"/webhooks/{index}/clientConfig/caBundle\\\",\\\"value\\\":\\\"$({read})\\\"}}]\"",
            shell::command(["kubectl", "patch", "mutatingwebhookconfiguration", configuration])
        )
    };
    let exists = |name: &str| {
        matches!(
            snapshot.certificates.get(&format!("{namespace}/{name}")),
            Some(Ok(Some(_)))
        )
    };
    if let Some(tls) = &settings.tls_secret
        && exists(tls)
    {
        fixes.push(patch_from(tls, "ca.crt"));
    } else if exists(&settings.ca_secret) {
        fixes.push(patch_from(&settings.ca_secret, "ca.crt"));
        fixes.push(format!(
            "or let the injector's leader do it: run it with --cluster (it patches the caBundle of istio-sidecar-injector and istio.io/rev-labelled configurations), and check: {}",
            shell::command(["kubectl", "-n", namespace, "logs", "-l", "app=sidecar-injector"])
        ));
    }
    match Target::of(webhook) {
        Target::Url { loopback: true, .. } => fixes.push(
            "file mode: put the CA that signs --tls-cert in the caBundle (`serve --write-ca ca.pem`, then base64 -w0 ca.pem), or serve a certificate signed by the CA already there".to_owned(),
        ),
        Target::Service { namespace, name, .. } => fixes.push(format!(
            "when the injector serves a certificate from an older CA: {}",
            shell::command(["kubectl", "-n", &namespace, "rollout", "restart", "deployment", &name])
        )),
        _ => {}
    }
    fixes
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;
    use crate::{CertificateSource, Handshake, certs::testing::ca};

    const URL: &str = "https://127.0.0.1:9443/inject";

    fn with_webhook(bundle: &str, served: Option<Vec<Vec<u8>>>) -> Snapshot {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook(URL, bundle)],
        )]);
        if let Some(chain) = served {
            snapshot.handshakes.insert(
                URL.into(),
                Handshake {
                    url: URL.into(),
                    chain: Ok(chain),
                },
            );
        }
        snapshot
    }

    #[test]
    fn an_empty_bundle_is_an_x509_error_with_the_patch_from_the_ca_secret() {
        let ours = ca("ours", NOW - 100, NOW + 100_000);
        let mut snapshot = with_webhook("", None);
        let secret = CertificateSource::from_secret(object(
            json!({"metadata": {"name": "sidecar-injector-ca"}, "data": {"ca.crt": base64(&ours.pem)}}),
        ));
        snapshot.certificates =
            BTreeMap::from([("istio-system/sidecar-injector-ca".to_owned(), Ok(Some(secret)))]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Error);
        assert!(check.summary.contains("caBundle is empty"), "{check:?}");
        assert_eq!(
            check.fixes[0],
            r#"kubectl patch mutatingwebhookconfiguration istio-sidecar-injector --type=json -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(kubectl -n istio-system get secret sidecar-injector-ca -o "jsonpath={.data.ca\\.crt}")\"}]""#
        );
    }

    #[test]
    fn the_served_chain_is_verified_against_the_bundle() {
        let ours = ca("ours", NOW - 100, NOW + 100_000);
        let other = ca("other", NOW - 100, NOW + 100_000);
        let (leaf, _) = ours.leaf(&["127.0.0.1"], NOW - 100, NOW + 10_000);
        assert_eq!(
            check(&with_webhook(&ours.pem, Some(vec![leaf.clone()]))).verdict,
            Verdict::Ok
        );
        let wrong = check(&with_webhook(&other.pem, Some(vec![leaf])));
        assert_eq!(wrong.verdict, Verdict::Error);
        assert!(wrong.summary.contains("signed by unknown authority"), "{wrong:?}");
        assert!(wrong.evidence.iter().any(|e| e.contains("issued by CN=ours")));
    }

    #[test]
    fn without_a_handshake_the_ca_secret_is_compared_and_an_unreadable_one_says_why() {
        let ours = ca("ours", NOW - 100, NOW + 100_000);
        let other = ca("other", NOW - 100, NOW + 100_000);
        let secret = CertificateSource::from_secret(object(
            json!({"metadata": {"name": "sidecar-injector-ca"}, "data": {"ca.crt": base64(&ours.pem)}}),
        ));
        let mut snapshot = with_webhook(&ours.pem, None);
        snapshot
            .certificates
            .insert("istio-system/sidecar-injector-ca".into(), Ok(Some(secret)));
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
        let mut stale = with_webhook(&other.pem, None);
        stale.certificates = snapshot.certificates.clone();
        assert_eq!(check(&stale).verdict, Verdict::Error);
        let mut forbidden_secret = with_webhook(&ours.pem, None);
        forbidden_secret.certificates.insert(
            "istio-system/sidecar-injector-ca".into(),
            Err(forbidden("get secrets istio-system/sidecar-injector-ca")),
        );
        let unknown = check(&forbidden_secret);
        assert_eq!(unknown.verdict, Verdict::Unknown);
        assert!(
            unknown.summary.contains(
                "the CA Secrets cannot be read: get secrets istio-system/sidecar-injector-ca (forbidden)"
            ),
            "{unknown:?}"
        );
        assert_eq!(
            unknown.fixes,
            vec!["kubectl auth can-i get secrets -n istio-system"]
        );
    }
}
