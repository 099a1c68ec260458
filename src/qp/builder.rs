//! Building a QP: ibv_create_qp's attributes, its checks, and the builder.

use super::*;

/// The attributes of a QP to create. Made by [`Qp::builder`] or [`Qp::builder_with_srq`].
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
///     .max_send_wr(32)
///     .max_recv_wr(32)
///     .send_sge_cap::<2>() // `&[Sge; 2]` posts without a check
///     .max_inline_data(64)
///     .context("conn 7")   // a typed user context
///     .build()?;
/// assert_eq!(*qp.user_context(), "conn 7");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct QpBuilder<'a, T, R, S, C = (), const SGE: usize = 1> {
    pd: *mut sys::ibv_pd,
    send_cq: *mut sys::ibv_cq,
    recv_cq: *mut sys::ibv_cq,
    srq: *mut sys::ibv_srq,
    cap: QpCap,
    sq_sig_all: bool,
    user: C,
    /// What keeps the PD, CQs and SRQ alive when they are shared.
    keep: [Keep; 4],
    _m: PhantomData<(&'a (), T, R, S)>,
}

/// The threading of a QP whose send CQ is `SC` and receive CQ `RC` (the same CQ by default):
/// [`Shared`] when both CQs are, [`SingleThreaded`](crate::SingleThreaded) otherwise. What
/// [`Qp::builder`] gives; lets generic code name its QPs:
///
/// ```
/// use typed_verbs::{AnyCq, Pd, Qp, QpThreading, Rc, OwnRq};
///
/// fn make_qp<'a, C: AnyCq>(pd: &'a Pd<'_>, cq: &'a C) -> typed_verbs::Result<Qp<'a, Rc, OwnRq, QpThreading<C>>> {
///     Qp::<Rc>::builder(pd, cq, cq).max_send_wr(16).build()
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let pd = Pd::new(&ctx)?;
/// # let cq = typed_verbs::Cq::builder(&ctx).cqe(4).build()?;
/// # make_qp(&pd, &cq)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type QpThreading<SC, RC = SC> =
    <<SC as AnyCq>::Threading as JoinThreading<<RC as AnyCq>::Threading>>::Out;
type Joined<SC, RC> = QpThreading<SC, RC>;

impl<'a, T: QpType> Qp<'a, T> {
    /// Starts building a QP of type `T` in `pd` with its own receive queue. `send_cq` and
    /// `recv_cq` may be the same CQ, legacy or extended. Each parent is `&parent`, or
    /// `&Arc<parent>` for a QP that keeps it alive ([`crate::object::parent`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// let ctx = Arc::new(Context::open("sw0")?);
    /// let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
    /// let qp: Qp<'static, Rc> = Qp::<Rc>::builder(&pd, &cq, &cq).build()?; // keeps its parents alive
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder<'p: 'a, SC, RC>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = RC>,
    ) -> QpBuilder<'a, T, OwnRq, Joined<SC, RC>>
    where
        SC: AnyCq + 'a,
        RC: AnyCq + 'a,
        SC::Threading: JoinThreading<RC::Threading>,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        QpBuilder::from_parts(
            pd.get().as_raw(),
            send_cq.get().as_raw_cq(),
            recv_cq.get().as_raw_cq(),
            ptr::null_mut(),
            default_cap(1),
            [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                Keep::NONE,
            ],
        )
    }

    /// Starts building a QP of type `T` whose receives come from `srq`. Only RC and UD QPs may
    /// take an SRQ; the receive caps cannot be set (they would be ignored). Parents as for
    /// [`builder`](Self::builder).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let srq = Srq::builder(&pd).max_wr(64).build()?;
    /// let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_send_wr(16).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder_with_srq<'p: 'a, 's: 'a, SC, RC, SrqC, const SRQ_SGE: usize>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = RC>,
        srq: impl Parent<'a, Target = Srq<'s, SrqC, SRQ_SGE>>,
    ) -> QpBuilder<'a, T, UsesSrq, Joined<SC, RC>>
    where
        T: SrqCapable,
        SC: AnyCq + 'a,
        RC: AnyCq + 'a,
        SC::Threading: JoinThreading<RC::Threading>,
        SrqC: 'a,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        let srq = srq.into_held();
        QpBuilder::from_parts(
            pd.get().as_raw(),
            send_cq.get().as_raw_cq(),
            recv_cq.get().as_raw_cq(),
            srq.get().as_raw(),
            default_cap(0),
            [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                srq.into_keep(),
            ],
        )
    }
}

