//! Queue pairs (ibv_create_qp(3)): the QP type and the receive side are type parameters.
//!
//! ```
//! use typed_verbs::prelude::*;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(64).build()?;
//! let srq = Srq::builder(&pd).max_wr(64).build()?;
//! let rc: Qp<'_, Rc> = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(16).max_recv_wr(16).build()?;
//! let ud: Qp<'_, Ud, UsesSrq> = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
//! assert!(rc.caps().max_send_wr >= 16 && ud.qp_num() != rc.qp_num());
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! A QP is created in RESET and brought to RTS by the transitions of [`state`], or in one call
//! by [`connect`]; [`crate::wr`] posts to it, and [`ex`] makes one whose send ops are its type.
//! The guide's [guarantees](crate::guide::guarantees) page lists the rules a QP's type keeps.

// Address handles (`ibv_create_ah`): a UD send's destination.
pub mod ah;
/// Building a QP: `ibv_create_qp`'s attributes, their checks, and the builder.
mod builder;
// `Qp::endpoint` and `Qp::connect`: an RC or UC QP to RTS in one call.
pub mod connect;
/// Destroying a QP: explicit `destroy`, `Drop`, and the teardowns a batch end runs.
mod drop;
// Extended QPs: the send ops a QP is created for, as its type (`Ex<T, O>`, `send_ops!`).
pub mod ex;
/// QP types and receive sides as types, and the rules the man pages make of them.
mod kind;
// QP states as types, the attributes of each transition, and the transitions.
pub mod state;

pub use builder::*;
use drop::*;
pub use ex::Ex;
pub use kind::*;

use crate::backend;
use crate::cq::{AnyCq, JoinThreading, Shared, Threading};
use crate::device::Context;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::sys;
use crate::mr::sge::TypedSgeCap;
use crate::mr::Sge;
use crate::object::parent::{Keep, Parent};
use crate::object::teardown;
use crate::object::{destroy, Destroy, Leftover, UserBox};
use crate::pd::Pd;
use crate::qp::state::{QpState, Reset};
use crate::sealed;
use crate::srq::Srq;
use crate::sync::Mutex;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

/// A QP's capabilities (`struct ibv_qp_cap`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(100).build()?;
/// let cap = qp.caps(); // what the device gave: at least what was asked
/// assert!(cap.max_send_wr >= 100);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpCap {
    /// Outstanding send work requests.
    pub max_send_wr: u32,
    /// Outstanding receive work requests (0 with an SRQ).
    pub max_recv_wr: u32,
    /// Scatter/gather elements in a send work request.
    pub max_send_sge: u32,
    /// Scatter/gather elements in a receive work request (0 with an SRQ).
    pub max_recv_sge: u32,
    /// Bytes that can be posted inline.
    pub max_inline_data: u32,
}

impl From<sys::ibv_qp_cap> for QpCap {
    fn from(c: sys::ibv_qp_cap) -> Self {
        QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }
}

impl From<QpCap> for sys::ibv_qp_cap {
    fn from(c: QpCap) -> Self {
        sys::ibv_qp_cap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }
}

/// What a QP's `qp_context` points at. `#[repr(C)]` with the multicast groups first, so the
/// destroy finds them without knowing `C`.
#[repr(C)]
struct QpMeta<C> {
    /// The multicast groups the QP is attached to ("ibv_destroy_qp() fails if the QP is
    /// attached to a multicast group"): the QP's destroy detaches what is left, so a group
    /// never left cannot make the QP (and with it its CQs, PD and context) impossible to
    /// destroy.
    mcast: Mutex<Vec<(Gid, u16)>>,
    cap: QpCap,
    /// The provider's known setter bugs ([`backend::QpExQuirks`]), for an extended QP.
    quirks: backend::QpExQuirks,
    /// The device's limits the transitions' attributes are checked against.
    limits: crate::qp::state::Limits,
    sq_sig_all: bool,
    /// What keeps the PD, CQs and SRQ alive when they are shared: released with the meta,
    /// after the QP is destroyed.
    #[allow(dead_code)]
    keep: [Keep; 4],
    user: C,
}

