//! Slots: one region's fixed-size pieces, each owned by the program or by the device.

use super::*;

/// A slot region: the registration, deregistered when the last slot drops it, then the PD it
/// keeps alive (fields drop in order).
struct Region<B: OwnedBuf, A: SlotAccess> {
    _mr: Mr<'static, B, A>,
    _pd: Keep,
}

/// What a slot points at: the SGE that names its whole range as the device addresses it (the
/// receive posts point the device at it, with no copy), its address in memory, and the region
/// itself (kept registered and allocated while any of its slots lives).
#[repr(C)]
struct SlotInner {
    /// `addr` plus [`SLOT_IOVA`], the slot's length and the region's lkey.
    sge: sys::ibv_sge,
    /// Not null: the compiler then knows the slices made from it are not either.
    addr: NonNull<u8>,
    /// The region (an `Mr` that no one can reach any more); dropping the last one deregisters
    /// it and frees its buffer.
    region: Arc<dyn Send + Sync>,
}

/// An owned part of a registered region, not posted: a `[u8]` the program reads and writes with
/// no copy. One pointer in size; the pointer is the `wr_id` of the work request it is posted
/// with. Made by [`Slot::register`]; see [the module docs](crate::slots) for why its slice is sound.
///
/// `'r` is the lifetime of what handed the slot out (`Slot::register` gives `'static` slots, a
/// [`SlotCq`] its own lifetime); it bounds nothing soundness needs: the slot's region keeps its
/// PD and context alive by itself.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
/// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
/// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
/// let mut msg = slots.pop().unwrap();
/// msg[..4].copy_from_slice(b"ping"); // a plain &mut [u8]: no copy, no unsafe
/// b.post_recv_slot(slots.pop().unwrap())?; // moves into b's receive queue
/// a.post_send_slot(msg, 4)?;               // moves into a's send queue
/// let (mut poller, mut back) = (cq.poller()?, Vec::new());
/// while back.len() < 2 {
///     poller.poll_batch(|mut batch| back.push(batch.take_slot().unwrap()))?;
/// }
/// assert!(back.iter().any(|s| &s[..4] == b"ping")); // both slots are the program's again
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// A posted slot cannot be touched:
///
/// ```compile_fail,E0382
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
/// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
/// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
/// let mut msg = slots.pop().unwrap();
/// a.post_send_slot(msg, 4)?;
/// msg[0] = 1; // moved into the queue
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Slot<'r> {
    inner: NonNull<SlotInner>,
    _m: PhantomData<(&'r (), Box<[u8]>)>,
}

// SAFETY: a slot owns its bytes like a `Box<[u8]>`; its region (an `Mr` over an `OwnedBuf`,
// which is `Send` and `Sync`) may be deregistered and freed from any thread.
unsafe impl Send for Slot<'_> {}
// SAFETY: `&Slot` gives `&[u8]` only.
unsafe impl Sync for Slot<'_> {}

/// Whether a device (by its `ibv_device_attr` vendor and part ids) checks an SGE's address
/// against the iova of the region its lkey names, as point 2 of the module docs needs: rxe
/// (`mr_check_range` against `mr->ibmr.iova`; vendor 0xffffff, part 0) and Mellanox/NVIDIA's
/// mlx4 and mlx5 (the memory key's start address is the iova; vendor 0x02c9). Not siw
/// (`siw_check_mem` against the registration's virtual address) nor rdmavt (`rvt_lkey_ok`
/// against `user_base`); other devices are refused until they are known.
pub(super) fn checks_local_iova(vendor_id: u32, vendor_part_id: u32) -> bool {
    matches!(
        (vendor_id, vendor_part_id),
        (0x00ff_ffff, 0) | (0x0000_02c9, _)
    )
}

/// The states in which a slot receive may be posted: INIT, RTR and RTS. Not ERR: a receive
/// posted to a QP in ERR is not completed by every device (rxe keeps it without a flush
/// completion), so its slot would never come back.
///
/// ```compile_fail,E0277
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
/// # let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?;
/// # let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
/// let qp = qp.to_error()?;
/// # let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?;
/// qp.post_recv_slot(slots.pop().unwrap())?; // in ERR: the slot could be lost
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a slot receive is posted in INIT, RTR or RTS, and this QP is in `{Self}`: in ERR a device may keep the receive without a completion (rxe does), and the slot would be lost; bring the QP up again (`to_reset`, then `to_init`), or, in generic code over the state `St`, add the bound `St: typed_verbs::slots::SlotRecvReady`",
    label = "no slot receive in this state"
)]
pub trait SlotRecvReady: RecvReady {}
impl SlotRecvReady for crate::qp::state::Init {}
impl SlotRecvReady for crate::qp::state::Rtr {}
impl SlotRecvReady for crate::qp::state::Rts {}

