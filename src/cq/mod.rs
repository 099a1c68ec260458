//! Completion queues created with ibv_create_cq(3), and what both kinds of CQ share: the
//! builder, the threading markers, and [`AnyCq`].
//!
//! ```
//! use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
//! let ctx = Context::open("sw0")?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?; // ibv_create_cq
//! software::inject(&cq, InjectedCompletion::success(1, WcOpcode::SEND))?;
//! let mut wc = [const { WorkCompletion::new() }; 16];
//! assert_eq!(cq.poll(&mut wc)?.len(), 1); // ibv_poll_cq
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! An extended CQ ([`ex`], `ibv_create_cq_ex`) has its `wc_flags` in its type and polls in
//! batches; [`channel`] wakes a thread when a completion arrives. The guide's
//! [guarantees](crate::guide::guarantees) page lists the rules each kind of CQ keeps.

// Completion channels (`ibv_create_comp_channel`), public as `typed_verbs::channel`.
pub mod channel;
// Extended CQs (`ibv_create_cq_ex`): `CqEx`, wc_flags as a type, batches, completions; public
// as `typed_verbs::cq_ex`.
pub mod ex;
// Work completions as `ibv_poll_cq` fills them: `WcStatus`, `WcOpcode`, `WorkCompletion`;
// public as `typed_verbs::wc`.
pub mod wc;
//
// Here: the CQ builder, the threading markers, `AnyCq`, each CQ's meta (its gate, its acks and
// the user context), and the legacy `Cq` (`ibv_create_cq`).

use crate::backend;
use crate::cq::channel::CompChannel;
use crate::cq::ex::{CqEx, WcFlags};
use crate::cq::wc::WorkCompletion;
use crate::device::Context;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::{self, sys};
use crate::object::parent::{Held, Keep, Parent};
use crate::object::{destroy, Destroy, Leftover, UserBox};
use crate::object::{gate, teardown};
use crate::pd::ParentDomain;
use crate::sync::Mutex;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::mem::MaybeUninit;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::sealed;

/// Whether a CQ may be used from several threads: [`Shared`] (the default) or
/// [`SingleThreaded`] (`IBV_CREATE_CQ_ATTR_SINGLE_THREADED`: "no locking is required").
///
/// ```
/// use typed_verbs::{Context, CqEx, Shared, SingleThreaded, Standard};
/// let ctx = Context::open("sw0")?;
/// let shared = CqEx::<Standard, Shared>::builder(&ctx).cqe(16).build()?; // Sync: any thread
/// let local = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(16).build()?; // this thread
/// # drop((shared, local));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait Threading: sealed::Sealed + QpContextOk<()> + 'static {
    /// The create flags this choice adds.
    const CREATE_FLAGS: u32;
    /// The threading of a QP whose other CQ has threading `B`: [`Shared`] only when both are
    /// (defined for every pair, so generic code needs no bound for it).
    #[doc(hidden)]
    type Join<B: Threading>: Threading;
}

/// A CQ the provider locks: it is `Sync`, and QPs using it may live on any thread.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = std::sync::Arc::new(typed_verbs::CqEx::<typed_verbs::Standard, typed_verbs::Shared>::builder(&ctx).cqe(8).build()?);
/// std::thread::scope(|s| { s.spawn(|| cq.cqe()); });
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Shared {}
/// A CQ created with `IBV_CREATE_CQ_ATTR_SINGLE_THREADED`: the provider takes no lock, so the
/// CQ is not `Sync`, and a QP using it is neither `Send` nor `Sync`.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard, typed_verbs::SingleThreaded>::builder(&ctx).cqe(8).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// It is not `Sync`:
///
/// ```compile_fail,E0277
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard, typed_verbs::SingleThreaded>::builder(&ctx).cqe(8).build()?;
/// std::thread::scope(|s| { s.spawn(|| cq.cqe()); }); // a SINGLE_THREADED CQ cannot be shared
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum SingleThreaded {}

/// Implemented by [`Shared`] only: the bound of the `Sync` of a CQ and the `Send` and `Sync` of
/// a QP or [`Poller`](crate::Poller) on one, so that a SINGLE_THREADED CQ's stay on their
/// thread, with an error that says why.
///
/// ```compile_fail,E0277
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard, typed_verbs::SingleThreaded>::builder(&ctx).cqe(8).build()?;
/// std::thread::scope(|s| { s.spawn(|| cq.cqe()); }); // the error names this trait
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a SINGLE_THREADED CQ, and a QP or poller that uses one, stays on its thread (the provider takes no lock on it): create the CQ with `Shared` (the default) to use it from several threads",
    label = "used from another thread",
    note = "`CqEx::<F, SingleThreaded>` is `IBV_CREATE_CQ_ATTR_SINGLE_THREADED`: \"no locking is required\""
)]
pub trait SharedAcrossThreads: Threading + sealed::Sealed {}
impl SharedAcrossThreads for Shared {}

impl sealed::Sealed for Shared {}
impl sealed::Sealed for SingleThreaded {}
impl Threading for Shared {
    const CREATE_FLAGS: u32 = 0;
    type Join<B: Threading> = B;
}
impl Threading for SingleThreaded {
    const CREATE_FLAGS: u32 = ffi::CREATE_CQ_ATTR_SINGLE_THREADED;
    type Join<B: Threading> = SingleThreaded;
}

