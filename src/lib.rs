//! # typed-verbs
//!
//! RDMA verbs (libibverbs) made safe by construction: the rules of the verbs' man pages are
//! types (a QP's transport, state and caps, a CQ's `wc_flags`, the destruction order), and what
//! cannot be a type is checked before the FFI call and returned as a typed [`Error`].
//!
//! A first program: an RC pair in loopback, a send and a receive. It runs on the built-in
//! [`software`] device `sw0`; the same code runs on a real device through rdma-core, opened by
//! name or with [`Context::open_from_env`].
//!
//! ```
//! use typed_verbs::prelude::*;
//!
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
//! let (cq, mut poller) = cq.split(); // the CQ for the QPs, its one poller for this thread
//! let (a, b) = (Qp::<Rc>::builder(&pd, cq, cq).build()?, Qp::<Rc>::builder(&pd, cq, cq).build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?); // exchanged out of band
//! let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?; // RESET -> INIT -> RTR -> RTS
//! let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
//! let tx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! b.post_recv(1, &[rx.sge(0..4096).unwrap()])?;
//! tx.write(0, b"hello")?;
//! a.post_send(&SendWr::send(2, &[tx.sge(0..5).unwrap()]))?; // unsignaled: only b completes
//! let mut received = None;
//! while received.is_none() {
//!     poller.poll_batch(|batch| {
//!         let wc = batch.completion().result().expect("success");
//!         received = Some((wc.wr_id(), wc.byte_len())); // byte_len: BYTE_LEN is in the CQ's type
//!     })?; // ibv_end_poll here; `None` had the CQ been empty
//! }
//! assert_eq!(received, Some((1, 5)));
//! let mut got = [0; 5];
//! rx.read(0, &mut got)?;
//! assert_eq!(&got, b"hello");
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! Reading a field whose flag the CQ lacks does not compile:
//!
//! ```compile_fail,E0277
//! # use typed_verbs::prelude::*;
//! # let ctx = Context::open("sw0")?;
//! let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
//! cq.poll_batch(|batch| batch.completion().result().ok().map(|wc| wc.imm_data()))?; // needs IMM
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! # Where to read on
//!
//! - [The guide](guide) is the index of the pages below and the others; [using the
//!   crate](guide::using) goes on from this program.
//! - [Guarantees](guide::guarantees): what is a compile error, what is checked at run time, and
//!   what stays the caller's duty.
//! - [The software device](guide::software_device): what `sw0` models, and how to choose it or a
//!   real device (`TYPED_VERBS_DEVICE`).
//! - [Connection management](guide::connection_management) with rdma_cm, and
//!   [when a peer dies](guide::faults).
//! - [Generated poll loops](guide::poll_loops) and [performance](guide::performance).
//! - [How typed-verbs compares](guide::peers) with the `ibverbs` 0.9.2 and `sideway` 0.4.3 crates.
//! - [`safety`]: the safety model (leaks, panics, threads, polling batches, the FFI boundary).
//!
//! Every public type and every verb has a runnable example, and every fallible function an
//! `# Errors` section naming when it fails.
#![warn(missing_docs)]
#![warn(clippy::missing_errors_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]

// The layers, bottom up (tests/layering.rs checks that imports point down them):
// the C side, the backends, the raw verbs, what every handle is made of, then the objects.
mod backend;
pub mod cm;
pub mod cq;
pub mod device;
pub mod event;
pub mod ffi;
pub mod mr;
mod object;
pub mod pd;
pub mod qp;
pub mod raw;
pub mod slots;
#[cfg(feature = "software-device")]
#[cfg_attr(docsrs, doc(cfg(feature = "software-device")))]
pub mod software;
pub mod srq;
// The crate's locks and atomics: parking_lot's and std's, or loom's in the models' build.
mod sync;
pub mod wr;
// Beside the layers: the crate's errors and seals (leaves every layer above the backends may
// use), and the safety model (documentation).
pub mod error;
pub mod guide;
pub mod safety;
mod sealed;