impl<'pd> Slot<'pd> {
    /// `ibv_reg_mr` of `buf` in `pd` with `access`, split into `buf.len() / slot_len` slots of
    /// `slot_len` bytes each (a remainder is registered but unused). The region stays
    /// registered until its last slot is dropped.
    ///
    /// Memory a peer may access is never handed out as a slice: `access` is
    /// [`Access::LOCAL_WRITE`](crate::mr::access::Access::LOCAL_WRITE), by type ([`SlotAccess`]): a remote
    /// right does not compile, and every slot may be received into.
    /// `slot_len` must be 1 to `min(buf.len(), u32::MAX)` (`OutOfRange`; `buf` is then
    /// dropped, nothing stays registered).
    ///
    /// The region keeps its PD, and the PD its context, alive until its last slot is dropped,
    /// wherever the slots go (a slot comes back from a CQ that may outlive any borrow): `pd` is
    /// shared, `&Arc<Pd<'static>>` (or a `&'static Pd<'static>`).
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `slot_len` outside `1..=min(buf.len(), u32::MAX)`, or
    ///   `length` for an empty buffer.
    /// - [`ErrorKind::SlotsUnsupported`] on a device not known to check local addresses against
    ///   a region's iova (siw, hfi1, qib, and any not yet known), before the call.
    /// - The device's errno from `ibv_reg_mr_iova2` ([`ErrorKind::Os`]); `ENOMEM` when the
    ///   slots cannot be allocated.
    ///
    /// `buf` is dropped on error and nothing stays registered.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slots = Slot::register(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE, 2048)?;
    /// assert_eq!(slots.len(), 32);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    ///
    /// Memory a peer may access does not become slots:
    ///
    /// ```compile_fail,E0277
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slots = Slot::register(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE, 1024)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn register<B: OwnedBuf + 'static, A: SlotAccess>(
        pd: impl Parent<'static, Target = Pd<'static>>,
        buf: B,
        access: A,
        slot_len: usize,
    ) -> Result<Vec<Slot<'pd>>> {
        let held = pd.into_held();
        let pd = held.get();
        // SAFETY: a live PD's context.
        let ctx = unsafe { (*pd.as_raw()).context };
        if !crate::backend::is_software(ctx) {
            // SAFETY: a live context.
            let attr = unsafe { crate::device::device_attr(ctx, Verb::RegMr) }?;
            if !checks_local_iova(attr.vendor_id, attr.vendor_part_id) {
                return Err(Error {
                    verb: Verb::RegMr,
                    kind: ErrorKind::SlotsUnsupported(attr.vendor_id),
                });
            }
        }
        // Addressed in the upper half (crate::mr::SLOT_IOVA): no plain region's address, stale
        // or live, lies in it (point 2 of the module docs).
        let mr = Mr::new_addressed(pd, buf, access, Addressing::Slot)?;
        let len = mr.len();
        let max = len.min(u32::MAX as usize);
        if slot_len == 0 || slot_len > max {
            return Err(Error::range(
                Verb::RegMr,
                "slot_len",
                slot_len as u64,
                1,
                max as u64,
            ));
        }
        let (base, lkey) = (mr.remote().addr() as *mut u8, mr.lkey());
        let n = len / slot_len;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(n)
            .map_err(|_| Error::os(Verb::RegMr, libc::ENOMEM))?;
        // SAFETY: only the lifetime changes (`Mr` holds no reference, only raw pointers): the
        // region's PD is `'static` or kept alive by `_pd` below, which the region drops after
        // the `Mr` (field order), and the region is reached only through its slots.
        let mr: Mr<'static, B, A> = unsafe {
            let mr = ManuallyDrop::new(mr);
            ptr::read((&*mr as *const Mr<'_, B, A>).cast::<Mr<'static, B, A>>())
        };
        let region: Arc<dyn Send + Sync> = Arc::new(Region {
            _mr: mr,
            _pd: held.into_keep(),
        });
        for i in 0..n {
            // SAFETY: `i * slot_len + slot_len <= len`: inside the registered buffer, whose
            // address is not null (a live allocation).
            let addr = unsafe { NonNull::new_unchecked(base.add(i * slot_len)) };
            let inner = Box::new(SlotInner {
                sge: sys::ibv_sge {
                    // Where the device addresses the region: in the upper half.
                    addr: addr.as_ptr() as u64 | SLOT_IOVA,
                    length: slot_len as u32,
                    lkey,
                },
                addr,
                region: region.clone(),
            });
            slots.push(Slot {
                // SAFETY: a Box is never null.
                inner: unsafe { NonNull::new_unchecked(Box::into_raw(inner)) },
                _m: PhantomData,
            });
        }
        Ok(slots)
    }
}

