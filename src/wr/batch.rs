//! Posting on an extended QP (ibv_wr_post(3)): `ibv_wr_start` … `ibv_wr_complete` as a scoped
//! batch, each work request an op builder and then its data, in the order the man page makes
//! them.
//!
//! The rules of ibv_wr_post(3) and where each is kept:
//!
//! - "Post only between `ibv_wr_start()` and `ibv_wr_complete()`/`ibv_wr_abort()`": the
//!   builders exist only on the [`PostBatch`] that [`Qp::post_batch`] lends its closure.
//! - One critical region per QP, and no `ibv_post_send` inside it (rxe holds its send-queue
//!   spinlock from `wr_start`: a post from the same thread would spin for ever): the batch
//!   borrows the QP `&mut`, so nothing else can post, modify or destroy it until the batch ends.
//! - The region always ends: the closure's `Err`, a panic that unwinds through it, and a work
//!   request dropped or forgotten before its data (which calls nothing, see below) all end in
//!   `ibv_wr_abort` before `post_batch` returns; `Ok` ends in `ibv_wr_complete`. The user never
//!   holds the batch by value, so it cannot be leaked.
//! - "`qpx->wr_id` and `qpx->wr_flags` … before the builder", one builder, then its setters:
//!   an op method ([`PostBatch::send`], ...) only records the request; its data method
//!   ([`Wr::sge`], [`Wr::sges`], [`Wr::inline`], [`Wr::result`]) checks it and then makes every
//!   call in order (wr_id, wr_flags, the builder, the UD address, the data setter). A setter
//!   therefore never follows anything but its own builder (on rxe, a setter before any builder
//!   rewrites the previous, already posted WQE), and each request gets exactly one data setter.
//! - Each op's builder needs its `IBV_QP_EX_WITH_*` bit (the provider leaves the others NULL):
//!   the op methods have the bound ([`HasSend`](crate::qp::ex::HasSend), ...).
//! - UD needs `ibv_wr_set_ud_addr` ("mandatory"), and no other type may call it (NULL on mlx5):
//!   only a UD batch has `send_to`, which takes the [`UdDest`].
//! - Inline data is "valid only for SEND and RDMA_WRITE" (with or without immediate): only those
//!   requests have [`Wr::inline`]; RDMA read takes writable SGEs and atomics their 8-byte
//!   [`AtomicResult`].
//! - Inline data within `max_inline_data`, SGEs within `max_send_sge` and the AH of the QP's
//!   PD: checked before any call for that request, a typed error ([`Verb::WrPost`]) that leaves
//!   the batch open with the requests before it.
//! - The send queue's room: every provider of the extended QP read checks it at each builder
//!   and fails the whole batch at `ibv_wr_complete` (rxe `ENOSPC`, mlx5 `ENOMEM`, the software
//!   device `ENOSPC`), counting the requests still queued from before, which only the provider
//!   knows; a count here could not see those, and would cost every request.
//! - `IBV_SEND_INLINE` is set by [`Wr::inline`] and only there: rxe sends inline data only with
//!   it, and with an SGE it sends the SGE itself (address, length, lkey) as the data.
//! - "`ibv_wr_complete()` … the entire posting will be aborted" on failure: the provider's errno
//!   ([`Verb::WrComplete`]); nothing of the batch was posted.
//!
//! Provider bugs avoided: `ibv_wr_set_inline_data_list` is never called (rxe before rdma-core 64
//! can copy past its WQE); `ibv_wr_set_sge_list` is called with SGEs of unequal lengths only
//! where the provider sums them right (rxe before rdma-core 64 sends `num_sge` times the first
//! length; such a list is refused there with [`ErrorKind::ProviderBug`]); a one-SGE list goes
//! through `ibv_wr_set_sge`.

use super::*;
use crate::ffi::qp_ex_call;
use crate::mr::access::Bit;
use crate::qp::ex::{
    HasCmpAndSwp, HasFetchAndAdd, HasRdmaRead, HasRdmaWrite, HasRdmaWriteWithImm, HasSend,
    HasSendWithImm, OpsFor,
};
use crate::qp::Ex;

const FENCE: u32 = 1;

