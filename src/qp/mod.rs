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

pub mod ah;
pub mod connect;
pub mod state;

use crate::backend;
use crate::cq::{AnyCq, JoinThreading, Shared, Threading};
use crate::device::Context;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::sync::Mutex;
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
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

/// A QP transport type: [`Rc`], [`Uc`], [`Ud`] or [`RawPacket`].
///
/// ```
/// use typed_verbs::{ffi::sys::ibv_qp_type, QpType, Rc, Ud};
/// assert_eq!(<Rc as QpType>::RAW, ibv_qp_type::IBV_QPT_RC);
/// assert_eq!(<Ud as QpType>::RAW, ibv_qp_type::IBV_QPT_UD);
/// ```
pub trait QpType: sealed::Sealed + 'static {
    /// The `enum ibv_qp_type` value.
    const RAW: sys::ibv_qp_type::Type;
}
/// Reliable connected (`IBV_QPT_RC`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Rc {}
/// Unreliable connected (`IBV_QPT_UC`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Uc {}
/// Unreliable datagram (`IBV_QPT_UD`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Ud {}
/// Raw Ethernet packets (`IBV_QPT_RAW_PACKET`; needs CAP_NET_RAW on real devices).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<RawPacket>::builder(&pd, &cq, &cq).build()?; // sw0 has them; rxe does not
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum RawPacket {}

macro_rules! qp_types {
    ($($t:ident = $c:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl QpType for $t {
            const RAW: sys::ibv_qp_type::Type = sys::ibv_qp_type::$c;
        }
    )*};
}
qp_types!(
    Rc = IBV_QPT_RC,
    Uc = IBV_QPT_UC,
    Ud = IBV_QPT_UD,
    RawPacket = IBV_QPT_RAW_PACKET
);

/// The QP types that may take an SRQ. ibv_create_qp(3): "will fail if it is asked to create QP
/// of a type other than IBV_QPT_RC or IBV_QPT_UD associated with an SRQ."
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let srq = Srq::builder(&pd).max_wr(16).build()?;
/// let rc = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
/// let ud = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// A UC QP with an SRQ does not compile:
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let srq = Srq::builder(&pd).max_wr(16).build()?;
/// let uc = Qp::<Uc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot use an SRQ: only RC and UD QPs may be associated with one; create it with `Qp::builder` and its own receive queue",
    label = "ibv_create_qp fails for this QP type with an SRQ",
    note = "ibv_create_qp(3): it fails for a QP of a type other than IBV_QPT_RC or IBV_QPT_UD associated with an SRQ"
)]
pub trait SrqCapable: QpType + sealed::Sealed {}
impl SrqCapable for Rc {}
impl SrqCapable for Ud {}

/// The QP types that may join a multicast group.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// let group = Gid([0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
/// qp.attach_mcast(group, 0)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP cannot join a multicast group: only UD QPs can be attached (ibv_attach_mcast); join with a `Qp<Ud>`",
    label = "not a UD QP"
)]
pub trait MulticastCapable: QpType + sealed::Sealed {}
impl MulticastCapable for Ud {}

/// The QP types whose sends need no destination: it is fixed by the connection (RC, UC), or
/// written in the packet (RAW_PACKET). A UD send names its destination ([`UdDest`](crate::wr::UdDest)).
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let wr = SendWr::<Ud>::send(1, &[mr.sge(0..8).unwrap()]); // a UD send needs `send_to`
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP sends to an address: use `SendWr::send_to(wr_id, sgl, UdDest::new(&ah, qpn, qkey))`, or, in generic code over the QP type `T`, add the bound `T: typed_verbs::qp::FixedDest`",
    label = "a datagram QP needs a destination for every send"
)]
pub trait FixedDest: QpType + sealed::Sealed {}
impl FixedDest for Rc {}
impl FixedDest for Uc {}
impl FixedDest for RawPacket {}

