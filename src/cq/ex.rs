//! Extended completion queues (ibv_create_cq_ex(3)) and their polling API.
//!
//! The CQ's `wc_flags` are its type parameter `F` (a [`WcFlagSet`]): `ibv_create_cq_ex` is
//! called with `F::BITS`, and a completion field can be read only where `F` has its flag. "Only
//! fields that the user requested via wc_flags in ibv_create_cq_ex could be queried" becomes a
//! compile error instead of garbage.
//!
//! Polling follows the man page's iterator: [`CqEx::poll_batch`] opens a [`Batch`]
//! (`ibv_start_poll`) and hands it to a closure, or returns `Ok(None)` for ENOENT, "no
//! completions", which is not an error; [`Batch::advance`] is `ibv_next_poll` and consumes the
//! batch, giving it back while there is a next completion; dropping the batch is `ibv_end_poll`.
//! The batch lives only inside the closure, and `poll_batch` ends it exactly once before it
//! returns, also on early exit, panic, or a leaked batch. The CQ stays mutably borrowed while the
//! closure runs, so two batches cannot be open on one CQ, and each [`Completion`] borrows the
//! batch, so it cannot outlive the step that produced it.
//!
//! ```
//! # use typed_verbs::{Context, CqEx, Standard};
//! # let ctx = Context::open("sw0")?;
//! # let mut cq = CqEx::<Standard>::builder(&ctx).build()?;
//! cq.poll_batch(|batch| {
//!     let mut next = Some(batch);
//!     while let Some(batch) = next {
//!         match batch.completion().result() {
//!             Ok(wc) => println!("{} {:?} {} bytes", wc.wr_id(), wc.opcode(), wc.byte_len()),
//!             Err(wc) => println!("{} failed: {:?} ({})", wc.wr_id(), wc.status(), wc.vendor_err()),
//!         }
//!         next = batch.advance()?;
//!     }
//!     Ok::<(), typed_verbs::Error>(())
//! })?
//! .transpose()?;
//! # Ok::<(), typed_verbs::Error>(())
//! ```

use crate::cq::wc::{WcOpcode, WcStatus};
use crate::cq::{destroy_cq, kind, AnyCq, CqBuilder, CqMeta, Shared, Threading};
use crate::device::Context;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::{self, cq_ex_call, sys};
use crate::object::gate::{Gate, Opener};
use crate::object::teardown;
use crate::object::{destroy, Destroy, Leftover};
use crate::sealed;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The `IBV_WC_EX_WITH_*` bits (enum ibv_wc_flags_ex), defined with the other C constants.
pub use crate::ffi::wc_ex_flags as flags;

/// A CQ's set of `wc_flags`, as a type. Implemented only by [`WcFlagSet`].
///
/// ```
/// use typed_verbs::{wc_flags, WcFlags};
/// fn bits<F: WcFlags>() -> u64 { F::BITS }
/// assert_eq!(bits::<wc_flags!(BYTE_LEN)>(), typed_verbs::cq_ex::flags::BYTE_LEN);
/// ```
pub trait WcFlags: sealed::Sealed + 'static {
    /// The `wc_flags` value passed to `ibv_create_cq_ex`.
    const BITS: u64;
}

/// The set of `IBV_WC_EX_WITH_*` flags of a CQ: one `bool` per flag, in the man page's order.
/// Name one with [`wc_flags!`](crate::wc_flags) (`wc_flags!(BYTE_LEN | IMM)`) or an alias
/// ([`Standard`], [`NoFields`], [`AllFields`]).
///
/// ```
/// use typed_verbs::{wc_flags, Context, CqEx};
/// let ctx = Context::open("sw0")?;
/// let cq = CqEx::<wc_flags!(BYTE_LEN | IMM | QP_NUM)>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub enum WcFlagSet<
    const BYTE_LEN: bool,
    const IMM: bool,
    const QP_NUM: bool,
    const SRC_QP: bool,
    const SLID: bool,
    const SL: bool,
    const DLID_PATH_BITS: bool,
    const COMPLETION_TIMESTAMP: bool,
    const CVLAN: bool,
    const FLOW_TAG: bool,
    const COMPLETION_TIMESTAMP_WALLCLOCK: bool,
> {}

impl<
        const B: bool,
        const I: bool,
        const Q: bool,
        const SQ: bool,
        const SLID: bool,
        const SL: bool,
        const D: bool,
        const TS: bool,
        const CV: bool,
        const FT: bool,
        const WC: bool,
    > sealed::Sealed for WcFlagSet<B, I, Q, SQ, SLID, SL, D, TS, CV, FT, WC>
{
}

impl<
        const B: bool,
        const I: bool,
        const Q: bool,
        const SQ: bool,
        const SLID: bool,
        const SL: bool,
        const D: bool,
        const TS: bool,
        const CV: bool,
        const FT: bool,
        const WC: bool,
    > WcFlags for WcFlagSet<B, I, Q, SQ, SLID, SL, D, TS, CV, FT, WC>
{
    const BITS: u64 = (B as u64 * flags::BYTE_LEN)
        | (I as u64 * flags::IMM)
        | (Q as u64 * flags::QP_NUM)
        | (SQ as u64 * flags::SRC_QP)
        | (SLID as u64 * flags::SLID)
        | (SL as u64 * flags::SL)
        | (D as u64 * flags::DLID_PATH_BITS)
        | (TS as u64 * flags::COMPLETION_TIMESTAMP)
        | (CV as u64 * flags::CVLAN)
        | (FT as u64 * flags::FLOW_TAG)
        | (WC as u64 * flags::COMPLETION_TIMESTAMP_WALLCLOCK);
}

