//! Extended QPs (`ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, ibv_wr_post(3)): the
//! send ops a QP may post are its type, as a CQ's `wc_flags` are.
//!
//! ```
//! use typed_verbs::prelude::*;
//! use typed_verbs::send_ops;
//! type Ops = send_ops!(SEND | RDMA_WRITE);
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
//! let build = || Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(64).send_ops::<Ops>().build();
//! let (a, b): (Qp<'_, Ex<Rc, Ops>>, _) = (build()?, build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
//! let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
//! let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
//! let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
//! a.post_batch(|batch| {
//!     batch.send(2).inline(b"hello")?; // ibv_wr_send, ibv_wr_set_inline_data
//!     Ok(())
//! })?; // ibv_wr_start before the closure, ibv_wr_complete after it
//! let mut poller = cq.poller()?;
//! while poller.poll_batch(|c| assert_eq!(c.completion().result().ok().map(|wc| wc.wr_id()), Some(1)))?.is_none() {}
//! let mut got = [0; 5];
//! rx.read(0, &mut got)?;
//! assert_eq!(&got, b"hello");
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [extended QP](crate::guide::extended_qp) page lists every rule of ibv_wr_post(3),
//! where each is kept, and what each provider checks.
//!
//! An extended QP is a [`Qp`] whose QP type is [`Ex<T, O>`](Ex): the transport `T` ([`Rc`],
//! [`Uc`], [`Ud`], [`RawPacket`]) and the ops `O` it was created for, named with
//! [`send_ops!`](crate::send_ops) and given to the builder with
//! [`QpBuilder::send_ops`]. What a `Qp<T>` does, a `Qp<Ex<T, O>>` does (transitions,
//! `connect`, receives, the legacy `post_send` of a `SendWr` inferred from it), but for the
//! connection manager's QPs, which are created by their own path; in RTS it also posts in batches
//! ([`Qp::post_batch`](crate::qp::Qp::post_batch), in [`crate::wr`]), where each op's builder
//! exists only when `O` has the op.
//!
//! ibv_create_qp_ex(3): `send_ops_flags` "should be set to the OR of the work request types that
//! will be posted"; "If the QP does not support all the requested work request types then QP
//! creation will fail." The types check what the man page's table allows per QP type
//! ([`OpsFor`]); the device's own set (rxe has no LOCAL_INV on UC; siw, irdma, mlx4 and qedr have
//! no extended QP at all) is checked by creation, whose refusal is
//! [`ErrorKind::SendOpsUnsupported`], naming the device.
//!
//! An op the QP type cannot post does not compile:
//!
//! ```compile_fail,E0277
//! # use typed_verbs::prelude::*;
//! # use typed_verbs::send_ops;
//! # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
//! let qp = Qp::<Ud>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND | RDMA_READ)>().build()?; // reads are RC only
//! # Ok::<(), typed_verbs::Error>(())
//! ```

use super::*;
use crate::sealed::Sealed;

/// The `IBV_QP_EX_WITH_*` bits of the ops typed-verbs offers (`enum
/// ibv_qp_create_send_ops_flags`).
///
/// ```
/// use typed_verbs::qp::ex::bits;
/// assert_eq!(bits::RDMA_WRITE | bits::SEND, 0b101); // verbs.h's values
/// ```
///
/// The extended QP's rules: [the guide's page](crate::guide::extended_qp).
pub mod bits {
    use crate::ffi::sys::ibv_qp_create_send_ops_flags as f;
    /// `IBV_QP_EX_WITH_RDMA_WRITE`.
    pub const RDMA_WRITE: u64 = f::IBV_QP_EX_WITH_RDMA_WRITE.0 as u64;
    /// `IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM`.
    pub const RDMA_WRITE_WITH_IMM: u64 = f::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM.0 as u64;
    /// `IBV_QP_EX_WITH_SEND`.
    pub const SEND: u64 = f::IBV_QP_EX_WITH_SEND.0 as u64;
    /// `IBV_QP_EX_WITH_SEND_WITH_IMM`.
    pub const SEND_WITH_IMM: u64 = f::IBV_QP_EX_WITH_SEND_WITH_IMM.0 as u64;
    /// `IBV_QP_EX_WITH_RDMA_READ`.
    pub const RDMA_READ: u64 = f::IBV_QP_EX_WITH_RDMA_READ.0 as u64;
    /// `IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP`.
    pub const ATOMIC_CMP_AND_SWP: u64 = f::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP.0 as u64;
    /// `IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD`.
    pub const ATOMIC_FETCH_AND_ADD: u64 = f::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD.0 as u64;
}

