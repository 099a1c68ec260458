//! Layers point one way: the C side (`src/ffi.rs`, `src/sync.rs`, `src/dma.rs`, `src/fd.rs`)
//! -> the backends (`src/backend/**`: the seam, rdma-core, and the software provider under it)
//! -> the typed layer (everything else). This checks the sources, as tests/c_entry.rs does: every
//! `crate::`, `super::` and `self::` path in a lower layer must resolve to a module of that
//! layer or one below it, and the typed layer reaches the software provider only through the
//! seam (`src/backend/mod.rs`) and its test hooks through one module (`src/software.rs`, the
//! public `typed_verbs::software`). A path that breaks either rule fails here with its file and
//! line.

use std::path::{Path, PathBuf};

/// The C side: may point only at itself.
const C_SIDE: &[&str] = &["ffi", "sync", "dma", "fd"];
/// The backends: may point at themselves and at the C side.
const BACKENDS: &[&str] = &["ffi", "sync", "dma", "fd", "backend"];
/// The one typed-layer module that may name the software provider: its test hooks.
const HOOKS: &str = "src/software.rs";

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
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
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
            i += 1;
        } else if c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) is code.
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '\'' {
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
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
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

#[test]
fn lower_layers_do_not_import_the_typed_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    if !src.is_dir() {
        // The test binary runs without its sources (in the rxe VM): the check is of the
        // sources, the same on every device, and runs where they are.
        println!(
            "SKIP lower_layers_do_not_import_the_typed_layer: the crate's sources are not here"
        );
        return;
    }
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 10, "found the crate's sources");
    let mut checked = 0;
    let mut upward = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        let in_dir = |d: &str| file.starts_with(src.join(d));
        let allowed = match module.first().map(String::as_str) {
            Some("ffi" | "sync" | "dma" | "fd") if module.len() == 1 => C_SIDE,
            Some("backend") => BACKENDS,
            // A provider in a directory of its own beside the backends (where the software
            // device lived before it moved under src/backend/) is a backend all the same.
            Some("software") if in_dir("software") => BACKENDS,
            _ => continue,
        };
        checked += 1;
        let text = std::fs::read_to_string(file).expect("read a source file");
        let code = code_only(&text);
        let toks = tokens(&code);
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, abs) in crate_paths(&module, &toks) {
            let top = abs.first().map(String::as_str).unwrap_or("");
            // A module may always point into itself.
            if !allowed.contains(&top) && Some(top) != module.first().map(String::as_str) {
                upward.push(format!(
                    "{rel}:{line}: `crate::{}` is not in {allowed:?}: {}",
                    abs.join("::"),
                    text.lines().nth(line - 1).unwrap_or("").trim()
                ));
            }
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
    assert!(checked >= 5, "checked {checked} files of the lower layers");
    assert!(
        upward.is_empty(),
        "paths from the C side or the backends up into the typed layer (move what both need \
         down, e.g. into src/ffi.rs, or report an errno and let the typed layer make the \
         Error): {upward:#?}"
    );
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
        (10, "backend::software"),
        (10, "event"),
        (11, "*"),
    ]
    .into_iter()
    .map(|(l, p)| (l, p.to_owned()))
    .collect();
    assert_eq!(got, want);
}