/// Where a QP's receives go: [`OwnRq`] or [`UsesSrq`].
///
/// ```
/// use typed_verbs::{OwnRq, RecvSide, UsesSrq};
/// assert_eq!(<OwnRq<2> as RecvSide>::RECV_SGE, 2);
/// assert_eq!(<UsesSrq as RecvSide>::RECV_SGE, 0);
/// ```
pub trait RecvSide: sealed::Sealed + 'static {
    /// The receive SGE cap the type promises (0 with an SRQ: the SRQ's type has it).
    const RECV_SGE: usize;
}
/// The QP has its own receive queue, sized by `max_recv_wr` and `max_recv_sge`; its type
/// promises `RECV_SGE` SGEs per receive (default 1, set with [`QpBuilder::recv_sge_cap`]).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp: Qp<'_, Rc, OwnRq<2>> = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(8).recv_sge_cap::<2>().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum OwnRq<const RECV_SGE: usize = 1> {}
/// The QP takes its receives from an SRQ.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let srq = Srq::builder(&pd).max_wr(16).build()?;
/// let qp: Qp<'_, Ud, UsesSrq> = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum UsesSrq {}
impl<const N: usize> sealed::Sealed for OwnRq<N> {}
impl sealed::Sealed for UsesSrq {}
impl<const N: usize> RecvSide for OwnRq<N> {
    const RECV_SGE: usize = N;
}
impl RecvSide for UsesSrq {
    const RECV_SGE: usize = 0;
}

/// Implemented by [`OwnRq`]: only a QP with its own receive queue has receive caps.
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let srq = Srq::builder(&pd).max_wr(16).build()?;
/// // The receive caps of a QP on an SRQ would be ignored: they do not exist.
/// let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_recv_wr(8).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "receive caps cannot be set on a QP that uses an SRQ: ibv_create_qp ignores max_recv_wr and max_recv_sge then; size the Srq instead",
    label = "this QP takes its receives from an SRQ",
    note = "ibv_create_qp(3): the attributes max_recv_wr and max_recv_sge are ignored if the QP is to be associated with an SRQ"
)]
pub trait OwnsRecvQueue: RecvSide + sealed::Sealed {
    /// The same receive side with another receive SGE cap.
    type WithRecvSge<const N: usize>: OwnsRecvQueue;
}
impl<const M: usize> OwnsRecvQueue for OwnRq<M> {
    type WithRecvSge<const N: usize> = OwnRq<N>;
}

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
    /// The device's limits the transitions' attributes are checked against.
    limits: crate::qp::state::Limits,
    sq_sig_all: bool,
    /// What keeps the PD, CQs and SRQ alive when they are shared: released with the meta,
    /// after the QP is destroyed.
    #[allow(dead_code)]
    keep: [Keep; 4],
    user: C,
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

/// The attributes of a QP to create. Made by [`Qp::builder`] or [`Qp::builder_with_srq`].
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
///     .max_send_wr(32)
///     .max_recv_wr(32)
///     .send_sge_cap::<2>() // `&[Sge; 2]` posts without a check
///     .max_inline_data(64)
///     .context("conn 7")   // a typed user context
///     .build()?;
/// assert_eq!(*qp.user_context(), "conn 7");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct QpBuilder<'a, T, R, S, C = (), const SGE: usize = 1> {
    pd: *mut sys::ibv_pd,
    send_cq: *mut sys::ibv_cq,
    recv_cq: *mut sys::ibv_cq,
    srq: *mut sys::ibv_srq,
    cap: QpCap,
    sq_sig_all: bool,
    user: C,
    /// What keeps the PD, CQs and SRQ alive when they are shared.
    keep: [Keep; 4],
    _m: PhantomData<(&'a (), T, R, S)>,
}