/// The threading of a QP that uses two CQs: [`Shared`] only when both are. Implemented for
/// every pair; name the result with [`QpThreading`](crate::qp::QpThreading).
///
/// ```
/// use typed_verbs::{cq::JoinThreading, Shared, SingleThreaded};
/// fn same<A, B>() where A: 'static, B: 'static {
///     assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
/// }
/// same::<<Shared as JoinThreading<Shared>>::Out, Shared>();
/// same::<<Shared as JoinThreading<SingleThreaded>>::Out, SingleThreaded>();
/// ```
pub trait JoinThreading<B: Threading>: Threading + sealed::Sealed {
    /// The result.
    type Out: Threading;
}
impl<A: Threading, B: Threading> JoinThreading<B> for A {
    type Out = A::Join<B>;
}

/// The user contexts a CQ of threading `T` may hold. A [`Shared`] CQ is for several threads,
/// so its context must be `Send + Sync`; a [`SingleThreaded`] one may hold any (an
/// `Rc<RefCell<..>>`). That is sound because the CQ is `Send` only when its context is, and
/// `Sync` never; its QPs and its `Poller` never leave their thread and never read the context;
/// and a CQ's drop moves the context out and drops it on the dropping thread before the C
/// object's destroy runs or is queued behind a waiting QP ([the safety model](crate::safety)),
/// so no other thread meets it.
///
/// ```
/// use std::{cell::RefCell, rc::Rc};
/// use typed_verbs::{Context, CqEx, SingleThreaded, Standard};
/// let ctx = Context::open("sw0")?;
/// // A Shared CQ's context is Send + Sync; a SingleThreaded CQ may hold an Rc.
/// let shared = CqEx::<Standard>::builder(&ctx).cqe(8).context(String::from("rx")).build()?;
/// let local = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(8).context(Rc::new(RefCell::new(0))).build()?;
/// assert_eq!(shared.user_context(), "rx");
/// # drop(local);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// An `Rc` in a Shared CQ does not compile:
///
/// ```compile_fail,E0277
/// # use std::rc::Rc;
/// # use typed_verbs::{Context, CqEx, Standard};
/// # let ctx = Context::open("sw0")?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(8).context(Rc::new(0)).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "the user context of a Shared CQ must be Send + Sync, and `{Self}` is not: create the CQ with `SingleThreaded` to keep it on one thread, or use a thread-safe context (`Arc<Mutex<..>>`)",
    label = "this CQ's user context is not Send + Sync",
    note = "a legacy `Cq` is always Shared"
)]
pub trait CqContext<T: Threading>: crate::sealed::SealedCqContext<T> {}
impl<C: Send + Sync> crate::sealed::SealedCqContext<Shared> for C {}
impl<C: Send + Sync> CqContext<Shared> for C {}
impl<C> crate::sealed::SealedCqContext<SingleThreaded> for C {}
impl<C> CqContext<SingleThreaded> for C {}

/// `T: QpContextOk<C>`: `C` may be the user context of a QP whose threading is `T` (the
/// threading of its CQs, [`QpThreading`](crate::QpThreading)): any type when `T` is
/// [`SingleThreaded`] (the QP is then neither `Send` nor `Sync`, and its context stays with
/// it), `Send + Sync` when it is [`Shared`]. Every threading accepts `()`, so code generic over
/// the CQs needs no bound for a QP without a context. Sealed.
///
/// ```
/// use std::rc::Rc as StdRc;
/// use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let cq = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).context(StdRc::new(5)).build()?; // stays here
/// # drop(qp);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{C}` may not be the user context of a QP whose threading is `{Self}`: on Shared CQs it must be Send + Sync; in generic code over the user context, add the bound `{Self}: typed_verbs::QpContextOk<C>`",
    label = "this QP's user context is not allowed for its threading"
)]
pub trait QpContextOk<C>: crate::sealed::SealedQpContext<C> {}
impl<C: Send + Sync> crate::sealed::SealedQpContext<C> for Shared {}
impl<C: Send + Sync> QpContextOk<C> for Shared {}
impl<C> crate::sealed::SealedQpContext<C> for SingleThreaded {}
impl<C> QpContextOk<C> for SingleThreaded {}

/// A CQ of either kind, as a QP's send or receive CQ ("may be the same CQ, plain or extended").
///
/// ```
/// use typed_verbs::{AnyCq, Context, Cq, CqEx, Standard};
/// fn entries<Q: AnyCq>(cq: &Q) -> i32 {
///     unsafe { (*cq.as_raw_cq()).cqe } // the C CQ, for reading
/// }
/// let ctx = Context::open("sw0")?;
/// let (legacy, extended) = (Cq::builder(&ctx).cqe(4).build()?, CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
/// assert!(entries(&legacy) >= 4 && entries(&extended) >= 4);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a plain CQ: a QP built with `Qp::builder` completes on a `Cq` or `CqEx`; pass one of those, or build the QP with `Qp::slot_builder` to use a slot CQ",
    label = "not a plain CQ",
    note = "a `SlotCq` takes the completions of slot queues only: build the QP with `Qp::slot_builder` (or `slot_builder_with_srq`)"
)]
pub trait AnyCq: sealed::Sealed + crate::object::parent::ParentObject {
    /// The CQ's threading.
    type Threading: Threading;
    /// The CQ as `struct ibv_cq *` (for an extended CQ, `ibv_cq_ex_to_cq`).
    ///
    /// ```
    /// use typed_verbs::AnyCq;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
    /// assert_eq!(cq.as_raw_cq(), cq.as_raw().cast()); // ibv_cq_ex_to_cq
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn as_raw_cq(&self) -> *mut sys::ibv_cq;
}

