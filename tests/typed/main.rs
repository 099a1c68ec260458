//! The typed API's runtime tests, one module per area (the files beside this one), in one
//! test binary: devices' objects through the typed layer, data movement, events, ownership and
//! teardown. Each module's header says what it covers and on which devices it runs.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod connect;
mod cq;
mod cq_ex;
mod data_typed;
mod dead_peer;
mod events;
mod ex_qp;
mod ownership;
mod poll_loop;
mod qp_state;
mod recovery;
mod srq_qp;
mod teardown;
mod zero_copy;
