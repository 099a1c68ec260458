//! # The safety model
//!
//! What the crate promises: **no program that uses only the safe API can cause undefined
//! behaviour, a data race, a double free or destroy, or a wait the crate itself makes
//! unending, or get round a guarantee** — whatever it leaks (`mem::forget`, `ManuallyDrop`, `Rc`
//! cycles), panics (in a user context's `Drop`, in a poll handler), shares across threads, or
//! implements of the crate's public traits. This page says how, and where the promise ends.
//!
//! Leaking, for one, never frees what the device can still reach: a forgotten QP stays alive,
//! and the CQ it uses refuses to be destroyed rather than free it under the QP.
//!
//! ```
//! use typed_verbs::prelude::*;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(8).build()?;
//! std::mem::forget(Qp::<Rc>::builder(&pd, &cq, &cq).build()?); // the borrow of `cq` ends here
//! let refused = cq.try_destroy().unwrap_err(); // ibv_destroy_cq: a live QP uses the CQ
//! assert_eq!(refused.error.errno(), libc::EBUSY); // `refused.object` is the CQ, still alive
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists the promises in one place; this
//! page is the argument for them.
//!
//! ## Three kinds of guarantee
//!
//! | kind | what | examples |
//! |---|---|---|
//! | types | a misuse does not compile | a slot used after it was posted; a plain QP on a slot CQ; a field read without its `wc_flags` bit; a UC QP on an SRQ; destroying a CQ a QP uses; posting before RTS; a fixed SGE list over the queue's cap; a batch kept past its `poll_batch`; a crate trait implemented outside the crate |
//! | run-time checks | refused before any FFI call, with an [`Error`](crate::Error) naming the verb | `cqe` out of range; an object of another context; waiting for a CQ lock inside a polling batch ([`ErrorKind::BatchOpen`](crate::error::ErrorKind::BatchOpen)) |
//! | `unsafe` contracts | the caller promises what neither can check | [`CqBuilder::ignore_overrun`](crate::CqBuilder::ignore_overrun), [`Mr::as_slice`](crate::mr::Mr::as_slice) (zero copy of any region; [`Slot`](crate::Slot) is the safe one), everything in [`raw`](crate::raw), and using any `as_raw()` pointer |
//!
//! Each compile-time rule has a failing and a passing UI test (`ui-tests/fail/`,
//! `ui-tests/pass/`); the guide's [diagnostics](crate::guide::diagnostics) page lists the
//! compiler's first line for each failing one.
//!
//! ## Leaking is safe
//!
//! Safety never depends on a destructor running. Every handle owns its C object; dropping it
//! destroys the object, and forgetting it leaks the object, which then stays valid for ever.
//! What a leaked handle borrowed (its context, PD, CQs, SRQ, channel) is free again in Rust's
//! eyes, but the C library refuses to destroy a parent that a live child uses (`EBUSY`): an
//! explicit `destroy()` returns that error with the object, and a `Drop` leaves the parent
//! allocated, so nothing the device or the provider can still reach is ever freed. The one
//! exception is the context: rdma-core's `ibv_close_device` does not refuse, the kernel tears
//! the leaked objects down with it (the software device refuses with `EBUSY`); nothing safe
//! reaches a leaked object again, and its memory (an owned region's buffer included) stays
//! allocated. In detail:
//!
//! - **Shared parents** ([`parent`](crate::object::parent)): a child created from `Arc`'d parents holds
//!   a reference to each and releases it only after its own C object is destroyed (a QP
//!   destroyed at a batch's end holds them until then); forgetting the child forgets those
//!   references, so its parents stay alive with it, and `Arc::into_inner` never hands back a
//!   parent a live child uses.
//! - **Registered memory** (the model is in [`dma`](crate::ffi::dma)): a region owns its buffer
//!   ([`Mr::new`](crate::mr::Mr::new) over a [`PageBuf`](crate::mr::PageBuf),
//!   [`HugeBuf`](crate::HugeBuf), `Vec<u8>` or `Box<[u8]>`) and gives it back only after
//!   `ibv_dereg_mr` succeeded, or borrows one only inside [`Mr::scoped`](crate::mr::Mr::scoped),
//!   whose own frame deregisters it on every way out (and aborts the process if the device
//!   refuses: borrowed memory can neither be leaked nor handed back while the device may write
//!   it). Forgetting a region leaks its buffer along with the registration, so the device never
//!   writes memory Rust may reuse. Safe reads and writes of registered memory, and the software
//!   device's own copies and atomics, are byte-wise atomic, so none is a data race.
//! - **Polling batches**: a [`Batch`](crate::Batch) exists only inside
//!   [`CqEx::poll_batch`](crate::cq::ex::CqEx::poll_batch); a batch the closure leaks (or leaves behind
//!   by panicking) is ended by `poll_batch` itself, so the provider's CQ lock, which
//!   `ibv_start_poll` takes and `ibv_end_poll` releases, is never left held.
//! - **Multicast groups**: a QP remembers the groups it joined; its destroy (and drop) detaches
//!   those never left first, so a group cannot make the QP, and with it its CQs, PD and
//!   context, impossible to destroy.
//! - **Completion and async events**: a held event is acked by its guard; a CQ's destroy acks
//!   the events still held for it before `ibv_destroy_cq` (which waits for acks), so a leaked
//!   event cannot make the destroy wait for ever.
//!
//! ## Zero copy: slots
//!
//! [`Slot`](crate::Slot)s ([`crate::slots`]) are the safe way to read and write registered memory
//! as plain slices. A `&[u8]` (or `&mut [u8]`) is sound only while nothing else, the device and the
//! software device's copies included, can write (or access) its bytes. The types make sure of it:
//!
//! 1. the region is registered with `LOCAL_WRITE` and no remote right (by type:
//!    [`SlotAccess`](crate::mr::access::SlotAccess)), so no peer can reach it;
//! 2. the region is never an `Mr` the program holds and none of its `Sge`s exist, so the only
//!    work requests meant for it are slot posts, each naming its own slot's disjoint range; and no
//!    other work request reaches it even by its key (see *No device writes what the program
//!    holds*, below);
//! 3. posting moves the slot into the queue; it comes back only from the crate's conversion of a
//!    completion's `wr_id` on a [`SlotCq`](crate::SlotCq), done once per completion as a
//!    [`SlotBatch`](crate::SlotBatch) enters it, and only slot-mode queues complete on a slot CQ
//!    (`Qp::builder` and `software::inject` do not take one; plain posts do not exist on slot
//!    queues), so every `wr_id` there is a slot the queue owns;
//! 4. the completion orders the device's accesses before the program's.
//!
//! A slot that never completes (its QP destroyed or reset, a receive posted to a QP the device moved to ERR while its type says RTS (a QP typed `ErrorState` takes no slot receive), an overrun) is
//! leaked with its region: safe. Raw posts with other `wr_id`s on a slot queue, or polling a slot
//! CQ through its raw pointer, break the raw API's contract.
//!
//! ## No device writes what the program holds
//!
//! The invariant: **a device reads or writes only memory of a region registered in the PD of the
//! QP (or SRQ) whose work request or peer asks for it, inside that region's range as the device
//! addresses it; and the program holds a Rust reference into registered memory only for a slot
//! that is not posted, or for a borrowed buffer after its [`Mr::scoped`](crate::mr::Mr::scoped) has
//! deregistered it.** Everything else registered is reached by the program only through the
//! crate's byte-wise atomic copies ([`crate::ffi::dma`]). Why it holds, for every number of devices,
//! contexts and key spaces, after keys wrap and are reused:
//!
//! - A device resolves a key only in its own key space (a context's, for the software device
//!   one for all its contexts) and checks the region's PD and range: a work request posted on one
//!   device never reaches a region of another, whatever its key.
//! - A deregistered region is gone for the device (rxe and mlx5 invalidate the key before
//!   `ibv_dereg_mr` returns; the software device removes it under its fabric lock). A work
//!   request still naming its key reaches only a region registered *later* under the same key,
//!   and only at the addresses it names.
//! - Plain regions are addressed by their virtual addresses, all below 2^63 (checked before the
//!   call); slot regions at their address plus 2^63 (`ibv_reg_mr_iova2`). So a plain work request,
//!   stale or not, never lies inside a slot region: its key may be a slot region's (a reused key,
//!   a key of another key space, a wrapped counter), its address cannot. The device refuses it
//!   with a completion error (the software device as rxe's `mr_check_range`). This needs a
//!   device that checks local addresses against the iova, as the software device, rxe, mlx4
//!   and mlx5 do; siw and rdmavt check the virtual address, so
//!   [`Slot::register`](crate::Slot::register) refuses every device not known to
//!   ([`ErrorKind::SlotsUnsupported`](crate::error::ErrorKind::SlotsUnsupported)).
//! - A later plain region under a reused key covers memory the program gave it: owned by the
//!   region, or mutably borrowed by its `Mr::scoped`, so the device writing it races nothing the
//!   program holds.
//! - A slot region's key is deregistered only after its last slot is dropped, and a posted slot
//!   is never dropped (it comes back with its completion, or is leaked with its region), so no
//!   slot post outlives its region's key.
//!
//! The argument rests on no key being unique: only on the device's own checks, which compare the
//! region a key names with the work request's PD and addresses (by iova, on the devices slots
//! are allowed on). The software device also never
//! hands out a key that is live in any of its contexts, and records nothing per registration
//! beyond the regions alive (`tests/mr.rs`, `src/backend/software/objects/`).
//!
//! ## No second destroy, whatever user code does
//!
//! A typed user context (a CQ's, QP's or SRQ's) is user code when it drops. It is dropped only
//! after the C object is destroyed and the handle disarmed (`mem::forget` in `destroy`, or from
//! inside `Drop`, which Rust runs once), or, when the destroy has to wait (below), after the
//! object is queued for it: a panic there unwinds through no handle that could destroy the
//! object again.
//!
//! ## A thread inside a batch never waits for a CQ lock
//!
//! rdma-core's mlx5 provider holds a CQ's lock from `ibv_start_poll` to `ibv_end_poll`, and
//! takes CQ locks in `ibv_destroy_qp` (both of the QP's CQs, in order), in the modify to RESET,
//! in `ibv_poll_cq` and in the next `ibv_start_poll`. A thread that holds one CQ lock and waits
//! for another can deadlock with a thread that does the opposite (a QP destroy holding one of
//! its CQs' locks), and one that waits for the lock it holds spins for ever. So, inside
//! [`CqEx::poll_batch`](crate::cq::ex::CqEx::poll_batch), on that thread:
//!
//! - a second `poll_batch` (on any CQ), [`Cq::poll`](crate::cq::Cq::poll),
//!   [`Qp::destroy`](crate::qp::Qp::destroy) and [`to_reset`](crate::qp::Qp::to_reset) are refused with
//!   [`ErrorKind::BatchOpen`](crate::error::ErrorKind::BatchOpen), before any call;
//! - a QP dropped there is destroyed when the batch ends (its multicast groups detached then);
//!   its user context is dropped at once, since it may borrow what the closure frees next;
//! - while such a QP waits, an object of its context that it may still use (the context, its
//!   PD, CQs, SRQ, and their channel or parent domain), dropped on any thread (the QP's
//!   borrows ended with its handle, so they may have moved), is destroyed after it instead of
//!   failing with `EBUSY` (or, for a context, being closed under the QP, which rdma-core's
//!   `ibv_close_device` would do); `Context::close` is refused meanwhile.
//!
//! One batch is open on a CQ at a time, and a thread that asks for a second is refused, never
//! made to wait: [`CqEx::poll_batch`](crate::cq::ex::CqEx::poll_batch) (`&self`, any thread) is refused
//! with [`ErrorKind::PollerTaken`](crate::error::ErrorKind::PollerTaken) while another thread has a
//! batch open on the CQ or while its one [`Poller`](crate::Poller) lives (`CqEx::split`, or
//! `CqEx::poller`, which refuses a second one, or one while a batch is open); the poller and a
//! `&mut` of the CQ poll alone. The right to poll and the batch are one word, the CQ's gate
//! (below), so they are decided together. So a closure that waits for another thread never
//! waits for one that waits for this batch's CQ to poll it.
//!
//! Outside a batch, each CQ has a gate, held by its batch. A QP's
//! [`destroy`](crate::qp::Qp::destroy) or [`to_reset`](crate::qp::Qp::to_reset) that finds it held
//! waits for that batch to end, as for a lock (a waiting teardown keeps new batches off the
//! gate, so the wait is for the batch in progress), and never holds one CQ's gate while it
//! waits for another's: a QP on two CQs takes the gate it waited for, tries the other without
//! waiting, and otherwise gives the first back and waits for the second. It waits at most a
//! second in all, then is refused (`BatchOpen`, the object back with `try_destroy` /
//! `try_to_reset`): a batch that long, a batch whose closure waits (directly, or through other
//! threads and locks) for the teardown's thread, two CQs that never leave a gap, or other
//! teardowns of the CQ that held it that long (a waiting teardown goes before newcomers). A
//! dropped QP's thread never waits: the QP is handed to the batch, which destroys it after it
//! ends; there, out of the batch and holding no gate, the batch's thread waits in the same way
//! for the batch in progress on the QP's other CQ (at most a second for the whole batch end,
//! however many QPs wait there; then it hands the rest on), so a QP dropped while batches keep
//! both its CQs busy is destroyed after at most one batch of each, not handed between them for
//! ever. That holds when each CQ is polled by one thread at a time (as through its `Poller`)
//! and no batch's closure waits for the other CQ's polling thread; where several threads take
//! turns on a CQ through `&self`, a batch of theirs may open between the two gates, and where
//! a closure waits for the other poller, the wait cannot succeed: either way the batch end
//! gives up within the second and hands the QP on, as before. A batch that finds a teardown
//! in progress (or waiting) waits for it, which is bounded: a teardown runs no user code, and
//! a waiting one
//! waits only for the batch in progress on one CQ, holding no gate, for at most a second; a
//! poller that waits keeps new teardowns from queueing ahead of it. So no wait is for ever, and
//! a poll of one CQ waits for another CQ's batch only after its own batch ended, when a QP of
//! both was dropped during it.
//!
//! As with a lock, a batch's closure that waits for a thread destroying or resetting a QP of
//! that batch's CQ stalls that thread for the second, after which its teardown is refused;
//! dropping the QP instead never waits. Likewise a batch's closure that waits for the thread
//! polling another CQ, while a QP on both CQs is dropped, stalls that poller's return (the end
//! of the batch the QP was handed to) for at most the second, once per batch end; the caller's
//! duty, where that matters, is to drop such QPs outside those batches or destroy them
//! explicitly. The software device takes the CQ locks where mlx5
//! does, so the tests would see a wait that could hang (`tests/typed/teardown.rs`, `tests/gate_*.rs`).
//!
//! ## Threads
//!
//! Each `unsafe impl Send`/`Sync` in the crate states its reason next to it. In short: C objects
//! of libibverbs are thread-safe except a CQ created with `IBV_CREATE_CQ_ATTR_SINGLE_THREADED`,
//! whose handle is not `Sync` and whose QPs are neither `Send` nor `Sync`; a user context is
//! reached as `&C` (so sharing a handle needs `C: Sync`) and dropped where the handle is
//! dropped (so moving one needs `C: Send`); the right to poll is one `&mut` (a
//! [`Poller`](crate::Poller) or the CQ itself); a batch and its completions are neither `Send`
//! nor `Sync`, since the provider's lock belongs to the thread that opened it.
//!
//! ## Sealed traits
//!
//! Every public trait whose implementations a guarantee relies on (flag sets, QP types,
//! receive sides, states, SGE lists, pollable CQs, ...) has a private supertrait: a program can
//! name them in bounds but cannot implement them, so it cannot claim a capability a type does
//! not have.
//!
//! ## The FFI boundary
//!
//! No panic crosses an `extern "C"` function of the crate (the software device's provider
//! entry points turn one into an errno); enums that C fills (`ibv_event_type`, states, MTUs,
//! completion status and opcode) are read as integers and mapped, with a variant for values
//! newer than the headers the crate was built with; every `#[repr(C)]` structure the crate
//! passes to or reads from C is checked against the C layout at compile time.
//!
//! ## In one example
//!
//! ```
//! use std::sync::Arc;
//! use typed_verbs::{Context, CqEx, Pd, Qp, Rc, Standard};
//! let ctx = Arc::new(Context::open("sw0")?);
//! let pd = Arc::new(Pd::new(&ctx)?);
//! let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
//! let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//! std::mem::forget(qp); // leaked: its PD, CQ and context stay alive for it, never dangling
//! drop((pd, cq, ctx));   // the leaked QP still holds them: nothing is freed under it
//! # Ok::<(), typed_verbs::Error>(())
//! ```