impl<'a, T: QpType, O: OpsFor<T>, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, Ex<T, O>, R, S, C, St, SGE>
{
    /// One batch of work requests on this extended QP: `ibv_wr_start`, the requests `f` builds
    /// on the [`PostBatch`], then `ibv_wr_complete` if `f` returns `Ok` ("No work is executed
    /// to the queue until ibv_wr_complete() returns success") and `ibv_wr_abort` otherwise —
    /// also when `f` panics. Only a QP in RTS sends.
    ///
    /// The batch borrows the QP mutably: no `post_send`, `post_recv`, transition or destroy of
    /// it can happen inside (the provider holds the send queue's lock for the batch; a post of
    /// the same QP inside it would deadlock on rxe).
    ///
    /// # Errors
    /// - What `f` returns (the batch is aborted: nothing of it is posted).
    /// - [`Verb::WrComplete`] with the provider's errno: the whole batch was refused and nothing
    ///   posted (`ENOSPC` on rxe and `ENOMEM` on mlx5 when the send queue has no room for it;
    ///   `EINVAL` on the software device for a request it finds malformed).
    ///
    /// ```
    /// use typed_verbs::prelude::*;
    /// use typed_verbs::send_ops;
    /// let ctx = Context::open("sw0")?;
    /// let pd = Pd::new(&ctx)?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).max_inline_data(64)
    ///     .send_ops::<send_ops!(SEND | RDMA_WRITE)>().build();
    /// let (a, b) = (build()?, build()?);
    /// let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// let tx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// tx.write(0, b"written")?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// a.post_batch(|batch| {
    ///     batch.rdma_write(2, rx.remote().at(1024, 7).unwrap()).sge(tx.sge(0..7).unwrap())?;
    ///     batch.send(3).signaled().inline(b"hello")?; // one doorbell for both
    ///     Ok(())
    /// })?;
    /// let mut poller = cq.poller()?;
    /// let mut done = 0;
    /// while done < 2 {
    ///     poller.poll_batch(|c| assert!(c.completion().result().is_ok()))?.map(|()| done += 1);
    /// }
    /// let mut got = [0; 7];
    /// rx.read(1024, &mut got)?;
    /// assert_eq!(&got, b"written");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_batch<X>(
        &mut self,
        f: impl FnOnce(&mut PostBatch<'_, T, O, SGE>) -> Result<X>,
    ) -> Result<X>
    where
        St: SendReady,
        R: PlainSendQueue,
    {
        // `struct verbs_qp` is a union of `ibv_qp` and `ibv_qp_ex`: the extended QP is at the
        // QP's address (checked at creation).
        let qpx: *mut sys::ibv_qp_ex = self.as_raw().cast();
        let mut batch = PostBatch {
            qp: self.as_raw(),
            _m: PhantomData,
            _brand: PhantomData,
        };
        /// Ends the batch with `ibv_wr_abort` unless disarmed: on `Err` and on unwinding. Ours,
        /// on this frame: the closure cannot reach it to forget it.
        struct Abort(*mut sys::ibv_qp_ex);
        impl Drop for Abort {
            fn drop(&mut self) {
                // SAFETY: the batch of this live extended QP is open (wr_start below, and
                // neither completed nor aborted: the guard is disarmed before wr_complete).
                unsafe { qp_ex_call!(self.0, wr_abort) }
            }
        }
        // SAFETY: a live extended QP in RTS, whose wr_start was checked at creation; the `&mut`
        // borrow keeps every other post, transition and destroy of it out until the batch ends.
        unsafe { qp_ex_call!(qpx, wr_start) };
        let abort = Abort(qpx);
        // `batch` is the closure's only way to the QP; its brand keeps it in this closure (it
        // cannot be swapped with another QP's open batch); the batch begun here is ended through
        // `qpx`, its own.
        let out = f(&mut batch)?; // `abort` aborts on this path and on unwinding
        std::mem::forget(abort);
        // SAFETY: the batch begun above, still open.
        // ibv_wr_post(3): "ibv_wr_complete() ... returns 0 on success, or the value of errno on
        // failure" (a positive errno, as rxe's and mlx5's are), kept as it is.
        match unsafe { qp_ex_call!(qpx, wr_complete) } {
            0 => Ok(out),
            e => Err(Error::os(Verb::WrComplete, e)),
        }
    }
}

/// An open batch of an extended QP (`ibv_wr_start` was called): its op methods start a work
/// request ([`Wr`]), whose data method posts it into the batch. Lent by
/// [`Qp::post_batch`] to its closure, which is the only place it exists.
///
/// `T` is the QP's transport, `O` its send ops, `SGE` its send SGE cap.
///
/// ```
/// # use typed_verbs::prelude::*;
/// use typed_verbs::{send_ops, wr::PostBatch};
/// // A helper over any RC QP that has RDMA write: the bound names the op.
/// fn write_all<O: typed_verbs::qp::ex::HasRdmaWrite>(
///     batch: &mut PostBatch<'_, Rc, O>,
///     parts: &[(Sge<'_>, RemoteAddr<typed_verbs::access!(REMOTE_WRITE)>)],
/// ) -> Result<()> {
///     for (i, (sge, at)) in parts.iter().enumerate() {
///         batch.rdma_write(i as u64, *at).sge(*sge)?;
///     }
///     Ok(())
/// }
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_WRITE)>().build();
/// # let (a, b) = (build()?, build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
/// let parts = [(mr.sge(0..8).unwrap(), mr.remote().at(1024, 8).unwrap())];
/// a.post_batch(|batch| write_all(batch, &parts))?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct PostBatch<'b, T, O, const SGE: usize = 1> {
    /// The extended QP, a live QP made by this crate's builder, whose `struct ibv_qp_ex` is at
    /// the same address.
    qp: *mut sys::ibv_qp,
    /// Not `Send` or `Sync`: the provider's lock is held by the thread that opened the batch.
    _m: PhantomData<(T, O, *mut ())>,
    /// Invariant in `'b`, which each `post_batch` call chooses anew (the closure takes
    /// `&mut PostBatch<'_, ..>` for every lifetime): two batches open at once (of two QPs, one
    /// nested in the other's closure) have two types, so neither can be swapped into the other's
    /// place and outlive its own batch there.
    _brand: PhantomData<fn(&'b ()) -> &'b ()>,
}

