//! Polling: batches (ibv_start_poll to ibv_end_poll), who may open one (Poller, ArcPoller,
//! Pollable).

use super::*;

/// `ibv_start_poll` did not start a batch (ENOENT, the CQ is empty, or an error): the gate
/// back and the thread out of the batch. Out of the poll loop's line, so that the loop's one
/// `End` stays small.
#[inline(never)]
pub(super) fn no_batch(gate: &Gate, who: Opener) {
    let handed = gate.close_batch(who);
    teardown::leave_batch(gate, handed);
}

/// A second batch on a CQ that has one open (another thread's, through `CqEx::poll_batch`):
/// the thread leaves the batch it entered, and the error.
#[cold]
#[inline(never)]
pub(super) fn refused_second_batch() -> Error {
    teardown::leave();
    poller_taken()
}

/// Another thread polls the CQ: its poller lives, or it has a batch open on it.
#[cold]
#[inline(never)]
pub(super) fn poller_taken() -> Error {
    Error {
        verb: Verb::StartPoll,
        kind: ErrorKind::PollerTaken,
    }
}

/// The right to poll a [`CqEx`] whose shared half QPs hold, or that an `Arc` shares. Made by
/// [`CqEx::poller`] or [`CqEx::split`]; there is one at a time per CQ, and it opens one batch at
/// a time. Dropping it gives the right back.
///
/// It may move to another thread for a [`Shared`] CQ, not for a SINGLE_THREADED one; it is not
/// `Sync`, so only the thread that has it polls.
///
/// ```
/// use std::sync::Arc;
/// use typed_verbs::{Context, CqEx, Standard};
/// let ctx = Arc::new(Context::open("sw0")?); // shared: the CQ is 'static
/// let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
/// let polling = Arc::clone(&cq);
/// std::thread::spawn(move || -> typed_verbs::Result<()> {
///     let mut poller = polling.poller()?; // the CQ's one poller, on this thread
///     poller.poll_batch(|_batch| ())?;
///     Ok(())
/// }).join().unwrap()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Poller<'a, F: WcFlags, T: Threading = Shared> {
    pub(super) cq: NonNull<sys::ibv_cq_ex>,
    pub(super) _m: PhantomData<(&'a mut (), F, T)>,
}

// SAFETY: polling a Shared CQ from another thread is what its provider lock is for; a
// SINGLE_THREADED CQ's poller stays on its thread (`SharedAcrossThreads` is `Shared`'s only).
unsafe impl<F: WcFlags, T: crate::cq::SharedAcrossThreads> Send for Poller<'_, F, T> {}

impl<F: WcFlags, T: Threading> Poller<'_, F, T> {
    /// Opens a batch, as [`CqEx::poll_batch`].
    ///
    /// # Errors
    /// As [`CqEx::poll_batch`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?;
    /// let mut poller = cq.poller()?;
    /// assert_eq!(poller.poll_batch(|_| ())?, None);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        // SAFETY: the poller is the one right to poll this live CQ; `&mut self` means no other
        // batch is open on it.
        unsafe { poll_batch(self.cq, Opener::Poller, f) }
    }
}

impl<F: WcFlags, T: Threading> Drop for Poller<'_, F, T> {
    fn drop(&mut self) {
        let cq = self.cq.as_ptr().cast::<sys::ibv_cq>();
        // SAFETY: a live CQ made by a builder (the poller borrows it); the claim is this
        // poller's.
        unsafe { crate::cq::gate(cq) }.release_poller();
    }
}

impl<F: WcFlags, T: Threading> std::fmt::Debug for Poller<'_, F, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Poller").field(&self.cq).finish()
    }
}

/// A CQ's one right to poll that holds a share of the CQ ([`CqEx::arc_poller`]): a
/// [`Poller`] with no borrow, for a worker struct, thread or task that owns what it polls. It
/// is `Send` when the CQ is `Shared` and its user context `Send + Sync`; dropping it gives the
/// right back. A forgotten one keeps the right and its share of the CQ for ever: the CQ stays
/// allocated, and asking for its poller again is `PollerTaken` (an error, never a wait).
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::{Context, CqEx, Standard};
/// # let ctx = Arc::new(Context::open("sw0")?);
/// let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
/// let mut poller = cq.arc_poller()?;
/// assert_eq!(poller.poll_batch(|_| ())?, None);
/// drop(poller);
/// assert!(cq.poller().is_ok()); // the right is back
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct ArcPoller<'a, F: WcFlags, T: Threading = Shared, C = ()> {
    pub(super) cq: std::sync::Arc<CqEx<'a, F, T, C>>,
}