/// The actual caps of `qp` and, for an extended QP, its provider's setter bugs: what a batch
/// checks a request against, read only by the requests that need them (an inline one, a list).
///
/// # Safety
/// `qp` is a live QP made by this crate's builder; the reference does not outlive it.
#[inline(always)]
pub(crate) unsafe fn caps_and_quirks_of<'a>(
    qp: *mut sys::ibv_qp,
) -> (&'a QpCap, &'a backend::QpExQuirks) {
    // SAFETY: caller's contract: qp_context is a QpMeta<C>, whose fields before `user` are at
    // the same offsets whatever `C` is (repr(C), `user` last).
    let m = unsafe { &*((*qp).qp_context as *const QpMeta<()>) };
    (&m.cap, &m.quirks)
}

/// Sets the `sge_list_sums_first` quirk of `qp`, for the batch's tests of its refusal.
///
/// # Safety
/// `qp` is a live QP made by this crate's builder, in no batch.
#[cfg(all(test, feature = "software-device"))]
pub(crate) unsafe fn set_sge_list_quirk_for_test(qp: *mut sys::ibv_qp, on: bool) {
    // SAFETY: caller's contract; as `caps_and_quirks_of`.
    unsafe {
        (*((*qp).qp_context as *mut QpMeta<()>))
            .quirks
            .sge_list_sums_first = on
    };
}

/// The multicast groups of `qp`.
///
/// # Safety
/// `qp` is a live QP made by this crate's builder; the reference does not outlive it.
unsafe fn groups_of<'a>(qp: *mut sys::ibv_qp) -> &'a Mutex<Vec<(Gid, u16)>> {
    // SAFETY: caller's contract: qp_context is a QpMeta<C>, whose first field is at offset 0
    // whatever `C` is (repr(C)).
    unsafe { &(*((*qp).qp_context as *const QpMeta<()>)).mcast }
}

/// A queue pair of type `T` whose receives go to `R` ([`OwnRq`] or [`UsesSrq`]), in state `St`,
/// with `SGE` send SGEs promised by its type (fixed-size lists up to that length are checked at
/// compile time, see [`SgeList`](crate::wr::SgeList); set with [`QpBuilder::send_sge_cap`]).
///
/// `S` is [`Shared`] unless one of its CQs is SINGLE_THREADED; then the QP is neither `Send` nor
/// `Sync`, since posting and destroying it touch the CQ, and its user context may be any type
/// (it stays on the QP's thread and is dropped there). A QP dropped while another thread has a
/// batch open on its other, Shared CQ is destroyed by that thread after its batch ends (the
/// gates order that destroy after every batch on either CQ; see
/// [the safety model](crate::safety)); its user context is dropped at once, on the dropping
/// thread. It holds its PD, CQs and SRQ (borrowed, or shared through `Arc`s:
/// [`crate::object::parent`]), so none of them can be destroyed before it.
///
/// An RC pair in loopback, a send and a receive:
///
/// ```
/// use typed_verbs::prelude::*;
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
/// let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?; // RESET -> INIT -> RTR -> RTS
/// let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// let (tx, rx) = (Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?, Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?);
/// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
/// tx.write(0, b"ping")?;
/// a.post_send(&SendWr::send(2, &[tx.sge(0..4).unwrap()]).signaled())?;
/// let (mut poller, mut done) = (cq.poller()?, 0);
/// while done < 2 {
///     poller.poll_batch(|b| assert!(b.completion().result().is_ok()))?.map(|()| done += 1);
/// }
/// let mut got = [0; 4];
/// rx.read(0, &mut got)?;
/// assert_eq!(&got, b"ping");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// Sending before RTS does not compile:
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?; // in RESET
/// qp.post_send(&SendWr::send(1, &[mr.sge(0..4).unwrap()]))?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Qp<
    'a,
    T: QpType,
    R: RecvSide = OwnRq,
    S: Threading = Shared,
    C = (),
    St: QpState = Reset,
    const SGE: usize = 1,