/// The threading of a QP whose send CQ is `SC` and receive CQ `RC` (the same CQ by default):
/// [`Shared`] when both CQs are, [`SingleThreaded`](crate::SingleThreaded) otherwise. What
/// [`Qp::builder`] gives; lets generic code name its QPs:
///
/// ```
/// use typed_verbs::{AnyCq, Pd, Qp, QpThreading, Rc, OwnRq};
///
/// fn make_qp<'a, C: AnyCq>(pd: &'a Pd<'_>, cq: &'a C) -> typed_verbs::Result<Qp<'a, Rc, OwnRq, QpThreading<C>>> {
///     Qp::<Rc>::builder(pd, cq, cq).max_send_wr(16).build()
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let pd = Pd::new(&ctx)?;
/// # let cq = typed_verbs::Cq::builder(&ctx).cqe(4).build()?;
/// # make_qp(&pd, &cq)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type QpThreading<SC, RC = SC> =
    <<SC as AnyCq>::Threading as JoinThreading<<RC as AnyCq>::Threading>>::Out;
type Joined<SC, RC> = QpThreading<SC, RC>;

impl<'a, T: QpType> Qp<'a, T> {
    /// Starts building a QP of type `T` in `pd` with its own receive queue. `send_cq` and
    /// `recv_cq` may be the same CQ, legacy or extended. Each parent is `&parent`, or
    /// `&Arc<parent>` for a QP that keeps it alive ([`crate::object::parent`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// let ctx = Arc::new(Context::open("sw0")?);
    /// let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
    /// let qp: Qp<'static, Rc> = Qp::<Rc>::builder(&pd, &cq, &cq).build()?; // keeps its parents alive
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder<'p: 'a, SC, RC>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = RC>,
    ) -> QpBuilder<'a, T, OwnRq, Joined<SC, RC>>
    where
        SC: AnyCq + 'a,
        RC: AnyCq + 'a,
        SC::Threading: JoinThreading<RC::Threading>,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        QpBuilder {
            pd: pd.get().as_raw(),
            send_cq: send_cq.get().as_raw_cq(),
            recv_cq: recv_cq.get().as_raw_cq(),
            srq: ptr::null_mut(),
            cap: QpCap {
                max_send_wr: 1,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            user: (),
            keep: [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                Keep::NONE,
            ],
            _m: PhantomData,
        }
    }

    /// Starts building a QP of type `T` whose receives come from `srq`. Only RC and UD QPs may
    /// take an SRQ; the receive caps cannot be set (they would be ignored). Parents as for
    /// [`builder`](Self::builder).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let srq = Srq::builder(&pd).max_wr(64).build()?;
    /// let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_send_wr(16).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn builder_with_srq<'p: 'a, 's: 'a, SC, RC, SrqC, const SRQ_SGE: usize>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = RC>,
        srq: impl Parent<'a, Target = Srq<'s, SrqC, SRQ_SGE>>,
    ) -> QpBuilder<'a, T, UsesSrq, Joined<SC, RC>>
    where
        T: SrqCapable,
        SC: AnyCq + 'a,
        RC: AnyCq + 'a,
        SC::Threading: JoinThreading<RC::Threading>,
        SrqC: 'a,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        let srq = srq.into_held();
        QpBuilder {
            pd: pd.get().as_raw(),
            send_cq: send_cq.get().as_raw_cq(),
            recv_cq: recv_cq.get().as_raw_cq(),
            srq: srq.get().as_raw(),
            cap: QpCap {
                max_send_wr: 1,
                max_recv_wr: 0,
                max_send_sge: 1,
                max_recv_sge: 0,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            user: (),
            keep: [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                srq.into_keep(),
            ],
            _m: PhantomData,
        }
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading> QpBuilder<'a, T, R, S> {
    /// A builder of the QP in `pd` on these CQs and SRQ, for the slot builders of
    /// [`crate::slots`]: the C objects are live for `'a`, held by the caller's borrows or by
    /// `keep` (PD, send CQ, receive CQ, SRQ), which the QP takes over.
    pub(crate) fn from_parts(
        pd: *mut sys::ibv_pd,
        send_cq: *mut sys::ibv_cq,
        recv_cq: *mut sys::ibv_cq,
        srq: *mut sys::ibv_srq,
        cap: QpCap,
        keep: [Keep; 4],
    ) -> Self {
        QpBuilder {
            pd,
            send_cq,
            recv_cq,
            srq,
            cap,
            sq_sig_all: false,
            user: (),
            keep,
            _m: PhantomData,
        }
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, const SGE: usize> QpBuilder<'a, T, R, S, C, SGE> {
    /// "Requested max number of outstanding WRs in the SQ" (default 1; at most `max_qp_wr`).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(64).build()?;
    /// assert!(qp.caps().max_send_wr >= 64);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_send_wr(mut self, n: u32) -> Self {
        self.cap.max_send_wr = n;
        self
    }

    /// "Requested max number of s/g elements in a WR in the SQ" (default 1; at most `max_sge`),
    /// known at run time. It may not be below the cap in the QP's type (`SGE`, checked by
    /// `build`). Lists longer than `SGE` are slices, checked against the actual cap when posted.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_sge(4).build()?; // slices of up to 4 SGEs
    /// assert!(qp.caps().max_send_sge >= 4);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_send_sge(mut self, n: u32) -> Self {
        self.cap.max_send_sge = n;
        self
    }

    /// Requests `max_send_sge = N` and makes `N` the QP's send SGE cap in its type: a
    /// fixed-size list of up to `N` SGEs (`&[Sge; N]`) is then accepted without a check when
    /// posted, and a longer one does not compile. `N` is at most
    /// [`MAX_TYPED_SGE`](crate::wr::MAX_TYPED_SGE).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Rc, OwnRq, Shared, (), Reset, 3> = Qp::<Rc>::builder(&pd, &cq, &cq).send_sge_cap::<3>().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_sge_cap<const N: usize>(self) -> QpBuilder<'a, T, R, S, C, N>
    where
        Sge<'static>: TypedSgeCap<N>,
    {
        let cap = QpCap {
            max_send_sge: N as u32,
            ..self.cap
        };
        self.retype(cap, |user| user)
    }

    /// "Requested max number of data (bytes) that can be posted inline to the SQ" (default 0).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(128).build()?;
    /// assert!(qp.caps().max_inline_data >= 128);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_inline_data(mut self, n: u32) -> Self {
        self.cap.max_inline_data = n;
        self
    }

    /// "If set, each Work Request (WR) submitted to the SQ generates a completion entry"
    /// (default false: only signaled requests do).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).sq_sig_all(true).build()?; // every send completes
    /// assert!(qp.sq_sig_all());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sq_sig_all(mut self, on: bool) -> Self {
        self.sq_sig_all = on;
        self
    }

    /// "Requested max number of outstanding WRs in the RQ" (default 1; at most `max_qp_wr`).
    /// Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(64).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(32).build()?;
    /// assert!(qp.caps().max_recv_wr >= 32);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_recv_wr(mut self, n: u32) -> Self
    where
        R: OwnsRecvQueue,
    {
        self.cap.max_recv_wr = n;
        self
    }

    /// "Requested max number of s/g elements in a WR in the RQ" (default 1; at most `max_sge`).
    /// Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_sge(2).build()?;
    /// assert!(qp.caps().max_recv_sge >= 2);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn max_recv_sge(mut self, n: u32) -> Self
    where
        R: OwnsRecvQueue,
    {
        self.cap.max_recv_sge = n;
        self
    }

    /// Requests `max_recv_sge = N` and makes `N` the receive SGE cap in the QP's type (see
    /// [`send_sge_cap`](Self::send_sge_cap)): `post_recv` then takes fixed-size lists of up to
    /// `N` SGEs without a check. Only for a QP with its own receive queue.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Rc, OwnRq<2>> = Qp::<Rc>::builder(&pd, &cq, &cq).recv_sge_cap::<2>().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn recv_sge_cap<const N: usize>(self) -> QpBuilder<'a, T, R::WithRecvSge<N>, S, C, SGE>
    where
        R: OwnsRecvQueue,
        Sge<'static>: TypedSgeCap<N>,
    {
        let cap = QpCap {
            max_recv_sge: N as u32,
            ..self.cap
        };
        self.retype(cap, |user| user)
    }

    /// The typed user context, in place of `void *qp_context`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).context(String::from("peer 10.0.0.2")).build()?;
    /// assert_eq!(qp.user_context(), "peer 10.0.0.2");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn context<C2>(self, user: C2) -> QpBuilder<'a, T, R, S, C2, SGE> {
        let cap = self.cap;
        self.retype(cap, |_old| user)
    }

    /// The same builder with `cap` and the user context mapped by `user`, under other type
    /// parameters.
    fn retype<R2, C2, const SGE2: usize>(
        self,
        cap: QpCap,
        user: impl FnOnce(C) -> C2,
    ) -> QpBuilder<'a, T, R2, S, C2, SGE2> {
        QpBuilder {
            pd: self.pd,
            send_cq: self.send_cq,
            recv_cq: self.recv_cq,
            srq: self.srq,
            cap,
            sq_sig_all: self.sq_sig_all,
            user: user(self.user),
            keep: self.keep,
            _m: PhantomData,
        }
    }

    fn check(&self, a: &sys::ibv_device_attr) -> Result<()> {
        let v = Verb::CreateQp;
        let limit = |what, value: u32, min: usize, max: i32| {
            let (min, max) = (min as u64, max.max(0) as u64);
            if u64::from(value) < min || u64::from(value) > max {
                Err(Error::range(v, what, value.into(), min, max))
            } else {
                Ok(())
            }
        };
        // The SGE counts may not be below what the type promises (SGE send, R::RECV_SGE
        // receive SGEs): fixed-size lists rely on it.
        limit("cap.max_send_wr", self.cap.max_send_wr, 0, a.max_qp_wr)?;
        limit("cap.max_send_sge", self.cap.max_send_sge, SGE, a.max_sge)?;
        limit("cap.max_recv_wr", self.cap.max_recv_wr, 0, a.max_qp_wr)?;
        let recv_sge = self.cap.max_recv_sge;
        limit("cap.max_recv_sge", recv_sge, R::RECV_SGE, a.max_sge)?;
        // SAFETY: the PD, CQs and SRQ are live objects borrowed by the builder.
        unsafe {
            let ctx = (*self.pd).context;
            if (*self.send_cq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("send_cq"),
                });
            }
            if (*self.recv_cq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("recv_cq"),
                });
            }
            if !self.srq.is_null() && (*self.srq).context != ctx {
                return Err(Error {
                    verb: v,
                    kind: ErrorKind::WrongContext("srq"),
                });
            }
        }
        Ok(())
    }

    /// `ibv_create_qp`. The actual caps ("greater than or equal to the values requested") are
    /// kept and readable with [`Qp::caps`].
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `cap.max_send_wr` or `cap.max_recv_wr` over the device's
    ///   `max_qp_wr`, `cap.max_send_sge` or `cap.max_recv_sge` over `max_sge` or below the SGE cap
    ///   of the QP's type, before the call; or naming `actual cap.max_send_sge` /
    ///   `actual cap.max_recv_sge` when the device gave less than the type's cap (the QP is
    ///   destroyed).
    /// - [`ErrorKind::WrongContext`] naming `send_cq`, `recv_cq` or `srq` of another context.
    /// - The device's errno from `ibv_create_qp` ([`ErrorKind::Os`]): `EINVAL` for caps it refuses
    ///   (e.g. `max_inline_data` over its limit), `EOPNOTSUPP` for a QP type it lacks (RAW_PACKET
    ///   on rxe), `ENOMEM` when out of QPs or memory, `EAGAIN` when the software device cannot start
    ///   its RNR timer thread.
    /// - [`ErrorKind::MissingProviderOp`] when the provider did not fill `post_send` or
    ///   `post_recv` (the QP is destroyed).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let err = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(ctx.attr().max_qp_wr + 1).build().unwrap_err();
    /// assert!(matches!(err.kind, typed_verbs::ErrorKind::OutOfRange { what: "cap.max_send_wr", .. }));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<Qp<'a, T, R, S, C, Reset, SGE>>
    where
        S: crate::cq::QpContextOk<C>,
    {
        // SAFETY: a live PD's context is live.
        let ctx = unsafe { (*self.pd).context };
        // SAFETY: as above.
        let a = unsafe { crate::device::device_attr(ctx, Verb::CreateQp) }?;
        self.check(&a)?;
        // What the transitions' attributes are checked against: read once, here.
        // SAFETY: as above.
        let limits = unsafe { crate::qp::state::Limits::query(ctx, &a) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let meta = UserBox::new(QpMeta {
            limits,
            cap: self.cap,
            sq_sig_all: self.sq_sig_all,
            mcast: Mutex::new(Vec::new()),
            keep: self.keep,
            user: self.user,
        });
        let mut init = sys::ibv_qp_init_attr {
            qp_context: meta.as_void(),
            send_cq: self.send_cq,
            recv_cq: self.recv_cq,
            srq: self.srq,
            cap: self.cap.into(),
            qp_type: T::RAW,
            sq_sig_all: self.sq_sig_all as i32,
        };
        // SAFETY: a live PD; CQs and SRQ live and of its context (checked); `init` valid.
        let raw = unsafe { backend::of(ctx).create_qp(self.pd, &mut init) }
            .map_err(|e| Error::os(Verb::CreateQp, e))?; // `meta` is freed on this path
        let meta = meta.into_raw();
        // SAFETY: `meta` is ours; ibv_create_qp wrote the actual caps into `init.cap`.
        unsafe { (*meta).cap = init.cap.into() };
        let qp = Qp {
            raw,
            _m: PhantomData,
        };
        // Checked once here, so that posting calls the provider without a NULL test (as verbs.h).
        // SAFETY: a live QP's context is live; its ops are only read.
        let ops = unsafe { &(*ctx).ops };
        // "greater than or equal to the values requested": a provider that gave less would
        // break the promise fixed-size lists rely on.
        let actual = [
            ("actual cap.max_send_sge", init.cap.max_send_sge, SGE),
            (
                "actual cap.max_recv_sge",
                init.cap.max_recv_sge,
                R::RECV_SGE,
            ),
        ];
        if let Some(&(what, value, floor)) = actual.iter().find(|a| (a.1 as usize) < a.2) {
            drop(qp); // ibv_destroy_qp, and the user context with it
            let (value, floor) = (value.into(), floor as u64);
            return Err(Error::range(
                Verb::CreateQp,
                what,
                value,
                floor,
                u32::MAX.into(),
            ));
        }
        let missing = [
            ("post_send", ops.post_send.is_none()),
            ("post_recv", ops.post_recv.is_none()),
        ];
        if let Some((op, _)) = missing.iter().find(|m| m.1) {
            drop(qp); // ibv_destroy_qp, and the user context with it
            return Err(Error {
                verb: Verb::CreateQp,
                kind: ErrorKind::MissingProviderOp(op),
            });
        }
        Ok(qp)
    }
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

impl<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize> Destroy
    for Qp<'_, T, R, S, C, St, SGE>
{
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        // SAFETY: a live QP made by the builder with `C`, destroyed once.
        unsafe { destroy_checked(self.as_raw()) }
    }
    fn leftover(&self) -> Leftover {
        // SAFETY: a live QP made by the builder with `C`.
        Leftover::user_box::<QpMeta<C>>(unsafe { (*self.as_raw()).qp_context })
    }
}

