//! Events: completion events from a [`CompChannel`] and async events from a
//! [`Context`]'s async fd, each typed, each acknowledged exactly once.
//!
//! # Completion events
//!
//! A CQ created with a channel and armed with `req_notify` puts one event on the channel when
//! a completion (or, armed with `solicited_only`, a solicited or failed one) arrives.
//! [`CompChannel::get_cq_event`](crate::cq::channel::CompChannel::get_cq_event) (blocking) and
//! [`try_get_cq_event`](crate::cq::channel::CompChannel::try_get_cq_event) (`None` when there is none) return
//! it as a [`CqEvent`]: [`CqEvent::is_for`] tells which CQ it is for, and
//! [`CqEvent::user_context`] gives that CQ's typed user context.
//!
//! "All completion events that ibv_get_cq_event() returns must be acknowledged using
//! ibv_ack_cq_events()", and `ibv_destroy_cq` waits until they are. Here a [`CqEvent`] acks
//! itself when dropped; [`EventAcks`] collects events and acks each CQ's with one
//! `ibv_ack_cq_events(cq, n)` ("this verb takes a mutex, so it is better to ack many events at
//! once"). Destroying a CQ first acks every event of it that is still held (in a `CqEvent` or
//! an `EventAcks`, on any thread), so holding one can never hang the destroy; a held event
//! then acks nothing when it goes.
//!
//! # Async events
//!
//! [`Context::get_async_event`] and [`Context::try_get_async_event`] return an
//! [`AsyncEventGuard`], which derefs to the typed [`AsyncEvent`] and calls
//! `ibv_ack_async_event` when dropped. `ibv_destroy_qp`, `ibv_destroy_cq` and `ibv_destroy_srq`
//! wait for the acks of their object's events; as above, destroying the object acks the events
//! of it that are still held first.
//!
//! # Readiness without the power to consume
//!
//! Both fds are readable while an event waits.
//! [`CompChannel::wait_readable`](crate::cq::channel::CompChannel::wait_readable) and
//! [`Context::wait_async_readable`] wait for that in poll(2) with a timeout; with the feature
//! `tokio`, `CompChannel::cq_events` awaits it; for a poll/epoll/mio loop of your own, the
//! fds' numbers are [`CompChannel::as_raw_fd`](std::os::fd::AsRawFd::as_raw_fd) and
//! [`Context::async_fd`]. Neither is handed out as a [`BorrowedFd`](std::os::fd::BorrowedFd)
//! (`AsFd`): safe code could then `dup` it and `read` an event that libibverbs never acks, and
//! the destroy verb of its object would wait for that ack forever. A raw fd number can be read
//! from only with `unsafe`, whose caller promises not to consume events.
//!
//! ```
//! use typed_verbs::{software, AsyncEvent, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
//! let ctx = Context::open("sw0")?;
//! let channel = CompChannel::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
//! let mut acks = EventAcks::new();
//! cq.req_notify(false)?;
//! software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
//! channel.get_cq_event()?.ack_later(&mut acks);
//! acks.ack(); // one ibv_ack_cq_events per CQ
//! software::raise_port_event(&ctx, typed_verbs::ffi::event_type::PORT_ACTIVE, 1)?;
//! assert_eq!(*ctx.get_async_event()?, AsyncEvent::PortActive(1)); // acked when dropped
//! # Ok::<(), typed_verbs::Error>(())
//! ```

use crate::backend;
use crate::cq::channel::CompChannel;
use crate::cq::ex::CqEx;
use crate::cq::ex::WcFlags;
use crate::cq::Cq;
use crate::cq::Threading;
use crate::cq::{AnyCq, CqAcks};
use crate::device::Context;
use crate::error::{Error, Result, Verb};
use crate::ffi::sync::Mutex;
use crate::ffi::{sys, RawAsyncEvent};
use crate::qp::state::QpState;
use crate::qp::Qp;
use crate::qp::{QpType, RecvSide};
use crate::raw::destroying::Ack as _;
use crate::srq::Srq;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Getting completion events from a channel: here, above the CQs the events name, rather than
// in channel.rs, below them (a CQ's builder takes its channel).

