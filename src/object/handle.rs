//! What every owned verbs object shares: an explicit `destroy` that reports the error and gives
//! the object back, and a `Drop` that destroys without panicking.

use crate::error::{DestroyError, Error};

/// An owned verbs object.
pub(crate) trait Destroy: Sized {
    /// Destroys the C object. It runs no user code: what may (the typed user context's `Drop`)
    /// is the [`leftover`](Self::leftover), freed by the caller once the handle is disarmed.
    ///
    /// # Safety
    /// Called at most once with success; after success the object must not be used or dropped.
    unsafe fn destroy_raw(&self) -> Result<(), Error>;

    /// What the crate allocated for the object and frees after it is destroyed: read before
    /// [`destroy_raw`](Self::destroy_raw), since the C object holds the pointer.
    fn leftover(&self) -> Leftover {
        Leftover::NONE
    }
}

/// A typed user context (or other crate allocation) that outlived its C object, to be freed
/// once the handle that owned it can no longer destroy anything. Freeing it runs the user
/// context's `Drop`, which is user code and may panic: by then no handle is armed, so an unwind
/// cannot destroy the C object a second time.
#[must_use]
pub(crate) struct Leftover {
    ptr: *mut std::os::raw::c_void,
    free: Option<unsafe fn(*mut std::os::raw::c_void)>,
}

impl Leftover {
    pub(crate) const NONE: Leftover = Leftover {
        ptr: std::ptr::null_mut(),
        free: None,
    };

    /// The `UserBox<T>` at `p`, given to a C object with `into_raw`.
    pub(crate) fn user_box<T>(p: *mut std::os::raw::c_void) -> Self {
        Leftover {
            ptr: p,
            free: Some(UserBox::<T>::free),
        }
    }

    /// Frees it.
    ///
    /// # Safety
    /// The C object that pointed at it is destroyed, and this is the one free.
    pub(crate) unsafe fn free(self) {
        if let Some(free) = self.free {
            // SAFETY: caller's contract; `ptr` is what `free` was made for.
            unsafe { free(self.ptr) }
        }
    }
}

/// The body of every `destroy(self)`: on success the object is gone (and not dropped again);
/// on failure it comes back inside the error. The leftover is freed only after `obj` is
/// forgotten, so a panicking user context cannot make an unwind drop (and destroy) `obj` again.
pub(crate) fn destroy<T: Destroy>(obj: T) -> Result<(), DestroyError<T>> {
    let left = obj.leftover();
    // SAFETY: called once; on success `obj` is forgotten so Drop does not destroy it again.
    match unsafe { obj.destroy_raw() } {
        Ok(()) => {
            std::mem::forget(obj);
            // SAFETY: the C object is destroyed; its leftover is freed once, here.
            unsafe { left.free() };
            Ok(())
        }
        Err(error) => Err(DestroyError { object: obj, error }),
    }
}

/// The `Drop` of an object without a user context that a QP may use (context, PD, parent
/// domain, channel), of context `ctx`: destroyed now, or, while a QP of `ctx` dropped inside a
/// polling batch waits for the batch's end, queued behind it ([`crate::object::teardown`]), so that it
/// is destroyed after the QP instead of failing with `EBUSY` (or, for a context, being closed
/// under it). An error cannot be reported from `Drop` (use `destroy`).
///
/// # Safety
/// `destroy(raw, extra)` destroys the object once and frees `extra` if it owns it, on any
/// thread; the object's handle is gone; `ctx` is its live context.
pub(crate) unsafe fn drop_or_queue(
    ctx: *mut crate::ffi::sys::ibv_context,
    raw: *mut std::os::raw::c_void,
    extra: *mut std::os::raw::c_void,
    destroy: crate::object::teardown::Teardown,
) {
    // SAFETY: caller's contract: the object is the queue's if it is queued.
    if !unsafe { crate::object::teardown::wait_behind(ctx, destroy, raw, extra) } {
        // SAFETY: caller's contract.
        unsafe { destroy(raw, extra) }
    }
}

/// A typed user context stored behind a C object's `void *..._context`: boxed on create, freed
/// when the object is destroyed (or when its creation fails, so no error path leaks it).
pub(crate) struct UserBox<T>(*mut T);

impl<T> UserBox<T> {
    pub(crate) fn new(v: T) -> Self {
        UserBox(Box::into_raw(Box::new(v)))
    }
    pub(crate) fn as_void(&self) -> *mut std::os::raw::c_void {
        self.0.cast()
    }
    /// Leaves the box to the C object that now points at it.
    pub(crate) fn into_raw(self) -> *mut T {
        let p = self.0;
        std::mem::forget(self);
        p
    }
    /// Frees a box that a C object pointed at.
    ///
    /// # Safety
    /// `p` came from `into_raw` and is freed once.
    pub(crate) unsafe fn free(p: *mut std::os::raw::c_void) {
        // SAFETY: caller's contract.
        drop(unsafe { Box::from_raw(p.cast::<T>()) })
    }
}

impl<T> Drop for UserBox<T> {
    fn drop(&mut self) {
        // SAFETY: still owned here (creation failed before `into_raw`).
        drop(unsafe { Box::from_raw(self.0) })
    }
}

