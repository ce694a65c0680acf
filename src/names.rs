//! Kubernetes names, checked before anything is contacted so that a typo never reaches an API
//! server. Shared by the command line and by values read from a kubeconfig.

/// RFC 1123 label: at most 63 characters of [a-z0-9-], starting and ending alphanumeric.
pub fn validate_dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("it is empty".into());
    }
    if s.len() > 63 {
        return Err(format!("{} characters, at most 63 are allowed", s.len()));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "{c:?} is not allowed: use lowercase letters, digits and '-'"
        ));
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err("it must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A namespace flag's value (`-n`, `--pod-namespace`): Kubernetes namespaces are RFC 1123
/// labels.
pub(crate) fn parse_namespace(s: &str) -> Result<String, String> {
    validate_dns1123_label(s)
        .map(|_| s.to_string())
        .map_err(|why| format!("not a valid namespace name: {why}"))
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub(crate) fn validate_dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.len() > 253 {
        return Err(format!("{} characters, at most 253 are allowed", s.len()));
    }
    if s.is_empty() {
        return Err("it is empty".into());
    }
    for label in s.split('.') {
        validate_dns1123_label(label).map_err(|e| {
            if label.is_empty() {
                "it has an empty part between dots".to_string()
            } else {
                e
            }
        })?;
    }
    Ok(())
}

/// An object's `metadata.name` as the API server accepts it for a custom resource and most
/// kinds: apimachinery's `IsDNS1123Subdomain` (`k8s.io/apimachinery/pkg/util/validation`), at
/// most 253 characters of dot-separated parts of `[a-z0-9-]`, each starting and ending with a
/// letter or digit. Unlike [`validate_dns1123_subdomain`] (the command line's cluster name) a
/// part may be longer than 63 characters, as apimachinery's regex allows.
pub(crate) fn is_object_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["tkc", "tkc-prod", "a1", "tkc.prod", &"a".repeat(63)] {
            assert!(validate_dns1123_subdomain(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Tkc",
            "tkc_prod",
            "-tkc",
            "tkc-",
            "tkc..prod",
            "tkc/prod",
            "tkc prod",
            &"a".repeat(64),
        ] {
            assert!(validate_dns1123_subdomain(bad).is_err(), "{bad:?}");
        }
        assert!(validate_dns1123_label("ns.prod").is_err());
        assert!(validate_dns1123_label("ns-prod").is_ok());
        assert!(is_object_name(&format!("{}.b", "a".repeat(100))));
        for bad in [
            "",
            "-a",
            "a-",
            "a..b",
            "A",
            "a_b",
            "--server=x",
            "$(id)",
            &"a".repeat(254),
        ] {
            assert!(!is_object_name(bad), "{bad:?}");
        }
    }
}