impl<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize> Drop
    for Qp<'_, T, R, S, C, St, SGE>
{
    fn drop(&mut self) {
        // SAFETY: dropped once: a live QP made by the builder with `C`, whose handle is gone.
        unsafe { drop_qp::<C>(self.as_raw()) }
    }
}

/// Detaches `qp` from `groups` (the ones that fail stay in it) and destroys it. Every group is
/// tried: a device may already have dropped one (rxe keeps one attachment per gid where the
/// kernel keeps one per gid and lid); what is still attached after this makes
/// `ibv_destroy_qp` fail with EBUSY, reported. Runs no user code.
///
/// # Safety
/// `qp` is a live QP, destroyed at most once.
unsafe fn destroy_with_groups(
    qp: *mut sys::ibv_qp,
    groups: &mut Vec<(Gid, u16)>,
) -> Result<(), Error> {
    // SAFETY: caller's contract.
    let backend = unsafe { backend::of((*qp).context) };
    groups.retain(|&(gid, lid)| {
        let g = gid.to_sys();
        // SAFETY: a live QP; `g` valid for the call.
        unsafe { backend.detach_mcast(qp, &g, lid) }.is_err()
    });
    // SAFETY: a live QP, destroyed at most once (caller's contract); a group still attached
    // makes the destroy fail with EBUSY, which is reported.
    unsafe { crate::raw::destroying::destroy_qp(qp) }.map_err(|e| Error::os(Verb::DestroyQp, e))
}