/// `Debug` for a handle: its type name and the C object's address (and, for QPs, `qp_num`).
macro_rules! debug_handle {
    ($t:ident < $($g:tt),* > $(where $($b:tt)*)?) => {
        impl<$($g),*> std::fmt::Debug for $t<$($g),*> $(where $($b)*)? {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($t)).field(&self.as_raw()).finish()
            }
        }
    };
}
pub(crate) use debug_handle;

/// A C object without a context pointer of its own (PD, parent domain, channel, address
/// handle, memory region) and what keeps its parents alive: what its handle points at, so the
/// handle stays one pointer. Freed after the C object is destroyed, which releases the parents
/// in that order.
pub(crate) struct Node<R> {
    pub(crate) raw: std::ptr::NonNull<R>,
    /// Held for its `Drop` only.
    #[allow(dead_code)]
    pub(crate) keep: crate::object::parent::Keep,
}

impl<R> Node<R> {
    /// A node for `raw`, keeping `keep` alive: leaked to the handle.
    pub(crate) fn into_handle(
        raw: std::ptr::NonNull<R>,
        keep: crate::object::parent::Keep,
    ) -> std::ptr::NonNull<Node<R>> {
        std::ptr::NonNull::from(Box::leak(Box::new(Node { raw, keep })))
    }

    /// The C object of the node at `node`.
    ///
    /// # Safety
    /// `node` is a live node (its handle lives).
    #[inline(always)]
    pub(crate) unsafe fn raw(node: std::ptr::NonNull<Node<R>>) -> *mut R {
        // SAFETY: caller's contract; the field is written once at creation.
        unsafe { (*node.as_ptr()).raw.as_ptr() }
    }

    /// Frees the node at `p` (releasing what it keeps alive), once its C object is destroyed.
    ///
    /// # Safety
    /// `p` came from `into_handle`; its C object is destroyed; freed once.
    pub(crate) unsafe fn free(p: *mut std::os::raw::c_void) {
        // SAFETY: caller's contract.
        drop(unsafe { Box::from_raw(p.cast::<Node<R>>()) })
    }

    /// The node as the leftover of its handle's `destroy`.
    pub(crate) fn leftover(node: std::ptr::NonNull<Node<R>>) -> Leftover {
        Leftover {
            ptr: node.as_ptr().cast(),
            free: Some(Node::<R>::free),
        }
    }
}

/// What every handle over a [`Node`] (`node: NonNull<Node<$raw>>`) shares: `as_raw`, `destroy`
/// and `try_destroy`, each with the docs given (the type's own) after a first sentence they
/// share, made of `what` (`as_raw`'s object) and `verb` (the destroy's); [`Destroy`], whose
/// `destroy_raw` is the type's own body (with `$this` the handle, and its own SAFETY argument)
/// and whose leftover is the node; and `Debug`. With `drop_or_queue: $teardown`, its `Drop`
/// too: [`drop_or_queue`] of the C object (whose context is `(*raw).context`) and its node, by
/// `$teardown(raw, node)`, which destroys the object and frees the node once.
macro_rules! node_handle {
    (
        $t:ident<$lt:lifetime>: $raw:ty,
        what: $what:literal,
        verb: $verb:literal,
        as_raw: $(#[$as_raw:meta])*
        destroy: $(#[$destroy:meta])*
        try_destroy: $(#[$try_destroy:meta])*
        destroy_raw: |$this:ident| $destroy_raw:block
        $(drop_or_queue: $teardown:path)?
    ) => {
        impl<$lt> $t<$lt> {
            #[doc = concat!(" The C ", $what, ". It stays owned by `self`.")]
            $(#[$as_raw])*
            #[inline]
            pub fn as_raw(&self) -> *mut $raw {
                // SAFETY: the handle's node lives as long as the handle.
                unsafe { $crate::object::Node::raw(self.node) }
            }

            #[doc = concat!(
                " ", $verb, ". If it fails, the error is returned and the object dropped: its ",
                "`Drop` tries once more and, failing again, leaks the C object (nothing is freed ",
                "that the device may still use). [`try_destroy`](Self::try_destroy) gives the ",
                "object back."
            )]
            $(#[$destroy])*
            pub fn destroy(self) -> $crate::error::Result<()> {
                Ok(self.try_destroy()?)
            }

            #[doc = concat!(
                " ", $verb, ". On failure the object comes back inside the error, still alive."
            )]
            $(#[$try_destroy])*
            pub fn try_destroy(self) -> Result<(), $crate::error::DestroyError<Self>> {
                $crate::object::destroy(self)
            }
        }

        impl $crate::object::Destroy for $t<'_> {
            unsafe fn destroy_raw(&self) -> Result<(), $crate::error::Error> {
                let $this = self;
                $destroy_raw
            }
            fn leftover(&self) -> $crate::object::Leftover {
                $crate::object::Node::leftover(self.node)
            }
        }

        $(
            impl Drop for $t<'_> {
                fn drop(&mut self) {
                    let raw = self.as_raw();
                    // SAFETY: dropped once: a live object of its context and its node,
                    // destroyed and freed once by the teardown function given.
                    unsafe {
                        $crate::object::drop_or_queue(
                            (*raw).context,
                            raw.cast(),
                            self.node.as_ptr().cast(),
                            $teardown,
                        )
                    }
                }
            }
        )?

        $crate::object::debug_handle!($t<'a>);
    };
}
pub(crate) use node_handle;