/// The bound of [`PostBatch`]'s `Send` and `Sync` impls, which nothing implements: a batch
/// stays on the thread that opened it (the provider's send-queue lock is that thread's, taken
/// by `ibv_wr_start`), and the error says so.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::send_ops;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(16).send_ops::<send_ops!(RDMA_WRITE)>().build()?;
/// # let (e, f) = (qp.endpoint(1, 0)?, qp.endpoint(1, 0)?);
/// # let mut qp = qp.connect(&e, &f, AccessFlags::REMOTE_WRITE)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
/// // What a batch posts may come from another thread; the batch itself stays here.
/// let bytes = std::thread::spawn(|| *b"computed").join().unwrap();
/// qp.post_batch(|batch| batch.rdma_write(1, mr.remote().at(0, 8).unwrap()).inline(&bytes))?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `PostBatch` cannot leave the thread that opened it: `ibv_wr_start` took the QP's send-queue lock on this thread, which `ibv_wr_complete` releases; build the work requests here, and send the data they carry to this thread instead",
    label = "an extended QP's batch used on another thread",
    note = "a batch lives inside the closure of `post_batch`, on the posting thread"
)]
pub trait PostBatchStaysOnItsThread: Sealed {}

// SAFETY: never applies (no type implements `PostBatchStaysOnItsThread`, which is sealed): a
// batch is neither Send nor Sync, as without these impls; they only name the reason in the error.
unsafe impl<T: PostBatchStaysOnItsThread, O, const SGE: usize> Send for PostBatch<'_, T, O, SGE> {}
// SAFETY: as above.
unsafe impl<T: PostBatchStaysOnItsThread, O, const SGE: usize> Sync for PostBatch<'_, T, O, SGE> {}

/// The QP types whose requests may carry `IBV_SEND_FENCE`: RC ("Valid only for QPs with
/// Transport Service Type IBV_QPT_RC", ibv_post_send(3)).
///
/// ```
/// fn fenced<T: typed_verbs::wr::FenceCapable>() {}
/// fenced::<typed_verbs::Rc>();
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot fence: IBV_SEND_FENCE is valid only on RC QPs (ibv_post_send(3)); drop `.fenced()`, or order the requests by their completions",
    label = "no fence on this QP type"
)]
pub trait FenceCapable: QpType + Sealed {}
impl FenceCapable for Rc {}

/// One work request of a batch, made by an op method of [`PostBatch`] and posted into the batch
/// by its data method, which consumes it. Until then nothing was called: a request dropped or
/// forgotten here leaves no trace in the send queue.
///
/// `K` is the op (`ops::PlainSend`, `ops::RdmaWrite`, ...), which decides the data methods it has.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::send_ops;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).max_inline_data(16).send_ops::<send_ops!(SEND)>().build();
/// # let (a, b) = (build()?, build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
/// a.post_batch(|batch| {
///     let wr = batch.send(7).signaled().solicited(); // flags before the data
///     wr.inline(b"ping") // builds and posts the request into the batch
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a work request is added to the batch only by its data method (`sge`, `sges`, `inline` or `result`)"]
pub struct Wr<'p, 'b, 's, T, O, const SGE: usize, K> {
    batch: &'p mut PostBatch<'b, T, O, SGE>,
    wr_id: u64,
    flags: u32,
    op: K,
    ud: Option<UdDest<'s>>,
}

/// The ops of a batch's work requests, as types: what each builder takes, and which data
/// methods its [`Wr`] has. A program meets them in a work request's type and seldom names one.
///
/// ```
/// use typed_verbs::prelude::*;
/// use typed_verbs::send_ops;
/// use typed_verbs::wr::{ops, Wr};
/// type Ops = send_ops!(SEND | RDMA_WRITE);
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(64).send_ops::<Ops>().build();
/// # let (a, b) = (build()?, build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
/// a.post_batch(|batch| {
///     let wr: Wr<'_, '_, '_, Rc, Ops, 1, ops::PlainSend> = batch.send(2); // has `sge`, `inline`
///     wr.inline(b"hello")?;
///     Ok(())
/// })?;
/// # let mut poller = cq.poller()?;
/// # while poller.poll_batch(|c| assert!(c.completion().result().is_ok()))?.is_none() {}
/// let mut got = [0; 5];
/// rx.read(0, &mut got)?;
/// assert_eq!(&got, b"hello");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// The guide's [extended QP](crate::guide::extended_qp) page lists the rules of each op.
pub mod ops {
    use super::*;

    /// An op of a batch's work request: its builder call.
    pub trait ExOp: Sealed + Copy {
        /// Calls the op's builder on `qpx` (`wr_id` and `wr_flags` already set).
        ///
        /// # Safety
        /// `qpx` is an extended QP in an open batch whose builder for this op was checked at
        /// creation.
        #[doc(hidden)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex);
    }

