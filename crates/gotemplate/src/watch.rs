//! Watching what an execution hands to functions and methods, and prints.
//!
//! A host that renders with a stand-in for one input (a name, say) can tell from a [`Watch`]
//! whether the template only passed the stand-in through (tested its truth, printed it) or
//! looked into it: every way a template can look into a value other than its truth goes through
//! a function or method call, or prints a value that is not a string, and each is reported
//! before it happens ([`crate::Template::execute_watched`]).

use crate::value::Value;

/// What an execution reports while it runs.
///
/// `and` and `or` are not reported: they only test their arguments' truth and return one of
/// them. Neither are `if`, `with` and `range`, which test truth (a `range` over anything but a
/// list, map or integer fails).
pub trait Watch {
    /// The function `name` is about to be called with `args`, evaluated.
    fn call(&self, name: &str, args: &[Value]);

    /// The method `name` of `receiver` is about to be called with `args`, evaluated.
    fn method(&self, receiver: &Value, name: &str, args: &[Value]);

    /// `value`, which is not a string, is about to be printed (a string is printed as it is).
    fn print(&self, value: &Value);
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::Template;

    /// Notes every report as text.
    #[derive(Default)]
    struct Log(RefCell<Vec<String>>);

    impl Watch for Log {
        fn call(&self, name: &str, args: &[Value]) {
            let args: Vec<String> = args.iter().map(crate::fmt::sprint_value).collect();
            self.0
                .borrow_mut()
                .push(format!("call {name}({})", args.join(", ")));
        }

        fn method(&self, _receiver: &Value, name: &str, args: &[Value]) {
            self.0.borrow_mut().push(format!("method {name}/{}", args.len()));
        }

        fn print(&self, value: &Value) {
            self.0
                .borrow_mut()
                .push(format!("print {}", crate::fmt::sprint_value(value)));
        }
    }

    fn watched(text: &str, data: &Value) -> (String, Vec<String>) {
        let template = Template::new("t")
            .funcs(&crate::sprig::funcs())
            .parse(text)
            .expect("parses");
        let log = Log::default();
        let out = template.execute_watched(data, &log).expect("executes");
        (out, log.0.into_inner())
    }

    #[test]
    fn calls_and_prints_that_are_not_strings_are_told_in_order() {
        let data = Value::str("web-0");
        let (out, log) = watched(
            r#"{{ . }} {{ if . }}y{{ end }} {{ and . "x" }} {{ . | default "d" | quote }} {{ len . }} {{ define "sub" }}{{ eq . "a" }}{{ end }}{{ template "sub" . }}"#,
            &data,
        );
        assert_eq!(out, r#"web-0 y x "web-0" 5 false"#);
        assert_eq!(
            log,
            [
                "call default(d, web-0)",
                "call quote(web-0)",
                "call len(web-0)",
                "print 5",
                "call eq(web-0, a)",
                "print false",
            ]
        );
    }

    #[test]
    fn an_unwatched_execution_gives_the_same_output() {
        let data = Value::str("web-0");
        let text = r#"{{ . | upper }}-{{ printf "%s/%d" . 3 }}"#;
        let template = Template::new("t")
            .funcs(&crate::sprig::funcs())
            .parse(text)
            .expect("parses");
        let (out, log) = watched(text, &data);
        assert_eq!(out, template.execute(&data).expect("executes"));
        assert_eq!(log, ["call upper(web-0)", "call printf(%s/%d, web-0, 3)"]);
    }
}
