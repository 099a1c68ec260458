//! The transitions: ibv_modify_qp from one state type to the next, and what a refused one gives
//! back.

use super::*;

/// A refused `ibv_modify_qp`: the QP, still in its old state, and why. What the `try_to_*`
/// transitions return; the `to_*` ones return the [`Error`] alone.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// let qp = match qp.try_to_init(UdInit { port_num: 9, pkey_index: 0, qkey: 1 }) { // no port 9
///     Ok(_) => unreachable!(),
///     Err(typed_verbs::ModifyError { qp, error }) => { eprintln!("{error}"); qp } // still in RESET
/// };
/// let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct ModifyError<Q> {
    /// The QP, unchanged.
    pub qp: Q,
    /// Why the device refused.
    pub error: Error,
}

impl<Q> fmt::Debug for ModifyError<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModifyError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<Q> fmt::Display for ModifyError<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<Q> std::error::Error for ModifyError<Q> {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error alone: the QP is dropped (destroyed; inside a polling batch, when the batch
/// ends). What `to_*` do when the device refuses; `?` does the same with a `try_to_*`'s error.
impl<Q> From<ModifyError<Q>> for Error {
    fn from(e: ModifyError<Q>) -> Error {
        e.error
    }
}

/// The result of a transition.
///
/// ```
/// use typed_verbs::{qp_state::Modified, Init, OwnRq, Reset, Shared, Ud};
/// fn bring_up<'a>(qp: typed_verbs::Qp<'a, Ud>) -> Modified<'a, Ud, OwnRq, Shared, (), Reset, Init> {
///     qp.try_to_init(typed_verbs::UdInit { port_num: 1, pkey_index: 0, qkey: 1 })
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?; let cq = typed_verbs::Cq::builder(&ctx).cqe(8).build()?;
/// bring_up(typed_verbs::Qp::<Ud>::builder(&pd, &cq, &cq).build()?)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type Modified<'a, T, R, S, C, From, To, const SGE: usize = 1> =
    std::result::Result<Qp<'a, T, R, S, C, To, SGE>, ModifyError<Qp<'a, T, R, S, C, From, SGE>>>;

macro_rules! require_state {
    ($($tr:ident: $st:ident, $msg:literal;)*) => {$(
        #[doc = concat!("Implemented by [`", stringify!($st), "`] only.")]
        #[doc = concat!("\n\n```\nfn needs<S: typed_verbs::qp_state::", stringify!($tr), ">() {}\nneeds::<typed_verbs::", stringify!($st), ">();\n```")]
        #[diagnostic::on_unimplemented(message = $msg, label = "not the state this transition starts from")]
        pub trait $tr: QpState + sealed::Sealed {}
        impl $tr for $st {}
    )*};
}

require_state! {
    FromReset: Reset, "`to_init` takes a QP from RESET to INIT, and this one is in `{Self}`, past RESET: to change its attributes in INIT (access flags, P_Key index, port) call `modify_init` (keeps posted receives), or go on with the next transition (`to_rtr` from INIT, `to_rts` from RTR); `to_reset` starts over and drops posted receives; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromReset`";
    FromInit: Init, "`to_rtr` takes a QP from INIT to RTR, and this one is in `{Self}`: from RESET call `to_init` first; a QP already in RTR goes on with `to_rts` (in RTS, `modify_rts`); in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromInit`";
    FromRtr: Rtr, "`to_rts` takes a QP from RTR to RTS, and this one is in `{Self}`: call `to_rtr` first (from RESET, `to_init` and `to_rtr`); a QP already in RTS is up (change it with `modify_rts`); in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromRtr`";
    InInit: Init, "`modify_init` changes a QP in INIT (INIT -> INIT), and this one is in `{Self}`: from RESET call `to_init` first; in RTS use `modify_rts`; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::InInit`";
    InRts: Rts, "`modify_rts` changes a QP in RTS (RTS -> RTS), and this one is in `{Self}`: bring it up first (`to_init`, `to_rtr`, `to_rts`, the steps it has not made), or in INIT use `modify_init`; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::InRts`";
}

/// Implemented by every state but [`Reset`]: the states a QP may go to ERR from. The kernel's
/// `qp_state_table` has no RESET → ERR (its RESET row names only RESET and INIT), so
/// `ibv_modify_qp` refuses it with `EINVAL` on every device; the typed layer does not compile it.
///
/// ```
/// use typed_verbs::prelude::*;
/// use typed_verbs::qp_state::{NotReset, QpState};
/// // Generic code that flushes a QP states the bound.
/// fn flush<St: QpState + NotReset>(qp: Qp<'_, Ud, OwnRq, Shared, (), St>) -> typed_verbs::Result<()> {
///     qp.to_error().map(drop)
/// }
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// flush(qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`to_error` takes a QP to ERR from any state but RESET, and this one is in `{Self}` (the kernel's state table has no RESET -> ERR): call `to_init` first, or drop the QP; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::NotReset`",
    label = "this QP is in `{Self}`"
)]
pub trait NotReset: QpState + sealed::Sealed {}
impl NotReset for Init {}
impl NotReset for Rtr {}
impl NotReset for Rts {}
impl NotReset for ErrorState {}

