//! Async events: the device's, a port's, a CQ's, a QP's and an SRQ's, and the object each names.

use super::*;

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
    /// acked yet): the event, the address of the object it names (0 for a port or the device),
    /// and its element as the ack passes it back (an address, or the port number).
    ///
    /// # Safety
    /// `ev` came from `ibv_get_async_event` and is not acked.
    unsafe fn from_raw(ev: &RawAsyncEvent) -> (AsyncEvent, usize, usize) {
        use crate::ffi::event_type::*;
        // SAFETY: caller's contract: the union member read is the one the event type names,
        // and a named QP is live until the event is acked.
        unsafe {
            // A QP's event: `make` applied to the QP, whose address is both object and element.
            let qp = |make: fn(QpRef) -> AsyncEvent| {
                let p = ev.element.qp;
                let q = QpRef {
                    qp_num: (*p).qp_num,
                    raw: p as usize,
                };
                (make(q), p as usize, p as usize)
            };
            // A port's event: `make` applied to the port number, which is its element; no
            // object.
            let port = |make: fn(u8) -> AsyncEvent| {
                let p = ev.element.port_num.clamp(0, 255) as u8;
                (make(p), 0, usize::from(p))
            };
            let srq = || ev.element.srq as usize;
            match ev.event_type {
                CQ_ERR => {
                    let p = ev.element.cq as usize;
                    (AsyncEvent::CqErr(CqRef(p)), p, p)
                }
                QP_FATAL => qp(AsyncEvent::QpFatal),
                QP_REQ_ERR => qp(AsyncEvent::QpReqErr),
                QP_ACCESS_ERR => qp(AsyncEvent::QpAccessErr),
                COMM_EST => qp(AsyncEvent::CommEst),
                SQ_DRAINED => qp(AsyncEvent::SqDrained),
                PATH_MIG => qp(AsyncEvent::PathMig),
                PATH_MIG_ERR => qp(AsyncEvent::PathMigErr),
                QP_LAST_WQE_REACHED => qp(AsyncEvent::LastWqeReached),
                SRQ_ERR => (AsyncEvent::SrqErr(SrqRef(srq())), srq(), srq()),
                SRQ_LIMIT_REACHED => (AsyncEvent::SrqLimitReached(SrqRef(srq())), srq(), srq()),
                PORT_ACTIVE => port(AsyncEvent::PortActive),
                PORT_ERR => port(AsyncEvent::PortErr),
                LID_CHANGE => port(AsyncEvent::LidChange),
                PKEY_CHANGE => port(AsyncEvent::PkeyChange),
                GID_CHANGE => port(AsyncEvent::GidChange),
                SM_CHANGE => port(AsyncEvent::SmChange),
                CLIENT_REREGISTER => port(AsyncEvent::ClientReregister),
                DEVICE_FATAL => (AsyncEvent::DeviceFatal, 0, 0),
                // A WQ (the crate makes none), or a type newer than the build's headers (an
                // integer, so any value is fine): the element's bits as they came, so that
                // the ack passes them back.
                other => {
                    let p = ev.element.wq as usize;
                    (AsyncEvent::Other(other), p, p)
                }
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
        let (event, object, element) = unsafe { AsyncEvent::from_raw(&raw) };
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