/// A QP's set of send ops, as a type. Implemented only by [`SendOpSet`].
///
/// ```
/// use typed_verbs::{qp::ex::{bits, SendOps}, send_ops};
/// fn ops<O: SendOps>() -> u64 { O::BITS }
/// assert_eq!(ops::<send_ops!(SEND | RDMA_READ)>(), bits::SEND | bits::RDMA_READ);
/// ```
pub trait SendOps: Sealed + 'static {
    /// The `send_ops_flags` passed to `ibv_create_qp_ex`.
    const BITS: u64;
}

/// The set of `IBV_QP_EX_WITH_*` ops of an extended QP: one `bool` per op, in verbs.h's order.
/// Name one with [`send_ops!`](crate::send_ops) (`send_ops!(SEND | RDMA_WRITE)`).
///
/// ```
/// use typed_verbs::{qp::ex::SendOpSet, send_ops};
/// let _: Option<send_ops!(SEND)> = None::<SendOpSet<false, false, true, false, false, false, false>>;
/// ```
pub enum SendOpSet<
    const RDMA_WRITE: bool,
    const RDMA_WRITE_WITH_IMM: bool,
    const SEND: bool,
    const SEND_WITH_IMM: bool,
    const RDMA_READ: bool,
    const ATOMIC_CMP_AND_SWP: bool,
    const ATOMIC_FETCH_AND_ADD: bool,
> {}

/// Impls for every op set: each trait's items, over the seven ops as parameters.
macro_rules! every_op_set {
    ($($tr:path { $($body:tt)* })*) => {$(
        impl<
            const W: bool,
            const WI: bool,
            const S: bool,
            const SI: bool,
            const R: bool,
            const CS: bool,
            const FA: bool,
        > $tr for SendOpSet<W, WI, S, SI, R, CS, FA>
        {
            $($body)*
        }
    )*};
}

every_op_set! {
    Sealed {}
    SendOps {
        const BITS: u64 = (W as u64 * bits::RDMA_WRITE)
            | (WI as u64 * bits::RDMA_WRITE_WITH_IMM)
            | (S as u64 * bits::SEND)
            | (SI as u64 * bits::SEND_WITH_IMM)
            | (R as u64 * bits::RDMA_READ)
            | (CS as u64 * bits::ATOMIC_CMP_AND_SWP)
            | (FA as u64 * bits::ATOMIC_FETCH_AND_ADD);
    }
}

/// The ops a QP of type `T` may be created for: ibv_wr_post(3)'s table. RDMA write and write
/// with immediate on RC and UC; RDMA read and the atomics on RC only; send on every type; send
/// with immediate on RC, UC and UD.
///
/// ```
/// use typed_verbs::{qp::ex::OpsFor, send_ops, Rc, Uc};
/// fn legal<O: OpsFor<T>, T>() {}
/// legal::<send_ops!(SEND | RDMA_READ | ATOMIC_FETCH_AND_ADD), Rc>();
/// legal::<send_ops!(RDMA_WRITE_WITH_IMM), Uc>();
/// ```
#[diagnostic::on_unimplemented(
    message = "these send ops include one that a `{T}` QP cannot post: remove it from `send_ops!(..)` (RDMA_WRITE and RDMA_WRITE_WITH_IMM are RC and UC only, RDMA_READ and the atomics RC only, SEND_WITH_IMM not on RAW_PACKET)",
    label = "an op this QP type cannot post",
    note = "ibv_wr_post(3)'s table of the QP types each op supports; ibv_create_qp_ex fails for an op the QP cannot post"
)]
pub trait OpsFor<T>: SendOps {}
impl<
        const W: bool,
        const WI: bool,
        const S: bool,
        const SI: bool,
        const R: bool,
        const CS: bool,
        const FA: bool,
    > OpsFor<Rc> for SendOpSet<W, WI, S, SI, R, CS, FA>
{
}
impl<const W: bool, const WI: bool, const S: bool, const SI: bool> OpsFor<Uc>
    for SendOpSet<W, WI, S, SI, false, false, false>
{
}
impl<const S: bool, const SI: bool> OpsFor<Ud>
    for SendOpSet<false, false, S, SI, false, false, false>
{
}
impl OpsFor<RawPacket> for SendOpSet<false, false, true, false, false, false, false> {}

