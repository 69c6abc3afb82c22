//! `inject --injector-config` with a broken file: a non-zero exit, a message naming the file and
//! what is wrong, and nothing written — never pods "injected" with a status annotation and no
//! proxy, as when such a file was taken for the bare text of a sidecar template.

use crate::util::{Files, example, run};

/// Broken configurations, each with fragments its error must contain.
const BROKEN: [(&str, &[&str]); 5] = [
    // The reproduction: invalid YAML. The parser's line is in the message.
    ("policy: [enabled\n  templates: {\n", &["document 1", "line"]),
    // `template:` for `templates:`.
    (
        "policy: enabled\ntemplate:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n",
        &["config.template", "did you mean `templates:`"],
    ),
    // Another typo'd key.
    (
        "policy: enabled\ndefaultTemplate: [sidecar]\ntemplates:\n  sidecar: 'spec: {}'\n",
        &["config.defaultTemplate", "did you mean `defaultTemplates`?"],
    ),
    // Truncated inside a flow mapping.
    (
        "policy: enabled\ntemplates: {sidecar: \"spec:\\n  containers:\\n  - name: istio-pro",
        &["document 1"],
    ),
    // Truncated before `templates:`: valid YAML, but nothing to inject with.
    ("policy: enabled\n", &["config.templates: no templates"]),
];

#[test]
fn a_broken_configuration_fails_naming_the_file_and_writes_nothing() {
    let files = Files::new();
    for (text, fragments) in BROKEN {
        let config = files.write("config.yaml", text);
        // To standard output: nothing printed.
        let out = run(
            &[
                "inject",
                "-f",
                &example("deployment.yaml"),
                "--injector-config",
                &config,
            ],
            "",
        );
        let mut expected = vec![config.as_str()];
        expected.extend_from_slice(fragments);
        out.assert_error(&expected);

        // To a file: neither created nor, when it exists, changed.
        let target = files.path("out.yaml");
        let out = run(
            &[
                "inject",
                "-f",
                &example("deployment.yaml"),
                "--injector-config",
                &config,
                "-o",
                &target,
            ],
            "",
        );
        out.assert_error(&expected);
        assert!(
            !std::path::Path::new(&target).exists(),
            "{text}: {target} was created"
        );
        let existing = files.write("existing.yaml", "kept\n");
        let out = run(
            &[
                "inject",
                "-f",
                &example("deployment.yaml"),
                "--injector-config",
                &config,
                "-o",
                &existing,
            ],
            "",
        );
        out.assert_error(&expected);
        assert_eq!(std::fs::read_to_string(&existing).expect("kept"), "kept\n");
        std::fs::remove_file(&existing).expect("removed");
        assert_eq!(
            files.leftovers(),
            ["config.yaml"],
            "{text}: temporary files left behind"
        );
    }
}

#[test]
fn a_bare_template_still_works() {
    let files = Files::new();
    let template = files.write(
        "template.yaml",
        "{{- $tag := \"bare\" }}\nspec:\n  containers:\n  - name: istio-proxy\n    image: example.com/proxyv2:{{ $tag }}\n",
    );
    let out = run(
        &[
            "inject",
            "-f",
            &example("deployment.yaml"),
            "--injector-config",
            &template,
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("image: example.com/proxyv2:bare"),
        "{}",
        out.stdout
    );
}
