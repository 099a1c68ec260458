//! Work requests (ibv_post_send(3), ibv_post_recv(3), ibv_post_srq_recv(3)), legal per QP type
//! and state by construction.
//!
//! A [`SendWr`] is built for a QP type `T`: `send` for RC, UC and RAW_PACKET, `send_to` (with a
//! [`UdDest`]: address handle, QP number, Q_Key) for UD, RDMA write for RC and UC, RDMA read and
//! atomics for RC only; anything else does not compile. It is posted with [`Qp::post_send`], which exists only in [`Rts`];
//! receives are posted with [`Qp::post_recv`] from [`Init`] on, and only on a QP with its own
//! receive queue ([`Srq::post_recv`] for the others). A send's scatter/gather list is an
//! [`SgeList`]: a fixed-size array (`&[Sge; N]`) is checked at compile time against the send SGE
//! cap in the QP's type (`SGE`, set with [`QpBuilder::send_sge_cap`](crate::QpBuilder::send_sge_cap)); a slice is checked against
//! the QP's actual cap before the call, as a typed error, and so is the inline size. An atomic's
//! target is an [`AtomicTarget`], aligned by construction.
//!
//! Posting is the data path: the work request is built on the stack and handed to the
//! provider's `post_send`/`post_recv` function pointer, as verbs.h's inline functions do.
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

/// The receive sides whose QP takes plain sends ([`Qp::post_send`]): every one but those with
/// [`SlotSends`](crate::slots::SlotSends), whose send CQ is a
/// [`SlotCq`](crate::slots::SlotCq). Implemented here for the plain receive sides, and in
/// [`slots`](crate::slots) for its own.
///
/// ```compile_fail,E0277
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let qp = Qp::<Rc>::slot_builder(&pd, &slot_cq, &slot_cq).build()?;
/// # let e = qp.endpoint(1, 0)?;
/// let qp = qp.connect(&e, &e, AccessFlags::LOCAL_WRITE)?;
/// qp.post_send(&SendWr::send_inline(1, b"x"))?; // a slot send queue takes slot sends only
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a QP whose receive side is `{Self}` is not known to take plain sends (with `SlotSends` its send CQ is a slot CQ, and every send carries a slot): post with `post_send_slot(slot, len)` or `post_write_slot(slot, len, remote)`, or, in generic code over the receive side `R`, add the bound `R: typed_verbs::slots::PlainSendQueue`",
    label = "a slot CQ takes no work request with a wr_id of the program's",
    note = "for plain sends, build the QP with a plain send CQ: `Qp::slot_builder(&pd, &plain_cq, &slot_cq)`"
)]
pub trait PlainSendQueue: RecvSide + Sealed {}
impl<const N: usize> PlainSendQueue for OwnRq<N> {}
impl PlainSendQueue for crate::qp::UsesSrq {}

/// The old name of [`FixedDest`](crate::qp::FixedDest) (it clashed with [`cm::Connected`](crate::cm::Connected), a
/// CM id's state): every `FixedDest` type is one. Bound by `FixedDest` instead.
#[deprecated(
    since = "0.1.0",
    note = "renamed `FixedDest` (typed_verbs::qp::FixedDest)"
)]
#[doc(hidden)]
pub trait Connected: FixedDest {}
#[allow(deprecated)]
impl<T: FixedDest> Connected for T {}

/// The QP types that can carry immediate data.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let sge = [mr.sge(0..8).unwrap()];
/// let wr = SendWr::<Rc>::send_with_imm(1, &sge, 0xcafe);
/// # let _ = wr;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot send immediate data: send it on an RC, UC or UD QP, or carry the value in the payload",
    label = "no immediate data on this QP type"
)]
pub trait ImmCapable: QpType + Sealed {}
impl ImmCapable for Rc {}
impl ImmCapable for Uc {}
impl ImmCapable for Ud {}

/// The QP types that can do RDMA writes.
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
/// let wr = SendWr::<Ud>::rdma_write(1, &[mr.sge(0..8).unwrap()], mr.remote().at(0, 8).unwrap()); // not on UD
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot do RDMA writes: only RC and UC QPs can; use one of those, or send the data (`SendWr::send_to` on UD)",
    label = "no RDMA write on this QP type"
)]
pub trait RdmaWriteCapable: QpType + Sealed {}
impl RdmaWriteCapable for Rc {}
impl RdmaWriteCapable for Uc {}

