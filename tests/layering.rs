//! The layers of src/, bottom up, and the rule that imports point down them. Each layer is a
//! folder (or one file) at the top of src/:
//!
//! 1. `ffi/`: the C side (rdma-sys, the C layouts, registered memory's model, fds), and beside
//!    it `sync`, the crate's sync facade (locks and atomics: parking_lot's and std's, or loom's);
//! 2. `backend/`: the seam, rdma-core with its provider workarounds, the software device;
//! 3. `sealed`, `error`: the typed layer's leaves;
//! 4. `raw/`: the unchecked verbs, as C names them;
//! 5. `object/`: what every handle is made of (parents, destroy and drop, teardown, gates);
//! 6. the objects, each on the ones it is made from: `device`, `pd`, `mr/`, `cq/`,
//!    `software` (the software device's test hooks), `srq`, `qp/`, `wr`, `event`, `slots`, `cm`.
//!
//! Every `crate::`, `super::` and `self::` path in a module must resolve into its own folder
//! or a lower layer, and name a module there: not a re-export of lib.rs (`crate::Cq`,
//! `crate::cq_ex`), which would hide where it points. The typed layer reaches the software
//! provider only through the seam (`src/backend/mod.rs`), and its test hooks through one module
//! (`src/software.rs`, the public `typed_verbs::software`). A path that breaks a rule fails
//! here with its file and line, and a folder that is in no layer fails too.

use std::path::{Path, PathBuf};

