//! The readable reports of `preview` and `outdated`: one block per group, its count, its names
//! and what changes, then the counts and what the exit status means. Every name, value and
//! message from the cluster is [escaped](escape): nothing in it reaches the terminal as a control
//! character.

use std::{fmt::Write as _, time::Duration};

use injector_core::terminal::escape;

use injector_fleet::{
    grouping::Group,
    outdated::{self, Staleness},
    pod_diff::{FieldChange, PodDiff, Presence},
    preview::{Report, Verdict},
    snapshot::ObjectKey,
};
use serde_json::Value;

/// The `preview` report.
pub fn preview(
    report: &Report,
    current: &str,
    proposed: &str,
    notes: &[String],
    elapsed: Duration,
    max_names: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Current:  {}", escape(current));
    let _ = writeln!(out, "Proposed: {}", escape(proposed));
    for note in notes {
        let _ = writeln!(out, "note: {}", escape(note));
    }
    for group in &report.groups {
        out.push('\n');
        let _ = writeln!(out, "{}", heading(group));
        match &group.shared {
            Verdict::Breaks { error } | Verdict::StillFailing { error } => {
                let _ = writeln!(out, "  error: {}", one_line(error));
            }
            Verdict::Fixed { error } => {
                let _ = writeln!(out, "  failing today with: {}", one_line(error));
            }
            Verdict::Invalid { problems } => {
                for problem in problems {
                    let _ = writeln!(out, "  refused by the API server: {}", escape(problem));
                }
            }
            Verdict::NowInjected { was } => {
                let _ = writeln!(out, "  today: {}", escape(was));
            }
            Verdict::NoLongerInjected { reason } | Verdict::NotInjected { reason } => {
                let _ = writeln!(out, "  because: {}", escape(reason));
            }
            Verdict::Changed { diff } => write_diff(&mut out, diff, "  "),
            Verdict::Unchanged => {}
        }
        let _ = writeln!(out, "  {}", names(&group.workloads, group.count, max_names));
    }
    let c = &report.counts;
    let _ = writeln!(
        out,
        "\n{} workloads previewed in {:.2} s: {} broken, {} no longer injected, {} newly injected, {} changed, {} fixed, \
         {} failing under both, {} unchanged, {} not injected.",
        c.workloads,
        elapsed.as_secs_f64(),
        c.broken,
        c.no_longer_injected,
        c.now_injected,
        c.changed,
        c.fixed,
        c.still_failing,
        c.unchanged,
        c.not_injected
    );
    if report.breaks() {
        let _ = writeln!(
            out,
            "Exit status 3: the proposal breaks {} workload{} (0: breaks none; 1: preview could not run).",
            c.broken,
            if c.broken == 1 { "" } else { "s" }
        );
    } else {
        let _ = writeln!(
            out,
            "Exit status 0: the proposal breaks no workload (3 when it would; 1: preview could not run)."
        );
    }
    out
}

fn heading(group: &Group<Verdict>) -> String {
    let count = plural(group.count, "workload");
    match &group.shared {
        Verdict::Breaks { .. } => {
            format!("BREAKS {count}: the proposal fails to inject their pods (pods could not be created)")
        }
        Verdict::Invalid { .. } => {
            format!("BREAKS {count}: the proposal injects pods the API server would refuse")
        }
        Verdict::NoLongerInjected { .. } => format!("NO LONGER INJECTED {count}"),
        Verdict::NowInjected { .. } => format!("NEWLY INJECTED {count}"),
        Verdict::Changed { diff } if diff.is_image_only() => format!("CHANGED {count}: image only"),
        Verdict::Changed { diff } => format!("CHANGED {count}: {}", escape(&diff.kinds().join("; "))),
        Verdict::Fixed { .. } => format!("FIXED {count}: failing today, injected under the proposal"),
        Verdict::StillFailing { .. } => format!("FAILING UNDER BOTH {count} (not caused by the proposal)"),
        Verdict::Unchanged => format!("UNCHANGED {count}: injected identically"),
        Verdict::NotInjected { .. } => format!("NOT INJECTED {count} (under both)"),
    }
}

