//! Completion channels (ibv_create_comp_channel(3)): a file descriptor on which an armed CQ
//! signals that a completion arrived, so that a thread can sleep instead of polling.
//!
//! ```
//! use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
//! let ctx = Context::open("sw0")?;
//! let channel = CompChannel::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
//! cq.req_notify(false)?;
//! software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?; // a completion arrives
//! let event = channel.get_cq_event()?; // sleeps in poll(2) until then
//! assert!(event.is_for(&cq));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The events themselves, and how each is acknowledged exactly once, are in [`crate::event`];
//! the guide's [guarantees](crate::guide::guarantees) page says why an event held or leaked
//! never makes a CQ's destroy wait.

use crate::backend;
use crate::device::Context;
use crate::error::{Error, Result, Verb};
use crate::ffi::fd;
use crate::ffi::sys;
use crate::object::parent::Parent;
use crate::object::Node;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::time::Duration;

/// A completion event channel: "essentially a file descriptor that is used to deliver
/// completion notifications". The fd is readable while an event waits: wait for that with
/// [`wait_readable`](Self::wait_readable), with tokio through
/// `cq_events` (feature `tokio`), or register its number
/// ([`AsRawFd`]) with poll/epoll/mio yourself.
///
/// The channel hands out the fd's number only, never a [`BorrowedFd`](std::os::fd::BorrowedFd)
/// (it is not [`AsFd`](std::os::fd::AsFd)): with one, safe code could `dup` the fd and `read`
/// an event that libibverbs then never acks, and the CQ's destroy would wait for that ack
/// forever. Reading a raw fd number takes `unsafe`, so only code that promises not to consume
/// from it can.
///
/// The fd is made O_NONBLOCK when the channel is created, as rdma-core's users do to poll it:
/// [`try_get_cq_event`](Self::try_get_cq_event) then never blocks, and
/// [`get_cq_event`](Self::get_cq_event) blocks in poll(2) until an event comes. (A C caller of
/// `ibv_get_cq_event` on [`as_raw`](Self::as_raw) gets EAGAIN instead of blocking.)
///
/// "ibv_destroy_comp_channel() fails if any CQs are still associated with the completion event
/// channel": a CQ created with a channel holds it (borrowed, or shared through an `Arc`:
/// [`crate::object::parent`]), so that is a compile-time fact here.
///
/// ```
/// use typed_verbs::{CompChannel, Context, CqEx, Standard};
/// let ctx = Context::open("sw0")?;
/// let channel = CompChannel::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
/// cq.req_notify(false)?; // the next completion raises an event on `channel`
/// assert!(channel.try_get_cq_event()?.is_none()); // none yet
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct CompChannel<'ctx> {
    node: NonNull<Node<sys::ibv_comp_channel>>,
    _ctx: PhantomData<&'ctx Context>,
}

// SAFETY: the channel is an fd plus immutable fields.
unsafe impl Send for CompChannel<'_> {}
// SAFETY: as above.
unsafe impl Sync for CompChannel<'_> {}

impl<'ctx> CompChannel<'ctx> {
    /// `ibv_create_comp_channel` on `ctx`: `&ctx`, or `&Arc<Context>` for a channel that keeps
    /// its context alive ([`crate::object::parent`]).
    ///
    /// # Errors
    /// The errno of `ibv_create_comp_channel` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)): `EMFILE`
    /// or `ENFILE` when no fd is left, `ENOMEM`; or of making its fd O_NONBLOCK (`fcntl`), the
    /// channel then destroyed.
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context};
    /// let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// # drop(channel);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(ctx: impl Parent<'ctx, Target = Context>) -> Result<Self> {
        let ctx = ctx.into_held();
        let c = ctx.get().as_raw();
        // SAFETY: a live context.
        let raw = unsafe { backend::of(c).create_comp_channel(c) }
            .map_err(|e| Error::os(Verb::CreateCompChannel, e))?;
        let ch = CompChannel {
            node: Node::into_handle(raw, ctx.into_keep()),
            _ctx: PhantomData,
        };
        // On failure `ch` is dropped: ibv_destroy_comp_channel.
        fd::set_nonblocking(ch.as_raw_fd()).map_err(|e| Error::os(Verb::CreateCompChannel, e))?;
        Ok(ch)
    }

    /// Waits (in poll(2)) until the channel's fd is readable, that is until a completion event
    /// waits, for at most `timeout` (`None`: without a limit). Whether it became readable.
    /// Nothing is read: [`try_get_cq_event`](Self::try_get_cq_event) takes the event. Another
    /// thread may take it first, so `true` is a hint, as readiness always is.
    ///
    /// # Errors
    /// The errno of poll(2) other than `EINTR` ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb
    /// `ibv_get_cq_event`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{CompChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// assert!(!channel.wait_readable(Some(Duration::from_millis(1)))?); // no event: timed out
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn wait_readable(&self, timeout: Option<Duration>) -> Result<bool> {
        fd::wait_readable(self.as_raw_fd(), timeout).map_err(|e| Error::os(Verb::GetCqEvent, e))
    }
}

/// The fd's number, for poll/epoll/mio registration: readable while an event waits. Not
/// [`AsFd`](std::os::fd::AsFd), on purpose (see [`CompChannel`]).
impl AsRawFd for CompChannel<'_> {
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: a live channel; `fd` is written once at creation.
        unsafe { (*self.as_raw()).fd }
    }
}

