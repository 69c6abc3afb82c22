//! Check 2: the default policy in the injector ConfigMap; a value other than `enabled` or
//! `disabled` disables injection for every pod, even those annotated `"true"`.

use injector_core::{config::parse_injector_config, decision::Policy, shell};

use crate::{Check, Snapshot, Verdict};

const ID: &str = "policy";
const TITLE: &str = "default injection policy";

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let settings = &snapshot.settings;
    let where_ = format!(
        "ConfigMap {}/{}",
        settings.injector_namespace, settings.injector_configmap
    );
    let edit = format!(
        "{}   # data.config: policy: enabled (or disabled)",
        shell::command([
            "kubectl",
            "-n",
            &settings.injector_namespace,
            "edit",
            "configmap",
            &settings.injector_configmap,
        ])
    );
    let configmap = match &snapshot.injector_configmap {
        Err(failure) => return Check::unknown(ID, TITLE, failure),
        Ok(None) => {
            let mut check = Check::new(
                ID,
                TITLE,
                Verdict::Error,
                format!("{where_} does not exist: the injector has no configuration to inject with"),
            );
            check.fixes.push(shell::command([
                "kubectl",
                "-n",
                &settings.injector_namespace,
                "get",
                "configmaps",
            ]));
            check.fixes.push(format!(
                "create it (istioctl install, the chart, or {})",
                shell::command([
                    "kubectl",
                    "-n",
                    &settings.injector_namespace,
                    "create",
                    "configmap",
                    &settings.injector_configmap,
                    "--from-file=config=CONFIG",
                    "--from-file=values=VALUES",
                ])
            ));
            return check;
        }
        Ok(Some(configmap)) => configmap,
    };
    let Some(text) = configmap.data.as_ref().and_then(|d| d.get("config")) else {
        let mut check = Check::new(ID, TITLE, Verdict::Error, format!("{where_} has no data.config"));
        check.fixes.push(edit);
        return check;
    };
    let loaded = match parse_injector_config(text) {
        Ok(loaded) => loaded,
        Err(error) => {
            let mut check = Check::new(
                ID,
                TITLE,
                Verdict::Error,
                format!("{where_} data.config does not parse: {error}"),
            );
            check.fixes.push(edit);
            return check;
        }
    };
    let policy = &loaded.config.injection.policy;
    let mut check = match policy {
        Policy::Enabled => Check::new(
            ID,
            TITLE,
            Verdict::Ok,
            "policy: enabled — pods in scope are injected unless they opt out",
        ),
        Policy::Disabled => Check::new(
            ID,
            TITLE,
            Verdict::Ok,
            "policy: disabled — only pods annotated sidecar.istio.io/inject: \"true\" are injected",
        ),
        Policy::Invalid(value) => {
            let mut check = Check::new(
                ID,
                TITLE,
                Verdict::Error,
                format!(
                    "policy: {value:?} is not enabled or disabled: injection is DISABLED for every pod, even those annotated \"true\""
                ),
            );
            check
                .evidence
                .push(format!("the injector logs: {}", Policy::invalid_message(value)));
            check.fixes.push(edit);
            check
        }
    };
    check
        .evidence
        .insert(0, format!("{where_}, data.config policy: {:?}", policy.as_str()));
    let selectors = &loaded.config.injection;
    if !selectors.never_inject_selector.is_empty() || !selectors.always_inject_selector.is_empty() {
        check.evidence.push(format!(
            "neverInjectSelector: {} selector(s), alwaysInjectSelector: {} selector(s)",
            selectors.never_inject_selector.len(),
            selectors.always_inject_selector.len()
        ));
    }
    check
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn an_unknown_policy_is_an_error_that_says_it_disables_injection() {
        let mut snapshot = empty();
        snapshot.injector_configmap = Ok(Some(configmap("policy: enable\n")));
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Error);
        assert!(check.summary.contains("\"enable\""));
        assert!(check.summary.contains("DISABLED for every pod"));
        assert!(check.fixes[0].starts_with("kubectl -n istio-system edit configmap istio-sidecar-injector"));
    }

    #[test]
    fn enabled_and_disabled_are_fine_and_a_missing_configmap_is_not() {
        let mut snapshot = empty();
        snapshot.injector_configmap = Ok(Some(configmap("policy: disabled\n")));
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
        snapshot.injector_configmap = Ok(Some(configmap("policy: enabled\n")));
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
        snapshot.injector_configmap = Ok(None);
        let missing = check(&snapshot);
        assert_eq!(missing.verdict, Verdict::Error);
        assert!(
            missing
                .summary
                .contains("istio-system/istio-sidecar-injector does not exist")
        );
        snapshot.injector_configmap = Err(forbidden("get configmaps istio-system/istio-sidecar-injector"));
        assert_eq!(check(&snapshot).verdict, Verdict::Unknown);
    }
}
