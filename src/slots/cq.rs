//! Slot CQs: extended CQs whose every completion hands a slot back.

use super::*;

/// An extended CQ whose every completion carries a slot: the receive CQ of slot-mode QPs
/// ([`SlotRq`], [`UsesSlotSrq`]) and the send CQ of QPs with [`SlotSends`]. Built with
/// `CqEx::builder(&ctx)...slots().build()`.
///
/// It is not an [`AnyCq`]: `Qp::builder` and `software::inject` do not take it,
/// so no completion with a `wr_id` the program chose can reach it.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// let ctx = Arc::new(Context::open("sw0")?);
/// let pd = Arc::new(Pd::new(&ctx)?);
/// let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(64).slots().build()?;
/// let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(16).build()?; // slot sends and receives
/// # drop(qp);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[repr(transparent)]
pub struct SlotCq<'a, F: WcFlags, T: Threading = Shared, C = ()> {
    cq: CqEx<'a, F, T, C>,
}

/// Builds a [`SlotCq`]: made by `.slots()` on an extended CQ's builder.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct SlotCqBuilder<'a, F: WcFlags, T: Threading, C> {
    inner: CqBuilder<'a, kind::Extended<F, T>, C>,
}

impl<'a, F: WcFlags, T: Threading, C> CqBuilder<'a, kind::Extended<F, T>, C> {
    /// Makes the CQ a [`SlotCq`]: one whose completions hand back slots. Set the other
    /// attributes (`cqe`, `channel`, `context`, ...) first.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(64).slots().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slots(self) -> SlotCqBuilder<'a, F, T, C> {
        SlotCqBuilder { inner: self }
    }
}

impl<'a, F: WcFlags, T: Threading, C> SlotCqBuilder<'a, F, T, C> {
    /// `ibv_create_cq_ex`, as for a plain extended CQ.
    ///
    /// # Errors
    /// As [`CqBuilder::build`](crate::CqBuilder) of an extended CQ: `OutOfRange` for `cqe` or
    /// `comp_vector`, `WrongContext`, the device's errno from `ibv_create_cq_ex`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// assert!(cq.cqe() >= 16);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<SlotCq<'a, F, T, C>>
    where
        C: crate::cq::CqContext<T>,
    {
        self.inner.build().map(|cq| SlotCq { cq })
    }
}

impl<'a, F: WcFlags, T: Threading, C> SlotCq<'a, F, T, C> {
    /// The actual number of entries.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(100).slots().build()?;
    /// assert!(cq.cqe() >= 100);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cqe(&self) -> u32 {
        self.cq.cqe()
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).context("rx").slots().build()?;
    /// assert_eq!(*cq.user_context(), "rx");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        self.cq.user_context()
    }

    /// `ibv_req_notify_cq`, as [`CqEx::req_notify`].
    ///
    /// # Errors
    /// The provider's errno from `ibv_req_notify_cq` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let channel = typed_verbs::CompChannel::new(&ctx)?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).channel(&channel).slots().build()?;
    /// cq.req_notify(false)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        self.cq.req_notify(solicited_only)
    }

    /// Opens a polling batch, as [`CqEx::poll_batch`] (through `&self`: refused while the
    /// CQ's [`SlotPoller`] lives or another thread has a batch open on it), whose positions
    /// hand back their slots.
    ///
    /// # Errors
    /// As [`CqEx::poll_batch`]: [`ErrorKind::BatchOpen`] when this thread has a batch open,
    /// [`ErrorKind::PollerTaken`] while another thread polls the CQ, the provider's errno from
    /// `ibv_start_poll`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// assert!(cq.poll_batch(|mut batch| batch.take_slot())?.is_none()); // empty
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(&self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a slot CQ (every completion carries a slot token); the batch has just
        // started, and it is the only one open on the CQ (the gate keeps others out until it
        // ends), so no other batch converts this completion's token.
        self.cq
            .poll_batch(|batch| f(unsafe { SlotBatch::enter(batch) }))
    }

    /// The CQ's one [`SlotPoller`] through a shared reference, as [`CqEx::poller`].
    ///
    /// # Errors
    /// [`ErrorKind::PollerTaken`] while another poller of this CQ lives.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// let mut poller = cq.poller()?;
    /// assert!(cq.poller().is_err());
    /// poller.poll_batch(|_| ())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn poller(&self) -> Result<SlotPoller<'_, 'a, F, T>> {
        Ok(SlotPoller {
            poller: self.cq.poller()?,
            _m: PhantomData,
        })
    }

    /// Splits the CQ into the shared half, for QP builders, and the one [`SlotPoller`], as
    /// [`CqEx::split`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// let (shared, mut poller) = cq.split();
    /// assert!(poller.poll_batch(|_| ())?.is_none());
    /// # let _ = shared;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn split(&mut self) -> (&Self, SlotPoller<'_, 'a, F, T>) {
        let (shared, poller) = self.cq.split();
        // SAFETY: `SlotCq` is `repr(transparent)` over the `CqEx`.
        let shared = unsafe { &*(shared as *const CqEx<'a, F, T, C> as *const Self) };
        (
            shared,
            SlotPoller {
                poller,
                _m: PhantomData,
            },
        )
    }

    /// The C CQ. Polling it other than through this handle takes completions whose `wr_id`s
    /// are slots owned by the queue: an `unsafe` use whose caller must not convert or drop
    /// them.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// assert!(!cq.as_raw().is_null()); // only to read: polling it raw breaks the slots' contract
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_cq_ex {
        self.cq.as_raw()
    }

    /// `ibv_destroy_cq`. Slots in completions not polled are leaked. If it fails, the error is
    /// returned and the CQ dropped (see [`CqEx::destroy`]).
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_cq` ([`ErrorKind::Os`]): `EBUSY` while a QP still uses
    /// the CQ (only a leaked one can).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_cq`; on failure the CQ comes back inside the error.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the CQ.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        self.cq.try_destroy().map_err(|e| DestroyError {
            object: SlotCq { cq: e.object },
            error: e.error,
        })
    }

    pub(super) fn raw_cq(&self) -> *mut sys::ibv_cq {
        self.cq.as_raw_cq()
    }
}