impl CompChannel<'_> {
    /// `ibv_get_cq_event`: the next completion event, waiting for one (in poll(2)) if there is
    /// none. The event is acked when dropped (see [`CqEvent`]).
    ///
    /// # Errors
    /// The errno of `ibv_get_cq_event` or of poll(2) while waiting
    /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_cq_event`); `EINTR` is retried.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
    /// cq.req_notify(false)?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?; // a completion arrives
    /// let event = channel.get_cq_event()?; // blocks until the event is there
    /// assert!(event.is_for(&cq));
    /// drop(event); // acked
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn get_cq_event(&self) -> Result<CqEvent<'_>> {
        loop {
            if let Some(ev) = self.try_get_cq_event()? {
                return Ok(ev);
            }
            crate::ffi::fd::wait_readable(self.as_raw_fd(), None)
                .map_err(|e| Error::os(Verb::GetCqEvent, e))?;
        }
    }

    /// `ibv_get_cq_event` without waiting: `None` when no event waits (EAGAIN on the
    /// O_NONBLOCK fd).
    ///
    /// # Errors
    /// The errno of `ibv_get_cq_event` other than `EAGAIN` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)).
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// assert!(channel.try_get_cq_event()?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_get_cq_event(&self) -> Result<Option<CqEvent<'_>>> {
        let ch = self.as_raw();
        // SAFETY: a live channel.
        match unsafe { backend::of((*ch).context).get_cq_event(ch) } {
            // SAFETY: the CQ of an event of this channel was made by a builder (only they take
            // a CompChannel) and is live until the event is acked; the event was just got.
            Ok((cq, cq_context)) => Ok(Some(unsafe { CqEvent::got(cq, cq_context) })),
            Err(libc::EAGAIN) => Ok(None),
            Err(e) => Err(Error::os(Verb::GetCqEvent, e)),
        }
    }
}

#[cfg(feature = "tokio")]
mod tokio_cq_events {
    use super::CqEvent;
    use crate::cq::channel::AsyncCompChannel;
    use crate::error::{Error, Result, Verb};

    impl<'a> AsyncCompChannel<'a, '_> {
        /// `ibv_get_cq_event`, awaiting the fd's readiness while no event waits.
        ///
        /// # Errors
        /// The errno of waiting for readiness, or of `ibv_get_cq_event`
        /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_cq_event`).
        ///
        /// ```
        /// # use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
        /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// rt.block_on(async {
        ///     let ctx = Context::open("sw0")?;
        ///     let channel = CompChannel::new(&ctx)?;
        ///     let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
        ///     let events = channel.cq_events()?;
        ///     cq.req_notify(false)?;
        ///     software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
        ///     drop(events.get_cq_event().await?); // acked
        ///     Ok::<(), typed_verbs::Error>(())
        /// })?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub async fn get_cq_event(&self) -> Result<CqEvent<'a>> {
            loop {
                let mut ready = self.fd.readable().await.map_err(|e| {
                    Error::os(Verb::GetCqEvent, e.raw_os_error().unwrap_or(libc::EIO))
                })?;
                match self.ch.try_get_cq_event()? {
                    Some(ev) => return Ok(ev),
                    // Another reader took it, or the readiness was stale: wait again.
                    None => ready.clear_ready(),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Completion events
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Async events
// ---------------------------------------------------------------------------------------------

/// The CQ an async event names. Compare it with [`is`](Self::is).
///
/// ```
/// use typed_verbs::{software, AsyncEvent, Context};
/// # use typed_verbs::ffi::sys::ibv_event_type::IBV_EVENT_PORT_ACTIVE;
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, IBV_EVENT_PORT_ACTIVE as u32, 1)?;
/// let event = ctx.get_async_event()?;
/// match *event {
///     AsyncEvent::CqErr(cq) => println!("CQ {:?} overran", cq.as_raw()), // compare with cq.is(&my_cq)
///     AsyncEvent::PortActive(port) => assert_eq!(port, 1),
///     other => println!("{other:?}"),
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqRef(usize);

impl CqRef {
    /// Whether this is `cq` (a [`Cq`] or a [`CqEx`]).
    ///
    /// ```
    /// use typed_verbs::{AsyncEvent, Context, Cq};
    /// let ctx = Context::open("sw0")?;
    /// let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let AsyncEvent::CqErr(r) = *ev { assert!(r.is(&cq)); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is<Q: AnyCq + ?Sized>(&self, cq: &Q) -> bool {
        self.0 == cq.as_raw_cq() as usize
    }
    /// The CQ's address. Only compare it: the CQ may have been destroyed since.
    ///
    /// ```
    /// # use typed_verbs::{AsyncEvent, Context};
    /// # let ctx = Context::open("sw0")?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let AsyncEvent::CqErr(r) = *ev { println!("CQ at {:p}", r.as_raw()); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_cq {
        self.0 as *mut sys::ibv_cq
    }
}

