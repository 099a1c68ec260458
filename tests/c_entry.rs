//! No panic crosses into C: every function the crate hands to C as a pointer is made by
//! `ffi::c_entry!`, which runs its body under `catch_unwind`. This checks the sources, so that
//! an `extern "C" fn` written anywhere else (a new provider operation, a callback) fails here.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).expect("read a source file");
            out.push((p.display().to_string(), text));
        }
    }
}

#[test]
fn every_extern_c_fn_is_made_by_c_entry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join("src").is_dir() {
        // The test binary runs without its sources (in the rxe VM): the check is of the
        // sources, the same on every device, and runs where they are.
        println!("SKIP every_extern_c_fn_is_made_by_c_entry: the crate's sources are not here");
        return;
    }
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    assert!(files.len() > 10, "found the crate's sources");
    let mut outside = Vec::new();
    let mut in_macro = 0;
    for (path, text) in &files {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if !code.contains("extern \"C\" fn") {
                continue;
            }
            // The one place: the macro's expansion in src/ffi/entry.rs.
            if path.ends_with("src/ffi/entry.rs")
                && code.contains("$vis unsafe extern \"C\" fn $name")
            {
                in_macro += 1;
            } else {
                outside.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert_eq!(in_macro, 1, "c_entry! makes the crate's extern \"C\" fns");
    assert!(
        outside.is_empty(),
        "extern \"C\" fns not made by ffi::c_entry! (a panic in them would abort): {outside:#?}"
    );
    // And the C entry points are made by it (the software device's ops and the rxe next_poll).
    let uses: usize = files
        .iter()
        .map(|(_, t)| t.matches("= on_panic(").count())
        .sum();
    assert!(uses >= 10, "{uses} c_entry! functions");
}
