//! Which `Host` the console answers: the defence against DNS rebinding.
//!
//! A page on `http://evil.example:15080` whose name the attacker re-points at 127.0.0.1 is, to
//! the browser, same-origin with itself: it could load the console's page (and the token in
//! it) and call every route. Its requests carry `Host: evil.example:15080`, so the console
//! answers only the names a rebinding page cannot have:
//!
//! * by default, the loopback names on the console's own port — `127.0.0.1:PORT`,
//!   `localhost:PORT`, `[::1]:PORT` (reach it with `kubectl port-forward … PORT`, the same
//!   local port);
//! * with `--console-allow-remote`, also any IP address literal (no DNS name is involved) and
//!   the names given with `--console-host`, on any port (a proxy in front may publish another).
//!
//! Anything else is answered `421 Misdirected Request`.

use std::net::IpAddr;

/// Who may reach the console besides loopback.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConsoleHosts {
    /// Only the loopback names on the console's port (the default).
    #[default]
    LoopbackOnly,
    /// `--console-allow-remote`: also IP literals, and these names (`--console-host`), on any
    /// port.
    Remote(Vec<String>),
}

/// The `Host` rule of one console listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    port: u16,
    hosts: ConsoleHosts,
}

/// Why a request's `Host` was refused (the text of the `421` answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the console answers only http://127.0.0.1:{port}/, http://localhost:{port}/ or http://[::1]:{port}/{extra}; \
     Host {host:?} is refused (a page under another name could be a DNS-rebinding attack). \
     With kubectl port-forward, forward the same local port ({port}); to reach the console by \
     another name, start it with --console-allow-remote --console-host NAME"
)]
pub struct HostRefusal {
    host: String,
    port: u16,
    extra: String,
}

impl HostPolicy {
    /// The rule for a console listening on `port`.
    pub fn new(port: u16, hosts: ConsoleHosts) -> Self {
        HostPolicy { port, hosts }
    }

    /// Checks a request's `Host` (or HTTP/2 `:authority`); `None` is refused.
    pub fn check(&self, host: Option<&str>) -> Result<(), HostRefusal> {
        let refuse = || HostRefusal {
            host: host.unwrap_or("(none)").to_owned(),
            port: self.port,
            extra: match &self.hosts {
                ConsoleHosts::LoopbackOnly => String::new(),
                ConsoleHosts::Remote(names) if names.is_empty() => ", or an IP address".to_owned(),
                ConsoleHosts::Remote(names) => format!(", an IP address, or {}", names.join(", ")),
            },
        };
        let (name, port) = host.and_then(split_host).ok_or_else(refuse)?;
        let name = name.to_ascii_lowercase();
        let loopback = matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1");
        if loopback && port == self.port {
            return Ok(());
        }
        match &self.hosts {
            ConsoleHosts::Remote(names)
                if name.parse::<IpAddr>().is_ok() || names.iter().any(|n| n.eq_ignore_ascii_case(&name)) =>
            {
                Ok(())
            }
            _ => Err(refuse()),
        }
    }
}

/// `name[:port]` or `[v6]:port` → (name, port; 80 when absent). `None` when malformed.
fn split_host(host: &str) -> Option<(&str, u16)> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        match after {
            "" => (name, None),
            _ => (name, Some(after.strip_prefix(':')?)),
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    if name.is_empty() {
        return None;
    }
    let port = match port {
        None => 80,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok()?
        }
        Some(_) => return None,
    };
    Some((name, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_on_the_console_s_port_only() {
        let policy = HostPolicy::new(15080, ConsoleHosts::LoopbackOnly);
        for good in [
            "127.0.0.1:15080",
            "localhost:15080",
            "LocalHost:15080",
            "[::1]:15080",
        ] {
            assert_eq!(policy.check(Some(good)), Ok(()), "{good}");
        }
        for bad in [
            "evil.example:15080",
            "evil.example",
            "127.0.0.1:8080",
            "localhost",
            "10.0.0.5:15080",
            "localhost.:15080",
            "127.0.0.1:15080:1",
            "[::1]15080",
            "",
        ] {
            let refusal = policy.check(Some(bad)).expect_err(bad);
            assert!(refusal.to_string().contains("DNS-rebinding"), "{refusal}");
        }
        assert!(policy.check(None).is_err());
        let text = policy
            .check(Some("evil.example:15080"))
            .expect_err("refused")
            .to_string();
        assert!(
            text.contains("http://127.0.0.1:15080/") && text.contains("\"evil.example:15080\""),
            "{text}"
        );
    }

    #[test]
    fn remote_access_adds_ip_literals_and_the_named_hosts() {
        let policy = HostPolicy::new(15080, ConsoleHosts::Remote(vec!["console.example".into()]));
        for good in [
            "127.0.0.1:15080",
            "10.0.0.5:15080",
            "10.0.0.5",
            "[fd00::1]:443",
            "console.example",
            "Console.Example:8443",
        ] {
            assert_eq!(policy.check(Some(good)), Ok(()), "{good}");
        }
        for bad in [
            "evil.example:15080",
            "console.example.evil.example",
            "localhost:1",
        ] {
            assert!(policy.check(Some(bad)).is_err(), "{bad}");
        }
        let text = policy
            .check(Some("evil.example"))
            .expect_err("refused")
            .to_string();
        assert!(text.contains("an IP address, or console.example"), "{text}");
    }
}