    /// `IBV_WR_SEND`.
    #[derive(Debug, Clone, Copy)]
    pub struct PlainSend;
    /// `IBV_WR_SEND_WITH_IMM`, with the immediate data in host order.
    #[derive(Debug, Clone, Copy)]
    pub struct SendWithImm(pub(crate) u32);
    /// `IBV_WR_RDMA_WRITE`.
    #[derive(Debug, Clone, Copy)]
    pub struct RdmaWrite(pub(crate) RemoteAddr<Untyped>);
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`.
    #[derive(Debug, Clone, Copy)]
    pub struct RdmaWriteWithImm(pub(crate) RemoteAddr<Untyped>, pub(crate) u32);
    /// `IBV_WR_RDMA_READ`.
    #[derive(Debug, Clone, Copy)]
    pub struct RdmaRead(pub(crate) RemoteAddr<Untyped>);
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`: the target, compare and swap.
    #[derive(Debug, Clone, Copy)]
    pub struct CompareSwap(
        pub(crate) RemoteAddr<Untyped>,
        pub(crate) u64,
        pub(crate) u64,
    );
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`: the target and the value to add.
    #[derive(Debug, Clone, Copy)]
    pub struct FetchAdd(pub(crate) RemoteAddr<Untyped>, pub(crate) u64);

    impl Sealed for PlainSend {}
    impl Sealed for SendWithImm {}
    impl Sealed for RdmaWrite {}
    impl Sealed for RdmaWriteWithImm {}
    impl Sealed for RdmaRead {}
    impl Sealed for CompareSwap {}
    impl Sealed for FetchAdd {}

    impl ExOp for PlainSend {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_send) }
        }
    }
    impl ExOp for SendWithImm {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_send_imm, self.0.to_be()) }
        }
    }
    impl ExOp for RdmaWrite {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_rdma_write, self.0.rkey(), self.0.addr()) }
        }
    }
    impl ExOp for RdmaWriteWithImm {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            let (r, imm) = (self.0, self.1.to_be());
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_rdma_write_imm, r.rkey(), r.addr(), imm) }
        }
    }
    impl ExOp for RdmaRead {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_rdma_read, self.0.rkey(), self.0.addr()) }
        }
    }
    impl ExOp for CompareSwap {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            let (r, c, s) = (self.0, self.1, self.2);
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_atomic_cmp_swp, r.rkey(), r.addr(), c, s) }
        }
    }
    impl ExOp for FetchAdd {
        #[inline(always)]
        unsafe fn build(self, qpx: *mut sys::ibv_qp_ex) {
            let (r, add) = (self.0, self.1);
            // SAFETY: the trait's contract: an open batch, this op's builder checked at creation.
            unsafe { qp_ex_call!(qpx, wr_atomic_fetch_add, r.rkey(), r.addr(), add) }
        }
    }

    /// The ops whose data is bytes to send (an SGE, an SGE list or inline data): send and RDMA
    /// write, with or without immediate ("inline … valid only for SEND and RDMA_WRITE").
    #[diagnostic::on_unimplemented(
        message = "`{Self}` does not send bytes of its own: inline data is only for sends and RDMA writes (ibv_wr_post(3)); an RDMA read lands in `sge`/`sges`, an atomic in `result`",
        label = "no inline data for this op"
    )]
    pub trait Sends: ExOp {}
    impl Sends for PlainSend {}
    impl Sends for SendWithImm {}
    impl Sends for RdmaWrite {}
    impl Sends for RdmaWriteWithImm {}

    /// The ops whose data is given by SGEs of regions whose `LOCAL_WRITE` is `W`: sends and
    /// RDMA writes read from any SGE; an RDMA read lands in its SGEs, which need `LOCAL_WRITE`
    /// (`W` = [`Yes`](crate::mr::access::Yes)).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot take these SGEs: an RDMA read lands in its SGEs, which need a region with LOCAL_WRITE (`Sge<'_, Yes>`), and an atomic's old value lands in `result(&mr.atomic_result(offset)?)`",
        label = "not SGEs this op can use"
    )]
    pub trait TakesSges<W>: ExOp {}
    impl<W: Bit> TakesSges<W> for PlainSend {}
    impl<W: Bit> TakesSges<W> for SendWithImm {}
    impl<W: Bit> TakesSges<W> for RdmaWrite {}
    impl<W: Bit> TakesSges<W> for RdmaWriteWithImm {}
    impl<W: WritableByDevice> TakesSges<W> for RdmaRead {}

    /// Whether the regions of SGEs whose `LOCAL_WRITE` is `Self` may be written by the device:
    /// only [`Yes`](crate::mr::access::Yes). The bound of an RDMA read's SGEs, so that a read
    /// into SGEs without `LOCAL_WRITE` is an error naming the right it lacks.
    ///
    /// ```
    /// fn lands<K: typed_verbs::wr::ops::TakesSges<typed_verbs::access::Yes>>() {}
    /// lands::<typed_verbs::wr::ops::RdmaRead>(); // into writable memory: fine
    /// ```
    #[diagnostic::on_unimplemented(
        message = "an RDMA read lands in its SGEs, and these are of a region without LOCAL_WRITE (`Sge<'_, No>`): register the destination with `Access::LOCAL_WRITE`",
        label = "the device would write here"
    )]
    pub trait WritableByDevice: Bit {}
    impl WritableByDevice for crate::mr::access::Yes {}

    /// The atomics: one 8-byte [`AtomicResult`].
    pub trait Atomic: ExOp {}
    impl Atomic for CompareSwap {}
    impl Atomic for FetchAdd {}

    /// The ops that may carry `IBV_SEND_SOLICITED` (ibv_post_send(3): "Valid only for Send and
    /// RDMA Write with immediate").
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be solicited: IBV_SEND_SOLICITED is valid only for sends and RDMA writes with immediate (ibv_post_send(3)), which make a receive completion",
        label = "no solicited event for this op"
    )]
    pub trait Solicitable: ExOp {}
    impl Solicitable for PlainSend {}
    impl Solicitable for SendWithImm {}
    impl Solicitable for RdmaWriteWithImm {}
}

use ops::ExOp;

