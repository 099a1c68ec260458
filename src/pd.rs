//! Protection domains (ibv_alloc_pd(3)), which group the regions, QPs, SRQs and address handles
//! that may work together, and parent domains (ibv_alloc_parent_domain(3)), which extend a PD.
//!
//! ```
//! use typed_verbs::{software, Access, Context, Mr, PageBuf, Pd};
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?; // ibv_alloc_pd
//! let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?; // registered in `pd`
//! assert_eq!(software::live_objects(&ctx).map(|l| (l.pds, l.mrs)), Some((1, 1)));
//! drop(mr); // first: `pd.destroy()` does not compile while `mr` borrows the PD
//! pd.destroy()?; // ibv_dealloc_pd
//! assert_eq!(software::live_objects(&ctx).map(|l| l.pds), Some(0));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! A child holds its PD borrowed or shared ([`crate::parent`]); the guide's
//! [guarantees](crate::guide::guarantees) page says how that keeps the destruction order.

use crate::backend;
use crate::device::Context;
use crate::error::{Error, ErrorKind, Result, Verb};
use crate::ffi::sys;
use crate::object::parent::Parent;
use crate::object::Node;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::NonNull;

/// A protection domain (`ibv_alloc_pd`). It holds its context (borrowed, or shared through an
/// `Arc`: [`crate::object::parent`]), and everything created in it holds the PD, so it cannot be
/// deallocated while a QP, SRQ, region or parent domain uses it.
///
/// ```
/// use typed_verbs::{Context, Pd};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?; // borrows `ctx`: `ctx` cannot be closed while `pd` lives
/// pd.destroy()?;
/// ctx.close()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Pd<'ctx> {
    node: NonNull<Node<sys::ibv_pd>>,
    _ctx: PhantomData<&'ctx Context>,
}

// SAFETY: libibverbs objects are thread-safe to use and to free from any thread.
unsafe impl Send for Pd<'_> {}
// SAFETY: as above.
unsafe impl Sync for Pd<'_> {}

impl<'ctx> Pd<'ctx> {
    /// `ibv_alloc_pd` on `ctx`: `&ctx`, or `&Arc<Context>` for a PD that keeps its context
    /// alive ([`crate::object::parent`]).
    ///
    /// # Errors
    /// The device's errno from `ibv_alloc_pd` ([`ErrorKind::Os`]): `ENOMEM` when the device is out
    /// of PDs (`max_pd`) or memory.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use typed_verbs::{Context, Pd};
    /// let ctx = Arc::new(Context::open("sw0")?);
    /// let pd: Pd<'static> = Pd::new(&ctx)?; // shared: the PD keeps the context alive
    /// drop(ctx);
    /// # drop(pd);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(ctx: impl Parent<'ctx, Target = Context>) -> Result<Self> {
        let ctx = ctx.into_held();
        let c = ctx.get().as_raw();
        // SAFETY: a live context.
        let raw = unsafe { backend::of(c).alloc_pd(c) }.map_err(|e| Error::os(Verb::AllocPd, e))?;
        Ok(Pd {
            node: Node::into_handle(raw, ctx.into_keep()),
            _ctx: PhantomData,
        })
    }
}

/// What a PD and a parent domain share, both an `ibv_pd` on a [`Node`] and deallocated by
/// `ibv_dealloc_pd`: [`node_handle!`](crate::object::node_handle) with the docs given (the
/// type's own).
macro_rules! pd_handle {
    ($t:ident<$lt:lifetime>, $($docs:tt)*) => {
        crate::object::node_handle! {
            $t<$lt>: sys::ibv_pd,
            $($docs)*
            destroy_raw: |pd| {
                // SAFETY: a live PD or parent domain, deallocated once with success
                // (`destroy_raw`'s contract). An object still using it (leaked, or queued to a
                // batch's end) makes the dealloc fail with EBUSY.
                unsafe { backend::of((*pd.as_raw()).context).dealloc_pd(pd.as_raw()) }
                    .map_err(|e| Error::os(Verb::DeallocPd, e))
            }
            drop_or_queue: dealloc
        }
    };
}

pd_handle! {
    Pd<'ctx>,
    what: "PD",
    verb: "`ibv_dealloc_pd`",
    as_raw:
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// assert_eq!(unsafe { (*pd.as_raw()).context }, ctx.as_raw());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy:
    ///
    /// # Errors
    /// The device's errno from `ibv_dealloc_pd` ([`ErrorKind::Os`]): `EBUSY` while an object
    /// still uses the PD, which only a leaked object (`mem::forget`) or one whose destroy waits for
    /// a polling batch's end can do, since every child holds its PD.
    ///
    /// ```
    /// # use typed_verbs::{Context, Pd};
    /// # let ctx = Context::open("sw0")?;
    /// let pd = Pd::new(&ctx)?;
    /// pd.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    try_destroy:
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`](crate::error::DestroyError) holds the PD, still allocated.
    ///
    /// ```
    /// # use typed_verbs::{Context, Pd};
    /// # let ctx = Context::open("sw0")?;
    /// let pd = Pd::new(&ctx)?;
    /// match pd.try_destroy() {
    ///     Ok(()) => {}
    ///     Err(e) => eprintln!("{} (the PD is back: {:?})", e.error, e.object),
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
}