/// A builder's caps until it is told otherwise: one send WR and SGE, `recv` receive WRs and
/// SGEs (0 when receives come from an SRQ), no inline data.
const fn default_cap(recv: u32) -> QpCap {
    QpCap {
        max_send_wr: 1,
        max_recv_wr: recv,
        max_send_sge: 1,
        max_recv_sge: recv,
        max_inline_data: 0,
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading> QpBuilder<'a, T, R, S> {
    /// A builder of the QP in `pd` on these CQs and SRQ, for the slot builders of
    /// [`crate::slots`]: the C objects are live for `'a`, held by the caller's borrows or by
    /// `keep` (PD, send CQ, receive CQ, SRQ), which the QP takes over.
    pub(crate) fn from_parts(
        pd: *mut sys::ibv_pd,
        send_cq: *mut sys::ibv_cq,
        recv_cq: *mut sys::ibv_cq,
        srq: *mut sys::ibv_srq,
        cap: QpCap,
        keep: [Keep; 4],
    ) -> Self {
        QpBuilder {
            pd,
            send_cq,
            recv_cq,
            srq,
            cap,
            sq_sig_all: false,
            user: (),
            keep,
            _m: PhantomData,
        }
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, const SGE: usize> QpBuilder<'a, T, R, S, C, SGE> {
    /// "Requested max number of outstanding WRs in the SQ" (default 1; at most `max_qp_wr`).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(64).build()?;
    /// assert!(qp.caps().max_send_wr >= 64);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_send_wr(mut self, n: u32) -> Self {
        self.cap.max_send_wr = n;
        self
    }

    /// "Requested max number of s/g elements in a WR in the SQ" (default 1; at most `max_sge`),
    /// known at run time. It may not be below the cap in the QP's type (`SGE`, checked by
    /// `build`). Lists longer than `SGE` are slices, checked against the actual cap when posted.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_sge(4).build()?; // slices of up to 4 SGEs
    /// assert!(qp.caps().max_send_sge >= 4);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_send_sge(mut self, n: u32) -> Self {
        self.cap.max_send_sge = n;
        self
    }

    /// Requests `max_send_sge = N` and makes `N` the QP's send SGE cap in its type: a
    /// fixed-size list of up to `N` SGEs (`&[Sge; N]`) is then accepted without a check when
    /// posted, and a longer one does not compile. `N` is at most
    /// [`MAX_TYPED_SGE`](crate::wr::MAX_TYPED_SGE).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Rc, OwnRq, Shared, (), Reset, 3> = Qp::<Rc>::builder(&pd, &cq, &cq).send_sge_cap::<3>().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_sge_cap<const N: usize>(self) -> QpBuilder<'a, T, R, S, C, N>
    where
        Sge<'static>: TypedSgeCap<N>,
    {
        let cap = QpCap {
            max_send_sge: N as u32,
            ..self.cap
        };
        self.retype(cap, |user| user)
    }

    /// "Requested max number of data (bytes) that can be posted inline to the SQ" (default 0).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(128).build()?;
    /// assert!(qp.caps().max_inline_data >= 128);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_inline_data(mut self, n: u32) -> Self {
        self.cap.max_inline_data = n;
        self
    }

    /// "If set, each Work Request (WR) submitted to the SQ generates a completion entry"
    /// (default false: only signaled requests do).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).sq_sig_all(true).build()?; // every send completes
    /// assert!(qp.sq_sig_all());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sq_sig_all(mut self, on: bool) -> Self {
        self.sq_sig_all = on;
        self
    }

    /// "Requested max number of outstanding WRs in the RQ" (default 1; at most `max_qp_wr`).
    /// Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(32).build()?;
    /// assert!(qp.caps().max_recv_wr >= 32);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_recv_wr(mut self, n: u32) -> Self
    where
        R: OwnsRecvQueue,
    {
        self.cap.max_recv_wr = n;
        self
    }

    /// "Requested max number of s/g elements in a WR in the RQ" (default 1; at most `max_sge`).
    /// Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_sge(2).build()?;
    /// assert!(qp.caps().max_recv_sge >= 2);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_recv_sge(mut self, n: u32) -> Self
    where
        R: OwnsRecvQueue,
    {
        self.cap.max_recv_sge = n;
        self
    }

    /// Requests `max_recv_sge = N` and makes `N` the receive SGE cap in the QP's type (see
    /// [`send_sge_cap`](Self::send_sge_cap)): `post_recv` then takes fixed-size lists of up to
    /// `N` SGEs without a check. Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Rc, OwnRq<2>> = Qp::<Rc>::builder(&pd, &cq, &cq).recv_sge_cap::<2>().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn recv_sge_cap<const N: usize>(self) -> QpBuilder<'a, T, R::WithRecvSge<N>, S, C, SGE>
    where
        R: OwnsRecvQueue,
        Sge<'static>: TypedSgeCap<N>,
    {
        let cap = QpCap {
            max_recv_sge: N as u32,
            ..self.cap
        };
        self.retype(cap, |user| user)
    }

    /// The typed user context, in place of `void *qp_context`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).context(String::from("peer 10.0.0.2")).build()?;
    /// assert_eq!(qp.user_context(), "peer 10.0.0.2");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn context<C2>(self, user: C2) -> QpBuilder<'a, T, R, S, C2, SGE> {
        let cap = self.cap;
        self.retype(cap, |_old| user)
    }

    /// The same builder with `cap` and the user context mapped by `user`, under other type
    /// parameters.
    pub(super) fn retype<T2, R2, C2, const SGE2: usize>(
        self,
        cap: QpCap,
        user: impl FnOnce(C) -> C2,
    ) -> QpBuilder<'a, T2, R2, S, C2, SGE2> {
        QpBuilder {
            pd: self.pd,
            send_cq: self.send_cq,
            recv_cq: self.recv_cq,
            srq: self.srq,
            cap,
            sq_sig_all: self.sq_sig_all,
            user: user(self.user),
            keep: self.keep,
            _m: PhantomData,
        }
    }

    /// The caps asked for so far.
    pub(super) fn cap(&self) -> QpCap {
        self.cap
    }

    fn check(&self, a: &sys::ibv_device_attr) -> Result<()> {
        let v = Verb::CreateQp;
        let limit = |what, value: u32, min: usize, max: i32| {
            let (min, max) = (min as u64, max.max(0) as u64);
            if u64::from(value) < min || u64::from(value) > max {
                Err(Error::range(v, what, value.into(), min, max))
            } else {
                Ok(())
            }
        };
        // The SGE counts may not be below what the type promises (SGE send, R::RECV_SGE
        // receive SGEs): fixed-size lists rely on it.
        limit("cap.max_send_wr", self.cap.max_send_wr, 0, a.max_qp_wr)?;
        limit("cap.max_send_sge", self.cap.max_send_sge, SGE, a.max_sge)?;
        limit("cap.max_recv_wr", self.cap.max_recv_wr, 0, a.max_qp_wr)?;
        let recv_sge = self.cap.max_recv_sge;
        limit("cap.max_recv_sge", recv_sge, R::RECV_SGE, a.max_sge)?;
        // SAFETY: the PD, CQs and SRQ are live objects borrowed by the builder.
        unsafe {
            let ctx = (*self.pd).context;
            if (*self.send_cq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("send_cq"),
                });
            }
            if (*self.recv_cq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("recv_cq"),
                });
            }
            if !self.srq.is_null() && (*self.srq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("srq"),
                });
            }
        }
        Ok(())
    }

    /// `ibv_create_qp`. The actual caps ("greater than or equal to the values requested") are
    /// kept and readable with [`Qp::caps`].
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `cap.max_send_wr` or `cap.max_recv_wr` over the device's
    ///   `max_qp_wr`, `cap.max_send_sge` or `cap.max_recv_sge` over `max_sge` or below the SGE cap
    ///   of the QP's type, before the call; or naming `actual cap.max_send_sge` /
    ///   `actual cap.max_recv_sge` when the device gave less than the type's cap (the QP is
    ///   destroyed).
    /// - [`ErrorKind::WrongContext`] naming `send_cq`, `recv_cq` or `srq` of another context.
    /// - The device's errno from `ibv_create_qp` ([`ErrorKind::Os`]): `EINVAL` for caps it refuses
    ///   (e.g. `max_inline_data` over its limit), `EOPNOTSUPP` for a QP type it lacks (RAW_PACKET
    ///   on rxe), `ENOMEM` when out of QPs or memory, `EAGAIN` when the software device cannot start
    ///   its RNR timer thread.
    /// - [`ErrorKind::MissingProviderOp`] when the provider did not fill `post_send` or
    ///   `post_recv` (the QP is destroyed).
    ///
    /// An extended QP ([`QpBuilder::send_ops`]) is created by `ibv_create_qp_ex` (errors
    /// [`Verb::CreateQpEx`]), and also fails with:
    /// - [`ErrorKind::SendOpsUnsupported`] naming the device, when it has no extended QP for
    ///   the ops (`EOPNOTSUPP`);
    /// - [`ErrorKind::MissingProviderOp`] naming the first `struct ibv_qp_ex` function the batches
    ///   need that the provider left NULL (`wr_start`, a builder of the ops, ...; the QP is
    ///   destroyed);
    /// - [`ErrorKind::OutOfRange`] naming `send_ops_flags` for a hand-named `SendOpSet` of no op,
    ///   before any call.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let err = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(ctx.attr().max_qp_wr + 1).build().unwrap_err();
    /// assert!(matches!(err.kind, typed_verbs::ErrorKind::OutOfRange { what: "cap.max_send_wr", .. }));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<Qp<'a, T, R, S, C, Reset, SGE>>
    where
        S: crate::cq::QpContextOk<C>,
    {
        if T::EXTENDED && T::SEND_OPS == 0 {
            // `send_ops!` refuses an empty set; a `SendOpSet` of no op named by hand is refused
            // here: the QP would have no `qp_ex` for its batches.
            return Err(Error::range(
                Verb::CreateQpEx,
                "send_ops_flags",
                0,
                1,
                u64::MAX,
            ));
        }
        // SAFETY: a live PD's context is live.
        let ctx = unsafe { (*self.pd).context };
        // SAFETY: as above.
        let a = unsafe { crate::device::device_attr(ctx, Verb::CreateQp) }?;
        self.check(&a)?;
        // What the transitions' attributes are checked against: read once, here.
        // SAFETY: as above.
        let limits = unsafe { crate::qp::state::Limits::query(ctx, &a) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let meta = UserBox::new(QpMeta {
            quirks: Default::default(),
            limits,
            cap: self.cap,
            sq_sig_all: self.sq_sig_all,
            mcast: Mutex::new(Vec::new()),
            keep: self.keep,
            user: self.user,
        });
        let mut init = sys::ibv_qp_init_attr {
            qp_context: meta.as_void(),
            send_cq: self.send_cq,
            recv_cq: self.recv_cq,
            srq: self.srq,
            cap: self.cap.into(),
            qp_type: T::RAW,
            sq_sig_all: self.sq_sig_all as i32,
        };
        let raw = if !T::EXTENDED {
            // SAFETY: a live PD; CQs and SRQ live and of its context (checked); `init` valid.
            unsafe { backend::of(ctx).create_qp(self.pd, &mut init) }
                .map_err(|e| Error::os(Verb::CreateQp, e))? // `meta` is freed on this path
        } else {
            // SAFETY: as above.
            unsafe { create_extended(ctx, self.pd, &mut init, T::SEND_OPS) }?
        };
        let meta = meta.into_raw();
        // SAFETY: `meta` is ours; ibv_create_qp wrote the actual caps into `init.cap`.
        unsafe { (*meta).cap = init.cap.into() };
        let qp = Qp {
            raw,
            _m: PhantomData,
        };
        // Checked once here, so that posting calls the provider without a NULL test (as verbs.h).
        // SAFETY: a live QP's context is live; its ops are only read.
        let ops = unsafe { &(*ctx).ops };
        // "greater than or equal to the values requested": a provider that gave less would
        // break the promise fixed-size lists rely on.
        let actual = [
            ("actual cap.max_send_sge", init.cap.max_send_sge, SGE),
            (
                "actual cap.max_recv_sge",
                init.cap.max_recv_sge,
                R::RECV_SGE,
            ),
        ];
        if let Some(&(what, value, floor)) = actual.iter().find(|a| (a.1 as usize) < a.2) {
            drop(qp); // ibv_destroy_qp, and the user context with it
            let (value, floor) = (value.into(), floor as u64);
            return Err(Error::range(
                Verb::CreateQp,
                what,
                value,
                floor,
                u32::MAX.into(),
            ));
        }
        let missing = [
            ("post_send", ops.post_send.is_none()),
            ("post_recv", ops.post_recv.is_none()),
        ];
        let mut missing = missing.iter().find(|m| m.1).map(|m| m.0);
        if T::EXTENDED && missing.is_none() {
            // SAFETY: a live QP of `ctx`.
            let qpx = unsafe { backend::of(ctx).qp_to_qp_ex(raw.as_ptr()) };
            // libibverbs' `struct verbs_qp` is a union of `ibv_qp` and `ibv_qp_ex`: the extended
            // QP is at the QP's own address, which the batches use without asking again.
            missing = if qpx.is_null() {
                Some("qp_ex (ibv_qp_to_qp_ex)")
            } else if qpx.cast::<sys::ibv_qp>() != raw.as_ptr() {
                Some("qp_ex at the QP's address (struct verbs_qp)")
            } else {
                // SAFETY: the extended QP just created; `meta` is ours and not shared yet.
                unsafe {
                    (*meta).quirks = backend::of(ctx).qp_ex_quirks(ctx);
                    crate::qp::ex::missing_ex_op(qpx, T::RAW, T::SEND_OPS)
                }
            };
        }
        if let Some(op) = missing {
            drop(qp); // ibv_destroy_qp, and the user context with it
            return Err(Error {
                verb: Verb::CreateQp,
                kind: ErrorKind::MissingProviderOp(op),
            });
        }
        Ok(qp)
    }
}

