//! Completion events: what one names, and acking them (`ibv_ack_cq_events`).

use super::*;

/// The acks of the CQ whose `cq_context` is `cq_context`.
///
/// # Safety
/// `cq_context` is the context of a live CQ made by this crate's builders: a `CqMeta<C>`,
/// whose fields before `user` are at the same offsets as `CqMeta<()>`'s (`#[repr(C)]`).
unsafe fn acks_of<'a>(cq_context: *mut c_void) -> &'a Arc<CqAcks> {
    // SAFETY: caller's contract.
    unsafe { &(*(cq_context as *const crate::cq::CqMeta<()>)).acks }
}

/// A completion event: the CQ it is for had a completion after it was armed. Acked
/// (`ibv_ack_cq_events(cq, 1)`) when dropped, or with others by [`EventAcks`].
///
/// The CQ must be armed again (`req_notify`) for its next event, and polled: the event says
/// only that there is something to poll.
///
/// ```
/// use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let channel = CompChannel::new(&ctx)?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).context("rx").build()?;
/// cq.req_notify(false)?;
/// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
/// let event = channel.get_cq_event()?;
/// assert_eq!(event.user_context(&cq), Some(&"rx"));
/// drop(event); // ibv_ack_cq_events(cq, 1)
/// cq.req_notify(false)?; // arm again, then poll what is there
/// cq.poll_batch(|batch| assert_eq!(batch.completion().wr_id(), 1))?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct CqEvent<'ch> {
    cq: NonNull<sys::ibv_cq>,
    acks: Arc<CqAcks>,
    _ch: PhantomData<&'ch ()>,
}

// SAFETY: the event compares pointers and acks through `CqAcks`, whose lock makes the ack safe
// from any thread (ibv_ack_cq_events takes the CQ's mutex).
unsafe impl Send for CqEvent<'_> {}
// SAFETY: as above; `&CqEvent` only compares pointers.
unsafe impl Sync for CqEvent<'_> {}

impl<'ch> CqEvent<'ch> {
    /// Makes the typed event of `cq` (with `cq_context`), just got from a channel.
    ///
    /// # Safety
    /// `cq` is a live CQ made by this crate's builders, `cq_context` its context, and the
    /// event was got from its channel and not acked.
    pub(crate) unsafe fn got(cq: NonNull<sys::ibv_cq>, cq_context: *mut c_void) -> Self {
        // SAFETY: caller's contract. The Arc is cloned before anything acks: the CQ and its
        // context stay live until this event is acked, since its destroy waits for the ack.
        let acks = unsafe { acks_of(cq_context) }.clone();
        // SAFETY: as above.
        unsafe { acks.got(cq.as_ptr()) };
        CqEvent {
            cq,
            acks,
            _ch: PhantomData,
        }
    }

    /// Whether the event is for `cq` (a [`Cq`], a [`CqEx`] or a [`SlotCq`](crate::SlotCq)). A
    /// CQ destroyed and another created at the same address are told apart.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let event = channel.get_cq_event()?;
    /// assert!(event.is_for(&cq));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_for<Q: EventCq + ?Sized>(&self, cq: &Q) -> bool {
        let raw = cq.event_cq();
        // SAFETY: a live CQ made by this crate's builders.
        let theirs = unsafe { acks_of((*raw).cq_context) };
        Arc::ptr_eq(theirs, &self.acks)
    }

    /// The typed user context of `cq` if the event is for it, as `cq.user_context()`.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let event = channel.get_cq_event()?;
    /// assert_eq!(event.user_context(&cq), Some(&"rx"));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context<'c, Q: CqWithContext + ?Sized>(&self, cq: &'c Q) -> Option<&'c Q::User> {
        self.is_for(cq).then(|| cq.user_context_ref())
    }

    /// The CQ the event is for, as `ibv_get_cq_event` returned it. Only compare it: the CQ may
    /// have been destroyed since.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// use typed_verbs::AnyCq;
    /// let event = channel.get_cq_event()?;
    /// assert_eq!(event.as_raw_cq(), cq.as_raw_cq());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw_cq(&self) -> *mut sys::ibv_cq {
        self.cq.as_ptr()
    }

    /// Acks the event now (as dropping it does).
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// channel.get_cq_event()?.ack(); // ibv_ack_cq_events(cq, 1)
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn ack(self) {}

    /// Moves the event into `acks`, to be acked with the others of its CQ in one call.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut acks = EventAcks::new();
    /// channel.get_cq_event()?.ack_later(&mut acks);
    /// assert_eq!(acks.len(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn ack_later(self, acks: &mut EventAcks) {
        acks.push(self)
    }
}

impl Drop for CqEvent<'_> {
    fn drop(&mut self) {
        // SAFETY: the event's CQ; `ack` checks under the lock that it is not being destroyed.
        unsafe { self.acks.ack(self.cq.as_ptr(), 1) }
    }
}

impl std::fmt::Debug for CqEvent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CqEvent").field("cq", &self.cq).finish()
    }
}

/// A CQ a completion event can be for ([`CqEvent::is_for`]): a [`Cq`], a [`CqEx`], or a
/// [`SlotCq`](crate::SlotCq), whose events a program waits for as for any other CQ's. Sealed.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// use typed_verbs::event::{CqEvent, EventCq};
/// fn armed_and_woken<Q: EventCq>(event: &CqEvent<'_>, cq: &Q) -> bool {
///     event.is_for(cq)
/// }
/// # let ctx = Arc::new(Context::open("sw0")?);
/// # let channel = CompChannel::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).slots().build()?;
/// cq.req_notify(false)?;
/// # let _ = armed_and_woken::<typed_verbs::SlotCq<'_, Standard>>;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a CQ a completion event can be for: pass a `Cq`, a `CqEx` or a `SlotCq`",
    label = "not a CQ of this crate"
)]
pub trait EventCq: crate::sealed::Sealed {
    #[doc(hidden)]
    fn event_cq(&self) -> *mut sys::ibv_cq;
}

