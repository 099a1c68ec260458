//! Zero-copy buffers: registered memory split into owned slots that move into a queue when
//! posted and come back with their completion.
//!
//! A [`Slot`] is a part of a registered region that the program owns outright: it
//! dereferences to `[u8]` (and `&mut [u8]`) with no copy and no `unsafe`. Posting moves it into
//! the queue ([`Qp::post_recv_slot`], [`SlotSrq::post_recv_slot`], [`Qp::post_send_slot`],
//! [`Qp::post_write_slot`]); the work request's `wr_id` is the slot itself (a pointer, as a C
//! program would use); its completion on a [`SlotCq`] hands the slot back
//! ([`SlotBatch::take_slot`], or the `slot` field of a
//! [`completion_record!`](crate::completion_record)), with the completion's byte count
//! ([`Received`]). A failed completion (a flush included) gives it back too.
//!
//! ```
//! # use typed_verbs::*;
//! # use typed_verbs::slots::*;
//! let ctx = std::sync::Arc::new(Context::open("sw0")?);
//! let pd = std::sync::Arc::new(Pd::new(&ctx)?);
//! let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;
//! assert_eq!(slots.len(), 4);
//! let mut slot = slots.pop().unwrap();
//! slot[..5].copy_from_slice(b"hello"); // owned, not posted: a plain `&mut [u8]`
//! assert_eq!(&slot[..5], b"hello");
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! # Why a slot's slice is sound
//!
//! A `&[u8]` promises the compiler that nothing writes the bytes while it lives, a `&mut [u8]`
//! that nothing else reads or writes them. For registered memory the other party is the device
//! (and the [software device](crate::software), whose copies are another thread's), so both
//! promises hold only if no work request and no peer can access the range meanwhile:
//!
//! 1. **No peer.** A slot region is registered by [`Slot::register`], whose rights are
//!    [`Access::LOCAL_WRITE`](crate::mr::access::Access::LOCAL_WRITE) by type ([`SlotAccess`]): a remote
//!    right does not compile, no
//!    rkey opens the region to a peer, and the device checks a region's access on every remote
//!    request.
//! 2. **No other local work request.** The region is never an [`Mr`] the program holds: no
//!    [`Mr::read`]/[`Mr::write`], no [`Sge`](crate::mr::Sge) of it. The only work requests that name
//!    it are the slot posts, each naming exactly its own slot's range, and the slots of a region
//!    are disjoint. Any other work request — a plain one, posted now or long ago, whose region is
//!    gone and whose key the device has since handed to this region — names an address of a
//!    plain region, and plain regions are addressed by their virtual addresses, below 2^63. A
//!    slot region is registered with `ibv_reg_mr_iova2` at its address plus 2^63
//!    (`crate::mr::SLOT_IOVA`), so such an address never lies inside it, and the device, which
//!    checks every address against the range of the region its key names, refuses the request.
//!    This rests on no key being unique: keys repeat across devices and contexts, and counters
//!    wrap. Nothing is recorded per registration. It does rest on the device checking local
//!    addresses against the iova: the software device, rxe, mlx4 and mlx5 do; siw and rdmavt
//!    (hfi1, qib) check the virtual address, so [`Slot::register`] refuses every device not
//!    known to ([`ErrorKind::SlotsUnsupported`]).
//! 3. **Ownership.** A slot not posted is owned by exactly one `Slot`; posting moves it into the
//!    queue (its `Box` becomes the `wr_id`), so the program cannot touch it while the device may.
//!    It comes back only by converting a completion's `wr_id` on a [`SlotCq`], and that is
//!    sound because of what reaches a slot CQ and how often it is converted:
//!    - every work request that completes on a slot CQ carries a slot: a QP may use a slot CQ as
//!      its receive CQ only in slot mode ([`SlotRq`], or [`UsesSlotSrq`] whose SRQ takes slot
//!      receives only) and as its send CQ only with [`SlotSends`], whose sends are all
//!      signaled slot sends; `Qp::builder` and `software::inject` take no `SlotCq` (it is not
//!      an [`AnyCq`]), and the plain `post_recv`/`post_send` do not exist on
//!      slot-mode queues. The raw API's contract excludes other `wr_id`s on slot queues.
//!    - a slot's region keeps its PD, and the PD its context, alive until its last slot is
//!      dropped ([`Slot::register`] takes a shared PD), so a slot may outlive any queue, CQ or
//!      borrow it passed through, and come back from a queue of any context.
//!    - each completion's `wr_id` is converted exactly once: by the crate, when a
//!      [`SlotBatch`] enters the completion (`ibv_start_poll`, then each `ibv_next_poll`),
//!      into an owned `Slot` that the batch holds until the program takes it or moves on. The
//!      device completes each work request once, with its `wr_id` valid for every status.
//! 4. **Ordering.** The completion orders the device's accesses before the program's: the
//!    provider publishes a completion after the data (on the software device, with release and
//!    acquire on its ring), and the program reads the slot only after polling it.
//!
//! A posted slot that never completes is leaked, never freed: a QP destroyed or moved to RESET
//! with slots posted (no completion returns them; their memory stays allocated and
//! registered), a receive posted to a QP in ERR (rxe and the software device keep it without a
//! completion; a QP typed [`ErrorState`](crate::ErrorState) takes no slot receive,
//! [`SlotRecvReady`], but one the device moved to ERR after an error completion still says
//! RTS), a completion lost to a CQ overrun, a CQ destroyed with completions in it. To get
//! the slots back, move the QP to ERR and poll the flush completions before destroying it.
//! Leaking is safe: the region, kept alive by the leaked slots, stays registered.
//!
//! A region's memory is given back (`ibv_dereg_mr`, then the buffer is freed) when its last slot
//! is dropped.