/// The standard set: the seven fields `ibv_poll_cq` returns (`IBV_WC_STANDARD_FLAGS`).
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type Standard = WcFlagSet<true, true, true, true, true, true, true, false, false, false, false>;
/// No optional field: only wr_id, status, opcode, vendor_err and the completion's own flags.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::NoFields>::builder(&ctx).cqe(16).build()?; // wr_id and status only
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type NoFields =
    WcFlagSet<false, false, false, false, false, false, false, false, false, false, false>;
/// Every flag of the man page.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// // sw0 has all eleven flags; rxe only the standard ones (EOPNOTSUPP).
/// let cq = typed_verbs::CqEx::<typed_verbs::AllFields>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type AllFields = WcFlagSet<true, true, true, true, true, true, true, true, true, true, true>;

macro_rules! flag_traits {
    ($($trait:ident for <$($p:ident),*> [$($a:tt),*]: $msg:literal, $label:literal;)*) => {$(
        #[doc = concat!("Implemented by the flag sets from which `", stringify!($trait), "`'s field can be read.")]
        #[doc = concat!("\n\n```\nfn needs<F: typed_verbs::cq_ex::", stringify!($trait), ">() {}\nneeds::<typed_verbs::AllFields>(); // every flag set with the flag\n```")]
        #[diagnostic::on_unimplemented(
            message = $msg,
            label = $label,
            note = "a CQ's wc_flags are its type parameter: a field can be read only if its flag was requested at ibv_create_cq_ex"
        )]
        pub trait $trait: WcFlags + sealed::Sealed {}
        impl<$(const $p: bool),*> $trait for WcFlagSet<$($a),*> {}
    )*};
}

