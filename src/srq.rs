//! Shared receive queues (ibv_create_srq(3)): one pool of posted receives from which several
//! RC or UD QPs take theirs.
//!
//! ```
//! use typed_verbs::prelude::*;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let srq = Srq::builder(&pd).max_wr(64).build()?;
//! let mr = Mr::new(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE)?;
//! for i in 0..16 {
//!     srq.post_recv(i as u64, &[mr.sge(i * 4096..(i + 1) * 4096).unwrap()])?;
//! }
//! let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_inline_data(64).build()?;
//! let e = qp.endpoint(1, 0)?;
//! let qp = qp.connect(&e, &e, AccessFlags::LOCAL_WRITE)?; // loopback to itself
//! qp.post_send(&SendWr::send_inline(100, b"shared"))?; // received from the SRQ
//! let mut wc = [const { WorkCompletion::new() }; 4];
//! let recv = &cq.poll(&mut wc)?[0];
//! assert_eq!((recv.wr_id(), recv.success().map(|s| s.byte_len())), (0, Some(6)));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! Only RC and UD QPs take an SRQ, and a QP on one has no receive queue of its own: both are
//! compile-time rules, listed on the guide's [guarantees](crate::guide::guarantees) page.

use crate::backend;
use crate::device::Context;
use crate::error::{DestroyError, Error, Result, Verb};
use crate::ffi::sys;
use crate::mr::sge::TypedSgeCap;
use crate::mr::Sge;
use crate::object::parent::{Held, Keep, Parent};
use crate::object::{destroy, Destroy, Leftover, UserBox};
use crate::pd::Pd;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::raw::c_void;
use std::ptr::NonNull;

/// The attributes of an SRQ (`struct ibv_srq_attr`).
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let srq = typed_verbs::Srq::builder(&pd).max_wr(100).build()?;
/// let attr: typed_verbs::SrqAttr = srq.attr();
/// assert!(attr.max_wr >= 100 && attr.srq_limit == 0);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SrqAttr {
    /// The maximum number of outstanding receive work requests.
    pub max_wr: u32,
    /// The maximum number of scatter elements per work request.
    pub max_sge: u32,
    /// The limit at which `IBV_EVENT_SRQ_LIMIT_REACHED` fires (0: not armed).
    pub srq_limit: u32,
}

impl From<sys::ibv_srq_attr> for SrqAttr {
    fn from(a: sys::ibv_srq_attr) -> Self {
        SrqAttr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }
}

/// What an SRQ's `srq_context` points at. `#[repr(C)]`, so that a `SrqMeta<ManuallyDrop<C>>`
/// has its layout (see `Drop`).
#[repr(C)]
struct SrqMeta<C> {
    created: SrqAttr,
    /// What keeps the PD alive, if it is shared: released after the SRQ is destroyed.
    #[allow(dead_code)]
    keep: Keep,
    user: C,
}

/// A shared receive queue. It holds its PD; QPs that use it hold it (borrowed, or shared through an
/// `Arc`: [`crate::object::parent`]), so "ibv_destroy_srq()
/// fails if any queue pair is still associated with this SRQ" cannot happen. Its type promises
/// `SGE` scatter elements per receive (default 1, set with [`SrqBuilder::sge_cap`]).
///
/// ```
/// use typed_verbs::prelude::*;
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(64).build()?;
/// let srq = Srq::builder(&pd).max_wr(32).build()?;
/// let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// for i in 0..4 {
///     srq.post_recv(i, &[rx.sge(i as usize * 1024..(i as usize + 1) * 1024).unwrap()])?;
/// }
/// // Any RC or UD QP built on it takes its receives from there.
/// let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
/// # drop(qp);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Srq<'a, C = (), const SGE: usize = 1> {
    raw: NonNull<sys::ibv_srq>,
    _m: PhantomData<(&'a Context, C)>,
}

// SAFETY: libibverbs SRQs are thread-safe; the user context needs Send/Sync to follow.
unsafe impl<C: Send, const SGE: usize> Send for Srq<'_, C, SGE> {}
// SAFETY: as above.
unsafe impl<C: Sync, const SGE: usize> Sync for Srq<'_, C, SGE> {}