> {
    raw: NonNull<sys::ibv_qp>,
    _m: PhantomData<(&'a Context, T, R, S, C, St)>,
}

// SAFETY: libibverbs QPs are thread-safe, but a QP on a SINGLE_THREADED CQ must stay on the
// CQ's thread (`SharedAcrossThreads` is implemented by `Shared` only).
unsafe impl<T: QpType, R: RecvSide, S: Threading, C: Send, St: QpState, const SGE: usize> Send
    for Qp<'_, T, R, S, C, St, SGE>
where
    S: crate::cq::SharedAcrossThreads,
{
}
// SAFETY: as above.
unsafe impl<T: QpType, R: RecvSide, S: Threading, C: Sync, St: QpState, const SGE: usize> Sync
    for Qp<'_, T, R, S, C, St, SGE>
where
    S: crate::cq::SharedAcrossThreads,
{
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// # Safety
    /// `raw` is this QP (moved to another state marker), owned by the result.
    pub(crate) unsafe fn from_raw_parts(raw: NonNull<sys::ibv_qp>) -> Self {
        Qp {
            raw,
            _m: PhantomData,
        }
    }

    pub(crate) fn raw_nonnull(&self) -> NonNull<sys::ibv_qp> {
        self.raw
    }

    fn meta(&self) -> &QpMeta<C> {
        // SAFETY: qp_context is the QpMeta<C> the builder gave the QP; it lives until destroy.
        unsafe { &*((*self.raw.as_ptr()).qp_context as *const QpMeta<C>) }
    }

    /// "Check the QP number (qp_num) in the returned QP."
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// println!("QP {:#x}", qp.qp_num());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn qp_num(&self) -> u32 {
        // SAFETY: a live QP; qp_num is fixed at creation.
        unsafe { (*self.raw.as_ptr()).qp_num }
    }

    /// The actual capabilities: "ibv_create_qp() will update the qp_init_attr->cap struct with
    /// the actual QP values of the QP that was created".
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).max_send_wr(10).build()?;
    /// assert!(qp.caps().max_send_wr >= 10);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn caps(&self) -> QpCap {
        self.meta().cap
    }

    /// The device's limits the transitions' attributes are checked against.
    pub(crate) fn limits(&self) -> &crate::qp::state::Limits {
        &self.meta().limits
    }

    /// Whether every send work request generates a completion.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// assert!(!qp.sq_sig_all());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sq_sig_all(&self) -> bool {
        self.meta().sq_sig_all
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).context(42u64).build()?;
    /// assert_eq!(*qp.user_context(), 42);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        &self.meta().user
    }

    /// `ibv_query_qp` for the capabilities.
    ///
    /// # Errors
    /// The device's errno from `ibv_query_qp` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(100).build()?;
    /// assert!(qp.query_caps()?.max_recv_wr >= 100); // the ring, rounded up
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_caps(&self) -> Result<QpCap> {
        // SAFETY: plain C data.
        let (mut attr, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { std::mem::zeroed() };
        let mask = sys::ibv_qp_attr_mask::IBV_QP_CAP.0 as i32;
        // SAFETY: a live QP; out-pointers valid.
        unsafe {
            backend::of((*self.as_raw()).context).query_qp(
                self.as_raw(),
                &mut attr,
                mask,
                &mut init,
            )
        }
        .map_err(|e| Error::os(Verb::QueryQp, e))?;
        Ok(init.cap.into())
    }

    /// `ibv_attach_mcast`: joins the multicast group `gid` (UD QPs only), in any state, so a
    /// QP may join before it is brought up. The QP keeps its groups (through its transitions
    /// too); [`detach_mcast`](Self::detach_mcast) leaves one, and the QP's destroy (or drop)
    /// leaves those still joined first, since "ibv_destroy_qp() fails if the QP is attached to
    /// a multicast group". Attaching to a group already joined is a no-op, as in the kernel.
    ///
    /// # Errors
    /// The device's errno from `ibv_attach_mcast` ([`ErrorKind::Os`]): `EINVAL` for a GID that is
    /// not multicast, `ENOMEM` past the device's `max_mcast_qp_attach` (or when the group list
    /// cannot grow).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// let group = Gid([0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    /// qp.attach_mcast(group, 0)?;
    /// assert_eq!(qp.mcast_groups(), vec![(group, 0)]);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn attach_mcast(&self, gid: Gid, lid: u16) -> Result<()>
    where
        T: MulticastCapable,
    {
        let g = gid.to_sys();
        let mut groups = self.meta().mcast.lock();
        groups
            .try_reserve(1)
            .map_err(|_| Error::os(Verb::AttachMcast, libc::ENOMEM))?;
        // SAFETY: a live QP; `g` valid for the call.
        unsafe { backend::of((*self.as_raw()).context).attach_mcast(self.as_raw(), &g, lid) }
            .map_err(|e| Error::os(Verb::AttachMcast, e))?;
        // The kernel keeps one attachment per (gid, lid): attaching again is a no-op.
        if !groups.contains(&(gid, lid)) {
            groups.push((gid, lid));
        }
        Ok(())
    }

    /// `ibv_detach_mcast`: leaves the multicast group `gid` joined with `lid`. A group the QP
    /// has not joined is the device's error (`EINVAL` on rxe).
    ///
    /// # Errors
    /// The device's errno from `ibv_detach_mcast` ([`ErrorKind::Os`]): `EINVAL` for a group the QP
    /// has not joined (rxe).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// let group = Gid([0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    /// qp.attach_mcast(group, 0)?;
    /// qp.detach_mcast(group, 0)?;
    /// assert!(qp.mcast_groups().is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn detach_mcast(&self, gid: Gid, lid: u16) -> Result<()>
    where
        T: MulticastCapable,
    {
        let g = gid.to_sys();
        let mut groups = self.meta().mcast.lock();
        // SAFETY: a live QP; `g` valid for the call.
        unsafe { backend::of((*self.as_raw()).context).detach_mcast(self.as_raw(), &g, lid) }
            .map_err(|e| Error::os(Verb::DetachMcast, e))?;
        groups.retain(|&m| m != (gid, lid));
        Ok(())
    }

    /// The multicast groups the QP has joined (gid and lid), in the order joined.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// assert!(qp.mcast_groups().is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn mcast_groups(&self) -> Vec<(Gid, u16)>
    where
        T: MulticastCapable,
    {
        self.meta().mcast.lock().clone()
    }

    /// The C QP. It stays owned by `self`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// assert_eq!(unsafe { (*qp.as_raw()).qp_num }, qp.qp_num());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_qp {
        self.raw.as_ptr()
    }

    /// `ibv_destroy_qp` (the multicast groups still attached are detached first). If it fails,
    /// the error is returned and the QP dropped: its `Drop` tries once more (inside a polling
    /// batch, [`ErrorKind::BatchOpen`], when the batch ends) and, failing again, leaks the C
    /// QP. [`try_destroy`](Self::try_destroy) gives the QP back.
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] inside a polling batch (the QP is then destroyed when the batch
    ///   ends). Out of any batch, a batch another thread has open on one of the QP's CQs is
    ///   waited for, as for a lock (no new batch opens on that CQ meanwhile), one CQ at a time,
    ///   for at most a second ([the safety model](crate::safety)): `BatchOpen` after that (a
    ///   batch that long, a batch whose closure waits for this thread, two CQs that never leave
    ///   a gap, or other teardowns of the CQ that held it that long). `destroy` then drops the
    ///   QP, which is destroyed as a dropped QP is: at once if no batch holds its CQs, else
    ///   after a batch ends.
    /// - The device's errno from `ibv_destroy_qp` or from detaching its multicast groups
    ///   ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// qp.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_qp`. On failure the object comes back inside the error, still alive.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the QP, still alive.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// qp.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

/// A global identifier (`union ibv_gid`), 16 bytes in network order.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let gid = ctx.query_gid(1, 0)?; // the port's GID at index 0
/// assert!(!gid.is_multicast());
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// Whether this is a multicast GID (first byte 0xff).
    ///
    /// ```
    /// use typed_verbs::Gid;
    /// assert!(Gid([0xff; 16]).is_multicast());
    /// assert!(!Gid([0; 16]).is_multicast());
    /// ```
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff
    }
    fn to_sys(self) -> sys::ibv_gid {
        sys::ibv_gid { raw: self.0 }
    }
}