// One row per flag of the man page: the trait a reader of that field needs, and the flag sets
// (the flag's own parameter `true`) that have it.
flag_traits! {
    WithByteLen for <I, Q, SQ, SLID, SL, D, TS, CV, FT, WC> [true, I, Q, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`byte_len` needs a CQ created with IBV_WC_EX_WITH_BYTE_LEN, which this CQ's flag type does not promise: add BYTE_LEN to it (`CqEx<wc_flags!(... | BYTE_LEN)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithByteLen`",
        "`byte_len` needs IBV_WC_EX_WITH_BYTE_LEN in the CQ's wc_flags";
    WithImm for <B, Q, SQ, SLID, SL, D, TS, CV, FT, WC> [B, true, Q, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`imm_data` needs a CQ created with IBV_WC_EX_WITH_IMM, which this CQ's flag type does not promise: add IMM to it (`CqEx<wc_flags!(... | IMM)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithImm`",
        "`imm_data` needs IBV_WC_EX_WITH_IMM in the CQ's wc_flags";
    WithQpNum for <B, I, SQ, SLID, SL, D, TS, CV, FT, WC> [B, I, true, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`qp_num` needs a CQ created with IBV_WC_EX_WITH_QP_NUM, which this CQ's flag type does not promise: add QP_NUM to it (`CqEx<wc_flags!(... | QP_NUM)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithQpNum`",
        "`qp_num` needs IBV_WC_EX_WITH_QP_NUM in the CQ's wc_flags";
    WithSrcQp for <B, I, Q, SLID, SL, D, TS, CV, FT, WC> [B, I, Q, true, SLID, SL, D, TS, CV, FT, WC]:
        "`src_qp` needs a CQ created with IBV_WC_EX_WITH_SRC_QP, which this CQ's flag type does not promise: add SRC_QP to it (`CqEx<wc_flags!(... | SRC_QP)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSrcQp`",
        "`src_qp` needs IBV_WC_EX_WITH_SRC_QP in the CQ's wc_flags";
    WithSlid for <B, I, Q, SQ, SL, D, TS, CV, FT, WC> [B, I, Q, SQ, true, SL, D, TS, CV, FT, WC]:
        "`slid` needs a CQ created with IBV_WC_EX_WITH_SLID, which this CQ's flag type does not promise: add SLID to it (`CqEx<wc_flags!(... | SLID)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSlid`",
        "`slid` needs IBV_WC_EX_WITH_SLID in the CQ's wc_flags";
    WithSl for <B, I, Q, SQ, SLID, D, TS, CV, FT, WC> [B, I, Q, SQ, SLID, true, D, TS, CV, FT, WC]:
        "`sl` needs a CQ created with IBV_WC_EX_WITH_SL, which this CQ's flag type does not promise: add SL to it (`CqEx<wc_flags!(... | SL)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSl`",
        "`sl` needs IBV_WC_EX_WITH_SL in the CQ's wc_flags";
    WithDlidPathBits for <B, I, Q, SQ, SLID, SL, TS, CV, FT, WC> [B, I, Q, SQ, SLID, SL, true, TS, CV, FT, WC]:
        "`dlid_path_bits` needs a CQ created with IBV_WC_EX_WITH_DLID_PATH_BITS, which this CQ's flag type does not promise: add DLID_PATH_BITS to it (`CqEx<wc_flags!(... | DLID_PATH_BITS)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithDlidPathBits`",
        "`dlid_path_bits` needs IBV_WC_EX_WITH_DLID_PATH_BITS in the CQ's wc_flags";
    WithCompletionTimestamp for <B, I, Q, SQ, SLID, SL, D, CV, FT, WC> [B, I, Q, SQ, SLID, SL, D, true, CV, FT, WC]:
        "`completion_ts` needs a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, which this CQ's flag type does not promise: add COMPLETION_TIMESTAMP to it (`CqEx<wc_flags!(... | COMPLETION_TIMESTAMP)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCompletionTimestamp`",
        "`completion_ts` needs IBV_WC_EX_WITH_COMPLETION_TIMESTAMP in the CQ's wc_flags";
    WithCvlan for <B, I, Q, SQ, SLID, SL, D, TS, FT, WC> [B, I, Q, SQ, SLID, SL, D, TS, true, FT, WC]:
        "`cvlan` needs a CQ created with IBV_WC_EX_WITH_CVLAN, which this CQ's flag type does not promise: add CVLAN to it (`CqEx<wc_flags!(... | CVLAN)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCvlan`",
        "`cvlan` needs IBV_WC_EX_WITH_CVLAN in the CQ's wc_flags";
    WithFlowTag for <B, I, Q, SQ, SLID, SL, D, TS, CV, WC> [B, I, Q, SQ, SLID, SL, D, TS, CV, true, WC]:
        "`flow_tag` needs a CQ created with IBV_WC_EX_WITH_FLOW_TAG, which this CQ's flag type does not promise: add FLOW_TAG to it (`CqEx<wc_flags!(... | FLOW_TAG)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithFlowTag`",
        "`flow_tag` needs IBV_WC_EX_WITH_FLOW_TAG in the CQ's wc_flags";
    WithCompletionTimestampWallclock for <B, I, Q, SQ, SLID, SL, D, TS, CV, FT> [B, I, Q, SQ, SLID, SL, D, TS, CV, FT, true]:
        "`completion_wallclock_ns` needs a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, which this CQ's flag type does not promise: add COMPLETION_TIMESTAMP_WALLCLOCK to it (`CqEx<wc_flags!(... | COMPLETION_TIMESTAMP_WALLCLOCK)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCompletionTimestampWallclock`",
        "`completion_wallclock_ns` needs IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK in the CQ's wc_flags";
}

/// A completion queue created with `ibv_create_cq_ex`.
///
/// - `F`: its `wc_flags` ([`WcFlagSet`]), which decide the fields its completions expose.
/// - `T`: [`Shared`] or [`SingleThreaded`](crate::SingleThreaded) (not `Sync`).
/// - `C`: the typed user context.
///
/// It holds its context, channel and parent domain; QPs using it hold it (borrowed, or shared
/// through an `Arc`: [`crate::object::parent`]), so it cannot be
/// destroyed while a QP uses it.
///
/// ```
/// use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<wc_flags!(BYTE_LEN | IMM)>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV).byte_len(64).imm_data(1))?;
/// cq.poll_batch(|batch| {
///     let wc = batch.completion().result().expect("success");
///     assert_eq!((wc.wr_id(), wc.byte_len(), wc.imm_data()), (7, 64, Some(1)));
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// A field whose flag the CQ lacks does not compile:
///
/// ```compile_fail,E0277
/// # use typed_verbs::{wc_flags, Context, CqEx};
/// # let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
/// cq.poll_batch(|batch| batch.completion().result().ok().map(|wc| wc.imm_data()))?; // needs IMM
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct CqEx<'a, F: WcFlags, T: Threading = Shared, C = ()> {
    raw: NonNull<sys::ibv_cq_ex>,
    _m: PhantomData<(&'a Context, F, T, C)>,
}

// SAFETY: the CQ may be moved to (and destroyed on) another thread; its user context moves too.
unsafe impl<F: WcFlags, T: Threading, C: Send> Send for CqEx<'_, F, T, C> {}
// SAFETY: shared use from several threads needs the provider's lock, which a SINGLE_THREADED
// CQ does not take: `SharedAcrossThreads` is implemented by `Shared` only.
unsafe impl<F: WcFlags, T: crate::cq::SharedAcrossThreads, C: Sync> Sync for CqEx<'_, F, T, C> {}

impl<'a, F: WcFlags, T: Threading> CqEx<'a, F, T, ()> {
    /// Starts building an extended CQ on `ctx` with the flags `F` and threading `T`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(64).build()?;
    /// assert!(cq.cqe() >= 64);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder(
        ctx: impl crate::object::parent::Parent<'a, Target = Context>,
    ) -> CqBuilder<'a, kind::Extended<F, T>, ()> {
        CqBuilder::new(ctx, ())
    }
}

impl<'a, F: WcFlags, T: Threading, C> CqEx<'a, F, T, C> {
    pub(crate) fn from_raw(raw: NonNull<sys::ibv_cq_ex>) -> Self {
        CqEx {
            raw,
            _m: PhantomData,
        }
    }

    /// The actual number of entries (at least the requested `cqe`).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(100).build()?;
    /// assert!(cq.cqe() >= 100);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cqe(&self) -> u32 {
        // SAFETY: a live CQ; `cqe` is written by the provider at creation.
        unsafe { (*self.raw.as_ptr()).cqe.max(0) as u32 }
    }

    /// The `wc_flags` this CQ was created with (`F::BITS`).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(4).build()?;
    /// assert_eq!(cq.wc_flags(), typed_verbs::cq_ex::flags::BYTE_LEN);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const fn wc_flags(&self) -> u64 {
        F::BITS
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).context(1u8).build()?;
    /// assert_eq!(*cq.user_context(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        // SAFETY: a live CQ made by the builder with `C`; the borrow of `self` bounds the
        // reference.
        unsafe { crate::cq::user_context(self.as_raw_cq()) }
    }

    /// Opens a polling batch (`ibv_start_poll`), hands it to `f`, and makes sure it is ended
    /// (`ibv_end_poll`) before returning: `Ok(None)` when the CQ is empty (ENOENT: "the CQ
    /// remains in a valid state", and end_poll must not be called), `Ok(Some(f's result))`
    /// otherwise. Any other error of `ibv_start_poll` is returned and, as the man page says, the
    /// batch is not started.
    ///
    /// The batch lives only inside `f` (its lifetime is `f`'s own), and whatever `f` does with
    /// it (ends it by [`Batch::advance`] or by dropping it, leaks it with `mem::forget`, or
    /// panics) the batch is ended exactly once before this returns or unwinds: the provider's
    /// CQ lock, which `ibv_start_poll` takes, can never stay held.
    ///
    /// It takes the CQ shared (`&self`), so a CQ that QPs use can be polled as it is. One batch
    /// is open on a CQ at a time: while another thread has one open on it, or while the CQ's
    /// [`Poller`] lives (the right to poll it, for one thread: [`poller`](Self::poller),
    /// [`split`](Self::split)), this is refused with [`ErrorKind::PollerTaken`], never a wait,
    /// so a batch's closure cannot wait for a thread that waits for the batch's CQ. A thread that
    /// already has a batch open (on any CQ) gets [`ErrorKind::BatchOpen`] instead of a second
    /// one ([the safety model](crate::safety)).
    ///
    /// The poll loops that [`completion_record!`](crate::completion_record) writes open their
    /// batches through [`Pollable`], on a `&mut CqEx` or a [`Poller`], which skip the test for
    /// a live poller (a `&mut` borrow, or the poller itself, proves there is none).
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] when this thread already has a batch open (on any CQ), before the
    ///   call.
    /// - [`ErrorKind::PollerTaken`] while the CQ's [`Poller`] lives or another thread has a batch
    ///   open on it, before the call.
    /// - The provider's errno from `ibv_start_poll` other than `ENOENT` ([`ErrorKind::Os`]); the
    ///   batch is then not started.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
    /// assert_eq!(cq.poll_batch(|_| ())?, None); // empty
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::SEND))?;
    /// assert_eq!(cq.poll_batch(|b| b.completion().wr_id())?, Some(1));
    /// let poller = cq.poller()?; // the right to poll, for one thread: the CQ's own is refused
    /// assert_eq!(cq.poll_batch(|_| ()).unwrap_err().kind, typed_verbs::ErrorKind::PollerTaken);
    /// # drop(poller);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(&self, f: impl FnOnce(Batch<'_, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a live extended CQ made by a builder. As a shared opener, the gate opens the
        // batch only if no poller lives and no other batch is open, and keeps others out until
        // it ends: one batch at a time.
        unsafe { poll_batch(self.raw, Opener::Shared, f) }
    }

    /// The CQ's one [`Poller`], through a shared reference: for a CQ that QPs use or that is
    /// shared through an `Arc` (take it on the thread that polls). While it lives, asking
    /// again gives [`ErrorKind::PollerTaken`]; dropping it gives the right back. (A poller that
    /// is leaked keeps it: the CQ is then polled by no one else, and `split` takes it back.)
    ///
    /// # Errors
    /// [`ErrorKind::PollerTaken`] while another [`Poller`] of this CQ lives (errno `EBUSY`).
    ///
    /// ```
    /// # use typed_verbs::{Context, CqEx, Standard};
    /// # let ctx = Context::open("sw0")?;
    /// let cq = std::sync::Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
    /// let mut poller = cq.poller()?;
    /// assert!(cq.poller().is_err()); // one at a time
    /// poller.poll_batch(|_| ())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn poller(&self) -> Result<Poller<'_, F, T>> {
        // SAFETY: a live CQ made by a builder.
        if !unsafe { crate::cq::gate(self.as_raw_cq()) }.claim_poller() {
            return Err(poller_taken());
        }
        Ok(Poller {
            cq: self.raw,
            _m: PhantomData,
        })
    }

    /// Splits the CQ into a shared reference, for QPs (as send or receive CQ) and for
    /// `req_notify`, and its one [`Poller`] (taken back from a leaked one, if any). Both borrow
    /// the CQ, so it cannot be destroyed while either lives.
    ///
    /// ```
    /// # use typed_verbs::{Context, CqEx, Pd, Qp, Rc, Standard};
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
    /// let (cq, mut poller) = cq.split();
    /// let qp = Qp::<Rc>::builder(&pd, cq, cq).build()?; // the QP borrows the shared half
    /// poller.poll_batch(|_| ())?;
    /// # drop(qp);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn split(&mut self) -> (&Self, Poller<'_, F, T>) {
        // SAFETY: a live CQ made by a builder. `&mut self`: no poller lives (a leaked one can
        // never poll again) and no batch is open, so the claim is this one's.
        unsafe { crate::cq::gate(self.as_raw_cq()) }.take_poller();
        let poller = Poller {
            cq: self.raw,
            _m: PhantomData,
        };
        (self, poller)
    }

    /// The CQ's one right to poll, as [`poller`](Self::poller), holding a share of the CQ: a
    /// worker keeps it (and reaches the CQ through it) in a struct of its own, moves it to its
    /// thread or task, with no borrow to carry.
    ///
    /// # Errors
    /// [`ErrorKind::PollerTaken`] while another poller of this CQ lives (errno `EBUSY`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use typed_verbs::{ArcPoller, Context, CqEx, Standard};
    /// struct Worker {
    ///     poller: ArcPoller<'static, Standard>, // and through it, the CQ
    ///     seen: usize,
    /// }
    /// let ctx = Arc::new(Context::open("sw0")?);
    /// let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
    /// let mut worker = Worker { poller: cq.arc_poller()?, seen: 0 };
    /// assert!(cq.poller().is_err()); // one right to poll
    /// std::thread::spawn(move || {
    ///     worker.seen += worker.poller.poll_batch(|_| 1)?.unwrap_or(0);
    ///     worker.poller.cq().req_notify(false).ok();
    ///     Ok::<_, typed_verbs::Error>(worker.seen)
    /// }).join().unwrap()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn arc_poller(self: &std::sync::Arc<Self>) -> Result<ArcPoller<'a, F, T, C>> {
        // The claim, taken as `poller` takes it; the ArcPoller gives it back when dropped.
        std::mem::forget(self.poller()?);
        Ok(ArcPoller {
            cq: std::sync::Arc::clone(self),
        })
    }

    /// `ibv_req_notify_cq` on the CQ: one completion event on its channel for the next
    /// completion (or, with `solicited_only`, the next solicited one); get it with
    /// [`CompChannel::get_cq_event`](crate::cq::channel::CompChannel::get_cq_event).
    ///
    /// # Errors
    /// The provider's errno from `ibv_req_notify_cq` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context, CqEx, Standard};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
    /// cq.req_notify(true)?; // only a solicited (or failed) completion raises the event
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        // SAFETY: a live CQ; `ibv_cq_ex_to_cq` is a cast.
        match unsafe { sys::ibv_req_notify_cq(self.as_raw_cq(), solicited_only as i32) } {
            0 => Ok(()),
            e => Err(Error::os(Verb::ReqNotifyCq, e.abs())),
        }
    }

    /// The C CQ. It stays owned by `self`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
    /// assert!(!cq.as_raw().is_null());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_cq_ex {
        self.raw.as_ptr()
    }

    /// `ibv_destroy_cq` ("CQ should be destroyed with ibv_destroy_cq"). If it fails, the error is returned and the object dropped: its `Drop`
    /// tries once more and, failing again, leaks the C object (nothing is freed that the
    /// device may still use). [`try_destroy`](Self::try_destroy) gives the object back.
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_cq` ([`ErrorKind::Os`]): `EBUSY` while a QP still uses
    /// the CQ, which only a leaked QP (or one queued to a batch's end) can.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?;
    /// cq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_cq` ("CQ should be destroyed with ibv_destroy_cq"). On failure the object comes back inside the error, still alive.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the CQ, still alive.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?;
    /// cq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl<F: WcFlags, T: Threading, C> Destroy for CqEx<'_, F, T, C> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        // SAFETY: a live CQ made by a builder, destroyed once with success (`destroy_raw`'s
        // contract). A QP still using it (leaked, or queued to a batch's end) makes the destroy
        // fail with EBUSY, and the CQ stays.
        unsafe { destroy_cq(self.as_raw_cq()) }
    }
    fn leftover(&self) -> Leftover {
        // SAFETY: a live CQ made by the builder with `C`.
        Leftover::user_box::<CqMeta<C>>(unsafe { (*self.as_raw_cq()).cq_context })
    }
}

