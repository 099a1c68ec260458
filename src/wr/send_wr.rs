//! A send work request: its opcode, data, destination and flags, built to fit its QP type.

use super::*;

#[derive(Clone, Copy)]
enum Op {
    Send,
    SendImm(u32),
    Write(RemoteAddr<Untyped>),
    WriteImm(RemoteAddr<Untyped>, u32),
    Read(RemoteAddr<Untyped>),
    CompareSwap(RemoteAddr<Untyped>, u64, u64),
    FetchAdd(RemoteAddr<Untyped>, u64),
}

#[derive(Clone, Copy)]
enum Data<'s> {
    /// `fits`: the length was proven within the type's cap (no check when posted).
    Sgl {
        list: &'s [Sge<'s, No>],
        fits: bool,
    },
    Inline(&'s [u8]),
}

impl<'s> Data<'s> {
    #[inline(always)]
    fn sgl<const CAP: usize, L: SgeList<CAP> + 's>(list: L) -> Self {
        Data::Sgl {
            list: Sge::erase_list(list.into_slice()),
            fits: L::FITS,
        }
    }
}

/// A UD send's destination: an address handle, the remote QP number and its Q_Key.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::AddressHandle;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
/// let dest = UdDest::new(&ah, 0x1234, 0x11); // the remote QP number and its Q_Key
/// let wr = SendWr::<Ud>::send_to_inline(1, b"hello", dest);
/// # let _ = wr;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct UdDest<'s> {
    pub(super) ah: *mut sys::ibv_ah,
    pub(super) remote_qpn: u32,
    pub(super) remote_qkey: u32,
    _m: PhantomData<&'s ()>,
}

impl<'s> UdDest<'s> {
    /// The QP `remote_qpn`, which accepts `remote_qkey`, reached through `ah`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let dest = UdDest::new(&ah, qp.qp_num(), 0x11);
    /// # let _ = dest;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(
        ah: &'s crate::qp::ah::AddressHandle<'_>,
        remote_qpn: u32,
        remote_qkey: u32,
    ) -> Self {
        UdDest {
            ah: ah.as_raw(),
            remote_qpn,
            remote_qkey,
            _m: PhantomData,
        }
    }
}

/// Where an atomic's old value lands: a `&AtomicResult`, 8 bytes by type
/// ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)). Sealed.
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// use typed_verbs::wr::AtomicResultOf;
/// fn lands_in<'s>(r: impl AtomicResultOf<'s>) {}
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(64)?, Access::LOCAL_WRITE)?;
/// lands_in(&mr.atomic_result(0).unwrap());
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "an atomic's old value lands in exactly 8 bytes, and `{Self}` is not an `&AtomicResult`: make one with `mr.atomic_result(offset)`",
    label = "not 8 bytes by type"
)]
pub trait AtomicResultOf<'s>: Sealed {
    #[doc(hidden)]
    fn into_result(self) -> &'s AtomicResult<'s>;
}
impl Sealed for &AtomicResult<'_> {}
impl<'s> AtomicResultOf<'s> for &'s AtomicResult<'s> {
    #[inline(always)]
    fn into_result(self) -> &'s AtomicResult<'s> {
        self
    }
}

/// A send work request for a QP of type `T` whose type promises `SGE` send SGEs, borrowing the
/// buffers it names until it is posted.
///
/// `SGE` is inferred from the QP it is posted on; a request built on its own for a QP with
/// another cap names it (`SendWr::<Rc, 4>::send(..)`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
/// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
/// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
/// let local = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// local.write(0, b"abcd")?;
/// let sge = [local.sge(0..4).unwrap()];
/// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
/// a.post_send(&SendWr::send(2, &sge).signaled())?;                                   // send
/// a.post_send(&SendWr::send_with_imm(3, &sge, 7).signaled())?;                      // needs a receive
/// b.post_recv(4, &[rx.sge(64..128).unwrap()])?;
/// a.post_send(&SendWr::rdma_write(5, &sge, rx.remote().at(256, 4).unwrap()).signaled())?;
/// a.post_send(&SendWr::rdma_read(6, &[local.sge(8..12).unwrap()], rx.remote().at(256, 4).unwrap()).signaled())?;
/// a.post_send(&SendWr::fetch_add(7, &local.atomic_result(16).unwrap(), rx.remote().atomic_at(512).unwrap(), 1).signaled())?;
/// a.post_send(&SendWr::send_inline(8, b"tiny").signaled())?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct SendWr<'s, T: QpType, const SGE: usize = 1> {
    wr_id: u64,
    op: Op,
    data: Data<'s>,
    flags: u32,
    ud: Option<UdDest<'s>>,
    _t: PhantomData<T>,
}

