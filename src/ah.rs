//! Address handles (ibv_create_ah(3)): where a UD send goes.

use crate::backend;
use crate::error::{DestroyError, Error, Result, Verb};
use crate::ffi::sys;
use crate::object::{destroy, Destroy, Leftover, Node};
use crate::parent::Parent;
use crate::pd::Pd;
use crate::qp_state::AddressVector;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// An address handle in a PD. UD work requests that name it borrow it, so it outlives them.
pub struct AddressHandle<'a> {
    node: NonNull<Node<sys::ibv_ah>>,
    _m: PhantomData<&'a Pd<'a>>,
}

// SAFETY: an address handle is immutable after creation; libibverbs allows using and destroying
// it from any thread.
unsafe impl Send for AddressHandle<'_> {}
// SAFETY: as above.
unsafe impl Sync for AddressHandle<'_> {}

impl<'a> AddressHandle<'a> {
    /// `ibv_create_ah` for `av` in `pd` (`&pd`, or `&Arc<Pd>` for an AH that keeps its PD
    /// alive: [`crate::parent`]). On RoCE the address vector needs a global route.
    ///
    /// # Errors
    /// `OutOfRange` before the call for a port outside 1..=`phys_port_cnt` (`port_num`) or a
    /// source GID index at or past the port's `gid_tbl_len` (`grh.sgid_index`), as
    /// `ibv_query_device` and `ibv_query_port` report them; the device's errno otherwise:
    /// `ENODATA` for a source GID index inside the table that holds no GID (the kernel's
    /// rdma_get_gid_attr), `EINVAL` for an address vector without a global route on RoCE.
    pub fn new<'p: 'a>(pd: impl Parent<'a, Target = Pd<'p>>, av: AddressVector) -> Result<Self> {
        let mut attr = av.to_sys();
        let pd = pd.into_held();
        let p = pd.get().as_raw();
        // SAFETY: a live PD's context is live.
        let ctx = unsafe { (*p).context };
        // SAFETY: as above.
        let dev = unsafe { crate::qp::device_attr(ctx, Verb::CreateAh) }?;
        // SAFETY: as above.
        let limits = unsafe { crate::qp_state::Limits::query(ctx, &dev) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        limits
            .av(["port_num", "grh.sgid_index"], &av)
            .map_err(|b| Error::range(Verb::CreateAh, b.what, b.value, b.min, b.max))?;
        // SAFETY: a live PD; `attr` valid for the call.
        let raw = unsafe { backend::of((*p).context).create_ah(p, &mut attr) }
            .map_err(|e| Error::os(Verb::CreateAh, e))?;
        Ok(AddressHandle {
            node: Node::into_handle(raw, pd.into_keep()),
            _m: PhantomData,
        })
    }

    /// The C address handle. It stays owned by `self`.
    #[inline]
    pub fn as_raw(&self) -> *mut sys::ibv_ah {
        // SAFETY: the handle's node lives as long as the handle.
        unsafe { Node::raw(self.node) }
    }

    /// `ibv_destroy_ah`. If it fails, the error is returned and the object dropped: its `Drop`
    /// tries once more and, failing again, leaks the C object (nothing is freed that the
    /// device may still use). [`try_destroy`](Self::try_destroy) gives the object back.
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_ah`. On failure the object comes back inside the error, still alive.
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl Destroy for AddressHandle<'_> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        let ah = self.as_raw();
        // SAFETY: a live AH, destroyed once with success (`destroy_raw`'s contract). A posted
        // work request does not refer to it: the provider copies the address vector at post (as
        // the software device does).
        unsafe { backend::of((*ah).context).destroy_ah(ah) }
            .map_err(|e| Error::os(Verb::DestroyAh, e))
    }
    fn leftover(&self) -> Leftover {
        Node::leftover(self.node)
    }
}

impl Drop for AddressHandle<'_> {
    fn drop(&mut self) {
        let node = self.leftover();
        // SAFETY: dropped once; an error cannot be reported from drop (use `destroy`): the AH
        // then stays, and so does its node with the PD it keeps.
        if unsafe { self.destroy_raw() }.is_ok() {
            // SAFETY: destroyed; the node is freed once.
            unsafe { node.free() }
        } // else the node (a plain pointer) is not freed: it keeps the PD for the live AH
    }
}

crate::object::debug_handle!(AddressHandle<'a>);