impl<F: WcFlags, T: Threading, C> Drop for CqEx<'_, F, T, C> {
    fn drop(&mut self) {
        // SAFETY: dropped once: a live CQ made by the builder with `C`.
        unsafe { crate::cq::drop_cq::<C>(self.as_raw_cq()) }
    }
}

impl<F: WcFlags, T: Threading, C> sealed::Sealed for CqEx<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> AnyCq for CqEx<'_, F, T, C> {
    type Threading = T;
    fn as_raw_cq(&self) -> *mut sys::ibv_cq {
        // SAFETY: ibv_cq_ex_to_cq is a cast of a live pointer.
        unsafe { sys::ibv_cq_ex_to_cq(self.raw.as_ptr()) }
    }
}

/// Checks, once at creation, that the provider filled every function pointer the polling API
/// calls for a CQ with flags `F`, so that the data path calls them without a NULL check (as
/// verbs.h's inline functions do). The name of the first missing one, if any.
pub(crate) fn check_provider_ops<F: WcFlags>(cq: &sys::ibv_cq_ex) -> Result<(), &'static str> {
    let always = [
        ("start_poll", cq.start_poll.is_some()),
        ("next_poll", cq.next_poll.is_some()),
        ("end_poll", cq.end_poll.is_some()),
        ("read_opcode", cq.read_opcode.is_some()),
        ("read_vendor_err", cq.read_vendor_err.is_some()),
        ("read_wc_flags", cq.read_wc_flags.is_some()),
    ];
    let flagged = [
        (flags::BYTE_LEN, "read_byte_len", cq.read_byte_len.is_some()),
        (flags::IMM, "read_imm_data", cq.read_imm_data.is_some()),
        (flags::QP_NUM, "read_qp_num", cq.read_qp_num.is_some()),
        (flags::SRC_QP, "read_src_qp", cq.read_src_qp.is_some()),
        (flags::SLID, "read_slid", cq.read_slid.is_some()),
        (flags::SL, "read_sl", cq.read_sl.is_some()),
        (
            flags::DLID_PATH_BITS,
            "read_dlid_path_bits",
            cq.read_dlid_path_bits.is_some(),
        ),
        (
            flags::COMPLETION_TIMESTAMP,
            "read_completion_ts",
            cq.read_completion_ts.is_some(),
        ),
        (flags::CVLAN, "read_cvlan", cq.read_cvlan.is_some()),
        (flags::FLOW_TAG, "read_flow_tag", cq.read_flow_tag.is_some()),
        (
            flags::COMPLETION_TIMESTAMP_WALLCLOCK,
            "read_completion_wallclock_ns",
            cq.read_completion_wallclock_ns.is_some(),
        ),
    ];
    let missing = always.iter().find(|(_, ok)| !ok).map(|(name, _)| *name);
    let missing = missing.or_else(|| {
        flagged
            .iter()
            .find(|(bit, _, ok)| F::BITS & bit != 0 && !ok)
            .map(|(_, n, _)| *n)
    });
    missing.map_or(Ok(()), Err)
}