/// The QP types that can do RDMA reads and atomics.
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ | Access::LOCAL_WRITE)?;
/// let wr = SendWr::<Uc>::rdma_read(1, &[mr.sge(0..8).unwrap()], mr.remote().at(0, 8).unwrap()); // RC only
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot do RDMA reads or atomics: only RC QPs can; make the QP a `Qp<Rc>`",
    label = "reads and atomics need a reliable connection"
)]
pub trait ReliableOnly: QpType + Sealed {}
impl ReliableOnly for Rc {}

/// The states in which receives may be posted (INIT on; in ERR they complete flushed).
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?; // RESET
/// qp.post_recv(1, &[mr.sge(0..64).unwrap()])?; // receives are posted from INIT on
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "receives can be posted from INIT on, and this QP is in `{Self}`: call `to_init` first; in generic code over the state `St`, add the bound `St: typed_verbs::wr::RecvReady`",
    label = "the QP is still in RESET"
)]
pub trait RecvReady: QpState + Sealed {}
impl RecvReady for Init {}
impl RecvReady for Rtr {}
impl RecvReady for Rts {}
impl RecvReady for ErrorState {}

/// The state in which sends may be posted: RTS.
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?
///     .to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
/// qp.post_send(&SendWr::send(1, &[mr.sge(0..8).unwrap()]))?; // only in RTS
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "work requests are sent from RTS, and this QP is in `{Self}`: bring it up with `to_init`, `to_rtr` and `to_rts` (the steps it has not made), or, on an rdma_cm connection, with `ConnectRequest::accept` or `CmId::connect`; in generic code over the state `St`, add the bound `St: typed_verbs::wr::SendReady`",
    label = "the QP is not ready to send"
)]
pub trait SendReady: QpState + Sealed {}
impl SendReady for Rts {}

/// `OwnRq<N>: HasOwnRq<L>` when the list `L` fits its receive SGE cap `N`: only a QP with its
/// own receive queue takes `post_recv` (a list that does not fit is reported by [`SgeList`]).
///
/// Sealed for every `L`: `post_recv` trusts `recv_list`'s claim that the list fits.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
/// qp.post_recv(1, &[mr.sge(0..64).unwrap()])?; // OwnRq<1>: HasOwnRq<&[Sge; 1]>
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "this QP takes no plain receives: post them to its SRQ (`srq.post_recv(..)`), or, for a QP in slot mode, post slots (`qp.post_recv_slot(slot)`)",
    label = "no plain receive queue of its own"
)]
pub trait HasOwnRq<L>: RecvSide + SealedFor<L> {
    /// The list's elements, and whether its length was proven within the cap.
    ///
    /// ```
    /// use typed_verbs::{wr::HasOwnRq, OwnRq, Sge};
    /// fn count<L: Copy>(list: L) -> usize where OwnRq<2>: HasOwnRq<L> {
    ///     <OwnRq<2> as HasOwnRq<L>>::recv_list(list).0.len()
    /// }
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let mr = typed_verbs::Mr::new(&pd, typed_verbs::PageBuf::new(64)?, typed_verbs::Access::LOCAL_WRITE)?;
    /// let s: Sge = mr.sge(0..8).unwrap();
    /// assert_eq!(count(&[s, s]), 2);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn recv_list<'x>(list: L) -> (&'x [Sge<'x, No>], bool)
    where
        L: 'x;
}
impl<const N: usize, L: SgeList<N>> SealedFor<L> for OwnRq<N> {}
impl<const N: usize, L: SgeList<N>> HasOwnRq<L> for OwnRq<N> {
    #[inline(always)]
    fn recv_list<'x>(list: L) -> (&'x [Sge<'x, No>], bool)
    where
        L: 'x,
    {
        (Sge::erase_list(list.into_slice()), L::FITS)
    }
}

#[derive(Clone, Copy)]
enum Op {
    Send,
    SendImm(u32),
    Write(RemoteAddr<Untyped>),
    WriteImm(RemoteAddr<Untyped>, u32),
    Read(RemoteAddr<Untyped>),
    CompareSwap(RemoteAddr<Untyped>, u64, u64),
    FetchAdd(RemoteAddr<Untyped>, u64),
}

#[derive(Clone, Copy)]
enum Data<'s> {
    /// `fits`: the length was proven within the type's cap (no check when posted).
    Sgl {
        list: &'s [Sge<'s, No>],
        fits: bool,
    },
    Inline(&'s [u8]),
}

impl<'s> Data<'s> {
    #[inline(always)]
    fn sgl<const CAP: usize, L: SgeList<CAP> + 's>(list: L) -> Self {
        Data::Sgl {
            list: Sge::erase_list(list.into_slice()),
            fits: L::FITS,
        }
    }
}