/// The attributes of an SRQ to create. Made by [`Srq::builder`].
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let srq = typed_verbs::Srq::builder(&pd).max_wr(256).sge_cap::<2>().context("pool").build()?;
/// assert_eq!(*srq.user_context(), "pool");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct SrqBuilder<'a, C = (), const SGE: usize = 1> {
    pd: Held<'a, Pd<'a>>,
    max_wr: u32,
    max_sge: u32,
    user: C,
}

impl<'a> Srq<'a, ()> {
    /// Starts building an SRQ in `pd` (max_wr 1, max_sge 1): `&pd`, or `&Arc<Pd>` for an SRQ
    /// that keeps its PD alive ([`crate::object::parent`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder<'p: 'a>(pd: impl Parent<'a, Target = Pd<'p>>) -> SrqBuilder<'a, ()> {
        SrqBuilder {
            pd: pd.into_held(),
            max_wr: 1,
            max_sge: 1,
            user: (),
        }
    }
}

impl<'a, C, const SGE: usize> SrqBuilder<'a, C, SGE> {
    /// "Requested max number of outstanding work requests (WRs) in the SRQ": 1 to the device's
    /// `max_srq_wr`, checked before the call.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(512).build()?;
    /// assert!(srq.attr().max_wr >= 512);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_wr(mut self, n: u32) -> Self {
        self.max_wr = n;
        self
    }

    /// "Requested max number of scatter elements per WR": 1 to the device's `max_srq_sge`,
    /// known at run time. It may not be below the cap in the SRQ's type (`SGE`, checked by
    /// `build`); longer lists are slices, checked against the actual cap when posted.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).max_sge(4).build()?;
    /// assert!(srq.attr().max_sge >= 4);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_sge(mut self, n: u32) -> Self {
        self.max_sge = n;
        self
    }

    /// Requests `max_sge = N` and makes `N` the SRQ's SGE cap in its type: `post_recv` then takes
    /// fixed-size lists of up to `N` SGEs (`&[Sge; N]`) without a check, and a longer one does
    /// not compile. `N` is at most [`MAX_TYPED_SGE`](crate::wr::MAX_TYPED_SGE).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq: typed_verbs::Srq<'_, (), 2> = typed_verbs::Srq::builder(&pd).max_wr(16).sge_cap::<2>().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sge_cap<const N: usize>(self) -> SrqBuilder<'a, C, N>
    where
        Sge<'static>: TypedSgeCap<N>,
    {
        SrqBuilder {
            pd: self.pd,
            max_wr: self.max_wr,
            max_sge: N as u32,
            user: self.user,
        }
    }

    /// The typed user context, in place of `void *srq_context`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).context([0u8; 4]).build()?;
    /// assert_eq!(srq.user_context(), &[0; 4]);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn context<C2>(self, user: C2) -> SrqBuilder<'a, C2, SGE> {
        SrqBuilder {
            pd: self.pd,
            max_wr: self.max_wr,
            max_sge: self.max_sge,
            user,
        }
    }

    /// `ibv_create_srq`. `srq_limit` is not asked for: it is "irrelevant for ibv_create_srq";
    /// the SRQ is created unarmed.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`](crate::error::ErrorKind::OutOfRange) for `max_wr` outside
    ///   `1..=max_srq_wr`, or `max_sge` outside `1..=max_srq_sge` or below the SGE cap of the SRQ's
    ///   type, before the call; or naming `actual max_sge` when the device gave less than the type's
    ///   cap (the SRQ is destroyed).
    /// - The device's errno from `ibv_create_srq` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)):
    ///   `ENOMEM` when out of SRQs or memory.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// assert!(typed_verbs::Srq::builder(&pd).max_wr(0).build().is_err()); // at least 1
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<Srq<'a, C, SGE>>
    where
        C: Send + Sync,
    {
        let pd = self.pd.get().as_raw();
        // SAFETY: a live PD's context is live.
        let a = unsafe { crate::device::device_attr((*pd).context, Verb::CreateSrq) }?;
        if self.max_wr < 1 || self.max_wr > a.max_srq_wr.max(0) as u32 {
            return Err(Error::range(
                Verb::CreateSrq,
                "attr.max_wr",
                self.max_wr.into(),
                1,
                a.max_srq_wr.max(0) as u64,
            ));
        }
        // At least one, and at least the cap the type promises.
        let min_sge = SGE.max(1) as u32;
        if self.max_sge < min_sge || self.max_sge > a.max_srq_sge.max(0) as u32 {
            return Err(Error::range(
                Verb::CreateSrq,
                "attr.max_sge",
                self.max_sge.into(),
                min_sge.into(),
                a.max_srq_sge.max(0) as u64,
            ));
        }
        let meta = UserBox::new(SrqMeta {
            created: SrqAttr::default(),
            keep: self.pd.into_keep(),
            user: self.user,
        });
        let mut init = sys::ibv_srq_init_attr {
            srq_context: meta.as_void(),
            attr: sys::ibv_srq_attr {
                max_wr: self.max_wr,
                max_sge: self.max_sge,
                srq_limit: 0,
            },
        };
        // SAFETY: a live PD; `init` valid for the call; the provider writes actual values back.
        let raw = unsafe { backend::of((*pd).context).create_srq(pd, &mut init) }
            .map_err(|e| Error::os(Verb::CreateSrq, e))?; // `meta` is freed on this path
        let meta = meta.into_raw();
        // SAFETY: `meta` is ours until the SRQ is destroyed; nothing reads it concurrently yet.
        unsafe { (*meta).created = init.attr.into() };
        let srq = Srq {
            raw,
            _m: PhantomData,
        };
        if (init.attr.max_sge as usize) < SGE {
            // "greater than or equal to the values requested": a provider that gave less would
            // break the promise fixed-size lists rely on.
            drop(srq); // ibv_destroy_srq, and the user context with it
            let value = init.attr.max_sge.into();
            return Err(Error::range(
                Verb::CreateSrq,
                "actual attr.max_sge",
                value,
                SGE as u64,
                u32::MAX.into(),
            ));
        }
        Ok(srq)
    }
}

