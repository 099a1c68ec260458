//! QP types and receive sides as types, and the rules the man pages make of them.

use super::*;

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
    /// Whether the QP is an extended one ([`Ex`](crate::qp::Ex)), created by `ibv_create_qp_ex`
    /// with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`.
    const EXTENDED: bool = false;
    /// The `send_ops_flags` of an extended QP; 0 for a QP created with `ibv_create_qp`.
    const SEND_OPS: u64 = 0;
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
    message = "a `{Self}` QP sends to an address: use `SendWr::send_to(wr_id, sgl, UdDest::new(&ah, qpn, qkey))` (in an extended QP's batch, `batch.send_to(wr_id, dest)`), or, in generic code over the QP type `T`, add the bound `T: typed_verbs::qp::FixedDest`",
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