// The modules' paths before they moved into their layers' folders: the same modules.
pub use cq::{channel, ex as cq_ex, wc};
pub use ffi::dma;
pub use mr::access;
pub use object::parent;
pub use qp::{ah, connect, state as qp_state};

pub use access::Access;
pub use ah::AddressHandle;
pub use channel::CompChannel;
pub use connect::{Endpoint, RcParams};
pub use cq::{AnyCq, Cq, CqBuilder, CqContext, QpContextOk, Shared, SingleThreaded, Threading};
pub use cq_ex::{
    AllFields, ArcPoller, Batch, Completion, CqEx, Failure, NoFields, Poller, Standard, Success,
    Unchecked, WcFlagSet, WcFlags,
};
pub use device::{devices, Context, Device, DeviceAttr, PortAttr, DEVICE_ENV};
pub use error::{DestroyError, Error, ErrorKind, QpStateName, Result, Verb};
pub use event::{AsyncEvent, AsyncEventGuard, CqEvent, EventAcks};
pub use mr::{
    AtomicResult, AtomicTarget, Borrowed, HugeBuf, Mr, OwnedBuf, PageBuf, RemoteAddr, RemoteMr, Sge,
};
pub use pd::{ParentDomain, Pd};
pub use qp::{
    Ex, Gid, OwnRq, Qp, QpBuilder, QpCap, QpThreading, QpType, RawPacket, Rc, RecvSide, Uc, Ud,
    UsesSrq,
};
pub use qp_state::{
    AccessFlags, AddressVector, AltPath, ConnectedInit, ConnectedInitModify, ErrorState,
    GlobalRoute, Init, ModifyError, Mtu, PathMigState, QpState, RawPacketInit, RcRtr, RcRts,
    RcRtsModify, Reset, Rtr, Rts, SqPsn, UcRtr, UcRtsModify, UdInit, UdInitModify, UdRtsModify,
};
pub use slots::{Received, Slot, SlotBatch, SlotCq, SlotPostError, SlotRq, SlotSrq, UsesSlotSrq};
#[cfg(feature = "software-device")]
#[cfg_attr(docsrs, doc(cfg(feature = "software-device")))]
pub use software::InjectedCompletion;
pub use srq::{Srq, SrqAttr};
pub use wc::{WcOpcode, WcStatus, WorkCompletion};
pub use wr::{PostBatch, PostError, SendWr, SgeList, UdDest, MAX_TYPED_SGE};

/// What a typical program needs, in one import: `use typed_verbs::prelude::*;`.
///
/// ```
/// use typed_verbs::prelude::*;
///
/// fn make_pair<'a>(pd: &'a Pd<'_>, cq: &'a CqEx<'_, Standard>) -> Result<(Qp<'a, Rc, OwnRq, Shared, (), Rts>, Qp<'a, Rc, OwnRq, Shared, (), Rts>)> {
///     let (a, b) = (Qp::<Rc>::builder(pd, cq, cq).build()?, Qp::<Rc>::builder(pd, cq, cq).build()?);
///     let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
///     Ok((a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?))
/// }
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// let (a, b) = make_pair(&pd, &cq)?;
/// assert_eq!(a.query_state()?, typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_RTS); // as typed
/// # drop(b);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// The handles (context, PD, CQs, SRQ, QP, memory region), the QP types, receive sides,
/// threading markers and states that name a QP in a signature (`Qp<'a, Rc, OwnRq, Shared, (),
/// Rts>`), the attributes of each transition, work requests and SGEs, the `wc_flags!` and
/// `completion_record!` macros, and the crate's [`Error`] and [`Result`] (whose error type
/// defaults to `Error`, so `Result<T, Box<dyn std::error::Error>>` still reads as usual).
///
/// The crate root's first program uses it; [the guide](crate::guide) goes on from there.
pub mod prelude {
    pub use crate::{
        access, completion_record, send_ops, wc_flags, Access, AccessFlags, AddressVector, AltPath,
        AnyCq, CompChannel, ConnectedInit, ConnectedInitModify, Context, Cq, CqEx, Endpoint, Error,
        ErrorState, Ex, Gid, GlobalRoute, HugeBuf, Init, Mr, Mtu, OwnRq, PageBuf, PathMigState, Pd,
        Poller, Qp, QpThreading, RawPacket, RawPacketInit, Rc, RcRtr, RcRts, RcRtsModify, Received,
        RemoteAddr, RemoteMr, Reset, Result, Rtr, Rts, SendWr, Sge, Shared, SingleThreaded, Slot,
        SlotCq, SlotRq, SlotSrq, SqPsn, Srq, Standard, Uc, UcRtr, UcRtsModify, Ud, UdDest, UdInit,
        UdInitModify, UdRtsModify, UsesSlotSrq, UsesSrq, WcOpcode, WcStatus, WorkCompletion,
    };
}