/// One SGE given to a data method: an [`Sge`] or `&Sge`. By reference, its fields are read by
/// the setter call itself, after the builder, as C reads `sge->lkey` there; by value they are
/// copied when the method is called. Sealed.
///
/// ```
/// # use typed_verbs::{Access, Mr};
/// use typed_verbs::wr::OneSge;
/// fn takes<W: typed_verbs::access::Bit>(_: impl OneSge<W>) {}
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
/// let sge = mr.sge(0..8).unwrap();
/// takes(&sge);
/// takes(sge);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait OneSge<W: Bit>: crate::sealed::SealedOneSge {
    #[doc(hidden)]
    fn as_sge(&self) -> &Sge<'_, W>;
}
impl<W: Bit> crate::sealed::SealedOneSge for Sge<'_, W> {}
impl<W: Bit> crate::sealed::SealedOneSge for &Sge<'_, W> {}
impl<W: Bit> OneSge<W> for Sge<'_, W> {
    #[inline(always)]
    fn as_sge(&self) -> &Sge<'_, W> {
        self
    }
}
impl<W: Bit> OneSge<W> for &Sge<'_, W> {
    #[inline(always)]
    fn as_sge(&self) -> &Sge<'_, W> {
        self
    }
}

impl<'b, T: QpType, O, const SGE: usize> PostBatch<'b, T, O, SGE> {
    #[inline(always)]
    fn wr<'p, 's, K: ExOp>(&'p mut self, wr_id: u64, op: K) -> Wr<'p, 'b, 's, T, O, SGE, K> {
        Wr {
            batch: self,
            wr_id,
            flags: 0,
            op,
            ud: None,
        }
    }
}

impl<'b, T: QpType, O, const SGE: usize> PostBatch<'b, T, O, SGE> {
    /// `ibv_wr_send`: an `IBV_WR_SEND` of the data its [`Wr`] is given.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).send_ops::<send_ops!(SEND)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// b.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    /// a.post_batch(|batch| batch.send(2).sge(mr.sge(64..72).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn send(&mut self, wr_id: u64) -> Wr<'_, 'b, 'static, T, O, SGE, ops::PlainSend>
    where
        T: FixedDest,
        O: HasSend,
    {
        self.wr(wr_id, ops::PlainSend)
    }

    /// `ibv_wr_send_imm`: an `IBV_WR_SEND_WITH_IMM` carrying `imm` (host order).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).max_inline_data(16).send_ops::<send_ops!(SEND_WITH_IMM)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// b.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    /// a.post_batch(|batch| batch.send_with_imm(2, 0xbeef).inline(b"x"))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn send_with_imm(
        &mut self,
        wr_id: u64,
        imm: u32,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::SendWithImm>
    where
        T: FixedDest,
        O: HasSendWithImm,
    {
        self.wr(wr_id, ops::SendWithImm(imm))
    }
}

impl<'b, T: QpType, O, const SGE: usize> PostBatch<'b, T, O, SGE> {
    /// `ibv_wr_rdma_write`: an `IBV_WR_RDMA_WRITE` of the data its [`Wr`] is given to `remote`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Uc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_WRITE)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// a.post_batch(|batch| batch.rdma_write(1, mr.remote().at(512, 8).unwrap()).signaled().sge(mr.sge(0..8).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn rdma_write<A: RemoteWriteAccess>(
        &mut self,
        wr_id: u64,
        remote: RemoteAddr<A>,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::RdmaWrite>
    where
        O: HasRdmaWrite,
    {
        self.wr(wr_id, ops::RdmaWrite(remote.erase()))
    }

    /// `ibv_wr_rdma_write_imm`: the write, and `imm` (host order) in a receive completion at
    /// the peer.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).send_ops::<send_ops!(RDMA_WRITE_WITH_IMM)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// b.post_recv(1, &[mr.sge(0..64).unwrap()])?; // the immediate data consumes it
    /// a.post_batch(|batch| batch.rdma_write_with_imm(2, mr.remote().at(512, 8).unwrap(), 9).sge(mr.sge(0..8).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn rdma_write_with_imm<A: RemoteWriteAccess>(
        &mut self,
        wr_id: u64,
        remote: RemoteAddr<A>,
        imm: u32,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::RdmaWriteWithImm>
    where
        O: HasRdmaWriteWithImm,
    {
        self.wr(wr_id, ops::RdmaWriteWithImm(remote.erase(), imm))
    }

    /// `ibv_wr_rdma_read`: an `IBV_WR_RDMA_READ` of `remote` into the SGEs its [`Wr`] is given.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_READ)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_READ)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_READ)?;
    /// a.post_batch(|batch| batch.rdma_read(1, mr.remote().at(512, 8).unwrap()).signaled().sge(mr.sge(0..8).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn rdma_read<A: RemoteReadAccess>(
        &mut self,
        wr_id: u64,
        remote: RemoteAddr<A>,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::RdmaRead>
    where
        O: HasRdmaRead,
    {
        self.wr(wr_id, ops::RdmaRead(remote.erase()))
    }

    /// `ibv_wr_atomic_cmp_swp` on the 8 bytes at `target`: `swap` is written there if they
    /// equal `compare`; the old value lands in the [`AtomicResult`] given to [`Wr::result`].
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(ATOMIC_CMP_AND_SWP)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_ATOMIC)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_ATOMIC)?;
    /// let old = mr.atomic_result(0).unwrap();
    /// a.post_batch(|batch| batch.compare_swap(1, mr.remote().atomic_at(512).unwrap(), 0, 1).result(&old))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn compare_swap(
        &mut self,
        wr_id: u64,
        target: AtomicTarget,
        compare: u64,
        swap: u64,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::CompareSwap>
    where
        O: HasCmpAndSwp,
    {
        self.wr(
            wr_id,
            ops::CompareSwap(target.addr().erase(), compare, swap),
        )
    }

    /// `ibv_wr_atomic_fetch_add` on the 8 bytes at `target`; the old value lands in the
    /// [`AtomicResult`] given to [`Wr::result`].
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(ATOMIC_FETCH_AND_ADD)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_ATOMIC)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_ATOMIC)?;
    /// let old = mr.atomic_result(0).unwrap();
    /// a.post_batch(|batch| batch.fetch_add(1, mr.remote().atomic_at(512).unwrap(), 5).signaled().result(&old))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn fetch_add(
        &mut self,
        wr_id: u64,
        target: AtomicTarget,
        add: u64,
    ) -> Wr<'_, 'b, 'static, T, O, SGE, ops::FetchAdd>
    where
        O: HasFetchAndAdd,
    {
        self.wr(wr_id, ops::FetchAdd(target.addr().erase(), add))
    }
}