impl<'r> Slot<'r> {
    #[inline(always)]
    fn inner(&self) -> &SlotInner {
        // SAFETY: the slot owns its live SlotInner.
        unsafe { self.inner.as_ref() }
    }

    /// The slot's length in bytes.
    #[inline(always)]
    #[allow(clippy::len_without_is_empty)] // never empty
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slots = Slot::register(&pd, PageBuf::new(8192)?, Access::LOCAL_WRITE, 2048)?;
    /// assert!(slots.iter().all(|s| s.len() == 2048));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.inner().sge.length as usize
    }

    /// The lkey of the slot's region. Knowing it opens nothing: a work request that names it
    /// without being a slot post of this region names an address outside the region as the
    /// device addresses it (the region's address plus 2^63), and the device refuses it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slots = Slot::register(&pd, PageBuf::new(8192)?, Access::LOCAL_WRITE, 4096)?;
    /// assert_eq!(slots[0].lkey(), slots[1].lkey()); // one region
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn lkey(&self) -> u32 {
        self.inner().sge.lkey
    }

    /// The work request's `wr_id`: the slot, now owned by the queue it is posted to.
    #[inline(always)]
    fn into_token(self) -> u64 {
        ManuallyDrop::new(self).inner.as_ptr() as u64
    }

    /// The slot a completion's `wr_id` carries.
    ///
    /// # Safety
    /// `token` came from `into_token` and is converted once (the queue no longer has it).
    #[inline(always)]
    pub(super) unsafe fn from_token(token: u64) -> Slot<'r> {
        Slot {
            // SAFETY: the caller's contract: a Box pointer, not null.
            inner: unsafe { NonNull::new_unchecked(token as *mut SlotInner) },
            _m: PhantomData,
        }
    }

    /// The SGE that names the slot's first `len` bytes (at most its length).
    #[inline(always)]
    pub(super) fn sge(&self, len: u32) -> sys::ibv_sge {
        sys::ibv_sge {
            length: len,
            ..self.inner().sge
        }
    }

    /// The SGE that names the whole slot, where the slot keeps it: a receive points the device
    /// at it (providers read a work request's SGEs during the post call only).
    #[inline(always)]
    pub(super) fn whole_sge(&self) -> *mut sys::ibv_sge {
        // SAFETY: the slot owns its live SlotInner (a Box pointer, writable): no reference is
        // made, so the pointer keeps the Box's permissions.
        unsafe { &raw mut (*self.inner.as_ptr()).sge }
    }
}

impl Deref for Slot<'_> {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        let i = self.inner();
        // SAFETY: the slot's range of a region that stays allocated while the slot lives;
        // initialised (owned buffers are); nobody else writes it while the slot is not posted
        // (module docs), and it is not posted while a `Slot` exists.
        unsafe { std::slice::from_raw_parts(i.addr.as_ptr(), i.sge.length as usize) }
    }
}

impl DerefMut for Slot<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        let i = self.inner();
        // SAFETY: as in `deref`; nobody else reads it either (no work request names it), and
        // the `&mut` borrows the one owner.
        unsafe { std::slice::from_raw_parts_mut(i.addr.as_ptr(), i.sge.length as usize) }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        // SAFETY: the Box the slot owns, freed once; the last slot of a region drops the
        // region (ibv_dereg_mr, then its buffer).
        drop(unsafe { Box::from_raw(self.inner.as_ptr()) });
    }
}

impl std::fmt::Debug for Slot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("addr", &self.inner().addr)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// A slot given back by a receive's completion, with the completion's byte count: it
/// dereferences to the received bytes, `&slot[..byte_len]`, with no copy.
///
/// For a receive the count is what the device placed in the slot (for UD, the 40-byte GRH
/// first). A receive consumed by an RDMA write with immediate reports the write's length,
/// whose bytes went to the written region, not to the slot: check the opcode. The count is
/// clamped to the slot's length.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
/// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
/// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
/// b.post_recv_slot(slots.pop().unwrap())?;
/// let mut msg = slots.pop().unwrap();
/// msg[..3].copy_from_slice(b"abc");
/// a.post_send_slot(msg, 3)?;
/// let mut poller = cq.poller()?;
/// let mut got = None;
/// while got.is_none() {
///     poller.poll_batch(|mut batch| {
///         let c = batch.completion().result().ok().map(|c| (c.opcode(), c.byte_len()));
///         let slot = batch.take_slot().unwrap();
///         if let Some((WcOpcode::RECV, n)) = c {
///             let r = Received::new(slot, n);
///             got = Some(r.to_vec()); // `r` derefs to the received bytes
///         }
///     })?;
/// }
/// assert_eq!(got.as_deref(), Some(&b"abc"[..]));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub struct Received<'r> {
    slot: Slot<'r>,
    byte_len: usize,
}