/// `ibv_start_poll` on `cq`, `f` on the batch, and the batch's end.
///
/// # Safety
/// `cq` is a live extended CQ made by this crate's builder; `who` is true of the caller: its
/// poller ([`Opener::Poller`]), a `&mut` of the CQ ([`Opener::Exclusive`]), or neither
/// ([`Opener::Shared`], which the gate refuses while another thread polls).
#[inline(always)]
unsafe fn poll_batch<F: WcFlags, R>(
    cq: NonNull<sys::ibv_cq_ex>,
    who: Opener,
    f: impl FnOnce(Batch<'_, F>) -> R,
) -> Result<Option<R>> {
    /// Ends a batch that `f` left open (leaked), also when `f` panics; then gives the CQ's gate
    /// back, marks the thread as out of the batch, which runs the teardowns deferred to its
    /// end, and runs those other threads handed to the batch (crate::object::teardown). Local to this
    /// call: nobody can forget it.
    struct End<'s> {
        cq: NonNull<sys::ibv_cq_ex>,
        who: Opener,
        open: &'s Cell<bool>,
    }
    impl Drop for End<'_> {
        #[inline(always)]
        fn drop(&mut self) {
            if self.open.get() {
                // SAFETY: the batch `f` got was leaked, so it was neither dropped (which ends
                // it and clears `open`) nor ended otherwise: this is its one end.
                unsafe { cq_ex_call!(self.cq.as_ptr(), end_poll) };
            }
            // SAFETY: the live CQ of this batch (read again here rather than kept, which would
            // hold a register through the whole batch).
            let gate = unsafe { crate::cq::gate(self.cq.as_ptr().cast()) };
            let handed = gate.close_batch(self.who);
            teardown::leave_batch(gate, handed);
        }
    }
    // A thread inside a batch never waits for a CQ lock (crate::object::teardown): a second batch
    // would take another CQ's lock while this one is held.
    if !teardown::enter() {
        return Err(Error {
            verb: Verb::StartPoll,
            kind: ErrorKind::BatchOpen,
        });
    }
    // SAFETY: caller's contract: a live CQ made by a builder; `ibv_cq_ex_to_cq` is a cast.
    let gate = unsafe { crate::cq::gate(cq.as_ptr().cast()) };
    if !gate.open_batch(who) {
        return Err(refused_second_batch());
    }
    let mut attr = sys::ibv_poll_cq_attr { comp_mask: 0 };
    // SAFETY: caller's contract.
    match unsafe { cq_ex_call!(cq.as_ptr(), start_poll, &mut attr) } {
        0 => {}
        e => {
            no_batch(gate, who);
            return match e {
                libc::ENOENT => Ok(None),
                e => Err(Error::os(Verb::StartPoll, e)),
            };
        }
    }
    // Whether the batch is open: a flag on this stack frame, which the batch clears when it is
    // dropped. In a loop that drops its batch the compiler sees it cleared and `End` checks
    // nothing.
    let open = Cell::new(true);
    let _end = End {
        cq,
        who,
        open: &open,
    };
    Ok(Some(f(Batch {
        cq,
        open: &open,
        _m: PhantomData,
    })))
}