/// The QP an async event names: its number, and [`is`](Self::is) to compare it with a [`Qp`].
///
/// ```
/// use typed_verbs::{AsyncEvent, Context};
/// fn on_event(ctx: &Context) -> typed_verbs::Result<()> {
///     if let Some(event) = ctx.try_get_async_event()? {
///         if let AsyncEvent::QpFatal(qp) = *event {
///             eprintln!("QP {} went to ERR", qp.qp_num()); // or qp.is(&my_qp)
///         }
///     } // acked here
///     Ok(())
/// }
/// on_event(&Context::open("sw0")?)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpRef {
    qp_num: u32,
    raw: usize,
}

impl QpRef {
    /// The QP's number (`qp->qp_num`).
    ///
    /// ```
    /// use typed_verbs::{AsyncEvent, Context};
    /// let ctx = Context::open("sw0")?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let Some(qp) = ev.qp() { println!("event about QP {}", qp.qp_num()); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }
    /// Whether this is `qp`, in whatever state it is now.
    ///
    /// ```
    /// use typed_verbs::prelude::*;
    /// let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let Some(r) = ev.qp() { println!("ours: {}", r.is(&qp)); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>(
        &self,
        qp: &Qp<'_, T, R, S, C, St, SGE>,
    ) -> bool {
        self.raw == qp.as_raw() as usize
    }
    /// The QP's address. Only compare it: the QP may have been destroyed since.
    ///
    /// ```
    /// # use typed_verbs::{AsyncEvent, Context};
    /// # let ctx = Context::open("sw0")?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let Some(r) = ev.qp() { println!("QP at {:p}", r.as_raw()); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_qp {
        self.raw as *mut sys::ibv_qp
    }
}

/// The SRQ an async event names. Compare it with [`is`](Self::is).
///
/// ```
/// use typed_verbs::{AsyncEvent, Context, Pd, Srq};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let srq = Srq::builder(&pd).max_wr(16).build()?;
/// srq.arm_limit(4)?; // IBV_EVENT_SRQ_LIMIT_REACHED when fewer than 4 receives are left
/// if let Some(event) = ctx.try_get_async_event()? {
///     if let AsyncEvent::SrqLimitReached(r) = *event {
///         assert!(r.is(&srq));
///     }
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SrqRef(usize);

impl SrqRef {
    /// Whether this is `srq`.
    ///
    /// ```
    /// use typed_verbs::{AsyncEvent, Context, Pd, Srq};
    /// let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
    /// let srq = Srq::builder(&pd).max_wr(8).build()?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let AsyncEvent::SrqLimitReached(r) = *ev { assert!(r.is(&srq)); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is<C, const SGE: usize>(&self, srq: &Srq<'_, C, SGE>) -> bool {
        self.0 == srq.as_raw() as usize
    }
    /// The SRQ's address. Only compare it: the SRQ may have been destroyed since.
    ///
    /// ```
    /// # use typed_verbs::{AsyncEvent, Context};
    /// # let ctx = Context::open("sw0")?;
    /// if let Some(ev) = ctx.try_get_async_event()? {
    ///     if let AsyncEvent::SrqErr(r) = *ev { println!("SRQ at {:p}", r.as_raw()); }
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_srq {
        self.0 as *mut sys::ibv_srq
    }
}