macro_rules! op_traits {
    ($($trait:ident ($name:literal, $label:literal, $flag:literal, $method:literal) for <$($p:ident),*> [$($a:tt),*];)*) => {$(
        #[doc = concat!("Implemented by the op sets that have `IBV_QP_EX_WITH_", $flag, "`: what a batch's `", $method, "` needs.")]
        #[doc = concat!("\n\n```\nfn needs<O: typed_verbs::qp::ex::", stringify!($trait), ">() {}\nneeds::<typed_verbs::send_ops!(", $flag, ")>();\n```")]
        #[diagnostic::on_unimplemented(
            message = $name,
            label = $label,
            note = "an extended QP's send ops are its type: a builder exists only if its op was requested at ibv_create_qp_ex (the provider leaves the others NULL)"
        )]
        pub trait $trait: SendOps {}
        impl<$(const $p: bool),*> $trait for SendOpSet<$($a),*> {}
    )*};
}

op_traits! {
    HasRdmaWrite ("`rdma_write` needs a QP created with IBV_QP_EX_WITH_RDMA_WRITE, which this QP's send_ops type does not promise: add RDMA_WRITE to it (`send_ops!(... | RDMA_WRITE)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasRdmaWrite`", "`rdma_write` needs IBV_QP_EX_WITH_RDMA_WRITE in the QP's send_ops", "RDMA_WRITE", "rdma_write")
        for <WI, S, SI, R, CS, FA> [true, WI, S, SI, R, CS, FA];
    HasRdmaWriteWithImm ("`rdma_write_with_imm` needs a QP created with IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, which this QP's send_ops type does not promise: add RDMA_WRITE_WITH_IMM to it (`send_ops!(... | RDMA_WRITE_WITH_IMM)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasRdmaWriteWithImm`", "`rdma_write_with_imm` needs IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM in the QP's send_ops", "RDMA_WRITE_WITH_IMM", "rdma_write_with_imm")
        for <W, S, SI, R, CS, FA> [W, true, S, SI, R, CS, FA];
    HasSend ("`send` needs a QP created with IBV_QP_EX_WITH_SEND, which this QP's send_ops type does not promise: add SEND to it (`send_ops!(... | SEND)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasSend`", "`send` needs IBV_QP_EX_WITH_SEND in the QP's send_ops", "SEND", "send")
        for <W, WI, SI, R, CS, FA> [W, WI, true, SI, R, CS, FA];
    HasSendWithImm ("`send_with_imm` needs a QP created with IBV_QP_EX_WITH_SEND_WITH_IMM, which this QP's send_ops type does not promise: add SEND_WITH_IMM to it (`send_ops!(... | SEND_WITH_IMM)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasSendWithImm`", "`send_with_imm` needs IBV_QP_EX_WITH_SEND_WITH_IMM in the QP's send_ops", "SEND_WITH_IMM", "send_with_imm")
        for <W, WI, S, R, CS, FA> [W, WI, S, true, R, CS, FA];
    HasRdmaRead ("`rdma_read` needs a QP created with IBV_QP_EX_WITH_RDMA_READ, which this QP's send_ops type does not promise: add RDMA_READ to it (`send_ops!(... | RDMA_READ)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasRdmaRead`", "`rdma_read` needs IBV_QP_EX_WITH_RDMA_READ in the QP's send_ops", "RDMA_READ", "rdma_read")
        for <W, WI, S, SI, CS, FA> [W, WI, S, SI, true, CS, FA];
    HasCmpAndSwp ("`compare_swap` needs a QP created with IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, which this QP's send_ops type does not promise: add ATOMIC_CMP_AND_SWP to it (`send_ops!(... | ATOMIC_CMP_AND_SWP)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasCmpAndSwp`", "`compare_swap` needs IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP in the QP's send_ops", "ATOMIC_CMP_AND_SWP", "compare_swap")
        for <W, WI, S, SI, R, FA> [W, WI, S, SI, R, true, FA];
    HasFetchAndAdd ("`fetch_add` needs a QP created with IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, which this QP's send_ops type does not promise: add ATOMIC_FETCH_AND_ADD to it (`send_ops!(... | ATOMIC_FETCH_AND_ADD)`), or, in generic code over the ops `O`, add the bound `O: typed_verbs::qp::ex::HasFetchAndAdd`", "`fetch_add` needs IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD in the QP's send_ops", "ATOMIC_FETCH_AND_ADD", "fetch_add")
        for <W, WI, S, SI, R, CS> [W, WI, S, SI, R, CS, true];
}

