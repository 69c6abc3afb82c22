//! Check 6: `FailedCreate` events (from the controllers: ReplicaSets, Jobs, StatefulSets, …)
//! whose message names one of our webhooks, grouped by class — x509, no endpoints, timeout,
//! denied by the injector — with the objects concerned and the latest message.

use std::collections::{BTreeMap, BTreeSet};

use injector_core::shell;
use k8s_openapi::api::core::v1::Event;

use super::ours;
use crate::{
    Check, Snapshot, Verdict,
    events::{FailureClass, webhook_named},
};

const ID: &str = "failedCreate";
const TITLE: &str = "recent FailedCreate events naming the webhook";

/// Events last seen longer ago than this are reported as a warning: the fault may be fixed.
pub const RECENT_SECONDS: i64 = 15 * 60;

#[derive(Default)]
struct Group {
    count: i64,
    objects: BTreeSet<String>,
    latest: (i64, String),
}

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let events = match &snapshot.events {
        Ok(events) => events,
        Err(failure) => return Check::unknown(ID, TITLE, failure),
    };
    let names: BTreeSet<String> = ours(snapshot)
        .unwrap_or_default()
        .iter()
        .flat_map(|c| c.webhooks.iter().flatten().map(|w| w.name.clone()))
        .collect();
    let mut groups: BTreeMap<FailureClass, Group> = BTreeMap::new();
    for event in events {
        if event.reason.as_deref() != Some("FailedCreate") {
            continue;
        }
        let message = event.message.as_deref().unwrap_or_default();
        let Some(webhook) = webhook_named(message) else {
            continue;
        };
        if !names.is_empty() && !names.contains(webhook) {
            continue;
        }
        let group = groups.entry(FailureClass::of(message)).or_default();
        group.count += i64::from(event.count.unwrap_or(1).max(1));
        let object = &event.involved_object;
        group.objects.insert(format!(
            "{} {}/{}",
            object.kind.as_deref().unwrap_or("?"),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref().unwrap_or_default()
        ));
        let seen = last_seen(event);
        if seen >= group.latest.0 {
            group.latest = (seen, message.to_owned());
        }
    }
    if groups.is_empty() {
        return Check::new(
            ID,
            TITLE,
            Verdict::Ok,
            "no FailedCreate event names a webhook of ours",
        );
    }
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut parts = Vec::new();
    for (class, group) in &groups {
        let recent = snapshot.now - group.latest.0 <= RECENT_SECONDS;
        check.raise(if recent { Verdict::Error } else { Verdict::Warning });
        parts.push(format!(
            "{}: {} failed creation(s) of {} object(s){}",
            class.label(),
            group.count,
            group.objects.len(),
            if recent {
                String::new()
            } else {
                " (none in the last 15 minutes)".to_owned()
            }
        ));
        check.evidence.push(format!(
            "{}: {}; latest: {}",
            class.label(),
            group.objects.iter().cloned().collect::<Vec<_>>().join(", "),
            group.latest.1
        ));
        check
            .evidence
            .push(format!("{}: {}", class.label(), class.advice()));
        if let Some(first) = group.objects.iter().next() {
            let mut words = first.split(' ');
            let kind = words.next().unwrap_or("").to_ascii_lowercase();
            let (namespace, name) = words.next().unwrap_or("").split_once('/').unwrap_or(("", ""));
            check.fixes.push(shell::command([
                "kubectl", "-n", namespace, "describe", &kind, name,
            ]));
        }
    }
    check.summary = parts.join("; ");
    check
}

/// When an event was last seen, Unix seconds.
fn last_seen(event: &Event) -> i64 {
    event
        .last_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .or_else(|| event.event_time.as_ref().map(|t| t.0.as_second()))
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0.as_second()))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;

    fn event(name: &str, message: &str, seconds_ago: i64) -> Event {
        let at = time::OffsetDateTime::from_unix_timestamp(NOW - seconds_ago)
            .expect("time")
            .format(&time::format_description::well_known::Rfc3339)
            .expect("formats");
        object(
            json!({"metadata": {"name": name, "namespace": "shop"}, "reason": "FailedCreate", "count": 3,
            "message": message, "lastTimestamp": at,
            "involvedObject": {"kind": "ReplicaSet", "namespace": "shop", "name": "web-1"}}),
        )
    }

    #[test]
    fn failures_are_grouped_by_class_and_old_ones_only_warn() {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        )]);
        let refused = r#"Error creating: Internal error occurred: failed calling webhook "namespace.sidecar-injector.istio.io": failed to call webhook: Post "https://127.0.0.1:1/inject?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused"#;
        let other_vendor = r#"Error creating: failed calling webhook "other.example.com": x509: certificate signed by unknown authority"#;
        snapshot.events = Ok(vec![
            event("a", refused, 10),
            event("b", refused, 20),
            event("c", other_vendor, 5),
        ]);
        let check1 = check(&snapshot);
        assert_eq!(check1.verdict, Verdict::Error);
        assert_eq!(
            check1.summary,
            "no endpoints: 6 failed creation(s) of 1 object(s)"
        );
        assert_eq!(check1.fixes, vec!["kubectl -n shop describe replicaset web-1"]);
        snapshot.events = Ok(vec![event("a", refused, 3600)]);
        assert_eq!(check(&snapshot).verdict, Verdict::Warning);
        snapshot.events = Ok(vec![event("c", other_vendor, 5)]);
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
    }
}