/// Kind markers of [`CqBuilder`].
///
/// ```
/// use typed_verbs::{cq::kind, Context, Cq, CqBuilder, CqEx, Shared, Standard};
/// let ctx = Context::open("sw0")?;
/// let legacy: CqBuilder<'_, kind::Legacy> = Cq::builder(&ctx);
/// let extended: CqBuilder<'_, kind::Extended<Standard, Shared>> = CqEx::<Standard>::builder(&ctx);
/// # drop((legacy, extended));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// Which polling each kind allows: [the guide's guarantees](crate::guide::guarantees).
pub mod kind {
    use std::marker::PhantomData;
    /// Builds a [`crate::cq::Cq`] with `ibv_create_cq`.
    ///
    /// ```
    /// let ctx = typed_verbs::Context::open("sw0")?;
    /// let b: typed_verbs::CqBuilder<'_, typed_verbs::cq::kind::Legacy> = typed_verbs::Cq::builder(&ctx);
    /// # drop(b);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[derive(Debug)]
    pub struct Legacy;
    /// Builds a [`crate::cq::ex::CqEx`] with `ibv_create_cq_ex`.
    ///
    /// ```
    /// use typed_verbs::{cq::kind::Extended, Context, CqBuilder, CqEx, Shared, Standard};
    /// let ctx = Context::open("sw0")?;
    /// let b: CqBuilder<'_, Extended<Standard, Shared>> = CqEx::<Standard>::builder(&ctx);
    /// # drop(b);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[derive(Debug)]
    pub struct Extended<F, T>(PhantomData<(F, T)>);
}

/// The attributes of a CQ to create. Made by [`Cq::builder`] or [`CqEx::builder`].
///
/// ```
/// use typed_verbs::{CompChannel, Context, Cq, CqEx, Standard};
/// let ctx = Context::open("sw0")?;
/// let channel = CompChannel::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx)
///     .cqe(256)              // at least 256 entries
///     .channel(&channel)     // events on this channel
///     .comp_vector(0)
///     .context("recv cq")    // a typed user context
///     .build()?;
/// assert!(cq.cqe() >= 256);
/// let legacy = Cq::builder(&ctx).cqe(16).build()?; // ibv_create_cq
/// # drop((cq, legacy));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct CqBuilder<'a, K, C = ()> {
    ctx: Held<'a, Context>,
    cqe: u32,
    user: C,
    channel: *mut sys::ibv_comp_channel,
    comp_vector: u32,
    flags: u32,
    parent: *mut sys::ibv_pd,
    /// What keeps the channel and the parent domain alive, if they are shared.
    keep: [Keep; 2],
    _k: PhantomData<(K, &'a ())>,
}

impl<'a, K, C> CqBuilder<'a, K, C> {
    pub(crate) fn new(ctx: impl Parent<'a, Target = Context>, user: C) -> Self {
        CqBuilder {
            ctx: ctx.into_held(),
            cqe: 1,
            user,
            channel: ptr::null_mut(),
            comp_vector: 0,
            flags: 0,
            parent: ptr::null_mut(),
            keep: [Keep::NONE, Keep::NONE],
            _k: PhantomData,
        }
    }

    /// The minimum number of entries (default 1). "ibv_create_cq() may create a CQ with size
    /// greater than or equal to the requested size": read the actual size with `cqe()`.
    /// Checked before the call: at least 1 and at most the device's `max_cqe`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(1000).build()?;
    /// assert!(cq.cqe() >= 1000);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cqe(mut self, cqe: u32) -> Self {
        self.cqe = cqe;
        self
    }

    /// The completion channel that completion events go to (none by default). The CQ holds
    /// the channel (`&channel`, or `&Arc<CompChannel>`: [`crate::object::parent`]), so the channel
    /// cannot be destroyed while the CQ lives.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let channel = typed_verbs::CompChannel::new(&ctx)?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(16).channel(&channel).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn channel<'c: 'a>(mut self, channel: impl Parent<'a, Target = CompChannel<'c>>) -> Self {
        let channel = channel.into_held();
        self.channel = channel.get().as_raw();
        self.keep[0] = channel.into_keep();
        self
    }

    /// The completion vector (default 0). "It must be at least zero and less than
    /// context->num_comp_vectors": checked before the call.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let last = ctx.num_comp_vectors() - 1;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(16).comp_vector(last).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn comp_vector(mut self, v: u32) -> Self {
        self.comp_vector = v;
        self
    }

    /// The typed user context, in place of `void *cq_context`: owned by the CQ, returned by
    /// `user_context()` (and by a completion event of the CQ,
    /// [`CqEvent::user_context`](crate::event::CqEvent::user_context)).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(16).context(7u32).build()?;
    /// assert_eq!(*cq.user_context(), 7);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn context<C2>(self, user: C2) -> CqBuilder<'a, K, C2> {
        CqBuilder {
            ctx: self.ctx,
            cqe: self.cqe,
            user,
            channel: self.channel,
            comp_vector: self.comp_vector,
            flags: self.flags,
            parent: self.parent,
            keep: self.keep,
            _k: PhantomData,
        }
    }

    /// The checks a C program would learn about from EINVAL, made before any FFI call.
    fn check(&self, verb: Verb) -> Result<()> {
        let ctx = self.ctx.get();
        let max = ctx.attr().max_cqe;
        if self.cqe < 1 || self.cqe > max {
            return Err(Error::range(verb, "cqe", self.cqe.into(), 1, max.into()));
        }
        let n = ctx.num_comp_vectors();
        if self.comp_vector >= n {
            return Err(Error::range(
                verb,
                "comp_vector",
                self.comp_vector.into(),
                0,
                n.saturating_sub(1).into(),
            ));
        }
        // SAFETY: a non-null channel is a live CompChannel borrowed by the builder.
        if !self.channel.is_null() && unsafe { (*self.channel).context } != ctx.as_raw() {
            return Err(Error {
                verb,
                kind: ErrorKind::WrongContext("channel"),
            });
        }
        // SAFETY: a non-null parent is a live ParentDomain borrowed by the builder.
        if !self.parent.is_null() && unsafe { (*self.parent).context } != ctx.as_raw() {
            return Err(Error {
                verb,
                kind: ErrorKind::WrongContext("parent_domain"),
            });
        }
        Ok(())
    }
}

