//! Zero-copy buffers: registered memory split into owned slots that move into a queue when
//! posted and come back with their completion.
//! ```
//! use std::sync::Arc;
//! use typed_verbs::prelude::*;
//! let ctx = Arc::new(Context::open("sw0")?);
//! let pd = Arc::new(Pd::new(&ctx)?);
//! let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
//! let (a, b) = (Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?, Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
//! let (a, b) = (a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?, b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?);
//! let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;
//! assert_eq!(slots.len(), 4);
//! b.post_recv_slot(slots.pop().unwrap())?; // the slot moves into b's receive queue
//! let mut tx = slots.pop().unwrap();
//! tx[..5].copy_from_slice(b"hello"); // owned, not posted: a plain `&mut [u8]`
//! a.post_send_slot(tx, 5)?;
//! let mut poller = cq.poller()?;
//! let mut back = Vec::new();
//! while back.len() < 2 { // the send's slot and the receive's, each with its completion
//!     poller.poll_batch(|mut batch| back.extend(batch.take_slot()))?;
//! }
//! assert!(back.iter().all(|slot| &slot[..5] == b"hello")); // the received one read in place
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [poll loops](crate::guide::poll_loops) page shows the slot records of
//! [`completion_record!`](crate::completion_record), and its
//! [guarantees](crate::guide::guarantees) page sums up the argument below with the crate's
//! other promises.
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

/// Slot CQs: extended CQs whose every completion hands a slot back.
mod cq;
/// Slot-mode queues: a QP's receive side and send mode, and the slot posts.
mod qp;
/// Slots: one region's fixed-size pieces, each owned by the program or by the device.
mod slot;
/// Slot SRQs: shared receive queues that take slots only.
mod srq;

pub use cq::*;
pub use qp::*;
pub use slot::*;
pub use srq::*;

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
pub use crate::wr::PlainSendQueue;
use crate::wr::{RdmaWriteCapable, RecvReady, SendReady};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::sync::Arc;

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "software-device")]
    use crate::mr::access::{Access, AccessFlags};

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
