//! Work requests (ibv_post_send(3), ibv_post_recv(3), ibv_post_srq_recv(3)), legal per QP type
//! and state by construction.
//!
//! ```
//! use typed_verbs::prelude::*;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
//! let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
//! let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
//! let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
//! let target = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?; // b's
//! let local = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! local.write(0, b"written")?;
//! a.post_send(&SendWr::rdma_write(1, &[local.sge(0..7).unwrap()], target.remote().at(0, 7).unwrap()).signaled())?;
//! let mut poller = cq.poller()?;
//! while poller.poll_batch(|b| assert!(b.completion().result().is_ok()))?.is_none() {}
//! let mut got = [0; 7];
//! target.read(0, &mut got)?;
//! assert_eq!(&got, b"written");
//! # drop(b);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists which work requests each QP
//! type and state takes, and its [extended QP](crate::guide::extended_qp) page the rules of
//! posting in batches ([`Qp::post_batch`](crate::qp::Qp::post_batch)).
//!
//! A [`SendWr`] is built for a QP type `T`: `send` for RC, UC and RAW_PACKET, `send_to` (with a
//! [`UdDest`]: address handle, QP number, Q_Key) for UD, RDMA write for RC and UC, RDMA read and
//! atomics for RC only; anything else does not compile. It is posted with [`Qp::post_send`],
//! which exists only in [`Rts`]; receives are posted with [`Qp::post_recv`] from [`Init`] on,
//! and only on a QP with its own receive queue ([`Srq::post_recv`] for the others). A send's
//! scatter/gather list is an [`SgeList`]: a fixed-size array (`&[Sge; N]`) is checked at
//! compile time against the send SGE cap in the QP's type (`SGE`, set with
//! [`QpBuilder::send_sge_cap`](crate::QpBuilder::send_sge_cap)); a slice is checked against
//! the QP's actual cap before the call, as a typed error, and so is the inline size. An
//! atomic's target is an [`AtomicTarget`], aligned by construction.
//!
//! Posting is the data path: the work request is built on the stack and handed to the
//! provider's `post_send`/`post_recv` function pointer, as verbs.h's inline functions do.

/// Posting on an extended QP: `ibv_wr_start` … `ibv_wr_complete` as a scoped batch.
mod batch;
/// Posting: ibv_post_send, ibv_post_recv and ibv_post_srq_recv, each where its rules allow.
mod post;
/// Which QP types, states and receive sides take which work requests: the man pages' rules as
/// traits.
mod rules;
/// A send work request: its opcode, data, destination and flags, built to fit its QP type.
mod send_wr;

pub use batch::*;
pub use post::*;
pub use rules::*;
pub use send_wr::*;

use crate::cq::Threading;
use crate::error::{Error, ErrorKind, Result, Verb};
use crate::ffi::{ctx_op_call, sys};
use crate::mr::access::{No, RemoteReadAccess, RemoteWriteAccess};
pub use crate::mr::sge::{
    LocalWriteList, OneSgeIsNotAList, SgeList, TypedSgeCap, WithinSgeCap, MAX_TYPED_SGE,
};
use crate::mr::{AtomicResult, AtomicTarget, RemoteAddr, Sge, Untyped};
use crate::qp::state::{ErrorState, Init, QpState, Rtr, Rts};
use crate::qp::{FixedDest, OwnRq, Qp, QpType, Rc, RecvSide, Uc, Ud};
use crate::sealed::{Sealed, SealedFor};
use crate::srq::Srq;
use std::marker::PhantomData;

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty list is handed to the provider as a valid pointer with `num_sge` 0, not the
    /// dangling pointer of an empty slice.
    #[test]
    fn an_empty_list_points_at_a_real_sge() {
        let caps = crate::qp::QpCap {
            max_send_sge: 1,
            ..Default::default()
        };
        let none: &[Sge<'_, No>] = &[];
        let mut raw = zeroed_send_wr();
        let mut inline = sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        // An RC request: `fill` does not read the QP.
        SendWr::<Rc>::send(1, none)
            .fill(std::ptr::null_mut(), &caps, &mut raw, &mut inline)
            .unwrap();
        assert_eq!(raw.num_sge, 0);
        assert_eq!(raw.sg_list, &mut inline as *mut sys::ibv_sge);

        let mut seen = (0, std::ptr::null_mut());
        let mut probe = |wr: *mut sys::ibv_recv_wr, _bad| {
            // SAFETY: `post_recv_raw` hands a valid request.
            let wr = unsafe { &*wr };
            seen = (wr.num_sge, wr.sg_list);
            // SAFETY: the pointer must be readable even for no SGE.
            let _ = unsafe { wr.sg_list.read() };
            0
        };
        post_recv_raw(Verb::PostRecv, 1, 7, (none, false), &mut probe).unwrap();
        assert_eq!(seen.0, 0);
        assert!(
            seen.1 != none.as_ptr() as *mut sys::ibv_sge,
            "not the empty slice's dangling pointer"
        );
    }
}