crate::object::node_handle! {
    CompChannel<'ctx>: sys::ibv_comp_channel,
    what: "channel",
    verb: "`ibv_destroy_comp_channel`",
    as_raw:
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let channel = typed_verbs::CompChannel::new(&ctx)?;
    /// assert_eq!(unsafe { (*channel.as_raw()).fd }, std::os::fd::AsRawFd::as_raw_fd(&channel));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy:
    ///
    /// # Errors
    /// The errno of `ibv_destroy_comp_channel` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)): `EBUSY`
    /// while a CQ still uses the channel, which only a leaked CQ can (a CQ holds its channel).
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// channel.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    try_destroy:
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`](crate::error::DestroyError) holds the channel, still open.
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// channel.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy_raw: |ch| {
        // SAFETY: a live channel, destroyed once with success (`destroy_raw`'s contract). A CQ
        // still using it (leaked, or queued to a batch's end) makes the destroy fail with EBUSY.
        unsafe { backend::of((*ch.as_raw()).context).destroy_comp_channel(ch.as_raw()) }
            .map_err(|e| Error::os(Verb::DestroyCompChannel, e))
    }
    drop_or_queue: destroy_channel
}

/// `ibv_destroy_comp_channel` of a channel whose handle is gone, then its node (which
/// releases the context it keeps); a channel that cannot be destroyed keeps both.
///
/// # Safety
/// `ch` is a live channel whose handle is gone and `node` its node, destroyed and freed once.
unsafe fn destroy_channel(ch: *mut std::os::raw::c_void, node: *mut std::os::raw::c_void) {
    let ch = ch.cast::<sys::ibv_comp_channel>();
    // SAFETY: caller's contract.
    unsafe {
        if backend::of((*ch).context).destroy_comp_channel(ch).is_ok() {
            Node::<sys::ibv_comp_channel>::free(node);
        }
    }
}

#[cfg(feature = "tokio")]
mod tokio_events {
    use super::CompChannel;
    use crate::error::{Error, Result, Verb};
    use std::os::fd::{AsRawFd, RawFd};
    use tokio::io::unix::AsyncFd;

    /// The channel's fd, borrowed (the channel owns and closes it).
    pub(crate) struct ChannelFd(RawFd);

    impl AsRawFd for ChannelFd {
        fn as_raw_fd(&self) -> RawFd {
            self.0
        }
    }

    /// A completion channel watched by tokio's reactor (feature `tokio`): made by
    /// [`CompChannel::cq_events`], it awaits completion events instead of blocking a thread.
    /// It borrows the channel, whose fd it deregisters when dropped.
    ///
    /// ```
    /// use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    /// rt.block_on(async {
    ///     let ctx = Context::open("sw0")?;
    ///     let channel = CompChannel::new(&ctx)?;
    ///     let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
    ///     let events = channel.cq_events()?;
    ///     cq.req_notify(false)?;
    ///     software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    ///     let event = events.get_cq_event().await?; // no thread blocked meanwhile
    ///     assert!(event.is_for(&cq));
    ///     Ok::<(), typed_verbs::Error>(())
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub struct AsyncCompChannel<'a, 'ctx> {
        pub(crate) ch: &'a CompChannel<'ctx>,
        pub(crate) fd: AsyncFd<ChannelFd>,
    }

    impl<'ctx> CompChannel<'ctx> {
        /// Registers the channel's (O_NONBLOCK) fd with the current tokio runtime's reactor.
        /// Fails (naming `ibv_get_cq_event`) outside a runtime (ENXIO) or when the
        /// registration fails.
        ///
        /// # Panics
        /// As tokio's `AsyncFd`, if the runtime was built without IO (`enable_io`).
        ///
        /// # Errors
        /// `ENXIO` ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_cq_event`) outside a tokio
        /// runtime; the errno of registering the fd with the reactor.
        ///
        /// ```
        /// # use typed_verbs::{CompChannel, Context};
        /// let ctx = Context::open("sw0")?;
        /// let channel = CompChannel::new(&ctx)?;
        /// assert!(channel.cq_events().is_err()); // no runtime here
        /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// let _guard = rt.enter();
        /// let events = channel.cq_events()?;
        /// # drop(events);
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
        pub fn cq_events(&self) -> Result<AsyncCompChannel<'_, 'ctx>> {
            if tokio::runtime::Handle::try_current().is_err() {
                return Err(Error::os(Verb::GetCqEvent, libc::ENXIO));
            }
            let inner = ChannelFd(self.as_raw_fd());
            // SAFETY: the fd is the channel's, open until the channel is destroyed, which the
            // borrow of `self` in the result prevents while the AsyncFd lives; ChannelFd always
            // returns that same fd.
            let fd =
                unsafe { AsyncFd::register_with_interest(inner, tokio::io::Interest::READABLE) }
                    .map_err(|e| {
                        let e = std::io::Error::from(e);
                        Error::os(Verb::GetCqEvent, e.raw_os_error().unwrap_or(libc::EIO))
                    })?;
            Ok(AsyncCompChannel { ch: self, fd })
        }
    }

    impl std::fmt::Debug for AsyncCompChannel<'_, '_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_tuple("AsyncCompChannel").field(&self.ch).finish()
        }
    }

    impl<'a> AsyncCompChannel<'a, '_> {
        /// The channel.
        ///
        /// ```
        /// # use typed_verbs::{CompChannel, Context};
        /// # let ctx = Context::open("sw0")?;
        /// # let channel = CompChannel::new(&ctx)?;
        /// # let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// # let _guard = rt.enter();
        /// let events = channel.cq_events()?;
        /// assert_eq!(events.channel().as_raw(), channel.as_raw());
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub fn channel(&self) -> &'a CompChannel<'a> {
            self.ch
        }
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use tokio_events::AsyncCompChannel;

impl crate::sealed::SealedParent for CompChannel<'_> {}
impl crate::object::parent::ParentObject for CompChannel<'_> {}
