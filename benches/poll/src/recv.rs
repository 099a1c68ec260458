//! The receive benchmark: one zero-copy receive (post, completion, reading the bytes) three
//! ways, on an RC pair on the software device.
//!
//! | variant | post / drain functions | what it is |
//! |---|---|---|
//! | slot | `slot_post_recv` / `slot_drain` | `Qp::post_recv_slot`, then a `completion_record!` loop with `slot`: the bytes read in place (`Received`) |
//! | copy | `copy_post_recv` / `copy_drain` | today's safe path: `Qp::post_recv` into a plain region, a generated loop, and `Mr::read` of the bytes |
//! | c | `c_recv_post` / `c_recv_drain` | C with `wr_id` = the buffer's descriptor, reading the bytes in place, with the checks the safe handler makes (`c/recv.c`) |
//!
//! Each round posts [`DEPTH`] receives (the post function), lets the peer send [`DEPTH`]
//! messages of [`MSG`] bytes (not counted), and drains the receive CQ (the drain function),
//! which folds each receive's byte count and first 8 bytes into a checksum and puts its buffer
//! back for the next round. `scripts/bench.sh` counts inside the two functions of a variant
//! (callgrind, `--toggle-collect` on both) and subtracts the software device's own functions.

use crate::rc_up;
use std::os::raw::c_int;
use typed_verbs::ffi::sys;
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::slots::SlotPoller;
use typed_verbs::Poller;
use typed_verbs::{
    completion_record, wc_flags, Access, AccessFlags, Context, Cq, CqEx, Mr, OwnRq, PageBuf, Pd,
    Qp, Rc, RecvSide, SendWr, Shared, Slot, SlotRq,
};

/// Receives posted per round.
pub const DEPTH: usize = 64;
/// The message size.
pub const MSG: usize = 64;

/// The receive CQ's flags.
pub type RecvFlags = wc_flags!(BYTE_LEN);

completion_record! {
    /// A receive into a slot.
    pub struct SlotRecv { slot, byte_len }
    max_batch = 16;
}

completion_record! {
    /// A receive into a plain region.
    pub struct CopyRecv { wr_id, byte_len }
    max_batch = 16;
}

/// Folds `x` into `h`, as `mix` in `c/recv.c`.
#[inline(always)]
fn mix(h: u64, x: u64) -> u64 {
    crate::mix(h, x)
}

/// The first 8 bytes of `b` (0 if shorter), as the C side reads them.
#[inline(always)]
fn first8(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |c| u64::from_le_bytes(*c))
}

type SlotQp<'a> = Qp<'a, Rc, SlotRq, Shared, (), Rts>;
type PlainQp<'a> = Qp<'a, Rc, OwnRq, Shared, (), Rts>;

/// Variant slot: posts every free slot.
#[no_mangle]
#[inline(never)]
pub fn slot_post_recv<'s>(qp: &SlotQp<'_>, free: &mut Vec<Slot<'s>>) {
    while let Some(s) = free.pop() {
        if let Err(e) = qp.post_recv_slot(s) {
            panic!("post_recv_slot: {e}");
        }
    }
}

/// Variant slot: drains the slot CQ, reading each receive in place; how many.
#[no_mangle]
#[inline(never)]
pub fn slot_drain<'s>(
    poller: &mut SlotPoller<'_, 's, RecvFlags>,
    free: &mut Vec<Slot<'s>>,
    h: &mut u64,
) -> usize {
    let mut n = 0;
    loop {
        let taken = SlotRecv::poll(poller, |r| match r {
            Ok(m) => {
                let got = m.received();
                *h = mix(mix(*h, got.byte_len() as u64), first8(&got));
                free.push(got.into_slot());
            }
            Err(e) => panic!("failed receive {e:?}"),
        })
        .expect("poll");
        if taken == 0 {
            return n;
        }
        n += taken;
    }
}

/// Variant copy: posts a receive for every free buffer index of `mr`.
#[no_mangle]
#[inline(never)]
pub fn copy_post_recv(qp: &PlainQp<'_>, mr: &Mr<'_>, free: &mut Vec<u32>) {
    while let Some(i) = free.pop() {
        let at = i as usize * MSG;
        let sge = mr.sge(at..at + MSG).expect("in the region");
        if let Err(e) = qp.post_recv(i.into(), &[sge]) {
            panic!("post_recv: {e}");
        }
    }
}

/// Variant copy: drains the CQ, copying each receive out of the region; how many.
#[no_mangle]
#[inline(never)]
pub fn copy_drain(
    cq: &mut Poller<'_, RecvFlags>,
    mr: &Mr<'_>,
    free: &mut Vec<u32>,
    h: &mut u64,
) -> usize {
    let mut n = 0;
    loop {
        let taken = CopyRecv::poll(cq, |r| match r {
            Ok(m) => {
                let i = m.wr_id() as u32;
                let len = (m.byte_len() as usize).min(MSG);
                let mut buf = [0u8; MSG];
                mr.read(i as usize * MSG, &mut buf[..len])
                    .expect("in the region");
                *h = mix(mix(*h, len as u64), first8(&buf[..len]));
                free.push(i);
            }
            Err(e) => panic!("failed receive {e:?}"),
        })
        .expect("poll");
        if taken == 0 {
            return n;
        }
        n += taken;
    }
}

/// A buffer descriptor of the C variant (`struct rbuf` in `c/recv.c`).
#[repr(C)]
pub struct RBuf {
    addr: u64,
    len: u32,
    lkey: u32,
}

extern "C" {
    fn c_recv_post(qp: *mut sys::ibv_qp, free: *mut *mut RBuf, nfree: *mut u32) -> c_int;
    fn c_recv_drain(
        cq: *mut sys::ibv_cq_ex,
        free: *mut *mut RBuf,
        nfree: *mut u32,
        cap: u32,
        h: *mut u64,
    ) -> c_int;
}

