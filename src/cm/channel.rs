//! The event channel and its demultiplexer: each id's events, in order, to the id's owner.

use super::*;

/// One event as the crate copied it from an `rdma_cm_event` (acked right after the copy).
pub(super) struct Copied {
    /// `enum rdma_cm_event_type`, read as an integer.
    pub(super) kind: u32,
    pub(super) status: i32,
    pub(super) private_data: Vec<u8>,
    pub(super) conn: PeerParam,
    pub(super) ud: Option<UdPeer>,
    /// The new id of a `RDMA_CM_EVENT_CONNECT_REQUEST` (for that event type only).
    pub(super) child: Option<OwnedId>,
}

/// What the demultiplexer hands back to run after its lock is released: events nobody will
/// read (a connect request's id among them destroys itself on drop) and the wakers of the tasks
/// an event was routed to. No user code (a waker, a drop) runs under the lock.
#[derive(Default)]
pub(super) struct AfterUnlock {
    events: Vec<Copied>,
    #[cfg(feature = "tokio")]
    wakers: Vec<std::task::Waker>,
}

impl AfterUnlock {
    /// Runs it (the lock is released).
    pub(super) fn run(&mut self) {
        self.events.clear();
        #[cfg(feature = "tokio")]
        wake_all(self.wakers.drain(..));
    }
}

/// Wakes every waker, even after one panicked (a waker is user code): each task whose event was
/// routed is woken. The first panic is raised again once all are woken (unless the thread is
/// already unwinding, where a second panic would abort).
#[cfg(feature = "tokio")]
pub(super) fn wake_all(wakers: impl IntoIterator<Item = std::task::Waker>) {
    let mut first = None;
    for w in wakers {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
        if let Err(p) = r {
            first.get_or_insert(p);
        }
    }
    if let Some(p) = first {
        if !std::thread::panicking() {
            std::panic::resume_unwind(p);
        }
    }
}

impl Drop for AfterUnlock {
    fn drop(&mut self) {
        self.run();
    }
}

/// One id's events, in order, and the tasks waiting for them (several may wait on one id
/// through `&self`, as tasks sharing a listener do: each keeps its own waker).
#[derive(Default)]
pub(super) struct Queue {
    pub(super) events: VecDeque<Copied>,
    #[cfg(feature = "tokio")]
    pub(super) wakers: Vec<std::task::Waker>,
}

#[derive(Default)]
pub(super) struct Demux {
    /// The queues of the live ids, by token.
    pub(super) queues: HashMap<usize, Queue>,
    /// A thread is polling the fd for the blocking waiters.
    leader: bool,
}

pub(super) struct ChanInner {
    pub(super) raw: NonNull<sys::rdma_event_channel>,
    pub(super) cm: &'static dyn CmPath,
    pub(super) demux: Mutex<Demux>,
    pub(super) cond: Condvar,
    next_token: AtomicUsize,
}

// SAFETY: the channel pointer is used for `rdma_get_cm_event` under the demultiplexer's lock
// only and for the destroy in Drop (no other reference left); librdmacm's channel has no
// thread affinity. The backend is `Sync`.
unsafe impl Send for ChanInner {}
// SAFETY: as above: shared access reads events under the lock.
unsafe impl Sync for ChanInner {}

impl Drop for ChanInner {
    fn drop(&mut self) {
        // Queued events of ids that are gone (none: each id removes its queue, and holds the
        // channel), dropped before the channel.
        let queues = std::mem::take(&mut self.demux.lock().queues);
        drop(queues);
        // SAFETY: the last reference: every id of the channel held one and is destroyed, and
        // every event read was acked when it was read (rdma_destroy_event_channel(3): "All
        // rdma_cm_id's associated with the event channel must be destroyed, and all returned
        // events must be acked before calling this function").
        unsafe { self.cm.destroy_event_channel(self.raw.as_ptr()) }
    }
}

/// What a wait ended with.
pub(super) enum Waited {
    Event(Copied),
    TimedOut,
}