/// `ibv_start_poll` did not start a batch (ENOENT, the CQ is empty, or an error): the gate
/// back and the thread out of the batch. Out of the poll loop's line, so that the loop's one
/// `End` stays small.
#[inline(never)]
fn no_batch(gate: &Gate, who: Opener) {
    let handed = gate.close_batch(who);
    teardown::leave_batch(gate, handed);
}

/// A second batch on a CQ that has one open (another thread's, through `CqEx::poll_batch`):
/// the thread leaves the batch it entered, and the error.
#[cold]
#[inline(never)]
fn refused_second_batch() -> Error {
    teardown::leave();
    poller_taken()
}

/// Another thread polls the CQ: its poller lives, or it has a batch open on it.
#[cold]
#[inline(never)]
fn poller_taken() -> Error {
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
    cq: NonNull<sys::ibv_cq_ex>,
    _m: PhantomData<(&'a mut (), F, T)>,
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
    cq: std::sync::Arc<CqEx<'a, F, T, C>>,
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
    cq: NonNull<sys::ibv_cq_ex>,
    /// `poll_batch`'s flag: true until the batch is ended.
    open: &'cq Cell<bool>,
    _m: PhantomData<(&'cq mut (), F, *const ())>,
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

/// What is known of a completion's status: [`Unchecked`], [`Success`] or [`Failure`].
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::error(4, WcStatus::REM_ACCESS_ERR, 0x11))?;
/// cq.poll_batch(|batch| {
///     let c = batch.completion(); // Completion<_, Unchecked>: wr_id and status
///     match c.result() {
///         Ok(_ok) => unreachable!(),   // Completion<_, Success>
///         Err(failed) => assert_eq!(failed.vendor_err(), 0x11), // Completion<_, Failure>
///     }
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait StatusState: sealed::Sealed {}
/// The status has not been looked at: only `wr_id` and `status` can be read.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { let _c: typed_verbs::Completion<'_, _, typed_verbs::Unchecked> = b.completion(); })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Unchecked {}
/// A successful completion: the opcode and the fields of the CQ's flags can be read.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { if let Ok(c) = b.completion().result() { let _ = c.byte_len(); } })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Success {}
/// A failed completion: only `wr_id`, `status` and `vendor_err` are valid.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { if let Err(c) = b.completion().result() { let _ = c.vendor_err(); } })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Failure {}
impl sealed::Sealed for Unchecked {}
impl sealed::Sealed for Success {}
impl sealed::Sealed for Failure {}
impl StatusState for Unchecked {}
impl StatusState for Success {}
impl StatusState for Failure {}

/// Implemented by [`Success`] only: the fields other than wr_id, status and vendor_err are valid
/// only on a successful completion ("some fields are only valid in certain opcodes and status
/// codes").
///
/// ```compile_fail,E0277
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| b.completion().byte_len())?; // the status is not known to be success
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "this field is valid only on a successful completion: check the status with `.result()` and read it from the `Ok` side",
    label = "the completion's status is not known to be success here",
    note = "a failed completion has only wr_id, status and vendor_err"
)]
pub trait Succeeded: StatusState + sealed::Sealed {}
impl Succeeded for Success {}

