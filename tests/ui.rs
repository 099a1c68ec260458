//! Compile-time guarantees. The failing cases run in a fail-only `TestCases`, which trybuild
//! checks with `cargo check`: each error must appear where an editor shows it, not only at a
//! full build. The passing neighbours are built and run (on the software device).
//!
//! The expected compiler output (`ui-tests/fail/*.stderr`) was written on one toolchain, named
//! by `rustc -V` in `ui-tests/TOOLCHAIN`, and is compared only on that one: another rustc words
//! and places its notes differently. On any other toolchain every fail case must still fail to
//! compile (and every pass case pass), and `ui_fail` prints a note that the text was not
//! compared.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that hands `ui_fail_unchecked` its directory of cases.
const UNCHECKED_DIR: &str = "TYPED_VERBS_UI_UNCHECKED_DIR";

/// `rustc -V` of the toolchain this test runs on (the one cargo and trybuild use): rustup's
/// proxy picks the toolchain `cargo +name` chose, through the `RUSTUP_TOOLCHAIN` it sets.
fn rustc_version() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("-V")
        .output()
        .expect("running `rustc -V`");
    assert!(out.status.success(), "`rustc -V` failed: {out:?}");
    String::from_utf8(out.stdout)
        .expect("`rustc -V` prints UTF-8")
        .trim()
        .to_owned()
}

/// The toolchain the `.stderr` files were written for.
fn recorded_toolchain() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui-tests/TOOLCHAIN");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .expect("ui-tests/TOOLCHAIN names a toolchain (`rustc -V`)")
        .to_owned()
}

#[test]
fn ui_fail() {
    let here = rustc_version();
    let recorded = recorded_toolchain();
    if here == recorded {
        trybuild::TestCases::new().compile_fail("ui-tests/fail/*.rs");
        return;
    }
    // Written to stderr itself, not through `eprintln!`, which the test harness captures (and
    // shows only for a failing test).
    writeln!(
        std::io::stderr(),
        "NOTE: ui-tests/fail: the expected compiler output was written on `{recorded}`, this is \
         `{here}`: checking only that every case fails to compile; the text was not compared"
    )
    .expect("writing to stderr");
    // The cases without their `.stderr`, in a scratch directory where trybuild may write what it
    // sees (TRYBUILD=overwrite): it still fails a case that compiles.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-fail-unchecked");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    let mut cases = 0;
    for entry in std::fs::read_dir("ui-tests/fail").expect("reading ui-tests/fail") {
        let path = entry.expect("reading ui-tests/fail").path();
        if path.extension().is_some_and(|e| e == "rs") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).expect("copying a case");
            cases += 1;
        }
    }
    assert!(cases > 0, "no fail cases in ui-tests/fail");
    // A process of its own, so that TRYBUILD is set before anything reads the environment.
    let status = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args(["ui_fail_unchecked", "--exact", "--ignored", "--nocapture"])
        .env("TRYBUILD", "overwrite")
        .env(UNCHECKED_DIR, &dir)
        .status()
        .expect("running ui_fail_unchecked");
    assert!(
        status.success(),
        "a fail case compiled, or trybuild failed (above)"
    );
}

/// `ui_fail`'s check on a toolchain other than the recorded one; it runs the copies `ui_fail`
/// made, in a process with `TRYBUILD=overwrite`.
#[test]
#[ignore = "run by ui_fail on a toolchain other than ui-tests/TOOLCHAIN's"]
fn ui_fail_unchecked() {
    let dir = std::env::var_os(UNCHECKED_DIR)
        .expect("ui_fail_unchecked runs from ui_fail, which names its directory");
    assert_eq!(
        std::env::var_os("TRYBUILD").as_deref(),
        Some("overwrite".as_ref())
    );
    let pattern = Path::new(&dir).join("*.rs");
    trybuild::TestCases::new().compile_fail(pattern);
}

#[test]
fn ui_pass() {
    trybuild::TestCases::new().pass("ui-tests/pass/*.rs");
}

/// docs/diagnostics.md lists every fail case with the first error line of its `.stderr`, and at
/// least 90% of the cases the crate can shape name the problem and the fix in that line.
#[test]
fn diagnostics_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("docs/diagnostics.md")).expect("docs/diagnostics.md");
    let mut listed = std::collections::BTreeMap::new();
    let (mut shapeable, mut named) = (0, 0);
    for row in doc.lines().filter(|l| l.starts_with("| [")) {
        let cells: Vec<&str> = row
            .split(" | ")
            .map(|c| c.trim_matches(|ch| ch == '|' || ch == ' '))
            .collect();
        let name = cells[0]
            .strip_prefix('[')
            .and_then(|c| c.split(']').next())
            .expect("a row starts with the case's link");
        let line = cells[1]
            .strip_prefix("`` ")
            .and_then(|c| c.strip_suffix(" ``"))
            .unwrap_or_else(|| panic!("{name}: the first line in a code span"));
        let yes = |i: usize| cells[i] == "yes";
        if yes(4) {
            shapeable += 1;
            named += usize::from(yes(2) && yes(3));
        }
        listed.insert(name.to_owned(), line.replace("\\|", "|"));
    }
    let mut cases = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root.join("ui-tests/fail")).expect("ui-tests/fail") {
        let path = entry.expect("ui-tests/fail").path();
        if path.extension().is_some_and(|e| e == "stderr") {
            let text = std::fs::read_to_string(&path).expect("a .stderr");
            let first = text
                .lines()
                .find(|l| l.starts_with("error"))
                .unwrap_or_else(|| panic!("{}: no error line", path.display()))
                .to_owned();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            cases.insert(name, first);
        }
    }
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        cases.keys().collect::<Vec<_>>(),
        "docs/diagnostics.md lists exactly the fail cases"
    );
    for (name, first) in &cases {
        assert_eq!(
            &listed[name], first,
            "{name}: the table's first line is the .stderr's"
        );
    }
    assert!(
        named * 10 >= shapeable * 9,
        "{named} of {shapeable} shapeable cases name the problem and the fix: below 90%"
    );
    let share = format!("**{named} of {shapeable}**");
    assert!(doc.contains(&share), "the page states the share as {share}");
}
