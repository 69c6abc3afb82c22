//! Cross-site request protection of the console's API.
//!
//! Every `/api` route needs the per-process token (random, embedded in the page, sent back in
//! the `X-Console-Token` header: another site can neither read it nor set a custom header
//! without a CORS preflight the console never grants) — [`check_token`]. The one POST (paste a
//! pod) also needs the `Origin`, when the browser sends one, to be this console's own, and
//! `Sec-Fetch-Site`, when present, to be `same-origin` or `none`; its body must be
//! `application/json`, which a plain HTML form cannot send — [`check`]. A page under another
//! name that reaches the console by DNS rebinding is refused before any of this (see
//! [`super::host`]).

use http::HeaderMap;

/// The header the page sends the token in.
pub const TOKEN_HEADER: &str = "x-console-token";

/// The per-process token.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// 32 random bytes from the operating system, as hex.
    pub fn generate() -> Result<Self, super::ConsoleError> {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| super::ConsoleError::NoRandomBytes)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A fixed token (tests).
    pub fn from_text(text: &str) -> Self {
        Token(text.to_owned())
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a POST was refused (answered `403 Forbidden` with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No token header.
    #[error("missing the console token (the X-Console-Token header the console page sends)")]
    MissingToken,
    /// A token that is not this process's.
    #[error("wrong console token (reload the console page: the token changes when the injector restarts)")]
    WrongToken,
    /// An `Origin` other than the console's own.
    #[error("cross-origin request from {0:?} refused")]
    CrossOrigin(String),
    /// A `Sec-Fetch-Site` other than `same-origin` or `none`.
    #[error("cross-site request ({0}) refused")]
    CrossSite(String),
    /// Not `Content-Type: application/json`.
    #[error("the body must be application/json")]
    NotJson,
}

/// Checks a POST's headers against the token.
pub fn check(headers: &HeaderMap, token: &Token) -> Result<(), Refusal> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return Err(Refusal::CrossSite(site.to_owned()));
    }
    if let Some(origin) = text("origin") {
        let own = text("host").map(|host| format!("http://{host}"));
        if own.as_deref() != Some(origin) {
            return Err(Refusal::CrossOrigin(origin.to_owned()));
        }
    }
    check_token(headers, token)?;
    let json = text("content-type")
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Refusal::NotJson);
    }
    Ok(())
}

/// Checks that a request carries this process's token.
pub fn check_token(headers: &HeaderMap, token: &Token) -> Result<(), Refusal> {
    let given = headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or(Refusal::MissingToken)?;
    if !constant_time_eq(given.as_bytes(), token.0.as_bytes()) {
        return Err(Refusal::WrongToken);
    }
    Ok(())
}

/// Compares without stopping at the first difference (the time says nothing of the token).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().expect("header value"));
        }
        map
    }

    const GOOD: [(&str, &str); 4] = [
        ("host", "127.0.0.1:15080"),
        ("origin", "http://127.0.0.1:15080"),
        ("x-console-token", "abc"),
        ("content-type", "application/json"),
    ];

    #[test]
    fn the_page_s_own_request_passes() {
        let token = Token::from_text("abc");
        assert_eq!(check(&headers(&GOOD), &token), Ok(()));
        let mut same = GOOD.to_vec();
        same.push(("sec-fetch-site", "same-origin"));
        assert_eq!(check(&headers(&same), &token), Ok(()));
    }

    #[test]
    fn requests_without_the_token_or_from_elsewhere_are_refused() {
        let token = Token::from_text("abc");
        let without: Vec<_> = GOOD
            .iter()
            .copied()
            .filter(|(k, _)| *k != "x-console-token")
            .collect();
        assert_eq!(check(&headers(&without), &token), Err(Refusal::MissingToken));
        let mut wrong = without.clone();
        wrong.push(("x-console-token", "abd"));
        assert_eq!(check(&headers(&wrong), &token), Err(Refusal::WrongToken));
        let mut cross = GOOD.to_vec();
        cross[1] = ("origin", "http://evil.example");
        assert!(matches!(
            check(&headers(&cross), &token),
            Err(Refusal::CrossOrigin(_))
        ));
        let mut site = GOOD.to_vec();
        site.push(("sec-fetch-site", "cross-site"));
        assert!(matches!(
            check(&headers(&site), &token),
            Err(Refusal::CrossSite(_))
        ));
        let mut form = GOOD.to_vec();
        form[3] = ("content-type", "application/x-www-form-urlencoded");
        assert_eq!(check(&headers(&form), &token), Err(Refusal::NotJson));
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (
            Token::generate().expect("random"),
            Token::generate().expect("random"),
        );
        assert_eq!(a.as_str().len(), 64);
        assert_ne!(a.as_str(), b.as_str());
        assert_eq!(format!("{a:?}"), "Token(..)", "never logged");
    }
}