/// `ibv_dealloc_pd` of a PD or parent domain whose handle is gone, then its node (which
/// releases the parents it keeps). A PD that cannot be deallocated keeps its node, and with it
/// its parents.
///
/// # Safety
/// `pd` is a live PD and `node` its node, deallocated and freed once.
unsafe fn dealloc(pd: *mut c_void, node: *mut c_void) {
    let pd = pd.cast::<sys::ibv_pd>();
    // SAFETY: caller's contract.
    if unsafe { backend::of((*pd).context).dealloc_pd(pd) }.is_ok() {
        // SAFETY: the PD is deallocated; its node is freed once.
        unsafe { Node::<sys::ibv_pd>::free(node) }
    }
}

/// A parent domain (`ibv_alloc_parent_domain`): a PD that a CQ created with
/// `IBV_CQ_INIT_ATTR_MASK_PD` takes its resources from. It holds the PD it wraps (borrowed or shared:
/// [`crate::object::parent`]).
///
/// ```
/// use typed_verbs::{software, Context, Pd, ParentDomain};
/// let ctx = Context::open("sw0")?; // sw0 has parent domains; rxe has not (EOPNOTSUPP)
/// let pd = Pd::new(&ctx)?;
/// let parent = ParentDomain::new(&ctx, &pd)?;
/// parent.destroy()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct ParentDomain<'pd> {
    node: NonNull<Node<sys::ibv_pd>>,
    _pd: PhantomData<&'pd Pd<'pd>>,
}

// SAFETY: as for Pd.
unsafe impl Send for ParentDomain<'_> {}
// SAFETY: as for Pd.
unsafe impl Sync for ParentDomain<'_> {}

impl<'pd> ParentDomain<'pd> {
    /// `ibv_alloc_parent_domain` over `pd`, without a thread domain or custom allocators.
    /// A device without parent domains gives EOPNOTSUPP; a `pd` of another context gives
    /// [`ErrorKind::WrongContext`], checked before the call.
    ///
    /// # Errors
    /// - [`ErrorKind::WrongContext`]`("pd")` when `pd` is of another context (before the call).
    /// - The device's errno from `ibv_alloc_parent_domain` ([`ErrorKind::Os`]): `EOPNOTSUPP` on a
    ///   device without parent domains (rxe; [`Error::is_unsupported`](crate::Error::is_unsupported)),
    ///   `ENOMEM` when out of resources.
    ///
    /// ```
    /// # use typed_verbs::{Context, Pd, ParentDomain};
    /// let ctx = Context::open("sw0")?;
    /// let pd = Pd::new(&ctx)?;
    /// match ParentDomain::new(&ctx, &pd) {
    ///     Ok(parent) => drop(parent),
    ///     Err(e) if e.is_unsupported() => println!("no parent domains on {}", ctx.device_name()),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new<'ctx: 'pd>(ctx: &Context, pd: impl Parent<'pd, Target = Pd<'ctx>>) -> Result<Self> {
        let held = pd.into_held();
        let pd = held.get();
        // SAFETY: a live PD (held); its context pointer is fixed at allocation.
        if unsafe { (*pd.as_raw()).context } != ctx.as_raw() {
            return Err(Error {
                verb: Verb::AllocParentDomain,
                kind: ErrorKind::WrongContext("pd"),
            });
        }
        let mut attr = sys::ibv_parent_domain_init_attr {
            pd: pd.as_raw(),
            td: std::ptr::null_mut(),
            comp_mask: 0,
            alloc: None,
            free: None,
            pd_context: std::ptr::null_mut(),
        };
        // SAFETY: a live context and PD; `attr` valid for the call.
        let raw = unsafe { backend::of(ctx.as_raw()).alloc_parent_domain(ctx.as_raw(), &mut attr) }
            .map_err(|e| Error::os(Verb::AllocParentDomain, e))?;
        Ok(ParentDomain {
            node: Node::into_handle(raw, held.into_keep()),
            _pd: PhantomData,
        })
    }
}

pd_handle! {
    ParentDomain<'pd>,
    what: "parent domain (an `ibv_pd`)",
    verb: "`ibv_dealloc_pd` on the parent domain",
    as_raw:
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let parent = typed_verbs::ParentDomain::new(&ctx, &pd)?;
    /// assert_eq!(unsafe { (*parent.as_raw()).context }, ctx.as_raw());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy:
    ///
    /// # Errors
    /// The device's errno from `ibv_dealloc_pd` ([`ErrorKind::Os`]): `EBUSY` while a CQ still uses
    /// the parent domain (only a leaked one can).
    ///
    /// ```
    /// # use typed_verbs::{Context, Pd, ParentDomain};
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// let parent = ParentDomain::new(&ctx, &pd)?;
    /// parent.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    try_destroy:
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`](crate::error::DestroyError) holds the parent domain, still allocated.
    ///
    /// ```
    /// # use typed_verbs::{Context, Pd, ParentDomain};
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// let parent = ParentDomain::new(&ctx, &pd)?;
    /// parent.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
}

impl crate::sealed::SealedParent for Pd<'_> {}
impl crate::object::parent::ParentObject for Pd<'_> {}
impl crate::sealed::SealedParent for ParentDomain<'_> {}
impl crate::object::parent::ParentObject for ParentDomain<'_> {}
