//! How a handle holds the objects it was created from: borrowed or shared.
//!
//! ```
//! use std::sync::Arc;
//! use typed_verbs::{Context, Pd, CqEx, Qp, Rc, Standard};
//!
//! // Shared parents: the QP is 'static and can be stored anywhere.
//! let ctx = Arc::new(Context::open("sw0")?);
//! let pd = Arc::new(Pd::new(&ctx)?);
//! let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
//! let qp: Qp<'static, Rc> = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//! let pd_alive = Arc::downgrade(&pd);
//! drop((ctx, pd, cq)); // the QP keeps them alive
//! assert!(pd_alive.upgrade().is_some());
//! std::thread::spawn(move || drop(qp)).join().unwrap(); // QP destroyed, then CQ, PD, context
//! assert!(pd_alive.upgrade().is_none());
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page says how this keeps the
//! destruction order, leaks included.
//!
//! Every verbs object needs its parents alive (a PD its context, a QP its PD, CQs and SRQ, a
//! region its PD): "ibv_dealloc_pd() may fail if any other resource is still associated with
//! the PD being freed", and so on for each parent. This crate makes that a compile-time fact
//! with one mechanism and two ways to hold a parent, chosen per argument by what a constructor
//! or builder is given ([`Parent`]):
//!
//! - **Borrowed**, `&parent`: the child's lifetime parameter is the borrow's, so the borrow
//!   checker refuses to drop or destroy the parent first. Zero cost; the natural form inside
//!   one function or a scope.
//! - **Shared**, `Arc<parent>` (or `&Arc<parent>`, which clones it): the child keeps the parent
//!   alive and releases it after its own C object is destroyed, so the child has no lifetime
//!   to respect (`'static`): it can sit in a struct with other handles, be returned from a
//!   setup function, kept in a map, or moved into `std::thread::spawn` and `tokio::spawn`. A
//!   parent behind an `Arc` cannot be destroyed at all (`destroy` takes it by value, and
//!   `Arc::into_inner` gives it back only when no child holds it any more), so the C-level
//!   `EBUSY` stays unreachable from safe code either way.
//!
//! The two mix: a QP may borrow its CQ and share its PD; its lifetime is then the CQ borrow's.
//!
//! Leak safety: forgetting a child forgets its references to its parents, which then stay
//! alive (a leak, never a dangling pointer).

use crate::sealed;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

/// A parent given to a constructor or builder: `&P` (borrowed for `'a`) or `Arc<P>` /
/// `&Arc<P>` (shared: the child keeps it alive, and `'a` is free). Sealed; implemented for
/// the crate's parent objects ([`Context`](crate::device::Context), [`Pd`](crate::pd::Pd),
/// [`ParentDomain`](crate::ParentDomain), [`CompChannel`](crate::cq::channel::CompChannel),
/// [`Cq`](crate::cq::Cq), [`CqEx`](crate::cq::ex::CqEx), [`Srq`](crate::srq::Srq)).
///
/// ```
/// use std::sync::Arc;
/// use typed_verbs::{Context, Pd};
/// let ctx = Context::open("sw0")?;
/// let borrowed: Pd<'_> = Pd::new(&ctx)?;          // &Context: Parent, borrowed
/// let shared_ctx = Arc::new(Context::open("sw0")?);
/// let shared: Pd<'static> = Pd::new(&shared_ctx)?; // &Arc<Context>: Parent, shared
/// let moved: Pd<'static> = Pd::new(shared_ctx)?;   // Arc<Context>: Parent, shared
/// # drop((borrowed, shared, moved));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parent here: pass a reference to the parent object (`&pd`) or an `Arc` of it (`&pd_arc`, `pd_arc.clone()`)",
    label = "expected `&P`, `Arc<P>` or `&Arc<P>` for a typed-verbs object `P`",
    note = "a borrowed parent ties the new handle's lifetime to the borrow; an Arc'd one is kept alive by the new handle"
)]
pub trait Parent<'a>: sealed::SealedParent {
    /// The parent object.
    type Target: 'a;
    #[doc(hidden)]
    fn into_held(self) -> Held<'a, Self::Target>;
}

