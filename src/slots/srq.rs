//! Slot SRQs: shared receive queues that take slots only.

use super::*;

/// A shared receive queue in slot mode: it takes slots only ([`post_recv_slot`]), and the QPs
/// that use it ([`Qp::slot_builder_with_srq`]) complete its receives on slot CQs. Built with
/// `Srq::builder(&pd)...slots().build()`.
///
/// [`post_recv_slot`]: Self::post_recv_slot
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let srq = Srq::builder(&pd).max_wr(64).slots().build()?;
/// let slots = Slot::register(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE, 4096)?;
/// for slot in slots {
///     srq.post_recv_slot(slot)?;
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotSrq<'a, C = ()> {
    pub(super) srq: Srq<'a, C, 1>,
}

/// Builds a [`SlotSrq`]: made by `.slots()` on an SRQ's builder.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct SlotSrqBuilder<'a, C> {
    inner: SrqBuilder<'a, C, 1>,
}

impl<'a, C> SrqBuilder<'a, C, 1> {
    /// Makes the SRQ a [`SlotSrq`], whose receives are slots (one SGE each). Set `max_wr` and
    /// the context first.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(64).slots().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slots(self) -> SlotSrqBuilder<'a, C> {
        SlotSrqBuilder { inner: self }
    }
}

impl<'a, C: Send + Sync> SlotSrqBuilder<'a, C> {
    /// `ibv_create_srq`, as for a plain SRQ.
    ///
    /// # Errors
    /// As [`SrqBuilder::build`](crate::srq::SrqBuilder::build).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// assert!(srq.attr().max_wr >= 32);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<SlotSrq<'a, C>> {
        self.inner.build().map(|srq| SlotSrq { srq })
    }
}

impl<'a, C> SlotSrq<'a, C> {
    /// `ibv_post_srq_recv` of `slot`: it comes back with the completion of the receive that
    /// takes it, on that QP's slot CQ. If the provider refuses it, the error gives it back.
    ///
    /// # Errors
    /// A [`SlotPostError`] with the provider's errno from `ibv_post_srq_recv` (`ENOMEM` when the
    /// SRQ is full) and the slot back when the provider names the request as `bad_wr`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let srq = Srq::builder(&pd).max_wr(8).slots().build()?;
    /// let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;
    /// srq.post_recv_slot(slots.pop().unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv_slot<'r>(&self, slot: Slot<'r>) -> Result<(), SlotPostError<'r>> {
        let srq = self.srq.as_raw();
        post_slot_recv(slot, Verb::PostSrqRecv, |wr, bad| {
            // SAFETY: a live SRQ; `wr` and the slot's SGE (in the slot's box, which the post
            // moves into the queue, never frees) live across the call.
            unsafe { sys::ibv_post_srq_recv(srq, wr, bad) }
        })
    }

    /// The attributes `ibv_create_srq` reported, as [`Srq::attr`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(64).slots().build()?;
    /// assert!(srq.attr().max_wr >= 64 && srq.attr().max_sge >= 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn attr(&self) -> SrqAttr {
        self.srq.attr()
    }

    /// `ibv_modify_srq` with `IBV_SRQ_LIMIT`, as [`Srq::arm_limit`].
    ///
    /// # Errors
    /// As [`Srq::arm_limit`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.arm_limit(4)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn arm_limit(&self, limit: u32) -> Result<()> {
        self.srq.arm_limit(limit)
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).context(3u8).slots().build()?;
    /// assert_eq!(*srq.user_context(), 3);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        self.srq.user_context()
    }

    /// The C SRQ. Posting to it other than through this handle must post slots
    /// (the raw API's contract).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).slots().build()?;
    /// assert!(!srq.as_raw().is_null()); // only to read
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_srq {
        self.srq.as_raw()
    }

    /// `ibv_destroy_srq`. Slots still posted are leaked. If it fails, the error is returned
    /// and the SRQ dropped (see [`Srq::destroy`]).
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_srq` ([`ErrorKind::Os`]): `EBUSY` while a QP still uses
    /// the SRQ (only a leaked one can).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_srq`; on failure the SRQ comes back inside the error.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the SRQ.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        self.srq.try_destroy().map_err(|e| DestroyError {
            object: SlotSrq { srq: e.object },
            error: e.error,
        })
    }
}

impl<C> std::fmt::Debug for SlotSrq<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SlotSrq").field(&self.srq.as_raw()).finish()
    }
}

impl<F: WcFlags, T: Threading, C> crate::sealed::SealedParent for SlotCq<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::object::parent::ParentObject for SlotCq<'_, F, T, C> {}
impl<C> crate::sealed::SealedParent for SlotSrq<'_, C> {}
impl<C> crate::object::parent::ParentObject for SlotSrq<'_, C> {}