/// A UD send's destination: an address handle, the remote QP number and its Q_Key.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::AddressHandle;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
/// let dest = UdDest::new(&ah, 0x1234, 0x11); // the remote QP number and its Q_Key
/// let wr = SendWr::<Ud>::send_to_inline(1, b"hello", dest);
/// # let _ = wr;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct UdDest<'s> {
    ah: *mut sys::ibv_ah,
    remote_qpn: u32,
    remote_qkey: u32,
    _m: PhantomData<&'s ()>,
}

impl<'s> UdDest<'s> {
    /// The QP `remote_qpn`, which accepts `remote_qkey`, reached through `ah`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let dest = UdDest::new(&ah, qp.qp_num(), 0x11);
    /// # let _ = dest;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(
        ah: &'s crate::qp::ah::AddressHandle<'_>,
        remote_qpn: u32,
        remote_qkey: u32,
    ) -> Self {
        UdDest {
            ah: ah.as_raw(),
            remote_qpn,
            remote_qkey,
            _m: PhantomData,
        }
    }
}

/// Where an atomic's old value lands: a `&AtomicResult`, 8 bytes by type
/// ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)). Sealed.
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// use typed_verbs::wr::AtomicResultOf;
/// fn lands_in<'s>(r: impl AtomicResultOf<'s>) {}
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(64)?, Access::LOCAL_WRITE)?;
/// lands_in(&mr.atomic_result(0).unwrap());
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "an atomic's old value lands in exactly 8 bytes, and `{Self}` is not an `&AtomicResult`: make one with `mr.atomic_result(offset)`",
    label = "not 8 bytes by type"
)]
pub trait AtomicResultOf<'s>: Sealed {
    #[doc(hidden)]
    fn into_result(self) -> &'s AtomicResult<'s>;
}
impl Sealed for &AtomicResult<'_> {}
impl<'s> AtomicResultOf<'s> for &'s AtomicResult<'s> {
    #[inline(always)]
    fn into_result(self) -> &'s AtomicResult<'s> {
        self
    }
}

/// A send work request for a QP of type `T` whose type promises `SGE` send SGEs, borrowing the
/// buffers it names until it is posted.
///
/// `SGE` is inferred from the QP it is posted on; a request built on its own for a QP with
/// another cap names it (`SendWr::<Rc, 4>::send(..)`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
/// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
/// let local = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// local.write(0, b"abcd")?;
/// let sge = [local.sge(0..4).unwrap()];
/// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
/// a.post_send(&SendWr::send(2, &sge).signaled())?;                                   // send
/// a.post_send(&SendWr::send_with_imm(3, &sge, 7).signaled())?;                      // needs a receive
/// b.post_recv(4, &[rx.sge(64..128).unwrap()])?;
/// a.post_send(&SendWr::rdma_write(5, &sge, rx.remote().at(256, 4).unwrap()).signaled())?;
/// a.post_send(&SendWr::rdma_read(6, &[local.sge(8..12).unwrap()], rx.remote().at(256, 4).unwrap()).signaled())?;
/// a.post_send(&SendWr::fetch_add(7, &local.atomic_result(16).unwrap(), rx.remote().atomic_at(512).unwrap(), 1).signaled())?;
/// a.post_send(&SendWr::send_inline(8, b"tiny").signaled())?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct SendWr<'s, T: QpType, const SGE: usize = 1> {
    wr_id: u64,
    op: Op,
    data: Data<'s>,
    flags: u32,
    ud: Option<UdDest<'s>>,
    _t: PhantomData<T>,
}

const SIGNALED: u32 = 2;
const SOLICITED: u32 = 4;
const INLINE: u32 = 8;

impl<'s, T: QpType, const SGE: usize> SendWr<'s, T, SGE> {
    fn new(wr_id: u64, op: Op, data: Data<'s>) -> Self {
        SendWr {
            wr_id,
            op,
            data,
            flags: 0,
            ud: None,
            _t: PhantomData,
        }
    }

    /// `IBV_WR_SEND` of the bytes `sgl` names.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let sge = [rx.sge(1024..1088).unwrap()]; // any local SGE
    /// a.post_send(&SendWr::send(2, &sge))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send(wr_id: u64, sgl: impl SgeList<SGE> + 's) -> Self
    where
        T: FixedDest,
    {
        Self::new(wr_id, Op::Send, Data::sgl(sgl))
    }