impl<'a, C, const SGE: usize> Srq<'a, C, SGE> {
    fn meta(&self) -> &SrqMeta<C> {
        // SAFETY: srq_context is the SrqMeta<C> the builder gave the SRQ; it lives until destroy.
        unsafe { &*((*self.raw.as_ptr()).srq_context as *const SrqMeta<C>) }
    }

    /// The attributes `ibv_create_srq` reported ("the values of max_wr and max_sge will be
    /// greater than or equal to the values requested"). rxe reports `max_wr` as asked here and
    /// the rounded-up ring size from [`query`](Self::query).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).build()?;
    /// assert!(srq.attr().max_wr >= 8);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn attr(&self) -> SrqAttr {
        self.meta().created
    }

    /// `ibv_query_srq`: the attributes now.
    ///
    /// # Errors
    /// The device's errno from `ibv_query_srq` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(100).build()?;
    /// assert!(srq.query()?.max_wr >= 100); // the ring, rounded up
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query(&self) -> Result<SrqAttr> {
        let mut a = sys::ibv_srq_attr {
            max_wr: 0,
            max_sge: 0,
            srq_limit: 0,
        };
        // SAFETY: a live SRQ; `a` valid for writes.
        unsafe { backend::of((*self.as_raw()).context).query_srq(self.as_raw(), &mut a) }
            .map_err(|e| Error::os(Verb::QuerySrq, e))?;
        Ok(a.into())
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).context("shared pool").build()?;
    /// assert_eq!(*srq.user_context(), "shared pool");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        &self.meta().user
    }

    /// `ibv_modify_srq` with `IBV_SRQ_LIMIT`: arms the SRQ limit. When a receive taken from the
    /// SRQ leaves fewer than `limit` posted, the device raises
    /// [`AsyncEvent::SrqLimitReached`](crate::event::AsyncEvent::SrqLimitReached) on the
    /// context's async fd ([`Context::get_async_event`]) and disarms the limit (its
    /// `srq_limit` reads 0 again). `limit` 0 disarms it.
    ///
    /// The limit is held to the SRQ's ring, not to the size asked for: rxe's rxe_srq_chk_attr
    /// refuses "srq_limit (%d) > cur limit(%d)" against the queue's `index_mask`, and the ring
    /// (rxe_queue_init) holds the requested `max_wr` plus one rounded up to a power of two,
    /// less one: 15 entries for 10 asked. That size is the `max_wr` [`query`](Self::query)
    /// reports (not [`attr`](Self::attr)'s, which is as asked). rxe also fires only when a
    /// receive is taken, not when the limit is armed below the count already posted.
    ///
    /// # Errors
    /// The device's `EINVAL` for a limit above the ring's size (or above `max_srq_wr`).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(64).build()?;
    /// srq.arm_limit(8)?; // an async event when fewer than 8 receives are left
    /// assert_eq!(srq.query()?.srq_limit, 8);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn arm_limit(&self, limit: u32) -> Result<()> {
        let mut a = sys::ibv_srq_attr {
            max_wr: 0,
            max_sge: 0,
            srq_limit: limit,
        };
        let mask = sys::ibv_srq_attr_mask::IBV_SRQ_LIMIT.0 as i32;
        // SAFETY: a live SRQ; `a` valid for the call.
        unsafe { backend::of((*self.as_raw()).context).modify_srq(self.as_raw(), &mut a, mask) }
            .map_err(|e| Error::os(Verb::ModifySrq, e))
    }

    /// The C SRQ. It stays owned by `self`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(4).build()?;
    /// assert_eq!(unsafe { (*srq.as_raw()).pd }, pd.as_raw());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_srq {
        self.raw.as_ptr()
    }

    /// `ibv_destroy_srq`. If it fails, the error is returned and the object dropped: its `Drop`
    /// tries once more and, failing again, leaks the C object (nothing is freed that the
    /// device may still use). [`try_destroy`](Self::try_destroy) gives the object back.
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_srq` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)): `EBUSY`
    /// while a QP still uses the SRQ, which only a leaked QP (or one queued to a batch's end) can.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).build()?;
    /// srq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_srq`. On failure the object comes back inside the error, still alive.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the SRQ, still alive.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(16).build()?;
    /// srq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl<C, const SGE: usize> Destroy for Srq<'_, C, SGE> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        let srq = self.as_raw();
        // SAFETY: a live SRQ, destroyed once with success (`destroy_raw`'s contract). A QP still
        // using it (leaked, or queued to a batch's end) makes the destroy fail with EBUSY.
        unsafe { crate::raw::destroying::destroy_srq(srq) }
            .map_err(|e| Error::os(Verb::DestroySrq, e))
    }
    fn leftover(&self) -> Leftover {
        // SAFETY: a live SRQ made by the builder with `C`.
        Leftover::user_box::<SrqMeta<C>>(unsafe { (*self.as_raw()).srq_context })
    }
}