impl<'b, O, const SGE: usize> PostBatch<'b, Ud, O, SGE> {
    /// `ibv_wr_send` with `ibv_wr_set_ud_addr(dest)`: a UD send, whose address is mandatory.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::{send_ops, AddressHandle};
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// let mut qp = Qp::<Ud>::builder(&pd, &cq, &cq).max_inline_data(64).send_ops::<send_ops!(SEND)>().build()?
    ///     .to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let to = UdDest::new(&ah, qp.qp_num(), 0x11);
    /// qp.post_batch(|batch| batch.send_to(1, to).inline(b"datagram"))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn send_to<'s>(
        &mut self,
        wr_id: u64,
        dest: UdDest<'s>,
    ) -> Wr<'_, 'b, 's, Ud, O, SGE, ops::PlainSend>
    where
        O: HasSend,
    {
        Wr {
            ud: Some(dest),
            ..self.wr(wr_id, ops::PlainSend)
        }
    }

    /// `ibv_wr_send_imm` with `ibv_wr_set_ud_addr(dest)`, carrying `imm` (host order).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::{send_ops, AddressHandle};
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// let mut qp = Qp::<Ud>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND_WITH_IMM)>().build()?
    ///     .to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let to = UdDest::new(&ah, qp.qp_num(), 0x11); // before the batch, which holds the QP
    /// qp.post_batch(|batch| batch.send_to_with_imm(1, to, 3).sge(mr.sge(0..8).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn send_to_with_imm<'s>(
        &mut self,
        wr_id: u64,
        dest: UdDest<'s>,
        imm: u32,
    ) -> Wr<'_, 'b, 's, Ud, O, SGE, ops::SendWithImm>
    where
        O: HasSendWithImm,
    {
        Wr {
            ud: Some(dest),
            ..self.wr(wr_id, ops::SendWithImm(imm))
        }
    }
}

