//! The documentation's structure, checked on the files:
//!
//! - every relative link in README.md, docs/, examples/README.md and peers/ resolves: to a file
//!   or folder of the repository and, with a `#fragment`, to a heading of that Markdown file
//!   (GitHub's anchors);
//! - every page of docs/ is a module of `typed_verbs::guide` (so it reads on docs.rs and its
//!   programs run as doctests), and the guide's index links every page;
//! - README.md is at most 250 lines, the front door;
//! - every compile-fail case of `ui-tests/fail/` has a row in the full guarantee table
//!   (docs/guarantees.md, and docs/extended-qp.md for the extended QP's rules), and every
//!   compile-time row of docs/guarantees.md names a fail case and a pass case.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// The text outside fenced code blocks and inline code spans, line by line (line numbers kept).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        for marker in ["```", "~~~"] {
            if t.starts_with(marker) {
                match fence {
                    None => fence = Some(marker),
                    Some(m) if m == marker => fence = None,
                    Some(_) => {}
                }
            }
        }
        if fence.is_some() || t.starts_with("```") || t.starts_with("~~~") {
            continue;
        }
        // Drop inline code spans.
        let mut s = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                s.push(c);
            }
        }
        out.push((i + 1, s));
    }
    out
}

/// The targets of `[text](target)` links in a line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(p) = line[i..].find("](") {
        let start = i + p + 2;
        let mut depth = 1;
        let mut j = start;
        while j < b.len() {
            match b[j] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let target = line[start..j.min(b.len())].trim();
        // `[text](target "title")`
        let target = target.split_whitespace().next().unwrap_or("");
        out.push(target.to_string());
        i = j.min(b.len());
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces to
/// `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence || !line.starts_with('#') {
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
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read markdown");
        let dir = file.parent().expect("parent");
        for (line_no, line) in prose_lines(&text) {
            for target in link_targets(&line) {
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
    assert_eq!(
        link_targets("see [a](docs/x.md#y) and [b](../c.rs)"),
        ["docs/x.md#y", "../c.rs"]
    );
    assert_eq!(link_targets("[f(x)](a_(b).md)"), ["a_(b).md"]);
    assert_eq!(
        anchors(
            "# A `b` (c)\n## A b c\n```\n# not a heading\n```\n## Extended QPs: `ibv_wr_*` posting"
        ),
        ["a-b-c", "a-b-c-1", "extended-qps-ibv_wr_-posting"]
    );
    let lines = prose_lines("x `[a](gone.md)` y\n```\n[b](gone.md)\n```\n[c](here.md)");
    let targets: Vec<String> = lines.iter().flat_map(|(_, l)| link_targets(l)).collect();
    assert_eq!(targets, ["here.md"]);
}

#[test]
fn every_docs_page_is_a_guide_module_and_in_the_index() {
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
