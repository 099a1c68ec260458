//! Slot-mode queues: a QP's receive side and send mode, and the slot posts.

use super::*;
use crate::object::parent::Held;

/// How a QP's send queue completes: [`PlainSends`] (its send CQ is a plain CQ, and it takes
/// `post_send`) or [`SlotSends`] (its send CQ is a [`SlotCq`], and every send is a signaled
/// slot send).
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::slots::{SlotRq, SlotSends, PlainSends};
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
/// let plain_cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// let sends_slots: Qp<'_, Rc, SlotRq<SlotSends>> = Qp::<Rc>::slot_builder(&pd, &slot_cq, &slot_cq).build()?;
/// let sends_plain: Qp<'_, Rc, SlotRq<PlainSends>> = Qp::<Rc>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait SendMode: Sealed + 'static {}
/// The send queue takes plain work requests ([`Qp::post_send`]) and completes on a plain CQ.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let qp: Qp<'_, Rc, SlotRq<typed_verbs::slots::PlainSends>> = Qp::<Rc>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum PlainSends {}
/// The send queue takes slot sends only ([`Qp::post_send_slot`], [`Qp::post_write_slot`]),
/// each signaled, and completes on a [`SlotCq`].
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?;
/// let qp: Qp<'_, Rc, SlotRq<typed_verbs::slots::SlotSends>> = Qp::<Rc>::slot_builder(&pd, &slot_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum SlotSends {}
impl Sealed for PlainSends {}
impl Sealed for SlotSends {}
impl SendMode for PlainSends {}
impl SendMode for SlotSends {}

/// The receive side of a QP in slot mode: its own receive queue takes slots only
/// ([`Qp::post_recv_slot`]) and completes on a [`SlotCq`]; `X` is its send mode.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let qp: Qp<'_, Ud, SlotRq> = Qp::<Ud>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotRq<X: SendMode = PlainSends>(PhantomData<X>);
/// The receive side of a QP whose receives come from a [`SlotSrq`]; `X` is its send mode.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let srq = Srq::builder(&pd).max_wr(16).slots().build()?;
/// let qp: Qp<'_, Rc, UsesSlotSrq> = Qp::<Rc>::slot_builder_with_srq(&pd, &plain_cq, &slot_cq, &srq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct UsesSlotSrq<X: SendMode = PlainSends>(PhantomData<X>);

impl<X: SendMode> Sealed for SlotRq<X> {}
impl<X: SendMode> Sealed for UsesSlotSrq<X> {}
impl<X: SendMode> RecvSide for SlotRq<X> {
    const RECV_SGE: usize = 1;
}
impl<X: SendMode> RecvSide for UsesSlotSrq<X> {
    const RECV_SGE: usize = 0;
}
impl<X: SendMode> OwnsRecvQueue for SlotRq<X> {
    // A slot is one SGE: the type's cap stays 1.
    type WithRecvSge<const N: usize> = SlotRq<X>;
}

impl PlainSendQueue for SlotRq<PlainSends> {}
impl PlainSendQueue for UsesSlotSrq<PlainSends> {}

/// The receive sides whose QP sends slots: those with [`SlotSends`].
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
/// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
/// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
/// a.post_send_slot(slots.pop().unwrap(), 8)?; // a's receive side is SlotRq<SlotSends>: SlotSendQueue
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "this QP's send CQ is a plain CQ, so a slot could not come back from it: build the QP with a slot CQ as its send CQ to send slots",
    label = "slot sends need a slot send CQ",
    note = "`Qp::slot_builder(&pd, &slot_cq, &slot_cq)` makes both CQs slot CQs"
)]
pub trait SlotSendQueue: RecvSide + Sealed {}
impl SlotSendQueue for SlotRq<SlotSends> {}
impl SlotSendQueue for UsesSlotSrq<SlotSends> {}

/// A QP's send CQ in slot mode: a plain CQ ([`AnyCq`], with [`PlainSends`]) or a [`SlotCq`]
/// (with [`SlotSends`]).
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?;
/// let legacy = Cq::builder(&ctx).cqe(8).build()?; // any CQ is a SendCq
/// let qp = Qp::<Rc>::slot_builder(&pd, &legacy, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait SendCq: Sealed + crate::object::parent::ParentObject {
    /// The QP's send mode with this CQ.
    type Sends: SendMode;
    /// The CQ's threading.
    type Threading: Threading;
    #[doc(hidden)]
    fn send_cq_raw(&self) -> *mut sys::ibv_cq;
}
impl<Q: AnyCq> SendCq for Q {
    type Sends = PlainSends;
    type Threading = Q::Threading;
    fn send_cq_raw(&self) -> *mut sys::ibv_cq {
        self.as_raw_cq()
    }
}
impl<F: WcFlags, T: Threading, C> SendCq for SlotCq<'_, F, T, C> {
    type Sends = SlotSends;
    type Threading = T;
    fn send_cq_raw(&self) -> *mut sys::ibv_cq {
        self.raw_cq()
    }
}