impl<T: QpType, O, const SGE: usize, K: ExOp> Wr<'_, '_, '_, T, O, SGE, K> {
    /// `IBV_SEND_SIGNALED`: a completion for this request even when the QP was not created
    /// with `sq_sig_all`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_WRITE)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// a.post_batch(|batch| batch.rdma_write(1, mr.remote().at(0, 8).unwrap()).signaled().sge(mr.sge(8..16).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn signaled(mut self) -> Self {
        self.flags |= SIGNALED;
        self
    }

    /// `IBV_SEND_FENCE`: this request waits for the RDMA reads and atomics before it. "Valid
    /// only for QPs with Transport Service Type IBV_QPT_RC" (ibv_post_send(3)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_WRITE | RDMA_READ)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ)?;
    /// a.post_batch(|batch| {
    ///     batch.rdma_read(1, mr.remote().at(0, 8).unwrap()).sge(mr.sge(64..72).unwrap())?;
    ///     batch.rdma_write(2, mr.remote().at(128, 8).unwrap()).fenced().sge(mr.sge(64..72).unwrap()) // after the read
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn fenced(mut self) -> Self
    where
        T: FenceCapable,
    {
        self.flags |= FENCE;
        self
    }

    /// `IBV_SEND_SOLICITED`: the receive completion at the peer is a solicited event. Only for
    /// sends and RDMA writes with immediate.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(4).max_inline_data(16).send_ops::<send_ops!(SEND)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// b.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    /// a.post_batch(|batch| batch.send(2).solicited().inline(b"wake up"))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn solicited(mut self) -> Self
    where
        K: ops::Solicitable,
    {
        self.flags |= SOLICITED;
        self
    }

    /// Checks what the QP decides for this request's address handle (UD): of the QP's PD, and
    /// so of its context. Before any call.
    #[inline(always)]
    fn check_dest(&self) -> Result<()> {
        if let (sys::ibv_qp_type::IBV_QPT_UD, Some(d)) = (T::RAW, self.ud) {
            // SAFETY: the AH is live (borrowed by `d`) and so is the QP; their `pd` and
            // `context` are fixed at creation.
            let qp = self.batch.qp;
            let (ah_pd, ah_ctx, qp_pd, qp_ctx) =
                unsafe { ((*d.ah).pd, (*d.ah).context, (*qp).pd, (*qp).context) };
            if ah_pd != qp_pd {
                return Err(Error {
                    verb: Verb::WrPost,
                    kind: if ah_ctx != qp_ctx {
                        ErrorKind::WrongContext("ah")
                    } else {
                        ErrorKind::WrongPd("ah")
                    },
                });
            }
        }
        Ok(())
    }

    /// Makes the calls before the data setter: `wr_id`, `wr_flags` (with `extra`), the op's
    /// builder, and the UD address. The request's checks have passed.
    #[inline(always)]
    fn begin(&mut self, extra: u32) -> *mut sys::ibv_qp_ex {
        let qpx: *mut sys::ibv_qp_ex = self.batch.qp.cast();
        // SAFETY: the batch of this live extended QP is open (`post_batch`); the builder of
        // `K`'s op was checked at creation (the op method's bound on `O`), and so was the UD
        // address setter of a UD QP.
        unsafe {
            (*qpx).wr_id = self.wr_id;
            (*qpx).wr_flags = self.flags | extra;
            self.op.build(qpx);
            if let (sys::ibv_qp_type::IBV_QPT_UD, Some(d)) = (T::RAW, self.ud) {
                qp_ex_call!(qpx, wr_set_ud_addr, d.ah, d.remote_qpn, d.remote_qkey);
            }
        }
        qpx
    }

    /// The QP's actual caps and its provider's setter bugs.
    #[inline(always)]
    fn caps_and_quirks(&self) -> (&crate::qp::QpCap, &crate::backend::QpExQuirks) {
        // SAFETY: the batch's QP is live and made by this crate's builder.
        unsafe { crate::qp::caps_and_quirks_of(self.batch.qp) }
    }

    /// `ibv_wr_set_sge_list` (or `ibv_wr_set_sge` for one SGE) of `list`, after its checks.
    #[inline(always)]
    fn post_sges(mut self, list: &[Sge<'_, No>], fits: bool) -> Result<()> {
        self.check_dest()?;
        if !fits && list.len() > self.caps_and_quirks().0.max_send_sge as usize {
            let max = self.caps_and_quirks().0.max_send_sge;
            return Err(Error::range(
                Verb::WrPost,
                "num_sge",
                list.len() as u64,
                0,
                max.into(),
            ));
        }
        if list.len() > 1 && self.caps_and_quirks().1.sge_list_sums_first {
            let first = list[0].length();
            if list.iter().any(|s| s.length() != first) {
                return Err(Error {
                    verb: Verb::WrPost,
                    kind: ErrorKind::ProviderBug(
                        "rxe's ibv_wr_set_sge_list before rdma-core 64 sends num_sge times the \
                         first SGE's length; give SGEs of one length, or post this request with \
                         the legacy post_send",
                    ),
                });
            }
        }
        let qpx = self.begin(0);
        // SAFETY: the request's builder was just called in the open batch; the SGE values are
        // copied by the setter (the memory they name stays borrowed by the caller's SGEs, as for
        // `post_send`). An empty list points at a real SGE, not an empty slice's dangling one.
        unsafe {
            if let [one] = list {
                qp_ex_call!(qpx, wr_set_sge, one.lkey(), one.addr(), one.length());
            } else if list.is_empty() {
                let empty = sys::ibv_sge {
                    addr: 0,
                    length: 0,
                    lkey: 0,
                };
                qp_ex_call!(qpx, wr_set_sge_list, 0, &empty);
            } else {
                let ptr = list.as_ptr() as *const sys::ibv_sge;
                qp_ex_call!(qpx, wr_set_sge_list, list.len(), ptr);
            }
        }
        Ok(())
    }

    /// `ibv_wr_set_sge` of one SGE, its fields read for the call.
    #[inline(always)]
    fn post_sge<W: Bit>(mut self, sge: &Sge<'_, W>) -> Result<()> {
        self.check_dest()?;
        let qpx = self.begin(0);
        // The SGE is read here, after the builder, as a C program reads `sge->lkey` for this
        // call: a volatile read, so that the compiler does not read it before the builder and
        // hold its three fields across that call (two more callee-saved registers a batch).
        // SAFETY: `sge` is a live reference; reading through it is a plain read.
        let sge: sys::ibv_sge = unsafe { std::ptr::read_volatile(&sge.0) };
        // SAFETY: as in `post_sges`.
        unsafe { qp_ex_call!(qpx, wr_set_sge, sge.lkey, sge.addr, sge.length) };
        Ok(())
    }
}