pub(super) const SIGNALED: u32 = 2;
pub(super) const SOLICITED: u32 = 4;
pub(super) const INLINE: u32 = 8;

impl<'s, T: QpType, const SGE: usize> SendWr<'s, T, SGE> {
    fn new(wr_id: u64, op: Op, data: Data<'s>) -> Self {
        SendWr {
            wr_id,
            op,
            data,
            flags: 0,
            ud: None,
            _t: PhantomData,
        }
    }

    /// `IBV_WR_SEND` of the bytes `sgl` names.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let sge = [rx.sge(1024..1088).unwrap()]; // any local SGE
    /// a.post_send(&SendWr::send(2, &sge))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send(wr_id: u64, sgl: impl SgeList<SGE> + 's) -> Self
    where
        T: FixedDest,
    {
        Self::new(wr_id, Op::Send, Data::sgl(sgl))
    }

    /// `IBV_WR_SEND` of `data` copied into the work request (`IBV_SEND_INLINE`): the buffer need
    /// not be registered and may be reused as soon as the post returns. At most the QP's
    /// `max_inline_data` bytes (checked when posted).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let mut msg = *b"short";
    /// a.post_send(&SendWr::send_inline(2, &msg))?;
    /// msg[0] = b'S'; // already copied: free to reuse
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_inline(wr_id: u64, data: &'s [u8]) -> Self
    where
        T: FixedDest,
    {
        Self::new(wr_id, Op::Send, Data::Inline(data)).with_flag(INLINE)
    }

    /// `IBV_WR_SEND_WITH_IMM`: a send carrying `imm` (host byte order; sent in network order).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    /// let sge = [rx.sge(1024..1032).unwrap()];
    /// a.post_send(&SendWr::send_with_imm(2, &sge, 0x1234))?; // b's completion carries 0x1234
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_with_imm(wr_id: u64, sgl: impl SgeList<SGE> + 's, imm: u32) -> Self
    where
        T: FixedDest + ImmCapable,
    {
        Self::new(wr_id, Op::SendImm(imm), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_WRITE` of `sgl` to `remote`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let sge = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_write(1, &sge, rx.remote().at(2048, 8).unwrap()).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_write<A: RemoteWriteAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        remote: RemoteAddr<A>,
    ) -> Self
    where
        T: RdmaWriteCapable,
    {
        Self::new(wr_id, Op::Write(remote.erase()), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_WRITE_WITH_IMM`: the write, and `imm` in a receive completion at the peer.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// b.post_recv(1, &[rx.sge(0..64).unwrap()])?; // consumed by the immediate data
    /// let sge = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_write_with_imm(2, &sge, rx.remote().at(2048, 8).unwrap(), 7))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_write_with_imm<A: RemoteWriteAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        remote: RemoteAddr<A>,
        imm: u32,
    ) -> Self
    where
        T: RdmaWriteCapable,
    {
        Self::new(wr_id, Op::WriteImm(remote.erase(), imm), Data::sgl(sgl))
    }

    /// `IBV_WR_RDMA_READ` of `remote` into `sgl`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let into = [rx.sge(0..8).unwrap()];
    /// a.post_send(&SendWr::rdma_read(1, &into, rx.remote().at(2048, 8).unwrap()).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rdma_read<A: RemoteReadAccess>(
        wr_id: u64,
        sgl: impl SgeList<SGE> + LocalWriteList + 's,
        remote: RemoteAddr<A>,
    ) -> Self
    where
        T: ReliableOnly,
    {
        Self::new(wr_id, Op::Read(remote.erase()), Data::sgl(sgl))
    }

    /// `IBV_WR_ATOMIC_CMP_AND_SWP` on the 8 bytes at `remote` (aligned by construction); the old
    /// value lands in `result`, 8 bytes by type ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let old = rx.atomic_result(0).unwrap(); // the old value lands here: 8 bytes by type
    /// a.post_send(&SendWr::compare_swap(1, &old, rx.remote().atomic_at(512).unwrap(), 0, 1).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn compare_swap(
        wr_id: u64,
        result: impl AtomicResultOf<'s>,
        remote: AtomicTarget,
        compare: u64,
        swap: u64,
    ) -> Self
    where
        T: ReliableOnly,
        &'s [Sge<'s>; 1]: SgeList<SGE>,
    {
        Self::atomic(
            wr_id,
            result,
            Op::CompareSwap(remote.addr().erase(), compare, swap),
        )
    }