/// Destroys `qp`: refused with [`ErrorKind::BatchOpen`] inside a polling batch (it would wait
/// for the CQ locks, see [`crate::object::teardown`]); otherwise, once the batch in progress on its
/// CQ(s) has ended (the gates; refused after a second of waiting), the multicast groups still attached
/// (never left) are detached first, then `ibv_destroy_qp`. Runs no user code; the user
/// context is the caller's to free (its `Leftover`) once the handle is disarmed.
///
/// # Safety
/// `qp` is a live QP made by this crate's builder, destroyed at most once.
unsafe fn destroy_checked(qp: *mut sys::ibv_qp) -> Result<(), Error> {
    let busy = Error {
        verb: Verb::DestroyQp,
        kind: ErrorKind::BatchOpen,
    };
    if teardown::inside_batch() {
        return Err(busy);
    }
    // A batch another thread has open on one of its CQs holds the lock the destroy takes: waited
    // for, one CQ at a time (crate::object::teardown's gates), for at most `TEARDOWN_WAIT`.
    // SAFETY: caller's contract: a live QP, whose CQs live; out of any batch (checked above).
    let gates = unsafe { teardown::close_gates_waiting(cqs_of(qp)) }.ok_or(busy)?;
    // SAFETY: caller's contract.
    let r = unsafe { destroy_with_groups(qp, &mut groups_of(qp).lock()) };
    drop(gates);
    r
}