/// The acknowledgement state of one CQ's completion events, shared by the CQ (at the head of
/// its `cq_context`, see [`CqMeta`]) and every event of it still held.
pub(crate) struct CqAcks {
    state: Mutex<AckState>,
}

struct AckState {
    /// Events got and not acked yet (fungible: an ack is a count, not an identity).
    unacked: u64,
    /// Set while the CQ is being destroyed, and for good once it is: nothing acks any more
    /// (the destroy acked everything held), and an event got meanwhile is acked at once.
    closing: bool,
}

impl CqAcks {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(CqAcks {
            state: Mutex::new(AckState {
                unacked: 0,
                closing: false,
            }),
        })
    }

    /// An event of `cq` was got: counted, or acked at once if the CQ is being destroyed.
    ///
    /// # Safety
    /// `cq` is the live CQ of these acks, with this event got and not acked.
    pub(crate) unsafe fn got(&self, cq: *mut sys::ibv_cq) {
        let mut st = self.state.lock();
        if st.closing {
            // SAFETY: the destroy in progress waits for this ack, so the CQ is live.
            unsafe { ack_cq(cq, 1) };
        } else {
            st.unacked += 1;
        }
    }

    /// Acks up to `n` events of `cq`, unless the CQ is being (or was) destroyed.
    ///
    /// # Safety
    /// `cq` is the CQ of these acks (live unless `closing`, which is checked under the lock).
    pub(crate) unsafe fn ack(&self, cq: *mut sys::ibv_cq, n: u64) {
        let mut st = self.state.lock();
        let k = n.min(st.unacked);
        if st.closing || k == 0 {
            return;
        }
        // SAFETY: not closing, so the CQ is live (its destroy sets `closing` under this lock
        // first); `k` events were got and not acked.
        unsafe { ack_cq(cq, k) };
        st.unacked -= k;
    }

    /// Before `ibv_destroy_cq`: acks every event still held and stops later acks.
    ///
    /// # Safety
    /// `cq` is the live CQ of these acks.
    pub(crate) unsafe fn close(&self, cq: *mut sys::ibv_cq) {
        let mut st = self.state.lock();
        if st.unacked > 0 {
            // SAFETY: caller's contract; that many events were got and not acked.
            unsafe { ack_cq(cq, st.unacked) };
            st.unacked = 0;
        }
        st.closing = true;
    }

    /// After a failed `ibv_destroy_cq`: the CQ lives on, and events ack again.
    pub(crate) fn reopen(&self) {
        self.state.lock().closing = false;
    }
}

/// `ibv_ack_cq_events(cq, n)`, in chunks of `u32::MAX`.
///
/// # Safety
/// `cq` is live, with at least `n` events got and not acked.
unsafe fn ack_cq(cq: *mut sys::ibv_cq, mut n: u64) {
    while n > 0 {
        let k = n.min(u32::MAX as u64) as u32;
        // SAFETY: caller's contract.
        unsafe { backend::of((*cq).context).ack_cq_events(cq, k) };
        n -= u64::from(k);
    }
}

/// What a CQ's `cq_context` points at: its gate first (`#[repr(C)]`, so that the teardowns
/// find it knowing neither `C` nor this type: [`teardown`] is below the CQ), the
/// acknowledgement state of its completion events, what keeps its context, channel and parent
/// domain alive (released when the meta is freed, after the CQ is destroyed), and the typed
/// user context. The fields before `user` are at the same offsets whatever `C` is.
#[repr(C)]
pub(crate) struct CqMeta<C> {
    /// Who may take the provider's CQ lock next: a batch or a teardown ([`teardown`]'s gates);
    /// and whether the CQ's one [`Poller`](crate::Poller) lives (an extended CQ's).
    pub(crate) gate: gate::Gate,
    pub(crate) acks: Arc<CqAcks>,
    /// Held for its `Drop` only.
    #[allow(dead_code)]
    keep: [Keep; 3],
    pub(crate) user: C,
}

// The teardowns read a CQ's gate at the start of its meta (`teardown::gate_of`), whatever `C`.
const _: () = assert!(std::mem::offset_of!(CqMeta<()>, gate) == 0);
const _: () = assert!(std::mem::offset_of!(CqMeta<[u64; 4]>, gate) == 0);

