//! tokio: an id's events awaited by a task (the channel's fd in tokio's reactor).

use super::*;
use std::os::fd::{FromRawFd, OwnedFd};
use std::task::{Context as TaskCx, Poll};
use tokio::io::unix::AsyncFd;

impl ChanInner {
    /// The channel's fd for one wait, registered with the reactor of the runtime the wait
    /// runs in: a duplicate of it (the same open file), owned by the wait. Each wait has its
    /// own registration, so its task is woken by the fd whichever runtime it runs in and
    /// however many tasks wait (tokio wakes one reader's waker per registration).
    fn wait_fd(&self) -> Result<AsyncFd<OwnedFd>> {
        let verb = Verb::GetCmEvent;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::os(verb, libc::ENXIO));
        }
        // SAFETY: F_DUPFD_CLOEXEC on the channel's fd, open while `self` lives.
        let fd = unsafe { libc::fcntl(self.fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Error::last_os(verb));
        }
        // SAFETY: `fd` was just made by the dup and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the AsyncFd owns the fd, which it deregisters before it closes it.
        unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.map_err(|e| {
            let e = std::io::Error::from(e);
            Error::os(verb, e.raw_os_error().unwrap_or(libc::EIO))
        })
    }

    /// One poll of the wait for `token`'s next event.
    fn poll_event(
        self: &Arc<Self>,
        token: usize,
        afd: &AsyncFd<OwnedFd>,
        cx: &mut TaskCx<'_>,
        later: &mut AfterUnlock,
    ) -> Poll<Result<Copied>> {
        loop {
            // Cloned and (the one it replaces) dropped outside the lock: a waker's clone
            // and drop are user code.
            let waker = cx.waker().clone();
            let mut d = self.demux.lock();
            let routed = match self.drain(&mut d, later) {
                Ok(r) => r,
                Err(e) => return Poll::Ready(Err(e)),
            };
            if routed {
                self.cond.notify_all();
            }
            let Some(q) = d.queues.get_mut(&token) else {
                return Poll::Ready(Err(Error::os(Verb::GetCmEvent, libc::EBADF)));
            };
            if let Some(ev) = q.events.pop_front() {
                return Poll::Ready(Ok(ev));
            }
            // `will_wake` compares pointers only (no user code under the lock).
            let old = match q.wakers.iter_mut().find(|w| w.will_wake(&waker)) {
                Some(same) => Some(std::mem::replace(same, waker)),
                None => {
                    q.wakers.push(waker);
                    None
                }
            };
            drop(d);
            drop(old);
            match afd.poll_read_ready(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(Err(Error::os(
                        Verb::GetCmEvent,
                        e.raw_os_error().unwrap_or(libc::EIO),
                    )))
                }
                Poll::Ready(Ok(mut guard)) => {
                    // Drained again at the top; readiness is renewed by the next poll.
                    guard.clear_ready();
                }
            }
        }
    }

    /// Takes every waiting task's waker (`token`'s own among them, which cannot be told
    /// apart from another task's waiting on the same id) and wakes them, each then
    /// registering its waker again: no waker of a finished wait stays queued. A spurious
    /// wake of this task is harmless.
    fn forget_waker(&self, _token: usize) {
        let wakers: Vec<_> = {
            let mut d = self.demux.lock();
            d.queues
                .values_mut()
                .flat_map(|q| std::mem::take(&mut q.wakers))
                .collect()
        };
        // Outside the lock: wakers are user code.
        wake_all(wakers);
    }
}