/// A live QP's send and receive CQs.
///
/// # Safety
/// `qp` is live.
pub(crate) unsafe fn cqs_of(qp: *mut sys::ibv_qp) -> [*mut sys::ibv_cq; 2] {
    // SAFETY: caller's contract; the fields are fixed at creation.
    unsafe { [(*qp).send_cq, (*qp).recv_cq] }
}

/// What waits with a C QP whose destroy waits (for this thread's batch, or another thread's):
/// the groups left, and what keeps its PD, CQs and SRQ alive, released only after the QP is
/// destroyed.
struct PendingDestroy {
    groups: Vec<(Gid, u16)>,
    keep: [Keep; 4],
}

/// A waiting QP's destroy, once nothing holds its CQs' locks: then its parents' release (not
/// here, among teardowns: releasing one may run a user context's `Drop`; crate::object::teardown).
///
/// # Safety
/// `qp` is a live QP and `rest` its boxed `PendingDestroy`, each used once here; the QP's CQs' gates are
/// closed to batches.
unsafe fn later(qp: *mut c_void, rest: *mut c_void) {
    // SAFETY: caller's contract.
    unsafe {
        let mut rest = Box::from_raw(rest as *mut PendingDestroy);
        if destroy_with_groups(qp.cast(), &mut rest.groups).is_ok() {
            teardown::release_after(std::mem::replace(&mut rest.keep, Keep::NONE_4));
        } else {
            // Still alive: it keeps its parents for good.
            std::mem::forget(rest);
        }
    }
}

