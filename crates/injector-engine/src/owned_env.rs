//! The environment variables through which Istio's templates read settings this injector owns.
//!
//! istiod takes some injection settings from its own environment, and templates of older
//! releases read them too, with `env`: the sidecar template of Istio 1.26 and earlier decides
//! native sidecars with `env "ENABLE_NATIVE_SIDECARS" "false"` rather than `.NativeSidecars`.
//! This injector takes those settings as [`Options`]; a template's `env` of one of these names
//! answers with the option's value, so the template agrees with the injector's own resolved
//! setting whatever the injector's process environment holds. Every other name is read from the
//! environment, as Istio does.

use crate::Options;

/// Each environment variable istiod reads for a setting of [`Options`], with the value `options`
/// gives it, as istiod would see it set. The one place that maps owned settings to env names.
pub fn owned_env(options: &Options) -> Vec<(&'static str, String)> {
    vec![
        // Istio's features.EnableNativeSidecars (pilot/pkg/features).
        ("ENABLE_NATIVE_SIDECARS", options.native_sidecars.to_string()),
        // Istio's common features.CompliancePolicy (pkg/features).
        ("COMPLIANCE_POLICY", options.compliance_policy.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owned_setting_is_named_once() {
        let names: Vec<_> = owned_env(&Options::default())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "{names:?}");
    }

    #[test]
    fn native_sidecars_follow_the_option() {
        for native in [true, false] {
            let options = Options {
                native_sidecars: native,
                ..Options::default()
            };
            let env = owned_env(&options);
            assert!(
                env.contains(&("ENABLE_NATIVE_SIDECARS", native.to_string())),
                "{env:?}"
            );
        }
    }
}
