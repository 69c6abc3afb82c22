//! Check 3: `sidecar.istio.io/inject` where it has no effect — on a workload's own metadata
//! instead of its pod template (the troubleshooting page's Deployment trap) — and pods whose label and
//! annotation disagree (the label wins).

use injector_core::{decision::INJECT_KEY, shell, workload};
use serde_json::json;

use crate::{Check, Snapshot, Verdict};

const ID: &str = "annotationPlacement";
const TITLE: &str = "sidecar.istio.io/inject on the pod template";

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut misplaced = 0;
    let mut examined = 0;
    let mut unreadable = Vec::new();
    for (kind, read) in &snapshot.workloads {
        let objects = match read {
            Ok(objects) => objects,
            Err(failure) => {
                unreadable.push(failure.explain());
                if failure.kind == crate::ReadFailureKind::Forbidden {
                    check.fixes.push(failure.permission_check());
                }
                continue;
            }
        };
        for object in objects {
            let Ok(Some(template)) = workload::pod_template(object) else {
                continue;
            };
            examined += 1;
            let on_owner = template
                .owner_annotations
                .get(INJECT_KEY)
                .or_else(|| template.owner_labels.get(INJECT_KEY));
            let Some(value) = on_owner else { continue };
            if template.annotations.contains_key(INJECT_KEY) || template.labels.contains_key(INJECT_KEY) {
                continue;
            }
            misplaced += 1;
            let namespace = template
                .owner
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            check.evidence.push(format!(
                "{kind} {namespace}/{}: sidecar.istio.io/inject: {value:?} is on the {kind}'s own metadata: {}",
                template.owner.name,
                template.misplaced_mistake().message
            ));
            check.fixes.push(shell::command([
                "kubectl",
                "-n",
                &namespace,
                "patch",
                template.kind.resource(),
                &template.owner.name,
                "--type=merge",
                "-p",
                &template_patch(&template.template_path, value),
            ]));
        }
    }
    let mut disagreeing = 0;
    match &snapshot.pods {
        Ok(pods) => {
            for pod in pods {
                let label = pod.metadata.labels.as_ref().and_then(|l| l.get(INJECT_KEY));
                let annotation = pod.metadata.annotations.as_ref().and_then(|a| a.get(INJECT_KEY));
                if let (Some(label), Some(annotation)) = (label, annotation)
                    && label != annotation
                {
                    disagreeing += 1;
                    check.evidence.push(format!(
                        "Pod {}/{}: label sidecar.istio.io/inject={label:?} and annotation {annotation:?} disagree; the label wins",
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.name.as_deref().unwrap_or_default()
                    ));
                }
            }
        }
        Err(failure) => unreadable.push(failure.explain()),
    }
    if misplaced + disagreeing > 0 {
        check.raise(Verdict::Warning);
        check.summary = format!(
            "{misplaced} workload(s) with the setting on their own metadata, {disagreeing} pod(s) whose label and annotation disagree"
        );
    } else if !unreadable.is_empty() {
        check.raise(Verdict::Unknown);
        check.summary = unreadable.join("; ");
    } else {
        check.summary =
            format!("{examined} workload(s) examined: every sidecar.istio.io/inject is on a pod template");
    }
    if !unreadable.is_empty() && check.verdict != Verdict::Unknown {
        check.evidence.extend(unreadable);
    }
    check
}

/// The merge patch that puts the setting on the pod template at `path` (`spec.template`).
fn template_patch(path: &str, value: &str) -> String {
    let mut patch = json!({"metadata": {"annotations": {INJECT_KEY: value}}});
    for key in path.split('.').filter(|k| !k.is_empty()).rev() {
        patch = json!({ key: patch });
    }
    shell::json(&patch)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;

    fn deployment(
        owner_annotations: serde_json::Value,
        template_annotations: serde_json::Value,
    ) -> serde_json::Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "annotations": owner_annotations},
            "spec": {"template": {"metadata": {"annotations": template_annotations}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
        })
    }

    #[test]
    fn the_deployment_trap_is_found_with_the_patch_that_moves_the_annotation() {
        let mut snapshot = empty();
        snapshot.workloads.insert(
            "Deployment".into(),
            Ok(vec![deployment(
                json!({"sidecar.istio.io/inject": "true"}),
                json!({}),
            )]),
        );
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Warning);
        assert!(check.evidence[0].contains("Deployment shop/web"), "{check:?}");
        assert_eq!(
            check.fixes,
            vec![
                r#"kubectl -n shop patch deployment web --type=merge -p '{"spec":{"template":{"metadata":{"annotations":{"sidecar.istio.io/inject":"true"}}}}}'"#
            ]
        );
    }

    #[test]
    fn a_template_that_carries_it_too_is_fine_and_an_unreadable_kind_says_why() {
        let mut snapshot = empty();
        snapshot.workloads.insert(
            "Deployment".into(),
            Ok(vec![deployment(
                json!({"sidecar.istio.io/inject": "true"}),
                json!({"sidecar.istio.io/inject": "true"}),
            )]),
        );
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
        snapshot
            .workloads
            .insert("CronJob".into(), Err(forbidden("list cronjobs")));
        let partial = check(&snapshot);
        assert_eq!(partial.verdict, Verdict::Unknown);
        assert!(partial.summary.contains("list cronjobs"));
    }

    #[test]
    fn pods_whose_label_and_annotation_disagree_are_named() {
        let mut snapshot = empty();
        snapshot.pods = Ok(vec![object(
            json!({"metadata": {"name": "p", "namespace": "shop",
            "labels": {"sidecar.istio.io/inject": "false"}, "annotations": {"sidecar.istio.io/inject": "true"}}}),
        )]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Warning);
        assert!(check.evidence[0].contains("Pod shop/p"));
    }
}