/// With the `serde` feature: in a human-readable format (JSON, TOML, ...) a GID is written as
/// the text of the IPv6 address its 16 bytes are (RFC 5952: `"fe80::5054:ff:fe12:3456"`, and
/// `"::ffff:192.168.1.10"` for a RoCE v2 GID of an IPv4 address), as `ibv_devinfo -v` and
/// `/sys/class/infiniband/*/ports/*/gids/*` show it, and any text form of an IPv6 address is
/// read; in a binary format it is its 16 bytes. Every 16 bytes are a GID: nothing else is
/// checked.
///
/// ```
/// use typed_verbs::Gid;
/// let gid = Gid([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56]);
/// let text = serde_json::to_string(&gid).unwrap();
/// assert_eq!(text, r#""fe80::5054:ff:fe12:3456""#);
/// assert_eq!(serde_json::from_str::<Gid>(&text).unwrap(), gid);
/// assert!(serde_json::from_str::<Gid>(r#""fe80::1::2""#).is_err()); // not an IPv6 address
/// ```
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl serde::Serialize for Gid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(&std::net::Ipv6Addr::from(self.0))
        } else {
            self.0.serialize(s)
        }
    }
}

/// Reads what [`Serialize`](serde::Serialize) writes: the text of an IPv6 address in a
/// human-readable format, 16 bytes in a binary one.
///
/// ```
/// use typed_verbs::Gid;
/// let gid: Gid = serde_json::from_str(r#""::ffff:192.168.1.10""#).unwrap();
/// assert_eq!(gid.0[10..], [0xff, 0xff, 192, 168, 1, 10]);
/// ```
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> serde::Deserialize<'de> for Gid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Gid, D::Error> {
        if d.is_human_readable() {
            d.deserialize_str(GidText)
        } else {
            <[u8; 16]>::deserialize(d).map(Gid)
        }
    }
}

/// Reads a GID from the text of an IPv6 address.
#[cfg(feature = "serde")]
struct GidText;

#[cfg(feature = "serde")]
impl serde::de::Visitor<'_> for GidText {
    type Value = Gid;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a GID as the text of an IPv6 address")
    }
    fn visit_str<E: serde::de::Error>(self, text: &str) -> std::result::Result<Gid, E> {
        match text.parse::<std::net::Ipv6Addr>() {
            Ok(a) => Ok(Gid(a.octets())),
            Err(_) => Err(E::invalid_value(serde::de::Unexpected::Str(text), &self)),
        }
    }
}

impl<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize> std::fmt::Debug
    for Qp<'_, T, R, S, C, St, SGE>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qp")
            .field("qp_type", &std::any::type_name::<T>().rsplit("::").next())
            .field("state", &std::any::type_name::<St>().rsplit("::").next())
            .field("qp_num", &self.qp_num())
            .field("send_sge_cap", &SGE)
            .finish_non_exhaustive()
    }
}