    /// `IBV_WR_ATOMIC_FETCH_AND_ADD` on the 8 bytes at `remote` (aligned by construction); the
    /// old value lands in `result`, 8 bytes by type ([`Mr::atomic_result`](crate::mr::Mr::atomic_result)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    /// # let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    /// # let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?);
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, all)?;
    /// let old = rx.atomic_result(0).unwrap();
    /// a.post_send(&SendWr::fetch_add(1, &old, rx.remote().atomic_at(512).unwrap(), 1).signaled())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    ///
    /// The result is 8 bytes by type, not any SGE:
    ///
    /// ```compile_fail,E0277
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
    /// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
    /// let old = [rx.sge(0..16).unwrap()];
    /// let wr = SendWr::<Rc>::fetch_add(1, &old, rx.remote().atomic_at(512).unwrap(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn fetch_add(
        wr_id: u64,
        result: impl AtomicResultOf<'s>,
        remote: AtomicTarget,
        add: u64,
    ) -> Self
    where
        T: ReliableOnly,
        &'s [Sge<'s>; 1]: SgeList<SGE>,
    {
        Self::atomic(wr_id, result, Op::FetchAdd(remote.addr().erase(), add))
    }

    /// An atomic `op` whose old value lands in `result`.
    fn atomic(wr_id: u64, result: impl AtomicResultOf<'s>, op: Op) -> Self
    where
        &'s [Sge<'s>; 1]: SgeList<SGE>,
    {
        let result = result.into_result();
        Self::new(wr_id, op, Data::sgl(result.as_list()))
    }

    /// Asks for a completion of this request (`IBV_SEND_SIGNALED`); a QP created with
    /// `sq_sig_all` completes every request anyway.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// let wr = SendWr::<Rc>::send_inline(1, b"x").signaled(); // completes on the send CQ
    /// # let _ = wr;
    /// ```
    pub fn signaled(self) -> Self {
        self.with_flag(SIGNALED)
    }

    /// Sets `IBV_SEND_SOLICITED`: the peer's CQ raises an event even if armed for solicited
    /// completions only.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// let wr = SendWr::<Rc>::send_inline(1, b"wake up").solicited().signaled();
    /// # let _ = wr;
    /// ```
    pub fn solicited(self) -> Self {
        self.with_flag(SOLICITED)
    }

    fn with_flag(mut self, f: u32) -> Self {
        self.flags |= f;
        self
    }
}

impl<'s, const SGE: usize> SendWr<'s, Ud, SGE> {
    /// `IBV_WR_SEND` of `sgl` to `dest`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let sge = [mr.sge(0..64).unwrap()];
    /// qp.post_send(&SendWr::send_to(1, &sge, UdDest::new(&ah, qp.qp_num(), 0x11)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to(wr_id: u64, sgl: impl SgeList<SGE> + 's, dest: UdDest<'s>) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::Send, Data::sgl(sgl))
        }
    }

    /// `IBV_WR_SEND_WITH_IMM` of `sgl` to `dest`, carrying `imm`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// let sge = [mr.sge(0..64).unwrap()];
    /// qp.post_send(&SendWr::send_to_with_imm(1, &sge, UdDest::new(&ah, qp.qp_num(), 0x11), 5))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to_with_imm(
        wr_id: u64,
        sgl: impl SgeList<SGE> + 's,
        dest: UdDest<'s>,
        imm: u32,
    ) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::SendImm(imm), Data::sgl(sgl))
        }
    }

    /// `IBV_WR_SEND` of `data` inline to `dest`.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::AddressHandle;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(16).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
    /// let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) })?;
    /// qp.post_send(&SendWr::send_to_inline(1, b"hello", UdDest::new(&ah, qp.qp_num(), 0x11)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn send_to_inline(wr_id: u64, data: &'s [u8], dest: UdDest<'s>) -> Self {
        SendWr {
            ud: Some(dest),
            ..Self::new(wr_id, Op::Send, Data::Inline(data))
        }
        .with_flag(INLINE)
    }
}