/// The layers, bottom up: a module may point into its own folder and into any module of a
/// lower layer.
const LAYERS: &[&[&str]] = &[
    &["ffi", "sync"],
    &["backend"],
    &["sealed"],
    &["error"],
    &["raw"],
    &["object"],
    &["device"],
    &["pd"],
    &["mr"],
    &["cq"],
    &["software"],
    &["srq"],
    &["qp"],
    &["wr"],
    &["event"],
    &["slots"],
    &["cm"],
];
/// Modules outside the layers: the crate root, the safety model and the guide (documentation
/// only).
const BESIDE: &[&str] = &["", "safety", "guide"];
/// The macros lib.rs re-exports from typed-verbs-macros (another crate: no cycle).
const ROOT_MACROS: &[&str] = &["completion_record", "wc_flags"];
/// The one typed-layer module that may name the software provider: its test hooks.
const HOOKS: &str = "src/software.rs";

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source with comments, string literals and char literals blanked out (newlines kept, so
/// line numbers stay), leaving only code.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_'))
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' || c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            // A string literal, or a char literal ('x', '\n', '\u{..}'); a lifetime ('a) is
            // code.
            i = blank_quoted(&b, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks the quoted literal that opens at `b[open]` (its quote char closes it; a backslash
/// escapes the next char) into `out`, and returns the index past its closing quote.
fn blank_quoted(b: &[char], open: usize, out: &mut String) -> usize {
    let quote = b[open];
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    out.push(' ');
    let mut i = open + 1;
    while i < b.len() && b[i] != quote {
        if b[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if i < b.len() {
            out.push(blank(b[i]));
            i += 1;
        }
    }
    out.push(' ');
    i + 1
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Open,
    Close,
    Comma,
    Other(char),
}

fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let b: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' || (c == '$' && b.get(i + 1) == Some(&'c')) {
            let s = i;
            i += 1;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let id: String = b[s..i].iter().collect();
            out.push((Tok::Ident(id.trim_start_matches('$').to_owned()), line));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    _ => Tok::Other(c),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// The module a file is: `src/lib.rs` is the crate root, `src/a/mod.rs` and `src/a.rs` are
/// `a`, `src/a/b.rs` is `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_owned());
    }
    parts
}

/// Every path in `toks` that starts at `crate`, `super` or `self`, resolved against the module
/// the code is in (inline `mod x { ... }` blocks included), as (line, the absolute path's
/// first segments: at least the top-level module, and the one below it when known).
fn crate_paths(module: &[String], toks: &[(Tok, usize)]) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    // The inline modules open around the current token, with the brace depth they opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let ident = |k: usize| match toks.get(k) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(id) if id == "mod" => {
                if let (Some(name), Some((Tok::Open, _))) = (ident(i + 1), toks.get(i + 2)) {
                    inline.push((name.to_owned(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(id)
                if (id == "crate" || id == "super" || id == "self")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                    // `a::self` / `a::super` are inside a path already read.
                    && !(i > 0 && toks[i - 1].0 == Tok::Path) =>
            {
                let line = toks[i].1;
                let mut base: Vec<String> = if id == "crate" {
                    Vec::new()
                } else {
                    let mut m = module.to_vec();
                    m.extend(inline.iter().map(|(n, _)| n.clone()));
                    m
                };
                let mut k = i;
                if id != "crate" {
                    while let Some(s @ ("super" | "self")) = ident(k) {
                        if toks.get(k + 1).map(|t| &t.0) != Some(&Tok::Path) {
                            break;
                        }
                        if s == "super" {
                            base.pop();
                        }
                        k += 2;
                    }
                } else {
                    k += 2;
                }
                // The segments after the base: one ident, or a `{ .. }` group whose items
                // each start with one (reported at their own line).
                let mut firsts: Vec<(String, usize)> = Vec::new();
                match toks.get(k).map(|t| &t.0) {
                    // `crate::name!`: an exported macro, which Rust puts at the crate root
                    // whatever module defines it.
                    Some(Tok::Ident(_))
                        if toks.get(k + 1).map(|t| &t.0) == Some(&Tok::Other('!')) => {}
                    Some(Tok::Ident(s)) => {
                        let mut p = vec![s.clone()];
                        if toks.get(k + 1).map(|t| &t.0) == Some(&Tok::Path) {
                            if let Some(s2) = ident(k + 2) {
                                p.push(s2.to_owned());
                            }
                        }
                        firsts.push((p.join("::"), line));
                    }
                    Some(Tok::Open) => {
                        let mut d = 0;
                        let mut expect_item = true;
                        let mut j = k;
                        while j < toks.len() {
                            match &toks[j].0 {
                                Tok::Open => {
                                    d += 1;
                                    expect_item = d == 1;
                                }
                                Tok::Close => {
                                    d -= 1;
                                    if d == 0 {
                                        break;
                                    }
                                }
                                Tok::Comma if d == 1 => expect_item = true,
                                Tok::Ident(s) if expect_item && d == 1 => {
                                    firsts.push((s.clone(), toks[j].1));
                                    expect_item = false;
                                }
                                Tok::Other('*') if expect_item && d == 1 => {
                                    firsts.push(("*".into(), toks[j].1));
                                    expect_item = false;
                                }
                                _ => {
                                    if d == 1 {
                                        expect_item = false;
                                    }
                                }
                            }
                            j += 1;
                        }
                    }
                    Some(Tok::Other('*')) => firsts.push(("*".into(), line)),
                    _ => {}
                }
                for (f, at) in firsts {
                    let mut abs = base.clone();
                    abs.extend(f.split("::").map(str::to_owned));
                    abs.truncate(2);
                    out.push((at, abs));
                }
                i = k;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every upward or sideways path in `src/`, as `file:line: why: the line`.
fn upward_paths(root: &Path, src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut upward = Vec::new();
    for file in files {
        let module = module_of(src, file);
        let own = module.first().map(String::as_str).unwrap_or("");
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let text = std::fs::read_to_string(file).expect("read a source file");
        let line_of = |line: usize| text.lines().nth(line - 1).unwrap_or("").trim().to_owned();
        let Some(rank) = layer_of(own) else {
            if !BESIDE.contains(&own) {
                upward.push(format!(
                    "{rel}:1: `{own}` is in no layer: add it to LAYERS in tests/layering.rs"
                ));
            }
            continue;
        };
        let toks = tokens(&code_only(&text));
        for (line, abs) in crate_paths(&module, &toks) {
            let top = abs.first().map(String::as_str).unwrap_or("");
            if top == own || top == "*" && abs.len() > 1 {
                continue;
            }
            let why = match layer_of(top) {
                Some(r) if r < rank => continue,
                Some(_) => format!("`crate::{}` is not below `{own}`", abs.join("::")),
                None if ROOT_MACROS.contains(&top) => continue,
                None => format!(
                    "`crate::{}` names lib.rs's re-export, not the module it points into",
                    abs.join("::")
                ),
            };
            upward.push(format!("{rel}:{line}: {why}: {}", line_of(line)));
        }
        // Ways around `crate::`: aliasing the crate, or naming it from outside.
        for w in toks.windows(2) {
            match (&w[0].0, &w[1].0) {
                (Tok::Ident(a), Tok::Ident(b)) if (a == "crate" || a == "super") && b == "as" => {
                    upward.push(format!("{rel}:{}: `{a} as` aliases a path upward", w[0].1))
                }
                (Tok::Ident(a), Tok::Path) if a == "typed_verbs" => upward.push(format!(
                    "{rel}:{}: `typed_verbs::` names the crate from outside",
                    w[0].1
                )),
                _ => {}
            }
        }
    }
    upward
}

#[test]
fn imports_point_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    if !src.is_dir() {
        // The test binary runs without its sources (in the rxe VM): the check is of the
        // sources, the same on every device, and runs where they are.
        println!("SKIP imports_point_down_the_layers: the crate's sources are not here");
        return;
    }
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 10, "found the crate's sources");
    for layer in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            src.join(layer).is_dir() || src.join(format!("{layer}.rs")).is_file(),
            "the layer `{layer}` is src/{layer}/ or src/{layer}.rs"
        );
    }
    let upward = upward_paths(root, &src, &files);
    assert!(
        upward.is_empty(),
        "paths that do not point down the layers (move what both need down, e.g. into \
         src/ffi/, or report an errno and let the typed layer make the Error): {upward:#?}"
    );
}

#[test]
fn an_upward_import_fails_with_its_file_and_line() {
    // The check above finds what it should: a scratch tree with one path of each kind it
    // refuses, and one of each it allows.
    let dir = std::env::temp_dir().join(format!("typed-verbs-layering-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("ffi")).expect("scratch dir");
    std::fs::create_dir_all(src.join("cq")).expect("scratch dir");
    let write = |p: &str, text: &str| std::fs::write(src.join(p), text).expect("scratch file");
    write(
        "ffi/mod.rs",
        "use crate::error::Error;\nuse super::ffi::sys;\n",
    );
    write(
        "cq/ex.rs",
        "use crate::{pd::Pd, qp::Qp};\nuse super::super::Cq;\nuse crate::cq::wc;\n",
    );
    write("gadget.rs", "use crate::ffi::sys;\n");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let got = upward_paths(&dir, &src, &files);
    std::fs::remove_dir_all(&dir).ok();
    let want = [
        "src/cq/ex.rs:1: `crate::qp` is not below `cq`",
        "src/cq/ex.rs:2: `crate::Cq` names lib.rs's re-export",
        "src/ffi/mod.rs:1: `crate::error::Error` is not below `ffi`",
        "src/gadget.rs:1: `gadget` is in no layer",
    ];
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(want) {
        assert!(g.starts_with(w), "{g} does not start with {w}");
    }
}

#[test]
fn the_typed_layer_reaches_the_software_provider_through_the_seam() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    if !src.is_dir() {
        println!(
            "SKIP the_typed_layer_reaches_the_software_provider_through_the_seam: the crate's \
             sources are not here"
        );
        return;
    }
    assert!(
        src.join("backend/software").is_dir(),
        "the software provider lives under src/backend/software/"
    );
    assert!(root.join(HOOKS).is_file(), "{HOOKS} holds the test hooks");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut around = Vec::new();
    let mut hook_uses = 0;
    for file in &files {
        let module = module_of(&src, file);
        if module.first().map(String::as_str) == Some("backend") {
            continue;
        }
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let is_hooks = file.ends_with(HOOKS);
        let text = std::fs::read_to_string(file).expect("read a source file");
        let toks = tokens(&code_only(&text));
        let mut hits: Vec<usize> = crate_paths(&module, &toks)
            .into_iter()
            .filter(|(_, abs)| abs.len() >= 2 && abs[0] == "backend" && abs[1] == "software")
            .map(|(line, _)| line)
            .collect();
        // `backend::software` reached from a `use crate::backend;` as well.
        for w in toks.windows(3) {
            if let (Tok::Ident(a), Tok::Path, Tok::Ident(b)) = (&w[0].0, &w[1].0, &w[2].0) {
                if a == "backend" && b == "software" {
                    hits.push(w[0].1);
                }
            }
        }
        hits.sort();
        hits.dedup();
        if is_hooks {
            hook_uses += hits.len();
        } else {
            for line in hits {
                around.push(format!(
                    "{rel}:{line}: {}",
                    text.lines().nth(line - 1).unwrap_or("").trim()
                ));
            }
        }
    }
    assert!(hook_uses > 0, "{HOOKS} reaches the provider's hooks");
    assert!(
        around.is_empty(),
        "typed-layer code that reaches the software provider around the seam (use \
         `backend::of(ctx)` or the seam's device functions in src/backend/mod.rs; test hooks \
         belong in {HOOKS}): {around:#?}"
    );
}

#[test]
fn the_scanner_reads_paths_as_rustc_does() {
    // The checks above are only as good as the path reader: it must see through groups,
    // `super`, inline modules and multi-line uses, and not be fooled by comments or strings.
    let module = vec!["backend".to_owned(), "software".to_owned(), "cq".to_owned()];
    let src = r#"
use super::events::EventCounts; // crate::cq::AnyCq in a comment
use crate::{
    ffi::{self, sys},
    cq::AnyCq,
};
const S: &str = "crate::error::Error";
const C: char = '{';
fn f<'a>(x: &'a u8) { let _ = super::super::super::wc::WcOpcode::SEND; }
type A = <$crate::access!(LOCAL_WRITE) as crate::mr::access::Rights>::Bits;
mod tests { use super::*; use super::super::super::super::event; }
use crate::*;
"#;
    let toks = tokens(&code_only(src));
    let got: Vec<(usize, String)> = crate_paths(&module, &toks)
        .into_iter()
        .map(|(l, p)| (l, p.join("::")))
        .collect();
    let want: Vec<(usize, String)> = [
        (2, "backend::software"),
        (4, "ffi"),
        (5, "cq"),
        (9, "wc::WcOpcode"),
        (10, "mr::access"),
        (11, "backend::software"),
        (11, "event"),
        (12, "*"),
    ]
    .into_iter()
    .map(|(l, p)| (l, p.to_owned()))
    .collect();
    assert_eq!(got, want);
}