use crate::cq::ex::{Batch, Completion, CqEx, Poller, WcFlags};
use crate::cq::{kind, AnyCq, CqBuilder, JoinThreading, Shared, Threading};
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::{ctx_op_call, sys};
use crate::mr::access::{RemoteWriteAccess, SlotAccess};
use crate::mr::{Addressing, Mr, OwnedBuf, RemoteAddr, Untyped, SLOT_IOVA};
use crate::object::parent::{Keep, Parent};
use crate::pd::Pd;
use crate::qp::state::QpState;
use crate::qp::FixedDest;
use crate::qp::{OwnsRecvQueue, Qp, QpBuilder, QpCap, QpType, RecvSide, SrqCapable};
use crate::sealed::Sealed;
use crate::srq::{Srq, SrqAttr, SrqBuilder};
use crate::wr::{RdmaWriteCapable, RecvReady, SendReady};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Slots

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
/// with. Made by [`Slot::register`]; see [the module docs](self) for why its slice is sound.
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
fn checks_local_iova(vendor_id: u32, vendor_part_id: u32) -> bool {
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
    unsafe fn from_token(token: u64) -> Slot<'r> {
        Slot {
            // SAFETY: the caller's contract: a Box pointer, not null.
            inner: unsafe { NonNull::new_unchecked(token as *mut SlotInner) },
            _m: PhantomData,
        }
    }

    /// The SGE that names the slot's first `len` bytes (at most its length).
    #[inline(always)]
    fn sge(&self, len: u32) -> sys::ibv_sge {
        sys::ibv_sge {
            length: len,
            ..self.inner().sge
        }
    }

    /// The SGE that names the whole slot, where the slot keeps it: a receive points the device
    /// at it (providers read a work request's SGEs during the post call only).
    #[inline(always)]
    fn whole_sge(&self) -> *mut sys::ibv_sge {
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
fn post_slot<'r, W>(
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

// ---------------------------------------------------------------------------------------------
// Slot CQs

/// An extended CQ whose every completion carries a slot: the receive CQ of slot-mode QPs
/// ([`SlotRq`], [`UsesSlotSrq`]) and the send CQ of QPs with [`SlotSends`]. Built with
/// `CqEx::builder(&ctx)...slots().build()`.
///
/// It is not an [`AnyCq`]: `Qp::builder` and `software::inject` do not take it,
/// so no completion with a `wr_id` the program chose can reach it.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// let ctx = Arc::new(Context::open("sw0")?);
/// let pd = Arc::new(Pd::new(&ctx)?);
/// let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(64).slots().build()?;
/// let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_recv_wr(16).build()?; // slot sends and receives
/// # drop(qp);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[repr(transparent)]
pub struct SlotCq<'a, F: WcFlags, T: Threading = Shared, C = ()> {
    cq: CqEx<'a, F, T, C>,
}

/// Builds a [`SlotCq`]: made by `.slots()` on an extended CQ's builder.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct SlotCqBuilder<'a, F: WcFlags, T: Threading, C> {
    inner: CqBuilder<'a, kind::Extended<F, T>, C>,
}

impl<'a, F: WcFlags, T: Threading, C> CqBuilder<'a, kind::Extended<F, T>, C> {
    /// Makes the CQ a [`SlotCq`]: one whose completions hand back slots. Set the other
    /// attributes (`cqe`, `channel`, `context`, ...) first.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(64).slots().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slots(self) -> SlotCqBuilder<'a, F, T, C> {
        SlotCqBuilder { inner: self }
    }
}

impl<'a, F: WcFlags, T: Threading, C> SlotCqBuilder<'a, F, T, C> {
    /// `ibv_create_cq_ex`, as for a plain extended CQ.
    ///
    /// # Errors
    /// As [`CqBuilder::build`](crate::CqBuilder) of an extended CQ: `OutOfRange` for `cqe` or
    /// `comp_vector`, `WrongContext`, the device's errno from `ibv_create_cq_ex`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// assert!(cq.cqe() >= 16);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<SlotCq<'a, F, T, C>>
    where
        C: crate::cq::CqContext<T>,
    {
        self.inner.build().map(|cq| SlotCq { cq })
    }
}

