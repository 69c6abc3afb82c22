//! The documentation's links, offline: every relative link and anchor in README.md,
//! CHANGELOG.md, CONTRIBUTING.md, docs/*.md, bench/README.md and tests/e2e/README.md resolves to a
//! file or directory of the checkout and, with `#anchor`, to a heading of that Markdown file (as
//! GitHub makes heading ids). External links are not fetched, but must be well-formed `https://`
//! (or `http://`, `mailto:`) addresses.

use std::{
    collections::{BTreeMap, HashSet},
    path::{Component, Path, PathBuf},
};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout")
}

/// The Markdown files whose links are checked, relative to the checkout.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "bench/README.md",
        "tests/e2e/README.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root).expect("under the checkout").to_path_buf())
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
}

/// GitHub's id for a heading's text: lowercased, every character but letters, digits, `-`, `_`
/// and spaces dropped, spaces made `-`.
fn slug(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text: each heading's slug, a repeated one with `-1`, `-2`, ….
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = HashSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = &mut heading {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let count = seen.entry(base.clone()).or_default();
                let id = if *count == 0 {
                    base.clone()
                } else {
                    format!("{base}-{count}")
                };
                *count += 1;
                anchors.insert(id);
            }
            _ => {}
        }
    }
    anchors
}

/// The destinations of every link and image of a Markdown text.
fn links(text: &str) -> Vec<String> {
    Parser::new_ext(text, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// Why an external address is not well-formed, if it is not.
fn external_problem(url: &str) -> Option<&'static str> {
    if url.contains(char::is_whitespace) {
        return Some("contains whitespace");
    }
    if let Some(address) = url.strip_prefix("mailto:") {
        return (!address.contains('@')).then_some("a mailto: without an address");
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    let valid = !host.is_empty()
        && host.contains('.')
        && host
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    (!valid).then_some("no valid host name")
}

/// `path` made relative to `dir` and normalized, or `None` when it leaves the checkout.
fn resolve(root: &Path, dir: &Path, path: &str) -> Option<PathBuf> {
    let mut out = dir.to_path_buf();
    for component in Path::new(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(root.join(out))
}

/// The problems of one document's links.
fn problems(root: &Path, document: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(document))
        .unwrap_or_else(|e| panic!("{}: {e}", document.display()));
    let dir = document.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for link in links(&text) {
        let mut report = |why: String| problems.push(format!("{}: {link}: {why}", document.display()));
        if link.contains("://") || link.starts_with("mailto:") {
            match external_problem(&link) {
                Some(why) => report(why.to_owned()),
                None if link.contains("://") && !link.starts_with("http") => {
                    report("only http(s) and mailto links".to_owned())
                }
                None => {}
            }
            continue;
        }
        let (path, anchor) = match link.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (link.as_str(), None),
        };
        let target = if path.is_empty() {
            root.join(document)
        } else {
            match resolve(root, dir, path) {
                Some(target) => target,
                None => {
                    report("leaves the checkout".to_owned());
                    continue;
                }
            }
        };
        if !target.exists() {
            report(format!("no such file {}", target.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if target.extension().is_none_or(|e| e != "md") {
            report("an anchor into a file that is not Markdown".to_owned());
            continue;
        }
        let target_text = std::fs::read_to_string(&target).expect("the target is readable");
        if !anchors(&target_text).contains(anchor) {
            report(format!("no heading #{anchor} in {}", target.display()));
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = checkout();
    let mut all = Vec::new();
    let mut checked = 0;
    for document in documents(&root) {
        assert!(
            root.join(&document).is_file(),
            "{} is missing",
            document.display()
        );
        checked += 1;
        all.extend(problems(&root, &document));
    }
    assert!(checked >= 10, "only {checked} documents");
    assert!(all.is_empty(), "broken links:\n{}", all.join("\n"));
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug("`serve`: the admission webhook"),
        "serve-the-admission-webhook"
    );
    assert_eq!(
        slug("Cluster mode: `serve --cluster`"),
        "cluster-mode-serve---cluster"
    );
    assert_eq!(slug("`explain`: why (not) injected"), "explain-why-not-injected");
    assert_eq!(slug("The render cache — and you"), "the-render-cache--and-you");
    assert_eq!(slug("snake_case 1.2"), "snake_case-12");
    let ids = anchors("# A\n\n## A\n\n### `b`: c\n");
    assert!(
        ids.contains("a") && ids.contains("a-1") && ids.contains("b-c"),
        "{ids:?}"
    );
}

#[test]
fn broken_links_are_found() {
    let root = checkout();
    std::fs::create_dir_all(root.join("target")).expect("target/");
    let dir = tempfile::tempdir_in(root.join("target")).expect("a directory under target/");
    let name = dir.path().join("page.md");
    std::fs::write(
        &name,
        "# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md) [up](../../../../../x.md)\n\
         [web](https://example.com/a#b) [host](https://) \
         [ftp](ftp://example.com/x)\n",
    )
    .expect("written");
    let relative = name.strip_prefix(&root).expect("under the checkout");
    let found = problems(&root, relative).join("\n");
    for expected in [
        "#nope: no heading",
        "missing.md: no such file",
        "x.md: leaves the checkout",
        "https://: no valid host name",
        "ftp://example.com/x: only http(s)",
    ] {
        assert!(found.contains(expected), "{expected:?} not in:\n{found}");
    }
    assert!(!found.contains("#title"), "{found}");
    assert!(!found.contains("example.com/a#b"), "{found}");
    assert_eq!(found.lines().count(), 5, "{found}");
}