/// An async event (`struct ibv_async_event`), by `enum ibv_event_type`, with the object or
/// port it is about. ibv_get_async_event(3) says what each means.
///
/// ```
/// use typed_verbs::{software, AsyncEvent, Context};
/// # use typed_verbs::ffi::sys::ibv_event_type::IBV_EVENT_PORT_ERR;
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, IBV_EVENT_PORT_ERR as u32, 1)?;
/// let event = ctx.get_async_event()?;
/// assert_eq!(*event, AsyncEvent::PortErr(1));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AsyncEvent {
    /// `IBV_EVENT_CQ_ERR`: "CQ is in error (CQ overrun)".
    CqErr(CqRef),
    /// `IBV_EVENT_QP_FATAL`: "Error occurred on a QP and it transitioned to error state".
    QpFatal(QpRef),
    /// `IBV_EVENT_QP_REQ_ERR`: "Invalid Request Local Work Queue Error".
    QpReqErr(QpRef),
    /// `IBV_EVENT_QP_ACCESS_ERR`: "Local access violation error".
    QpAccessErr(QpRef),
    /// `IBV_EVENT_COMM_EST`: "Communication was established on a QP".
    CommEst(QpRef),
    /// `IBV_EVENT_SQ_DRAINED`: "Send Queue was drained of outstanding messages in progress".
    SqDrained(QpRef),
    /// `IBV_EVENT_PATH_MIG`: "A connection has migrated to the alternate path".
    PathMig(QpRef),
    /// `IBV_EVENT_PATH_MIG_ERR`: "A connection failed to migrate to the alternate path".
    PathMigErr(QpRef),
    /// `IBV_EVENT_QP_LAST_WQE_REACHED`: "Last WQE Reached on a QP associated with an SRQ".
    LastWqeReached(QpRef),
    /// `IBV_EVENT_SRQ_ERR`: "Error occurred on an SRQ".
    SrqErr(SrqRef),
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`: "SRQ limit was reached" (the SRQ is disarmed).
    SrqLimitReached(SrqRef),
    /// `IBV_EVENT_PORT_ACTIVE`: "Link became active on a port".
    PortActive(u8),
    /// `IBV_EVENT_PORT_ERR`: "Link became unavailable on a port".
    PortErr(u8),
    /// `IBV_EVENT_LID_CHANGE`: "LID was changed on a port".
    LidChange(u8),
    /// `IBV_EVENT_PKEY_CHANGE`: "P_Key table was changed on a port".
    PkeyChange(u8),
    /// `IBV_EVENT_GID_CHANGE`: "GID table was changed on a port".
    GidChange(u8),
    /// `IBV_EVENT_SM_CHANGE`: "SM was changed on a port".
    SmChange(u8),
    /// `IBV_EVENT_CLIENT_REREGISTER`: "SM sent a CLIENT_REREGISTER request to a port".
    ClientReregister(u8),
    /// `IBV_EVENT_DEVICE_FATAL`: "CA is in FATAL state".
    DeviceFatal,
    /// An event type this crate does not name (`IBV_EVENT_WQ_FATAL`), or any value the build's
    /// headers do not know (a newer libibverbs or kernel may report one): the integer as C
    /// wrote it. Its element is not read.
    Other(u32),
}

impl AsyncEvent {
    /// The event's `enum ibv_event_type` value.
    ///
    /// ```
    /// use typed_verbs::{ffi::event_type, AsyncEvent};
    /// assert_eq!(AsyncEvent::PortActive(1).event_type(), event_type::PORT_ACTIVE);
    /// ```
    pub fn event_type(&self) -> u32 {
        use crate::ffi::event_type::*;
        match self {
            AsyncEvent::CqErr(_) => CQ_ERR,
            AsyncEvent::QpFatal(_) => QP_FATAL,
            AsyncEvent::QpReqErr(_) => QP_REQ_ERR,
            AsyncEvent::QpAccessErr(_) => QP_ACCESS_ERR,
            AsyncEvent::CommEst(_) => COMM_EST,
            AsyncEvent::SqDrained(_) => SQ_DRAINED,
            AsyncEvent::PathMig(_) => PATH_MIG,
            AsyncEvent::PathMigErr(_) => PATH_MIG_ERR,
            AsyncEvent::LastWqeReached(_) => QP_LAST_WQE_REACHED,
            AsyncEvent::SrqErr(_) => SRQ_ERR,
            AsyncEvent::SrqLimitReached(_) => SRQ_LIMIT_REACHED,
            AsyncEvent::PortActive(_) => PORT_ACTIVE,
            AsyncEvent::PortErr(_) => PORT_ERR,
            AsyncEvent::LidChange(_) => LID_CHANGE,
            AsyncEvent::PkeyChange(_) => PKEY_CHANGE,
            AsyncEvent::GidChange(_) => GID_CHANGE,
            AsyncEvent::SmChange(_) => SM_CHANGE,
            AsyncEvent::ClientReregister(_) => CLIENT_REREGISTER,
            AsyncEvent::DeviceFatal => DEVICE_FATAL,
            AsyncEvent::Other(t) => *t,
        }
    }

    /// The QP the event names, for the QP events.
    ///
    /// ```
    /// use typed_verbs::AsyncEvent;
    /// assert!(AsyncEvent::PortActive(1).qp().is_none()); // a port event names no QP
    /// ```
    pub fn qp(&self) -> Option<QpRef> {
        match *self {
            AsyncEvent::QpFatal(q)
            | AsyncEvent::QpReqErr(q)
            | AsyncEvent::QpAccessErr(q)
            | AsyncEvent::CommEst(q)
            | AsyncEvent::SqDrained(q)
            | AsyncEvent::PathMig(q)
            | AsyncEvent::PathMigErr(q)
            | AsyncEvent::LastWqeReached(q) => Some(q),
            _ => None,
        }
    }

    /// Types `ev`, reading what its element names while that object is live (the event is not
    /// acked yet).
    ///
    /// # Safety
    /// `ev` came from `ibv_get_async_event` and is not acked.
    unsafe fn from_raw(ev: &RawAsyncEvent) -> (AsyncEvent, usize) {
        use crate::ffi::event_type::*;
        // SAFETY: caller's contract: the union member read is the one the event type names,
        // and a named QP is live until the event is acked.
        unsafe {
            let qp = || {
                let p = ev.element.qp;
                (
                    QpRef {
                        qp_num: (*p).qp_num,
                        raw: p as usize,
                    },
                    p as usize,
                )
            };
            let port = || ev.element.port_num.clamp(0, 255) as u8;
            let srq = || ev.element.srq as usize;
            match ev.event_type {
                CQ_ERR => {
                    let p = ev.element.cq as usize;
                    (AsyncEvent::CqErr(CqRef(p)), p)
                }
                QP_FATAL => {
                    let (q, p) = qp();
                    (AsyncEvent::QpFatal(q), p)
                }
                QP_REQ_ERR => {
                    let (q, p) = qp();
                    (AsyncEvent::QpReqErr(q), p)
                }
                QP_ACCESS_ERR => {
                    let (q, p) = qp();
                    (AsyncEvent::QpAccessErr(q), p)
                }
                COMM_EST => {
                    let (q, p) = qp();
                    (AsyncEvent::CommEst(q), p)
                }
                SQ_DRAINED => {
                    let (q, p) = qp();
                    (AsyncEvent::SqDrained(q), p)
                }
                PATH_MIG => {
                    let (q, p) = qp();
                    (AsyncEvent::PathMig(q), p)
                }
                PATH_MIG_ERR => {
                    let (q, p) = qp();
                    (AsyncEvent::PathMigErr(q), p)
                }
                QP_LAST_WQE_REACHED => {
                    let (q, p) = qp();
                    (AsyncEvent::LastWqeReached(q), p)
                }
                SRQ_ERR => (AsyncEvent::SrqErr(SrqRef(srq())), srq()),
                SRQ_LIMIT_REACHED => (AsyncEvent::SrqLimitReached(SrqRef(srq())), srq()),
                PORT_ACTIVE => (AsyncEvent::PortActive(port()), 0),
                PORT_ERR => (AsyncEvent::PortErr(port()), 0),
                LID_CHANGE => (AsyncEvent::LidChange(port()), 0),
                PKEY_CHANGE => (AsyncEvent::PkeyChange(port()), 0),
                GID_CHANGE => (AsyncEvent::GidChange(port()), 0),
                SM_CHANGE => (AsyncEvent::SmChange(port()), 0),
                CLIENT_REREGISTER => (AsyncEvent::ClientReregister(port()), 0),
                DEVICE_FATAL => (AsyncEvent::DeviceFatal, 0),
                // A WQ (the crate makes none), or a type newer than the build's headers (an
                // integer, so any value is fine): the element's bits as they came, so that
                // the ack passes them back.
                other => (AsyncEvent::Other(other), ev.element.wq as usize),
            }
        }
    }
}