/// [`later`] at the end of the batch the QP waited for (this thread's, or another thread's it
/// was handed to): once the QP's CQs' gates are closed, waiting for the batch in progress on
/// its other CQ as an explicit destroy does, so that it is not handed between two busy CQs for
/// ever; handed on to that batch only if it lasts longer than `TEARDOWN_WAIT`.
///
/// # Safety
/// As [`later`]'s, but for the gates; on a thread out of any batch (a batch's end runs it).
unsafe fn later_gated(qp: *mut c_void, rest: *mut c_void) {
    let q = qp.cast::<sys::ibv_qp>();
    // SAFETY: caller's contract: a live QP of a live context, whose CQs live until it is
    // destroyed (its parents, held by `rest` or borrowed, wait behind it); run at a batch's
    // end, out of it.
    unsafe { teardown::run_at_batch_end((*q).context, cqs_of(q), later, later_gated, qp, rest) };
}

/// Moves the groups and the parents out of a dropped QP's meta: what its waiting destroy
/// needs, boxed. The rest of the meta (the user context) is the caller's to free, after the
/// QP is queued or handed on, so that a panicking user context loses nothing.
///
/// # Safety
/// `meta` is the QP's `QpMeta<C>`, ours since the handle is gone.
unsafe fn into_later<C>(meta: *mut QpMeta<C>) -> *mut c_void {
    // SAFETY: caller's contract.
    let rest = unsafe {
        PendingDestroy {
            groups: std::mem::take(&mut *(*meta).mcast.lock()),
            keep: std::mem::replace(&mut (*meta).keep, Keep::NONE_4),
        }
    };
    Box::into_raw(Box::new(rest)).cast()
}

