//! The documentation's structure, checked on the files:
//!
//! - every relative link in README.md, docs/, examples/README.md and peers/ resolves: to a file
//!   or folder of the repository and, with a `#fragment`, to a heading of that Markdown file
//!   (GitHub's anchors); the links are found by build.rs's parser (build/md_links.rs), which
//!   rewrites the guide's for rustdoc;
//! - every page of docs/ is a module of `typed_verbs::guide` (so it reads on docs.rs and its
//!   programs run as doctests), and the guide's index links every page;
//! - README.md is at most 250 lines, the front door;
//! - every compile-fail case of `ui-tests/fail/` has a row in the full guarantee table
//!   (docs/guarantees.md, and docs/extended-qp.md for the extended QP's rules), and every
//!   compile-time row of docs/guarantees.md names a fail case and a pass case.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

// The parser build.rs rewrites the guide's links with.
#[path = "../build/md_links.rs"]
mod md_links;

/// The targets of the links in `text` outside code, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let fenced = md_links::fenced_lines(text);
    let mut out = Vec::new();
    for (i, (line, fenced)) in text.lines().zip(fenced).enumerate() {
        if !fenced {
            for r in md_links::link_targets(line) {
                out.push((i + 1, line[r].to_string()));
            }
        }
    }
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether the repository's files are here: a test binary copied elsewhere (the rxe lane's VM)
/// has none to check, and says so with a counted `SKIP` line.
fn repository_here(test: &str) -> bool {
    let here = root().join("README.md").is_file() && root().join("docs").is_dir();
    if !here {
        println!("SKIP {test}: the repository's files are not here");
    }
    here
}

/// The Markdown files whose links are checked.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut out = vec![root.join("README.md"), root.join("examples/README.md")];
    for dir in ["docs", "peers"] {
        collect_md(&root.join(dir), &mut out);
    }
    out.retain(|p| p.exists());
    out.sort();
    out
}

fn collect_md(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            collect_md(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces to
/// `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (line, fenced) in text.lines().zip(md_links::fenced_lines(text)) {
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.push(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    if !repository_here("every_relative_link_resolves") {
        return;
    }
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read markdown");
        let dir = file.parent().expect("parent");
        {
            for (line_no, target) in links(&text) {
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with('<')
                {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((p, f)) => (p, Some(f)),
                    None => (target.as_str(), None),
                };
                let dest = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                let rel = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                if !dest.exists() {
                    broken.push(format!("{rel}:{line_no}: {target}: no such file"));
                    continue;
                }
                if let Some(fragment) = fragment {
                    if dest.extension().is_some_and(|x| x == "md") {
                        let dest_text = std::fs::read_to_string(&dest).expect("read link target");
                        if !anchors(&dest_text).iter().any(|a| a == fragment) {
                            broken.push(format!("{rel}:{line_no}: {target}: no such heading"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} relative links found: is the parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_parser_finds_what_it_should() {
    let targets = |line: &str| -> Vec<String> {
        md_links::link_targets(line)
            .into_iter()
            .map(|r| line[r].to_string())
            .collect()
    };
    assert_eq!(
        targets("see [a](docs/x.md#y) and [b](../c.rs)"),
        ["docs/x.md#y", "../c.rs"]
    );
    assert_eq!(
        targets("[f(x)](a_(b).md) [t](u.md \"title\")"),
        ["a_(b).md", "u.md"]
    );
    assert_eq!(
        targets("x `[a](gone.md)` y ``[b](gone.md) ` `` [c](here.md)"),
        ["here.md"]
    );
    let text = "```\n[b](gone.md)\n~~~\n```\n[c](here.md)\n~~~\n[d](gone.md)\n~~~";
    assert_eq!(links(text), [(5, "here.md".to_string())]);
    assert_eq!(
        anchors(
            "# A `b` (c)\n## A b c\n```\n# not a heading\n```\n## Extended QPs: `ibv_wr_*` posting"
        ),
        ["a-b-c", "a-b-c-1", "extended-qps-ibv_wr_-posting"]
    );
    // The guide's links as rustdoc renders them (build.rs).
    let src = "https://docs.rs/crate/typed-verbs/0.1.0/source";
    let repo = "https://github.com/o/r";
    let in_package = |file: &str| !file.starts_with("peers/");
    let link = |t: &str, page: &str| md_links::guide_link(t, page, src, repo, &in_package);
    assert_eq!(
        link("testing.md#the-test-command", "faults.md"),
        "../testing/index.html#the-test-command"
    );
    assert_eq!(
        link("./peer-crash.md", "README.md"),
        "peer_crash/index.html"
    );
    assert_eq!(link("README.md", "faults.md"), "../index.html");
    assert_eq!(
        link("../ui-tests/fail/a.rs", "guarantees.md"),
        format!("{src}/ui-tests/fail/a.rs")
    );
    assert_eq!(link("#run-time", "guarantees.md"), "#run-time");
    assert_eq!(
        link("../peers/cases.tsv", "peers.md"),
        format!("{repo}/tree/main/peers/cases.tsv")
    );
    assert_eq!(
        link("https://x.org/a.md", "guarantees.md"),
        "https://x.org/a.md"
    );
}

#[test]
fn every_docs_page_is_a_guide_module_and_in_the_index() {
    if !repository_here("every_docs_page_is_a_guide_module_and_in_the_index") {
        return;
    }
    let root = root();
    let guide = std::fs::read_to_string(root.join("src/guide.rs")).expect("src/guide.rs");
    let index = std::fs::read_to_string(root.join("docs/README.md")).expect("docs/README.md");
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") || name == "README.md" {
            continue;
        }
        if !guide.contains(&format!("\"{name}\"")) {
            missing.push(format!("{name}: not a module of src/guide.rs"));
        }
        if !index.contains(&format!("]({name}")) {
            missing.push(format!("{name}: not linked from docs/README.md"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn readme_is_the_front_door() {
    if !repository_here("readme_is_the_front_door") {
        return;
    }
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; at most 250 (the rest is the guide's)"
    );
    for command in ["bash scripts/demo.sh", "bash scripts/test.sh"] {
        assert!(readme.contains(command), "README.md lacks `{command}`");
    }
}

#[test]
fn every_fail_case_is_in_the_full_guarantee_table() {
    if !repository_here("every_fail_case_is_in_the_full_guarantee_table") {
        return;
    }
    let root = root();
    let table = std::fs::read_to_string(root.join("docs/guarantees.md")).expect("guarantees.md");
    // The extended QP's rules are a table of their own, which the full table links.
    let ex_table = std::fs::read_to_string(root.join("docs/extended-qp.md")).expect("extended-qp");
    assert!(
        table.contains("](extended-qp.md"),
        "docs/guarantees.md does not link extended-qp.md"
    );
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root.join("ui-tests/fail")).expect("ui-tests/fail") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        let link = format!("ui-tests/fail/{name})");
        if name.ends_with(".rs") && !table.contains(&link) && !ex_table.contains(&link) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "fail cases without a row in docs/guarantees.md or docs/extended-qp.md: {missing:?}"
    );
    // Every row of the compile-time table names a fail case and a passing neighbour.
    let mut rows = 0;
    for line in table
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("ui-tests/fail/"))
    {
        rows += 1;
        assert!(
            line.contains("ui-tests/pass/"),
            "a row without a passing neighbour: {line}"
        );
    }
    assert!(
        rows >= 40,
        "only {rows} compile-time rows in docs/guarantees.md"
    );
}
