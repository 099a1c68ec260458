//! Compiles variant (b), the C drain loop (`c/poll_loop.c`), at -O2 against the system's
//! <infiniband/verbs.h> (libibverbs-dev, which scripts/setup.sh installs).

fn main() {
    println!("cargo:rerun-if-changed=c/poll_loop.c");
    cc::Build::new()
        .file("c/poll_loop.c")
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true)
        .compile("poll_loop");
}
