//! Compile-time guarantees. The failing cases run in a fail-only `TestCases`, which trybuild
//! checks with `cargo check`: each error must appear where an editor shows it, not only at a
//! full build. The passing neighbours are built and run (on the software device).

#[test]
fn ui_fail() {
    trybuild::TestCases::new().compile_fail("ui-tests/fail/*.rs");
}

#[test]
fn ui_pass() {
    trybuild::TestCases::new().pass("ui-tests/pass/*.rs");
}