impl<C, const SGE: usize> Drop for Srq<'_, C, SGE> {
    fn drop(&mut self) {
        /// The C SRQ's destroy, and the rest of its context once the user context is moved
        /// out: freed as SrqMeta<ManuallyDrop<C>> (the same layout, repr(C)), without dropping
        /// the user context again. An SRQ that cannot be destroyed keeps what is left.
        unsafe fn destroy<C>(srq: *mut c_void, meta: *mut c_void) {
            let srq = srq.cast::<sys::ibv_srq>();
            // SAFETY: `drop`'s SRQ and its SrqMeta<C> whose user context was moved out; once.
            unsafe {
                if crate::raw::destroying::destroy_srq(srq).is_ok() {
                    drop(Box::from_raw(meta as *mut SrqMeta<ManuallyDrop<C>>));
                }
            }
        }
        let srq = self.as_raw();
        // SAFETY: dropped once: srq_context is the SRQ's SrqMeta<C>, ours since the handle is
        // gone. The user context is moved out first (a queued destroy may run on any thread)
        // and dropped after the SRQ is destroyed or queued (a QP dropped inside a batch may
        // still use the SRQ: crate::object::teardown).
        unsafe {
            let meta = (*srq).srq_context as *mut SrqMeta<C>;
            let user = std::ptr::read(&(*meta).user);
            if !crate::object::teardown::wait_behind(
                (*srq).context,
                destroy::<C>,
                srq.cast(),
                meta.cast(),
            ) {
                destroy::<C>(srq.cast(), meta.cast());
            }
            drop(user);
        }
    }
}

impl<C, const SGE: usize> std::fmt::Debug for Srq<'_, C, SGE> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Srq").field(&self.as_raw()).finish()
    }
}

impl<C, const SGE: usize> crate::sealed::SealedParent for Srq<'_, C, SGE> {}
impl<C, const SGE: usize> crate::object::parent::ParentObject for Srq<'_, C, SGE> {}