/// An async event got and not yet acked, as `ibv_get_async_event` returned it.
#[derive(Clone, Copy)]
struct RawEvent {
    /// `enum ibv_event_type`, as the integer C wrote.
    ty: u32,
    /// The element, as an address (or the port number).
    element: usize,
}

impl RawEvent {
    fn to_raw(self, event: &AsyncEvent) -> RawAsyncEvent {
        let mut raw = RawAsyncEvent::zeroed();
        raw.event_type = self.ty;
        // Each member written in place, so the zeroed bytes a narrower one leaves stay zero.
        match event {
            AsyncEvent::CqErr(_) => raw.element.cq = self.element as *mut sys::ibv_cq,
            AsyncEvent::SrqErr(_) | AsyncEvent::SrqLimitReached(_) => {
                raw.element.srq = self.element as *mut sys::ibv_srq
            }
            e if e.qp().is_some() => raw.element.qp = self.element as *mut sys::ibv_qp,
            AsyncEvent::Other(_) => raw.element.wq = self.element as *mut sys::ibv_wq,
            _ => raw.element.port_num = self.element as i32,
        }
        raw
    }
}

/// One async event's ack, done once: by its guard's drop, or by the destroy of its object.
struct AsyncSlot {
    ctx: usize,
    event: AsyncEvent,
    pending: Mutex<Option<RawEvent>>,
}

