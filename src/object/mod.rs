//! What every handle is made of, below the objects (device, PD, MR, CQ, QP, SRQ, ...) and
//! above the backends:
//!
//! - [`handle`]: an owned object's explicit `destroy`, which reports the error and gives the
//!   object back, and its `Drop`; the typed user context freed once no handle is armed
//!   (`Destroy`, `Leftover`, `UserBox`, `drop_or_queue`).
//! - [`teardown`]: what a thread inside a polling batch may not do, each CQ's gate (a batch or
//!   a teardown takes its lock next; the poller's claim), and the teardowns that wait for a
//!   batch's end.
//! - [`destroying`]: the destroy verbs of the objects async events name (CQ, QP, SRQ), which
//!   ack the events still held first.
//!
//! The parents a handle keeps alive are [`crate::object::parent`]'s (public).

mod handle;
pub mod parent;
pub(crate) mod teardown;

pub(crate) use handle::*;
