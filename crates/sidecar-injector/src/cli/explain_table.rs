//! The human-readable report of `explain`: the three conditions that decide injection, the deciding one
//! marked, then every check, the warnings and the commands that would change the outcome. Names,
//! values and reasons come from the manifest or the cluster: they are [escaped](escape), so none
//! reaches the terminal as a control character (the colours are ours, added around them).

use std::{fmt::Write as _, io::IsTerminal};

use comfy_table::{Attribute, Cell, Color, Table, presets::NOTHING};
use injector_core::{
    explain::{Explanation, Stage, WebhookSource},
    terminal::escape,
};

/// Marks the row or check that decided.
const DECIDES: &str = "◀ decides";

/// Whether to use colours: standard output is a terminal and `NO_COLOR` is unset.
pub fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Renders every explanation, separated by a blank line.
pub fn render(explanations: &[Explanation], color: bool) -> String {
    explanations
        .iter()
        .map(|e| render_one(e, color))
        .collect::<Vec<_>>()
        .join("\n")
}

fn render_one(explanation: &Explanation, color: bool) -> String {
    let mut out = String::new();
    let verdict = if explanation.injected {
        "INJECTED"
    } else {
        "NOT INJECTED"
    };
    let _ = writeln!(
        out,
        "{} {}/{}: {verdict}",
        escape(&explanation.kind),
        escape(&explanation.namespace),
        escape(display_name(explanation))
    );
    let _ = writeln!(out, "{}", escape(&capitalize(&explanation.reason)));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{}",
        indent(&conditions_table(explanation, color).to_string())
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "Checks, in the order the cluster makes them:");
    let _ = writeln!(out, "{}", indent(&checks_table(explanation, color).to_string()));
    if !explanation.warnings.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Warnings:");
        for warning in &explanation.warnings {
            let _ = writeln!(out, "  ! {}", escape(warning));
        }
    }
    if !explanation.remedies.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "To change the outcome:");
        for remedy in &explanation.remedies {
            let _ = writeln!(out, "  - {}", escape(&remedy.description));
            if let Some(command) = &remedy.command {
                let _ = writeln!(out, "      {}", escape(command));
            }
        }
    }
    out
}

/// Which condition decided: 1 namespaceSelector, 2 policy, 3 pod override, 0 another rule.
fn deciding_row(explanation: &Explanation) -> usize {
    match explanation.decided_by.as_str() {
        "namespaceSelector" | "objectSelector" | "rules" => 1,
        "defaultPolicy" | "invalidPolicy" | "neverInjectSelector" | "alwaysInjectSelector" => 2,
        "podOverride" => 3,
        _ => 0,
    }
}

fn conditions_table(explanation: &Explanation, color: bool) -> Table {
    let conditions = &explanation.conditions;
    let deciding = deciding_row(explanation);
    let selector_value = if conditions.namespace_selectors.is_empty() {
        "-".to_owned()
    } else {
        conditions.namespace_selectors.join("  |  ")
    };
    let selector_result = match (
        conditions.namespace_selector_matches,
        explanation.decided_by.as_str(),
    ) {
        (None, _) => "not checked (--webhook none)".to_owned(),
        (Some(true), "objectSelector") => "yes, but the objectSelector does not match the pod".to_owned(),
        (Some(true), _) => "yes".to_owned(),
        (Some(false), _) => "no: the webhook is never called".to_owned(),
    };
    let selector_result = if explanation.webhook_source == WebhookSource::IstioChart {
        format!("{selector_result} (Istio's chart webhooks assumed)")
    } else {
        selector_result
    };
    let policy_value = match explanation.decided_by.as_str() {
        "neverInjectSelector" | "alwaysInjectSelector" => {
            format!("{} ({} matched)", conditions.policy, explanation.decided_by)
        }
        _ => format!("{:?}", conditions.policy),
    };
    let policy_result = if conditions.policy_valid {
        "valid"
    } else {
        "invalid: injection disabled for every pod"
    };
    let override_value = match (&conditions.pod_override, conditions.pod_override_source) {
        (Some(value), Some(source)) => format!("{value:?} ({})", source.noun()),
        _ => "absent".to_owned(),
    };
    let override_result = match conditions.pod_override.as_deref() {
        None | Some("") => "use the default policy",
        Some("true") => "force injection",
        Some("false") => "prevent injection",
        Some(_) => "ignored (only \"true\"/\"false\" count)",
    };
    let mut rows = vec![
        (
            1,
            "namespaceSelector matches the namespace",
            selector_value,
            selector_result,
        ),
        (2, "default policy", policy_value, policy_result.to_owned()),
        (
            3,
            "pod's sidecar.istio.io/inject",
            override_value,
            override_result.to_owned(),
        ),
    ];
    if deciding == 0 {
        let rule = explanation.decided_by.clone();
        rows.push((0, "injector rule", rule, "decides before the policy".to_owned()));
    }
    let mut table = new_table(color);
    table.set_header(vec!["CONDITION", "VALUE", "RESULT", ""]);
    for (number, condition, value, result) in rows {
        let decisive = number == deciding;
        table.add_row(vec![
            styled(condition, decisive, color),
            styled(&value, decisive, color),
            styled(&result, decisive, color),
            styled(if decisive { DECIDES } else { "" }, decisive, color),
        ]);
    }
    let verdict = if explanation.injected {
        "injected"
    } else {
        "not injected"
    };
    let verdict_cell = if color {
        let tint = if explanation.injected {
            Color::Green
        } else {
            Color::Red
        };
        Cell::new(verdict).fg(tint).add_attribute(Attribute::Bold)
    } else {
        Cell::new(verdict)
    };
    table.add_row(vec![
        Cell::new("=> verdict"),
        Cell::new(""),
        verdict_cell,
        Cell::new(""),
    ]);
    table
}

fn checks_table(explanation: &Explanation, color: bool) -> Table {
    let mut table = new_table(color);
    table.set_header(vec!["BY", "CHECK", "INPUT", "OUTCOME", ""]);
    for step in &explanation.steps {
        let by = match (&step.stage, &step.webhook) {
            (Stage::ApiServer, Some(webhook)) => format!("api-server [{webhook}]"),
            (Stage::ApiServer, None) => "api-server".to_owned(),
            (Stage::Injector, _) => "injector".to_owned(),
        };
        let decisive = step.decisive;
        table.add_row(vec![
            styled(&by, decisive, color),
            styled(&step.check, decisive, color),
            styled(&step.input, decisive, color),
            styled(&step.outcome, decisive, color),
            styled(if decisive { DECIDES } else { "" }, decisive, color),
        ]);
    }
    table
}

fn new_table(color: bool) -> Table {
    let mut table = Table::new();
    table.load_style(NOTHING);
    if color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    table
}

fn styled(text: &str, decisive: bool, color: bool) -> Cell {
    let cell = Cell::new(escape(text));
    if decisive && color {
        cell.fg(Color::Yellow).add_attribute(Attribute::Bold)
    } else {
        cell
    }
}

fn display_name(explanation: &Explanation) -> &str {
    if explanation.name.is_empty() {
        "<unnamed>"
    } else {
        &explanation.name
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {}", line.trim_end()))
        .collect::<Vec<_>>()
        .join("\n")
}