impl ChanInner {
    pub(super) fn fd(&self) -> i32 {
        // SAFETY: a live channel; `fd` is fixed at creation.
        unsafe { (*self.raw.as_ptr()).fd }
    }

    pub(super) fn register(&self) -> usize {
        // Tokens start at 1: a NULL `context` is never one.
        let token = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
        self.demux.lock().queues.insert(token, Queue::default());
        token
    }

    /// Removes `token`'s queue; its events (and a connect request's id in them) are dropped
    /// by the caller after the lock is released.
    pub(super) fn unregister(&self, token: usize) -> Option<Queue> {
        self.demux.lock().queues.remove(&token)
    }

    /// Reads every event waiting on the fd (O_NONBLOCK), copies and acks each, and routes it.
    /// Returns whether any was routed, and what must be dropped outside the lock.
    pub(super) fn drain(
        self: &Arc<Self>,
        demux: &mut Demux,
        later: &mut AfterUnlock,
    ) -> Result<bool> {
        let mut routed = false;
        loop {
            // SAFETY: a live channel of this backend; the lock serializes readers.
            let ev = match unsafe { self.cm.get_cm_event(self.raw.as_ptr()) } {
                Ok(ev) => ev,
                Err(e) if e == libc::EAGAIN || e == libc::EWOULDBLOCK => return Ok(routed),
                Err(libc::EINTR) => continue,
                Err(e) => return Err(Error::os(Verb::GetCmEvent, e)),
            };
            // SAFETY: an event just returned and not acked: it and the ids it names are live.
            let (token, copied) = unsafe { self.copy_event(ev.as_ptr(), demux) };
            // SAFETY: acked once, here, right after the copy; nothing of it is kept (the
            // private data was copied). rdma_ack_cm_event(3): "there should be a one-to-one
            // correspondence between successful gets and acks".
            let acked = unsafe { self.cm.ack_cm_event(ev.as_ptr()) };
            if let Err(e) = acked {
                later.events.push(copied);
                return Err(Error::os(Verb::AckCmEvent, e));
            }
            match demux.queues.get_mut(&token) {
                Some(q) => {
                    q.events.push_back(copied);
                    #[cfg(feature = "tokio")]
                    later.wakers.append(&mut q.wakers);
                    routed = true;
                }
                // An id destroyed meanwhile: dropped (a request's new id rejected and
                // destroyed) once the lock is released.
                None => later.events.push(copied),
            }
        }
    }