/// Names a CQ's `wc_flags` as a type: `wc_flags!(BYTE_LEN | IMM)` is the [`WcFlagSet`] with
/// those two flags. The names are the man page's without `IBV_WC_EX_WITH_` (`BYTE_LEN`, `IMM`,
/// `QP_NUM`, `SRC_QP`, `SLID`, `SL`, `DLID_PATH_BITS`, `COMPLETION_TIMESTAMP`, `CVLAN`,
/// `FLOW_TAG`, `COMPLETION_TIMESTAMP_WALLCLOCK`), plus `STANDARD` for the seven standard ones;
/// `wc_flags!()` is the empty set. An unknown name is a compile error that lists the valid ones.
pub use typed_verbs_macros::wc_flags;

/// Names an extended QP's send ops as a type: `send_ops!(SEND | RDMA_WRITE)` is the
/// [`SendOpSet`](qp::ex::SendOpSet) with those two, for
/// [`QpBuilder::send_ops`] and [`Ex`]. The names are verbs.h's without `IBV_QP_EX_WITH_`:
/// `RDMA_WRITE`, `RDMA_WRITE_WITH_IMM`, `SEND`, `SEND_WITH_IMM`, `RDMA_READ`,
/// `ATOMIC_CMP_AND_SWP`, `ATOMIC_FETCH_AND_ADD`. At least one is needed; an unknown name, or
/// one typed-verbs has no builder for (`LOCAL_INV`, `BIND_MW`, `SEND_WITH_INV`, `TSO`, `FLUSH`,
/// `ATOMIC_WRITE`), is a compile error that lists the valid ones.
///
/// ```
/// use typed_verbs::{prelude::*, send_ops};
/// type Ops = send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE);
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp: Qp<'_, Ex<Uc, Ops>> = Qp::<Uc>::builder(&pd, &cq, &cq).send_ops::<Ops>().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub use typed_verbs_macros::send_ops;