    /// `IBV_WR_SEND` of `data` copied into the work request (`IBV_SEND_INLINE`): the buffer need
    /// not be registered and may be reused as soon as the post returns. At most the QP's
    /// `max_inline_data` bytes (checked when posted).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let mut msg = *b"short";
    /// a.post_send(&SendWr::send_inline(2, &msg))?;
    /// msg[0] = b'S'; // already copied: free to reuse
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_inline(wr_id: u64, data: &'s [u8]) -> Self
    where
        T: FixedDest,
    {
        Self::new(wr_id, Op::Send, Data::Inline(data)).with_flag(INLINE)
    }

    /// `IBV_WR_SEND_WITH_IMM`: a send carrying `imm` (host byte order; sent in network order).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let sge = [rx.sge(1024..1032).unwrap()];
    /// a.post_send(&SendWr::send_with_imm(2, &sge, 0x1234))?; // b's completion carries 0x1234
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_with_imm(wr_id: u64, sgl: impl SgeList<SGE> + 's, imm: u32) -> Self
    where
        T: FixedDest + ImmCapable,
    {
        Self::new(wr_id, Op::SendImm(imm), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_WRITE` of `sgl` to `remote`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let sge = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_write(1, &sge, rx.remote().at(2048, 8).unwrap()).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_write<A: RemoteWriteAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        remote: RemoteAddr<A>,
    ) -> Self
    where
        T: RdmaWriteCapable,
    {
        Self::new(wr_id, Op::Write(remote.erase()), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_WRITE_WITH_IMM`: the write, and `imm` in a receive completion at the peer.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?; // consumed by the immediate data
    /// let sge = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_write_with_imm(2, &sge, rx.remote().at(2048, 8).unwrap(), 7))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_write_with_imm<A: RemoteWriteAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        remote: RemoteAddr<A>,
        imm: u32,
    ) -> Self
    where
        T: RdmaWriteCapable,
    {
        Self::new(wr_id, Op::WriteImm(remote.erase(), imm), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_READ` of `remote` into `sgl`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let into = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_read(1, &into, rx.remote().at(2048, 8).unwrap()).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_read<A: RemoteReadAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + LocalWriteList + 's,
        remote: RemoteAddr<A>,
    ) -> Self
    where
        T: ReliableOnly,
    {
        Self::new(wr_id, Op::Read(remote.erase()), Data::sgl(sgl))
    }

    /// `IBV_WR_ATOMIC_CMP_AND_SWP` on the 8 bytes at `remote` (aligned by construction); the old
    /// value lands in `result`, 8 bytes by type ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let old = rx.atomic_result(0).unwrap(); // the old value lands here: 8 bytes by type
    /// a.post_send(&SendWr::compare_swap(1, &old, rx.remote().atomic_at(512).unwrap(), 0, 1).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn compare_swap(
        wr_id: u64,
        result: impl AtomicResultOf<'s>,
        remote: AtomicTarget,
        compare: u64,
        swap: u64,
    ) -> Self
    where
        T: ReliableOnly,
        &'s [Sge<'s>; 1]: SgeList<SGE>,
    {
        let result = result.into_result();
        Self::new(
            wr_id,
            Op::CompareSwap(remote.addr().erase(), compare, swap),
            Data::sgl(result.as_list()),
        )
    }

    /// `IBV_WR_ATOMIC_FETCH_AND_ADD` on the 8 bytes at `remote` (aligned by construction); the
    /// old value lands in `result`, 8 bytes by type ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let old = rx.atomic_result(0).unwrap();
    /// a.post_send(&SendWr::fetch_add(1, &old, rx.remote().atomic_at(512).unwrap(), 1).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    ///
    /// The result is 8 bytes by type, not any SGE:
    ///
    /// ```compile_fail,E0277
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
    /// let old = [rx.sge(0..16).unwrap()];
    /// let wr = SendWr::<Rc>::fetch_add(1, &old, rx.remote().atomic_at(512).unwrap(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn fetch_add(
        wr_id: u64,
        result: impl AtomicResultOf<'s>,
        remote: AtomicTarget,
        add: u64,
    ) -> Self
    where
        T: ReliableOnly,
        &'s [Sge<'s>; 1]: SgeList<SGE>,
    {
        let result = result.into_result();
        Self::new(
            wr_id,
            Op::FetchAdd(remote.addr().erase(), add),
            Data::sgl(result.as_list()),
        )
    }

    /// Asks for a completion of this request (`IBV_SEND_SIGNALED`); a QP created with
    /// `sq_sig_all` completes every request anyway.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// let wr = SendWr::<Rc>::send_inline(1, b"x").signaled(); // completes on the send CQ
    /// # let _ = wr;
    /// ```
    pub fn signaled(self) -> Self {
        self.with_flag(SIGNALED)
    }

    /// Sets `IBV_SEND_SOLICITED`: the peer's CQ raises an event even if armed for solicited
    /// completions only.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// let wr = SendWr::<Rc>::send_inline(1, b"wake up").solicited().signaled();
    /// # let _ = wr;
    /// ```
    pub fn solicited(self) -> Self {
        self.with_flag(SOLICITED)
    }

    fn with_flag(mut self, f: u32) -> Self {
        self.flags |= f;
        self
    }
}

impl<'s, const SGE: usize> SendWr<'s, Ud, SGE> {
    /// `IBV_WR_SEND` of `sgl` to `dest`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let sge = [mr.sge(0..64).unwrap()];
    /// qp.post_send(&SendWr::send_to(1, &sge, UdDest::new(&ah, qp.qp_num(), 0x11)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to(wr_id: u64, sgl: impl SgeList<SGE> + 's, dest: UdDest<'s>) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::Send, Data::sgl(sgl))
        }
    }

    /// `IBV_WR_SEND_WITH_IMM` of `sgl` to `dest`, carrying `imm`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let sge = [mr.sge(0..64).unwrap()];
    /// qp.post_send(&SendWr::send_to_with_imm(1, &sge, UdDest::new(&ah, qp.qp_num(), 0x11), 5))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to_with_imm(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        dest: UdDest<'s>,
        imm: u32,
    ) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::SendImm(imm), Data::sgl(sgl))
        }
    }

    /// `IBV_WR_SEND` of `data` inline to `dest`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// qp.post_send(&SendWr::send_to_inline(1, b"hello", UdDest::new(&ah, qp.qp_num(), 0x11)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to_inline(wr_id: u64, data: &'s [u8], dest: UdDest<'s>) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::Send, Data::Inline(data))
        }
        .with_flag(INLINE)
    }
}