    /// Copies the event at `ev`. For a connect request, the new id gets a token (its own
    /// queue) and becomes an owned handle.
    ///
    /// # Safety
    /// `ev` is an event of this channel, not acked.
    unsafe fn copy_event(
        self: &Arc<Self>,
        ev: *const sys::rdma_cm_event,
        demux: &mut Demux,
    ) -> (usize, Copied) {
        // SAFETY: caller's contract: the event, its id (and listen_id) live until the ack.
        unsafe {
            // `enum rdma_cm_event_type` as C wrote it: rdma-sys binds it as an integer.
            let kind: u32 = (*ev).event;
            let status = (*ev).status;
            let id = (*ev).id;
            let ps: u32 = if id.is_null() { 0 } else { (*id).ps };
            let is_ud = ps == sys::rdma_port_space::RDMA_PS_UDP
                || ps == sys::rdma_port_space::RDMA_PS_IPOIB;
            let (data, len) = if is_ud {
                let ud = &(*ev).param.ud;
                (ud.private_data, ud.private_data_len)
            } else {
                let c = &(*ev).param.conn;
                (c.private_data, c.private_data_len)
            };
            let private_data = if data.is_null() || len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), len.into()).to_vec()
            };
            let conn = if is_ud {
                PeerParam::default()
            } else {
                let c = &(*ev).param.conn;
                PeerParam {
                    responder_resources: c.responder_resources,
                    initiator_depth: c.initiator_depth,
                    flow_control: c.flow_control,
                    retry_count: c.retry_count,
                    rnr_retry_count: c.rnr_retry_count,
                    srq: c.srq != 0,
                    qp_num: c.qp_num,
                }
            };
            let ud =
                (is_ud && kind == sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED).then(|| {
                    let u = &(*ev).param.ud;
                    UdPeer {
                        av: av_of(&u.ah_attr),
                        qp_num: u.qp_num,
                        qkey: u.qkey,
                    }
                });
            let (token, child) = if kind == sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
                // rdma_get_cm_event(3): "If the event type is RDMA_CM_EVENT_CONNECT_REQUEST,
                // then this references a new id for that communication", and `listen_id`
                // "references the corresponding listening request identifier". The new id
                // inherited the listener's context: it gets its own token before anything
                // else reads it.
                let listen = (*ev).listen_id;
                let token = if listen.is_null() {
                    0
                } else {
                    (*listen).context as usize
                };
                let child = NonNull::new(id).map(|raw| {
                    let t = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
                    (*raw.as_ptr()).context = t as *mut c_void;
                    demux.queues.insert(t, Queue::default());
                    OwnedId {
                        raw,
                        chan: Arc::clone(self),
                        token: t,
                        reject_on_drop: true,
                    }
                });
                (token, child)
            } else {
                // Any other event's id is an existing id, never a new one.
                let token = if id.is_null() {
                    0
                } else {
                    (*id).context as usize
                };
                (token, None)
            };
            (
                token,
                Copied {
                    kind,
                    status,
                    private_data,
                    conn,
                    ud,
                    child,
                },
            )
        }
    }

    /// Waits for the next event of `token` until `deadline` (`None`: for ever). Threads waiting
    /// for different ids share the fd: one polls it and routes what it reads; the others wait
    /// on the condition variable.
    pub(super) fn wait(
        self: &Arc<Self>,
        token: usize,
        deadline: Option<Instant>,
    ) -> Result<Waited> {
        /// Gives the poller's role back (and wakes a waiter to take it), whatever happens.
        struct Leading<'a>(&'a ChanInner);
        impl Drop for Leading<'_> {
            fn drop(&mut self) {
                self.0.demux.lock().leader = false;
                self.0.cond.notify_all();
            }
        }
        // Declared before the loop: what the poller hands back runs after it has given its role
        // back (`_leading`, dropped when the loop is left).
        let mut later = AfterUnlock::default();
        let r = loop {
            let mut d = self.demux.lock();
            if let Some(ev) = d.queues.get_mut(&token).and_then(|q| q.events.pop_front()) {
                break Ok(Waited::Event(ev));
            }
            if d.leader {
                let now = Instant::now();
                if deadline.is_some_and(|t| now >= t) {
                    break Ok(Waited::TimedOut);
                }
                // Bounded so that an event routed by an async reader is seen too.
                let slice = now + Duration::from_millis(50);
                let until = deadline.map_or(slice, |t| t.min(slice));
                self.cond.wait_until(&mut d, until);
                continue;
            }
            d.leader = true;
            drop(d);
            // Declared after the lock's guard is gone: its drop takes the lock.
            let _leading = Leading(self);
            break self.lead(token, deadline, &mut later);
        };
        drop(later);
        r
    }

    /// The poller's loop: read and route what the fd has, and wait on the fd, until `token`
    /// has an event or `deadline` passes.
    fn lead(
        self: &Arc<Self>,
        token: usize,
        deadline: Option<Instant>,
        later: &mut AfterUnlock,
    ) -> Result<Waited> {
        loop {
            {
                let mut d = self.demux.lock();
                let routed = self.drain(&mut d, later)?;
                if routed {
                    self.cond.notify_all();
                }
                if let Some(ev) = d.queues.get_mut(&token).and_then(|q| q.events.pop_front()) {
                    return Ok(Waited::Event(ev));
                }
            }
            // Outside the lock: a request's id destroys itself through it; wakers are user code.
            later.run();
            let now = Instant::now();
            if deadline.is_some_and(|t| now >= t) {
                return Ok(Waited::TimedOut);
            }
            let slice = Duration::from_millis(50);
            let wait = deadline.map_or(slice, |t| (t - now).min(slice));
            let mut pfd = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = wait.as_millis().clamp(1, 50) as i32;
            // SAFETY: one valid pollfd; the fd is the channel's, open while `self` lives.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if e != libc::EINTR {
                    return Err(Error::os(Verb::GetCmEvent, e));
                }
            }
        }
    }
}