/// The remote address of an RDMA write or read (`wr.rdma`).
#[inline(always)]
fn rdma(r: RemoteAddr<Untyped>) -> sys::rdma_t {
    sys::rdma_t {
        remote_addr: r.addr(),
        rkey: r.rkey(),
    }
}

impl<'s, T: QpType, const SGE: usize> SendWr<'s, T, SGE> {
    /// Checks what the QP's actual caps decide and fills `wr` (and `inline` for inline data,
    /// or as the valid, empty SGE array an empty list points at).
    ///
    /// `qp` is the live QP the request is posted on: a UD request's address handle must be of
    /// its PD (and so of its context), checked here before the provider sees it.
    #[inline(always)]
    pub(super) fn fill(
        &self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        use sys::ibv_wr_opcode::*;
        wr.wr_id = self.wr_id;
        wr.send_flags = self.flags;
        match self.data {
            Data::Sgl { list: sgl, fits } => {
                // A fixed-size list was proven within the type's cap, which the actual cap
                // meets (checked when the QP was created).
                if !fits && sgl.len() > caps.max_send_sge as usize {
                    return Err(Error::range(
                        Verb::PostSend,
                        "num_sge",
                        sgl.len() as u64,
                        0,
                        caps.max_send_sge.into(),
                    ));
                }
                // An empty list (legal: a zero-length message) still hands the provider a
                // pointer to a real SGE, not the dangling one of an empty slice.
                wr.sg_list = if sgl.is_empty() {
                    inline
                } else {
                    sgl.as_ptr() as *mut sys::ibv_sge
                };
                wr.num_sge = sgl.len() as i32;
            }
            Data::Inline(bytes) => {
                if bytes.len() > caps.max_inline_data as usize {
                    return Err(Error::range(
                        Verb::PostSend,
                        "inline length",
                        bytes.len() as u64,
                        0,
                        caps.max_inline_data.into(),
                    ));
                }
                *inline = sys::ibv_sge {
                    addr: bytes.as_ptr() as u64,
                    length: bytes.len() as u32,
                    lkey: 0,
                };
                wr.sg_list = inline;
                wr.num_sge = 1;
            }
        }
        // The target's alignment was proven when its AtomicTarget was made.
        let atomic = |wr: &mut sys::ibv_send_wr,
                      remote: RemoteAddr<Untyped>,
                      compare_add: u64,
                      swap: u64| {
            wr.wr.atomic = sys::atomic_t {
                remote_addr: remote.addr(),
                compare_add,
                swap,
                rkey: remote.rkey(),
            };
        };
        match self.op {
            Op::Send => wr.opcode = IBV_WR_SEND,
            Op::SendImm(imm) => {
                wr.opcode = IBV_WR_SEND_WITH_IMM;
                wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
            }
            Op::Write(r) => {
                wr.opcode = IBV_WR_RDMA_WRITE;
                wr.wr.rdma = rdma(r);
            }
            Op::WriteImm(r, imm) => {
                wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
                wr.wr.rdma = rdma(r);
                wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
            }
            Op::Read(r) => {
                wr.opcode = IBV_WR_RDMA_READ;
                wr.wr.rdma = rdma(r);
            }
            Op::CompareSwap(r, compare, swap) => {
                wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
                atomic(wr, r, compare, swap);
            }
            Op::FetchAdd(r, add) => {
                wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
                atomic(wr, r, add, 0);
            }
        }
        // Only UD requests carry a destination (`send_to*`); for the other types this is
        // decided at compile time and costs nothing.
        if let (sys::ibv_qp_type::IBV_QPT_UD, Some(d)) = (T::RAW, self.ud) {
            // ibv_post_send(3): `ah` is the "Address handle (AH) for the remote node address";
            // the provider reads it as its own type, and the AH must be of the QP's PD (rxe:
            // "PDs don't match for AH and QP"). A PD is of one context, so one comparison
            // covers both; the error says which.
            // SAFETY: the AH is live (borrowed by `d`) and so is the QP; their `pd` and
            // `context` are fixed at creation.
            let (ah_pd, ah_ctx, qp_pd, qp_ctx) =
                unsafe { ((*d.ah).pd, (*d.ah).context, (*qp).pd, (*qp).context) };
            if ah_pd != qp_pd {
                return Err(Error {
                    verb: Verb::PostSend,
                    kind: if ah_ctx != qp_ctx {
                        ErrorKind::WrongContext("ah")
                    } else {
                        ErrorKind::WrongPd("ah")
                    },
                });
            }
            wr.wr.ud = sys::ud_t {
                ah: d.ah,
                remote_qpn: d.remote_qpn,
                remote_qkey: d.remote_qkey,
            };
        }
        Ok(())
    }
}

