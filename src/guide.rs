//! The guide: every page of the repository's `docs/` folder, rendered here so that it reads on
//! docs.rs next to the API, and so that its Rust programs run as doctests. build.rs copies the
//! pages into `OUT_DIR` with their links made rustdoc's (a page's link to another is a link to
//! its module).
#![doc = include_str!(concat!(env!("OUT_DIR"), "/guide/README.md"))]

macro_rules! guide_pages {
    ($($(#[$attr:meta])* $name:ident = $file:literal;)*) => {$(
        $(#[$attr])*
        // The pages are Markdown for GitHub first; clippy's doc lints are for API docs.
        #[allow(clippy::doc_overindented_list_items, clippy::doc_lazy_continuation)]
        pub mod $name {
            #![doc = include_str!(concat!(env!("OUT_DIR"), "/guide/", $file))]
        }
    )*};
}

guide_pages! {
    architecture = "architecture.md";
    connection_management = "connection-management.md";
    connection_parameters = "connection-parameters.md";
    diagnostics = "diagnostics.md";
    extended_qp = "extended-qp.md";
    faults = "faults.md";
    guarantees = "guarantees.md";
    model_checking = "model-checking.md";
    peer_crash = "peer-crash.md";
    peers = "peers.md";
    performance = "performance.md";
    poll_loops = "poll-loops.md";
    sanitizers = "sanitizers.md";
    software_device = "software-device.md";
    test_matrix = "test-matrix.md";
    testing = "testing.md";
    using = "using.md";
}