/// The crate's objects that other objects are created from. `Send` is required of an `Arc`'d
/// parent because the child that keeps it may be dropped (and drop the last `Arc`) on another
/// thread.
///
/// ```
/// use std::sync::Arc;
/// use typed_verbs::{parent::{Parent, ParentObject}, Context, Pd};
/// fn pd_on<'a, P: Parent<'a, Target = Context>>(ctx: P) -> typed_verbs::Result<Pd<'a>> {
///     Pd::new(ctx)
/// }
/// fn is_parent<T: ParentObject>() {}
/// is_parent::<Context>();
/// let ctx = Arc::new(Context::open("sw0")?);
/// let pd: Pd<'static> = pd_on(&ctx)?;
/// # drop(pd);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait ParentObject: sealed::SealedParent {}

impl<P: ParentObject> sealed::SealedParent for &P {}
impl<'a, 'x: 'a, P: ParentObject + 'a> Parent<'a> for &'x P {
    type Target = P;
    #[inline]
    fn into_held(self) -> Held<'a, P> {
        Held {
            ptr: NonNull::from(self),
            keep: Keep::NONE,
            _m: PhantomData,
        }
    }
}

impl<P: ParentObject + Send> sealed::SealedParent for Arc<P> {}
impl<'a, P: ParentObject + Send + 'a> Parent<'a> for Arc<P> {
    type Target = P;
    fn into_held(self) -> Held<'a, P> {
        let ptr = NonNull::from(&*self);
        Held {
            ptr,
            keep: Keep::arc(self),
            _m: PhantomData,
        }
    }
}

impl<P: ParentObject + Send> sealed::SealedParent for &Arc<P> {}
impl<'a, P: ParentObject + Send + 'a> Parent<'a> for &Arc<P> {
    type Target = P;
    fn into_held(self) -> Held<'a, P> {
        Arc::clone(self).into_held()
    }
}

/// A parent as a constructor holds it: a pointer valid while the `Held` lives (the borrow's
/// `'a`, or the kept `Arc`), and what keeps it alive once the child exists.
#[doc(hidden)]
pub struct Held<'a, P> {
    ptr: NonNull<P>,
    keep: Keep,
    _m: PhantomData<&'a P>,
}

impl<P> Held<'_, P> {
    /// The parent, for as long as `self` is borrowed.
    #[inline]
    pub(crate) fn get(&self) -> &P {
        // SAFETY: a borrow of 'a (which outlives `self`) or an Arc that `self.keep` holds.
        unsafe { self.ptr.as_ref() }
    }

    /// What keeps the parent alive: given to the child, released after the child's C object is
    /// destroyed.
    pub(crate) fn into_keep(self) -> Keep {
        self.keep
    }
}

/// A strong reference to a shared parent, type-erased, or nothing (a borrowed parent).
/// Dropping it releases the parent (and may destroy it). Two pointers.
pub(crate) struct Keep {
    ptr: *const (),
    release: Option<unsafe fn(*const ())>,
}

// SAFETY: a Keep only ever drops its Arc (an atomic decrement, and the parent's drop if it was
// the last): it never hands out a reference, and the parent is `Send` (required by the `Arc`
// impls of `Parent`), so dropping it on any thread is sound.
unsafe impl Send for Keep {}
// SAFETY: `&Keep` gives nothing.
unsafe impl Sync for Keep {}

impl Keep {
    /// Nothing to keep (a borrowed parent).
    pub(crate) const NONE: Keep = Keep {
        ptr: std::ptr::null(),
        release: None,
    };
    /// Four of [`NONE`](Self::NONE): a QP's parents.
    pub(crate) const NONE_4: [Keep; 4] = [Keep::NONE, Keep::NONE, Keep::NONE, Keep::NONE];

    /// Whether it keeps nothing (a borrowed parent).
    pub(crate) fn is_none(&self) -> bool {
        self.release.is_none()
    }

    fn arc<P: Send>(a: Arc<P>) -> Keep {
        /// Drops the `Arc<P>` that `arc` turned into a raw pointer.
        ///
        /// # Safety
        /// `p` came from `Arc::into_raw` of an `Arc<P>`, released once.
        unsafe fn release<P>(p: *const ()) {
            // SAFETY: caller's contract.
            drop(unsafe { Arc::from_raw(p.cast::<P>()) })
        }
        Keep {
            ptr: Arc::into_raw(a).cast(),
            release: Some(release::<P>),
        }
    }
}

impl Drop for Keep {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: `ptr` is the Arc that `arc` made for `release`, released once (here).
            unsafe { release(self.ptr) }
        }
    }
}
