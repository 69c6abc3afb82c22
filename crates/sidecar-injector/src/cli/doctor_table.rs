//! `doctor`'s report for people: one line per check with ✓ / ! / ✗ / ?, then what it is based
//! on and the commands that fix it.

use std::fmt::Write as _;

use injector_doctor::{Report, Verdict};

/// The checks' numbers, as the troubleshooting page orders them (stable whichever checks ran).
const ORDER: &[&str] = &[
    "webhooks",
    "policy",
    "annotationPlacement",
    "caBundle",
    "endpoints",
    "failedCreate",
    "expiry",
    "selfDeadlock",
    "probe",
    "blastRadius",
];

fn number(id: &str) -> usize {
    ORDER.iter().position(|known| *known == id).map_or(0, |i| i + 1)
}

/// Renders the report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let width = report.checks.iter().map(|c| c.title.len()).max().unwrap_or(0);
    for check in &report.checks {
        let _ = writeln!(
            out,
            "{} {}. {:<width$}  {}",
            check.verdict.mark(),
            number(check.id),
            check.title,
            check.summary
        );
    }
    for check in &report.checks {
        if check.evidence.is_empty() && check.fixes.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{} {}. {} [{}]",
            check.verdict.mark(),
            number(check.id),
            check.title,
            check.id
        );
        for line in &check.evidence {
            let _ = writeln!(out, "    {line}");
        }
        for fix in &check.fixes {
            let _ = writeln!(out, "  fix: {fix}");
        }
    }
    let summary = report.summary;
    let _ = writeln!(
        out,
        "\n{} ok, {} warning(s), {} error(s), {} could not run{}",
        summary.ok,
        summary.warnings,
        summary.errors,
        summary.unknown,
        match report.checks.iter().map(|c| c.verdict).max() {
            Some(Verdict::Error) => ": pod creation or injection is broken",
            _ => "",
        }
    );
    out
}
