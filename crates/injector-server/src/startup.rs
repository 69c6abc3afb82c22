//! What `serve` says on start besides "listening": one line on how to try the webhook from the
//! same machine, with the addresses actually bound and the CA file to trust.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::tls::CertSource;

/// The address a client on this machine uses for a bound address: a wildcard (`0.0.0.0`, `::`)
/// becomes the loopback of its family, and IPv6 gets brackets.
pub fn local_url_host(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    match ip {
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
    }
}

/// One line: wait for `/readyz`, then POST an AdmissionReview with curl, trusting the right CA.
pub fn try_it(admission: SocketAddr, monitoring: Option<SocketAddr>, cert: &CertSource) -> String {
    let trust = match cert {
        CertSource::SelfSigned {
            write_ca: Some(path), ..
        } => format!(
            "--cacert {}",
            injector_core::shell::quote(&path.display().to_string())
        ),
        CertSource::SelfSigned { write_ca: None, .. } => {
            "--cacert CA.pem (start with --write-ca CA.pem to get the self-signed CA)".to_owned()
        }
        CertSource::Files { .. } => "--cacert <the CA that signed --tls-cert>".to_owned(),
    };
    let ready = monitoring
        .map(|addr| format!("curl -fsS http://{}/readyz, then ", local_url_host(addr)))
        .unwrap_or_default();
    format!(
        "try it: {ready}curl {trust} -H 'Content-Type: application/json' --data @review.json https://{}/inject \
         (review.json: an AdmissionReview of a Pod; the README's quick start has one)",
        local_url_host(admission)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_become_loopback() {
        assert_eq!(
            local_url_host("0.0.0.0:15017".parse().expect("addr")),
            "127.0.0.1:15017"
        );
        assert_eq!(local_url_host("[::]:15017".parse().expect("addr")), "[::1]:15017");
        assert_eq!(
            local_url_host("10.1.2.3:443".parse().expect("addr")),
            "10.1.2.3:443"
        );
    }

    #[test]
    fn the_hint_names_the_ca_file_and_the_bound_ports() {
        let cert = CertSource::SelfSigned {
            dns_names: Vec::new(),
            write_ca: Some("/tmp/ca.pem".into()),
        };
        let line = try_it(
            "0.0.0.0:15017".parse().expect("addr"),
            Some("127.0.0.1:15014".parse().expect("addr")),
            &cert,
        );
        assert!(
            line.starts_with(
                "try it: curl -fsS http://127.0.0.1:15014/readyz, then curl --cacert /tmp/ca.pem "
            ),
            "{line}"
        );
        assert!(line.contains("https://127.0.0.1:15017/inject"), "{line}");
        assert!(!line.contains('\n'));
        let without = try_it(
            "127.0.0.1:1".parse().expect("addr"),
            None,
            &CertSource::SelfSigned {
                dns_names: Vec::new(),
                write_ca: None,
            },
        );
        assert!(without.contains("--write-ca"), "{without}");
        assert!(!without.contains("readyz"), "{without}");
        let spaced = CertSource::SelfSigned {
            dns_names: Vec::new(),
            write_ca: Some("/tmp/my ca's.pem".into()),
        };
        let line = try_it("127.0.0.1:1".parse().expect("addr"), None, &spaced);
        assert!(line.contains(r#"--cacert "/tmp/my ca's.pem" "#), "{line}");
    }
}