/// The completion a batch points at: reads go straight to the provider's `ibv_wc_read_*`
/// function pointers, only for the fields the CQ's flags `F` requested and, past wr_id and
/// status, only once the status is known to be success (`S`).
///
/// ```
/// use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<wc_flags!(BYTE_LEN | QP_NUM)>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(5, WcOpcode::RECV).byte_len(32).qp_num(17))?;
/// cq.poll_batch(|batch| {
///     let wc = batch.completion().result().expect("success");
///     assert_eq!((wc.opcode(), wc.byte_len(), wc.qp_num()), (WcOpcode::RECV, 32, 17));
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Completion<'b, F: WcFlags, S: StatusState = Unchecked> {
    cq: NonNull<sys::ibv_cq_ex>,
    _m: PhantomData<(&'b (), F, S, *const ())>,
}

/// Implemented by nothing: the bound of [`Completion`]'s `Send` and `Sync` impls, which
/// therefore never apply, so that the compiler's error says why a completion stays on its
/// thread rather than naming a raw pointer inside it.
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
/// software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV))?;
/// let mut ids = Vec::new(); // plain values, free to go to any thread
/// cq.poll_batch(|batch| ids.extend(batch.completion().result().ok().map(|wc| wc.wr_id())))?;
/// std::thread::spawn(move || assert_eq!(ids, [7])).join().unwrap();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `Completion` cannot leave the thread that polls: it is read from the CQ inside the batch, under the lock `ibv_start_poll` took; copy its fields (`wr_id`, `status`, `byte_len`, ...) and send those values",
    label = "a completion used on another thread",
    note = "a completion borrows its batch, which lives inside the closure of `poll_batch` on the polling thread"
)]
pub trait CompletionStaysOnItsThread: sealed::Sealed {}

// SAFETY: never applies (no type implements `CompletionStaysOnItsThread`, which is sealed): a
// completion is neither Send nor Sync, as without these impls; they only name the reason.
unsafe impl<F: WcFlags + CompletionStaysOnItsThread, S: StatusState> Send for Completion<'_, F, S> {}
// SAFETY: as above.
unsafe impl<F: WcFlags + CompletionStaysOnItsThread, S: StatusState> Sync for Completion<'_, F, S> {}

impl<'b, F: WcFlags, S: StatusState> Completion<'b, F, S> {
    /// `wr_id` of the completed work request.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(77, WcOpcode::SEND))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().wr_id(), 77))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn wr_id(&self) -> u64 {
        // SAFETY: inside a batch; the field belongs to the current completion.
        unsafe { (*self.cq.as_ptr()).wr_id }
    }

    /// The completion's status.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::WR_FLUSH_ERR, 0))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().status(), WcStatus::WR_FLUSH_ERR))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn status(&self) -> WcStatus {
        // SAFETY: as above.
        WcStatus::from_raw(unsafe { (*self.cq.as_ptr()).status })
    }

    #[inline(always)]
    fn cast<S2: StatusState>(self) -> Completion<'b, F, S2> {
        Completion {
            cq: self.cq,
            _m: PhantomData,
        }
    }
}

impl<'b, F: WcFlags> Completion<'b, F, Unchecked> {
    /// Splits on the status: `Ok` for success, with the opcode and the flagged fields; `Err`
    /// for a failure, with `vendor_err`.
    ///
    /// # Errors
    /// `Err` with the completion as [`Failure`] when its status is not `IBV_WC_SUCCESS`: only
    /// `wr_id`, `status` and `vendor_err` can be read from it.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::WR_FLUSH_ERR, 0))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().err().unwrap().status(), WcStatus::WR_FLUSH_ERR))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[allow(clippy::result_large_err)]
    #[inline(always)]
    pub fn result(
        self,
    ) -> std::result::Result<Completion<'b, F, Success>, Completion<'b, F, Failure>> {
        // SAFETY: inside a batch.
        if unsafe { (*self.cq.as_ptr()).status } == sys::ibv_wc_status::IBV_WC_SUCCESS {
            Ok(self.cast())
        } else {
            Err(self.cast())
        }
    }
}

