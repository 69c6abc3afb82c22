//! The configuration history the console shows: the files in service, and the last accepted
//! and last rejected reload, each with the diff it made (or would have made) against the
//! configuration in service before it and, for a rejection, the error.
//!
//! Pure: [`ConfigHistory`] is fed by the configuration store on every load (reloads are rare,
//! so cloning the files' texts there costs nothing that matters).

use std::time::SystemTime;

use serde::Serialize;

/// One configuration file's text, as loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileText {
    /// Its role: `injector-config`, `values` or `mesh`.
    pub name: String,
    /// Where it was read from (a path, or `configmap/NS/NAME:KEY`).
    pub path: String,
    /// Its contents.
    pub contents: String,
}

/// One load of the configuration, accepted or rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reload {
    /// When, Unix seconds.
    pub at: i64,
    /// The generation it became (accepted loads only).
    pub generation: Option<u64>,
    /// Unified diff of the files against the configuration in service before it.
    pub diff: String,
    /// Why it was rejected (rejected loads only).
    pub error: Option<String>,
}

/// What the console knows about the configuration's loads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigHistory {
    /// The files of the configuration in service (empty: the embedded defaults).
    pub in_service: Vec<FileText>,
    /// The last load that was accepted.
    pub last_accepted: Option<Reload>,
    /// The last load that was rejected (the configuration in service was kept).
    pub last_rejected: Option<Reload>,
}

impl ConfigHistory {
    /// Records an accepted load of `files`, which become the configuration in service.
    pub fn accepted(&mut self, files: Vec<FileText>, generation: u64, at: SystemTime) {
        let diff = diff_files(&self.in_service, &files);
        self.last_accepted = Some(Reload {
            at: unix_seconds(at),
            generation: Some(generation),
            diff,
            error: None,
        });
        self.in_service = files;
    }

    /// Records a rejected load: `files` when they could be read (`None` when reading them
    /// failed), and the error. The configuration in service does not change.
    pub fn rejected(&mut self, files: Option<&[FileText]>, error: &str, at: SystemTime) {
        let diff = files.map_or_else(String::new, |files| diff_files(&self.in_service, files));
        self.last_rejected = Some(Reload {
            at: unix_seconds(at),
            generation: None,
            diff,
            error: Some(error.to_owned()),
        });
    }
}

fn unix_seconds(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A unified diff (3 lines of context) of every file whose text differs between `old` and
/// `new`, matched by role; a file only on one side is diffed against nothing.
pub fn diff_files(old: &[FileText], new: &[FileText]) -> String {
    let mut names: Vec<&str> = old.iter().chain(new).map(|f| f.name.as_str()).collect();
    names.dedup();
    let mut seen = Vec::new();
    let mut out = String::new();
    for name in names {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let before = old.iter().find(|f| f.name == name);
        let after = new.iter().find(|f| f.name == name);
        let (a, b) = (
            before.map_or("", |f| f.contents.as_str()),
            after.map_or("", |f| f.contents.as_str()),
        );
        if a == b {
            continue;
        }
        let label =
            |f: Option<&FileText>| f.map_or_else(|| "(none)".to_owned(), |f| format!("{name} {}", f.path));
        let diff = similar::TextDiff::from_lines(a, b);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&label(before), &label(after))
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, contents: &str) -> FileText {
        FileText {
            name: name.into(),
            path: format!("/etc/{name}"),
            contents: contents.into(),
        }
    }

    #[test]
    fn an_accepted_reload_diffs_against_the_previous_configuration() {
        let mut history = ConfigHistory::default();
        history.accepted(vec![file("mesh", "a: 1\nb: 2\n")], 1, SystemTime::UNIX_EPOCH);
        history.accepted(vec![file("mesh", "a: 1\nb: 3\n")], 2, SystemTime::UNIX_EPOCH);
        let accepted = history.last_accepted.clone().expect("recorded");
        assert_eq!(accepted.generation, Some(2));
        assert!(accepted.diff.contains("--- mesh /etc/mesh"), "{}", accepted.diff);
        assert!(accepted.diff.contains("-b: 2\n+b: 3\n"), "{}", accepted.diff);
        assert!(!accepted.diff.contains("-a: 1"), "unchanged lines are context");
        assert_eq!(history.in_service, vec![file("mesh", "a: 1\nb: 3\n")]);
    }

    #[test]
    fn a_rejected_reload_keeps_the_configuration_in_service_and_says_why() {
        let mut history = ConfigHistory::default();
        history.accepted(vec![file("mesh", "a: 1\n")], 1, SystemTime::UNIX_EPOCH);
        history.rejected(
            Some(&[file("mesh", "a: [\n")]),
            "mesh: bad YAML",
            SystemTime::UNIX_EPOCH,
        );
        let rejected = history.last_rejected.clone().expect("recorded");
        assert_eq!(rejected.error.as_deref(), Some("mesh: bad YAML"));
        assert!(rejected.diff.contains("+a: [\n"), "{}", rejected.diff);
        assert_eq!(history.in_service, vec![file("mesh", "a: 1\n")], "unchanged");
        history.rejected(None, "cannot read /etc/mesh", SystemTime::UNIX_EPOCH);
        assert_eq!(history.last_rejected.expect("recorded").diff, "");
    }

    #[test]
    fn files_added_or_removed_are_diffed_against_nothing() {
        let diff = diff_files(&[file("values", "x: 1\n")], &[file("mesh", "m: 1\n")]);
        assert!(diff.contains("-x: 1"), "{diff}");
        assert!(diff.contains("+m: 1"), "{diff}");
        assert_eq!(
            diff_files(&[file("mesh", "same\n")], &[file("mesh", "same\n")]),
            ""
        );
    }
}