/// The QP type of an extended QP: the transport `T` created with the send ops `O`
/// (`ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`). Uninhabited: a type-level name.
///
/// ```
/// # use typed_verbs::prelude::*;
/// use typed_verbs::send_ops;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp: Qp<'_, Ex<Uc, send_ops!(SEND | RDMA_WRITE)>> =
///     Qp::<Uc>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND | RDMA_WRITE)>().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub enum Ex<T, O> {
    #[doc(hidden)]
    _Never(std::convert::Infallible, PhantomData<(T, O)>),
}

impl<T: QpType, O: OpsFor<T>> Sealed for Ex<T, O> {}
impl<T: QpType, O: OpsFor<T>> QpType for Ex<T, O> {
    const RAW: sys::ibv_qp_type::Type = T::RAW;
    const EXTENDED: bool = true;
    const SEND_OPS: u64 = O::BITS;
}
impl<T: SrqCapable, O: OpsFor<T>> SrqCapable for Ex<T, O> {}
impl<T: MulticastCapable, O: OpsFor<T>> MulticastCapable for Ex<T, O> {}
impl<T: FixedDest, O: OpsFor<T>> FixedDest for Ex<T, O> {}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, const SGE: usize> QpBuilder<'a, T, R, S, C, SGE> {
    /// Makes the QP an extended one, created for the send ops `O` (`ibv_create_qp_ex` with
    /// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, `send_ops_flags = O::BITS`): it posts in batches
    /// ([`Qp::post_batch`](crate::qp::Qp::post_batch)) with the builders of those ops. `O`
    /// must suit the QP type ([`OpsFor`]).
    ///
    /// The legacy [`Qp::post_send`](crate::qp::Qp::post_send) path works on every device; not
    /// every device has extended QPs (rdma-core's siw, irdma, mlx4 and qedr do not), and
    /// [`build`](QpBuilder::build) then fails with
    /// [`ErrorKind::SendOpsUnsupported`](crate::ErrorKind::SendOpsUnsupported).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// use typed_verbs::send_ops;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
    ///     .max_send_wr(64)
    ///     .send_ops::<send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_READ | ATOMIC_FETCH_AND_ADD)>()
    ///     .build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_ops<O: OpsFor<T>>(self) -> QpBuilder<'a, Ex<T, O>, R, S, C, SGE> {
        let cap = self.cap();
        self.retype(cap, |user| user)
    }
}

/// The provider functions an extended QP of type `T` with ops `O` calls, each checked once at
/// creation so that posting calls them without a NULL test (as verbs.h's inline `ibv_wr_*`
/// do): the batch's start, complete and abort, the data setters the typed layer uses, the UD
/// address setter on UD, and the builder of every op in `O`.
///
/// # Safety
/// `qpx` is a live extended QP.
pub(crate) unsafe fn missing_ex_op(
    qpx: *mut sys::ibv_qp_ex,
    raw: sys::ibv_qp_type::Type,
    ops: u64,
) -> Option<&'static str> {
    // SAFETY: caller's contract; the function pointers are only read.
    let q = unsafe { &*qpx };
    let always = [
        ("wr_start", q.wr_start.is_some()),
        ("wr_complete", q.wr_complete.is_some()),
        ("wr_abort", q.wr_abort.is_some()),
        ("wr_set_sge", q.wr_set_sge.is_some()),
        ("wr_set_sge_list", q.wr_set_sge_list.is_some()),
        ("wr_set_inline_data", q.wr_set_inline_data.is_some()),
        (
            "wr_set_ud_addr",
            raw != sys::ibv_qp_type::IBV_QPT_UD || q.wr_set_ud_addr.is_some(),
        ),
    ];
    let per_op = [
        (bits::RDMA_WRITE, "wr_rdma_write", q.wr_rdma_write.is_some()),
        (
            bits::RDMA_WRITE_WITH_IMM,
            "wr_rdma_write_imm",
            q.wr_rdma_write_imm.is_some(),
        ),
        (bits::SEND, "wr_send", q.wr_send.is_some()),
        (bits::SEND_WITH_IMM, "wr_send_imm", q.wr_send_imm.is_some()),
        (bits::RDMA_READ, "wr_rdma_read", q.wr_rdma_read.is_some()),
        (
            bits::ATOMIC_CMP_AND_SWP,
            "wr_atomic_cmp_swp",
            q.wr_atomic_cmp_swp.is_some(),
        ),
        (
            bits::ATOMIC_FETCH_AND_ADD,
            "wr_atomic_fetch_add",
            q.wr_atomic_fetch_add.is_some(),
        ),
    ];
    always
        .iter()
        .find(|a| !a.1)
        .map(|a| a.0)
        .or_else(|| per_op.iter().find(|p| ops & p.0 != 0 && !p.2).map(|p| p.1))
}