/// An event channel (`rdma_create_event_channel`): the events of every [`CmId`] made on it
/// arrive here and are routed to their id. Cheap to clone (a reference count); `Send + Sync`
/// and `'static`, so servers keep it in a struct or a task. Destroyed after its last clone and
/// its last id.
///
/// rdma_create_event_channel(3): "Asynchronous events are reported to users through event
/// channels."
///
/// ```
/// use typed_verbs::{cm::EventChannel, Context};
/// let ctx = Context::open("sw0")?;
/// let ch = EventChannel::new(&ctx)?;
/// let shared = ch.clone();
/// std::thread::spawn(move || drop(shared)).join().unwrap();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone)]
pub struct EventChannel {
    pub(super) inner: Arc<ChanInner>,
}

static_assertions::assert_impl_all!(EventChannel: Send, Sync);

impl std::fmt::Debug for EventChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel")
            .field("fd", &self.inner.fd())
            .finish()
    }
}

impl EventChannel {
    /// `rdma_create_event_channel` on the connection manager of `ctx`'s device: librdmacm for
    /// a real device, the in-process one for the software device. The channel's fd is made
    /// O_NONBLOCK (the crate waits with poll(2)). The channel does not borrow `ctx`: librdmacm's
    /// channel is independent of any context; the software device's counts as a live object of
    /// `ctx`, so closing `ctx` before the channel and its ids are gone fails with `EBUSY`
    /// ([`Context::try_close`]), and a `Context` dropped then stays open (a leak, never a
    /// dangling channel). Keep the context (an `Arc<Context>`) as long as the channel.
    ///
    /// # Errors
    /// `EOPNOTSUPP` where the device has no connection manager; otherwise the errno of
    /// `rdma_create_event_channel` (`ENODEV` without the kernel's `rdma_ucm`) or of making the
    /// fd non-blocking. The verb is [`Verb::CreateEventChannel`].
    ///
    /// ```
    /// # use typed_verbs::{cm::EventChannel, Context};
    /// let ctx = Context::open("sw0")?;
    /// let ch = EventChannel::new(&ctx)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(ctx: &Context) -> Result<EventChannel> {
        let verb = Verb::CreateEventChannel;
        // SAFETY: a live context of this crate.
        let cm = unsafe { cm_of(ctx.as_raw()) }.ok_or(Error::os(verb, libc::EOPNOTSUPP))?;
        // SAFETY: a live context, of the backend `cm` was chosen for.
        let raw =
            unsafe { cm.create_event_channel(ctx.as_raw()) }.map_err(|e| Error::os(verb, e))?;
        let inner = Arc::new(ChanInner {
            raw,
            cm,
            demux: Mutex::new(Demux::default()),
            cond: Condvar::new(),
            next_token: AtomicUsize::new(0),
        });
        let fd = inner.fd();
        // SAFETY: fcntl on the channel's open fd (dropping `inner` on error destroys it).
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(Error::last_os(verb));
        }
        Ok(EventChannel { inner })
    }

    /// The channel's file descriptor (O_NONBLOCK; readable while an event waits). Owned by the
    /// channel: register it with a poller, never close it.
    ///
    /// ```
    /// # use typed_verbs::{cm::EventChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let ch = EventChannel::new(&ctx)?;
    /// assert!(ch.fd() >= 0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn fd(&self) -> i32 {
        self.inner.fd()
    }
}
