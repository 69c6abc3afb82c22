//! Differential test against `istioctl kube-inject` itself.
//!
//! `tests/data/istioctl/` holds generated workloads (`tools/istio-oracle/gen_cases.py`), three
//! settings profiles extracted from `istioctl manifest generate`, and what istioctl printed for
//! every workload under every profile, plus re-injections of its own output
//! (`tools/istio-oracle/regen.sh` re-records them; Go is not needed here). Every case is injected
//! with [`inject_stream`], as `sidecar-injector inject` does, and judged:
//!
//! - **identical**: the same bytes on stdout and the same skip warnings;
//! - **semantically equal**: not the same bytes, but the same documents once parsed as YAML. Such
//!   cases must be listed in `tests/istioctl-semantic.txt` (a listed case that is identical, or a
//!   listed name that does not exist, fails too, so the list is always exact);
//! - **refused alike**: istioctl failed and so do we, with istioctl's message inside ours;
//! - **a deliberate difference**: matched by a rule of [`DELIBERATE`], each with its reason. A rule
//!   that no case needs any more fails the test.
//!
//! Anything else fails, with the case, the profile and the first differing line.
//!
//! `ISTIOCTL_CORPUS_DUMP=DIR` writes every case's input, istioctl's output and ours into DIR, to
//! look at or to replay with `istioctl` by hand.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a test harness: failing loudly is the point

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Read,
    path::{Path, PathBuf},
};

use injector_engine::{
    CompiledConfig, Options,
    kube_inject::inject_stream,
    settings::{parse_mesh, parse_values},
};
use serde_json::Value;

/// Where an istioctl outcome and ours part in a way we choose, and why.
struct Deliberate {
    /// A short name, printed with the cases it covers.
    id: &'static str,
    /// Why we differ.
    reason: &'static str,
    /// Matches istioctl's error, or its first differing output line.
    istioctl: &'static str,
    /// Matches ours the same way.
    ours: &'static str,
}

const DELIBERATE: &[Deliberate] = &[
    Deliberate {
        id: "yaml-syntax-wording",
        reason: "malformed YAML (a `proxy.istio.io/config` value, or the manifest itself): both refuse \
                 it and say where; istioctl quotes go-yaml's parser (`yaml: line 1: did not find \
                 expected node content`), we quote ours, with the line, the column and the text \
                 around it; go-yaml's messages are not reproduced",
        istioctl: r"^(could not parse proxy config: yaml: |error converting YAML to JSON: yaml: )",
        ours: r"(proxy config: invalid YAML: |^document \d+: line \d+ column \d+: )",
    },
    Deliberate {
        id: "protobuf-error-wording",
        reason: "a ProxyConfig field of the wrong type: istioctl quotes protobuf's JSON decoder \
                 (`json: cannot unmarshal …`, `bad Duration: …`, `unknown value … for enum …`); we name \
                 the field and what it must be",
        istioctl: r"^could not parse proxy config: ",
        ours: r"could not parse proxy config: proxy config\.[A-Za-z]+: ",
    },
];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/istioctl")
}

fn read_gz_json(path: &Path) -> Value {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The injector `sidecar-injector inject` builds from a profile's three files.
fn injector(profile: &Path) -> CompiledConfig {
    let about: Value = serde_json::from_str(&read(&profile.join("profile.json"))).unwrap();
    let config = injector_core::config::parse_injector_config(&read(&profile.join("injector-config.yaml")))
        .unwrap_or_else(|e| panic!("{}: {e}", profile.display()))
        .config;
    let values = parse_values(&read(&profile.join("values.json"))).unwrap();
    let mesh = parse_mesh(&read(&profile.join("mesh.yaml"))).unwrap();
    let options = Options {
        // `--revision default` renders with an empty revision.
        revision: String::new(),
        native_sidecars: about["nativeSidecars"].as_bool().unwrap_or(false),
        kube_inject: true,
        ..Options::default()
    };
    CompiledConfig::new(config, values, mesh, options)
        .unwrap_or_else(|e| panic!("{}: {e}", profile.display()))
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Identical,
    Semantic(String),
    RefusedAlike,
    Deliberate(&'static str),
    Differs(String),
}

/// The skip warnings istioctl printed (each `===> …` line).
fn istioctl_warnings(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("===> "))
        .map(str::to_owned)
        .collect()
}

/// istioctl's error: what follows `Error: ` on stderr, to the end.
fn istioctl_error(stderr: &str) -> String {
    stderr
        .find("Error: ")
        .map_or(stderr, |at| &stderr[at + "Error: ".len()..])
        .trim()
        .to_owned()
}

/// An error text with what Go prints in map order (random from run to run) put in a fixed
/// order: the items of a multi-error (`\t* …` lines), and the template names after
/// `not found; have`.
fn canonical_error(text: &str) -> String {
    let names = regex::Regex::new(r"not found; have ([^\n]+)").unwrap();
    let text = names.replace_all(text, |captures: &regex::Captures<'_>| {
        let mut list: Vec<&str> = captures[1].split(", ").collect();
        list.sort_unstable();
        format!("not found; have {}", list.join(", "))
    });
    let mut out: Vec<String> = Vec::new();
    let mut items: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.starts_with("\t* ") {
            items.push(line);
            continue;
        }
        items.sort_unstable();
        out.extend(items.drain(..).map(str::to_owned));
        out.push(line.to_owned());
    }
    items.sort_unstable();
    out.extend(items.drain(..).map(str::to_owned));
    out.join("\n")
}