/// Writes a diff, one line per field.
pub fn write_diff(out: &mut String, diff: &PodDiff, indent: &str) {
    for container in &diff.containers {
        let list = if container.list == "initContainers" {
            " (init)"
        } else {
            ""
        };
        match container.presence {
            Presence::Added => {
                let _ = writeln!(out, "{indent}+ container {}{list}", escape(&container.name));
            }
            Presence::Removed => {
                let _ = writeln!(out, "{indent}- container {}{list}", escape(&container.name));
            }
            Presence::Changed => {
                for field in &container.fields {
                    let _ = writeln!(
                        out,
                        "{indent}{}{list}: {}",
                        escape(&container.name),
                        change(field)
                    );
                }
            }
        }
    }
    for volume in &diff.volumes {
        let sign = match volume.presence {
            Presence::Added => "+ volume",
            Presence::Removed => "- volume",
            Presence::Changed => "~ volume",
        };
        let _ = writeln!(out, "{indent}{sign} {}", escape(&volume.name));
    }
    for field in &diff.pod {
        let _ = writeln!(out, "{indent}pod: {}", change(field));
    }
}

fn change(field: &FieldChange) -> String {
    format!(
        "{} {} → {}",
        escape(&field.field),
        shown(field.before.as_ref()),
        shown(field.after.as_ref())
    )
}

fn shown(value: Option<&Value>) -> String {
    let text = match value {
        None => return "(none)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    const MAX: usize = 160;
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{}…", escape(&cut))
    } else {
        escape(&text).into_owned()
    }
}

fn one_line(text: &str) -> String {
    escape(&text.split_whitespace().collect::<Vec<_>>().join(" ")).into_owned()
}

fn plural(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// The first `max` names (all with 0) of a group of `count` (which may keep only the first
/// few), and how many more there are.
fn names(keys: &[ObjectKey], count: usize, max: usize) -> String {
    let shown = if max == 0 { keys.len() } else { max.min(keys.len()) };
    let mut text = keys[..shown]
        .iter()
        .map(|key| escape(&key.to_string()).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if shown < count {
        let _ = write!(text, ", … and {} more (--max-names 0 lists all)", count - shown);
    }
    text
}

/// The `outdated` report.
pub fn outdated(report: &outdated::Report, current: &str, notes: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Current configuration: {}", escape(current));
    for note in notes {
        let _ = writeln!(out, "note: {}", escape(note));
    }
    let _ = writeln!(
        out,
        "{} pods, {} injected: {} up to date, {} with a stale sidecar in {} owners.",
        report.pods,
        report.injected,
        report.up_to_date,
        report.stale(),
        report.owners.len()
    );
    for owner in &report.owners {
        out.push('\n');
        let kind = if owner.image_only {
            "image only".to_owned()
        } else {
            let mut kinds: Vec<String> = owner
                .pods
                .iter()
                .flat_map(|p| match &p.staleness {
                    Staleness::Image { .. } => vec!["image".to_owned()],
                    Staleness::Fields { kinds, .. } => kinds.clone(),
                    Staleness::NoLongerInjected { .. } => vec!["no longer injected".to_owned()],
                    Staleness::CannotInject { .. } => vec!["the current configuration fails".to_owned()],
                })
                .collect();
            kinds.sort();
            kinds.dedup();
            kinds.join("; ")
        };
        let _ = writeln!(
            out,
            "{} — {}: {}",
            escape(&owner.owner.to_string()),
            plural(owner.pods.len(), "pod"),
            escape(&kind)
        );
        let _ = writeln!(
            out,
            "  pods: {}",
            escape(
                &owner
                    .pods
                    .iter()
                    .map(|p| p.pod.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        let mut shown_diffs: Vec<String> = Vec::new();
        for pod in &owner.pods {
            let mut text = String::new();
            match &pod.staleness {
                Staleness::Image { diff } | Staleness::Fields { diff, .. } => {
                    write_diff(&mut text, diff, "  ")
                }
                Staleness::NoLongerInjected { reason } => {
                    let _ = writeln!(text, "  not injected today: {}", escape(reason));
                }
                Staleness::CannotInject { error } => {
                    let _ = writeln!(text, "  the current configuration fails: {}", one_line(error));
                }
            }
            if !shown_diffs.contains(&text) {
                out.push_str(&text);
                shown_diffs.push(text);
            }
        }
        if let Some(command) = &owner.remedy.command {
            let _ = writeln!(out, "  to update: {}", escape(command));
        }
        if let Some(note) = &owner.remedy.note {
            let _ = writeln!(out, "  note: {}", escape(note));
        }
    }
    let commands: Vec<&str> = report
        .owners
        .iter()
        .filter(|o| o.remedy.restartable)
        .filter_map(|o| o.remedy.command.as_deref())
        .collect();
    if !commands.is_empty() {
        let _ = writeln!(
            out,
            "\nRollout commands (or run with --restart for a paced restart):"
        );
        for command in commands {
            let _ = writeln!(out, "  {}", escape(command));
        }
    }
    out
}
