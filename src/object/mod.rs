//! What every handle is made of, below the objects (device, PD, MR, CQ, QP, SRQ, ...) and
//! above the raw verbs:
//!
//! - [`parent`] (public as `typed_verbs::parent`): how a handle holds the parents it keeps
//!   alive, borrowed (`&P`) or shared (`Arc<P>`).
//! - `handle`: an owned object's explicit `destroy`, which reports the error and gives the
//!   object back, and its `Drop`; the typed user context freed once no handle is armed
//!   (`Destroy`, `Leftover`, `UserBox`, `drop_or_queue`).
//! - [`teardown`]: what a thread inside a polling batch may not do, and the teardowns that
//!   wait for a batch's end.
//! - `gate`: each CQ's gate, which decides who takes the CQ's lock next, a batch or a
//!   teardown, and holds the poller's claim.
//!
//! The destroy verbs that ack an object's held async events first are the raw verbs'
//! (`crate::raw::destroying`).

pub(crate) mod gate;
mod handle;
pub mod parent;
pub(crate) mod teardown;

pub(crate) use handle::*;
