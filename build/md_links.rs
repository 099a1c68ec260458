//! The Markdown links of README.md and the guide's pages, found one way for the two places that
//! read them: build.rs, which rewrites the guide's links for rustdoc, and tests/docs.rs, which
//! checks that every relative link resolves.

use std::ops::Range;

/// For each line of `text`, whether it belongs to a fenced code block (opened by ```` ``` ```` or
/// `~~~`, closed by the same fence), the fence lines included.
pub fn fenced_lines(text: &str) -> Vec<bool> {
    let mut open: Option<&str> = None;
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            let fence = ["```", "~~~"].into_iter().find(|f| t.starts_with(f));
            match (open, fence) {
                (None, Some(f)) => {
                    open = Some(f);
                    true
                }
                (Some(o), Some(f)) if o == f => {
                    open = None;
                    true
                }
                (o, _) => o.is_some(),
            }
        })
        .collect()
}

/// The byte ranges of the targets of the inline links `[text](target)` in `line`, outside code
/// spans. A target ends at the `)` that balances its `(`; a title after it (`"..."`) is not part
/// of it.
pub fn link_targets(line: &str) -> Vec<Range<usize>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            // A code span: a run of n backticks, closed by the next run of exactly n.
            let n = b[i..].iter().take_while(|&&c| c == b'`').count();
            let mut j = i + n;
            let mut closed = None;
            while j < b.len() {
                if b[j] == b'`' {
                    let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                    if m == n {
                        closed = Some(j + m);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            i = closed.unwrap_or(i + n);
            continue;
        }
        if b[i] == b']' && b.get(i + 1) == Some(&b'(') {
            let start = i + 2;
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
            let inner = &line[start..j];
            let len = inner.find(char::is_whitespace).unwrap_or(inner.len());
            out.push(start..start + len);
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// `target`, a link of the guide page `page` (a file of `docs/`), as rustdoc's rendering of the
/// guide needs it: a link to another page is a link to its module of `typed_verbs::guide`, a
/// link to another file of the package a link to that file's source on docs.rs (`source`, e.g.
/// `https://docs.rs/crate/typed-verbs/0.1.0/source`), and a link to a file the package leaves out
/// (`in_package` says which: a folder with a `Cargo.toml` of its own is another package) a link
/// into the repository (`repository`). Absolute and in-page links are unchanged.
pub fn guide_link(
    target: &str,
    page: &str,
    source: &str,
    repository: &str,
    in_package: &dyn Fn(&str) -> bool,
) -> String {
    if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
        return target.to_string();
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, format!("#{f}")),
        None => (target, String::new()),
    };
    let path = path.strip_prefix("./").unwrap_or(path);
    let up = if page == "README.md" { "" } else { "../" };
    if let Some(name) = path.strip_suffix(".md").filter(|p| !p.contains('/')) {
        return match name {
            "README" => format!("{up}index.html{fragment}"),
            name => format!("{up}{}/index.html{fragment}", name.replace('-', "_")),
        };
    }
    let file = match path.strip_prefix("../") {
        Some(file) => file.to_string(),
        None => format!("docs/{path}"),
    };
    if in_package(&file) {
        format!("{source}/{file}")
    } else {
        format!("{repository}/tree/main/{file}")
    }
}