type SlotJoined<SC, RT> = <<SC as SendCq>::Threading as JoinThreading<RT>>::Out;

impl<'a, T: QpType> Qp<'a, T> {
    /// Starts building a QP of type `T` in `pd` whose own receive queue takes slots
    /// ([`SlotRq`]): its receives complete on the slot CQ `recv_cq`. `send_cq` is a plain CQ
    /// (the QP then takes plain sends) or a [`SlotCq`] (the QP then sends slots only,
    /// [`SlotSends`]); it may be `recv_cq` itself.
    ///
    /// Each parent is `&parent`, or `&Arc<parent>` for a QP that keeps it alive
    /// ([`crate::object::parent`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(32).slots().build()?;
    /// let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slot_builder<'p: 'a, 'r: 'a, SC, F: WcFlags, RT: Threading, RC: 'a>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = SlotCq<'r, F, RT, RC>>,
    ) -> QpBuilder<'a, T, SlotRq<SC::Sends>, SlotJoined<SC, RT>>
    where
        SC: SendCq + 'a,
        SC::Threading: JoinThreading<RT>,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        slot_qp_builder(pd, send_cq, recv_cq, ptr::null_mut(), Keep::NONE)
    }

    /// Starts building a QP of type `T` (RC or UD) whose receives come from the slot SRQ `srq`
    /// and complete on the slot CQ `recv_cq`; `send_cq` as for
    /// [`slot_builder`](Self::slot_builder).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(32).slots().build()?;
    /// let srq = Srq::builder(&pd).max_wr(64).slots().build()?;
    /// let qp = Qp::<Ud>::slot_builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slot_builder_with_srq<'p: 'a, 'r: 'a, 's: 'a, SC, F: WcFlags, RT: Threading, RC, SrqC>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = SlotCq<'r, F, RT, RC>>,
        srq: impl Parent<'a, Target = SlotSrq<'s, SrqC>>,
    ) -> QpBuilder<'a, T, UsesSlotSrq<SC::Sends>, SlotJoined<SC, RT>>
    where
        T: SrqCapable,
        SC: SendCq + 'a,
        SC::Threading: JoinThreading<RT>,
        RC: 'a,
        SrqC: 'a,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        let srq = srq.into_held();
        let raw_srq = srq.get().srq.as_raw();
        slot_qp_builder(pd, send_cq, recv_cq, raw_srq, srq.into_keep())
    }
}

/// The builder of a slot QP in `pd` that sends on `send_cq` and whose receives complete on the
/// slot CQ `recv_cq`: from the SRQ `srq` (kept alive by `srq_keep`), or, with a null `srq`,
/// from its own receive queue. It starts with one send of one SGE, and one receive of one SGE
/// on its own queue (none with an SRQ), without inline data.
fn slot_qp_builder<
    'a,
    T: QpType,
    R: RecvSide,
    S: Threading,
    SC: SendCq,
    F: WcFlags,
    RT: Threading,
    RC,
>(
    pd: Held<'a, Pd<'_>>,
    send_cq: Held<'a, SC>,
    recv_cq: Held<'a, SlotCq<'_, F, RT, RC>>,
    srq: *mut sys::ibv_srq,
    srq_keep: Keep,
) -> QpBuilder<'a, T, R, S> {
    let own_rq = u32::from(srq.is_null());
    let cap = QpCap {
        max_send_wr: 1,
        max_recv_wr: own_rq,
        max_send_sge: 1,
        max_recv_sge: own_rq,
        max_inline_data: 0,
    };
    QpBuilder::from_parts(
        pd.get().as_raw(),
        send_cq.get().send_cq_raw(),
        recv_cq.get().raw_cq(),
        srq,
        cap,
        [
            pd.into_keep(),
            send_cq.into_keep(),
            recv_cq.into_keep(),
            srq_keep,
        ],
    )
}