fn documents(text: &str) -> Option<Vec<Value>> {
    injector_core::yaml::parse_documents(text)
        .ok()
        .map(|docs| docs.into_iter().map(|(_, v)| v).collect())
}

fn first_difference(want: &str, got: &str) -> (String, String) {
    let (mut w, mut g) = (want.lines(), got.lines());
    let mut line = 1;
    loop {
        match (w.next(), g.next()) {
            (Some(a), Some(b)) if a == b => line += 1,
            (a, b) => {
                return (
                    format!("line {line}: {}", a.unwrap_or("<end>")),
                    format!("line {line}: {}", b.unwrap_or("<end>")),
                );
            }
        }
    }
}

fn deliberate(istioctl: &str, ours: &str) -> Option<&'static str> {
    DELIBERATE.iter().find_map(|rule| {
        let theirs = regex::Regex::new(rule.istioctl).unwrap();
        let mine = regex::Regex::new(rule.ours).unwrap();
        (theirs.is_match(istioctl) && mine.is_match(ours)).then_some(rule.id)
    })
}

fn judge(input: &str, expected: &Value, injector: &CompiledConfig, dump: Option<&Path>) -> Verdict {
    let stdout = expected["stdout"].as_str().unwrap_or("");
    let stderr = expected["stderr"].as_str().unwrap_or("");
    let refused = expected["exit"].as_i64() != Some(0);
    let ours = inject_stream(injector, input);
    if let Some(dir) = dump {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("input.yaml"), input).unwrap();
        std::fs::write(dir.join("istioctl.yaml"), stdout).unwrap();
        std::fs::write(dir.join("istioctl.stderr"), stderr).unwrap();
        match &ours {
            Ok(out) => std::fs::write(dir.join("ours.yaml"), &out.text).unwrap(),
            Err(e) => std::fs::write(dir.join("ours.error"), e.to_string()).unwrap(),
        }
    }
    match (refused, ours) {
        (true, Err(error)) => {
            let theirs = canonical_error(&istioctl_error(stderr));
            let mine = canonical_error(&error.to_string());
            if mine.contains(&theirs) {
                Verdict::RefusedAlike
            } else if let Some(id) = deliberate(&theirs, &mine) {
                Verdict::Deliberate(id)
            } else {
                Verdict::Differs(format!(
                    "both refuse, in other words:\n  istioctl: {theirs}\n  ours:     {mine}"
                ))
            }
        }
        (true, Ok(_)) => {
            let theirs = istioctl_error(stderr);
            deliberate(&theirs, "<injected>").map_or_else(
                || Verdict::Differs(format!("istioctl refuses ({theirs}), we inject")),
                Verdict::Deliberate,
            )
        }
        (false, Err(error)) => {
            let mine = error.to_string();
            deliberate("<injected>", &mine).map_or_else(
                || Verdict::Differs(format!("istioctl injects, we refuse: {mine}")),
                Verdict::Deliberate,
            )
        }
        (false, Ok(output)) => {
            let want_warnings = istioctl_warnings(stderr);
            let got_warnings: Vec<String> = output.warnings.iter().map(|w| w.trim_end().to_owned()).collect();
            if want_warnings != got_warnings {
                return Verdict::Differs(format!(
                    "skip warnings differ:\n  istioctl: {want_warnings:?}\n  ours:     {got_warnings:?}"
                ));
            }
            if output.text == stdout {
                return Verdict::Identical;
            }
            let (theirs, mine) = first_difference(stdout, &output.text);
            match (documents(stdout), documents(&output.text)) {
                (Some(a), Some(b)) if a == b => Verdict::Semantic(format!("istioctl {theirs} / ours {mine}")),
                _ => deliberate(&theirs, &mine).map_or_else(
                    || Verdict::Differs(format!("output differs:\n  istioctl {theirs}\n  ours     {mine}")),
                    Verdict::Deliberate,
                ),
            }
        }
    }
}

