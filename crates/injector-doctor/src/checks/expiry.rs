//! Check 7: when the serving certificate and the CAs expire. Expired (or not yet valid) is an
//! error; less than a tenth of the validity left is a warning (a certificate renewed on time
//! never gets there: cluster mode renews with a third left).

use std::collections::BTreeSet;

use super::ca_bundle::CA_KEYS;
use crate::{
    Check, Snapshot, Verdict,
    certs::{CertInfo, date, pem_certificates},
};
use injector_core::shell;

const ID: &str = "expiry";
const TITLE: &str = "serving certificate and CA expiry";

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let mut certificates: Vec<(String, Vec<u8>)> = Vec::new();
    for handshake in snapshot.handshakes.values() {
        if let Ok(chain) = &handshake.chain
            && let Some(leaf) = chain.first()
        {
            certificates.push((format!("serving certificate of {}", handshake.url), leaf.clone()));
        }
    }
    if let Ok(configurations) = super::ours(snapshot) {
        for configuration in configurations {
            let name = configuration.metadata.name.as_deref().unwrap_or_default();
            for webhook in configuration.webhooks.iter().flatten() {
                let raw = webhook
                    .client_config
                    .ca_bundle
                    .as_ref()
                    .map(|b| b.0.clone())
                    .unwrap_or_default();
                for der in pem_certificates(&raw).unwrap_or_default() {
                    certificates.push((format!("CA in the caBundle of {name}/{}", webhook.name), der));
                }
            }
        }
    }
    for (key, read) in &snapshot.certificates {
        let Ok(Some(source)) = read else { continue };
        for ca_key in CA_KEYS.iter().chain(&["tls.crt"]) {
            for der in source.get(ca_key).unwrap_or_default().iter().take(1) {
                certificates.push((format!("{ca_key} of {}", source.describe(key)), der.clone()));
            }
        }
    }
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    let mut soonest: Option<(i64, String)> = None;
    for (what, der) in certificates {
        let Ok(info) = CertInfo::of(&der) else { continue };
        if !seen.insert((what.clone(), info.sha256.clone())) {
            continue;
        }
        let left = info.not_after - snapshot.now;
        let lifetime = (info.not_after - info.not_before).max(1);
        let line = format!(
            "{what}: {} valid {} to {}",
            info.subject,
            date(info.not_before),
            date(info.not_after)
        );
        if left <= 0 {
            check.raise(Verdict::Error);
            problems.push(format!("{what} EXPIRED on {}", date(info.not_after)));
            check.fixes.push(renewal(snapshot, &what));
        } else if info.not_before > snapshot.now {
            check.raise(Verdict::Error);
            problems.push(format!("{what} is not valid before {}", date(info.not_before)));
        } else if left * 10 < lifetime {
            check.raise(Verdict::Warning);
            problems.push(format!("{what} expires soon, on {}", date(info.not_after)));
            check.fixes.push(renewal(snapshot, &what));
        }
        if soonest.as_ref().is_none_or(|(at, _)| info.not_after < *at) {
            soonest = Some((info.not_after, what.clone()));
        }
        check.evidence.push(line);
    }
    check.summary = if !problems.is_empty() {
        problems.join("; ")
    } else if let Some((at, what)) = soonest {
        format!(
            "{} certificate(s) valid; the first to expire is the {what}, on {}",
            seen.len(),
            date(at)
        )
    } else {
        check.raise(Verdict::Unknown);
        "no certificate to check (no loopback handshake, no caBundle, no Secret readable)".to_owned()
    };
    check.fixes.dedup();
    check
}

fn renewal(snapshot: &Snapshot, what: &str) -> String {
    let namespace = &snapshot.settings.injector_namespace;
    if what.starts_with("serving certificate") {
        "renew the certificate the injector serves: file mode reloads new --tls-cert/--tls-key files without a restart; cluster mode renews its own (check its log)".to_owned()
    } else if what.contains(&snapshot.settings.ca_secret) || what.starts_with("CA in the caBundle") {
        format!(
            "rotate the CA: {} (cluster mode generates a new CA and patches every caBundle)",
            shell::command([
                "kubectl",
                "-n",
                namespace,
                "delete",
                "secret",
                &snapshot.settings.ca_secret,
            ])
        )
    } else {
        format!(
            "renew it (cert-manager: {} to have it reissued)",
            shell::command(["kubectl", "-n", namespace, "delete", "secret", "NAME"])
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::{Handshake, certs::testing::ca};

    #[test]
    fn an_expired_serving_certificate_is_an_error_and_a_near_one_a_warning() {
        let ours = ca("ours", NOW - 100_000, NOW + 1_000_000);
        let (expired, _) = ours.leaf(&["127.0.0.1"], NOW - 10_000, NOW - 60);
        let mut snapshot = empty();
        let url = "https://127.0.0.1:1/inject".to_owned();
        snapshot.handshakes.insert(
            url.clone(),
            Handshake {
                url: url.clone(),
                chain: Ok(vec![expired]),
            },
        );
        let check1 = check(&snapshot);
        assert_eq!(check1.verdict, Verdict::Error);
        assert!(
            check1
                .summary
                .contains("serving certificate of https://127.0.0.1:1/inject EXPIRED"),
            "{check1:?}"
        );
        let (near, _) = ours.leaf(&["127.0.0.1"], NOW - 10_000, NOW + 100);
        snapshot.handshakes.insert(
            url.clone(),
            Handshake {
                url: url.clone(),
                chain: Ok(vec![near]),
            },
        );
        assert_eq!(check(&snapshot).verdict, Verdict::Warning);
        let (fine, _) = ours.leaf(&["127.0.0.1"], NOW - 100, NOW + 10_000);
        snapshot.handshakes.insert(
            url.clone(),
            Handshake {
                url,
                chain: Ok(vec![fine]),
            },
        );
        let ok = check(&snapshot);
        assert_eq!(ok.verdict, Verdict::Ok);
        assert!(ok.summary.contains("first to expire"));
    }
}
