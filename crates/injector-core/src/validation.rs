//! Kubernetes' syntax rules for label keys and values (`k8s.io/apimachinery/pkg/util/validation`).
//!
//! The API server rejects selectors and objects whose labels break these rules, so we check them
//! too: a selector that the API server would refuse must not look valid in `explain`.

/// Longest label value, and longest name part of a label key.
const MAX_NAME_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain (the prefix of a label key).
const MAX_SUBDOMAIN_LENGTH: usize = 253;

/// Checks a label key: `[prefix/]name`, where the prefix is a DNS subdomain and the name is a
/// qualified-name part. Returns a message saying what is wrong.
pub fn validate_label_key(key: &str) -> Result<(), String> {
    let mut parts = key.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => {
            return Err(
                "a label key has at most one '/', separating an optional DNS prefix from the name".into(),
            );
        }
    };
    if let Some(prefix) = prefix {
        validate_subdomain(prefix).map_err(|message| format!("prefix part {message}"))?;
    }
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    validate_name_part(name).map_err(|message| format!("name part {message}"))
}

/// Checks a label value: empty, or at most 63 alphanumerics, `-`, `_`, `.`, starting and
/// ending with an alphanumeric.
pub fn validate_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    validate_name_part(value)
}

fn validate_name_part(text: &str) -> Result<(), String> {
    if text.len() > MAX_NAME_LENGTH {
        return Err(format!("must be no more than {MAX_NAME_LENGTH} characters"));
    }
    let alphanumeric = |c: char| c.is_ascii_alphanumeric();
    let inner = |c: char| alphanumeric(c) || matches!(c, '-' | '_' | '.');
    let starts_and_ends = text.starts_with(alphanumeric) && text.ends_with(alphanumeric);
    if !starts_and_ends || !text.chars().all(inner) {
        return Err(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
                    with an alphanumeric character"
                .into(),
        );
    }
    Ok(())
}

fn validate_subdomain(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("must not be empty".into());
    }
    if text.len() > MAX_SUBDOMAIN_LENGTH {
        return Err(format!("must be no more than {MAX_SUBDOMAIN_LENGTH} characters"));
    }
    let lower_alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.starts_with(lower_alphanumeric)
            && label.ends_with(lower_alphanumeric)
            && label.chars().all(|c| lower_alphanumeric(c) || c == '-')
    };
    if !text.split('.').all(label_ok) {
        return Err("must be a lowercase DNS subdomain (e.g. 'example.com')".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_real_keys() {
        for key in [
            "app",
            "istio-injection",
            "sidecar.istio.io/inject",
            "kubernetes.io/metadata.name",
            "A_b.c-9",
        ] {
            assert_eq!(validate_label_key(key), Ok(()), "{key}");
        }
    }

    #[test]
    fn rejects_bad_keys() {
        for key in [
            "",
            "a/b/c",
            "/name",
            "Example.com/x",
            "x/",
            "-app",
            "app-",
            "has space",
            &"k".repeat(64),
        ] {
            assert!(validate_label_key(key).is_err(), "{key:?} should be rejected");
        }
    }

    #[test]
    fn values_may_be_empty_but_not_malformed() {
        assert_eq!(validate_label_value(""), Ok(()));
        assert_eq!(validate_label_value("enabled"), Ok(()));
        assert_eq!(validate_label_value(&"v".repeat(63)), Ok(()));
        assert!(validate_label_value(&"v".repeat(64)).is_err());
        assert!(validate_label_value("a b").is_err());
        assert!(validate_label_value("a/b").is_err());
        assert!(validate_label_value(".a").is_err());
    }
}