/// Where a post failed: the index of the first work request not posted, and why. The ones
/// before it were posted.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
/// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
/// let sge = [rx.sge(0..8).unwrap()]; // any local SGE
/// let wrs = [SendWr::send(1, &sge), SendWr::send(2, &sge)];
/// match a.post_send_chain(&wrs) {
///     Ok(()) => {}
///     Err(typed_verbs::PostError { index, error }) => eprintln!("requests 0..{index} posted; then {error}"),
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// The index of the first request that was not posted.
    pub index: usize,
    /// Why.
    pub error: Error,
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work request {}: {}", self.index, self.error)
    }
}

impl std::error::Error for PostError {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error alone, for `?` in a function returning [`Error`] (the index is dropped: match on
/// the `PostError` to know which requests were posted).
impl From<PostError> for Error {
    fn from(e: PostError) -> Error {
        e.error
    }
}

impl<'s, T: QpType, const SGE: usize> SendWr<'s, T, SGE> {
    /// Checks what the QP's actual caps decide and fills `wr` (and `inline` for inline data,
    /// or as the valid, empty SGE array an empty list points at).
    ///
    /// `qp` is the live QP the request is posted on: a UD request's address handle must be of
    /// its PD (and so of its context), checked here before the provider sees it.
    #[inline(always)]
    fn fill(
        &self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        use sys::ibv_wr_opcode::*;
        wr.wr_id = self.wr_id;
        wr.send_flags = self.flags;
        match self.data {
            Data::Sgl { list: sgl, fits } => {
                // A fixed-size list was proven within the type's cap, which the actual cap
                // meets (checked when the QP was created).
                if !fits && sgl.len() > caps.max_send_sge as usize {
                    return Err(Error::range(
                        Verb::PostSend,
                        "num_sge",
                        sgl.len() as u64,
                        0,
                        caps.max_send_sge.into(),
                    ));
                }
                // An empty list (legal: a zero-length message) still hands the provider a
                // pointer to a real SGE, not the dangling one of an empty slice.
                wr.sg_list = if sgl.is_empty() {
                    inline
                } else {
                    sgl.as_ptr() as *mut sys::ibv_sge
                };
                wr.num_sge = sgl.len() as i32;
            }
            Data::Inline(bytes) => {
                if bytes.len() > caps.max_inline_data as usize {
                    return Err(Error::range(
                        Verb::PostSend,
                        "inline length",
                        bytes.len() as u64,
                        0,
                        caps.max_inline_data.into(),
                    ));
                }
                *inline = sys::ibv_sge {
                    addr: bytes.as_ptr() as u64,
                    length: bytes.len() as u32,
                    lkey: 0,
                };
                wr.sg_list = inline;
                wr.num_sge = 1;
            }
        }
        // The target's alignment was proven when its AtomicTarget was made.
        let atomic = |wr: &mut sys::ibv_send_wr,
                      remote: RemoteAddr<Untyped>,
                      compare_add: u64,
                      swap: u64| {
            wr.wr.atomic = sys::atomic_t {
                remote_addr: remote.addr(),
                compare_add,
                swap,
                rkey: remote.rkey(),
            };
        };
        match self.op {
            Op::Send => wr.opcode = IBV_WR_SEND,
            Op::SendImm(imm) => {
                wr.opcode = IBV_WR_SEND_WITH_IMM;
                wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
            }
            Op::Write(r) => {
                wr.opcode = IBV_WR_RDMA_WRITE;
                wr.wr.rdma = sys::rdma_t {
                    remote_addr: r.addr(),
                    rkey: r.rkey(),
                };
            }
            Op::WriteImm(r, imm) => {
                wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
                wr.wr.rdma = sys::rdma_t {
                    remote_addr: r.addr(),
                    rkey: r.rkey(),
                };
                wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
            }
            Op::Read(r) => {
                wr.opcode = IBV_WR_RDMA_READ;
                wr.wr.rdma = sys::rdma_t {
                    remote_addr: r.addr(),
                    rkey: r.rkey(),
                };
            }
            Op::CompareSwap(r, compare, swap) => {
                wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
                atomic(wr, r, compare, swap);
            }
            Op::FetchAdd(r, add) => {
                wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
                atomic(wr, r, add, 0);
            }
        }
        // Only UD requests carry a destination (`send_to*`); for the other types this is
        // decided at compile time and costs nothing.
        if let (sys::ibv_qp_type::IBV_QPT_UD, Some(d)) = (T::RAW, self.ud) {
            // ibv_post_send(3): `ah` is the "Address handle (AH) for the remote node address";
            // the provider reads it as its own type, and the AH must be of the QP's PD (rxe:
            // "PDs don't match for AH and QP"). A PD is of one context, so one comparison
            // covers both; the error says which.
            // SAFETY: the AH is live (borrowed by `d`) and so is the QP; their `pd` and
            // `context` are fixed at creation.
            let (ah_pd, ah_ctx, qp_pd, qp_ctx) =
                unsafe { ((*d.ah).pd, (*d.ah).context, (*qp).pd, (*qp).context) };
            if ah_pd != qp_pd {
                return Err(Error {
                    verb: Verb::PostSend,
                    kind: if ah_ctx != qp_ctx {
                        ErrorKind::WrongContext("ah")
                    } else {
                        ErrorKind::WrongPd("ah")
                    },
                });
            }
            wr.wr.ud = sys::ud_t {
                ah: d.ah,
                remote_qpn: d.remote_qpn,
                remote_qkey: d.remote_qkey,
            };
        }
        Ok(())
    }
}

fn zeroed_send_wr() -> sys::ibv_send_wr {
    // SAFETY: plain C data; all-zero is a valid (empty) work request.
    unsafe { std::mem::zeroed() }
}

/// A work request that [`Qp::post_send`] takes on a QP of type `T` whose type promises `SGE`
/// send SGEs: `&SendWr<'_, T, SGE>` (and `&&SendWr<'_, T, SGE>`, so that `&wr` works where `wr`
/// is already a reference), and nothing else. A bound rather than that type in the
/// signature, so that a request built for another QP type is an error that says so (the
/// request's type is known before the bound is looked at, and its QP type is still inferred
/// from the QP when it is built in the call).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// # let pd = Pd::new(&ctx)?;
/// # let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
/// # let (cq, mut poller) = cq.split();
/// # let (a, b) = (Qp::<Rc>::builder(&pd, cq, cq).build()?, Qp::<Rc>::builder(&pd, cq, cq).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// # let tx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # b.post_recv(1, &[rx.sge(0..4096).unwrap()])?;
/// let sges = [tx.sge(0..5).unwrap()];
/// let wrs = [SendWr::send(1, &sges)];
/// for wr in &wrs {
///     a.post_send(&wr)?; // `wr` is a `&SendWr`: `&&SendWr` works too
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a work request for this QP, a `{T}` QP with a send SGE cap of {SGE} in its type: build the request for this QP type and SGE cap (`SendWr::<{T}, {SGE}>::..`)",
    label = "built for another QP type or SGE cap",
    note = "a `SendWr`'s QP type decides which operations it may carry (RDMA reads and atomics on RC, a destination on UD)"
)]
pub trait WorkRequestFor<T: QpType, const SGE: usize>:
    Copy + crate::sealed::SealedWorkRequest<T>
{
    /// Checks the request against the QP's actual caps and fills the C work request.
    ///
    /// # Safety
    /// `qp` is a live QP (a UD request's address handle is checked against its PD).
    #[doc(hidden)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()>;
}
impl<T: QpType, const SGE: usize> crate::sealed::SealedWorkRequest<T> for &SendWr<'_, T, SGE> {}
impl<T: QpType, const SGE: usize> WorkRequestFor<T, SGE> for &SendWr<'_, T, SGE> {
    #[inline(always)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        SendWr::fill(self, qp, caps, wr, inline)
    }
}
// `&wr` where `wr` is already a `&SendWr` (`for wr in &wrs { qp.post_send(&wr) }`), which
// compiled when `post_send` took a `&SendWr` and the compiler dereferenced the argument to it.
impl<T: QpType, const SGE: usize> crate::sealed::SealedWorkRequest<T> for &&SendWr<'_, T, SGE> {}
impl<T: QpType, const SGE: usize> WorkRequestFor<T, SGE> for &&SendWr<'_, T, SGE> {
    #[inline(always)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        SendWr::fill(self, qp, caps, wr, inline)
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_post_send` of one work request. Only a QP in RTS sends.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` (a slice longer than the QP's actual
    ///   `max_send_sge`) or `inline length` (over its `max_inline_data`), before the call.
    /// - [`ErrorKind::WrongContext`]`("ah")` / [`ErrorKind::WrongPd`]`("ah")` for a UD send's address
    ///   handle of another context or PD, before the call.
    /// - The provider's errno from `ibv_post_send` ([`ErrorKind::Os`]): `ENOMEM` when the send
    ///   queue is full, `EINVAL` for a request it refuses (a message over the port's `max_msg_sz`).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// a.post_send(&SendWr::send_inline(2, b"hi").signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn post_send<W>(&self, wr: W) -> Result<()>
    where
        W: WorkRequestFor<T, SGE>,
        St: SendReady,
        R: PlainSendQueue,
    {
        let mut raw = zeroed_send_wr();
        let mut inline = sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        // SAFETY: `self.as_raw()` is this live QP.
        unsafe { wr.fill(self.as_raw(), &self.caps(), &mut raw, &mut inline) }?;
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: a live QP in RTS; `raw` and what it points to (the caller's SGEs, borrowed by
        // `wr`, and `inline`) live across the call, which copies what it needs.
        match unsafe {
            ctx_op_call!(
                (*self.as_raw()).context,
                post_send,
                self.as_raw(),
                &mut raw,
                &mut bad
            )
        } {
            0 => Ok(()),
            e => Err(Error::os(Verb::PostSend, e.abs())),
        }
    }

    /// `ibv_post_send` of `N` chained work requests in one call. Only a QP in RTS sends, as
    /// for [`post_send`](Self::post_send).
    ///
    /// On failure the [`PostError`] names the first request not posted, and every request
    /// before it was posted, whoever found the fault: a request that fails a check made here
    /// (caps, inline size, the address handle's PD) ends the chain there, and the ones before
    /// it are posted in one call, as the provider posts the ones before its `bad_wr`.
    ///
    /// An empty chain (`N = 0`) posts nothing and returns `Ok(())` without calling the
    /// provider, whose `wr` must point at a first request ("a linked list of work requests",
    /// ibv_post_send(3)) that an empty array does not have.
    ///
    /// # Errors
    /// A [`PostError`] whose `index` is the first request not posted (the ones before it were) and
    /// whose `error` is as for [`post_send`](Self::post_send).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let s = [rx.sge(0..8).unwrap()];
    /// b.post_recv(1, &[rx.sge(64..128).unwrap()])?;
    /// b.post_recv(2, &[rx.sge(128..192).unwrap()])?;
    /// a.post_send_chain(&[SendWr::send(3, &s), SendWr::send(4, &s).signaled()])?; // one call
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn post_send_chain<const N: usize>(
        &self,
        wrs: &[SendWr<'_, T, SGE>; N],
    ) -> Result<(), PostError>
    where
        St: SendReady,
        R: PlainSendQueue,
    {
        let mut raw: [sys::ibv_send_wr; N] = std::array::from_fn(|_| zeroed_send_wr());
        let mut inline = [sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        }; N];
        let caps = self.caps();
        let mut checked = Ok(());
        let mut n = 0;
        for (wr, (raw, inline)) in wrs.iter().zip(raw.iter_mut().zip(inline.iter_mut())) {
            if let Err(error) = wr.fill(self.as_raw(), &caps, raw, inline) {
                checked = Err(PostError { index: n, error });
                break;
            }
            n += 1;
        }
        if n > 0 {
            self.post_send_list(&mut raw[..n])?;
        }
        checked
    }

    /// Links the filled requests `raw` (at least one) and posts them in one call.
    fn post_send_list(&self, raw: &mut [sys::ibv_send_wr]) -> Result<(), PostError> {
        debug_assert!(!raw.is_empty());
        let base = raw.as_mut_ptr();
        for i in 1..raw.len() {
            // SAFETY: both indices are in the slice, which does not move until the call returns.
            unsafe { (*base.add(i - 1)).next = base.add(i) };
        }
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: a live QP in RTS (the callers' bound); `base` points at the first of at
        // least one request, linked in order, the last one's `next` NULL (zeroed); the chain
        // and what it points to live across the call.
        match unsafe {
            ctx_op_call!(
                (*self.as_raw()).context,
                post_send,
                self.as_raw(),
                base,
                &mut bad
            )
        } {
            0 => Ok(()),
            e => {
                let index = if bad.is_null() {
                    0
                } else {
                    // SAFETY: the provider points `bad` into the chain, at the first request
                    // it did not post.
                    let at = unsafe { bad.offset_from(base) };
                    at as usize
                };
                Err(PostError {
                    index,
                    error: Error::os(Verb::PostSend, e.abs()),
                })
            }
        }
    }
}

#[inline(always)]
fn post_recv_raw(
    verb: Verb,
    max_sge: u32,
    wr_id: u64,
    (sgl, fits): (&[Sge<'_, No>], bool),
    post: impl FnOnce(*mut sys::ibv_recv_wr, *mut *mut sys::ibv_recv_wr) -> i32,
) -> Result<()> {
    // A fixed-size list was proven within the type's cap, which the actual cap meets.
    if !fits && sgl.len() > max_sge as usize {
        return Err(Error::range(
            verb,
            "num_sge",
            sgl.len() as u64,
            0,
            max_sge.into(),
        ));
    }
    // An empty list (legal: a receive for a zero-length message) still hands the provider a
    // pointer to a real SGE, not the dangling one of an empty slice.
    let mut empty = sys::ibv_sge {
        addr: 0,
        length: 0,
        lkey: 0,
    };
    let mut wr = sys::ibv_recv_wr {
        wr_id,
        next: std::ptr::null_mut(),
        sg_list: if sgl.is_empty() {
            &mut empty
        } else {
            sgl.as_ptr() as *mut sys::ibv_sge
        },
        num_sge: sgl.len() as i32,
    };
    let mut bad = std::ptr::null_mut();
    match post(&mut wr, &mut bad) {
        0 => Ok(()),
        e => Err(Error::os(verb, e.abs())),
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_post_recv`: a receive into the buffers `sgl` names (an [`SgeList`] for the QP's
    /// receive SGE cap). From INIT on, and only on a QP with its own receive queue.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` for a slice longer than the QP's actual
    ///   `max_recv_sge`, before the call.
    /// - The provider's errno from `ibv_post_recv` ([`ErrorKind::Os`]): `ENOMEM` when the receive
    ///   queue is full.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..4096).unwrap()])?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv<L>(&self, wr_id: u64, sgl: L) -> Result<()>
    where
        R: HasOwnRq<L>,
        St: RecvReady,
        L: LocalWriteList,
    {
        let qp = self.as_raw();
        post_recv_raw(
            Verb::PostRecv,
            self.caps().max_recv_sge,
            wr_id,
            R::recv_list(sgl),
            |wr, bad| {
                // SAFETY: a live QP past RESET with its own receive queue; `wr` and the SGEs live
                // across the call.
                unsafe { ctx_op_call!((*qp).context, post_recv, qp, wr, bad) }
            },
        )
    }
}

impl<C, const SGE: usize> Srq<'_, C, SGE> {
    /// `ibv_post_srq_recv`: a receive into the buffers `sgl` names (an [`SgeList`] for the
    /// SRQ's SGE cap), for any QP using this SRQ.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` for a slice longer than the SRQ's actual
    ///   `max_sge`, before the call.
    /// - The provider's errno from `ibv_post_srq_recv` ([`ErrorKind::Os`]): `ENOMEM` when the SRQ
    ///   is full.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
    /// let srq = Srq::builder(&pd).max_wr(16).build()?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// srq.post_recv(1, &[mr.sge(0..1024).unwrap()])?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv<L: SgeList<SGE> + LocalWriteList>(&self, wr_id: u64, sgl: L) -> Result<()> {
        let srq = self.as_raw();
        post_recv_raw(
            Verb::PostSrqRecv,
            self.attr().max_sge,
            wr_id,
            (Sge::erase_list(sgl.into_slice()), L::FITS),
            |wr, bad| {
                // SAFETY: a live SRQ; `wr` and the SGEs live across the call.
                unsafe { sys::ibv_post_srq_recv(srq, wr, bad) }
            },
        )
    }
}

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
