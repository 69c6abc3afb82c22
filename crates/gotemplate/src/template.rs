//! The public template type: Go's `template.go` (`New`, `Funcs`, `Parse`, `Execute`,
//! `ExecuteTemplate`, `Lookup`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::exec::{State, finish};
use crate::funcs::{FuncMap, builtins};
use crate::parse::{ParseError, Tree, parse};
use crate::value::Value;
use crate::watch::Watch;

/// An execution error, with Go's message (`template: t:1:3: executing "t" at <.x>: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError {
    /// The name of the template that was executing.
    pub name: String,
    /// The full message.
    pub message: String,
    /// Whether the template failed or a limit of the execution stopped it.
    pub kind: ExecErrorKind,
}

/// What stopped an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecErrorKind {
    /// The template failed, as Go's would (a bad call, an undefined template, ...).
    #[default]
    Template,
    /// The execution took more steps than [`Template::max_steps`] allows.
    StepBudget,
    /// The execution's deadline passed ([`ExecOptions::deadline`]).
    Deadline,
}

/// How one execution runs, besides its data: who watches it and when it must stop.
#[derive(Clone, Copy, Default)]
pub struct ExecOptions<'a> {
    /// Told of every call and of every value printed that is not a string ([`crate::Watch`]).
    pub watch: Option<&'a dyn Watch>,
    /// When the execution stops with an [`ExecErrorKind::Deadline`] error: checked when it
    /// starts and every few steps (see [`Template::max_steps`]), so the work after the deadline
    /// is at most a few steps' worth.
    pub deadline: Option<Instant>,
}

impl std::fmt::Debug for ExecOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecOptions")
            .field("watch", &self.watch.is_some())
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExecError {}

/// A parse or execution error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The template text is invalid.
    Parse(ParseError),
    /// Execution failed (output may be partial).
    Exec(ExecError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Parse(e) => e.fmt(f),
            Error::Exec(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Parse(e)
    }
}

impl From<ExecError> for Error {
    fn from(e: ExecError) -> Self {
        Error::Exec(e)
    }
}

/// A set of parsed templates sharing a function map, one of which is "the" template (its name).
///
/// Cheap to clone and `Send + Sync`: parse once, execute concurrently from many threads.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    pub(crate) trees: HashMap<String, Arc<Tree>>,
    pub(crate) funcs: Arc<FuncMap>,
    pub(crate) max_steps: Option<u64>,
    delims: (String, String),
}

impl Template {
    /// A new, empty template with the given name (Go's `template.New`).
    pub fn new(name: impl Into<String>) -> Self {
        Template {
            name: name.into(),
            trees: HashMap::new(),
            funcs: Arc::new(FuncMap::new()),
            max_steps: None,
            delims: (String::new(), String::new()),
        }
    }

    /// Adds functions (Go's `Funcs`); later maps override earlier ones. Call before `parse`.
    pub fn funcs(mut self, funcs: &FuncMap) -> Self {
        Arc::make_mut(&mut self.funcs).extend(funcs);
        self
    }

    /// Uses `funcs` as the function map, shared without copying (cheaper than [`Template::funcs`]
    /// when many templates use the same map). Replaces functions added before.
    pub fn shared_funcs(mut self, funcs: Arc<FuncMap>) -> Self {
        self.funcs = funcs;
        self
    }

    /// Sets the action delimiters for later `parse` calls (Go's `Delims`); empty strings mean
    /// the defaults `{{` and `}}`.
    pub fn delims(mut self, left: impl Into<String>, right: impl Into<String>) -> Self {
        self.delims = (left.into(), right.into());
        self
    }