#[test]
fn inject_matches_istioctl_on_the_recorded_corpus() {
    let dir = data_dir();
    let cases = read_gz_json(&dir.join("expected/cases.json.gz"));
    let inputs: BTreeMap<&str, &str> = cases
        .as_array()
        .expect("a list of cases")
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["input"].as_str().unwrap()))
        .collect();
    let dump = std::env::var_os("ISTIOCTL_CORPUS_DUMP").map(PathBuf::from);
    let mut profiles: Vec<String> = std::fs::read_dir(dir.join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    profiles.sort();
    assert!(
        profiles.len() >= 3,
        "at least three settings profiles: {profiles:?}"
    );

    let verdicts: Vec<(String, String, Verdict)> = std::thread::scope(|scope| {
        let handles: Vec<_> = profiles
            .iter()
            .map(|profile| {
                let (dir, inputs, dump) = (&dir, &inputs, &dump);
                scope.spawn(move || {
                    let injector = injector(&dir.join("profiles").join(profile));
                    let recorded = read_gz_json(&dir.join("expected").join(format!("{profile}.json.gz")));
                    let results = recorded["results"].as_object().expect("results");
                    results
                        .iter()
                        .map(|(name, expected)| {
                            let input = expected["input"]
                                .as_str()
                                .or_else(|| inputs.get(name.as_str()).copied())
                                .unwrap_or_else(|| panic!("{profile}/{name}: no input"));
                            let dump = dump.as_ref().map(|d| d.join(profile).join(name));
                            let verdict = judge(input, expected, &injector, dump.as_deref());
                            (profile.clone(), name.clone(), verdict)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut semantic = BTreeSet::new();
    let mut deliberate_used: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for (profile, name, verdict) in &verdicts {
        let key = format!("{profile}/{name}");
        let bucket = match verdict {
            Verdict::Identical => "byte-identical",
            Verdict::Semantic(_) => {
                semantic.insert(key.clone());
                "semantically equal"
            }
            Verdict::RefusedAlike => "refused alike (istioctl's message in ours)",
            Verdict::Deliberate(id) => {
                deliberate_used.entry(id).or_default().push(key.clone());
                "deliberate difference"
            }
            Verdict::Differs(why) => {
                failures.push(format!("{key}: {why}"));
                "different"
            }
        };
        *counts.entry(bucket).or_default() += 1;
    }
    println!(
        "istioctl corpus: {} cases over {} profiles",
        verdicts.len(),
        profiles.len()
    );
    for (bucket, n) in &counts {
        println!("  {bucket}: {n}");
    }
    for (profile, name, verdict) in &verdicts {
        if let Verdict::Semantic(line) = verdict {
            println!("  semantically equal {profile}/{name}: {line}");
        }
    }
    for (id, cases) in &deliberate_used {
        println!("  deliberate {id}: {} cases, e.g. {}", cases.len(), cases[0]);
    }

    let listed_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/istioctl-semantic.txt");
    let listed: BTreeSet<String> = read(&listed_path)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
        .collect();
    for extra in listed.difference(&semantic) {
        failures.push(format!("{extra}: listed in istioctl-semantic.txt but not semantically equal (identical, failing or gone): take it out"));
    }
    for missing in semantic.difference(&listed) {
        failures.push(format!("{missing}: semantically equal but not byte-identical: list it in istioctl-semantic.txt, or fix it"));
    }
    for rule in DELIBERATE {
        if !deliberate_used.contains_key(rule.id) {
            failures.push(format!(
                "deliberate difference {:?} matches no case any more: remove the rule ({})",
                rule.id, rule.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from istioctl:\n{}",
        failures.len(),
        verdicts.len(),
        failures.join("\n")
    );
}