impl<Q: AnyCq + ?Sized> EventCq for Q {
    #[inline]
    fn event_cq(&self) -> *mut sys::ibv_cq {
        self.as_raw_cq()
    }
}

/// A CQ with a typed user context: [`Cq`] and [`CqEx`].
///
/// ```
/// use typed_verbs::{event::CqWithContext, software, CompChannel, Context, CqEvent, CqEx, Standard};
/// # use typed_verbs::{InjectedCompletion, WcOpcode};
/// fn label<Q: CqWithContext<User = &'static str>>(event: &CqEvent<'_>, cq: &Q) -> &'static str {
///     event.user_context(cq).copied().unwrap_or("another CQ")
/// }
/// let ctx = Context::open("sw0")?;
/// let channel = CompChannel::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("tx").build()?;
/// cq.req_notify(false)?;
/// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::SEND))?;
/// let event = channel.get_cq_event()?;
/// assert_eq!(label(&event, &cq), "tx");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait CqWithContext: AnyCq {
    /// The user context type.
    type User;
    #[doc(hidden)]
    fn user_context_ref(&self) -> &Self::User;
}

impl<C> CqWithContext for Cq<'_, C> {
    type User = C;
    fn user_context_ref(&self) -> &C {
        self.user_context()
    }
}

impl<F: WcFlags, T: Threading, C> CqWithContext for CqEx<'_, F, T, C> {
    type User = C;
    fn user_context_ref(&self) -> &C {
        self.user_context()
    }
}

/// Completion events waiting to be acked together: one `ibv_ack_cq_events(cq, n)` per CQ when
/// [`ack`](Self::ack) is called or the collection is dropped.
///
/// ```
/// # use typed_verbs::{Context, CompChannel, Cq, software, InjectedCompletion, WcOpcode};
/// # use typed_verbs::event::EventAcks;
/// # let ctx = Context::open("sw0")?;
/// # let ch = CompChannel::new(&ctx)?;
/// # let cq = Cq::builder(&ctx).cqe(8).channel(&ch).build()?;
/// let mut acks = EventAcks::new();
/// for i in 0..3 {
///     cq.req_notify(false)?;
///     software::inject(&cq, InjectedCompletion::success(i, WcOpcode::RECV))?;
///     ch.get_cq_event()?.ack_later(&mut acks);
/// }
/// assert_eq!(acks.len(), 3);
/// acks.ack(); // ibv_ack_cq_events(cq, 3)
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// ```
/// use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let channel = CompChannel::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
/// let mut acks = EventAcks::new();
/// for i in 0..3 {
///     cq.req_notify(false)?;
///     software::inject(&cq, InjectedCompletion::success(i, WcOpcode::RECV))?;
///     channel.get_cq_event()?.ack_later(&mut acks);
/// }
/// assert_eq!(acks.len(), 3);
/// acks.ack(); // one ibv_ack_cq_events(cq, 3)
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Default)]
pub struct EventAcks {
    /// Per CQ: its acks, the CQ's address, and how many events wait.
    pending: Vec<(Arc<CqAcks>, usize, u64)>,
}

impl EventAcks {
    /// No events.
    ///
    /// ```
    /// let acks = typed_verbs::EventAcks::new();
    /// assert!(acks.is_empty());
    /// ```
    pub fn new() -> Self {
        EventAcks::default()
    }

    /// Adds `ev` (as [`CqEvent::ack_later`]).
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut acks = EventAcks::new();
    /// acks.push(channel.get_cq_event()?);
    /// assert_eq!(acks.len(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn push(&mut self, ev: CqEvent<'_>) {
        let ev = std::mem::ManuallyDrop::new(ev);
        // SAFETY: `ev` is never dropped, so its Arc is moved out exactly once.
        let acks = unsafe { std::ptr::read(&ev.acks) };
        match self.pending.iter_mut().find(|p| Arc::ptr_eq(&p.0, &acks)) {
            Some(p) => p.2 += 1,
            None => self.pending.push((acks, ev.cq.as_ptr() as usize, 1)),
        }
    }

    /// How many events wait to be acked.
    ///
    /// ```
    /// assert_eq!(typed_verbs::EventAcks::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.pending.iter().map(|p| p.2 as usize).sum()
    }

    /// Whether none waits.
    ///
    /// ```
    /// assert!(typed_verbs::EventAcks::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Acks every event collected: one `ibv_ack_cq_events` per CQ.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let channel = CompChannel::new(&ctx)?;
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).context("rx").build()?;
    /// # cq.req_notify(false)?;
    /// # software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut acks = EventAcks::new();
    /// acks.push(channel.get_cq_event()?);
    /// acks.ack(); // ibv_ack_cq_events(cq, 1)
    /// assert!(acks.is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn ack(&mut self) {
        for (acks, cq, n) in self.pending.drain(..) {
            // SAFETY: the events' CQ; `ack` checks that it is not being destroyed.
            unsafe { acks.ack(cq as *mut sys::ibv_cq, n) };
        }
    }
}

impl Drop for EventAcks {
    fn drop(&mut self) {
        self.ack()
    }
}

impl std::fmt::Debug for EventAcks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventAcks")
            .field("len", &self.len())
            .finish()
    }
}