impl<C> CqMeta<C> {
    fn new<K>(b: CqBuilder<'_, K, C>) -> (Self, *mut sys::ibv_context) {
        let [channel, parent] = b.keep;
        let ctx = b.ctx.get().as_raw();
        let meta = CqMeta {
            gate: gate::Gate::new(),
            acks: CqAcks::new(),
            keep: [b.ctx.into_keep(), channel, parent],
            user: b.user,
        };
        (meta, ctx)
    }
}

/// The fields of a CQ's meta that do not depend on its user context type `C`: the
/// acknowledgement state, the gate (with the poller's claim) and the kept parents.
///
/// # Safety
/// `cq` is a live CQ made by a builder; the reference does not outlive it.
pub(crate) unsafe fn meta<'a>(cq: *mut sys::ibv_cq) -> &'a CqMeta<()> {
    // SAFETY: caller's contract: cq_context is a CqMeta<C>, whose fields before `user` are at
    // the same offsets whatever `C` is (repr(C)), and which is at least as large as
    // CqMeta<()> (a zero-sized `user`).
    unsafe { &*((*cq).cq_context as *const CqMeta<()>) }
}

/// The gate of a CQ made by a builder ([`teardown`]).
///
/// # Safety
/// As [`meta`]'s.
pub(crate) unsafe fn gate<'a>(cq: *mut sys::ibv_cq) -> &'a gate::Gate {
    // SAFETY: caller's contract.
    unsafe { &meta(cq).gate }
}

/// `ibv_poll_cq` is refused inside a polling batch (see [`crate::object::teardown`]).
#[inline(always)]
fn refuse_inside_batch() -> Result<()> {
    if teardown::inside_batch() {
        return Err(Error {
            verb: Verb::PollCq,
            kind: ErrorKind::BatchOpen,
        });
    }
    Ok(())
}

/// The `Drop` of a CQ of either kind: destroys it (or, while a QP of its context dropped inside
/// a polling batch waits for the batch's end, queues the destroy behind it: [`crate::object::teardown`])
/// and drops its user context.
///
/// # Safety
/// `cq` is a live CQ made by a builder with user context `C`, whose handle is gone.
pub(crate) unsafe fn drop_cq<C>(cq: *mut sys::ibv_cq) {
    /// The C CQ's destroy, and the rest of its context once the user context is moved out:
    /// freed as CqMeta<ManuallyDrop<C>> (the same layout, repr(C)), without dropping the user
    /// context again. A CQ that cannot be destroyed keeps what is left of its context.
    unsafe fn destroy<C>(cq: *mut c_void, meta: *mut c_void) {
        // SAFETY: `drop_cq`'s CQ and its CqMeta<C> whose user context was moved out; once.
        unsafe {
            if destroy_cq(cq.cast()).is_ok() {
                drop(Box::from_raw(meta as *mut CqMeta<ManuallyDrop<C>>));
            }
        }
    }
    // SAFETY: caller's contract: cq_context is the CQ's CqMeta<C>, ours since the handle is
    // gone. The user context is moved out first, so that nothing that runs the queued destroy
    // (on any thread) can meet it, and dropped last, after the CQ is destroyed or queued: a
    // panic there then loses nothing.
    unsafe {
        let meta = (*cq).cq_context as *mut CqMeta<C>;
        let user = ptr::read(&(*meta).user);
        if !teardown::wait_behind((*cq).context, destroy::<C>, cq.cast(), meta.cast()) {
            destroy::<C>(cq.cast(), meta.cast());
        }
        drop(user);
    }
}

/// The typed user context of a CQ made by a builder with user context type `C`.
///
/// # Safety
/// `cq` is such a live CQ; the reference does not outlive it.
pub(crate) unsafe fn user_context<'a, C>(cq: *mut sys::ibv_cq) -> &'a C {
    // SAFETY: cq_context is the UserBox<CqMeta<C>> the builder leaked to the CQ; it lives until
    // the CQ is destroyed.
    unsafe { &(*((*cq).cq_context as *const CqMeta<C>)).user }
}

impl<'a, C> CqBuilder<'a, kind::Legacy, C> {
    /// `ibv_create_cq`.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] for `cqe` outside `1..=max_cqe` or `comp_vector` at or past
    ///   `num_comp_vectors`, before the call.
    /// - [`ErrorKind::WrongContext`]`("channel")` for a channel of another context.
    /// - The device's errno from `ibv_create_cq` ([`ErrorKind::Os`]): `ENOMEM` when out of CQs or
    ///   memory.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(100).build()?;
    /// assert!(cq.cqe() >= 100); // sw0 and rxe round 100 up to 127
    /// let too_big = typed_verbs::Cq::builder(&ctx).cqe(ctx.attr().max_cqe + 1).build();
    /// assert!(matches!(too_big.unwrap_err().kind, typed_verbs::ErrorKind::OutOfRange { .. }));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<Cq<'a, C>>
    where
        C: CqContext<Shared>,
    {
        self.check(Verb::CreateCq)?;
        let (cqe, channel, comp_vector) = (self.cqe, self.channel, self.comp_vector);
        let (meta, ctx) = CqMeta::new(self);
        let user = UserBox::new(meta);
        // SAFETY: a live context (kept alive by the meta); the channel (if any) is live and of
        // this context; the integers were range-checked above.
        let raw = unsafe {
            backend::of(ctx).create_cq(ctx, cqe as i32, user.as_void(), channel, comp_vector as i32)
        }
        .map_err(|e| Error::os(Verb::CreateCq, e))?; // `user` is freed on this path
        user.into_raw();
        Ok(Cq {
            raw,
            _m: PhantomData,
        })
    }
}