impl<F: WcFlags, T: Threading, C> std::fmt::Debug for SlotCq<'_, F, T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SlotCq").field(&self.cq.as_raw()).finish()
    }
}

/// The right to poll a [`SlotCq`] whose shared half QPs hold; made by [`SlotCq::split`].
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// let (cq, mut poller) = cq.split(); // `cq` for the QPs, `poller` for the polling thread
/// poller.poll_batch(|mut b| drop(b.take_slot()))?;
/// # let _ = cq;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotPoller<'p, 'a, F: WcFlags, T: Threading = Shared> {
    poller: Poller<'p, F, T>,
    _m: PhantomData<&'a ()>,
}

impl<'a, F: WcFlags, T: Threading> SlotPoller<'_, 'a, F, T> {
    /// Opens a batch, as [`SlotCq::poll_batch`].
    ///
    /// # Errors
    /// As [`SlotCq::poll_batch`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// let mut poller = cq.poller()?;
    /// assert!(poller.poll_batch(|_| ())?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(
        &mut self,
        f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R,
    ) -> Result<Option<R>> {
        // SAFETY: the poller of a slot CQ (the one batch open on it); the batch has just
        // started.
        self.poller
            .poll_batch(|batch| f(unsafe { SlotBatch::enter(batch) }))
    }
}

/// What opens a batch on a slot CQ: a [`SlotCq`] held exclusively, or its [`SlotPoller`].
/// `completion_record!` records with a `slot` field poll these only.
///
/// ```
/// use typed_verbs::slots::SlotPollable;
/// fn empty<'s, P: SlotPollable<'s>>(p: &mut P) -> typed_verbs::Result<bool> {
///     Ok(p.poll_slots(|_| ())?.is_none())
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// assert!(empty(&mut cq)?);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a slot CQ, so its completions carry no slots: the `slot` field needs a CQ built with `.slots()`",
    label = "a plain CQ's wr_id is the program's number, not a slot",
    note = "build it with `CqEx::<F>::builder(&ctx).slots().build()` and give it to `Qp::slot_builder`, or remove `slot` from the record"
)]
pub trait SlotPollable<'s>: Sealed {
    /// The CQ's `wc_flags`.
    type Flags: WcFlags;
    /// Opens a batch ([`SlotCq::poll_batch`]).
    ///
    /// # Errors
    /// As [`SlotCq::poll_batch`].
    ///
    /// ```
    /// use typed_verbs::slots::SlotPollable;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// assert!(cq.poll_slots(|mut b| b.take_slot())?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn poll_slots<R>(
        &mut self,
        f: impl FnOnce(SlotBatch<'_, 's, Self::Flags>) -> R,
    ) -> Result<Option<R>>;
}

