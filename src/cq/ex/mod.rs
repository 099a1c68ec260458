//! Extended completion queues (ibv_create_cq_ex(3)) and their polling API.
//!
//! ```
//! use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
//! let ctx = Context::open("sw0")?;
//! let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?; // ibv_create_cq_ex
//! software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV).byte_len(5))?;
//! let mut received = Vec::new();
//! cq.poll_batch(|batch| { // ibv_start_poll; `Ok(None)` had the CQ been empty
//!     let mut next = Some(batch);
//!     while let Some(batch) = next {
//!         match batch.completion().result() {
//!             Ok(wc) => received.push((wc.wr_id(), wc.opcode(), wc.byte_len())),
//!             Err(wc) => println!("{} failed: {:?} ({})", wc.wr_id(), wc.status(), wc.vendor_err()),
//!         }
//!         next = batch.advance()?; // ibv_next_poll
//!     }
//!     Ok::<(), typed_verbs::Error>(())
//! })? // ibv_end_poll
//! .transpose()?;
//! assert_eq!(received, [(7, WcOpcode::RECV, 5)]);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
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
//! The guide's [poll loops](crate::guide::poll_loops) page shows the loops that
//! [`completion_record!`](crate::completion_record) generates for a CQ, and what they cost.

/// One completion of a batch: its status as a type, and the readers its CQ's flags allow.
mod completion;
/// A CQ's wc_flags as a type (WcFlags, WcFlagSet and its aliases), and which readers each flag
/// allows.
mod flag_set;
/// Polling: batches (ibv_start_poll to ibv_end_poll), who may open one (Poller, ArcPoller,
/// Pollable).
mod poll;

pub use completion::*;
pub use flag_set::*;
pub use poll::*;

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

impl<F: WcFlags, T: Threading, C> crate::sealed::SealedParent for CqEx<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::object::parent::ParentObject for CqEx<'_, F, T, C> {}