impl<'a, F: WcFlags, T: Threading, C> CqBuilder<'a, kind::Extended<F, T>, C> {
    /// Takes the CQ's resources from `parent_domain` (`IBV_CQ_INIT_ATTR_MASK_PD`). The CQ
    /// borrows it. A device without parent domains cannot make one in the first place.
    ///
    /// ```
    /// use typed_verbs::{Context, CqEx, Pd, ParentDomain, Standard};
    /// let ctx = Context::open("sw0")?;
    /// let pd = Pd::new(&ctx)?;
    /// let parent = ParentDomain::new(&ctx, &pd)?; // EOPNOTSUPP on rxe
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).parent_domain(&parent).build()?;
    /// # drop(cq);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn parent_domain<'p: 'a>(
        mut self,
        parent_domain: impl Parent<'a, Target = ParentDomain<'p>>,
    ) -> Self {
        let pd = parent_domain.into_held();
        self.parent = pd.get().as_raw();
        self.keep[1] = pd.into_keep();
        self
    }

    /// Adds `IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN`: the CQ "will not pass to error state if
    /// overrun, CQE always will be written to next entry".
    ///
    /// # Safety
    /// "An application must be designed to avoid ever overflowing the CQ, otherwise CQEs might
    /// be lost." A lost completion is a work request whose buffers the program may believe are
    /// still in use by the device, or a receive it never learns of; the caller guarantees that
    /// outstanding work requests never exceed the CQ's actual `cqe`.
    ///
    /// ```
    /// # use typed_verbs::{Context, CqEx, Standard};
    /// # let ctx = Context::open("sw0")?;
    /// // SAFETY: this program never has more than 16 completions outstanding on the CQ.
    /// let cq = unsafe { CqEx::<Standard>::builder(&ctx).cqe(16).ignore_overrun() }.build()?;
    /// # drop(cq);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub unsafe fn ignore_overrun(mut self) -> Self {
        self.flags |= ffi::CREATE_CQ_ATTR_IGNORE_OVERRUN;
        self
    }

    /// `ibv_create_cq_ex`, with `wc_flags` from `F` and create flags from `T` (and
    /// [`ignore_overrun`](Self::ignore_overrun)). A device lacking a flag gives EOPNOTSUPP.
    /// A [`Shared`] CQ's user context must be `Send + Sync` ([`CqContext`]).
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] for `cqe` outside `1..=max_cqe` or `comp_vector` at or past
    ///   `num_comp_vectors`, before the call.
    /// - [`ErrorKind::WrongContext`] naming `channel` or `parent_domain` for one of another context.
    /// - The device's errno from `ibv_create_cq_ex` ([`ErrorKind::Os`]): `EOPNOTSUPP` for a
    ///   `wc_flags` bit, a create flag or a parent domain the device lacks
    ///   ([`Error::is_unsupported`](crate::Error::is_unsupported)), `ENOMEM` when out of resources.
    /// - [`ErrorKind::MissingProviderOp`] when the provider did not fill a polling function the flags
    ///   need (the CQ is destroyed).
    ///
    /// ```
    /// use typed_verbs::{wc_flags, Context, CqEx};
    /// let ctx = Context::open("sw0")?;
    /// match CqEx::<wc_flags!(BYTE_LEN | COMPLETION_TIMESTAMP)>::builder(&ctx).cqe(16).build() {
    ///     Ok(cq) => drop(cq),
    ///     Err(e) if e.is_unsupported() => println!("no completion timestamps on {}", ctx.device_name()),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<CqEx<'a, F, T, C>>
    where
        C: CqContext<T>,
    {
        self.check(Verb::CreateCqEx)?;
        let flags = self.flags | T::CREATE_FLAGS;
        let mut comp_mask = 0;
        if flags != 0 {
            comp_mask |= ffi::CQ_INIT_ATTR_MASK_FLAGS;
        }
        if !self.parent.is_null() {
            comp_mask |= ffi::CQ_INIT_ATTR_MASK_PD;
        }
        let (cqe, channel, comp_vector, parent) =
            (self.cqe, self.channel, self.comp_vector, self.parent);
        let (meta, ctx) = CqMeta::new(self);
        let user = UserBox::new(meta);
        let mut attr = sys::ibv_cq_init_attr_ex {
            cqe,
            cq_context: user.as_void(),
            channel,
            comp_vector,
            wc_flags: F::BITS,
            comp_mask,
            flags,
            parent_domain: parent,
        };
        // SAFETY: a live context (kept alive by the meta); channel and parent domain live and
        // of this context; `attr` valid for the call.
        let raw = unsafe { backend::of(ctx).create_cq_ex(ctx, &mut attr) }
            .map_err(|e| Error::os(Verb::CreateCqEx, e))?; // `user` is freed on this path
        user.into_raw();
        let cq = CqEx::from_raw(raw);
        // Named provider faults are the backend's to work around (rxe's next_poll, on rxe).
        // SAFETY: a CQ just created on the live `ctx`, not yet shared.
        unsafe { backend::of(ctx).cq_ex_workarounds(ctx, raw) };
        // SAFETY: a CQ just created; its function pointers are only read.
        let ops = unsafe { raw.as_ref() };
        if let Err(op) = crate::cq::ex::check_provider_ops::<F>(ops) {
            drop(cq); // ibv_destroy_cq, and the user context with it
            return Err(Error {
                verb: Verb::CreateCqEx,
                kind: ErrorKind::MissingProviderOp(op),
            });
        }
        Ok(cq)
    }
}