    /// Limits the steps an execution may take (for untrusted templates or data; Go has no such
    /// limit): a step is one iteration of a `range` or one `{{template}}` call, the only ways an
    /// execution does more than its text once. Past the limit, the execution fails with an
    /// [`ExecErrorKind::StepBudget`] error.
    pub fn max_steps(mut self, n: u64) -> Self {
        self.max_steps = Some(n);
        self
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether a template with that name has been defined.
    pub fn lookup(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// Whether an execution may write into a map it is given: some template of the set calls
    /// a function marked [`crate::Func::writing_maps`] (sprig's `set`, `unset`, `merge`,
    /// `mergeOverwrite`). Function values cannot reach a template, so the calls written in it
    /// are all it can make. A host that shares data among executions need give each its own
    /// copy ([`Value::unshared`]) only when this is true.
    pub fn may_write_maps(&self) -> bool {
        let writes = |name: &str| {
            self.funcs
                .get(name)
                .or_else(|| builtins().get(name))
                .is_some_and(crate::Func::writes_maps)
        };
        self.trees
            .values()
            .any(|tree| crate::parse::calls_any(&tree.root.nodes, &writes))
    }

    /// Whether a function is defined (user functions or built-ins).
    pub fn has_function(&self, name: &str) -> bool {
        self.funcs.contains(name) || builtins().contains(name)
    }

    /// Parses `text` as the body of this template; `define`d templates are added too
    /// (Go's `Parse`).
    pub fn parse(mut self, text: &str) -> Result<Self, ParseError> {
        // Like Go, each Parse call has its own tree set (so "multiple definition" is detected
        // within one text), then the trees are associated with the template.
        let mut trees: HashMap<String, Tree> = HashMap::new();
        let funcs = self.funcs.clone();
        let has = move |n: &str| funcs.contains(n) || builtins().contains(n);
        parse(&self.name, text, &self.delims.0, &self.delims.1, &has, &mut trees)?;
        for (name, tree) in trees {
            // Go's associate: don't replace an existing template with an empty one.
            let empty = tree.root.nodes.iter().all(crate::parse::Node::is_empty_tree);
            if empty && self.trees.contains_key(&name) {
                continue;
            }
            self.trees.insert(name, Arc::new(tree));
        }
        Ok(self)
    }

    /// Executes the template on `data`, returning the output.
    pub fn execute(&self, data: &Value) -> Result<String, ExecError> {
        let mut out = String::new();
        self.execute_to(&mut out, data)?;
        Ok(out)
    }

    /// Executes the template, appending to `out` (which keeps any partial output on error,
    /// like Go's writer).
    pub fn execute_to(&self, out: &mut String, data: &Value) -> Result<(), ExecError> {
        self.execute_template_to(out, &self.name, data)
    }

    /// Executes the named associated template (Go's `ExecuteTemplate`).
    pub fn execute_template_to(&self, out: &mut String, name: &str, data: &Value) -> Result<(), ExecError> {
        let Some(tree) = self.trees.get(name) else {
            if name == self.name {
                return Err(ExecError {
                    name: name.to_string(),
                    message: format!(
                        "template: {name}: {} is an incomplete or empty template",
                        gocompat::strconv::quote(name)
                    ),
                    kind: ExecErrorKind::Template,
                });
            }
            return Err(ExecError {
                name: name.to_string(),
                message: format!(
                    "template: no template {} associated with template {}",
                    gocompat::strconv::quote(name),
                    gocompat::strconv::quote(&self.name)
                ),
                kind: ExecErrorKind::Template,
            });
        };
        self.execute_tree_to(out, tree, data, ExecOptions::default())
    }

    /// [`Self::execute`], telling `watch` of every call and of every value printed that is not
    /// a string ([`crate::Watch`]).
    pub fn execute_watched(&self, data: &Value, watch: &dyn Watch) -> Result<String, ExecError> {
        self.execute_with(
            data,
            ExecOptions {
                watch: Some(watch),
                ..ExecOptions::default()
            },
        )
    }

    /// [`Self::execute`], watched or bounded in time as `options` say.
    pub fn execute_with(&self, data: &Value, options: ExecOptions<'_>) -> Result<String, ExecError> {
        let mut out = String::new();
        match self.trees.get(&self.name) {
            Some(tree) => self.execute_tree_to(&mut out, tree, data, options)?,
            // The error of an empty template, as `execute` tells it.
            None => self.execute_to(&mut out, data)?,
        }
        Ok(out)
    }

    fn execute_tree_to(
        &self,
        out: &mut String,
        tree: &Tree,
        data: &Value,
        options: ExecOptions<'_>,
    ) -> Result<(), ExecError> {
        let dot = data.clone().unwrap_interface();
        let mut st = State::new(self, tree, out, dot.clone(), options);
        finish(
            st.check_deadline()
                .and_then(|()| st.walk_list(&dot, &tree.root.nodes)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_delimiters() {
        let t = Template::new("t")
            .delims("[[", "]]")
            .parse("{{x}} [[ .a ]]")
            .expect("parses");
        let d = Value::from_json(&serde_json::json!({"a": 1}));
        assert_eq!(t.execute(&d).as_deref(), Ok("{{x}} 1"));
    }

    /// A call remembers its function, but only for the function map it was resolved against:
    /// replacing a function after parsing (Go's `Funcs` after `Parse`) takes effect.
    #[test]
    fn functions_replaced_after_parse_are_used() {
        use crate::funcs::Func;
        let mut one = FuncMap::new();
        one.insert("f", Func::new(&[], |_| Ok(Value::str("one"))));
        let mut two = FuncMap::new();
        two.insert("f", Func::new(&[], |_| Ok(Value::str("two"))));
        let t = Template::new("t")
            .funcs(&one)
            .parse("{{f}} {{eq 1 1}}")
            .expect("parses");
        assert_eq!(t.execute(&Value::Missing).as_deref(), Ok("one true"));
        assert_eq!(t.execute(&Value::Missing).as_deref(), Ok("one true"));
        let shared = t.clone();
        let t = t.funcs(&two);
        assert_eq!(t.execute(&Value::Missing).as_deref(), Ok("two true"));
        assert_eq!(shared.execute(&Value::Missing).as_deref(), Ok("one true"));
    }

    /// A call of a function that writes into maps, anywhere (a defined template, a branch, a
    /// nested pipeline), and only a call, makes a template one that may write.
    #[test]
    fn knows_whether_it_may_write_into_maps() {
        let may_write = |text: &str| {
            Template::new("t")
                .funcs(&crate::sprig::funcs())
                .parse(text)
                .expect("parses")
                .may_write_maps()
        };
        assert!(!may_write(
            r#"{{ .set }} set {{ "set" }} {{ $set := 1 }}{{/* set */}}{{ dict "a" 1 | toJson }}"#
        ));
        for text in [
            r#"{{ set . "a" 1 }}"#,
            r#"{{ define "x" }}{{ if .a }}{{ else }}{{ $_ := unset . "a" }}{{ end }}{{ end }}"#,
            r#"{{ range .l }}{{ with (merge (dict) .) }}{{ end }}{{ end }}"#,
            r#"{{ template "y" (mergeOverwrite . .) }}"#,
            r#"{{ (mustMerge . .).a }}"#,
        ] {
            assert!(may_write(text), "{text}");
        }
    }

    #[test]
    fn template_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Template>();
        check::<Value>();
    }
}