impl<F: WcFlags> Completion<'_, F, Failure> {
    /// `ibv_wc_read_vendor_err`: the device's own code for the failure.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::REM_ACCESS_ERR, 0x33))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().err().unwrap().vendor_err(), 0x33))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn vendor_err(&self) -> u32 {
        // SAFETY: inside a batch, on the current completion.
        unsafe { cq_ex_call!(self.cq.as_ptr(), read_vendor_err) }
    }
}

macro_rules! flagged_reads {
    ($($(#[$m:meta])* $name:ident -> $t:ty = $read:ident, $flag:ident;)*) => {$(
        $(#[$m])*
        #[doc = concat!("\n\n```\n# use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};\n# let ctx = Context::open(\"sw0\")?;\nlet mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag\nsoftware::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).", stringify!($name), "(1))?;\ncq.poll_batch(|b| assert_eq!(b.completion().result().expect(\"success\").", stringify!($name), "(), 1))?;\n# Ok::<(), typed_verbs::Error>(())\n```")]
        #[inline(always)]
        pub fn $name(&self) -> $t
        where
            F: $flag,
            S: Succeeded,
        {
            // SAFETY: inside a batch, on a successful completion, of a CQ created with the
            // field's flag (the bounds), so the provider's read function is valid to call.
            unsafe { cq_ex_call!(self.cq.as_ptr(), $read) }
        }
    )*};
}

impl<F: WcFlags, S: StatusState> Completion<'_, F, S> {
    /// `ibv_wc_read_opcode`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(1))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").opcode(), WcOpcode::RECV))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn opcode(&self) -> WcOpcode
    where
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion.
        WcOpcode::from_raw(unsafe { cq_ex_call!(self.cq.as_ptr(), read_opcode) })
    }

    /// `ibv_wc_read_wc_flags`: the completion's own flags (`IBV_WC_GRH`, `IBV_WC_WITH_IMM`, ...).
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(5))?;
    /// cq.poll_batch(|b| {
    ///     let flags = b.completion().result().expect("success").completion_flags();
    ///     assert_ne!(flags & 2, 0); // IBV_WC_WITH_IMM
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn completion_flags(&self) -> u32
    where
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion.
        unsafe { cq_ex_call!(self.cq.as_ptr(), read_wc_flags) }
    }

    /// `ibv_wc_read_imm_data`, in host byte order: `Some` when the completion carries immediate
    /// data (its own `IBV_WC_WITH_IMM` flag), `None` otherwise. Needs `IMM` in the CQ's flags.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(0xbeef))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").imm_data(), Some(0xbeef)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn imm_data(&self) -> Option<u32>
    where
        F: WithImm,
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion of a CQ with IMM.
        unsafe {
            let own = cq_ex_call!(self.cq.as_ptr(), read_wc_flags);
            (own & ffi::IBV_WC_WITH_IMM != 0)
                .then(|| u32::from_be(cq_ex_call!(self.cq.as_ptr(), read_imm_data)))
        }
    }

    /// `ibv_wc_read_invalidated_rkey`: `Some` when the completion carries one (its own
    /// `IBV_WC_WITH_INV` flag). It shares the immediate-data field, so it needs `IMM`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).invalidated_rkey(0x1234))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").invalidated_rkey(), Some(0x1234)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn invalidated_rkey(&self) -> Option<u32>
    where
        F: WithImm,
        S: Succeeded,
    {
        // SAFETY: as for imm_data.
        unsafe {
            let own = cq_ex_call!(self.cq.as_ptr(), read_wc_flags);
            (own & ffi::IBV_WC_WITH_INV != 0).then(|| cq_ex_call!(self.cq.as_ptr(), read_imm_data))
        }
    }

    flagged_reads! {
        /// `ibv_wc_read_byte_len`.
        byte_len -> u32 = read_byte_len, WithByteLen;
        /// `ibv_wc_read_qp_num`: the local QP the completion belongs to.
        qp_num -> u32 = read_qp_num, WithQpNum;
        /// `ibv_wc_read_src_qp`: the remote QP of a UD receive.
        src_qp -> u32 = read_src_qp, WithSrcQp;
        /// `ibv_wc_read_slid`.
        slid -> u32 = read_slid, WithSlid;
        /// `ibv_wc_read_sl`.
        sl -> u8 = read_sl, WithSl;
        /// `ibv_wc_read_dlid_path_bits`.
        dlid_path_bits -> u8 = read_dlid_path_bits, WithDlidPathBits;
        /// `ibv_wc_read_completion_ts`: the device timestamp, in HCA clock units.
        completion_ts -> u64 = read_completion_ts, WithCompletionTimestamp;
        /// `ibv_wc_read_completion_wallclock_ns`: the timestamp in wall-clock nanoseconds.
        completion_wallclock_ns -> u64 = read_completion_wallclock_ns, WithCompletionTimestampWallclock;
        /// `ibv_wc_read_cvlan`.
        cvlan -> u16 = read_cvlan, WithCvlan;
        /// `ibv_wc_read_flow_tag`.
        flow_tag -> u32 = read_flow_tag, WithFlowTag;
    }
}

impl<F: WcFlags, S: StatusState> std::fmt::Debug for Completion<'_, F, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

crate::object::debug_handle!(CqEx<'a, F, T, C> where F: WcFlags, T: Threading);

impl<F: WcFlags, T: Threading, C> crate::sealed::SealedParent for CqEx<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::object::parent::ParentObject for CqEx<'_, F, T, C> {}