impl<'a, F: WcFlags, T: Threading, C> ArcPoller<'a, F, T, C> {
    /// Opens a batch, as [`CqEx::poll_batch`].
    ///
    /// # Errors
    /// As [`CqEx::poll_batch`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let ctx = Arc::new(typed_verbs::Context::open("sw0")?);
    /// # let cq = Arc::new(typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?);
    /// let mut poller = cq.arc_poller()?;
    /// assert_eq!(poller.poll_batch(|_| ())?, None);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        // SAFETY: the poller holds the one right to poll this live CQ (its claim, taken by
        // `arc_poller`); `&mut self` means no other batch is open on it.
        unsafe { poll_batch(self.cq.raw, Opener::Poller, f) }
    }

    /// The CQ (for `req_notify`, its attributes, a QP builder).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let ctx = Arc::new(typed_verbs::Context::open("sw0")?);
    /// # let cq = Arc::new(typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?);
    /// let poller = cq.arc_poller()?;
    /// assert!(Arc::ptr_eq(poller.cq(), &cq));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cq(&self) -> &std::sync::Arc<CqEx<'a, F, T, C>> {
        &self.cq
    }
}

impl<F: WcFlags, T: Threading, C> Drop for ArcPoller<'_, F, T, C> {
    fn drop(&mut self) {
        // SAFETY: a live CQ made by a builder (the poller holds a share of it); the claim is
        // this poller's.
        unsafe { crate::cq::gate(self.cq.as_raw_cq()) }.release_poller();
    }
}

impl<F: WcFlags, T: Threading, C> std::fmt::Debug for ArcPoller<'_, F, T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArcPoller").field(&self.cq.raw).finish()
    }
}

impl<F: WcFlags, T: Threading, C> sealed::Sealed for ArcPoller<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> Pollable for ArcPoller<'_, F, T, C> {
    type Flags = F;
    #[inline(always)]
    fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        ArcPoller::poll_batch(self, f)
    }
}

/// What can open a polling batch: a [`CqEx`] held exclusively, or its [`Poller`]. The poll
/// functions [`completion_record!`](crate::completion_record) generates take either.
///
/// ```
/// use typed_verbs::{cq_ex::Pollable, Context, CqEx, Standard};
/// fn drain<P: Pollable>(p: &mut P) -> typed_verbs::Result<usize> {
///     let mut n = 0;
///     while p.poll_batch(|_| ())?.is_some() { n += 1; }
///     Ok(n)
/// }
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// assert_eq!(drain(&mut cq)?, 0);
/// assert_eq!(drain(&mut cq.poller()?)?, 0);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait Pollable: sealed::Sealed {
    /// The CQ's `wc_flags`.
    type Flags: WcFlags;
    /// Opens a batch, runs `f` on it and ends it ([`CqEx::poll_batch`]).
    ///
    /// # Errors
    /// As [`CqEx::poll_batch`].
    ///
    /// ```
    /// use typed_verbs::cq_ex::Pollable;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
    /// assert!(Pollable::poll_batch(&mut cq, |_| ())?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, Self::Flags>) -> R) -> Result<Option<R>>;
}

impl<F: WcFlags, T: Threading, C> Pollable for CqEx<'_, F, T, C> {
    type Flags = F;
    #[inline(always)]
    fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a live extended CQ made by a builder; `&mut self` means no poller polls (a
        // `Poller` borrows the CQ, an `ArcPoller` shares it, a leaked one never polls again)
        // and no other batch is open on it.
        unsafe { poll_batch(self.raw, Opener::Exclusive, f) }
    }
}

impl<F: WcFlags, T: Threading> sealed::Sealed for Poller<'_, F, T> {}
impl<F: WcFlags, T: Threading> Pollable for Poller<'_, F, T> {
    type Flags = F;
    #[inline(always)]
    fn poll_batch<R>(&mut self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        Poller::poll_batch(self, f)
    }
}

/// Why a generated `try_poll` loop left its batch early: `ibv_next_poll`'s errno or the
/// handler's error. Only for [`completion_record!`](crate::completion_record)'s expansion.
#[doc(hidden)]
pub enum PollStop<E> {
    /// `ibv_next_poll` failed with this errno.
    Errno(i32),
    /// The handler returned this error.
    Handler(E),
}

/// What a generated `try_poll` returns for what its batch gave: the number taken, `ibv_next_poll`'s
/// errno as an [`Error`], or the handler's error; 0 for an empty CQ. Only for
/// [`completion_record!`](crate::completion_record)'s expansion.
#[doc(hidden)]
#[inline(always)]
pub fn try_poll_result<E: From<Error>>(
    polled: Option<std::result::Result<usize, PollStop<E>>>,
) -> std::result::Result<usize, E> {
    match polled {
        Some(Ok(taken)) => Ok(taken),
        Some(Err(PollStop::Errno(errno))) => Err(Error {
            verb: Verb::NextPoll,
            kind: ErrorKind::Os(errno),
        }
        .into()),
        Some(Err(PollStop::Handler(e))) => Err(e),
        None => Ok(0),
    }
}

