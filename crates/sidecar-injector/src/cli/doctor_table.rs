//! `doctor`'s report for people: one line per check with ✓ / ! / ✗ / ?, then what it is based
//! on and the commands that fix it.

use std::fmt::Write as _;

use injector_doctor::{Report, Verdict};

/// Renders the report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let width = report.checks.iter().map(|c| c.title.len()).max().unwrap_or(0);
    for (number, check) in report.checks.iter().enumerate() {
        let _ = writeln!(
            out,
            "{} {}. {:<width$}  {}",
            check.verdict.mark(),
            number + 1,
            check.title,
            check.summary
        );
    }
    for (number, check) in report.checks.iter().enumerate() {
        if check.evidence.is_empty() && check.fixes.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{} {}. {} [{}]",
            check.verdict.mark(),
            number + 1,
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