impl<'a, T: Transitions, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_modify_qp` with `attr` and its mask, plus the state; the QP in `To`, or back.
    fn modify<To: QpState>(
        self,
        mut attr: sys::ibv_qp_attr,
        mask: i32,
    ) -> Modified<'a, T, R, S, C, St, To, SGE> {
        attr.qp_state = To::RAW;
        let qp = self.as_raw();
        let verb = Verb::ModifyQp {
            from: QpStateName::from_raw(St::RAW),
            to: QpStateName::from_raw(To::RAW),
        };
        // The modify to RESET takes the provider's CQ locks (mlx5: `__mlx5_cq_clean`), which a
        // thread inside a batch never waits for (crate::object::teardown): refused, as for destroy.
        if To::RAW == sys::ibv_qp_state::IBV_QPS_RESET && crate::object::teardown::inside_batch() {
            return Err(ModifyError {
                qp: self,
                error: Error {
                    verb,
                    kind: ErrorKind::BatchOpen,
                },
            });
        }
        // The same locks, held by a batch another thread has open on one of its CQs: waited for,
        // one CQ at a time (crate::object::teardown's gates), for at most `TEARDOWN_WAIT`.
        let gates = if To::RAW == sys::ibv_qp_state::IBV_QPS_RESET {
            // SAFETY: a live QP, whose CQs live while it does; out of any batch (checked above).
            match unsafe { crate::object::teardown::close_gates_waiting(crate::qp::cqs_of(qp)) } {
                Some(gates) => Some(gates),
                None => {
                    return Err(ModifyError {
                        qp: self,
                        error: Error {
                            verb,
                            kind: ErrorKind::BatchOpen,
                        },
                    })
                }
            }
        } else {
            None
        };
        // SAFETY: a live QP; `attr` valid for the call.
        let modified = unsafe { backend::of((*qp).context).modify_qp(qp, &mut attr, mask | STATE) };
        drop(gates);
        match modified {
            Ok(()) => Ok(self.retype()),
            Err(e) => Err(ModifyError {
                qp: self,
                error: Error::os(verb, e),
            }),
        }
    }

    fn retype<To: QpState>(self) -> Qp<'a, T, R, S, C, To, SGE> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the same QP under another state marker; `this` is not dropped.
        unsafe { Qp::from_raw_parts(this.raw_nonnull()) }
    }

    fn zeroed_attr() -> sys::ibv_qp_attr {
        // SAFETY: plain C data.
        unsafe { std::mem::zeroed() }
    }

    /// `ibv_modify_qp` with the attributes `attr` writes.
    fn modify_with<To: QpState>(
        self,
        attr: &impl TransitionAttr,
    ) -> Modified<'a, T, R, S, C, St, To, SGE> {
        if let Err(b) = attr.check(self.limits()) {
            let verb = Verb::ModifyQp {
                from: QpStateName::from_raw(St::RAW),
                to: QpStateName::from_raw(To::RAW),
            };
            return Err(ModifyError {
                qp: self,
                error: Error::range(verb, b.what, b.value, b.min, b.max),
            });
        }
        let mut a = Self::zeroed_attr();
        let mask = attr.apply(&mut a);
        self.modify(a, mask)
    }

    /// RESET → INIT with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error (naming the transition) returned; [`try_to_init`](Self::try_to_init)
    /// gives the QP back instead.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] before the call for a port outside the device's or a P_Key
    /// index past the port's table (the module's table lists the ranges); otherwise the device's
    /// errno from `ibv_modify_qp` ([`ErrorKind::Os`]). The error's verb names `RESET->INIT`.
    /// The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_init<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Init, SGE>>
    where
        St: FromReset,
        A: AttrOf<T::Init, T>,
    {
        Ok(self.try_to_init(attr)?)
    }

    /// RESET → INIT, giving the QP back, still in RESET, if the device refuses.
    ///
    /// # Errors
    /// As [`to_init`](Self::to_init); the [`ModifyError`] holds the QP, still in RESET.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// let qp = qp.try_to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 7 })?; // `?` drops the QP on failure
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_init<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Init, SGE>
    where
        St: FromReset,
        A: AttrOf<T::Init, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// INIT → RTR with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error returned; [`try_to_rtr`](Self::try_to_rtr) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `INIT->RTR`: `EINVAL` for an address vector the port refuses (no global route on RoCE),
    /// `ENODATA` for a `sgid_index` inside the GID table whose entry holds no GID; an attribute
    /// outside its range (`min_rnr_timer` over 31, `max_dest_rd_atomic` over the device's
    /// `max_qp_rd_atom`, a port or `sgid_index` past the device's) is [`ErrorKind::OutOfRange`]
    /// before the call. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_rtr(())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_rtr<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Rtr, SGE>>
    where
        St: FromInit,
        A: AttrOf<T::Rtr, T>,
    {
        Ok(self.try_to_rtr(attr)?)
    }

    /// INIT → RTR, giving the QP back, still in INIT, if the device refuses.
    ///
    /// # Errors
    /// As [`to_rtr`](Self::to_rtr); the [`ModifyError`] holds the QP, still in INIT.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_rtr(())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_rtr<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Rtr, SGE>
    where
        St: FromInit,
        A: AttrOf<T::Rtr, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// RTR → RTS with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error returned; [`try_to_rts`](Self::try_to_rts) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `RTR->RTS`: `EINVAL` for an attribute the device refuses; an attribute outside its range
    /// (`timeout` over 31, `retry_cnt` or `rnr_retry` over 7, `max_rd_atomic` over the device's
    /// `max_qp_init_rd_atom`) is [`ErrorKind::OutOfRange`] before the call. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
    /// let qp = qp.to_rts(SqPsn { sq_psn: 0 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_rts<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Rts, SGE>>
    where
        St: FromRtr,
        A: AttrOf<T::Rts, T>,
    {
        Ok(self.try_to_rts(attr)?)
    }

    /// RTR → RTS, giving the QP back, still in RTR, if the device refuses.
    ///
    /// # Errors
    /// As [`to_rts`](Self::to_rts); the [`ModifyError`] holds the QP, still in RTR.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
    /// let qp = qp.try_to_rts(SqPsn { sq_psn: 0 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_rts<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Rts, SGE>
    where
        St: FromRtr,
        A: AttrOf<T::Rts, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// Any state but RESET → ERR: outstanding work requests complete with
    /// `IBV_WC_WR_FLUSH_ERR`. From RESET it does not compile ([`NotReset`]: the kernel has no
    /// RESET → ERR). If the device refuses, the QP is destroyed and the error returned;
    /// [`try_to_error`](Self::try_to_error) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming the
    /// transition to `ERR`. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_error()?; // receives posted so far complete with WR_FLUSH_ERR
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_error(self) -> Result<Qp<'a, T, R, S, C, ErrorState, SGE>>
    where
        St: NotReset,
    {
        Ok(self.try_to_error()?)
    }

    /// Any state but RESET → ERR, giving the QP back, in its old state, if the device refuses.
    ///
    /// # Errors
    /// As [`to_error`](Self::to_error); the [`ModifyError`] holds the QP, in its old state.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_error()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_error(self) -> Modified<'a, T, R, S, C, St, ErrorState, SGE>
    where
        St: NotReset,
    {
        self.modify_with(&())
    }

    /// Any state → RESET (from RESET too, as the kernel allows). If the device refuses (or
    /// the call is made inside a polling batch, [`ErrorKind::BatchOpen`]), the QP is dropped
    /// and the error returned: [`try_to_reset`](Self::try_to_reset) gives it back.
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] inside a polling batch, before the call. Out of any batch, a
    ///   batch another thread has open on one of the QP's CQs is waited for, as for a lock (see
    ///   [the safety model](crate::safety)), one CQ at a time, for at most a second: `BatchOpen`
    ///   after that (a batch that long, a batch whose closure waits for this thread, two CQs
    ///   that never leave a gap, or other teardowns of the CQ that held it that long).
    /// - The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming the
    ///   transition to `RESET`.
    ///
    /// The QP is dropped.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_reset()?; // back to RESET: it may be brought up again
    /// let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 2 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_reset(self) -> Result<Qp<'a, T, R, S, C, Reset, SGE>> {
        Ok(self.try_to_reset()?)
    }

    /// Any state → RESET, giving the QP back, in its old state, if the device refuses.
    ///
    /// # Errors
    /// As [`to_reset`](Self::to_reset); the [`ModifyError`] holds the QP, in its old state.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_reset()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_reset(self) -> Modified<'a, T, R, S, C, St, Reset, SGE> {
        self.modify_with(&())
    }

    /// INIT → INIT: changes what the kernel's state table lets a QP in INIT change (for RC and
    /// UC: port, P_Key index, access flags; for UD: port, P_Key index, Q_Key), leaving the
    /// attributes that are `None` as they are. The QP stays in INIT, so it is borrowed; if the
    /// device refuses, nothing changed and the error names `ibv_modify_qp INIT->INIT`.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `INIT->INIT`; a port or P_Key index past the device's is [`ErrorKind::OutOfRange`] before
    /// the call. Nothing changed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// qp.modify_init(UdInitModify { qkey: Some(9), ..Default::default() })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn modify_init<A>(&self, attr: A) -> Result<()>
    where
        St: InInit,
        A: AttrOf<T::InitModify, T>,
    {
        self.modify_in_place(&attr.into_attr())
    }

    /// RTS → RTS: changes what the kernel's state table lets a QP in RTS change (for RC: access
    /// flags, `min_rnr_timer`, the alternate path, the path migration state; for UC the same
    /// but `min_rnr_timer`; for UD the Q_Key), leaving the attributes that are `None` as they
    /// are. The QP stays in RTS; if the device refuses, nothing changed and the error names
    /// `ibv_modify_qp RTS->RTS`.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `RTS->RTS` (e.g. `EINVAL` for an alternate path on RoCE); an attribute outside its range
    /// (`min_rnr_timer` or `alt_timeout` over 31, a port or index past the device's) is
    /// [`ErrorKind::OutOfRange`] before the call. Nothing changed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// qp.modify_rts(UdRtsModify { qkey: Some(9) })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn modify_rts<A>(&self, attr: A) -> Result<()>
    where
        St: InRts,
        A: AttrOf<T::RtsModify, T>,
    {
        self.modify_in_place(&attr.into_attr())
    }

    /// `ibv_modify_qp` from `St` to `St` with the attributes `attr` writes.
    fn modify_in_place(&self, attr: &impl TransitionAttr) -> Result<()> {
        let name = QpStateName::from_raw(St::RAW);
        if let Err(b) = attr.check(self.limits()) {
            let verb = Verb::ModifyQp {
                from: name,
                to: name,
            };
            return Err(Error::range(verb, b.what, b.value, b.min, b.max));
        }
        let mut a = Self::zeroed_attr();
        let mask = attr.apply(&mut a);
        a.qp_state = St::RAW;
        let qp = self.as_raw();
        // SAFETY: a live QP; `a` valid for the call. A modify that stays in INIT or RTS takes
        // no CQ lock, so it is allowed inside a polling batch.
        unsafe { backend::of((*qp).context).modify_qp(qp, &mut a, mask | STATE) }.map_err(|e| {
            Error::os(
                Verb::ModifyQp {
                    from: name,
                    to: name,
                },
                e,
            )
        })
    }

    /// `ibv_query_qp` for the state the device reports.
    ///
    /// # Errors
    /// The device's errno from `ibv_query_qp` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::ffi::sys::ibv_qp_state;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// assert_eq!(qp.query_state()?, ibv_qp_state::IBV_QPS_INIT);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_state(&self) -> Result<sys::ibv_qp_state::Type> {
        // SAFETY: plain C data.
        let (mut attr, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { std::mem::zeroed() };
        let qp = self.as_raw();
        // SAFETY: a live QP; out-pointers valid.
        unsafe { backend::of((*qp).context).query_qp(qp, &mut attr, STATE, &mut init) }
            .map_err(|e| Error::os(Verb::QueryQp, e))?;
        Ok(attr.qp_state)
    }
}
