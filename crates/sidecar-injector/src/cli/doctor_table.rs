//! `doctor`'s report for people: one line per check with ✓ / ! / ✗ / ?, then what it is based
//! on and the commands that fix it. Summaries and evidence quote the cluster (names, messages,
//! annotation values): they are [escaped](escape), so nothing in them reaches the terminal as a
//! control character; the fixes are shell-quoted already, and escaping leaves them unchanged.

use std::fmt::Write as _;

use injector_core::terminal::escape;
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
            escape(&check.summary)
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
            let _ = writeln!(out, "    {}", escape(line));
        }
        for fix in &check.fixes {
            let _ = writeln!(out, "  fix: {}", escape(fix));
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

#[cfg(test)]
mod tests {
    use injector_doctor::Check;

    use super::*;

    #[test]
    fn cluster_text_reaches_the_terminal_escaped_and_fixes_unchanged() {
        let mut check = Check::new(
            "annotationPlacement",
            "title",
            Verdict::Warning,
            "summary \u{1b}]0;owned\u{7}",
        );
        check
            .evidence
            .push("Deployment shop/web: \"x\"\r\u{1b}[2K✓ all good".to_owned());
        let fix = injector_core::shell::command(["kubectl", "annotate", "pod", "p", "k=\u{1b}[31m'"]);
        check.fixes.push(fix.clone());
        let text = render(&Report::new(vec![check]));
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
        assert!(text.contains("summary \\x1b]0;owned\\x07"), "{text}");
        assert!(text.contains("\\r\\x1b[2K✓ all good"), "{text}");
        assert!(text.contains(&format!("  fix: {fix}\n")), "{text}");
    }
}