/// An open polling batch: between `ibv_start_poll` and `ibv_end_poll`, handed to the closure of
/// [`CqEx::poll_batch`] / [`Poller::poll_batch`]. Dropping it calls `ibv_end_poll`; a batch
/// that is leaked instead is ended when the closure returns, so it is ended exactly once either
/// way. It is neither `Send` nor `Sync`: the provider's CQ lock is held by this thread until the
/// batch ends.
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// for id in 0..3 { software::inject(&cq, InjectedCompletion::success(id, WcOpcode::RECV))?; }
/// let ids = cq.poll_batch(|batch| -> typed_verbs::Result<Vec<u64>> {
///     let (mut ids, mut next) = (Vec::new(), Some(batch));
///     while let Some(batch) = next {
///         ids.push(batch.completion().wr_id());
///         next = batch.advance()?; // ibv_next_poll; the last one ends the batch
///     }
///     Ok(ids)
/// })?.transpose()?;
/// assert_eq!(ids, Some(vec![0, 1, 2]));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "dropping the batch ends it (ibv_end_poll) without reading its completion"]
pub struct Batch<'cq, F: WcFlags> {
    pub(super) cq: NonNull<sys::ibv_cq_ex>,
    /// `poll_batch`'s flag: true until the batch is ended.
    pub(super) open: &'cq Cell<bool>,
    pub(super) _m: PhantomData<(&'cq mut (), F, *const ())>,
}

/// Implemented by nothing: the bound of [`Batch`]'s `Send` and `Sync` impls, which therefore
/// never apply. It stands where the compiler would otherwise name a raw pointer inside the
/// batch, so that its error says why a batch stays on its thread.
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
/// software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV))?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// cq.poll_batch(|batch| {
///     // The batch stays here; what it says goes to the other thread.
///     tx.send(batch.completion().result().ok().map(|wc| wc.wr_id())).unwrap();
/// })?;
/// std::thread::spawn(move || assert_eq!(rx.recv().unwrap(), Some(7))).join().unwrap();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `Batch` cannot leave the thread that polls: it stands for the CQ lock `ibv_start_poll` took, which this thread holds until the batch ends; read what you need from its completion (`wr_id`, `status`, `byte_len`, ...) and send those values",
    label = "a polling batch used on another thread",
    note = "a batch lives inside the closure of `poll_batch`, on the polling thread"
)]
pub trait BatchStaysOnItsThread: sealed::Sealed {}

// SAFETY: never applies (no type implements `BatchStaysOnItsThread`, which is sealed): a batch
// is neither Send nor Sync, as without these impls; they only name the reason in the error.
unsafe impl<F: WcFlags + BatchStaysOnItsThread> Send for Batch<'_, F> {}
// SAFETY: as above.
unsafe impl<F: WcFlags + BatchStaysOnItsThread> Sync for Batch<'_, F> {}

impl<F: WcFlags> Batch<'_, F> {
    /// The completion the batch points at. It borrows the batch, so it is gone before the next
    /// [`advance`](Self::advance) and before the batch ends.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(5, WcOpcode::SEND))?;
    /// cq.poll_batch(|batch| {
    ///     let c = batch.completion();
    ///     assert_eq!((c.wr_id(), c.status()), (5, WcStatus::SUCCESS));
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn completion(&self) -> Completion<'_, F> {
        Completion {
            cq: self.cq,
            _m: PhantomData,
        }
    }

    /// `ibv_next_poll`: moves to the next completion. The batch is consumed, so no completion
    /// of the previous step can be used afterwards. `Ok(Some(batch))` points at the next
    /// completion; `Ok(None)` means there is none (ENOENT) and the batch has ended; an error ends
    /// the batch too ("If an error code is given, end_poll should still be called").
    ///
    /// # Errors
    /// The provider's errno from `ibv_next_poll` other than `ENOENT` ([`ErrorKind::Os`]); the batch
    /// has ended then.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// cq.poll_batch(|batch| {
    ///     assert!(batch.advance().expect("next_poll").is_none()); // only one: the batch ended
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn advance(self) -> Result<Option<Self>> {
        // SAFETY: inside a started batch on a live CQ.
        match unsafe { cq_ex_call!(self.cq.as_ptr(), next_poll) } {
            0 => Ok(Some(self)),
            libc::ENOENT => Ok(None), // `self` drops here: ibv_end_poll
            e => Err(Error::os(Verb::NextPoll, e)),
        }
    }
}

impl<F: WcFlags> Drop for Batch<'_, F> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the batch `poll_batch` opened with a successful ibv_start_poll, still open;
        // this is its one end (`open` is cleared, so `poll_batch` does not end it again).
        unsafe { cq_ex_call!(self.cq.as_ptr(), end_poll) };
        self.open.set(false);
    }
}
