//! The verbs below the typed layer, for conformance tests and for what the crate does not wrap.
//!
//! ```
//! use typed_verbs::{raw, Context};
//! let ctx = Context::open("sw0")?;
//! // SAFETY: a live context of this crate; the PD is deallocated once and not used after.
//! unsafe {
//!     let pd = raw::ibv_alloc_pd(ctx.as_raw()).expect("ibv_alloc_pd");
//!     assert_eq!((*pd.as_ptr()).context, ctx.as_raw());
//!     raw::ibv_dealloc_pd(pd.as_ptr()).expect("ibv_dealloc_pd");
//! }
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists this layer among the caller's
//! duties, and its [architecture](crate::guide::architecture) page shows where the layer sits.
//!
//! Each function is the libibverbs verb of the same name, dispatched to the backend of the
//! context the object belongs to: on a real device it is the libibverbs call itself, on the
//! software device the software provider's implementation. Failures are the errno the verb
//! reports. Nothing here checks the rules the typed layer enforces: that is the point (a test can
//! show that `ibv_destroy_cq` on a CQ a QP uses fails with EBUSY on both backends).
//!
//! # Safety
//! Every function is `unsafe` with the contract of the C verb: pointers are live objects of a
//! context opened by this crate (`Context::as_raw`), out-pointers are valid for writes, and an
//! object is not used after it was destroyed.
//!
//! Slot queues ([`crate::slots`]): every work request posted to a QP or SRQ in slot mode, and so
//! every completion on a [`SlotCq`](crate::SlotCq), carries a slot as its `wr_id`, which the
//! crate turns back into an owned `Slot` when it polls the completion. Posting to such a queue
//! through its raw pointer (`ibv_post_recv`, `ibv_post_srq_recv`, `ibv_post_send` of rdma-sys)
//! with any other `wr_id`, or polling a slot CQ through its raw pointer, violates this
//! contract.

#![allow(clippy::missing_safety_doc)]

/// librdmacm's verbs (rdma_cm(7)), dispatched by the event channel.
mod cm;
/// libibverbs' verbs, as C names them, each dispatched to its context's backend.
mod verbs;

pub use cm::*;
pub use verbs::*;

pub(crate) mod destroying;

use crate::backend;
use crate::ffi::{sys, RawAsyncEvent};
use std::os::raw::c_void;
use std::ptr::NonNull;

pub use crate::backend::Errno;