/// A completion queue created with `ibv_create_cq`, polled with `ibv_poll_cq` into the caller's
/// array. It holds its context and channel; QPs that use it hold it (borrowed, or shared through an
/// `Arc`: [`crate::object::parent`]), so "ibv_destroy_cq()
/// fails if any queue pair is still associated with this CQ" cannot happen.
///
/// ```
/// use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
/// let ctx = Context::open("sw0")?;
/// let cq = Cq::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(9, WcOpcode::SEND))?;
/// let mut wc = [const { WorkCompletion::new() }; 8];
/// let done = cq.poll(&mut wc)?;
/// assert_eq!(done.len(), 1);
/// assert_eq!(done[0].success().map(|s| s.wr_id()), Some(9));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Cq<'a, C = ()> {
    raw: NonNull<sys::ibv_cq>,
    _m: PhantomData<(&'a Context, C)>,
}

// SAFETY: ibv_poll_cq and ibv_req_notify_cq lock inside the provider; the user context is
// reached only as &C, so C: Sync is needed to share and C: Send to move.
unsafe impl<C: Send> Send for Cq<'_, C> {}
// SAFETY: as above.
unsafe impl<C: Sync> Sync for Cq<'_, C> {}

/// Not implemented by [`Cq`]: the polling iterator (`ibv_start_poll`) exists only for CQs
/// created with `ibv_create_cq_ex`.
///
/// ```compile_fail,E0277
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let mut cq = typed_verbs::Cq::builder(&ctx).cqe(16).build()?;
/// cq.poll_batch(|_batch| ())?; // poll_batch needs a CqEx
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "poll_batch (ibv_start_poll) needs a CQ created with ibv_create_cq_ex: make a `CqEx` instead of a legacy `Cq`, or call `poll` on this one",
    label = "a legacy `Cq` has no ibv_start_poll iterator",
    note = "a `Cq` is polled with `cq.poll(&mut [WorkCompletion; N])` (ibv_poll_cq)"
)]
pub trait ExtendedPolling: sealed::Sealed {}

impl<'a> Cq<'a, ()> {
    /// Starts building a CQ on `ctx` (`&ctx`, or `&Arc<Context>` for a CQ that keeps its
    /// context alive: [`crate::object::parent`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(32).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder(ctx: impl Parent<'a, Target = Context>) -> CqBuilder<'a, kind::Legacy, ()> {
        CqBuilder::new(ctx, ())
    }
}

