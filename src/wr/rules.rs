//! Which QP types, states and receive sides take which work requests: the man pages' rules as
//! traits.

use super::*;

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
impl<T: ImmCapable, O: crate::qp::ex::OpsFor<T>> ImmCapable for crate::qp::Ex<T, O> {}
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
impl<T: RdmaWriteCapable, O: crate::qp::ex::OpsFor<T>> RdmaWriteCapable for crate::qp::Ex<T, O> {}
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
impl<T: ReliableOnly, O: crate::qp::ex::OpsFor<T>> ReliableOnly for crate::qp::Ex<T, O> {}
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