pub(super) fn zeroed_send_wr() -> sys::ibv_send_wr {
    // SAFETY: plain C data; all-zero is a valid (empty) work request.
    unsafe { std::mem::zeroed() }
}

/// A work request that [`Qp::post_send`] takes on a QP of type `T` whose type promises `SGE`
/// send SGEs: `&SendWr<'_, T, SGE>` (and `&&SendWr<'_, T, SGE>`, so that `&wr` works where `wr`
/// is already a reference), and nothing else. A bound rather than that type in the
/// signature, so that a request built for another QP type is an error that says so (the
/// request's type is known before the bound is looked at, and its QP type is still inferred
/// from the QP when it is built in the call).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// # let pd = Pd::new(&ctx)?;
/// # let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
/// # let (cq, mut poller) = cq.split();
/// # let (a, b) = (Qp::<Rc>::builder(&pd, cq, cq).build()?, Qp::<Rc>::builder(&pd, cq, cq).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// # let tx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # b.post_recv(1, &[rx.sge(0..4096).unwrap()])?;
/// let sges = [tx.sge(0..5).unwrap()];
/// let wrs = [SendWr::send(1, &sges)];
/// for wr in &wrs {
///     a.post_send(&wr)?; // `wr` is a `&SendWr`: `&&SendWr` works too
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a work request for this QP, a `{T}` QP with a send SGE cap of {SGE} in its type: build the request for this QP type and SGE cap (`SendWr::<{T}, {SGE}>::..`)",
    label = "built for another QP type or SGE cap",
    note = "a `SendWr`'s QP type decides which operations it may carry (RDMA reads and atomics on RC, a destination on UD)"
)]
pub trait WorkRequestFor<T: QpType, const SGE: usize>:
    Copy + crate::sealed::SealedWorkRequest<T>
{
    /// Checks the request against the QP's actual caps and fills the C work request.
    ///
    /// # Safety
    /// `qp` is a live QP (a UD request's address handle is checked against its PD).
    #[doc(hidden)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()>;
}

impl<T: QpType, const SGE: usize> crate::sealed::SealedWorkRequest<T> for &SendWr<'_, T, SGE> {}
impl<T: QpType, const SGE: usize> WorkRequestFor<T, SGE> for &SendWr<'_, T, SGE> {
    #[inline(always)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        SendWr::fill(self, qp, caps, wr, inline)
    }
}

// `&wr` where `wr` is already a `&SendWr` (`for wr in &wrs { qp.post_send(&wr) }`), which
// compiled when `post_send` took a `&SendWr` and the compiler dereferenced the argument to it.
impl<T: QpType, const SGE: usize> crate::sealed::SealedWorkRequest<T> for &&SendWr<'_, T, SGE> {}
impl<T: QpType, const SGE: usize> WorkRequestFor<T, SGE> for &&SendWr<'_, T, SGE> {
    #[inline(always)]
    unsafe fn fill(
        self,
        qp: *mut sys::ibv_qp,
        caps: &crate::qp::QpCap,
        wr: &mut sys::ibv_send_wr,
        inline: &mut sys::ibv_sge,
    ) -> Result<()> {
        SendWr::fill(self, qp, caps, wr, inline)
    }
}