/// Brings `b` up towards a new sending QP on `send_cq`, and that QP towards `b`: (sender, `b`).
fn connect<'a, R: RecvSide>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    send_cq: &'a Cq<'a>,
    b: Qp<'a, Rc, R, Shared, (), Reset>,
) -> (PlainQp<'a>, Qp<'a, Rc, R, Shared, (), Rts>) {
    let bn = b.qp_num();
    let a = Qp::<Rc>::builder(pd, send_cq, send_cq)
        .max_send_wr(DEPTH as u32)
        .build()
        .expect("qp");
    let an = a.qp_num();
    let a = rc_up(ctx, a, bn, AccessFlags::LOCAL_WRITE);
    (a, rc_up(ctx, b, an, AccessFlags::LOCAL_WRITE))
}

/// The variants.
pub const VARIANTS: [&str; 3] = ["slot", "copy", "c"];

/// Runs `rounds` rounds of `variant`; the checksum of every receive.
pub fn run(variant: &str, rounds: usize) -> u64 {
    let ctx = std::sync::Arc::new(crate::open().expect("open sw0"));
    let pd = std::sync::Arc::new(Pd::new(&ctx).expect("pd"));
    let send_cq = Cq::builder(&ctx).cqe(256).build().expect("send cq");
    let msg = Mr::new(&pd, PageBuf::new(MSG).unwrap(), Access::NONE).expect("mr");
    msg.write(0, b"received").unwrap();
    let sge = [msg.sge(0..MSG).unwrap()];
    let send_round = |a: &PlainQp<'_>| {
        for i in 0..DEPTH as u64 {
            a.post_send(&SendWr::send(i, &sge).signaled())
                .expect("send");
        }
        let mut wc: [typed_verbs::WorkCompletion; 16] =
            std::array::from_fn(|_| typed_verbs::WorkCompletion::new());
        let mut n = 0;
        while n < DEPTH {
            n += send_cq.poll(&mut wc).expect("poll sends").len();
        }
    };
    let mut h = 0u64;
    match variant {
        "slot" => {
            let mut cq = CqEx::<RecvFlags>::builder(&ctx)
                .cqe(DEPTH as u32)
                .slots()
                .build()
                .expect("cq");
            let (shared, mut poller) = cq.split();
            let b = Qp::<Rc>::slot_builder(&pd, &send_cq, shared)
                .max_recv_wr(DEPTH as u32)
                .build()
                .expect("qp");
            let (a, b) = connect(&ctx, &pd, &send_cq, b);
            let mut free = Slot::register(
                &pd,
                PageBuf::new(DEPTH * MSG).unwrap(),
                Access::LOCAL_WRITE,
                MSG,
            )
            .expect("slots");
            for _ in 0..rounds {
                slot_post_recv(&b, &mut free);
                send_round(&a);
                assert_eq!(slot_drain(&mut poller, &mut free, &mut h), DEPTH);
            }
        }
        "copy" => {
            let mut cq = CqEx::<RecvFlags>::builder(&ctx)
                .cqe(DEPTH as u32)
                .build()
                .expect("cq");
            let (shared, mut poller) = cq.split();
            let mr =
                Mr::new(&pd, PageBuf::new(DEPTH * MSG).unwrap(), Access::LOCAL_WRITE).expect("mr");
            let mut free: Vec<u32> = (0..DEPTH as u32).collect();
            let b = Qp::<Rc>::builder(&pd, &send_cq, shared)
                .max_recv_wr(DEPTH as u32)
                .build()
                .expect("qp");
            let (a, b) = connect(&ctx, &pd, &send_cq, b);
            for _ in 0..rounds {
                copy_post_recv(&b, &mr, &mut free);
                send_round(&a);
                assert_eq!(copy_drain(&mut poller, &mr, &mut free, &mut h), DEPTH);
            }
        }
        "c" => {
            let cq = CqEx::<RecvFlags>::builder(&ctx)
                .cqe(DEPTH as u32)
                .build()
                .expect("cq");
            let mr =
                Mr::new(&pd, PageBuf::new(DEPTH * MSG).unwrap(), Access::LOCAL_WRITE).expect("mr");
            let mut bufs: Vec<RBuf> = (0..DEPTH)
                .map(|i| {
                    let s = mr.sge(i * MSG..(i + 1) * MSG).unwrap();
                    RBuf {
                        addr: s.addr(),
                        len: s.length(),
                        lkey: s.lkey(),
                    }
                })
                .collect();
            let mut free: Vec<*mut RBuf> = bufs.iter_mut().map(|b| b as *mut RBuf).collect();
            let mut nfree = DEPTH as u32;
            let b = Qp::<Rc>::builder(&pd, &send_cq, &cq)
                .max_recv_wr(DEPTH as u32)
                .build()
                .expect("qp");
            let (a, b) = connect(&ctx, &pd, &send_cq, b);
            for _ in 0..rounds {
                // SAFETY: a live QP past RESET; the descriptors name live parts of `mr`.
                assert_eq!(
                    unsafe { c_recv_post(b.as_raw(), free.as_mut_ptr(), &mut nfree) },
                    0
                );
                send_round(&a);
                // SAFETY: a live CQ that nothing else polls; the free list has room for DEPTH (its
                // capacity, checked by the C side too).
                let n = unsafe {
                    c_recv_drain(
                        cq.as_raw(),
                        free.as_mut_ptr(),
                        &mut nfree,
                        DEPTH as u32,
                        &mut h,
                    )
                };
                assert_eq!(n, DEPTH as c_int);
            }
        }
        v => panic!("unknown variant {v}"),
    }
    h
}