/// A QP's `Drop`: tears it down and frees its user context. Inside a polling batch the
/// destroy waits for the batch's end; while another thread's batch holds one of its CQs'
/// locks, for that batch's end ([`crate::object::teardown`]). A waiting QP's user context is dropped
/// at once, since it may borrow what the closure frees next.
///
/// # Safety
/// `qp` is a live QP made by the builder with user context `C`, whose handle is gone; called
/// once.
unsafe fn drop_qp<C>(qp: *mut sys::ibv_qp) {
    // SAFETY: caller's contract.
    let (meta, ctx) = unsafe { ((*qp).qp_context as *mut QpMeta<C>, (*qp).context) };
    if teardown::inside_batch() {
        // SAFETY: the meta is the QP's, ours since the handle is gone. The QP, its groups and
        // its parents' references are the queue's until `later_gated` runs (nothing else can
        // destroy the QP: its handle is gone).
        unsafe {
            let rest = into_later(meta);
            teardown::defer(ctx, later_gated, qp.cast(), rest);
            drop(Box::from_raw(meta)); // the user context, once the QP is queued
        }
        return;
    }
    // SAFETY: caller's contract: its CQs live while it does.
    match unsafe { teardown::close_gates(cqs_of(qp)) } {
        Ok(gates) => {
            let left = Leftover::user_box::<QpMeta<C>>(meta.cast());
            // SAFETY: caller's contract; an error cannot be reported from drop (use `destroy`),
            // and the user context then stays with the live QP.
            let destroyed = unsafe { destroy_with_groups(qp, &mut groups_of(qp).lock()) };
            drop(gates);
            if destroyed.is_ok() {
                // SAFETY: the QP is destroyed and its handle gone; freed once.
                unsafe { left.free() };
            }
        }
        Err(_) => {
            // Another thread's batch holds one of its CQs' locks: destroyed after that batch.
            // SAFETY: as in the batch branch; `run_or_hand` runs it now or hands it on.
            let ran = unsafe {
                let rest = into_later(meta);
                let cqs = cqs_of(qp);
                let ran = teardown::run_or_hand(ctx, cqs, later, later_gated, qp.cast(), rest);
                drop(Box::from_raw(meta)); // the user context, once the QP is handed on
                ran
            };
            if ran {
                teardown::release_now();
            }
        }
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