impl<F: WcFlags, T: Threading, C> Sealed for SlotCq<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::event::EventCq for SlotCq<'_, F, T, C> {
    #[inline]
    fn event_cq(&self) -> *mut sys::ibv_cq {
        self.cq.as_raw_cq()
    }
}
impl<'a, F: WcFlags, T: Threading, C> SlotPollable<'a> for SlotCq<'a, F, T, C> {
    type Flags = F;
    #[inline(always)]
    fn poll_slots<R>(&mut self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a slot CQ (every completion carries a slot token); the batch has just
        // started, and it is the only one open on the CQ (`&mut self`), so no other batch
        // converts this completion's token.
        crate::cq::ex::Pollable::poll_batch(&mut self.cq, |batch| {
            f(unsafe { SlotBatch::enter(batch) })
        })
    }
}

impl<F: WcFlags, T: Threading> Sealed for SlotPoller<'_, '_, F, T> {}
impl<'a, F: WcFlags, T: Threading> SlotPollable<'a> for SlotPoller<'_, 'a, F, T> {
    type Flags = F;
    #[inline(always)]
    fn poll_slots<R>(&mut self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        self.poll_batch(f)
    }
}

/// An open polling batch of a [`SlotCq`]: a [`Batch`] whose current completion's slot the
/// crate has turned back into an owned [`Slot`], once, on entering it. Take it with
/// [`take_slot`](Self::take_slot); a slot not taken is dropped when the batch moves on or ends.
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
/// a.post_send_slot(slots.pop().unwrap(), 16)?;
/// let mut poller = cq.poller()?;
/// let mut back = Vec::new();
/// while back.len() < 2 {
///     poller.poll_batch(|batch| -> typed_verbs::Result<()> {
///         let mut next = Some(batch);
///         while let Some(mut batch) = next {
///             back.push(batch.take_slot().expect("every completion carries its slot"));
///             next = batch.advance()?;
///         }
///         Ok(())
///     })?.transpose()?;
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "dropping the batch ends it (ibv_end_poll) and drops its slot"]
pub struct SlotBatch<'b, 's, F: WcFlags> {
    batch: Batch<'b, F>,
    slot: Option<Slot<'s>>,
}

impl<'b, 's, F: WcFlags> SlotBatch<'b, 's, F> {
    /// # Safety
    /// `batch` is of a slot CQ and has just entered its current completion (`ibv_start_poll`
    /// or `ibv_next_poll` succeeded), whose `wr_id` no one converted yet.
    #[inline(always)]
    unsafe fn enter(batch: Batch<'b, F>) -> Self {
        let token = batch.completion().wr_id();
        // SAFETY: every completion on a slot CQ carries a slot token (module docs, point 3),
        // converted here once: the batch enters each completion once.
        let slot = Some(unsafe { Slot::from_token(token) });
        SlotBatch { batch, slot }
    }

    /// The completion the batch points at (its `wr_id` is the slot's token: use
    /// [`take_slot`](Self::take_slot)).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// cq.poll_batch(|batch| println!("{:?}", batch.completion().status()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn completion(&self) -> Completion<'_, F> {
        self.batch.completion()
    }

    /// The current completion's slot, the first time it is asked for (then `None`). Every
    /// completion carries one, whatever its status (a flushed request's too).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// let slot = cq.poll_batch(|mut batch| batch.take_slot())?.flatten(); // None: nothing completed
    /// assert!(slot.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn take_slot(&mut self) -> Option<Slot<'s>> {
        self.slot.take()
    }

    /// `ibv_next_poll`, as [`Batch::advance`]; the current slot, if not taken, is dropped.
    ///
    /// # Errors
    /// As [`Batch::advance`]: the provider's errno from `ibv_next_poll` other than `ENOENT`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.poll_batch(|batch| batch.advance().map(|next| next.is_none()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn advance(self) -> Result<Option<Self>> {
        let SlotBatch { batch, slot } = self;
        drop(slot);
        // SAFETY: the batch of a slot CQ, just moved to its next completion.
        Ok(batch
            .advance()?
            .map(|next| unsafe { SlotBatch::enter(next) }))
    }
}