impl crate::raw::destroying::Ack for AsyncSlot {
    fn ack(&self) {
        let mut p = self.pending.lock();
        if let Some(raw) = p.take() {
            let mut ev = raw.to_raw(&self.event);
            let ctx = self.ctx as *mut sys::ibv_context;
            // SAFETY: an event got and not acked (taken under the lock, so acked once); its
            // context is live (the guard borrows it, or the object being destroyed is of it),
            // and so is its object (its destroy waits for this ack).
            unsafe { backend::of(ctx).ack_async_event(&mut ev) };
        }
    }
}

/// An async event, acked (`ibv_ack_async_event`) when dropped. It derefs to the
/// [`AsyncEvent`].
///
/// If the object it names is destroyed while the guard is held, the destroy acks it first;
/// the guard then acks nothing.
///
/// ```
/// use typed_verbs::{software, AsyncEvent, Context};
/// # use typed_verbs::ffi::sys::ibv_event_type::IBV_EVENT_PORT_ACTIVE;
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, IBV_EVENT_PORT_ACTIVE as u32, 1)?;
/// let guard = ctx.get_async_event()?;
/// assert_eq!(guard.event(), AsyncEvent::PortActive(1));
/// guard.ack(); // ibv_ack_async_event (dropping it does the same)
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct AsyncEventGuard<'ctx> {
    slot: Arc<AsyncSlot>,
    object: usize,
    _ctx: PhantomData<&'ctx Context>,
}

impl AsyncEventGuard<'_> {
    /// The event.
    ///
    /// ```
    /// use typed_verbs::{software, AsyncEvent, Context};
    /// let ctx = Context::open("sw0")?;
    /// software::raise_port_event(&ctx, typed_verbs::ffi::event_type::PORT_ACTIVE, 1)?;
    /// assert_eq!(ctx.get_async_event()?.event(), AsyncEvent::PortActive(1));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn event(&self) -> AsyncEvent {
        self.slot.event
    }

    /// Acks the event now (as dropping it does).
    ///
    /// ```
    /// use typed_verbs::{software, Context};
    /// let ctx = Context::open("sw0")?;
    /// software::raise_port_event(&ctx, typed_verbs::ffi::event_type::PORT_ACTIVE, 1)?;
    /// ctx.get_async_event()?.ack(); // ibv_ack_async_event
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn ack(self) {}
}

impl std::ops::Deref for AsyncEventGuard<'_> {
    type Target = AsyncEvent;
    fn deref(&self) -> &AsyncEvent {
        &self.slot.event
    }
}

impl Drop for AsyncEventGuard<'_> {
    fn drop(&mut self) {
        self.slot.ack();
        if self.object != 0 {
            crate::raw::destroying::release(self.object, Arc::as_ptr(&self.slot).cast());
        }
    }
}

impl std::fmt::Debug for AsyncEventGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.slot.event.fmt(f)
    }
}