impl<'a, F: WcFlags, T: Threading, C> SlotCq<'a, F, T, C> {
    /// The actual number of entries.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(100).slots().build()?;
    /// assert!(cq.cqe() >= 100);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn cqe(&self) -> u32 {
        self.cq.cqe()
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).context("rx").slots().build()?;
    /// assert_eq!(*cq.user_context(), "rx");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        self.cq.user_context()
    }

    /// `ibv_req_notify_cq`, as [`CqEx::req_notify`].
    ///
    /// # Errors
    /// The provider's errno from `ibv_req_notify_cq` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let channel = typed_verbs::CompChannel::new(&ctx)?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).channel(&channel).slots().build()?;
    /// cq.req_notify(false)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        self.cq.req_notify(solicited_only)
    }

    /// Opens a polling batch, as [`CqEx::poll_batch`] (through `&self`: refused while the
    /// CQ's [`SlotPoller`] lives or another thread has a batch open on it), whose positions
    /// hand back their slots.
    ///
    /// # Errors
    /// As [`CqEx::poll_batch`]: [`ErrorKind::BatchOpen`] when this thread has a batch open,
    /// [`ErrorKind::PollerTaken`] while another thread polls the CQ, the provider's errno from
    /// `ibv_start_poll`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// assert!(cq.poll_batch(|mut batch| batch.take_slot())?.is_none()); // empty
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(&self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a slot CQ (every completion carries a slot token); the batch has just
        // started, and it is the only one open on the CQ (the gate keeps others out until it
        // ends), so no other batch converts this completion's token.
        self.cq
            .poll_batch(|batch| f(unsafe { SlotBatch::enter(batch) }))
    }

    /// The CQ's one [`SlotPoller`] through a shared reference, as [`CqEx::poller`].
    ///
    /// # Errors
    /// [`ErrorKind::PollerTaken`] while another poller of this CQ lives.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// let mut poller = cq.poller()?;
    /// assert!(cq.poller().is_err());
    /// poller.poll_batch(|_| ())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn poller(&self) -> Result<SlotPoller<'_, 'a, F, T>> {
        Ok(SlotPoller {
            poller: self.cq.poller()?,
            _m: PhantomData,
        })
    }

    /// Splits the CQ into the shared half, for QP builders, and the one [`SlotPoller`], as
    /// [`CqEx::split`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// let (shared, mut poller) = cq.split();
    /// assert!(poller.poll_batch(|_| ())?.is_none());
    /// # let _ = shared;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn split(&mut self) -> (&Self, SlotPoller<'_, 'a, F, T>) {
        let (shared, poller) = self.cq.split();
        // SAFETY: `SlotCq` is `repr(transparent)` over the `CqEx`.
        let shared = unsafe { &*(shared as *const CqEx<'a, F, T, C> as *const Self) };
        (
            shared,
            SlotPoller {
                poller,
                _m: PhantomData,
            },
        )
    }

    /// The C CQ. Polling it other than through this handle takes completions whose `wr_id`s
    /// are slots owned by the queue: an `unsafe` use whose caller must not convert or drop
    /// them.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// assert!(!cq.as_raw().is_null()); // only to read: polling it raw breaks the slots' contract
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_cq_ex {
        self.cq.as_raw()
    }

    /// `ibv_destroy_cq`. Slots in completions not polled are leaked. If it fails, the error is
    /// returned and the CQ dropped (see [`CqEx::destroy`]).
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_cq` ([`ErrorKind::Os`]): `EBUSY` while a QP still uses
    /// the CQ (only a leaked one can).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_cq`; on failure the CQ comes back inside the error.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the CQ.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        self.cq.try_destroy().map_err(|e| DestroyError {
            object: SlotCq { cq: e.object },
            error: e.error,
        })
    }

    fn raw_cq(&self) -> *mut sys::ibv_cq {
        self.cq.as_raw_cq()
    }
}

impl<F: WcFlags, T: Threading, C> std::fmt::Debug for SlotCq<'_, F, T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SlotCq").field(&self.cq.as_raw()).finish()
    }
}

/// The right to poll a [`SlotCq`] whose shared half QPs hold; made by [`SlotCq::split`].
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// let (cq, mut poller) = cq.split(); // `cq` for the QPs, `poller` for the polling thread
/// poller.poll_batch(|mut b| drop(b.take_slot()))?;
/// # let _ = cq;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotPoller<'p, 'a, F: WcFlags, T: Threading = Shared> {
    poller: Poller<'p, F, T>,
    _m: PhantomData<&'a ()>,
}

impl<'a, F: WcFlags, T: Threading> SlotPoller<'_, 'a, F, T> {
    /// Opens a batch, as [`SlotCq::poll_batch`].
    ///
    /// # Errors
    /// As [`SlotCq::poll_batch`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// let mut poller = cq.poller()?;
    /// assert!(poller.poll_batch(|_| ())?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn poll_batch<R>(
        &mut self,
        f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R,
    ) -> Result<Option<R>> {
        // SAFETY: the poller of a slot CQ (the one batch open on it); the batch has just
        // started.
        self.poller
            .poll_batch(|batch| f(unsafe { SlotBatch::enter(batch) }))
    }
}

/// What opens a batch on a slot CQ: a [`SlotCq`] held exclusively, or its [`SlotPoller`].
/// `completion_record!` records with a `slot` field poll these only.
///
/// ```
/// use typed_verbs::slots::SlotPollable;
/// fn empty<'s, P: SlotPollable<'s>>(p: &mut P) -> typed_verbs::Result<bool> {
///     Ok(p.poll_slots(|_| ())?.is_none())
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
/// assert!(empty(&mut cq)?);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a slot CQ, so its completions carry no slots: the `slot` field needs a CQ built with `.slots()`",
    label = "a plain CQ's wr_id is the program's number, not a slot",
    note = "build it with `CqEx::<F>::builder(&ctx).slots().build()` and give it to `Qp::slot_builder`, or remove `slot` from the record"
)]
pub trait SlotPollable<'s>: Sealed {
    /// The CQ's `wc_flags`.
    type Flags: WcFlags;
    /// Opens a batch ([`SlotCq::poll_batch`]).
    ///
    /// # Errors
    /// As [`SlotCq::poll_batch`].
    ///
    /// ```
    /// use typed_verbs::slots::SlotPollable;
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// assert!(cq.poll_slots(|mut b| b.take_slot())?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn poll_slots<R>(
        &mut self,
        f: impl FnOnce(SlotBatch<'_, 's, Self::Flags>) -> R,
    ) -> Result<Option<R>>;
}