impl<'r> Received<'r> {
    /// The first `byte_len` bytes of `slot` (at most all of it).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let mut slot = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?.pop().unwrap();
    /// slot[..3].copy_from_slice(b"abc");
    /// let r = Received::new(slot, 3);
    /// assert_eq!(&*r, b"abc");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn new(slot: Slot<'r>, byte_len: u32) -> Self {
        let byte_len = (byte_len as usize).min(slot.len());
        Received { slot, byte_len }
    }

    /// How many bytes were received.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slot = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?.pop().unwrap();
    /// assert_eq!(Received::new(slot, 5000).byte_len(), 1024); // clamped to the slot
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn byte_len(&self) -> usize {
        self.byte_len
    }

    /// The whole slot back, to write and post again.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let slot = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?.pop().unwrap();
    /// let back = Received::new(slot, 10).into_slot();
    /// assert_eq!(back.len(), 1024); // the whole slot, to post again
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn into_slot(self) -> Slot<'r> {
        self.slot
    }
}

impl Deref for Received<'_> {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        &self.slot[..self.byte_len]
    }
}

/// A refused slot post: why, and the slot back when the provider reported that it did not take
/// the request (its `bad_wr` is the request). `None` when it failed without saying so (the
/// software device and rxe fail a send doorbell below RTS that way, keeping the request): the
/// slot then stays with the queue and comes back with the request's completion, if it has one.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
/// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(4).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
/// # let mut slots = Slot::register(&pd, PageBuf::new(4 << 12)?, Access::LOCAL_WRITE, 4096)?;
/// let slot = slots.pop().unwrap();
/// let too_long = slot.len() + 1;
/// let err = a.post_send_slot(slot, too_long).unwrap_err(); // refused before the call
/// let slot = err.slot.expect("given back");
/// # drop(slot);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub struct SlotPostError<'r> {
    /// The slot, not posted.
    pub slot: Option<Slot<'r>>,
    /// Why.
    pub error: Error,
}

impl std::fmt::Display for SlotPostError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for SlotPostError<'_> {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

impl From<SlotPostError<'_>> for Error {
    fn from(e: SlotPostError<'_>) -> Error {
        e.error
    }
}

/// Posts `slot` with the request `wr` (whose `wr_id` is set here) through `post`; the slot back
/// in the error if the provider did not take it.
///
/// A slot of another context's region may be posted: its region keeps its own PD and context
/// alive wherever the slot goes, and the device refuses the request (a key of another PD, or
/// none it knows, or an address outside the region its key names: each region's memory is its
/// own), so it fails with a completion error that gives the slot back.
#[inline(always)]
pub(super) fn post_slot<'r, W>(
    slot: Slot<'r>,
    verb: Verb,
    wr: &mut W,
    wr_id: impl FnOnce(&mut W) -> &mut u64,
    post: impl FnOnce(*mut W, *mut *mut W) -> i32,
) -> Result<(), SlotPostError<'r>> {
    let token = slot.into_token();
    *wr_id(wr) = token;
    let mut bad: *mut W = ptr::null_mut();
    match post(wr, &mut bad) {
        0 => Ok(()),
        e => {
            let error = Error::os(verb, e.abs());
            // "bad_wr: the first work request that failed": this one, so it was not posted.
            let slot = ptr::eq(bad, wr).then(|| {
                // SAFETY: the token made above, which the provider did not take.
                unsafe { Slot::from_token(token) }
            });
            Err(SlotPostError { slot, error })
        }
    }
}

/// Posts `slot` as one receive request of its whole buffer through `post` (`ibv_post_recv` or
/// `ibv_post_srq_recv`), as [`post_slot`].
#[inline(always)]
pub(super) fn post_slot_recv<'r>(
    slot: Slot<'r>,
    verb: Verb,
    post: impl FnOnce(*mut sys::ibv_recv_wr, *mut *mut sys::ibv_recv_wr) -> i32,
) -> Result<(), SlotPostError<'r>> {
    let mut wr = sys::ibv_recv_wr {
        wr_id: 0,
        next: ptr::null_mut(),
        sg_list: slot.whole_sge(),
        num_sge: 1,
    };
    post_slot(slot, verb, &mut wr, |wr| &mut wr.wr_id, post)
}
