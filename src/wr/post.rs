//! Posting: ibv_post_send, ibv_post_recv and ibv_post_srq_recv, each where its rules allow.

use super::*;

/// Where a post failed: the index of the first work request not posted, and why. The ones
/// before it were posted.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
/// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
/// let sge = [rx.sge(0..8).unwrap()]; // any local SGE
/// let wrs = [SendWr::send(1, &sge), SendWr::send(2, &sge)];
/// match a.post_send_chain(&wrs) {
///     Ok(()) => {}
///     Err(typed_verbs::PostError { index, error }) => eprintln!("requests 0..{index} posted; then {error}"),
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// The index of the first request that was not posted.
    pub index: usize,
    /// Why.
    pub error: Error,
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work request {}: {}", self.index, self.error)
    }
}

impl std::error::Error for PostError {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error alone, for `?` in a function returning [`Error`] (the index is dropped: match on
/// the `PostError` to know which requests were posted).
impl From<PostError> for Error {
    fn from(e: PostError) -> Error {
        e.error
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_post_send` of one work request. Only a QP in RTS sends.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` (a slice longer than the QP's actual
    ///   `max_send_sge`) or `inline length` (over its `max_inline_data`), before the call.
    /// - [`ErrorKind::WrongContext`]`("ah")` / [`ErrorKind::WrongPd`]`("ah")` for a UD send's address
    ///   handle of another context or PD, before the call.
    /// - The provider's errno from `ibv_post_send` ([`ErrorKind::Os`]): `ENOMEM` when the send
    ///   queue is full, `EINVAL` for a request it refuses (a message over the port's `max_msg_sz`).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// a.post_send(&SendWr::send_inline(2, b"hi").signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn post_send<W>(&self, wr: W) -> Result<()>
    where
        W: WorkRequestFor<T, SGE>,
        St: SendReady,
        R: PlainSendQueue,
    {
        let mut raw = zeroed_send_wr();
        let mut inline = sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        // SAFETY: `self.as_raw()` is this live QP.
        unsafe { wr.fill(self.as_raw(), &self.caps(), &mut raw, &mut inline) }?;
        // SAFETY: a QP in RTS; `raw` and what it points to (the caller's SGEs, borrowed by
        // `wr`, and `inline`) live across the call, which copies what it needs.
        match unsafe { self.call_post_send(&mut raw) } {
            (0, _) => Ok(()),
            (e, _) => Err(Error::os(Verb::PostSend, e.abs())),
        }
    }

    /// `ibv_post_send` of `N` chained work requests in one call. Only a QP in RTS sends, as
    /// for [`post_send`](Self::post_send).
    ///
    /// On failure the [`PostError`] names the first request not posted, and every request
    /// before it was posted, whoever found the fault: a request that fails a check made here
    /// (caps, inline size, the address handle's PD) ends the chain there, and the ones before
    /// it are posted in one call, as the provider posts the ones before its `bad_wr`.
    ///
    /// An empty chain (`N = 0`) posts nothing and returns `Ok(())` without calling the
    /// provider, whose `wr` must point at a first request ("a linked list of work requests",
    /// ibv_post_send(3)) that an empty array does not have.
    ///
    /// # Errors
    /// A [`PostError`] whose `index` is the first request not posted (the ones before it were) and
    /// whose `error` is as for [`post_send`](Self::post_send).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let s = [rx.sge(0..8).unwrap()];
    /// b.post_recv(1, &[rx.sge(64..128).unwrap()])?;
    /// b.post_recv(2, &[rx.sge(128..192).unwrap()])?;
    /// a.post_send_chain(&[SendWr::send(3, &s), SendWr::send(4, &s).signaled()])?; // one call
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn post_send_chain<const N: usize>(
        &self,
        wrs: &[SendWr<'_, T, SGE>; N],
    ) -> Result<(), PostError>
    where
        St: SendReady,
        R: PlainSendQueue,
    {
        let mut raw: [sys::ibv_send_wr; N] = std::array::from_fn(|_| zeroed_send_wr());
        let mut inline = [sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        }; N];
        let caps = self.caps();
        let mut checked = Ok(());
        let mut n = 0;
        for (wr, (raw, inline)) in wrs.iter().zip(raw.iter_mut().zip(inline.iter_mut())) {
            if let Err(error) = wr.fill(self.as_raw(), &caps, raw, inline) {
                checked = Err(PostError { index: n, error });
                break;
            }
            n += 1;
        }
        if n > 0 {
            self.post_send_list(&mut raw[..n])?;
        }
        checked
    }

    /// Links the filled requests `raw` (at least one) and posts them in one call.
    fn post_send_list(&self, raw: &mut [sys::ibv_send_wr]) -> Result<(), PostError> {
        debug_assert!(!raw.is_empty());
        let base = raw.as_mut_ptr();
        for i in 1..raw.len() {
            // SAFETY: both indices are in the slice, which does not move until the call returns.
            unsafe { (*base.add(i - 1)).next = base.add(i) };
        }
        // SAFETY: a QP in RTS (the callers' bound); `base` points at the first of at least one
        // request, linked in order, the last one's `next` NULL (zeroed); the chain and what it
        // points to live across the call.
        match unsafe { self.call_post_send(base) } {
            (0, _) => Ok(()),
            (e, bad) => {
                let index = if bad.is_null() {
                    0
                } else {
                    // SAFETY: the provider points `bad` into the chain, at the first request
                    // it did not post.
                    let at = unsafe { bad.offset_from(base) };
                    at as usize
                };
                Err(PostError {
                    index,
                    error: Error::os(Verb::PostSend, e.abs()),
                })
            }
        }
    }

    /// `ibv_post_send` on this QP of the requests linked from `first`: the provider's return
    /// value and its `bad_wr`.
    ///
    /// # Safety
    /// The QP is in RTS; `first` points at a chain of valid requests, the last one's `next`
    /// NULL, which and what they point to live across the call.
    #[inline(always)]
    unsafe fn call_post_send(&self, first: *mut sys::ibv_send_wr) -> (i32, *mut sys::ibv_send_wr) {
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: a live QP (`self`); the rest is the caller's contract.
        let ret = unsafe {
            ctx_op_call!(
                (*self.as_raw()).context,
                post_send,
                self.as_raw(),
                first,
                &mut bad
            )
        };
        (ret, bad)
    }
}

#[inline(always)]
pub(super) fn post_recv_raw(
    verb: Verb,
    max_sge: u32,
    wr_id: u64,
    (sgl, fits): (&[Sge<'_, No>], bool),
    post: impl FnOnce(*mut sys::ibv_recv_wr, *mut *mut sys::ibv_recv_wr) -> i32,
) -> Result<()> {
    // A fixed-size list was proven within the type's cap, which the actual cap meets.
    if !fits && sgl.len() > max_sge as usize {
        return Err(Error::range(
            verb,
            "num_sge",
            sgl.len() as u64,
            0,
            max_sge.into(),
        ));
    }
    // An empty list (legal: a receive for a zero-length message) still hands the provider a
    // pointer to a real SGE, not the dangling one of an empty slice.
    let mut empty = sys::ibv_sge {
        addr: 0,
        length: 0,
        lkey: 0,
    };
    let mut wr = sys::ibv_recv_wr {
        wr_id,
        next: std::ptr::null_mut(),
        sg_list: if sgl.is_empty() {
            &mut empty
        } else {
            sgl.as_ptr() as *mut sys::ibv_sge
        },
        num_sge: sgl.len() as i32,
    };
    let mut bad = std::ptr::null_mut();
    match post(&mut wr, &mut bad) {
        0 => Ok(()),
        e => Err(Error::os(verb, e.abs())),
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_post_recv`: a receive into the buffers `sgl` names (an [`SgeList`] for the QP's
    /// receive SGE cap). From INIT on, and only on a QP with its own receive queue.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` for a slice longer than the QP's actual
    ///   `max_recv_sge`, before the call.
    /// - The provider's errno from `ibv_post_recv` ([`ErrorKind::Os`]): `ENOMEM` when the receive
    ///   queue is full.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..4096).unwrap()])?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv<L>(&self, wr_id: u64, sgl: L) -> Result<()>
    where
        R: HasOwnRq<L>,
        St: RecvReady,
        L: LocalWriteList,
    {
        let qp = self.as_raw();
        post_recv_raw(
            Verb::PostRecv,
            self.caps().max_recv_sge,
            wr_id,
            R::recv_list(sgl),
            |wr, bad| {
                // SAFETY: a live QP past RESET with its own receive queue; `wr` and the SGEs live
                // across the call.
                unsafe { ctx_op_call!((*qp).context, post_recv, qp, wr, bad) }
            },
        )
    }
}

impl<C, const SGE: usize> Srq<'_, C, SGE> {
    /// `ibv_post_srq_recv`: a receive into the buffers `sgl` names (an [`SgeList`] for the
    /// SRQ's SGE cap), for any QP using this SRQ.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `num_sge` for a slice longer than the SRQ's actual
    ///   `max_sge`, before the call.
    /// - The provider's errno from `ibv_post_srq_recv` ([`ErrorKind::Os`]): `ENOMEM` when the SRQ
    ///   is full.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
    /// let srq = Srq::builder(&pd).max_wr(16).build()?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// srq.post_recv(1, &[mr.sge(0..1024).unwrap()])?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv<L: SgeList<SGE> + LocalWriteList>(&self, wr_id: u64, sgl: L) -> Result<()> {
        let srq = self.as_raw();
        post_recv_raw(
            Verb::PostSrqRecv,
            self.attr().max_sge,
            wr_id,
            (Sge::erase_list(sgl.into_slice()), L::FITS),
            |wr, bad| {
                // SAFETY: a live SRQ; `wr` and the SGEs live across the call.
                unsafe { sys::ibv_post_srq_recv(srq, wr, bad) }
            },
        )
    }
}