/// Declares the completion record a program reads from a CQ and generates its poll loops.
///
/// ```
/// typed_verbs::completion_record! {
///     /// A receive: what the program needs of it.
///     pub struct Recv { wr_id, opcode, byte_len, imm_data, qp_num }
///     /// A failed work request (optional; this is the default).
///     pub struct RecvError { wr_id, status, vendor_err }
///     max_batch = 16;
/// }
/// ```
///
/// declares `Recv` and `RecvError` with those fields (typed as the completion's readers return
/// them) and generates:
///
/// - `Recv::poll(&mut cq_or_poller, |r: Result<Recv, RecvError>| ...)`: one batch from a
///   [`CqEx`] or its [`Poller`]: `ibv_start_poll`, `ibv_next_poll` up to `max_batch`, one
///   `ibv_end_poll`, one provider read per declared field per completion, no flag test, no
///   allocation, the handler inlined. It requires the CQ's `wc_flags` to have every declared
///   field's flag: a missing one is a compile error naming the flag to add.
/// - `Recv::poll_legacy(&cq, handler)`: the same for a legacy [`Cq`], through `ibv_poll_cq`
///   into a stack array (only when every field exists in `struct ibv_wc`).
/// - `Recv::try_poll(&mut cq, |r| -> Result<(), E> { .. })` and `Recv::try_poll_legacy`: the
///   same with a handler that returns a `Result`, for any `E: From<typed_verbs::Error>`; an
///   `Err` ends the batch and is returned (`RecvError` is a `std::error::Error`, so
///   `let r = r?;` hands a failed completion on).
///
/// A record with `slot` in its success record polls a [`SlotCq`] (or its
/// [`SlotPoller`](slots::SlotPoller)) instead: each completion's [`Slot`] is handed to the
/// handler, owned (the view's `into_slot()`, `received()` with the byte count, `into_record()`;
/// the error record has `slot` too unless it is declared without it); `wr_id`, which is the
/// slot itself, cannot be declared then. On a plain CQ `slot` is a compile error naming
/// `.slots()`.
///
/// Success fields: `slot`, `wr_id`, `status`, `opcode`, `completion_flags`, `byte_len`, `imm_data`,
/// `invalidated_rkey`, `qp_num`, `src_qp`, `slid`, `sl`, `dlid_path_bits`, `completion_ts`,
/// `completion_wallclock_ns`, `cvlan`, `flow_tag`. Error fields: `slot`, `wr_id`, `status`,
/// `vendor_err`. An unknown name, a success-only field in the error record and `max_batch = 0`
/// are compile errors that say what to write instead.
pub use typed_verbs_macros::completion_record;

// Zero cost: every handle is one pointer, and so is an Option of it.
mod handle_sizes {
    use super::*;
    use static_assertions::assert_eq_size;
    type P = *const ();
    assert_eq_size!(Context, P);
    assert_eq_size!(Option<Context>, P);
    assert_eq_size!(Pd<'static>, P);
    assert_eq_size!(Option<Pd<'static>>, P);
    assert_eq_size!(ParentDomain<'static>, P);
    assert_eq_size!(Option<ParentDomain<'static>>, P);
    assert_eq_size!(CompChannel<'static>, P);
    assert_eq_size!(Option<CompChannel<'static>>, P);
    assert_eq_size!(Cq<'static, String>, P);
    assert_eq_size!(Option<Cq<'static, String>>, P);
    assert_eq_size!(CqEx<'static, AllFields, SingleThreaded, String>, P);
    assert_eq_size!(Option<CqEx<'static, Standard>>, P);
    // A batch is the CQ and poll_batch's "still open" flag; it lives in registers in a loop.
    assert_eq_size!(Batch<'static, Standard>, [P; 2]);
    assert_eq_size!(Option<Batch<'static, Standard>>, [P; 2]);
    assert_eq_size!(Poller<'static, Standard>, P);
    assert_eq_size!(Completion<'static, Standard>, P);
    assert_eq_size!(Srq<'static, String>, P);
    assert_eq_size!(Mr<'static>, P);
    assert_eq_size!(Mr<'static, Vec<u8>>, P);
    assert_eq_size!(Mr<'static, HugeBuf>, P);
    assert_eq_size!(Mr<'static, mr::Borrowed<'static>>, P);
    assert_eq_size!(Option<AddressHandle<'static>>, P);
    assert_eq_size!(Option<Mr<'static>>, P);
    assert_eq_size!(Option<Mr<'static, Box<[u8]>>>, P);
    assert_eq_size!(Option<Srq<'static>>, P);
    assert_eq_size!(Qp<'static, Rc, OwnRq, SingleThreaded, String>, P);
    assert_eq_size!(Option<Qp<'static, Ud, UsesSrq>>, P);
    assert_eq_size!(Qp<'static, Rc, OwnRq, Shared, (), qp_state::Rts>, P);
    assert_eq_size!(Slot<'static>, P);
    assert_eq_size!(Option<Slot<'static>>, P);
    assert_eq_size!(SlotCq<'static, Standard>, P);
    assert_eq_size!(SlotSrq<'static>, P);
}

/// The README's programs, run as doctests (on the software device).
#[cfg(all(doctest, feature = "software-device"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