impl<F: WcFlags, T: Threading, C> Sealed for SlotCq<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::event::EventCq for SlotCq<'_, F, T, C> {
    #[inline]
    fn event_cq(&self) -> *mut sys::ibv_cq {
        self.cq.as_raw_cq()
    }
}
impl<'a, F: WcFlags, T: Threading, C> SlotPollable<'a> for SlotCq<'a, F, T, C> {
    type Flags = F;
    #[inline(always)]
    fn poll_slots<R>(&mut self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        // SAFETY: a slot CQ (every completion carries a slot token); the batch has just
        // started, and it is the only one open on the CQ (`&mut self`), so no other batch
        // converts this completion's token.
        crate::cq::ex::Pollable::poll_batch(&mut self.cq, |batch| {
            f(unsafe { SlotBatch::enter(batch) })
        })
    }
}

impl<F: WcFlags, T: Threading> Sealed for SlotPoller<'_, '_, F, T> {}
impl<'a, F: WcFlags, T: Threading> SlotPollable<'a> for SlotPoller<'_, 'a, F, T> {
    type Flags = F;
    #[inline(always)]
    fn poll_slots<R>(&mut self, f: impl FnOnce(SlotBatch<'_, 'a, F>) -> R) -> Result<Option<R>> {
        self.poll_batch(f)
    }
}

/// An open polling batch of a [`SlotCq`]: a [`Batch`] whose current completion's slot the
/// crate has turned back into an owned [`Slot`], once, on entering it. Take it with
/// [`take_slot`](Self::take_slot); a slot not taken is dropped when the batch moves on or ends.
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
/// a.post_send_slot(slots.pop().unwrap(), 16)?;
/// let mut poller = cq.poller()?;
/// let mut back = Vec::new();
/// while back.len() < 2 {
///     poller.poll_batch(|batch| -> typed_verbs::Result<()> {
///         let mut next = Some(batch);
///         while let Some(mut batch) = next {
///             back.push(batch.take_slot().expect("every completion carries its slot"));
///             next = batch.advance()?;
///         }
///         Ok(())
///     })?.transpose()?;
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "dropping the batch ends it (ibv_end_poll) and drops its slot"]
pub struct SlotBatch<'b, 's, F: WcFlags> {
    batch: Batch<'b, F>,
    slot: Option<Slot<'s>>,
}

impl<'b, 's, F: WcFlags> SlotBatch<'b, 's, F> {
    /// # Safety
    /// `batch` is of a slot CQ and has just entered its current completion (`ibv_start_poll`
    /// or `ibv_next_poll` succeeded), whose `wr_id` no one converted yet.
    #[inline(always)]
    unsafe fn enter(batch: Batch<'b, F>) -> Self {
        let token = batch.completion().wr_id();
        // SAFETY: every completion on a slot CQ carries a slot token (module docs, point 3),
        // converted here once: the batch enters each completion once.
        let slot = Some(unsafe { Slot::from_token(token) });
        SlotBatch { batch, slot }
    }

    /// The completion the batch points at (its `wr_id` is the slot's token: use
    /// [`take_slot`](Self::take_slot)).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// cq.poll_batch(|batch| println!("{:?}", batch.completion().status()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn completion(&self) -> Completion<'_, F> {
        self.batch.completion()
    }

    /// The current completion's slot, the first time it is asked for (then `None`). Every
    /// completion carries one, whatever its status (a flushed request's too).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).slots().build()?;
    /// let slot = cq.poll_batch(|mut batch| batch.take_slot())?.flatten(); // None: nothing completed
    /// assert!(slot.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn take_slot(&mut self) -> Option<Slot<'s>> {
        self.slot.take()
    }

    /// `ibv_next_poll`, as [`Batch::advance`]; the current slot, if not taken, is dropped.
    ///
    /// # Errors
    /// As [`Batch::advance`]: the provider's errno from `ibv_next_poll` other than `ENOENT`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// cq.poll_batch(|batch| batch.advance().map(|next| next.is_none()))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn advance(self) -> Result<Option<Self>> {
        let SlotBatch { batch, slot } = self;
        drop(slot);
        // SAFETY: the batch of a slot CQ, just moved to its next completion.
        Ok(batch
            .advance()?
            .map(|next| unsafe { SlotBatch::enter(next) }))
    }
}

// ---------------------------------------------------------------------------------------------
// Slot-mode queues

/// How a QP's send queue completes: [`PlainSends`] (its send CQ is a plain CQ, and it takes
/// `post_send`) or [`SlotSends`] (its send CQ is a [`SlotCq`], and every send is a signaled
/// slot send).
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::slots::{SlotRq, SlotSends, PlainSends};
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
/// let plain_cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// let sends_slots: Qp<'_, Rc, SlotRq<SlotSends>> = Qp::<Rc>::slot_builder(&pd, &slot_cq, &slot_cq).build()?;
/// let sends_plain: Qp<'_, Rc, SlotRq<PlainSends>> = Qp::<Rc>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait SendMode: Sealed + 'static {}
/// The send queue takes plain work requests ([`Qp::post_send`]) and completes on a plain CQ.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let qp: Qp<'_, Rc, SlotRq<typed_verbs::slots::PlainSends>> = Qp::<Rc>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum PlainSends {}
/// The send queue takes slot sends only ([`Qp::post_send_slot`], [`Qp::post_write_slot`]),
/// each signaled, and completes on a [`SlotCq`].
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?;
/// let qp: Qp<'_, Rc, SlotRq<typed_verbs::slots::SlotSends>> = Qp::<Rc>::slot_builder(&pd, &slot_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum SlotSends {}
impl Sealed for PlainSends {}
impl Sealed for SlotSends {}
impl SendMode for PlainSends {}
impl SendMode for SlotSends {}

