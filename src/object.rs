//! What every owned verbs object shares: an explicit `destroy` that reports the error and gives
//! the object back, and a `Drop` that destroys without panicking.

use crate::error::{DestroyError, Error};

/// An owned verbs object.
pub(crate) trait Destroy: Sized {
    /// Destroys the C object and frees what the crate allocated for it.
    ///
    /// # Safety
    /// Called at most once with success; after success the object must not be used or dropped.
    unsafe fn destroy_raw(&self) -> Result<(), Error>;
}

/// The body of every `destroy(self)`: on success the object is gone (and not dropped again);
/// on failure it comes back inside the error.
pub(crate) fn destroy<T: Destroy>(obj: T) -> Result<(), DestroyError<T>> {
    // SAFETY: called once; on success `obj` is forgotten so Drop does not destroy it again.
    match unsafe { obj.destroy_raw() } {
        Ok(()) => {
            std::mem::forget(obj);
            Ok(())
        }
        Err(error) => Err(DestroyError { object: obj, error }),
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
