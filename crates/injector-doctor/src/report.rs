//! A check's result and the report of them all.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Fine.
    Ok,
    /// Works, but is fragile or surprising.
    Warning,
    /// Broken: pods are not created, or not injected as configured.
    Error,
    /// Could not be checked (a read was refused or failed); the evidence says why.
    Unknown,
}

impl Verdict {
    /// The table's mark: ✓, !, ✗ or ?.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Ok => "✓",
            Verdict::Warning => "!",
            Verdict::Error => "✗",
            Verdict::Unknown => "?",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// A stable identifier (`caBundle`, `policy`, …).
    pub id: &'static str,
    /// What is checked, in words.
    pub title: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// One line: the finding.
    pub summary: String,
    /// What the verdict is based on.
    pub evidence: Vec<String>,
    /// Commands (or steps) that fix it.
    pub fixes: Vec<String>,
}

impl Check {
    /// A new check with `verdict` and `summary`, no evidence yet.
    pub fn new(id: &'static str, title: &'static str, verdict: Verdict, summary: impl Into<String>) -> Self {
        Check {
            id,
            title,
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
            fixes: Vec::new(),
        }
    }

    /// A check that could not run because of `failure`.
    pub fn unknown(id: &'static str, title: &'static str, failure: &crate::ReadFailure) -> Self {
        let mut check = Check::new(id, title, Verdict::Unknown, failure.explain());
        if failure.kind == crate::ReadFailureKind::Forbidden {
            check.fixes.push(failure.permission_check());
        }
        check
    }

    /// Raises the verdict to `verdict` when that is worse (Unknown never replaces Error).
    pub fn raise(&mut self, verdict: Verdict) {
        if self.verdict == Verdict::Error {
            return;
        }
        if verdict > self.verdict {
            self.verdict = verdict;
        }
    }
}

/// Every check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The checks, in the order of the troubleshooting page.
    pub checks: Vec<Check>,
    /// How many of each verdict.
    pub summary: Summary,
}

/// Counts of verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// ✓
    pub ok: usize,
    /// !
    pub warnings: usize,
    /// ✗
    pub errors: usize,
    /// ?
    pub unknown: usize,
}

impl Report {
    /// The report of `checks`.
    pub fn new(checks: Vec<Check>) -> Self {
        let mut summary = Summary::default();
        for check in &checks {
            match check.verdict {
                Verdict::Ok => summary.ok += 1,
                Verdict::Warning => summary.warnings += 1,
                Verdict::Error => summary.errors += 1,
                Verdict::Unknown => summary.unknown += 1,
            }
        }
        Report { checks, summary }
    }

    /// The process exit code: 1 with any error, else 2 when a check could not run, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.summary.errors > 0 {
            1
        } else if self.summary.unknown > 0 {
            2
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_gates_on_errors_then_on_checks_that_could_not_run() {
        let check = |verdict| Check::new("x", "x", verdict, "");
        assert_eq!(
            Report::new(vec![check(Verdict::Ok), check(Verdict::Warning)]).exit_code(),
            0
        );
        assert_eq!(
            Report::new(vec![check(Verdict::Ok), check(Verdict::Unknown)]).exit_code(),
            2
        );
        assert_eq!(
            Report::new(vec![check(Verdict::Unknown), check(Verdict::Error)]).exit_code(),
            1
        );
        let mut raised = check(Verdict::Error);
        raised.raise(Verdict::Unknown);
        assert_eq!(raised.verdict, Verdict::Error);
    }
}