/// The receive side of a QP in slot mode: its own receive queue takes slots only
/// ([`Qp::post_recv_slot`]) and completes on a [`SlotCq`]; `X` is its send mode.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let qp: Qp<'_, Ud, SlotRq> = Qp::<Ud>::slot_builder(&pd, &plain_cq, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotRq<X: SendMode = PlainSends>(PhantomData<X>);
/// The receive side of a QP whose receives come from a [`SlotSrq`]; `X` is its send mode.
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// # let (slot_cq, plain_cq) = (CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?, Cq::builder(&ctx).cqe(8).build()?);
/// let srq = Srq::builder(&pd).max_wr(16).slots().build()?;
/// let qp: Qp<'_, Rc, UsesSlotSrq> = Qp::<Rc>::slot_builder_with_srq(&pd, &plain_cq, &slot_cq, &srq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct UsesSlotSrq<X: SendMode = PlainSends>(PhantomData<X>);

impl<X: SendMode> Sealed for SlotRq<X> {}
impl<X: SendMode> Sealed for UsesSlotSrq<X> {}
impl<X: SendMode> RecvSide for SlotRq<X> {
    const RECV_SGE: usize = 1;
}
impl<X: SendMode> RecvSide for UsesSlotSrq<X> {
    const RECV_SGE: usize = 0;
}
impl<X: SendMode> OwnsRecvQueue for SlotRq<X> {
    // A slot is one SGE: the type's cap stays 1.
    type WithRecvSge<const N: usize> = SlotRq<X>;
}

pub use crate::wr::PlainSendQueue;
impl PlainSendQueue for SlotRq<PlainSends> {}
impl PlainSendQueue for UsesSlotSrq<PlainSends> {}

/// The receive sides whose QP sends slots: those with [`SlotSends`].
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
/// a.post_send_slot(slots.pop().unwrap(), 8)?; // a's receive side is SlotRq<SlotSends>: SlotSendQueue
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "this QP's send CQ is a plain CQ, so a slot could not come back from it: build the QP with a slot CQ as its send CQ to send slots",
    label = "slot sends need a slot send CQ",
    note = "`Qp::slot_builder(&pd, &slot_cq, &slot_cq)` makes both CQs slot CQs"
)]
pub trait SlotSendQueue: RecvSide + Sealed {}
impl SlotSendQueue for SlotRq<SlotSends> {}
impl SlotSendQueue for UsesSlotSrq<SlotSends> {}

/// A QP's send CQ in slot mode: a plain CQ ([`AnyCq`], with [`PlainSends`]) or a [`SlotCq`]
/// (with [`SlotSends`]).
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let slot_cq = CqEx::<Standard>::builder(&ctx).cqe(8).slots().build()?;
/// let legacy = Cq::builder(&ctx).cqe(8).build()?; // any CQ is a SendCq
/// let qp = Qp::<Rc>::slot_builder(&pd, &legacy, &slot_cq).build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait SendCq: Sealed + crate::object::parent::ParentObject {
    /// The QP's send mode with this CQ.
    type Sends: SendMode;
    /// The CQ's threading.
    type Threading: Threading;
    #[doc(hidden)]
    fn send_cq_raw(&self) -> *mut sys::ibv_cq;
}
impl<Q: AnyCq> SendCq for Q {
    type Sends = PlainSends;
    type Threading = Q::Threading;
    fn send_cq_raw(&self) -> *mut sys::ibv_cq {
        self.as_raw_cq()
    }
}
impl<F: WcFlags, T: Threading, C> SendCq for SlotCq<'_, F, T, C> {
    type Sends = SlotSends;
    type Threading = T;
    fn send_cq_raw(&self) -> *mut sys::ibv_cq {
        self.raw_cq()
    }
}

type SlotJoined<SC, RT> = <<SC as SendCq>::Threading as JoinThreading<RT>>::Out;

impl<'a, T: QpType> Qp<'a, T> {
    /// Starts building a QP of type `T` in `pd` whose own receive queue takes slots
    /// ([`SlotRq`]): its receives complete on the slot CQ `recv_cq`. `send_cq` is a plain CQ
    /// (the QP then takes plain sends) or a [`SlotCq`] (the QP then sends slots only,
    /// [`SlotSends`]); it may be `recv_cq` itself.
    ///
    /// Each parent is `&parent`, or `&Arc<parent>` for a QP that keeps it alive
    /// ([`crate::object::parent`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(32).slots().build()?;
    /// let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slot_builder<'p: 'a, 'r: 'a, SC, F: WcFlags, RT: Threading, RC: 'a>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = SlotCq<'r, F, RT, RC>>,
    ) -> QpBuilder<'a, T, SlotRq<SC::Sends>, SlotJoined<SC, RT>>
    where
        SC: SendCq + 'a,
        SC::Threading: JoinThreading<RT>,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        let cap = QpCap {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        QpBuilder::from_parts(
            pd.get().as_raw(),
            send_cq.get().send_cq_raw(),
            recv_cq.get().raw_cq(),
            ptr::null_mut(),
            cap,
            [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                Keep::NONE,
            ],
        )
    }

    /// Starts building a QP of type `T` (RC or UD) whose receives come from the slot SRQ `srq`
    /// and complete on the slot CQ `recv_cq`; `send_cq` as for
    /// [`slot_builder`](Self::slot_builder).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(32).slots().build()?;
    /// let srq = Srq::builder(&pd).max_wr(64).slots().build()?;
    /// let qp = Qp::<Ud>::slot_builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slot_builder_with_srq<'p: 'a, 'r: 'a, 's: 'a, SC, F: WcFlags, RT: Threading, RC, SrqC>(
        pd: impl Parent<'a, Target = Pd<'p>>,
        send_cq: impl Parent<'a, Target = SC>,
        recv_cq: impl Parent<'a, Target = SlotCq<'r, F, RT, RC>>,
        srq: impl Parent<'a, Target = SlotSrq<'s, SrqC>>,
    ) -> QpBuilder<'a, T, UsesSlotSrq<SC::Sends>, SlotJoined<SC, RT>>
    where
        T: SrqCapable,
        SC: SendCq + 'a,
        SC::Threading: JoinThreading<RT>,
        RC: 'a,
        SrqC: 'a,
    {
        let (pd, send_cq, recv_cq) = (pd.into_held(), send_cq.into_held(), recv_cq.into_held());
        let srq = srq.into_held();
        let cap = QpCap {
            max_send_wr: 1,
            max_recv_wr: 0,
            max_send_sge: 1,
            max_recv_sge: 0,
            max_inline_data: 0,
        };
        QpBuilder::from_parts(
            pd.get().as_raw(),
            send_cq.get().send_cq_raw(),
            recv_cq.get().raw_cq(),
            srq.get().srq.as_raw(),
            cap,
            [
                pd.into_keep(),
                send_cq.into_keep(),
                recv_cq.into_keep(),
                srq.into_keep(),
            ],
        )
    }
}