impl<'a, C> Cq<'a, C> {
    /// The actual number of entries (at least the requested `cqe`).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(100).build()?;
    /// assert!(cq.cqe() >= 100);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cqe(&self) -> u32 {
        // SAFETY: a live CQ; `cqe` is written by the provider at creation.
        unsafe { (*self.raw.as_ptr()).cqe.max(0) as u32 }
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(4).context("tx").build()?;
    /// assert_eq!(*cq.user_context(), "tx");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        // SAFETY: a live CQ made by the builder with `C`; the borrow of `self` bounds the
        // reference.
        unsafe { user_context(self.raw.as_ptr()) }
    }

    /// `ibv_poll_cq`: moves up to `wc.len()` completions into `wc` and returns the filled part.
    #[inline]
    ///
    /// Refused with [`ErrorKind::BatchOpen`] inside [`CqEx::poll_batch`]: `ibv_poll_cq` takes
    /// this CQ's lock, which a thread holding another CQ's lock never waits for
    /// ([the safety model](crate::safety)).
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] inside a polling batch, before the call.
    /// - The provider's errno from `ibv_poll_cq` ([`ErrorKind::Os`]), which it reports only for a
    ///   CQ in error.
    ///
    /// ```
    /// # use typed_verbs::{Context, Cq, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// let mut wc = [const { WorkCompletion::new() }; 16];
    /// for c in cq.poll(&mut wc)? {
    ///     println!("{} {:?}", c.wr_id(), c.status());
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn poll<'w>(&self, wc: &'w mut [WorkCompletion]) -> Result<&'w [WorkCompletion]> {
        refuse_inside_batch()?;
        let n = wc.len().min(i32::MAX as usize) as i32;
        // SAFETY: a live CQ; WorkCompletion is repr(transparent) over ibv_wc and `wc` has room
        // for `n` entries.
        let got = unsafe { sys::ibv_poll_cq(self.raw.as_ptr(), n, wc.as_mut_ptr().cast()) };
        if got < 0 {
            return Err(Error::os(Verb::PollCq, -got));
        }
        Ok(&wc[..got as usize])
    }

    /// `ibv_poll_cq` into an array the caller need not initialise (a stack array of
    /// `MaybeUninit`); returns the filled, now initialised, part. Refused inside a batch, as
    /// [`poll`](Self::poll).
    ///
    /// # Errors
    /// As [`poll`](Self::poll).
    ///
    /// ```
    /// # use std::mem::MaybeUninit;
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// software::inject(&cq, InjectedCompletion::success(3, WcOpcode::RECV).byte_len(8))?;
    /// let mut wc = [const { MaybeUninit::<WorkCompletion>::uninit() }; 16];
    /// let done = cq.poll_uninit(&mut wc)?;
    /// assert_eq!(done[0].wr_id(), 3);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_uninit<'w>(
        &self,
        wc: &'w mut [MaybeUninit<WorkCompletion>],
    ) -> Result<&'w [WorkCompletion]> {
        refuse_inside_batch()?;
        let n = wc.len().min(i32::MAX as usize) as i32;
        // SAFETY: a live CQ; WorkCompletion is repr(transparent) over ibv_wc, so the array has
        // room for `n` of them; ibv_poll_cq writes the first `got`.
        let got = unsafe { sys::ibv_poll_cq(self.raw.as_ptr(), n, wc.as_mut_ptr().cast()) };
        if got < 0 {
            return Err(Error::os(Verb::PollCq, -got));
        }
        // SAFETY: the first `got` entries were written by the provider.
        Ok(unsafe {
            std::slice::from_raw_parts(wc.as_ptr().cast::<WorkCompletion>(), got as usize)
        })
    }

    /// `ibv_req_notify_cq`: asks for a completion event on the CQ's channel for the next
    /// completion (or, with `solicited_only`, the next solicited one). One event per arming:
    /// get it with [`CompChannel::get_cq_event`] and arm again.
    ///
    /// # Errors
    /// The provider's errno from `ibv_req_notify_cq` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context, Cq};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// let cq = Cq::builder(&ctx).cqe(16).channel(&channel).build()?;
    /// cq.req_notify(false)?; // the next completion raises an event on `channel`
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        // SAFETY: a live CQ.
        match unsafe { sys::ibv_req_notify_cq(self.raw.as_ptr(), solicited_only as i32) } {
            0 => Ok(()),
            e => Err(Error::os(Verb::ReqNotifyCq, e.abs())),
        }
    }

    /// Never compiles: a legacy CQ has no `ibv_start_poll`. Present so that the compiler says
    /// what to do instead.
    #[doc(hidden)]
    pub fn poll_batch<R>(
        &mut self,
        _f: impl FnOnce(crate::cq::ex::Batch<'_, crate::cq::ex::NoFields>) -> R,
    ) -> Result<Option<R>>
    where
        Self: ExtendedPolling,
    {
        unreachable!("no Cq implements ExtendedPolling")
    }

    /// The C CQ. It stays owned by `self`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(4).build()?;
    /// assert_eq!(unsafe { (*cq.as_raw()).cqe } as u32, cq.cqe());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_cq {
        self.raw.as_ptr()
    }

    /// `ibv_destroy_cq`. If it fails, the error is returned and the object dropped: its `Drop`
    /// tries once more and, failing again, leaks the C object (nothing is freed that the
    /// device may still use). [`try_destroy`](Self::try_destroy) gives the object back.
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_cq` ([`ErrorKind::Os`]): `EBUSY` while a QP still
    /// uses the CQ, which only a leaked QP (or one queued to a batch's end) can.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(16).build()?;
    /// cq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_cq`. On failure the object comes back inside the error, still alive.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the CQ, still alive.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::Cq::builder(&ctx).cqe(16).build()?;
    /// cq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl<C> Destroy for Cq<'_, C> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        // SAFETY: a live CQ made by a builder, destroyed once with success (`destroy_raw`'s
        // contract). A QP still using it (leaked, or queued to a batch's end) makes the destroy
        // fail with EBUSY, and the CQ stays.
        unsafe { destroy_cq(self.raw.as_ptr()) }
    }
    fn leftover(&self) -> Leftover {
        // SAFETY: a live CQ made by the builder with `C`.
        Leftover::user_box::<CqMeta<C>>(unsafe { (*self.raw.as_ptr()).cq_context })
    }
}

/// Destroys a CQ of either kind. The completion events of the CQ still held are acked first:
/// `ibv_destroy_cq` waits for them. Its typed user context is the caller's to free afterwards
/// (the `Leftover`).
///
/// # Safety
/// `cq` is a live CQ made by a builder, destroyed once.
pub(crate) unsafe fn destroy_cq(cq: *mut sys::ibv_cq) -> Result<(), Error> {
    // SAFETY: caller's contract.
    unsafe {
        let meta = meta(cq);
        meta.acks.close(cq);
        if let Err(e) = crate::raw::destroying::destroy_cq(cq) {
            meta.acks.reopen();
            return Err(Error::os(Verb::DestroyCq, e));
        }
    }
    Ok(())
}

impl<C> Drop for Cq<'_, C> {
    fn drop(&mut self) {
        // SAFETY: dropped once: a live CQ made by the builder with `C`.
        unsafe { drop_cq::<C>(self.raw.as_ptr()) }
    }
}

impl<C> sealed::Sealed for Cq<'_, C> {}
impl<C> AnyCq for Cq<'_, C> {
    type Threading = Shared;
    fn as_raw_cq(&self) -> *mut sys::ibv_cq {
        self.raw.as_ptr()
    }
}

crate::object::debug_handle!(Cq<'a, C>);

impl<C> crate::sealed::SealedParent for Cq<'_, C> {}
impl<C> crate::object::parent::ParentObject for Cq<'_, C> {}