impl<'a, T: QpType, X: SendMode, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, SlotRq<X>, S, C, St, SGE>
{
    /// `ibv_post_recv` of `slot`: the slot moves into the receive queue and comes back with the
    /// receive's completion on the QP's slot CQ. From INIT on. If the provider refuses it, the
    /// error gives it back.
    ///
    /// # Errors
    /// A [`SlotPostError`] with the provider's errno from `ibv_post_recv` (`ENOMEM` when the
    /// receive queue is full) and the slot back when the provider names the request as `bad_wr`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
    /// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
    /// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
    /// b.post_recv_slot(slots.pop().unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv_slot<'r>(&self, slot: Slot<'r>) -> Result<(), SlotPostError<'r>>
    where
        St: SlotRecvReady,
    {
        let qp = self.as_raw();
        post_slot_recv(slot, Verb::PostRecv, |wr, bad| {
            // SAFETY: a live QP past RESET with its own receive queue; `wr` and the slot's SGE
            // (in the slot's box, which the post moves into the queue, never frees) live across
            // the call.
            unsafe { ctx_op_call!((*qp).context, post_recv, qp, wr, bad) }
        })
    }
}

impl<'a, T: QpType, R: SlotSendQueue, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// A signaled send of the work request `opcode` with the slot's first `len` bytes.
    #[inline(always)]
    fn post_send_slot_op<'r>(
        &self,
        slot: Slot<'r>,
        len: usize,
        opcode: sys::ibv_wr_opcode::Type,
        remote: Option<RemoteAddr<Untyped>>,
    ) -> Result<(), SlotPostError<'r>> {
        if len > slot.len() {
            let max = slot.len() as u64;
            return Err(SlotPostError {
                slot: Some(slot),
                error: Error::range(Verb::PostSend, "len", len as u64, 0, max),
            });
        }
        let qp = self.as_raw();
        let mut sge = slot.sge(len as u32);
        // SAFETY: plain C data; all-zero is a valid (empty) work request.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.sg_list = &mut sge;
        // A zero-length message has no SGE (some devices read a 0 length as 2 GiB); the
        // pointer still names a real one.
        wr.num_sge = (len != 0) as i32;
        wr.opcode = opcode;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        if let Some(r) = remote {
            wr.wr.rdma = sys::rdma_t {
                remote_addr: r.addr(),
                rkey: r.rkey(),
            };
        }
        post_slot(
            slot,
            Verb::PostSend,
            &mut wr,
            |wr| &mut wr.wr_id,
            |wr, bad| {
                // SAFETY: a live QP in RTS (the callers' bound); `wr` and its SGE live across
                // the call.
                unsafe { ctx_op_call!((*qp).context, post_send, qp, wr, bad) }
            },
        )
    }

    /// `ibv_post_send` of a signaled `IBV_WR_SEND` of the slot's first `len` bytes: the slot
    /// moves into the send queue (the device reads it until the send completes) and comes back,
    /// writable again, with its completion on the QP's slot send CQ. `len` above the slot's
    /// length is refused before the call (`OutOfRange`), with the slot back.
    ///
    /// # Errors
    /// A [`SlotPostError`]: `OutOfRange` naming `len` (over the slot's length) with the slot back,
    /// before the call; or the provider's errno from `ibv_post_send` (`ENOMEM` when the send queue
    /// is full), with the slot back when the provider names the request as `bad_wr`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
    /// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
    /// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
    /// b.post_recv_slot(slots.pop().unwrap())?;
    /// let mut msg = slots.pop().unwrap();
    /// msg[..2].copy_from_slice(b"hi");
    /// a.post_send_slot(msg, 2)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_send_slot<'r>(&self, slot: Slot<'r>, len: usize) -> Result<(), SlotPostError<'r>>
    where
        T: FixedDest,
        St: SendReady,
    {
        self.post_send_slot_op(slot, len, sys::ibv_wr_opcode::IBV_WR_SEND, None)
    }

    /// `ibv_post_send` of a signaled `IBV_WR_RDMA_WRITE` of the slot's first `len` bytes to
    /// `remote`, the slot given back as for [`post_send_slot`](Self::post_send_slot).
    ///
    /// # Errors
    /// As [`post_send_slot`](Self::post_send_slot); `len` must also fit `remote`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?);
    /// let target = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?; // on b's side
    /// let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?;
    /// let mut data = slots.pop().unwrap();
    /// data[..5].copy_from_slice(b"hello");
    /// a.post_write_slot(data, 5, target.remote().at(0, 5).unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_write_slot<'r, A: RemoteWriteAccess>(
        &self,
        slot: Slot<'r>,
        len: usize,
        remote: RemoteAddr<A>,
    ) -> Result<(), SlotPostError<'r>>
    where
        T: RdmaWriteCapable,
        St: SendReady,
    {
        self.post_send_slot_op(
            slot,
            len,
            sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
            Some(remote.erase()),
        )
    }
}