impl<'a, T: QpType, X: SendMode, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, SlotRq<X>, S, C, St, SGE>
{
    /// `ibv_post_recv` of `slot`: the slot moves into the receive queue and comes back with the
    /// receive's completion on the QP's slot CQ. From INIT on. If the provider refuses it, the
    /// error gives it back.
    ///
    /// # Errors
    /// A [`SlotPostError`] with the provider's errno from `ibv_post_recv` (`ENOMEM` when the
    /// receive queue is full) and the slot back when the provider names the request as `bad_wr`.
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
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv_slot<'r>(&self, slot: Slot<'r>) -> Result<(), SlotPostError<'r>>
    where
        St: SlotRecvReady,
    {
        let qp = self.as_raw();
        let mut wr = sys::ibv_recv_wr {
            wr_id: 0,
            next: ptr::null_mut(),
            sg_list: slot.whole_sge(),
            num_sge: 1,
        };
        post_slot(
            slot,
            Verb::PostRecv,
            &mut wr,
            |wr| &mut wr.wr_id,
            |wr, bad| {
                // SAFETY: a live QP past RESET with its own receive queue; `wr` and the slot's
                // SGE (in the slot's box, which the post moves into the queue, never frees)
                // live across the call.
                unsafe { ctx_op_call!((*qp).context, post_recv, qp, wr, bad) }
            },
        )
    }
}

impl<'a, T: QpType, R: SlotSendQueue, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// A signaled send of the work request `opcode` with the slot's first `len` bytes.
    #[inline(always)]
    fn post_send_slot_op<'r>(
        &self,
        slot: Slot<'r>,
        len: usize,
        opcode: sys::ibv_wr_opcode::Type,
        remote: Option<RemoteAddr<Untyped>>,
    ) -> Result<(), SlotPostError<'r>> {
        if len > slot.len() {
            let max = slot.len() as u64;
            return Err(SlotPostError {
                slot: Some(slot),
                error: Error::range(Verb::PostSend, "len", len as u64, 0, max),
            });
        }
        let qp = self.as_raw();
        let mut sge = slot.sge(len as u32);
        // SAFETY: plain C data; all-zero is a valid (empty) work request.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.sg_list = &mut sge;
        // A zero-length message has no SGE (some devices read a 0 length as 2 GiB); the
        // pointer still names a real one.
        wr.num_sge = (len != 0) as i32;
        wr.opcode = opcode;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        if let Some(r) = remote {
            wr.wr.rdma = sys::rdma_t {
                remote_addr: r.addr(),
                rkey: r.rkey(),
            };
        }
        post_slot(
            slot,
            Verb::PostSend,
            &mut wr,
            |wr| &mut wr.wr_id,
            |wr, bad| {
                // SAFETY: a live QP in RTS (the callers' bound); `wr` and its SGE live across
                // the call.
                unsafe { ctx_op_call!((*qp).context, post_send, qp, wr, bad) }
            },
        )
    }

    /// `ibv_post_send` of a signaled `IBV_WR_SEND` of the slot's first `len` bytes: the slot
    /// moves into the send queue (the device reads it until the send completes) and comes back,
    /// writable again, with its completion on the QP's slot send CQ. `len` above the slot's
    /// length is refused before the call (`OutOfRange`), with the slot back.
    ///
    /// # Errors
    /// A [`SlotPostError`]: `OutOfRange` naming `len` (over the slot's length) with the slot back,
    /// before the call; or the provider's errno from `ibv_post_send` (`ENOMEM` when the send queue
    /// is full), with the slot back when the provider names the request as `bad_wr`.
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
    /// msg[..2].copy_from_slice(b"hi");
    /// a.post_send_slot(msg, 2)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_send_slot<'r>(&self, slot: Slot<'r>, len: usize) -> Result<(), SlotPostError<'r>>
    where
        T: FixedDest,
        St: SendReady,
    {
        self.post_send_slot_op(slot, len, sys::ibv_wr_opcode::IBV_WR_SEND, None)
    }

    /// `ibv_post_send` of a signaled `IBV_WR_RDMA_WRITE` of the slot's first `len` bytes to
    /// `remote`, the slot given back as for [`post_send_slot`](Self::post_send_slot).
    ///
    /// # Errors
    /// As [`post_send_slot`](Self::post_send_slot); `len` must also fit `remote`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// # let cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
    /// # let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?);
    /// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// # let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?);
    /// let target = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?; // on b's side
    /// let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?;
    /// let mut data = slots.pop().unwrap();
    /// data[..5].copy_from_slice(b"hello");
    /// a.post_write_slot(data, 5, target.remote().at(0, 5).unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_write_slot<'r, A: RemoteWriteAccess>(
        &self,
        slot: Slot<'r>,
        len: usize,
        remote: RemoteAddr<A>,
    ) -> Result<(), SlotPostError<'r>>
    where
        T: RdmaWriteCapable,
        St: SendReady,
    {
        self.post_send_slot_op(
            slot,
            len,
            sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
            Some(remote.erase()),
        )
    }
}

