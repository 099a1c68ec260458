//! Compiles the C sides of the benchmarks at -O2 against the system's <infiniband/verbs.h>
//! (libibverbs-dev, which scripts/setup.sh installs): the drain loop (`c/poll_loop.c`) and the
//! work-request posts (`c/post_send.c`, and `c/post_ex.c` through the extended QP's `ibv_wr_*`).

fn main() {
    println!("cargo:rerun-if-changed=c/poll_loop.c");
    println!("cargo:rerun-if-changed=c/post_send.c");
    println!("cargo:rerun-if-changed=c/post_ex.c");
    println!("cargo:rerun-if-changed=c/recv.c");
    cc::Build::new()
        .file("c/poll_loop.c")
        .file("c/post_send.c")
        .file("c/post_ex.c")
        .file("c/recv.c")
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true)
        .compile("poll_loop");
}