impl<T: QpType, O, const SGE: usize, K: ExOp> Wr<'_, '_, '_, T, O, SGE, K> {
    /// `ibv_wr_set_sge`: the request's data is the bytes `sge` names (a send's or write's
    /// source; an RDMA read's destination, which needs `LOCAL_WRITE`).
    ///
    /// # Errors
    /// As for [`sges`](Self::sges), but `num_sge` and the provider bug, which one SGE cannot meet.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(RDMA_WRITE)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// a.post_batch(|batch| batch.rdma_write(1, mr.remote().at(0, 8).unwrap()).sge(mr.sge(8..16).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn sge<W: Bit>(self, sge: impl OneSge<W>) -> Result<()>
    where
        K: ops::TakesSges<W>,
    {
        self.post_sge(sge.as_sge())
    }

    /// `ibv_wr_set_sge_list`: the request's data is the bytes `list` names, in order (an
    /// [`SgeList`]: an array within the QP's SGE cap is checked at compile time, a slice here).
    ///
    /// # Errors
    /// [`Verb::WrPost`], before any call for this request (the batch stays open with the
    /// requests before it):
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` (a slice over the QP's actual
    ///   `max_send_sge`);
    /// - [`ErrorKind::WrongContext`]/[`ErrorKind::WrongPd`] `("ah")` for a UD address handle
    ///   of another context or PD;
    /// - [`ErrorKind::ProviderBug`] for SGEs of unequal lengths on rxe before rdma-core 64.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_sge_cap::<2>().send_ops::<send_ops!(RDMA_WRITE)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    /// let parts = [mr.sge(0..8).unwrap(), mr.sge(64..72).unwrap()];
    /// a.post_batch(|batch| batch.rdma_write(1, mr.remote().at(1024, 16).unwrap()).sges(&parts))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn sges<L: SgeList<SGE>>(self, list: L) -> Result<()>
    where
        K: ops::TakesSges<L::LocalWrite>,
    {
        self.post_sges(Sge::erase_list(list.into_slice()), L::FITS)
    }

    /// `ibv_wr_set_inline_data` with `IBV_SEND_INLINE`: `data` is copied into the request during
    /// the call (the buffer need not be registered, and may be reused at once). At most the QP's
    /// `max_inline_data` bytes.
    ///
    /// # Errors
    /// [`Verb::WrPost`], before any call for this request: [`ErrorKind::OutOfRange`] naming
    /// `inline length` (over `max_inline_data`); a UD address handle of another context or PD.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(4).max_inline_data(32).send_ops::<send_ops!(SEND)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// b.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    /// let mut msg = *b"tick 1";
    /// a.post_batch(|batch| batch.send(2).inline(&msg))?;
    /// msg[5] = b'2'; // copied already
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn inline(mut self, data: &[u8]) -> Result<()>
    where
        K: ops::Sends,
    {
        self.check_dest()?;
        let max = self.caps_and_quirks().0.max_inline_data;
        if data.len() > max as usize {
            return Err(Error::range(
                Verb::WrPost,
                "inline length",
                data.len() as u64,
                0,
                max.into(),
            ));
        }
        let qpx = self.begin(INLINE);
        // SAFETY: the request's builder was just called in the open batch, with
        // IBV_SEND_INLINE; the setter copies `data` during the call ("allows the caller to
        // immediately re-use the buffer") and does not write through the pointer.
        unsafe {
            qp_ex_call!(
                qpx,
                wr_set_inline_data,
                data.as_ptr() as *mut std::os::raw::c_void,
                data.len()
            )
        };
        Ok(())
    }
}

impl<T: QpType, O, const SGE: usize, K: ops::Atomic> Wr<'_, '_, '_, T, O, SGE, K> {
    /// `ibv_wr_set_sge` of `result`: where the atomic's old value lands, 8 bytes by type.
    ///
    /// # Errors
    /// None of its own (the batch's errors come from `ibv_wr_complete`); a `Result` as the other
    /// data methods return, for `?`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).send_ops::<send_ops!(ATOMIC_FETCH_AND_ADD)>().build();
    /// # let (a, b) = (build()?, build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// # let b = b.connect(&eb, &ea, AccessFlags::REMOTE_ATOMIC)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_ATOMIC)?;
    /// a.post_batch(|batch| batch.fetch_add(1, mr.remote().atomic_at(64).unwrap(), 1).result(&mr.atomic_result(0).unwrap()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn result(self, result: &AtomicResult<'_>) -> Result<()> {
        self.post_sge(&result.as_list()[0])
    }
}

#[cfg(all(test, feature = "software-device"))]
mod tests {
    use super::*;
    use crate::mr::access::{Access, AccessFlags};
    use crate::mr::Mr;

    /// Where the provider sums an SGE list wrong (rxe before rdma-core 64), a list of unequal
    /// lengths is refused before any call, naming the bug; one of equal lengths, and any list
    /// where the provider sums right, is posted.
    #[test]
    fn unequal_sge_lists_are_refused_where_the_provider_sums_them_wrong() {
        let ctx = crate::device::Context::open("sw0").unwrap();
        let pd = crate::pd::Pd::new(&ctx).unwrap();
        let cq = crate::cq::Cq::builder(&ctx).cqe(16).build().unwrap();
        let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
            .max_send_wr(8)
            .send_sge_cap::<2>()
            .send_ops::<crate::qp::ex::SendOpSet<true, false, false, false, false, false, false>>()
            .build()
            .unwrap();
        let me = qp.endpoint(1, 0).unwrap();
        let mut qp = qp.connect(&me, &me, AccessFlags::REMOTE_WRITE).unwrap();
        let mr = Mr::new(
            &pd,
            vec![0u8; 256],
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
        let at = mr.remote().at(128, 24).unwrap();
        let unequal = [mr.sge(0..8).unwrap(), mr.sge(8..24).unwrap()];
        let equal = [mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap()];
        // SAFETY: the QP is live and not in a batch; its meta is the builder's.
        unsafe { crate::qp::set_sge_list_quirk_for_test(qp.as_raw(), true) };
        let e = qp
            .post_batch(|b| b.rdma_write(1, at).sges(&unequal))
            .unwrap_err();
        assert_eq!(e.verb, Verb::WrPost);
        assert!(
            matches!(e.kind, ErrorKind::ProviderBug(b) if b.contains("rdma-core 64")),
            "{e}"
        );
        qp.post_batch(|b| b.rdma_write(2, at).sges(&equal)).unwrap();
        // SAFETY: as above.
        unsafe { crate::qp::set_sge_list_quirk_for_test(qp.as_raw(), false) };
        qp.post_batch(|b| b.rdma_write(3, at).signaled().sges(&unequal))
            .unwrap();
        let mut wc = [crate::cq::wc::WorkCompletion::new()];
        let mut seen = 0;
        while seen == 0 {
            seen = cq.poll(&mut wc).unwrap().len();
        }
        assert_eq!(
            (wc[0].wr_id(), wc[0].status()),
            (3, crate::cq::wc::WcStatus::SUCCESS)
        );
    }
}
