//! The connection manager's runtime tests in one test binary: the typed rdma_cm layer (cm), the
//! raw rdma_* verbs (cm_raw), RDMA reads over a CM connection (cm_reads) and the rdma_cm examples
//! run as programs (cm_examples). Each module's tests use ports of their own.

#[path = "../common/mod.rs"]
mod common;

mod cm;
mod cm_examples;
mod cm_params;
mod cm_raw;
mod cm_reads;
