//! Property and edge-case tests: the lexer, parser and executor never panic and always
//! terminate, whatever the input.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use gotemplate::{ExecErrorKind, ExecOptions, FuncMap, Template, Value, sprig};
use proptest::prelude::*;

fn data() -> Value {
    Value::from_json(&serde_json::json!({
        "a": 1, "s": "str", "l": [1, "x", null], "m": {"k": "v"}, "n": null
    }))
}

fn funcs() -> Arc<FuncMap> {
    static F: OnceLock<Arc<FuncMap>> = OnceLock::new();
    F.get_or_init(|| Arc::new(sprig::funcs())).clone()
}

fn run(text: &str) {
    let mut lex = gotemplate::lex::Lexer::new(text, "", "");
    for _ in 0..=text.len() + 1 {
        let item = lex.next_item();
        if matches!(
            item.typ,
            gotemplate::lex::ItemType::Eof | gotemplate::lex::ItemType::Error
        ) {
            break;
        }
    }
    if let Ok(t) = Template::new("t")
        .shared_funcs(funcs())
        .max_steps(10_000)
        .parse(text)
    {
        let mut out = String::new();
        let _ = t.execute_to(&mut out, &data());
    }
}

/// Fragments that build template-like text, so generated inputs reach deep into the parser.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("{{- ".to_string()),
        Just(" -}}".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("|".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("if".to_string()),
        Just("else".to_string()),
        Just("end".to_string()),
        Just("range".to_string()),
        Just("with".to_string()),
        Just("define \"x\"".to_string()),
        Just("template \"x\"".to_string()),
        Just("block \"b\" .".to_string()),
        Just("break".to_string()),
        Just("continue".to_string()),
        Just("$x := ".to_string()),
        Just("$x = ".to_string()),
        Just("$".to_string()),
        Just(".a".to_string()),
        Just(".m.k".to_string()),
        Just(".l".to_string()),
        Just(".n.x".to_string()),
        Just("nil".to_string()),
        Just("1".to_string()),
        Just("-2.5e3".to_string()),
        Just("0x1F".to_string()),
        Just("'a'".to_string()),
        Just("\"s\"".to_string()),
        Just("`raw`".to_string()),
        Just("/* c */".to_string()),
        Just("printf \"%d %s %v\"".to_string()),
        Just("index".to_string()),
        Just("len".to_string()),
        Just("eq".to_string()),
        Just("and".to_string()),
        Just("default".to_string()),
        Just("list".to_string()),
        Just("dict".to_string()),
        Just("toJson".to_string()),
        Just("quote".to_string()),
        Just("nindent 2".to_string()),
        "[a-z$.(){}|\"'` -]{0,4}".prop_map(|s| s),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,80}") {
        run(&s);
    }

    #[test]
    fn template_like_text_never_panics(parts in proptest::collection::vec(fragment(), 0..40)) {
        run(&parts.concat());
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let parens = format!("{{{{{}1{}}}}}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(Template::new("t").parse(&parens).is_err());
    let ifs = format!("{}x{}", "{{if 1}}".repeat(100_000), "{{end}}".repeat(100_000));
    assert!(Template::new("t").parse(&ifs).is_err());
}

#[test]
fn recursive_templates_stop_with_an_error() {
    let t = Template::new("t")
        .parse(r#"{{define "r"}}x{{template "r" .}}{{end}}{{template "r" .}}"#)
        .expect("parses");
    let err = t.execute(&Value::Nil).expect_err("recursion is bounded");
    assert!(
        err.to_string().contains("exceeded maximum template depth"),
        "{err}"
    );
}

#[test]
fn nested_control_structures_in_recursive_templates_are_bounded() {
    let body = format!(
        "{}{{{{template \"r\" .}}}}{}",
        "{{if 1}}".repeat(150),
        "{{end}}".repeat(150)
    );
    let text = format!("{{{{define \"r\"}}}}{body}{{{{end}}}}{{{{template \"r\" .}}}}");
    let t = Template::new("t").parse(&text).expect("parses");
    let err = t.execute(&Value::Nil).expect_err("nesting is bounded");
    assert!(
        err.to_string().contains("exceeded maximum template depth"),
        "{err}"
    );
}

#[test]
fn loops_can_be_bounded() {
    let t = Template::new("t")
        .funcs(&sprig::funcs())
        .max_steps(100)
        .parse("{{range 1000000}}.{{end}}")
        .expect("parses");
    let err = t.execute(&Value::Nil).expect_err("over the budget");
    assert_eq!(err.kind, ExecErrorKind::StepBudget);
    assert_eq!(
        err.message,
        "template: t:1:8: executing \"t\" at <1000000>: execution step budget exceeded (100 steps)"
    );
}

/// A step is a range iteration or a template call: exactly `max_steps` of them run, one more
/// fails.
#[test]
fn the_budget_counts_iterations_and_template_calls() {
    let text = r#"{{define "one"}}.{{end}}{{range 3}}{{template "one"}}{{end}}"#;
    let with = |max| Template::new("t").max_steps(max).parse(text).expect("parses");
    assert_eq!(with(6).execute(&Value::Nil).as_deref(), Ok("..."));
    let err = with(5).execute(&Value::Nil).expect_err("six steps");
    assert_eq!(err.kind, ExecErrorKind::StepBudget);
}

/// Template calls that fan out stay within the depth limit but would run for ever without a
/// budget: 2^30 calls.
#[test]
fn recursion_that_fans_out_is_bounded() {
    let text = r#"{{define "t2"}}{{if lt . 30}}{{template "t2" (add1 .)}}{{template "t2" (add1 .)}}{{end}}{{end}}{{template "t2" 0}}"#;
    let t = Template::new("t")
        .funcs(&sprig::funcs())
        .max_steps(100_000)
        .parse(text)
        .expect("parses");
    let err = t.execute(&Value::Nil).expect_err("over the budget");
    assert_eq!(err.kind, ExecErrorKind::StepBudget);
}

/// An execution past its deadline stops with an error of its own, at the start or within a few
/// steps, keeping the output made so far.
#[test]
fn an_execution_stops_at_its_deadline() {
    let t = Template::new("t")
        .funcs(&sprig::funcs())
        .parse("start {{range 2000000000}}.{{end}}")
        .expect("parses");
    let passed = ExecOptions {
        deadline: Some(Instant::now()),
        ..ExecOptions::default()
    };
    let err = t
        .execute_with(&Value::Nil, passed)
        .expect_err("the deadline passed");
    assert_eq!(err.kind, ExecErrorKind::Deadline);
    assert_eq!(
        err.message,
        "template: t: execution stopped at its deadline after 0 steps"
    );
    // Two billion iterations take minutes; the deadline stops them in about 50 ms.
    let soon = ExecOptions {
        deadline: Some(Instant::now() + Duration::from_millis(50)),
        ..ExecOptions::default()
    };
    let err = t.execute_with(&Value::Nil, soon).expect_err("stopped");
    assert_eq!(err.kind, ExecErrorKind::Deadline);
    assert!(
        err.message.starts_with(
            "template: t:1:14: executing \"t\" at <2000000000>: execution stopped at its deadline after "
        ),
        "{}",
        err.message
    );
    // Without a deadline, and with one that does not pass, the template runs as before.
    let later = ExecOptions {
        deadline: Some(Instant::now() + Duration::from_secs(3600)),
        ..ExecOptions::default()
    };
    let short = Template::new("t")
        .funcs(&sprig::funcs())
        .parse("{{range 3}}.{{end}}")
        .expect("parses");
    assert_eq!(short.execute_with(&Value::Nil, later).as_deref(), Ok("..."));
    assert_eq!(short.execute(&Value::Nil).as_deref(), Ok("..."));
}

#[test]
fn huge_widths_are_go_errors_not_allocations() {
    let t = Template::new("t")
        .parse(r#"{{printf "%*d" 1000000000 1}}|{{printf "%2000000d" 1}}"#)
        .expect("parses");
    assert_eq!(
        t.execute(&Value::Nil).expect("runs"),
        "%!(BADWIDTH)1|%!(NOVERB)%!(EXTRA int=1)"
    );
}

#[test]
fn date_url_and_crypto_functions_survive_extreme_inputs() {
    let max = i64::MAX;
    let min = i64::MIN;
    let layouts = "Mon January _2 __2 002 15 3 PM -07:00:00 Z07 MST .000000000 .999 2006 06";
    let cases = [
        format!("{{{{ date \"{layouts}\" (int64 {max}) }}}}"),
        format!("{{{{ date \"{layouts}\" (int64 {min}) }}}}"),
        format!("{{{{ dateInZone \"{layouts}\" (int64 {max}) \"America/New_York\" }}}}"),
        format!("{{{{ dateInZone \"{layouts}\" (int64 {min}) \"Asia/Kolkata\" }}}}"),
        "{{ toDate \"2006\" \"0000\" | dateModify \"-2562047h\" | dateModify \"-2562047h\" }}"
            .to_string(),
        "{{ toDate \"2006\" \"9999\" | mustDateModify \"2562047h\" | mustDateModify \"2562047h\" | unixEpoch }}"
            .to_string(),
        format!(
            "{{{{ durationRound (int64 {min}) }}}}|{{{{ duration (int64 {min}) }}}}|{{{{ duration \"{max}\" }}}}"
        ),
        format!(
            "{{{{ ago (int64 {min}) }}}}|{{{{ ago (int64 {max}) }}}}|{{{{ htmlDateInZone (int64 {min}) \"../etc\" }}}}"
        ),
        "{{ mustToDate \"Jan _2 __2 -07:00:00 Z07 MST .000 .9\" \"é\" }}".to_string(),
        "{{ mustToDate \"2006 -0700\" \"2024 +é000\" }}{{ mustToDate \"MST\" \"GMT+99\" }}".to_string(),
        "{{ mustToDate \"2006-01-02 15:04:05.000\" \"2024-02-29 23:59:59.\" }}".to_string(),
        "{{ (now).Format \"\" }}{{ (now).UnixNano }}{{ (now).Month }}{{ (now).Weekday }}".to_string(),
        "{{ urlParse \"http://[%zz]:80/%\" }}{{ urlParse \"é://%\" }}{{ urlParse \"#%e9\" }}".to_string(),
        "{{ urlJoin (dict \"userinfo\" \"é@:%\" \"host\" \"é\") }}".to_string(),
        "{{ decryptAES \"\" \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\" }}".to_string(),
        "{{ randBytes 100000000 }}{{ derivePassword 4294967295 \"maximum\" \"\" \"\" \"\" }}".to_string(),
    ];
    for text in &cases {
        run(text);
    }
}