impl OwnedId {
    /// The next event of this id, awaited.
    pub(super) async fn next_async(&self) -> Result<Copied> {
        /// Removes the waker when the wait ends or is cancelled.
        struct Forget<'a>(&'a OwnedId);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.chan.forget_waker(self.0.token);
            }
        }
        let _forget = Forget(self);
        let afd = self.chan.wait_fd()?;
        let mut later = AfterUnlock::default();
        let r = std::future::poll_fn(|cx| {
            let r = self.chan.poll_event(self.token, &afd, cx, &mut later);
            later.run();
            r
        })
        .await;
        r
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// [`resolve_addr`](Self::resolve_addr), awaited (feature `tokio`). The CM's `timeout`
    /// bounds it (its `RDMA_CM_EVENT_ADDR_ERROR` answers); a dropped future destroys the id.
    ///
    /// # Errors
    /// As [`resolve_addr`](Self::resolve_addr); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    /// rt.block_on(async {
    ///     let ctx = Context::open("sw0")?;
    ///     let ch = EventChannel::new(&ctx)?;
    ///     let id = CmId::<Tcp>::new(&ch)?.resolve_addr_async(None, "127.0.0.1:7471".parse().unwrap(), Duration::from_secs(2)).await?;
    ///     Ok::<(), typed_verbs::Error>(())
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub async fn resolve_addr_async(
        self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> Result<CmId<P, AddrResolved>>
    where
        S: CanResolveAddr,
    {
        self.start_resolve_addr(src, dst, timeout)?;
        let ev = self.id.next_async().await?;
        self.resolved(Verb::ResolveAddr, ADDR_RESOLVED, ev)
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// [`resolve_route`](Self::resolve_route), awaited (feature `tokio`).
    ///
    /// # Errors
    /// As [`resolve_route`](Self::resolve_route); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    /// rt.block_on(async {
    ///     let ctx = Context::open("sw0")?;
    ///     let ch = EventChannel::new(&ctx)?;
    ///     let t = Duration::from_secs(2);
    ///     let id = CmId::<Tcp>::new(&ch)?.resolve_addr_async(None, "127.0.0.1:7471".parse().unwrap(), t).await?;
    ///     let id = id.resolve_route_async(t).await?;
    ///     Ok::<(), typed_verbs::Error>(())
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub async fn resolve_route_async(self, timeout: Duration) -> Result<CmId<P, RouteResolved>>
    where
        S: CanResolveRoute,
    {
        self.start_resolve_route(timeout)?;
        let ev = self.id.next_async().await?;
        self.resolved(Verb::ResolveRoute, ROUTE_RESOLVED, ev)
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// [`get_request`](Self::get_request), awaited without a timeout (feature `tokio`;
    /// wrap it in `tokio::time::timeout` for one). A dropped future loses nothing: a
    /// request not yet returned stays queued for the next call.
    ///
    /// # Errors
    /// As [`get_request`](Self::get_request); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    /// # let ctx = Context::open("sw0")?;
    /// # let ch = EventChannel::new(&ctx)?;
    /// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(4)?;
    /// # let _g = rt.enter();
    /// let fut = listener.get_request_async();
    /// drop(fut); // cancelled: nothing lost
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub async fn get_request_async(&self) -> Result<ConnectRequest<P>>
    where
        S: IsListening,
    {
        Self::request_of(self.id.next_async().await?)
    }
}

impl ConnectRequest<Tcp> {
    /// [`accept`](Self::accept), awaiting `RDMA_CM_EVENT_ESTABLISHED` (feature `tokio`;
    /// bound it with `tokio::time::timeout`). A dropped future destroys the QP and the
    /// request's id.
    ///
    /// # Errors
    /// As [`accept`](Self::accept); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # async fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>, pd: &typed_verbs::Pd<'_>, cq: &typed_verbs::Cq<'_>) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = req.accept_async(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn accept_async<'a, R: RecvSide, S: Threading, C, St: CmQpStart, const SGE: usize>(
        mut self,
        qp: Qp<'a, Rc, R, S, C, St, SGE>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'a, Tcp, R, S, C, SGE>> {
        // The C parameters (raw pointers) do not live across the await (they are
        // `accept_qp`'s): the future is `Send` when the QP is.
        let qp = self.accept_qp(qp, param, uses_srq::<R>())?;
        let ev = self.id.next_async().await?;
        self.established(qp, ev)
    }
}

impl<S: IdState> CmId<Tcp, S> {
    /// [`connect`](Self::connect), awaiting the peer's answer (feature `tokio`; bound it
    /// with `tokio::time::timeout`). A dropped future destroys the QP and the id.
    ///
    /// # Errors
    /// As [`connect`](Self::connect); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # async fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::RouteResolved>, pd: &typed_verbs::Pd<'_>, cq: &typed_verbs::Cq<'_>) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = id.connect_async(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_async<'a, R: RecvSide, Th: Threading, C, St: CmQpStart, const SGE: usize>(
        self,
        qp: Qp<'a, Rc, R, Th, C, St, SGE>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'a, Tcp, R, Th, C, SGE>>
    where
        S: CanConnect,
    {
        // As accept_async: no raw pointer across the await.
        let qp = self.connect_qp(qp, param)?;
        let ev = self.id.next_async().await?;
        self.connected(qp, ev, param.min_rnr_timer)
    }
}

impl<'a, P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize>
    Connection<'a, P, R, S, C, SGE>
{
    /// [`next_event`](Self::next_event), awaited without a timeout (feature `tokio`).
    ///
    /// # Errors
    /// As [`next_event`](Self::next_event); `ENXIO` outside a tokio runtime.
    ///
    /// ```
    /// # async fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) -> typed_verbs::Result<()> {
    /// let ev = conn.next_event_async().await?; // e.g. the peer's disconnect
    /// # Ok(()) }
    /// ```
    pub async fn next_event_async(&self) -> Result<ConnEvent> {
        loop {
            let ev = self.id.next_async().await?;
            if let Some(e) = conn_event(&ev) {
                return Ok(e);
            }
        }
    }
}
