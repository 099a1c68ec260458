//! Address handles (ibv_create_ah(3)): where a UD send goes, the path to a port and, with a
//! global route, a GID.
//!
//! ```
//! use typed_verbs::prelude::*;
//! use typed_verbs::AddressHandle;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?
//!     .to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
//! let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
//! let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
//! let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! qp.post_recv(1, &[rx.sge(0..4096).unwrap()])?; // room for the 40-byte GRH and the datagram
//! qp.post_send(&SendWr::send_to_inline(2, b"datagram", UdDest::new(&ah, qp.qp_num(), 0x11)))?; // to itself
//! let mut wc = [const { WorkCompletion::new() }; 4];
//! let recv = &cq.poll(&mut wc)?[0];
//! assert_eq!((recv.wr_id(), recv.success().map(|s| s.byte_len())), (1, Some(40 + 8)));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! An address vector is held to the same ranges as a QP's ([`crate::qp::state`]). Keeping an
//! address handle alive until the sends that name it have completed is the caller's duty (rxe
//! looks the handle up when it sends); the guide's [guarantees](crate::guide::guarantees) page
//! lists what is checked and what stays the caller's duty.

use crate::backend;
use crate::error::{Error, Result, Verb};
use crate::ffi::sys;
use crate::object::parent::Parent;
use crate::object::{Destroy, Node};
use crate::pd::Pd;
use crate::qp::state::AddressVector;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// An address handle in a PD. UD work requests that name it borrow it, so it outlives them.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::AddressHandle;
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// // On RoCE (sw0, rxe) the address vector needs a global route: the peer's GID.
/// let dgid = ctx.query_gid(1, 0)?;
/// let grh = GlobalRoute { dgid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
/// let ah = AddressHandle::new(&pd, av)?;
/// ah.destroy()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
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
    /// alive: [`crate::object::parent`]). On RoCE the address vector needs a global route.
    ///
    /// # Errors
    /// `OutOfRange` before the call for a port outside 1..=`phys_port_cnt` (`port_num`), a
    /// source GID index at or past the port's `gid_tbl_len` (`grh.sgid_index`), as
    /// `ibv_query_device` and `ibv_query_port` report them (read once per context), a service
    /// level past 15 (`sl`), a `static_rate` that is no `enum ibv_rate` value (past 24) or a
    /// flow label past 20 bits (`grh.flow_label`); the device's errno otherwise:
    /// `ENODATA` for a source GID index inside the table that holds no GID (the kernel's
    /// rdma_get_gid_attr), `EINVAL` for an address vector without a global route on RoCE.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
    /// let ah = AddressHandle::new(&pd, av)?;
    /// # drop(ah);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new<'p: 'a>(pd: impl Parent<'a, Target = Pd<'p>>, av: AddressVector) -> Result<Self> {
        let mut attr = av.to_sys();
        let pd = pd.into_held();
        let p = pd.get().as_raw();
        // SAFETY: a live PD's context is live.
        let ctx = unsafe { (*p).context };
        // SAFETY: as above. Both read once per context: no call after the first.
        let dev = unsafe { crate::device::device_attr(ctx, Verb::CreateAh) }?;
        // SAFETY: as above.
        let limits = unsafe { crate::qp::state::Limits::query(ctx, &dev) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let names = crate::qp::state::AvNames {
            port_num: "port_num",
            sgid_index: "grh.sgid_index",
            sl: "sl",
            static_rate: "static_rate",
            flow_label: "grh.flow_label",
        };
        limits
            .av(&names, &av)
            .map_err(|b| Error::range(Verb::CreateAh, b.what, b.value, b.min, b.max))?;
        // SAFETY: a live PD; `attr` valid for the call.
        let raw = unsafe { backend::of((*p).context).create_ah(p, &mut attr) }
            .map_err(|e| Error::os(Verb::CreateAh, e))?;
        Ok(AddressHandle {
            node: Node::into_handle(raw, pd.into_keep()),
            _m: PhantomData,
        })
    }
}

crate::object::node_handle! {
    AddressHandle<'a>: sys::ibv_ah,
    what: "address handle",
    verb: "`ibv_destroy_ah`",
    as_raw:
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = typed_verbs::AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// assert!(!ah.as_raw().is_null()); // still owned by `ah`
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy:
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_ah` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)); a
    /// destroy the device refuses (`EBUSY`) is rare for an AH, as posted work requests do not keep it.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// # let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// # let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
    /// let ah = AddressHandle::new(&pd, av)?;
    /// ah.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    try_destroy:
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`](crate::error::DestroyError) holds the address handle, still alive.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?;
    /// # let pd = Pd::new(&ctx)?;
    /// # let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// # let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
    /// let ah = AddressHandle::new(&pd, av)?;
    /// if let Err(e) = ah.try_destroy() {
    ///     let _ah = e.object; // still alive: retry later, or drop it
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    destroy_raw: |ah| {
        let ah = ah.as_raw();
        // SAFETY: a live AH, destroyed once with success (`destroy_raw`'s contract). A posted
        // work request that still names it is the caller's duty (docs/guarantees.md): rxe keeps the AH's
        // index and fails the request when its kernel finds no AH there; the software device
        // does the same by an id and never reads a destroyed AH; no provider's memory is freed
        // under the device.
        unsafe { backend::of((*ah).context).destroy_ah(ah) }
            .map_err(|e| Error::os(Verb::DestroyAh, e))
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