impl Context {
    /// The number of the context's async event fd (`context->async_fd`), to register with
    /// poll/epoll/mio: readable while an event waits. Only the number: a
    /// [`BorrowedFd`](std::os::fd::BorrowedFd) would let safe code read an event that is
    /// never acked (see the [module docs](crate::event)). It is made O_NONBLOCK by the first
    /// [`get_async_event`](Self::get_async_event) or
    /// [`try_get_async_event`](Self::try_get_async_event). Fails with EBADF (naming
    /// `ibv_get_async_event`) for a context without one: a software context opened when no
    /// eventfd could be made.
    ///
    /// # Errors
    /// `EBADF` ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_async_event`) for a context
    /// without an async fd.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let fd = ctx.async_fd()?; // register with epoll; read events with try_get_async_event
    /// assert!(fd >= 0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn async_fd(&self) -> Result<RawFd> {
        // SAFETY: a live context; the field is set at open.
        let fd = unsafe { (*self.as_raw()).async_fd };
        if fd < 0 {
            return Err(Error::os(Verb::GetAsyncEvent, libc::EBADF));
        }
        Ok(fd)
    }

    /// Waits (in poll(2)) until the async event fd is readable, that is until an async event
    /// waits, for at most `timeout` (`None`: without a limit). Whether it became readable.
    /// Nothing is read: [`try_get_async_event`](Self::try_get_async_event) takes the event.
    ///
    /// # Errors
    /// As [`async_fd`](Self::async_fd), or poll(2)'s errno other than `EINTR`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(!ctx.wait_async_readable(Some(Duration::from_millis(1)))?); // nothing happened
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn wait_async_readable(&self, timeout: Option<Duration>) -> Result<bool> {
        let fd = self.async_fd()?;
        crate::ffi::fd::wait_readable(fd, timeout).map_err(|e| Error::os(Verb::GetAsyncEvent, e))
    }

    /// `ibv_get_async_event`, blocking until there is an event. The guard acks it when
    /// dropped.
    ///
    /// # Errors
    /// The errno of `ibv_get_async_event` or of poll(2) while waiting
    /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_async_event`).
    ///
    /// ```
    /// # use typed_verbs::{software, AsyncEvent, Context};
    /// # use typed_verbs::ffi::sys::ibv_event_type::IBV_EVENT_PORT_ACTIVE;
    /// let ctx = Context::open("sw0")?;
    /// software::raise_port_event(&ctx, IBV_EVENT_PORT_ACTIVE as u32, 1)?;
    /// assert_eq!(*ctx.get_async_event()?, AsyncEvent::PortActive(1));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn get_async_event(&self) -> Result<AsyncEventGuard<'_>> {
        loop {
            if let Some(ev) = self.try_get_async_event()? {
                return Ok(ev);
            }
            // SAFETY: a live context's async fd.
            let fd = unsafe { (*self.as_raw()).async_fd };
            crate::ffi::fd::wait_readable(fd, None)
                .map_err(|e| Error::os(Verb::GetAsyncEvent, e))?;
        }
    }

    /// `ibv_get_async_event` on the O_NONBLOCK async fd: `None` when no event waits (EAGAIN).
    ///
    /// # Errors
    /// The errno of `ibv_get_async_event` other than `EAGAIN`, or of making the fd O_NONBLOCK
    /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os)).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(ctx.try_get_async_event()?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_get_async_event(&self) -> Result<Option<AsyncEventGuard<'_>>> {
        let ctx = self.as_raw();
        // SAFETY: a live context's async fd.
        crate::ffi::fd::set_nonblocking(unsafe { (*ctx).async_fd })
            .map_err(|e| Error::os(Verb::GetAsyncEvent, e))?;
        // Zeroed, so every byte of the union is initialised whichever member C writes.
        let mut raw = RawAsyncEvent::zeroed();
        // SAFETY: a live context; `raw` valid for writes.
        match unsafe { backend::of(ctx).get_async_event(ctx, &mut raw) } {
            Ok(()) => {}
            Err(libc::EAGAIN) => return Ok(None),
            Err(e) => return Err(Error::os(Verb::GetAsyncEvent, e)),
        }
        // SAFETY: just got, not acked.
        let (event, object) = unsafe { AsyncEvent::from_raw(&raw) };
        let element = match event {
            AsyncEvent::PortActive(p)
            | AsyncEvent::PortErr(p)
            | AsyncEvent::LidChange(p)
            | AsyncEvent::PkeyChange(p)
            | AsyncEvent::GidChange(p)
            | AsyncEvent::SmChange(p)
            | AsyncEvent::ClientReregister(p) => p as usize,
            _ => object,
        };
        let slot = Arc::new(AsyncSlot {
            ctx: ctx as usize,
            event,
            pending: Mutex::new(Some(RawEvent {
                ty: raw.event_type,
                element,
            })),
        });
        // While its object's destroy is in progress, the destroy waits for this ack: `hold`
        // gives it now (the event is still returned, for what it says).
        if object != 0 {
            crate::raw::destroying::hold(object, slot.clone());
        }
        Ok(Some(AsyncEventGuard {
            slot,
            object,
            _ctx: PhantomData,
        }))
    }
}