/// A shared receive queue in slot mode: it takes slots only ([`post_recv_slot`]), and the QPs
/// that use it ([`Qp::slot_builder_with_srq`]) complete its receives on slot CQs. Built with
/// `Srq::builder(&pd)...slots().build()`.
///
/// [`post_recv_slot`]: Self::post_recv_slot
///
/// ```
/// # use std::sync::Arc;
/// # use typed_verbs::prelude::*;
/// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
/// let srq = Srq::builder(&pd).max_wr(64).slots().build()?;
/// let slots = Slot::register(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE, 4096)?;
/// for slot in slots {
///     srq.post_recv_slot(slot)?;
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct SlotSrq<'a, C = ()> {
    srq: Srq<'a, C, 1>,
}

/// Builds a [`SlotSrq`]: made by `.slots()` on an SRQ's builder.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct SlotSrqBuilder<'a, C> {
    inner: SrqBuilder<'a, C, 1>,
}

impl<'a, C> SrqBuilder<'a, C, 1> {
    /// Makes the SRQ a [`SlotSrq`], whose receives are slots (one SGE each). Set `max_wr` and
    /// the context first.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(64).slots().build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slots(self) -> SlotSrqBuilder<'a, C> {
        SlotSrqBuilder { inner: self }
    }
}

impl<'a, C: Send + Sync> SlotSrqBuilder<'a, C> {
    /// `ibv_create_srq`, as for a plain SRQ.
    ///
    /// # Errors
    /// As [`SrqBuilder::build`](crate::srq::SrqBuilder::build).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// assert!(srq.attr().max_wr >= 32);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn build(self) -> Result<SlotSrq<'a, C>> {
        self.inner.build().map(|srq| SlotSrq { srq })
    }
}

impl<'a, C> SlotSrq<'a, C> {
    /// `ibv_post_srq_recv` of `slot`: it comes back with the completion of the receive that
    /// takes it, on that QP's slot CQ. If the provider refuses it, the error gives it back.
    ///
    /// # Errors
    /// A [`SlotPostError`] with the provider's errno from `ibv_post_srq_recv` (`ENOMEM` when the
    /// SRQ is full) and the slot back when the provider names the request as `bad_wr`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Arc::new(Context::open("sw0")?); let pd = Arc::new(Pd::new(&ctx)?);
    /// let srq = Srq::builder(&pd).max_wr(8).slots().build()?;
    /// let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;
    /// srq.post_recv_slot(slots.pop().unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn post_recv_slot<'r>(&self, slot: Slot<'r>) -> Result<(), SlotPostError<'r>> {
        let srq = self.srq.as_raw();
        let mut wr = sys::ibv_recv_wr {
            wr_id: 0,
            next: ptr::null_mut(),
            sg_list: slot.whole_sge(),
            num_sge: 1,
        };
        post_slot(
            slot,
            Verb::PostSrqRecv,
            &mut wr,
            |wr| &mut wr.wr_id,
            |wr, bad| {
                // SAFETY: a live SRQ; `wr` and the slot's SGE (in the slot's box, which the
                // post moves into the queue, never frees) live across the call.
                unsafe { sys::ibv_post_srq_recv(srq, wr, bad) }
            },
        )
    }

    /// The attributes `ibv_create_srq` reported, as [`Srq::attr`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(64).slots().build()?;
    /// assert!(srq.attr().max_wr >= 64 && srq.attr().max_sge >= 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn attr(&self) -> SrqAttr {
        self.srq.attr()
    }

    /// `ibv_modify_srq` with `IBV_SRQ_LIMIT`, as [`Srq::arm_limit`].
    ///
    /// # Errors
    /// As [`Srq::arm_limit`].
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.arm_limit(4)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn arm_limit(&self, limit: u32) -> Result<()> {
        self.srq.arm_limit(limit)
    }

    /// The typed user context given at creation.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).context(3u8).slots().build()?;
    /// assert_eq!(*srq.user_context(), 3);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn user_context(&self) -> &C {
        self.srq.user_context()
    }

    /// The C SRQ. Posting to it other than through this handle must post slots
    /// (the raw API's contract).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(8).slots().build()?;
    /// assert!(!srq.as_raw().is_null()); // only to read
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_srq {
        self.srq.as_raw()
    }

    /// `ibv_destroy_srq`. Slots still posted are leaked. If it fails, the error is returned
    /// and the SRQ dropped (see [`Srq::destroy`]).
    ///
    /// # Errors
    /// The device's errno from `ibv_destroy_srq` ([`ErrorKind::Os`]): `EBUSY` while a QP still uses
    /// the SRQ (only a leaked one can).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.destroy()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_destroy_srq`; on failure the SRQ comes back inside the error.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the SRQ.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let srq = typed_verbs::Srq::builder(&pd).max_wr(32).slots().build()?;
    /// srq.try_destroy().map_err(|e| e.error)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<(), DestroyError<Self>> {
        self.srq.try_destroy().map_err(|e| DestroyError {
            object: SlotSrq { srq: e.object },
            error: e.error,
        })
    }
}