/// `ibv_create_qp_ex` of the QP `init` describes in `pd`, with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`
/// and `send_ops`; on success `init.cap` holds the actual caps. A device that refuses the
/// extended QP (`EOPNOTSUPP`: no `create_qp_ex`, or ops it lacks) is
/// [`ErrorKind::SendOpsUnsupported`], naming it.
///
/// # Safety
/// `pd` is a live PD of the live context `ctx`; the CQs and SRQ of `init` are live objects of it.
unsafe fn create_extended(
    ctx: *mut sys::ibv_context,
    pd: *mut sys::ibv_pd,
    init: &mut sys::ibv_qp_init_attr,
    send_ops: u64,
) -> Result<NonNull<sys::ibv_qp>> {
    use sys::ibv_qp_init_attr_mask as m;
    // SAFETY: plain C data; all-zero is "nothing else requested".
    let mut ex: sys::ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
    ex.qp_context = init.qp_context;
    ex.send_cq = init.send_cq;
    ex.recv_cq = init.recv_cq;
    ex.srq = init.srq;
    ex.cap = init.cap;
    ex.qp_type = init.qp_type;
    ex.sq_sig_all = init.sq_sig_all;
    ex.comp_mask = m::IBV_QP_INIT_ATTR_PD.0 | m::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
    ex.pd = pd;
    ex.send_ops_flags = send_ops;
    // SAFETY: caller's contract; `ex` is valid for the call.
    match unsafe { backend::of(ctx).create_qp_ex(ctx, &mut ex) } {
        Ok(qp) => {
            init.cap = ex.cap;
            Ok(qp)
        }
        Err(e) if e == libc::EOPNOTSUPP || e == libc::ENOTSUP => Err(Error {
            verb: Verb::CreateQpEx,
            kind: ErrorKind::SendOpsUnsupported {
                // SAFETY: a live context's device is live; its name is a C string.
                device: unsafe { device_name(ctx) },
                send_ops,
            },
        }),
        Err(e) => Err(Error::os(Verb::CreateQpEx, e)),
    }
}

/// The name of the device of `ctx` (`ibv_device.name`).
///
/// # Safety
/// `ctx` is a live context.
unsafe fn device_name(ctx: *mut sys::ibv_context) -> String {
    // SAFETY: caller's contract: a live context's device is live, its name a NUL-terminated
    // array (libibverbs and the software device fill it so).
    let name = unsafe { &(*(*ctx).device).name };
    let bytes: Vec<u8> = name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