impl<C> std::fmt::Debug for SlotSrq<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SlotSrq").field(&self.srq.as_raw()).finish()
    }
}

impl<F: WcFlags, T: Threading, C> crate::sealed::SealedParent for SlotCq<'_, F, T, C> {}
impl<F: WcFlags, T: Threading, C> crate::object::parent::ParentObject for SlotCq<'_, F, T, C> {}
impl<C> crate::sealed::SealedParent for SlotSrq<'_, C> {}
impl<C> crate::object::parent::ParentObject for SlotSrq<'_, C> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::access::Access;
    use crate::mr::access::AccessFlags;

    /// A slot region is addressed in the upper half, its memory where its slices are: the SGE
    /// of a slot names its address plus 2^63, and a plain region's SGE its address.
    #[test]
    #[cfg(feature = "software-device")]
    fn a_slot_region_is_addressed_in_the_upper_half() {
        let ctx = Arc::new(crate::device::Context::open("sw0").unwrap());
        let pd = Arc::new(Pd::new(&ctx).unwrap());
        let plain = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap();
        assert!(plain.sge(0..64).unwrap().addr() < SLOT_IOVA);
        let slots = Slot::register(&pd, vec![0u8; 128], Access::LOCAL_WRITE, 64).unwrap();
        for s in &slots {
            let sge = s.sge(64);
            assert_eq!(sge.addr, s.as_ptr() as u64 + SLOT_IOVA);
            assert_eq!(sge.lkey, s.lkey());
            // SAFETY: the slot's own SGE, read while the slot lives.
            let whole = unsafe { *s.whole_sge() };
            assert_eq!(
                (whole.addr, whole.length, whole.lkey),
                (sge.addr, 64, sge.lkey)
            );
        }
    }

    /// A plain receive posted, its region deregistered, the same memory registered as a slot
    /// region that gets the same key (the software device's counter set back to it, as a
    /// device reuses keys): the stale receive names an address outside the slot region as the
    /// device addresses it, so a message for it fails and the owned slot is not written.
    #[test]
    #[cfg(feature = "software-device")]
    fn a_stale_receive_under_a_reused_key_never_writes_a_slot() {
        use crate::cq::wc::WcStatus;
        use crate::cq::wc::WorkCompletion;
        use crate::cq::Cq;
        use crate::mr::PageBuf;
        use crate::qp::Rc;
        use crate::software::keys::MrKeys;
        use crate::wr::SendWr;
        let ctx = Arc::new(crate::device::Context::open("sw0").unwrap());
        let pd = Arc::new(Pd::new(&ctx).unwrap());
        let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
        let build = || Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
        let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE).unwrap();
        let plain = Mr::new(&pd, PageBuf::new(4096).unwrap(), Access::LOCAL_WRITE).unwrap();
        b.post_recv(1, &[plain.sge(0..4096).unwrap()]).unwrap();
        let key = plain.lkey();
        let buf = plain.destroy().unwrap(); // the receive stays posted, naming `key`
        MrKeys::set_next(key >> 8);
        let mut slot = Slot::register(&pd, buf, Access::LOCAL_WRITE, 4096)
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(slot.lkey(), key, "the key was handed out again");
        slot[..4].copy_from_slice(b"mine");
        let src = Mr::new(&pd, b"evil".to_vec(), Access::LOCAL_WRITE).unwrap();
        a.post_send(&SendWr::send(2, &[src.sge(0..4).unwrap()]).signaled())
            .unwrap();
        let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
        let mut got = Vec::new();
        let start = std::time::Instant::now();
        while got.len() < 2 && start.elapsed() < std::time::Duration::from_secs(2) {
            got.extend(
                cq.poll(&mut wc)
                    .unwrap()
                    .iter()
                    .map(|w| (w.wr_id(), w.status())),
            );
        }
        let recv = got
            .iter()
            .find(|(id, _)| *id == 1)
            .expect("the receive completes");
        assert_ne!(recv.1, WcStatus::SUCCESS, "{got:?}");
        assert_eq!(&slot[..4], b"mine", "the stale receive wrote an owned slot");
    }

    /// Slots are allowed on the devices known to check local addresses by iova: rxe (vendor
    /// 0xffffff, part 0) and Mellanox/NVIDIA (0x02c9); not siw (vendor "bmt", 0x626d74), nor
    /// rdmavt's hfi1 and qib (Intel's OUI 0x001175), nor an unknown vendor.
    #[test]
    fn slots_are_allowed_only_where_the_device_checks_the_iova() {
        assert!(checks_local_iova(0x00ff_ffff, 0));
        assert!(checks_local_iova(0x0000_02c9, 4123));
        assert!(!checks_local_iova(0x0062_6d74, 0));
        assert!(!checks_local_iova(0x0000_1175, 0x24f0));
        assert!(!checks_local_iova(0x00ff_ffff, 1));
        assert!(!checks_local_iova(0x1234, 0));
    }

    #[test]
    fn a_slot_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Slot<'static>>(), 8);
        assert_eq!(std::mem::size_of::<Option<Slot<'static>>>(), 8);
    }
}
