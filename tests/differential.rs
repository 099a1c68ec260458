//! The software device against a real one: random sequences of raw verbs (create, modify, post,
//! destroy, with attributes in and out of range) run in lockstep on `sw0` and on the device of
//! `TYPED_VERBS_DEVICE` (rxe0 in the VM lane), and their outcomes compared step by step: success
//! or the errno, what a create reports back (actual sizes), what a post returns (and which
//! `bad_wr`), and the completions each step produced, CQ by CQ (wr_id, status, opcode, byte_len,
//! wc_flags, imm_data, the QP and source QP as objects of the sequence: numbers, keys and
//! addresses differ between devices and are never compared).
//!
//! A divergence fails the test and prints the shortest sequence that still shows it (steps
//! dropped and attributes simplified while the divergence stays) with its seed, so
//! `TYPED_VERBS_DIFF_SEED=<seed> TYPED_VERBS_DIFF_SEQUENCES=1` reproduces it.
//!
//! Without a real device to compare with (sw0 alone), the sequences still run on sw0 and every
//! step is checked against what the verbs may answer (an errno of the documented ones, a
//! completion status and opcode of the enums), no panic, and nothing left behind (the software
//! device's live-object counts); the comparison prints a SKIP line.
//!
//! Environment: `TYPED_VERBS_DIFF_SEQUENCES` (default 2000), `TYPED_VERBS_DIFF_SEED` (the first
//! sequence's seed, default 1; sequence `i` uses seed + i), `TYPED_VERBS_DIFF_THREADS` (how many
//! workers share the sequences out when comparing, default 2), `TYPED_VERBS_DIFF_KEEP_GOING`
//! (report every divergence, not only the first), `TYPED_VERBS_DIFF_VERBOSE` (count the outcomes
//! by kind in the summary), `TYPED_VERBS_DIFF_TRACE` (print each step and its outcome, on sw0
//! alone).
//!
//! What rxe's timers decide is compared by outcome, not by time, in steps of their own. A
//! [`Timed`] exchange runs two RC QPs of its own (own PD, CQ and MR) through a course that
//! retransmissions and RNR retries decide: a request to a peer in RESET, INIT or ERR that is
//! then brought to RTR, or left until the retries run out (`timeout` 1..=10, `retry_cnt`
//! 0..=6); RNR NAKs with `rnr_retry` 1..=6 (the retries run out) or 7 (the receives posted a
//! little later), `min_rnr_timer` 1..=4; `timeout` 0 (no retransmit timer) with a peer made
//! ready, then a second post; a QP moved to SQD while its request waits after an RNR NAK, then
//! back to RTS; a QP in ERR forced to RTS with `IBV_QP_CUR_STATE`, sending and sent to. Each
//! device is waited for until every completion the exchange expects arrived (bounded by
//! [`WAIT`]; milliseconds on both, as rxe's timers tick in 4 ms jiffies), and the status of
//! each request and receive (by QP and wr_id), the result of each modify and both QPs' states
//! are compared. A [`Step::Reconnect`] moves an RC pair of the sequence through RESET and
//! connects it again with matching PSNs (each side's sq_psn the other's rq_psn), after which
//! its requests are compared as any other.
//!
//! What is left out of the other steps, because the outcome depends on timing rather than on
//! the device's rules (the software device runs work synchronously, rxe in kernel tasks with
//! timers): a request of the sequence's RC QPs whose destination is not ready to take it at
//! once (when rxe retransmits, against the steps that follow), whose responder or requester
//! has no read/atomic resources for it, that may get an RNR NAK with rnr_retry other than 0
//! (the retries are timed), or of a QP reset and reconnected on one side only (its PSNs no
//! longer match its peer's, which the software device does not model). Every send is
//! signaled, so each step's work is known to be done before the next.
//!
//! A receive posted to a QP's own receive queue while the QP is in ERR is left out as well: rxe's
//! provider queues it without telling the kernel, and it is flushed only if rxe's responder task
//! runs once more (the run the move to ERR scheduled, when a loaded host delays it past the
//! post), else never. The flushes a move to ERR does produce are waited for: on the real device,
//! until every request the software device flushed is complete on that QP too (bounded by
//! [`WAIT`]), not looked at once.
//!
//! Left out too, as what the software device does not model: a multi-packet RC or UC request
//! whose source and destination overlap (rxe reads each packet after the one before was
//! placed), whose SGEs fault after its first packet (rxe has sent the packets before), or
//! whose peers have different path MTUs (rxe checks each packet's size against the
//! responder's).

// The sequences run on the software device first, and its live-object counts are checked.
#![cfg(feature = "software-device")]

mod common;

use common::{note, skip, LeakCheck};
use std::fmt;
use std::io::Write;
use std::ptr;
use std::time::{Duration, Instant};
use sys::ibv_qp_state::*;
use sys::ibv_qp_type::*;
use sys::ibv_wr_opcode::*;
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::Context;

use common::raw::{
    INLINE, LOCAL_WRITE, REMOTE_ATOMIC, REMOTE_READ, REMOTE_WRITE, SIGNALED, SOLICITED, SRQ_LIMIT,
    SRQ_MAX_WR, WC_WITH_IMM,
};
// enum ibv_qp_attr_mask, as rdma-sys has it
use typed_verbs::ffi::qp_attr_mask::{
    ACCESS_FLAGS as M_ACCESS_FLAGS, ALT_PATH as M_ALT_PATH, AV as M_AV, CUR_STATE as M_CUR_STATE,
    DEST_QPN as M_DEST_QPN, MAX_DEST_RD_ATOMIC as M_MAX_DEST_RD_ATOMIC,
    MAX_QP_RD_ATOMIC as M_MAX_QP_RD_ATOMIC, MIN_RNR_TIMER as M_MIN_RNR_TIMER,
    PATH_MIG_STATE as M_PATH_MIG_STATE, PATH_MTU as M_PATH_MTU, PKEY_INDEX as M_PKEY_INDEX,
    PORT as M_PORT, QKEY as M_QKEY, RETRY_CNT as M_RETRY_CNT, RNR_RETRY as M_RNR_RETRY,
    RQ_PSN as M_RQ_PSN, SQ_PSN as M_SQ_PSN, STATE as M_STATE, TIMEOUT as M_TIMEOUT,
};
/// Every mask bit the generator may add where it does not belong.
const ALL_MASK_BITS: [i32; 18] = [
    M_CUR_STATE,
    M_ACCESS_FLAGS,
    M_PKEY_INDEX,
    M_PORT,
    M_QKEY,
    M_AV,
    M_PATH_MTU,
    M_TIMEOUT,
    M_RETRY_CNT,
    M_RNR_RETRY,
    M_RQ_PSN,
    M_MAX_QP_RD_ATOMIC,
    M_ALT_PATH,
    M_MIN_RNR_TIMER,
    M_SQ_PSN,
    M_MAX_DEST_RD_ATOMIC,
    M_PATH_MIG_STATE,
    M_DEST_QPN,
];

const QKEY: u32 = 0x1111_2222;
const PSN: u32 = 0x1234;
/// A QP number no QP of a sequence has.
const NO_QPN: u32 = 0x00ff_fff0;
/// A memory key no MR of a sequence has.
const NO_KEY: u32 = 0x0bad_0000;

/// Bytes allocated past every region: more than any SGE of a sequence reaches past it.
const SLACK: usize = 8192;

/// How long a real device may take to produce the completions the software device produced (a
/// bound only: the wait ends as soon as they are there; rxe flushes in kernel tasks, which a
/// loaded host running the VM may hold back for seconds).
const WAIT: Duration = Duration::from_secs(10);
/// How long a real device is watched, after the last step, for completions the software device
/// did not produce.
const QUIET: Duration = Duration::from_millis(2);

// ---------------------------------------------------------------------------------------------
// The generator.
// ---------------------------------------------------------------------------------------------

/// splitmix64: small, seedable, good enough to pick verbs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pct(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A size, either a number or one more than the device's own limit for it (resolved per device,
/// so both devices see an out-of-range value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Lit(u32),
    OverLimit,
}

impl Size {
    fn resolve(self, limit: u32) -> u32 {
        match self {
            Size::Lit(n) => n,
            Size::OverLimit => limit.saturating_add(1),
        }
    }
}

/// The attributes of a modify (the fields a step may set; the mask says which are passed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QpAttrs {
    state: u32,
    pkey_index: u16,
    port: u8,
    qkey: u32,
    access: i32,
    sgid_index: u8,
    av_port: u8,
    is_global: bool,
    path_mtu: u32,
    /// The QP of the sequence named as the destination.
    dest: usize,
    max_dest_rd_atomic: u8,
    min_rnr_timer: u8,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    max_rd_atomic: u8,
}

impl Default for QpAttrs {
    fn default() -> Self {
        QpAttrs {
            state: IBV_QPS_RESET,
            pkey_index: 0,
            port: 1,
            qkey: QKEY,
            access: 0,
            sgid_index: 0,
            av_port: 1,
            is_global: true,
            path_mtu: sys::ibv_mtu::IBV_MTU_1024,
            dest: 0,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 1,
            timeout: 0,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        }
    }
}

/// A scatter/gather entry: `len` bytes at `off` in the buffer of the sequence's MR `mr` (a key no
/// MR has when that MR does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sge {
    mr: usize,
    off: u32,
    len: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SendSpec {
    opcode: u32,
    flags: u32,
    sges: Vec<Sge>,
    /// RDMA and atomics: the remote MR and offset.
    remote: (usize, u32),
    /// UD: the AH, the destination QP, and whether the qkey is the one the QPs use.
    ah: usize,
    dest: usize,
    qkey_ok: bool,
}

/// One verb of a sequence. Objects are named by their place among the objects of their kind
/// the sequence created (in order); a step whose object does not exist (never created, creation
/// failed, destroyed) is skipped on both devices.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    AllocPd,
    DeallocPd {
        pd: usize,
    },
    CreateCq {
        cqe: Size,
        comp_vector_over: bool,
    },
    DestroyCq {
        cq: usize,
    },
    RegMr {
        pd: usize,
        len: u32,
        access: i32,
    },
    DeregMr {
        mr: usize,
    },
    CreateSrq {
        pd: usize,
        max_wr: Size,
        max_sge: Size,
        srq_limit: u32,
    },
    ModifySrq {
        srq: usize,
        mask: i32,
        max_wr: u32,
        srq_limit: u32,
    },
    DestroySrq {
        srq: usize,
    },
    CreateQp {
        pd: usize,
        send_cq: usize,
        recv_cq: usize,
        srq: Option<usize>,
        qpt: u32,
        send_wr: Size,
        recv_wr: Size,
        send_sge: Size,
        recv_sge: Size,
        inline: Size,
        sig_all: bool,
    },
    ModifyQp {
        qp: usize,
        a: QpAttrs,
        mask: i32,
    },
    DestroyQp {
        qp: usize,
    },
    CreateAh {
        pd: usize,
        sgid_index: u8,
        port: u8,
        is_global: bool,
    },
    DestroyAh {
        ah: usize,
    },
    QueryGid {
        index: i32,
    },
    PostRecv {
        qp: usize,
        wrs: Vec<Vec<Sge>>,
    },
    PostSrqRecv {
        srq: usize,
        wrs: Vec<Vec<Sge>>,
    },
    PostSend {
        qp: usize,
        wrs: Vec<SendSpec>,
    },
    /// An exchange whose course rxe's timers decide, on objects of its own (see [`Timed`]).
    Timed(Timed),
    /// RC QP `qp` and the QP it names (which names it), both moved to RESET and connected to
    /// each other again with `psn` as both directions' first PSN (sq_psn of one, rq_psn of the
    /// other: rxe checks PSNs).
    Reconnect {
        qp: usize,
        psn: u32,
    },
}

/// An exchange between two RC QPs `a` and `b` of a PD, CQ and MR of its own, whose outcome rxe
/// decides with its timers (retransmissions, RNR retries) and that is compared by outcome, not
/// by time: the status of every request and receive, by QP and wr_id, and the QPs' states once
/// every completion expected arrived (bounded by [`WAIT`]), with the result of each modify it
/// makes. `a` sends SENDs of 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timed {
    /// `b` not ready (left in RESET or INIT, or moved to ERR) when `sends` requests of `a`
    /// (`timeout`, `retry_cnt`) are posted. `ready`: `b` is then brought to RTR with a receive
    /// per request (`retry_cnt` 7, no limit: they land at a retransmission); else `a`'s retries
    /// run out (RETRY_EXC_ERR, the rest flushed, `a` in ERR).
    Unready {
        peer: u32,
        sends: u8,
        timeout: u8,
        retry_cnt: u8,
        ready: bool,
    },
    /// `b` ready with `recvs` receives for `sends` requests, its RNR timer `min_rnr_timer`.
    /// `rnr_retry` 1..=6: the request that finds none is NAKed until its retries run out
    /// (RNR_RETRY_EXC_ERR); 7: the missing receives are posted a little later and every request
    /// lands.
    Rnr {
        sends: u8,
        recvs: u8,
        rnr_retry: u8,
        min_rnr_timer: u8,
    },
    /// `a` with `timeout` 0 (no retransmit timer) sends to `b` in INIT; `b` is brought to RTR
    /// and `a` sends again.
    NoTimer,
    /// `a`'s request waits after an RNR NAK (`rnr_retry` 7, `b`'s timer `min_rnr_timer`) when
    /// `a` moves to SQD; once drained (`sq_draining` 0), `b` gets receives, `a` goes back to
    /// RTS and sends again.
    SqdAfterRnr { min_rnr_timer: u8 },
    /// `a` moved to ERR, then to RTS with `IBV_QP_CUR_STATE` naming RTS; `a` sends to `b`, and
    /// `b` (`timeout`, `retry_cnt`) to `a`.
    ForcedRts { timeout: u8, retry_cnt: u8 },
}

/// What the generator assumes of a QP it created: its type and the state it was last asked
/// to move to.
#[derive(Clone, Copy)]
struct GenQp {
    qpt: u32,
    state: u32,
    /// The QP its connection names.
    peer: Option<usize>,
}

struct Gen {
    rng: Rng,
    pds: usize,
    cqs: usize,
    mrs: usize,
    srqs: usize,
    qps: Vec<GenQp>,
    ahs: usize,
}

impl Gen {
    /// An object index: mostly one created so far, sometimes one past them.
    fn obj(&mut self, n: usize) -> usize {
        if n == 0 || self.rng.pct(4) {
            n
        } else {
            self.rng.below(n)
        }
    }

    fn sges(&mut self, max: usize) -> Vec<Sge> {
        let n = 1 + self.rng.below(max);
        (0..n)
            .map(|_| {
                let mr = self.obj(self.mrs);
                Sge {
                    mr,
                    off: self.rng.pick(&[0, 0, 8, 64, 200]),
                    len: self.rng.pick(&[0, 1, 8, 16, 16, 64, 64, 100, 1024, 2048]),
                }
            })
            .collect()
    }

    /// The SGEs of a receive: mostly in the upper part of the regions, where sends do not read.
    fn recv_sges(&mut self, max: usize) -> Vec<Sge> {
        let mut v = self.sges(max);
        for s in v.iter_mut() {
            if self.rng.pct(80) {
                s.off = self.rng.pick(&[2304, 3072]);
                s.len = self.rng.pick(&[16, 64, 100, 1024, 1024]);
            }
        }
        v
    }

    fn size(&mut self, lits: &[u32], over_pct: u64) -> Size {
        if self.rng.pct(over_pct) {
            Size::OverLimit
        } else {
            Size::Lit(self.rng.pick(lits))
        }
    }

    /// The QP a connection of `qp` names: itself, or another QP of its type that is free or
    /// already names `qp` (RC requests need a pair that names each other).
    fn peer(&mut self, qp: usize) -> usize {
        let Some(g) = self.qps.get(qp).copied() else {
            return qp;
        };
        let others: Vec<usize> = (0..self.qps.len())
            .filter(|&j| j != qp && self.qps[j].qpt == g.qpt)
            .filter(|&j| self.qps[j].peer.is_none_or(|p| p == qp))
            .collect();
        let p = if others.is_empty() || self.rng.pct(40) {
            qp
        } else {
            self.rng.pick(&others)
        };
        self.qps[qp].peer = Some(p);
        p
    }

    /// A timing-decided exchange, with attributes that make retries end within milliseconds
    /// on both devices (rxe's timers tick in jiffies, 4 ms at least).
    fn timed(&mut self) -> Timed {
        let r = &mut self.rng;
        match r.below(10) {
            0..=3 => {
                let ready = r.pct(40);
                Timed::Unready {
                    peer: r.pick(&[IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_ERR]),
                    sends: 1 + r.below(3) as u8,
                    timeout: 1 + r.below(10) as u8,
                    retry_cnt: if ready { 7 } else { r.below(7) as u8 },
                    ready,
                }
            }
            4..=6 => {
                let sends = 1 + r.below(3) as u8;
                let rnr_retry = r.pick(&[1, 2, 3, 6, 7, 7]);
                Timed::Rnr {
                    sends,
                    recvs: r.below(sends as usize) as u8,
                    rnr_retry,
                    min_rnr_timer: 1 + r.below(4) as u8,
                }
            }
            7 => Timed::NoTimer,
            8 => Timed::SqdAfterRnr {
                min_rnr_timer: 1 + r.below(3) as u8,
            },
            _ => Timed::ForcedRts {
                timeout: 1 + r.below(10) as u8,
                retry_cnt: r.below(4) as u8,
            },
        }
    }

    /// The next steps: one verb, or the three modifies that bring a QP to RTS.
    fn steps(&mut self) -> Vec<Step> {
        if self.rng.pct(2) {
            return vec![Step::Timed(self.timed())];
        }
        let rc: Vec<usize> = (0..self.qps.len())
            .filter(|&i| self.qps[i].qpt == IBV_QPT_RC && self.qps[i].peer.is_some())
            .collect();
        if !rc.is_empty() && self.rng.pct(4) {
            let qp = self.rng.pick(&rc);
            if let Some(p) = self.qps[qp].peer {
                self.qps[qp].state = IBV_QPS_RTS;
                if let Some(g) = self.qps.get_mut(p) {
                    g.state = IBV_QPS_RTS;
                    g.peer = Some(qp);
                }
            }
            let psn = self.rng.pick(&[0, 1, 0x00ff_ffff, 0x5000, 0x1234]);
            return vec![Step::Reconnect { qp, psn }];
        }
        if !self.qps.is_empty() && self.rng.pct(12) {
            let qp = self.rng.below(self.qps.len());
            let dest = self.peer(qp);
            self.qps[qp].state = IBV_QPS_RESET;
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(self.modify_qp(qp, true, dest));
            }
            return v;
        }
        vec![self.candidate()]
    }

    fn candidate(&mut self) -> Step {
        let r = &mut self.rng;
        // Creates are weighted up while few objects exist.
        let choice = r.below(100);
        match choice {
            0..=5 => Step::AllocPd,
            6..=11 => Step::CreateCq {
                cqe: {
                    let s = self.size(&[1, 2, 3, 4, 16, 64, 0], 4);
                    if self.rng.pct(2) {
                        Size::Lit(u32::MAX) // -1 as the C int
                    } else {
                        s
                    }
                },
                comp_vector_over: self.rng.pct(4),
            },
            12..=18 => Step::RegMr {
                pd: self.obj(self.pds),
                len: self.rng.pick(&[4096, 4096, 256, 64, 8]),
                access: if self.rng.pct(70) {
                    LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC
                } else {
                    self.rng.below(16) as i32
                },
            },
            19..=23 => Step::CreateSrq {
                pd: self.obj(self.pds),
                max_wr: self.size(&[1, 4, 16, 0], 5),
                max_sge: self.size(&[1, 2, 0], 5),
                srq_limit: self.rng.pick(&[0, 0, 2, 100]),
            },
            24..=35 => {
                let qpt = self.rng.pick(&[IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD]);
                let s = Step::CreateQp {
                    pd: self.obj(self.pds),
                    send_cq: self.obj(self.cqs),
                    recv_cq: self.obj(self.cqs),
                    srq: if self.rng.pct(25) {
                        Some(self.obj(self.srqs))
                    } else {
                        None
                    },
                    qpt,
                    send_wr: self.size(&[1, 4, 16, 0], 3),
                    recv_wr: self.size(&[1, 4, 16, 0], 3),
                    send_sge: self.size(&[1, 2, 0], 3),
                    recv_sge: self.size(&[1, 2, 0], 3),
                    inline: self.size(&[0, 0, 0, 16, 64, 512, 513], 0),
                    sig_all: self.rng.pct(30),
                };
                self.qps.push(GenQp {
                    qpt,
                    state: IBV_QPS_RESET,
                    peer: None,
                });
                s
            }
            36..=55 => {
                let qp = self.obj(self.qps.len());
                let dest = self.peer(qp);
                self.modify_qp(qp, false, dest)
            }
            56..=57 => Step::CreateAh {
                pd: self.obj(self.pds),
                sgid_index: if self.rng.pct(10) { 200 } else { 0 },
                port: if self.rng.pct(5) { 2 } else { 1 },
                is_global: !self.rng.pct(5),
            },
            58 => Step::QueryGid {
                index: self.rng.pick(&[0, 0, 1, 200, -1]),
            },
            59..=66 => {
                let qp = self.obj(self.qps.len());
                let wrs = (0..1 + self.rng.below(2))
                    .map(|_| self.recv_sges(2))
                    .collect();
                Step::PostRecv { qp, wrs }
            }
            67..=70 => {
                let srq = self.obj(self.srqs);
                let wrs = (0..1 + self.rng.below(2))
                    .map(|_| self.recv_sges(2))
                    .collect();
                Step::PostSrqRecv { srq, wrs }
            }
            71..=84 => {
                let qp = self.obj(self.qps.len());
                let wrs = (0..1 + self.rng.below(2)).map(|_| self.send()).collect();
                Step::PostSend { qp, wrs }
            }
            85..=86 => Step::ModifySrq {
                srq: self.obj(self.srqs),
                mask: self.rng.pick(&[SRQ_LIMIT, SRQ_LIMIT, SRQ_MAX_WR, 3, 4]),
                max_wr: self.rng.pick(&[0, 2, 8, 32]),
                srq_limit: self.rng.pick(&[0, 1, 4, 100]),
            },
            87..=89 => Step::DestroyQp {
                qp: self.obj(self.qps.len()),
            },
            90..=91 => Step::DestroyCq {
                cq: self.obj(self.cqs),
            },
            92..=93 => Step::DeregMr {
                mr: self.obj(self.mrs),
            },
            94..=95 => Step::DestroySrq {
                srq: self.obj(self.srqs),
            },
            96..=97 => Step::DeallocPd {
                pd: self.obj(self.pds),
            },
            _ => Step::DestroyAh {
                ah: self.obj(self.ahs),
            },
        }
    }

    fn send(&mut self) -> SendSpec {
        let opcode = self.rng.pick(&[
            IBV_WR_SEND,
            IBV_WR_SEND,
            IBV_WR_SEND_WITH_IMM,
            IBV_WR_RDMA_WRITE,
            IBV_WR_RDMA_WRITE_WITH_IMM,
            IBV_WR_RDMA_READ,
            IBV_WR_ATOMIC_CMP_AND_SWP,
            IBV_WR_ATOMIC_FETCH_AND_ADD,
        ]);
        let atomic = matches!(
            opcode,
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
        );
        let mut sges = self.sges(2);
        if atomic && self.rng.pct(85) {
            sges.truncate(1);
            sges[0].len = 8;
            sges[0].off &= !7;
        }
        let mut flags = SIGNALED;
        if self.rng.pct(15) {
            flags |= INLINE;
        }
        if self.rng.pct(10) {
            flags |= SOLICITED;
        }
        let remote_off = if atomic {
            self.rng.pick(&[0, 8, 64, 3])
        } else {
            self.rng.pick(&[0, 64, 4000])
        };
        SendSpec {
            opcode,
            flags,
            sges,
            remote: (self.obj(self.mrs), remote_off),
            ah: self.obj(self.ahs),
            dest: self.obj(self.qps.len()),
            qkey_ok: !self.rng.pct(10),
        }
    }

    /// A modify of QP `qp`: with `valid`, to the next state of the path with every attribute
    /// in range (and `dest` as the destination); else anything, mostly the next state with
    /// attributes in range.
    fn modify_qp(&mut self, qp: usize, valid: bool, dest: usize) -> Step {
        let g = self.qps.get(qp).copied().unwrap_or(GenQp {
            qpt: IBV_QPT_RC,
            state: IBV_QPS_RESET,
            peer: None,
        });
        let r = &mut self.rng;
        let next = if valid || r.pct(80) {
            match g.state {
                IBV_QPS_RESET => IBV_QPS_INIT,
                IBV_QPS_INIT => IBV_QPS_RTR,
                IBV_QPS_RTR => IBV_QPS_RTS,
                IBV_QPS_RTS => r.pick(&[IBV_QPS_RTS, IBV_QPS_ERR, IBV_QPS_RESET]),
                _ => IBV_QPS_RESET,
            }
        } else {
            r.pick(&[
                IBV_QPS_RESET,
                IBV_QPS_INIT,
                IBV_QPS_RTR,
                IBV_QPS_RTS,
                IBV_QPS_SQD,
                IBV_QPS_SQE,
                IBV_QPS_ERR,
            ])
        };
        let (rc, ud) = (g.qpt == IBV_QPT_RC, g.qpt == IBV_QPT_UD);
        let mut a = QpAttrs {
            state: next,
            ..QpAttrs::default()
        };
        let mut mask = M_STATE;
        match (g.state, next) {
            (IBV_QPS_RESET | IBV_QPS_INIT, IBV_QPS_INIT) => {
                mask |= M_PKEY_INDEX | M_PORT;
                if ud {
                    mask |= M_QKEY;
                } else {
                    mask |= M_ACCESS_FLAGS;
                    a.access = if r.pct(80) {
                        LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC
                    } else {
                        r.below(16) as i32
                    };
                }
            }
            (_, IBV_QPS_RTR) if !ud => {
                mask |= M_AV | M_PATH_MTU | M_DEST_QPN | M_RQ_PSN;
                if rc {
                    mask |= M_MAX_DEST_RD_ATOMIC | M_MIN_RNR_TIMER;
                }
            }
            (_, IBV_QPS_RTS) => {
                mask |= M_SQ_PSN;
                if rc {
                    mask |= M_TIMEOUT | M_RETRY_CNT | M_RNR_RETRY | M_MAX_QP_RD_ATOMIC;
                }
                if g.state == IBV_QPS_RTS {
                    mask = M_STATE;
                    if r.pct(50) {
                        mask |= if ud { M_QKEY } else { M_ACCESS_FLAGS };
                        a.access = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;
                    }
                    if rc && r.pct(30) {
                        mask |= M_MIN_RNR_TIMER;
                    }
                }
            }
            _ => {}
        }
        a.dest = dest;
        if valid {
            a.path_mtu = r.pick(&[1, 2, 3, 3, 3, 4, 5]);
            a.max_dest_rd_atomic = r.pick(&[1, 4, 16]);
            a.min_rnr_timer = r.pick(&[1, 2, 5, 12]);
            a.timeout = r.pick(&[0, 0, 20, 31]);
            a.rnr_retry = r.pick(&[0, 0, 0, 7]);
            a.max_rd_atomic = r.pick(&[1, 4, 16]);
            if let Some(g) = self.qps.get_mut(qp) {
                g.state = next;
            }
            return Step::ModifyQp { qp, a, mask };
        }
        // The values: in range mostly, one out of range now and then.
        if r.pct(30) {
            a.dest = r.below(self.qps.len().max(1) + 1);
        }
        a.path_mtu = r.pick(&[1, 2, 3, 3, 3, 4, 5, 0, 6]);
        a.max_dest_rd_atomic = r.pick(&[1, 1, 4, 16, 0, 128, 129, 255]);
        a.min_rnr_timer = r.pick(&[1, 2, 5, 12, 31, 0, 32, 99]);
        a.timeout = r.pick(&[0, 0, 14, 20, 31, 32]);
        a.retry_cnt = r.pick(&[7, 7, 0, 3, 8]);
        a.rnr_retry = r.pick(&[0, 7, 7, 3, 8]);
        a.max_rd_atomic = r.pick(&[1, 1, 4, 16, 0, 128, 129]);
        if r.pct(5) {
            a.port = r.pick(&[0, 2]);
        }
        if r.pct(5) {
            a.pkey_index = 500;
        }
        if r.pct(5) {
            // An entry empty on both devices. Not 1: which entries hold a GID depends on the
            // netdev's addresses and RoCE versions. rxe0 in the lane holds one at 1 (an
            // INIT->RTR naming it is EINVAL there, from what the kernel resolves for that GID,
            // not the ENODATA of an empty entry); the software device holds one GID, at 0.
            a.sgid_index = 200;
        }
        if r.pct(4) {
            a.av_port = 2;
        }
        if r.pct(4) {
            a.is_global = false;
        }
        if ud && r.pct(10) {
            a.qkey = 0x8000_0001; // a controlled qkey (high bit): only privileged QPs
        }
        // The mask: a required bit dropped or a foreign one added now and then.
        if r.pct(8) {
            let bits: Vec<i32> = ALL_MASK_BITS
                .iter()
                .copied()
                .filter(|b| mask & b != 0)
                .collect();
            if !bits.is_empty() {
                mask &= !r.pick(&bits);
            }
        }
        if r.pct(8) {
            mask |= r.pick(&ALL_MASK_BITS);
        }
        if let Some(g) = self.qps.get_mut(qp) {
            g.state = next;
        }
        Step::ModifyQp { qp, a, mask }
    }
}

/// The steps of sequence `seed`: a prelude that most sequences have (a PD, a CQ, an MR, QPs
/// brought to RTS), then 4 to 12 verbs of any kind.
fn generate(seed: u64) -> Vec<Step> {
    let mut g = Gen {
        rng: Rng(seed),
        pds: 0,
        cqs: 0,
        mrs: 0,
        srqs: 0,
        qps: Vec::new(),
        ahs: 0,
    };
    let mut steps = Vec::new();
    // Most sequences start with what the rest needs: a PD, a CQ, an MR, QPs.
    if g.rng.pct(85) {
        steps.push(Step::AllocPd);
        steps.push(Step::CreateCq {
            cqe: Size::Lit(16),
            comp_vector_over: false,
        });
        steps.push(Step::RegMr {
            pd: 0,
            len: 4096,
            access: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC,
        });
        g.pds = 1;
        g.cqs = 1;
        g.mrs = 1;
        let qpts: Vec<u32> = (0..1 + g.rng.below(2))
            .map(|_| g.rng.pick(&[IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD]))
            .collect();
        if qpts.contains(&IBV_QPT_UD) || g.rng.pct(20) {
            steps.push(Step::CreateAh {
                pd: 0,
                sgid_index: 0,
                port: 1,
                is_global: true,
            });
            g.ahs = 1;
        }
        for qpt in qpts {
            steps.push(Step::CreateQp {
                pd: 0,
                send_cq: 0,
                recv_cq: 0,
                srq: None,
                qpt,
                send_wr: Size::Lit(16),
                recv_wr: Size::Lit(16),
                send_sge: Size::Lit(2),
                recv_sge: Size::Lit(2),
                inline: Size::Lit(g.rng.pick(&[0, 64])),
                sig_all: false,
            });
            g.qps.push(GenQp {
                qpt,
                state: IBV_QPS_RESET,
                peer: None,
            });
        }
        // And often connected at once, with receives posted, so that the rest moves data.
        for qp in 0..g.qps.len() {
            if g.rng.pct(70) {
                let dest = g.peer(qp);
                for _ in 0..3 {
                    steps.push(g.modify_qp(qp, true, dest));
                }
                if g.rng.pct(60) {
                    let wrs = (0..1 + g.rng.below(2)).map(|_| g.recv_sges(1)).collect();
                    steps.push(Step::PostRecv { qp, wrs });
                }
            }
        }
    }
    let n = steps.len() + 4 + g.rng.below(9);
    while steps.len() < n {
        for s in g.steps() {
            match &s {
                Step::AllocPd => g.pds += 1,
                Step::CreateCq { .. } => g.cqs += 1,
                Step::RegMr { .. } => g.mrs += 1,
                Step::CreateSrq { .. } => g.srqs += 1,
                Step::CreateAh { .. } => g.ahs += 1,
                _ => {}
            }
            steps.push(s);
        }
    }
    steps
}

// ---------------------------------------------------------------------------------------------
// Running a sequence on one device.
// ---------------------------------------------------------------------------------------------

/// What a step did, as both devices must agree on it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// The step named an object that does not exist, or was left out (the reason).
    Skipped(&'static str),
    /// Success, with what the verb reported back (actual sizes), if anything.
    Ok(Vec<u32>),
    /// The verb's errno.
    Err(i32),
    /// A post: its return value and which request `bad_wr` names (`None`: NULL; `Some(-1)`:
    /// not written).
    Post(i32, Option<i32>),
    /// A timing-decided exchange ([`Timed`]): the completions of its QPs as (0 for `a`, 1 for
    /// `b`; wr_id; status), in that order; the result of each modify it made (0 or the errno);
    /// the states of `a` and `b` at the end.
    Timed {
        wcs: Vec<(u8, u64, u32)>,
        modifies: Vec<i32>,
        states: [u32; 2],
    },
    /// After the last step: buffer `buf` (in order of registration) differs from `off` on,
    /// where it holds `bytes`.
    Memory {
        buf: usize,
        off: usize,
        bytes: Vec<u8>,
    },
}

/// A completion with the device's numbers replaced by the sequence's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wc {
    wr_id: u64,
    status: u32,
    opcode: u32,
    byte_len: u32,
    wc_flags: u32,
    imm: u32,
    /// The QP of the sequence (`usize::MAX`: none of them).
    qp: usize,
    /// UD: the sending QP of the sequence.
    src_qp: Option<usize>,
}

/// The completions of one CQ (by its index in the sequence).
type CqWcs = (usize, Vec<Wc>);

/// What a step produced: its outcome and the completions polled afterwards, per CQ.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StepResult {
    outcome: Outcome,
    wcs: Vec<CqWcs>,
}

/// A device the sequences run on, opened once.
struct Device {
    ctx: Context,
    gid: sys::ibv_gid,
    max_cqe: u32,
    max_qp_wr: u32,
    max_sge: u32,
    max_srq_wr: u32,
    max_srq_sge: u32,
    num_comp_vectors: i32,
}

impl Device {
    fn open(name: &str) -> Device {
        Device::new(Context::open(name).unwrap_or_else(|e| panic!("cannot open {name}: {e}")))
    }

    fn new(ctx: Context) -> Device {
        let mut gid = sys::ibv_gid { raw: [0; 16] };
        // SAFETY: a live context; `gid` valid for writes.
        unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, 0, &mut gid) }.expect("ibv_query_gid");
        let a = ctx.attr();
        Device {
            gid,
            max_cqe: a.max_cqe,
            max_qp_wr: a.max_qp_wr,
            max_sge: a.max_sge,
            max_srq_wr: a.max_srq_wr,
            max_srq_sge: a.max_srq_sge,
            num_comp_vectors: ctx.num_comp_vectors() as i32,
            ctx,
        }
    }
}

struct Mr {
    raw: *mut sys::ibv_mr,
    buf: *mut u8,
    len: u32,
}

struct Qp {
    raw: *mut sys::ibv_qp,
    qpt: u32,
    /// It reached RTR once, then went back to RESET: its PSNs no longer match its peer's.
    reconnected: bool,
    reached_rtr: bool,
}

/// The PD and MR the timed exchanges of a sequence share, with the MR's buffer.
type TimedPd = (*mut sys::ibv_pd, *mut sys::ibv_mr, Box<[u64]>);

/// The objects of one sequence on one device. Destroyed objects stay as `None`, so indices
/// keep naming the same object; buffers live until the end.
struct Run<'d> {
    dev: &'d Device,
    pds: Vec<Option<*mut sys::ibv_pd>>,
    cqs: Vec<Option<*mut sys::ibv_cq>>,
    mrs: Vec<Option<Mr>>,
    srqs: Vec<Option<*mut sys::ibv_srq>>,
    qps: Vec<Option<Qp>>,
    /// The number of every QP created, by index (destroyed ones included).
    qp_nums: Vec<u32>,
    ahs: Vec<Option<*mut sys::ibv_ah>>,
    bufs: Vec<Box<[u64]>>,
    /// The wr_ids of the receives posted (to tell their completions from the sends').
    recv_ids: std::collections::HashSet<u64>,
    /// The buffer ranges of every receive posted (a send may be placed there).
    recv_ranges: Vec<(u64, u64)>,
    /// What an SGE of a missing MR points at: an inline send reads it without a key.
    scratch: Box<[u64]>,
    /// The PD and the MR (over its own buffer) that the timed exchanges of the sequence share,
    /// made by the first; each exchange makes its own CQ and QPs.
    timed_pd: std::cell::RefCell<Option<TimedPd>>,
    /// The work requests posted and not completed yet, as (QP index, wr_id): every send is
    /// signaled, and a receive posted to a QP's own receive queue completes on that QP (one
    /// posted to an SRQ is not counted). A QP in ERR flushes all of its own.
    pending: std::cell::RefCell<std::collections::HashSet<(usize, u64)>>,
}

fn live<T: Copy>(v: &[Option<T>], i: usize) -> Option<T> {
    v.get(i).copied().flatten()
}

fn res<T>(r: Result<T, i32>, ok: impl FnOnce(T) -> Vec<u32>) -> Outcome {
    match r {
        Ok(v) => Outcome::Ok(ok(v)),
        Err(e) => Outcome::Err(e),
    }
}

/// Destroys object `i` of the sequence's objects of one kind with `destroy`: skipped (for
/// `missing`) when it is not live, forgotten once destroyed.
fn destroy<T, R>(
    objects: &mut [Option<T>],
    i: usize,
    missing: &'static str,
    destroy: impl FnOnce(&T) -> Result<R, i32>,
) -> Outcome {
    let Some(o) = objects.get(i).and_then(|o| o.as_ref()) else {
        return Outcome::Skipped(missing);
    };
    let r = destroy(o);
    if r.is_ok() {
        objects[i] = None;
    }
    res(r, |_| vec![])
}

fn zeroed<T>() -> T {
    // SAFETY: used only for the plain C structs of libibverbs, for which all-zero is valid.
    unsafe { std::mem::zeroed() }
}

impl<'d> Run<'d> {
    fn new(dev: &'d Device) -> Self {
        Run {
            dev,
            pds: Vec::new(),
            cqs: Vec::new(),
            mrs: Vec::new(),
            srqs: Vec::new(),
            qps: Vec::new(),
            qp_nums: Vec::new(),
            ahs: Vec::new(),
            bufs: Vec::new(),
            scratch: vec![0; SLACK / 8].into_boxed_slice(),
            timed_pd: Default::default(),
            pending: Default::default(),
            recv_ids: Default::default(),
            recv_ranges: Vec::new(),
        }
    }

    fn qp_index(&self, num: u32) -> usize {
        self.qp_nums
            .iter()
            .rposition(|&n| n == num)
            .unwrap_or(usize::MAX)
    }

    fn query(&self, qp: *mut sys::ibv_qp) -> sys::ibv_qp_attr {
        let mut a: sys::ibv_qp_attr = zeroed();
        let mut i: sys::ibv_qp_init_attr = zeroed();
        // SAFETY: a live QP; out-pointers valid.
        unsafe { raw::ibv_query_qp(qp, &mut a, M_STATE, &mut i) }.expect("ibv_query_qp");
        a
    }

    fn sge(&self, s: &Sge) -> sys::ibv_sge {
        match self.mrs.get(s.mr).and_then(|m| m.as_ref()) {
            Some(m) => sys::ibv_sge {
                // Inside or past the buffer: the device checks it against the MR, and a length
                // past the region's end is refused before anything is touched.
                addr: m.buf as u64 + s.off as u64,
                length: s.len,
                // SAFETY: a live MR.
                lkey: unsafe { (*m.raw).lkey },
            },
            None => sys::ibv_sge {
                addr: self.scratch.as_ptr() as u64,
                length: s.len,
                lkey: NO_KEY,
            },
        }
    }

    /// Whether the completions of requests from `qp` would depend on timing (see the module
    /// docs) or on what rxe leaves undefined, judged on this device: the reason, or `None`.
    fn send_skip(&self, qp: &Qp, wrs: &[SendSpec]) -> Option<&'static str> {
        let a = self.query(qp.raw);
        if qp.qpt != IBV_QPT_UD && a.qp_state == IBV_QPS_RTS && !(1..=5).contains(&a.path_mtu) {
            // rxe takes path_mtu 0 and then has no MTU to cut messages with.
            return Some("path_mtu 0");
        }
        if qp.qpt != IBV_QPT_UD && a.qp_state == IBV_QPS_RTS {
            if let Some(why) = self.packet_by_packet(&a, wrs) {
                return Some(why);
            }
        }
        if qp.qpt != IBV_QPT_RC {
            return None;
        }
        if a.qp_state != IBV_QPS_RTS {
            // Refused and queued, or flushed: decided here, whatever happens later.
            return (a.qp_state != IBV_QPS_ERR).then_some("RC request queued below RTS");
        }
        if qp.reconnected {
            return Some("RC QP reconnected (PSNs)");
        }
        if a.rnr_retry != 0 {
            // The software device retries at once when a receive is posted, rxe when its RNR
            // timer fires, and either may retry between two steps.
            return Some("RC RNR retries are timed");
        }
        if a.timeout != 0 && a.timeout < 20 {
            return Some("RC retransmit timeout");
        }
        let di = self.qp_index(a.dest_qp_num);
        let Some(d) = self.qps.get(di).and_then(|d| d.as_ref()) else {
            return Some("RC destination missing");
        };
        let da = self.query(d.raw);
        let reads = wrs.iter().any(|w| {
            matches!(
                w.opcode,
                IBV_WR_RDMA_READ | IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
            )
        });
        if d.qpt != IBV_QPT_RC
            || !matches!(da.qp_state, IBV_QPS_RTR | IBV_QPS_RTS)
            || d.reconnected
            || da.dest_qp_num != qp_num(qp)
        {
            return Some("RC destination not ready or not paired");
        }
        if da.min_rnr_timer & 31 == 0 || da.min_rnr_timer & 31 > 14 {
            return Some("RC RNR timer long");
        }
        if reads && (a.max_rd_atomic == 0 || da.max_dest_rd_atomic == 0) {
            return Some("RC read/atomic without resources");
        }
        None
    }

    /// What rxe does packet by packet and the software device per message: a multi-packet RC
    /// or UC request (of `a`, its QP's attributes) whose source and destination overlap (rxe
    /// reads each packet after the one before was placed), whose SGEs fault after the first
    /// packet (rxe has sent the packets before), or whose destination has another path MTU (rxe
    /// checks the packet sizes against it).
    fn packet_by_packet(&self, a: &sys::ibv_qp_attr, wrs: &[SendSpec]) -> Option<&'static str> {
        let mtu = 128u64 << a.path_mtu;
        let dest_mtu = self
            .qps
            .get(self.qp_index(a.dest_qp_num))
            .and_then(|d| d.as_ref())
            .map(|d| self.query(d.raw).path_mtu);
        let local = |w: &SendSpec| -> Vec<(u64, u64)> {
            w.sges
                .iter()
                .map(|s| self.sge(s))
                .map(|s| (s.addr, s.addr + u64::from(s.length)))
                .collect()
        };
        for w in wrs {
            let len: u64 = w.sges.iter().map(|s| u64::from(s.len)).sum();
            if len <= mtu.min(128 << dest_mtu.unwrap_or(a.path_mtu).clamp(1, 5)) {
                continue;
            }
            if dest_mtu.is_some_and(|m| m != a.path_mtu) {
                return Some("peers with different path MTUs, multi-packet");
            }
            let faults = w.sges.iter().any(|s| {
                self.mrs
                    .get(s.mr)
                    .and_then(|m| m.as_ref())
                    .is_none_or(|m| s.off + s.len > m.len)
            });
            if faults {
                return Some("an SGE faults in a multi-packet request");
            }
            let remote = match self.mrs.get(w.remote.0).and_then(|m| m.as_ref()) {
                Some(m) => {
                    let at = m.buf as u64 + u64::from(w.remote.1);
                    vec![(at, at + len)]
                }
                None => vec![],
            };
            let (from, to) = match w.opcode {
                IBV_WR_SEND | IBV_WR_SEND_WITH_IMM => (local(w), self.recv_ranges.clone()),
                IBV_WR_RDMA_READ => (remote, local(w)),
                _ => (local(w), remote),
            };
            let overlap = from
                .iter()
                .any(|f| to.iter().any(|t| f.0 < t.1 && t.0 < f.1));
            if overlap {
                return Some("source and destination overlap, multi-packet");
            }
        }
        None
    }

    /// Runs `step`; `send_skip` is whether a post is left out, as judged on the reference
    /// device (`None`: judge it here).
    fn step(
        &mut self,
        step: &Step,
        seq_step: usize,
        send_skip: Option<Option<&'static str>>,
    ) -> Outcome {
        let ctx = self.dev.ctx.as_raw();
        match *step {
            Step::AllocPd => {
                // SAFETY: a live context.
                let r = unsafe { raw::ibv_alloc_pd(ctx) };
                self.pds.push(r.ok().map(|p| p.as_ptr()));
                res(r, |_| vec![])
            }
            Step::DeallocPd { pd } => destroy(&mut self.pds, pd, "no such PD", |&p| {
                // SAFETY: a live PD.
                unsafe { raw::ibv_dealloc_pd(p) }
            }),
            Step::CreateCq {
                cqe,
                comp_vector_over,
            } => {
                let cqe = cqe.resolve(self.dev.max_cqe) as i32;
                let cv = if comp_vector_over {
                    self.dev.num_comp_vectors
                } else {
                    0
                };
                // SAFETY: a live context.
                let r =
                    unsafe { raw::ibv_create_cq(ctx, cqe, ptr::null_mut(), ptr::null_mut(), cv) };
                self.cqs.push(r.ok().map(|p| p.as_ptr()));
                // SAFETY: a live CQ.
                res(r, |cq| vec![unsafe { (*cq.as_ptr()).cqe } as u32])
            }
            Step::DestroyCq { cq } => destroy(&mut self.cqs, cq, "no such CQ", |&c| {
                // SAFETY: a live CQ.
                unsafe { raw::ibv_destroy_cq(c) }
            }),
            Step::RegMr { pd, len, access } => {
                let Some(p) = live(&self.pds, pd) else {
                    self.mrs.push(None);
                    return Outcome::Skipped("no such PD");
                };
                // Filled with a pattern both devices see alike.
                // Allocated with room beyond the region: an inline send reads its SGEs without
                // checking them against the MR.
                let mut mem: Box<[u64]> = (0..(len as usize + SLACK).div_ceil(8) as u64)
                    .map(|i| i.wrapping_mul(0x0101_0101_0101_0101))
                    .collect();
                let buf = mem.as_mut_ptr() as *mut u8;
                self.bufs.push(mem);
                // SAFETY: a live PD; the buffer stays allocated until the end of the sequence,
                // after every MR and QP is gone.
                let r = unsafe { raw::ibv_reg_mr(p, buf.cast(), len as usize, access) };
                self.mrs.push(r.ok().map(|m| Mr {
                    raw: m.as_ptr(),
                    buf,
                    len,
                }));
                res(r, |_| vec![])
            }
            Step::DeregMr { mr } => destroy(&mut self.mrs, mr, "no such MR", |m| {
                // SAFETY: a live MR.
                unsafe { raw::ibv_dereg_mr(m.raw) }
            }),
            Step::CreateSrq {
                pd,
                max_wr,
                max_sge,
                srq_limit,
            } => {
                let Some(p) = live(&self.pds, pd) else {
                    self.srqs.push(None);
                    return Outcome::Skipped("no such PD");
                };
                let mut attr = sys::ibv_srq_init_attr {
                    srq_context: ptr::null_mut(),
                    attr: sys::ibv_srq_attr {
                        max_wr: max_wr.resolve(self.dev.max_srq_wr),
                        max_sge: max_sge.resolve(self.dev.max_srq_sge),
                        srq_limit,
                    },
                };
                // SAFETY: a live PD; attr valid.
                let r = unsafe { raw::ibv_create_srq(p, &mut attr) };
                self.srqs.push(r.ok().map(|s| s.as_ptr()));
                res(r, |_| vec![attr.attr.max_wr, attr.attr.max_sge])
            }
            Step::ModifySrq {
                srq,
                mask,
                max_wr,
                srq_limit,
            } => {
                let Some(s) = live(&self.srqs, srq) else {
                    return Outcome::Skipped("no such SRQ");
                };
                let mut attr = sys::ibv_srq_attr {
                    max_wr,
                    max_sge: 0,
                    srq_limit,
                };
                // SAFETY: a live SRQ; attr valid.
                res(
                    unsafe { raw::ibv_modify_srq(s, &mut attr, mask) },
                    |_| vec![],
                )
            }
            Step::DestroySrq { srq } => destroy(&mut self.srqs, srq, "no such SRQ", |&s| {
                // SAFETY: a live SRQ.
                unsafe { raw::ibv_destroy_srq(s) }
            }),
            Step::CreateQp {
                pd,
                send_cq,
                recv_cq,
                srq,
                qpt,
                send_wr,
                recv_wr,
                send_sge,
                recv_sge,
                inline,
                sig_all,
            } => {
                let objs = (
                    live(&self.pds, pd),
                    live(&self.cqs, send_cq),
                    live(&self.cqs, recv_cq),
                    srq.map(|s| live(&self.srqs, s)),
                );
                let (Some(p), Some(scq), Some(rcq), srq) = objs else {
                    self.qps.push(None);
                    self.qp_nums.push(NO_QPN);
                    return Outcome::Skipped("no such PD or CQ");
                };
                let srq = match srq {
                    None => ptr::null_mut(),
                    Some(Some(s)) => s,
                    Some(None) => {
                        self.qps.push(None);
                        self.qp_nums.push(NO_QPN);
                        return Outcome::Skipped("no such SRQ");
                    }
                };
                let d = self.dev;
                let mut attr = sys::ibv_qp_init_attr {
                    qp_context: ptr::null_mut(),
                    send_cq: scq,
                    recv_cq: rcq,
                    srq,
                    cap: sys::ibv_qp_cap {
                        max_send_wr: send_wr.resolve(d.max_qp_wr),
                        max_recv_wr: recv_wr.resolve(d.max_qp_wr),
                        max_send_sge: send_sge.resolve(d.max_sge),
                        max_recv_sge: recv_sge.resolve(d.max_sge),
                        max_inline_data: inline.resolve(512),
                    },
                    qp_type: qpt,
                    sq_sig_all: sig_all as i32,
                };
                // SAFETY: a live PD; the CQs and SRQ are live objects of its context.
                let r = unsafe { raw::ibv_create_qp(p, &mut attr) };
                match r {
                    Ok(q) => {
                        // SAFETY: a live QP.
                        self.qp_nums.push(unsafe { (*q.as_ptr()).qp_num });
                        self.qps.push(Some(Qp {
                            raw: q.as_ptr(),
                            qpt,
                            reconnected: false,
                            reached_rtr: false,
                        }));
                        let c = attr.cap;
                        // A value asked over the device's limit and reported back as asked
                        // (with an SRQ, the receive caps) is the device's own: not compared.
                        let asked = [send_wr, recv_wr, send_sge, recv_sge, inline];
                        let got = [
                            c.max_send_wr,
                            c.max_recv_wr,
                            c.max_send_sge,
                            c.max_recv_sge,
                            c.max_inline_data,
                        ];
                        let limits = [d.max_qp_wr, d.max_qp_wr, d.max_sge, d.max_sge, 512];
                        Outcome::Ok(
                            (0..5)
                                .map(|i| match asked[i] {
                                    Size::OverLimit if got[i] == asked[i].resolve(limits[i]) => {
                                        u32::MAX
                                    }
                                    _ => got[i],
                                })
                                .collect(),
                        )
                    }
                    Err(e) => {
                        self.qps.push(None);
                        self.qp_nums.push(NO_QPN);
                        Outcome::Err(e)
                    }
                }
            }
            Step::ModifyQp { qp, a, mask } => {
                let Some(q) = self.qps.get(qp).and_then(|q| q.as_ref()) else {
                    return Outcome::Skipped("no such QP");
                };
                let mut attr: sys::ibv_qp_attr = zeroed();
                attr.qp_state = a.state;
                attr.cur_qp_state = a.state;
                attr.pkey_index = a.pkey_index;
                attr.port_num = a.port;
                attr.qkey = a.qkey;
                attr.qp_access_flags = a.access as u32;
                attr.ah_attr.is_global = a.is_global as u8;
                attr.ah_attr.port_num = a.av_port;
                attr.ah_attr.grh.dgid = self.dev.gid;
                attr.ah_attr.grh.sgid_index = a.sgid_index;
                attr.ah_attr.grh.hop_limit = 1;
                attr.path_mtu = a.path_mtu;
                attr.dest_qp_num = self.qp_nums.get(a.dest).copied().unwrap_or(NO_QPN);
                attr.rq_psn = PSN;
                attr.sq_psn = PSN;
                attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
                attr.min_rnr_timer = a.min_rnr_timer;
                attr.timeout = a.timeout;
                attr.retry_cnt = a.retry_cnt;
                attr.rnr_retry = a.rnr_retry;
                attr.max_rd_atomic = a.max_rd_atomic;
                attr.alt_port_num = 1;
                // SAFETY: a live QP; attr valid.
                let r = unsafe { raw::ibv_modify_qp(q.raw, &mut attr, mask) };
                if r.is_ok() && mask & M_STATE != 0 && a.state == IBV_QPS_SQD {
                    // rxe drains the send queue in its requester task: until it ran, the QP
                    // reports sq_draining and refuses to leave SQD but for ERR. Waited for
                    // here, as an application does; the software device drains at once.
                    let deadline = Instant::now() + WAIT;
                    while self.query(q.raw).sq_draining != 0 && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                if r.is_ok() && mask & M_STATE != 0 {
                    let q = self.qps[qp].as_mut().unwrap();
                    match a.state {
                        IBV_QPS_RTR => q.reached_rtr = true,
                        IBV_QPS_RESET if q.reached_rtr => q.reconnected = true,
                        _ => {}
                    }
                }
                res(r, |_| vec![])
            }
            Step::DestroyQp { qp } => destroy(&mut self.qps, qp, "no such QP", |q| {
                // SAFETY: a live QP.
                unsafe { raw::ibv_destroy_qp(q.raw) }
            }),
            Step::CreateAh {
                pd,
                sgid_index,
                port,
                is_global,
            } => {
                let Some(p) = live(&self.pds, pd) else {
                    self.ahs.push(None);
                    return Outcome::Skipped("no such PD");
                };
                let mut attr: sys::ibv_ah_attr = zeroed();
                attr.grh.dgid = self.dev.gid;
                attr.grh.sgid_index = sgid_index;
                attr.grh.hop_limit = 1;
                attr.is_global = is_global as u8;
                attr.port_num = port;
                // SAFETY: a live PD; attr valid.
                let r = unsafe { raw::ibv_create_ah(p, &mut attr) };
                self.ahs.push(r.ok().map(|a| a.as_ptr()));
                res(r, |_| vec![])
            }
            Step::DestroyAh { ah } => destroy(&mut self.ahs, ah, "no such AH", |&a| {
                // SAFETY: a live AH.
                unsafe { raw::ibv_destroy_ah(a) }
            }),
            Step::QueryGid { index } => {
                let mut gid = sys::ibv_gid { raw: [0; 16] };
                // SAFETY: a live context; `gid` valid for writes.
                res(
                    unsafe { raw::ibv_query_gid(ctx, 1, index, &mut gid) },
                    |_| vec![],
                )
            }
            Step::PostRecv { qp, ref wrs } => {
                let Some(q) = self.qps.get(qp).and_then(|q| q.as_ref()) else {
                    return Outcome::Skipped("no such QP");
                };
                let raw_qp = q.raw;
                // SAFETY: a live QP.
                let own_rq = unsafe { (*raw_qp).srq }.is_null();
                if own_rq && self.query(raw_qp).qp_state == IBV_QPS_ERR {
                    // rxe's provider puts it on the queue without a word to the kernel: it is
                    // flushed if rxe's responder task runs again (the one the move to ERR
                    // scheduled, when the host held it back until now), else never. Timing,
                    // not a rule of the device.
                    return Outcome::Skipped("receive posted in ERR");
                }
                let mut list = self.recv_list(wrs, seq_step);
                let head = list.head();
                let mut bad = ptr::dangling_mut::<sys::ibv_recv_wr>();
                // SAFETY: a live QP; the list and its SGE arrays live for the call; the buffers
                // live until the end of the sequence.
                let rc = unsafe { sys::ibv_post_recv(raw_qp, head, &mut bad) };
                let idx = list.index_of(bad);
                if own_rq {
                    self.posted(qp, seq_step, wrs.len(), rc, idx);
                }
                Outcome::Post(rc, idx)
            }
            Step::PostSrqRecv { srq, ref wrs } => {
                let Some(s) = live(&self.srqs, srq) else {
                    return Outcome::Skipped("no such SRQ");
                };
                let mut list = self.recv_list(wrs, seq_step);
                let head = list.head();
                let mut bad = ptr::dangling_mut::<sys::ibv_recv_wr>();
                // SAFETY: as for PostRecv.
                let rc = unsafe { sys::ibv_post_srq_recv(s, head, &mut bad) };
                Outcome::Post(rc, list.index_of(bad))
            }
            Step::Timed(t) => self.timed(t),
            Step::Reconnect { qp, psn } => self.reconnect(qp, psn),
            Step::PostSend { qp, ref wrs } => {
                let Some(q) = self.qps.get(qp).and_then(|q| q.as_ref()) else {
                    return Outcome::Skipped("no such QP");
                };
                let skip = match send_skip {
                    Some(s) => s,
                    None => self.send_skip(q, wrs),
                };
                if let Some(why) = skip {
                    return Outcome::Skipped(why);
                }
                let raw_qp = q.raw;
                let mut sges: Vec<Vec<sys::ibv_sge>> = wrs
                    .iter()
                    .map(|w| w.sges.iter().map(|s| self.sge(s)).collect())
                    .collect();
                let mut list: Vec<sys::ibv_send_wr> = Vec::with_capacity(wrs.len());
                for (k, w) in wrs.iter().enumerate() {
                    let mut wr: sys::ibv_send_wr = zeroed();
                    wr.wr_id = (seq_step * 8 + k) as u64;
                    wr.opcode = w.opcode;
                    wr.send_flags = w.flags;
                    wr.sg_list = sges[k].as_mut_ptr();
                    wr.num_sge = sges[k].len() as i32;
                    wr.imm_data_invalidated_rkey_union.imm_data =
                        (0x1000 + seq_step as u32).to_be();
                    let (raddr, rkey) = match self.mrs.get(w.remote.0).and_then(|m| m.as_ref()) {
                        // SAFETY: a live MR.
                        Some(m) => (m.buf as u64 + w.remote.1 as u64, unsafe { (*m.raw).rkey }),
                        None => (self.scratch.as_ptr() as u64, NO_KEY),
                    };
                    if q.qpt == IBV_QPT_UD {
                        // rxe's provider reads the AH of every request of a UD QP, whatever
                        // its opcode: a request without one would be a NULL dereference there,
                        // not something to compare.
                        let Some(ah) = live(&self.ahs, w.ah) else {
                            return Outcome::Skipped("UD request without an AH");
                        };
                        wr.wr.ud = sys::ud_t {
                            ah,
                            remote_qpn: self.qp_nums.get(w.dest).copied().unwrap_or(NO_QPN),
                            remote_qkey: if w.qkey_ok { QKEY } else { QKEY ^ 1 },
                        };
                    } else if matches!(
                        w.opcode,
                        IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
                    ) {
                        wr.wr.atomic = sys::atomic_t {
                            remote_addr: raddr,
                            compare_add: 0x0101_0101_0101_0101,
                            swap: 0x5555,
                            rkey,
                        };
                    } else {
                        wr.wr.rdma = sys::rdma_t {
                            remote_addr: raddr,
                            rkey,
                        };
                    }
                    list.push(wr);
                }
                for k in (0..list.len().saturating_sub(1)).rev() {
                    let next: *mut sys::ibv_send_wr = &mut list[k + 1];
                    list[k].next = next;
                }
                let mut bad = ptr::dangling_mut::<sys::ibv_send_wr>();
                let head: *mut sys::ibv_send_wr = &mut list[0];
                // SAFETY: a live QP; the list and its SGE arrays live for the call; every
                // buffer a request names lives until the end of the sequence.
                let rc = unsafe { sys::ibv_post_send(raw_qp, head, &mut bad) };
                let idx = if bad == ptr::dangling_mut() {
                    Some(-1)
                } else if bad.is_null() {
                    None
                } else {
                    Some(
                        list.iter()
                            .position(|w| ptr::eq(w, bad))
                            .map_or(-2, |i| i as i32),
                    )
                };
                drop(sges);
                self.posted(qp, seq_step, wrs.len(), rc, idx);
                Outcome::Post(rc, idx)
            }
        }
    }

    /// Runs a [`Step::Reconnect`]: `qp` and its peer to RESET, then INIT, RTR and RTS towards
    /// each other with `psn` both ways (no RNR retries and no retransmit timer, as the
    /// comparison's RC sends need). Their requests and receives went with the RESET.
    fn reconnect(&mut self, qp: usize, psn: u32) -> Outcome {
        let Some(q) = self.qps.get(qp).and_then(|q| q.as_ref()) else {
            return Outcome::Skipped("no such QP");
        };
        if q.qpt != IBV_QPT_RC {
            return Outcome::Skipped("reconnect: not RC");
        }
        let a = self.query(q.raw);
        let pi = self.qp_index(a.dest_qp_num);
        let Some(p) = self.qps.get(pi).and_then(|p| p.as_ref()) else {
            return Outcome::Skipped("reconnect: no peer");
        };
        if p.qpt != IBV_QPT_RC || self.query(p.raw).dest_qp_num != qp_num(q) {
            return Outcome::Skipped("reconnect: not a pair");
        }
        let (qa, qb) = (q.raw, p.raw);
        let (na, nb) = (qp_num(q), qp_num(p));
        let gid = self.dev.gid;
        // A QP connected to itself is one QP to reconnect.
        let ends = if qa == qb { 1 } else { 2 };
        let run = || -> Result<(), i32> {
            for r in [qa, qb].into_iter().take(ends) {
                t_state(r, IBV_QPS_RESET)?;
            }
            for (r, dest) in [(qa, nb), (qb, na)].into_iter().take(ends) {
                t_init(r, LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC)?;
                t_rtr(r, dest, gid, psn, 1)?;
                t_rts(r, psn, 0, 7, 0)?;
            }
            Ok(())
        };
        let r = run();
        self.pending
            .borrow_mut()
            .retain(|&(i, _)| i != qp && i != pi);
        for i in [qp, pi] {
            if let Some(q) = self.qps[i].as_mut() {
                q.reconnected = r.is_err();
                q.reached_rtr = true;
            }
        }
        res(r, |_| vec![])
    }

    /// Runs a [`Step::Timed`] exchange on a CQ and QPs of its own, destroyed before it returns
    /// (the PD and MR are the sequence's timed ones, made by the first exchange).
    fn timed(&self, t: Timed) -> Outcome {
        let ctx = self.dev.ctx.as_raw();
        let gid = self.dev.gid;
        let mut shared = self.timed_pd.borrow_mut();
        let (pd, mr, _) = *shared.get_or_insert_with(|| {
            let mut mem: Box<[u64]> = vec![0u64; 4096 / 8].into_boxed_slice();
            // SAFETY: a live context; the PD and MR are destroyed by `cleanup`, before the
            // buffer, which moves with them into `timed_pd`.
            unsafe {
                let pd = raw::ibv_alloc_pd(ctx)
                    .expect("timed: ibv_alloc_pd")
                    .as_ptr();
                let mr = raw::ibv_reg_mr(pd, mem.as_mut_ptr().cast(), 4096, LOCAL_WRITE)
                    .expect("timed: ibv_reg_mr")
                    .as_ptr();
                (pd, mr, mem)
            }
        });
        // SAFETY: a live context and PD; the CQ and QPs made here are destroyed before this
        // returns, the QPs first.
        unsafe {
            let cq = raw::ibv_create_cq(ctx, 64, ptr::null_mut(), ptr::null_mut(), 0)
                .expect("timed: ibv_create_cq")
                .as_ptr();
            let mut init = sys::ibv_qp_init_attr {
                qp_context: ptr::null_mut(),
                send_cq: cq,
                recv_cq: cq,
                srq: ptr::null_mut(),
                cap: sys::ibv_qp_cap {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                qp_type: IBV_QPT_RC,
                sq_sig_all: 0,
            };
            let a = raw::ibv_create_qp(pd, &mut init)
                .expect("timed: ibv_create_qp")
                .as_ptr();
            let b = raw::ibv_create_qp(pd, &mut init)
                .expect("timed: ibv_create_qp")
                .as_ptr();
            let x = Exchange {
                a,
                b,
                cq,
                gid,
                sge: sys::ibv_sge {
                    addr: (*mr).addr as u64,
                    length: 16,
                    lkey: (*mr).lkey,
                },
                wcs: Vec::new(),
                modifies: Vec::new(),
            };
            let o = x.run(t);
            for q in [a, b] {
                raw::ibv_destroy_qp(q).expect("timed: ibv_destroy_qp");
            }
            raw::ibv_destroy_cq(cq).expect("timed: ibv_destroy_cq");
            o
        }
    }

    /// Counts the work requests of a post to QP `qp` that the device took (all of them, or those
    /// before `bad_wr`) as pending.
    fn posted(&self, qp: usize, seq_step: usize, n: usize, rc: i32, bad: Option<i32>) {
        let took = match (rc, bad) {
            (0, _) => n,
            (_, Some(k)) if k >= 0 => k as usize,
            _ => 0,
        };
        self.pending
            .borrow_mut()
            .extend((0..took).map(|k| (qp, (seq_step * 8 + k) as u64)));
    }

    /// The live QPs in ERR with no work request pending: all flushed.
    fn flushed_qps(&self) -> Vec<usize> {
        let pending = self.pending.borrow();
        (0..self.qps.len())
            .filter(|&i| {
                self.qps[i]
                    .as_ref()
                    .is_some_and(|q| self.query(q.raw).qp_state == IBV_QPS_ERR)
                    && !pending.iter().any(|&(p, _)| p == i)
            })
            .collect()
    }

    /// Waits, at most until `deadline`, for every QP of `qps` still live and in ERR to have
    /// completed each work request pending on it (rxe flushes them in its completer and
    /// responder tasks, after the modify or the error returned); polls every CQ meanwhile, into
    /// `got` by CQ index.
    fn drain(&self, qps: &[usize], deadline: Instant, got: &mut [Vec<Wc>]) {
        loop {
            let waiting = qps.iter().any(|&i| {
                self.qps.get(i).and_then(|q| q.as_ref()).is_some_and(|q| {
                    self.pending.borrow().iter().any(|&(p, _)| p == i)
                        && self.query(q.raw).qp_state == IBV_QPS_ERR
                })
            });
            let mut n = 0;
            for (i, cq) in self.cqs.iter().enumerate() {
                if let Some(cq) = *cq {
                    n += self.poll(cq, &mut got[i]);
                }
            }
            if !waiting || Instant::now() >= deadline {
                break;
            }
            if n == 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    fn recv_list(&mut self, wrs: &[Vec<Sge>], seq_step: usize) -> RecvList {
        self.recv_ids
            .extend((0..wrs.len()).map(|k| (seq_step * 8 + k) as u64));
        let ranges: Vec<(u64, u64)> = wrs
            .iter()
            .flatten()
            .map(|s| self.sge(s))
            .map(|s| (s.addr, s.addr + u64::from(s.length)))
            .collect();
        self.recv_ranges.extend(ranges);
        let sges: Vec<Vec<sys::ibv_sge>> = wrs
            .iter()
            .map(|w| w.iter().map(|s| self.sge(s)).collect())
            .collect();
        let mut l = RecvList {
            wrs: Vec::new(),
            _sges: sges,
        };
        for k in 0..wrs.len() {
            l.wrs.push(sys::ibv_recv_wr {
                wr_id: (seq_step * 8 + k) as u64,
                next: ptr::null_mut(),
                sg_list: l._sges[k].as_mut_ptr(),
                num_sge: l._sges[k].len() as i32,
            });
        }
        for k in (0..l.wrs.len().saturating_sub(1)).rev() {
            let next: *mut sys::ibv_recv_wr = &mut l.wrs[k + 1];
            l.wrs[k].next = next;
        }
        l
    }

    /// Polls every live CQ: everything there now, and on a real device (`expect` given) until
    /// each CQ has what the reference produced, and each QP of `flushed` that is in ERR has
    /// completed every work request pending on it, or [`WAIT`] passed. A snapshot is not
    /// enough: rxe reports the flushes of a QP moved to ERR (by a modify, or by an error of
    /// its own) from kernel tasks, some time after the verb returned, and a count per CQ alone
    /// may be met by the completions of another QP on the same CQ.
    fn settle(&self, expect: Option<&[CqWcs]>, flushed: &[usize]) -> Vec<CqWcs> {
        let deadline = Instant::now() + WAIT;
        let mut got: Vec<Vec<Wc>> = vec![Vec::new(); self.cqs.len()];
        for (i, cq) in self.cqs.iter().enumerate() {
            let Some(cq) = *cq else { continue };
            let want = expect
                .and_then(|e| e.iter().find(|(j, _)| *j == i))
                .map_or(0, |(_, w)| w.len());
            loop {
                let n = self.poll(cq, &mut got[i]);
                if n == 0 && (got[i].len() >= want || Instant::now() >= deadline) {
                    break;
                }
                if n == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        self.drain(flushed, deadline, &mut got);
        let mut out: Vec<CqWcs> = got.into_iter().enumerate().collect();
        out.retain(|(_, w)| !w.is_empty());
        // Completions keep their order within a work queue, not across queues (rxe flushes a
        // QP's send queue and its receive queue from different tasks): each CQ's completions
        // are grouped by QP and queue, in order within each.
        for (_, w) in out.iter_mut() {
            w.sort_by_key(|c| (c.qp, self.recv_ids.contains(&c.wr_id)));
        }
        out
    }

    fn poll(&self, cq: *mut sys::ibv_cq, out: &mut Vec<Wc>) -> usize {
        let mut wc: [sys::ibv_wc; 8] = zeroed();
        // SAFETY: a live CQ; `wc` holds 8 entries.
        let n = unsafe { sys::ibv_poll_cq(cq, 8, wc.as_mut_ptr()) };
        assert!(n >= 0, "ibv_poll_cq: {n}");
        for w in &wc[..n as usize] {
            self.pending
                .borrow_mut()
                .remove(&(self.qp_index(w.qp_num), w.wr_id));
            let ud_recv = w.status == sys::ibv_wc_status::IBV_WC_SUCCESS
                && w.opcode & sys::ibv_wc_opcode::IBV_WC_RECV != 0
                && self
                    .qps
                    .get(self.qp_index(w.qp_num))
                    .and_then(|q| q.as_ref())
                    .is_some_and(|q| q.qpt == IBV_QPT_UD);
            out.push(Wc {
                wr_id: w.wr_id,
                status: w.status,
                opcode: w.opcode,
                byte_len: w.byte_len,
                wc_flags: w.wc_flags,
                // SAFETY: a plain u32 either way.
                imm: if w.wc_flags & WC_WITH_IMM != 0 {
                    unsafe { w.imm_data_invalidated_rkey_union.imm_data }
                } else {
                    0
                },
                qp: self.qp_index(w.qp_num),
                src_qp: ud_recv.then(|| self.qp_index(w.src_qp)),
            });
        }
        n as usize
    }

    /// Destroys what the sequence left, children first; every destroy must succeed.
    fn cleanup(mut self) {
        if let Some((pd, mr, mem)) = self.timed_pd.take() {
            // SAFETY: the timed exchanges' MR and PD, which nothing uses any more (their QPs
            // are gone); the buffer goes after them.
            unsafe {
                raw::ibv_dereg_mr(mr).expect("cleanup: ibv_dereg_mr");
                raw::ibv_dealloc_pd(pd).expect("cleanup: ibv_dealloc_pd");
            }
            drop(mem);
        }
        for q in self.qps.iter_mut() {
            if let Some(q) = q.take() {
                // SAFETY: a live QP, destroyed once.
                unsafe { raw::ibv_destroy_qp(q.raw) }.expect("cleanup: ibv_destroy_qp");
            }
        }
        for a in self.ahs.iter_mut().filter_map(Option::take) {
            // SAFETY: a live AH, destroyed once.
            unsafe { raw::ibv_destroy_ah(a) }.expect("cleanup: ibv_destroy_ah");
        }
        for s in self.srqs.iter_mut().filter_map(Option::take) {
            // SAFETY: a live SRQ no QP uses any more.
            unsafe { raw::ibv_destroy_srq(s) }.expect("cleanup: ibv_destroy_srq");
        }
        for c in self.cqs.iter_mut().filter_map(Option::take) {
            // SAFETY: a live CQ no QP uses any more.
            unsafe { raw::ibv_destroy_cq(c) }.expect("cleanup: ibv_destroy_cq");
        }
        for m in self.mrs.iter_mut().filter_map(Option::take) {
            // SAFETY: a live MR no request uses any more (its QPs are gone).
            unsafe { raw::ibv_dereg_mr(m.raw) }.expect("cleanup: ibv_dereg_mr");
            let _ = m.len;
        }
        for p in self.pds.iter_mut().filter_map(Option::take) {
            // SAFETY: a live PD nothing uses any more.
            unsafe { raw::ibv_dealloc_pd(p) }.expect("cleanup: ibv_dealloc_pd");
        }
        // The buffers go last, with `self`.
    }

    /// The bytes of every buffer (what RDMA writes, reads, atomics and receives did to them),
    /// with the device's GID (in the GRH of a UD receive) replaced by zeros.
    fn memory(&self) -> Vec<Vec<u8>> {
        // SAFETY: plain bytes either way.
        let gid = unsafe { self.dev.gid.raw };
        self.bufs
            .iter()
            .map(|b| {
                // SAFETY: the buffer's own words, as bytes; nothing writes them any more (the
                // sequence is over and settled).
                let mut m =
                    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const u8, b.len() * 8) }
                        .to_vec();
                let mut i = 0;
                while i + 16 <= m.len() {
                    if m[i..i + 16] == gid {
                        m[i..i + 16].fill(0);
                        i += 16;
                    } else {
                        i += 1;
                    }
                }
                m
            })
            .collect()
    }
}

/// The modifies of a timed exchange and of a reconnect.
fn t_modify(q: *mut sys::ibv_qp, a: &mut sys::ibv_qp_attr, mask: i32) -> Result<(), i32> {
    // SAFETY: a live QP; `a` valid.
    unsafe { raw::ibv_modify_qp(q, a, mask) }
}

fn t_state(q: *mut sys::ibv_qp, state: u32) -> Result<(), i32> {
    let mut a: sys::ibv_qp_attr = zeroed();
    a.qp_state = state;
    t_modify(q, &mut a, M_STATE)
}

fn t_init(q: *mut sys::ibv_qp, access: i32) -> Result<(), i32> {
    let mut a: sys::ibv_qp_attr = zeroed();
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = access as u32;
    t_modify(q, &mut a, M_STATE | M_PKEY_INDEX | M_PORT | M_ACCESS_FLAGS)
}

fn t_rtr(
    q: *mut sys::ibv_qp,
    dest: u32,
    gid: sys::ibv_gid,
    psn: u32,
    min_rnr_timer: u8,
) -> Result<(), i32> {
    let mut a: sys::ibv_qp_attr = zeroed();
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = sys::ibv_mtu::IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = min_rnr_timer;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.hop_limit = 1;
    let mask = M_STATE
        | M_AV
        | M_PATH_MTU
        | M_DEST_QPN
        | M_RQ_PSN
        | M_MAX_DEST_RD_ATOMIC
        | M_MIN_RNR_TIMER;
    t_modify(q, &mut a, mask)
}

fn t_rts(
    q: *mut sys::ibv_qp,
    psn: u32,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
) -> Result<(), i32> {
    let mut a: sys::ibv_qp_attr = zeroed();
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn;
    a.timeout = timeout;
    a.retry_cnt = retry_cnt;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    let mask = M_STATE | M_SQ_PSN | M_TIMEOUT | M_RETRY_CNT | M_RNR_RETRY | M_MAX_QP_RD_ATOMIC;
    t_modify(q, &mut a, mask)
}

/// How long a timed exchange waits for its QPs' states to follow an error completion (rxe
/// writes the completion before it moves the QP to ERR).
const STATE_WAIT: Duration = Duration::from_secs(2);

/// One run of a [`Timed`] exchange on one device.
struct Exchange {
    a: *mut sys::ibv_qp,
    b: *mut sys::ibv_qp,
    cq: *mut sys::ibv_cq,
    gid: sys::ibv_gid,
    /// 16 bytes of the exchange's MR: what every send sends and every receive takes.
    sge: sys::ibv_sge,
    wcs: Vec<(u8, u64, u32)>,
    modifies: Vec<i32>,
}

impl Exchange {
    fn num(q: *mut sys::ibv_qp) -> u32 {
        // SAFETY: a live QP.
        unsafe { (*q).qp_num }
    }

    /// Records a modify's result.
    fn m(&mut self, r: Result<(), i32>) {
        self.modifies.push(r.err().unwrap_or(0));
    }

    fn connect(&mut self, q: *mut sys::ibv_qp, rnr_timer: u8, rts: (u8, u8, u8)) {
        let dest = Self::num(if q == self.a { self.b } else { self.a });
        let r = t_init(q, LOCAL_WRITE)
            .and_then(|_| t_rtr(q, dest, self.gid, PSN, rnr_timer))
            .and_then(|_| t_rts(q, PSN, rts.0, rts.1, rts.2));
        self.m(r);
    }

    fn send(&self, q: *mut sys::ibv_qp, wr_id: u64) {
        let mut sge = self.sge;
        let mut wr: sys::ibv_send_wr = zeroed();
        wr.wr_id = wr_id;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = SIGNALED;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        let mut bad = ptr::null_mut();
        // SAFETY: a live QP; the request and its SGE live for the call.
        let rc = unsafe { sys::ibv_post_send(q, &mut wr, &mut bad) };
        assert_eq!(rc, 0, "timed: ibv_post_send");
    }

    fn recv(&self, q: *mut sys::ibv_qp, wr_id: u64) {
        let mut sge = self.sge;
        let mut wr = sys::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: a live QP; the request and its SGE live for the call.
        let rc = unsafe { sys::ibv_post_recv(q, &mut wr, &mut bad) };
        assert_eq!(rc, 0, "timed: ibv_post_recv");
    }

    /// Polls until `n` completions in all arrived or [`WAIT`] passed, then [`QUIET`] more for
    /// any beyond them.
    fn wait(&mut self, n: usize) {
        let deadline = Instant::now() + WAIT;
        let mut quiet_from: Option<Instant> = None;
        loop {
            let mut wc: [sys::ibv_wc; 8] = zeroed();
            // SAFETY: a live CQ; `wc` holds 8 entries.
            let got = unsafe { sys::ibv_poll_cq(self.cq, 8, wc.as_mut_ptr()) };
            assert!(got >= 0, "ibv_poll_cq: {got}");
            let na = Self::num(self.a);
            for w in &wc[..got as usize] {
                self.wcs.push((u8::from(w.qp_num != na), w.wr_id, w.status));
            }
            let now = Instant::now();
            if self.wcs.len() >= n || now >= deadline {
                let since = *quiet_from.get_or_insert(now);
                if got == 0 && now >= since + QUIET {
                    break;
                }
            }
            if got == 0 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// A pause that rxe's timers (a jiffy, 4 ms) outlast and the software device's do not
    /// matter for: the outcome is the same either way.
    fn pause() {
        std::thread::sleep(Duration::from_millis(1));
    }

    fn state(q: *mut sys::ibv_qp) -> sys::ibv_qp_attr {
        let mut a: sys::ibv_qp_attr = zeroed();
        let mut i: sys::ibv_qp_init_attr = zeroed();
        // SAFETY: a live QP; out-pointers valid.
        unsafe { raw::ibv_query_qp(q, &mut a, M_STATE, &mut i) }.expect("ibv_query_qp");
        a
    }

    fn run(mut self, t: Timed) -> Outcome {
        let (a, b) = (self.a, self.b);
        // Completions expected in all.
        let n = match t {
            Timed::Unready {
                peer,
                sends,
                timeout,
                retry_cnt,
                ready,
            } => {
                self.connect(a, 1, (timeout, retry_cnt, 7));
                match peer {
                    IBV_QPS_INIT => self.m(t_init(b, LOCAL_WRITE)),
                    IBV_QPS_ERR => {
                        self.connect(b, 1, (0, 7, 7));
                        self.m(t_state(b, IBV_QPS_ERR));
                    }
                    _ => {}
                }
                for i in 0..sends {
                    self.send(a, u64::from(i));
                }
                if ready {
                    Self::pause();
                    if peer == IBV_QPS_ERR {
                        self.m(t_state(b, IBV_QPS_RESET));
                    }
                    if peer != IBV_QPS_INIT {
                        self.m(t_init(b, LOCAL_WRITE));
                    }
                    for i in 0..sends {
                        self.recv(b, 100 + u64::from(i));
                    }
                    self.m(t_rtr(b, Self::num(a), self.gid, PSN, 1));
                    2 * usize::from(sends)
                } else {
                    usize::from(sends)
                }
            }
            Timed::Rnr {
                sends,
                recvs,
                rnr_retry,
                min_rnr_timer,
            } => {
                self.connect(a, 1, (0, 7, rnr_retry));
                self.connect(b, min_rnr_timer, (0, 7, 0));
                for i in 0..recvs {
                    self.recv(b, 100 + u64::from(i));
                }
                for i in 0..sends {
                    self.send(a, u64::from(i));
                }
                if rnr_retry == 7 {
                    Self::pause();
                    for i in recvs..sends {
                        self.recv(b, 100 + u64::from(i));
                    }
                    2 * usize::from(sends)
                } else {
                    usize::from(sends + recvs)
                }
            }
            Timed::NoTimer => {
                self.connect(a, 1, (0, 7, 7));
                self.m(t_init(b, LOCAL_WRITE));
                self.recv(b, 100);
                self.recv(b, 101);
                self.send(a, 0);
                Self::pause();
                self.m(t_rtr(b, Self::num(a), self.gid, PSN, 1));
                Self::pause();
                self.send(a, 1);
                4
            }
            Timed::SqdAfterRnr { min_rnr_timer } => {
                self.connect(a, 1, (0, 7, 7));
                self.connect(b, min_rnr_timer, (0, 7, 0));
                self.send(a, 0);
                Self::pause();
                self.m(t_state(a, IBV_QPS_SQD));
                let deadline = Instant::now() + WAIT;
                while Self::state(a).sq_draining != 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(200));
                }
                self.recv(b, 100);
                self.recv(b, 101);
                self.m(t_state(a, IBV_QPS_RTS));
                self.send(a, 1);
                4
            }
            Timed::ForcedRts { timeout, retry_cnt } => {
                self.connect(a, 1, (0, 7, 0));
                self.connect(b, 1, (timeout, retry_cnt, 0));
                self.m(t_state(a, IBV_QPS_ERR));
                Self::pause();
                let mut attr: sys::ibv_qp_attr = zeroed();
                attr.qp_state = IBV_QPS_RTS;
                attr.cur_qp_state = IBV_QPS_RTS;
                let r = t_modify(a, &mut attr, M_STATE | M_CUR_STATE);
                self.m(r);
                self.recv(b, 100);
                self.send(a, 0);
                self.send(b, 1);
                3
            }
        };
        self.wait(n);
        self.wcs.sort_by_key(|&(q, id, _)| (q, id));
        // A QP whose request failed moves to ERR after the completion (on rxe, in its task).
        let deadline = Instant::now() + STATE_WAIT;
        for (i, q) in [a, b].into_iter().enumerate() {
            let failed = self
                .wcs
                .iter()
                .any(|&(w, _, st)| usize::from(w) == i && st != 0);
            while failed && Self::state(q).qp_state != IBV_QPS_ERR && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        Outcome::Timed {
            wcs: self.wcs,
            modifies: self.modifies,
            states: [Self::state(a).qp_state, Self::state(b).qp_state],
        }
    }
}

fn qp_num(q: &Qp) -> u32 {
    // SAFETY: a live QP.
    unsafe { (*q.raw).qp_num }
}

/// A receive list that owns its SGE arrays.
struct RecvList {
    wrs: Vec<sys::ibv_recv_wr>,
    _sges: Vec<Vec<sys::ibv_sge>>,
}

impl RecvList {
    fn head(&mut self) -> *mut sys::ibv_recv_wr {
        &mut self.wrs[0]
    }
    fn index_of(&self, bad: *mut sys::ibv_recv_wr) -> Option<i32> {
        if bad == ptr::dangling_mut() {
            Some(-1)
        } else if bad.is_null() {
            None
        } else {
            Some(
                self.wrs
                    .iter()
                    .position(|w| ptr::eq(w, bad))
                    .map_or(-2, |i| i as i32),
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing, checking, shrinking.
// ---------------------------------------------------------------------------------------------

/// What the sequences did, to show that they reach the verbs (printed with the result).
#[derive(Default)]
struct Stats {
    ok: usize,
    err: usize,
    skipped: usize,
    posts_ok: usize,
    reasons: std::collections::BTreeMap<String, usize>,
    completions: usize,
    error_completions: usize,
    /// Timing-decided exchanges ([`Timed`]) and reconnects run.
    timed: usize,
    reconnects: usize,
}

impl Stats {
    fn add(&mut self, r: &StepResult) {
        match r.outcome {
            Outcome::Ok(_) => self.ok += 1,
            Outcome::Err(_) => self.err += 1,
            Outcome::Skipped(w) => {
                self.skipped += 1;
                *self.reasons.entry(w.to_string()).or_default() += 1;
            }
            Outcome::Post(0, _) => self.posts_ok += 1,
            Outcome::Memory { .. } => {}
            Outcome::Timed { ref wcs, .. } => {
                self.ok += 1;
                self.timed += 1;
                self.completions += wcs.len();
                for &(_, _, st) in wcs {
                    self.error_completions += usize::from(st != 0);
                    *self
                        .reasons
                        .entry(format!("timed wc status {st}"))
                        .or_default() += 1;
                }
            }
            Outcome::Post(rc, _) => {
                self.err += 1;
                *self.reasons.entry(format!("post {rc}")).or_default() += 1;
            }
        }
        for w in r.wcs.iter().flat_map(|(_, w)| w) {
            self.completions += 1;
            if w.status != 0 {
                self.error_completions += 1;
            }
            *self
                .reasons
                .entry(format!("wc status {} opcode {}", w.status, w.opcode))
                .or_default() += 1;
        }
    }
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        self.ok += o.ok;
        self.err += o.err;
        self.skipped += o.skipped;
        self.posts_ok += o.posts_ok;
        self.completions += o.completions;
        self.error_completions += o.error_completions;
        self.timed += o.timed;
        self.reconnects += o.reconnects;
        for (k, v) in o.reasons {
            *self.reasons.entry(k).or_default() += v;
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "steps: {} ok, {} errno, {} skipped, {} posts ok, {} timed exchanges, {} reconnects; \
             {} completions ({} with an error status)",
            self.ok,
            self.err,
            self.skipped,
            self.posts_ok,
            self.timed,
            self.reconnects,
            self.completions,
            self.error_completions
        )?;
        if std::env::var_os("TYPED_VERBS_DIFF_VERBOSE").is_some() {
            write!(f, "; {:?}", self.reasons)?;
        }
        write!(f, "")
    }
}

/// Where two devices first disagreed.
struct Divergence {
    step: usize,
    reference: StepResult,
    other: StepResult,
}

/// Runs `steps` in lockstep on `a` (the reference, sw0) and `b`; the first step whose results
/// differ. The final state of the buffers is compared as one more step.
fn compare(a: &Device, b: &Device, steps: &[Step], stats: &mut Stats) -> Option<Divergence> {
    let mut ra = Run::new(a);
    let mut rb = Run::new(b);
    let mut found = None;
    for (i, s) in steps.iter().enumerate() {
        // Posts are judged for timing on the reference, and the same decision applies to
        // the other device.
        let send_skip = match s {
            Step::PostSend { qp, wrs } => ra
                .qps
                .get(*qp)
                .and_then(|q| q.as_ref())
                .map(|q| ra.send_skip(q, wrs)),
            _ => None,
        };
        let oa = ra.step(s, i, send_skip);
        let ob = rb.step(s, i, send_skip);
        let wa = ra.settle(None, &[]);
        // The QPs whose every request the reference completed (flushed) at this step: the
        // other device is waited for until it completed theirs too.
        let wb = rb.settle(Some(&wa), &ra.flushed_qps());
        let (x, y) = (
            StepResult {
                outcome: oa,
                wcs: wa,
            },
            StepResult {
                outcome: ob,
                wcs: wb,
            },
        );
        stats.add(&x);
        stats.reconnects +=
            usize::from(matches!(s, Step::Reconnect { .. }) && matches!(x.outcome, Outcome::Ok(_)));
        if x != y {
            found = Some(Divergence {
                step: i,
                reference: x,
                other: y,
            });
            break;
        }
    }
    if found.is_none() {
        // Completions the real device made later than the reference: a step's extra ones show
        // at the next step, the last step's here.
        std::thread::sleep(QUIET);
        let late = rb.settle(None, &[]);
        if !late.is_empty() {
            found = Some(Divergence {
                step: steps.len(),
                reference: StepResult {
                    outcome: Outcome::Skipped("late completions"),
                    wcs: vec![],
                },
                other: StepResult {
                    outcome: Outcome::Skipped("late completions"),
                    wcs: late,
                },
            });
        }
    }
    if found.is_none() {
        // The buffers at the end: the first byte that differs, with what follows it.
        let (ma, mb) = (ra.memory(), rb.memory());
        let first = ma.iter().zip(&mb).enumerate().find_map(|(i, (x, y))| {
            x.iter()
                .zip(y.iter())
                .position(|(p, q)| p != q)
                .map(|off| (i, off))
        });
        if let Some((buf, off)) = first {
            let show = |m: &[Vec<u8>]| StepResult {
                outcome: Outcome::Memory {
                    buf,
                    off,
                    bytes: m[buf][off..(off + 16).min(m[buf].len())].to_vec(),
                },
                wcs: vec![],
            };
            found = Some(Divergence {
                step: steps.len(),
                reference: show(&ma),
                other: show(&mb),
            });
        }
    }
    ra.cleanup();
    rb.cleanup();
    found
}

/// Runs `steps` on one device and checks each result against what the verbs may answer.
fn check_alone(d: &Device, steps: &[Step], stats: &mut Stats) -> Result<(), String> {
    let mut r = Run::new(d);
    let mut err = Ok(());
    for (i, s) in steps.iter().enumerate() {
        let o = r.step(s, i, None);
        let w = r.settle(None, &[]);
        stats.add(&StepResult {
            outcome: o.clone(),
            wcs: w.clone(),
        });
        stats.reconnects +=
            usize::from(matches!(s, Step::Reconnect { .. }) && matches!(o, Outcome::Ok(_)));
        if std::env::var_os("TYPED_VERBS_DIFF_TRACE").is_some() {
            eprintln!("  {i:2}: {s:?}\n      -> {o:?} {w:?}");
        }
        let documented = [
            libc::EINVAL,
            libc::ENOMEM,
            libc::EBUSY,
            libc::EOPNOTSUPP,
            libc::ENODATA,
            libc::EPERM,
            libc::EAGAIN,
        ];
        let bad = match &o {
            Outcome::Err(e) => !documented.contains(e),
            Outcome::Post(rc, _) => *rc != 0 && !documented.contains(rc),
            _ => false,
        };
        if bad {
            err = Err(format!("step {i} ({s:?}): undocumented outcome {o:?}"));
            break;
        }
        if let Some(wc) = w.iter().flat_map(|(_, w)| w).find(|w| {
            w.status > sys::ibv_wc_status::IBV_WC_TM_RNDV_INCOMPLETE
                || (w.status == 0
                    && !matches!(w.opcode, 0..=6 | 128 | 129)
                    && w.opcode != sys::ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM)
                || w.qp == usize::MAX
                || w.wr_id / 8 > i as u64
        }) {
            err = Err(format!("step {i} ({s:?}): impossible completion {wc:?}"));
            break;
        }
    }
    r.cleanup();
    err
}

/// Removes steps, then simplifies what is left, while `diverges` still holds: the shortest
/// sequence found that shows the divergence.
fn shrink(steps: Vec<Step>, diverges: &dyn Fn(&[Step]) -> bool) -> Vec<Step> {
    let mut cur = steps;
    // Delta debugging: drop chunks of halving size, then single steps, until nothing drops.
    let mut chunk = cur.len() / 2;
    while chunk >= 1 {
        let mut i = 0;
        let mut dropped = false;
        while i + chunk <= cur.len() {
            let mut cand = cur.clone();
            cand.drain(i..i + chunk);
            if !cand.is_empty() && diverges(&cand) {
                cur = cand;
                dropped = true;
            } else {
                i += chunk;
            }
        }
        if !dropped {
            chunk /= 2;
        }
    }
    // Simplify: single requests and SGEs, defaults for attributes.
    for i in 0..cur.len() {
        for cand in simpler(&cur[i]) {
            let mut s = cur.clone();
            s[i] = cand;
            if diverges(&s) {
                cur = s;
            }
        }
    }
    cur
}

/// Simpler variants of a step (fewer requests, fewer SGEs, attributes at their defaults).
fn simpler(s: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    match s {
        Step::PostSend { qp, wrs } if wrs.len() > 1 => {
            for w in wrs {
                out.push(Step::PostSend {
                    qp: *qp,
                    wrs: vec![w.clone()],
                });
            }
        }
        Step::PostRecv { qp, wrs } if wrs.len() > 1 || wrs[0].len() > 1 => {
            out.push(Step::PostRecv {
                qp: *qp,
                wrs: vec![vec![wrs[0][0]]],
            });
        }
        Step::PostSrqRecv { srq, wrs } if wrs.len() > 1 || wrs[0].len() > 1 => {
            out.push(Step::PostSrqRecv {
                srq: *srq,
                wrs: vec![vec![wrs[0][0]]],
            });
        }
        Step::ModifyQp { qp, a, mask } => {
            let d = QpAttrs {
                state: a.state,
                dest: a.dest,
                access: a.access,
                ..QpAttrs::default()
            };
            if *a != d {
                out.push(Step::ModifyQp {
                    qp: *qp,
                    a: d,
                    mask: *mask,
                });
            }
        }
        _ => {}
    }
    out
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

struct Listing<'a>(&'a [Step]);

impl fmt::Display for Listing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            writeln!(f, "  {i:2}: {s:?}")?;
        }
        Ok(())
    }
}

#[test]
fn software_device_agrees_with_the_real_one_on_random_verb_sequences() {
    const TEST: &str = "software_device_agrees_with_the_real_one_on_random_verb_sequences";
    let count = env_u64("TYPED_VERBS_DIFF_SEQUENCES", 2000);
    let first = env_u64("TYPED_VERBS_DIFF_SEED", 1);
    let sw = Device::open(typed_verbs::software::DEFAULT_DEVICE);
    let other = match std::env::var(typed_verbs::DEVICE_ENV) {
        Ok(name) if !name.is_empty() => Some(Device::open(&name)),
        _ => None,
    };
    let other = other.filter(|d| !d.ctx.is_software());
    let start = Instant::now();
    let Some(other) = other else {
        // Alone: every outcome checked against what the verbs may answer, nothing left behind.
        let leaks = LeakCheck::new(&sw.ctx, TEST);
        let mut stats = Stats::default();
        for seed in first..first + count {
            let steps = generate(seed);
            if let Err(e) = check_alone(&sw, &steps, &mut stats) {
                panic!("seed {seed}: {e}\nsequence:\n{}", Listing(&steps));
            }
            leaks.assert_unchanged(&format!("sequence {seed}"));
        }
        skip(
            TEST,
            format!(
                "comparison: no real device (set {} to one, e.g. rxe0); {count} sequences checked on sw0 alone in {:.1}s ({stats})",
                typed_verbs::DEVICE_ENV,
                start.elapsed().as_secs_f64()
            ),
        );
        return;
    };
    // The sequences are shared out among workers (TYPED_VERBS_DIFF_THREADS, default 2: the
    // lane's VM has two CPUs), each with its own context on each device.
    let threads = env_u64("TYPED_VERBS_DIFF_THREADS", 2).max(1);
    let other_name = other.ctx.device_name().to_owned();
    drop((sw, other));
    // Survey mode: report every divergence and go on (to see them all at once).
    let keep_going = std::env::var_os("TYPED_VERBS_DIFF_KEEP_GOING").is_some();
    let results: Vec<(Stats, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let other_name = &other_name;
                scope.spawn(move || {
                    let seeds = (first + t..first + count).step_by(threads as usize);
                    compare_seeds(seeds, other_name, keep_going)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker panicked (its message is above)"))
            .collect()
    });
    let mut stats = Stats::default();
    let mut reports = Vec::new();
    for (s, r) in results {
        stats.merge(s);
        reports.extend(r);
    }
    if let Some(first_report) = reports.first() {
        for r in &reports {
            let _ = std::io::stderr()
                .lock()
                .write_all(format!("DIVERGENCE {r}\n").as_bytes());
        }
        panic!(
            "{} divergence(s) between sw0 and {other_name}; the first:\n{first_report}",
            reports.len()
        );
    }
    note(
        TEST,
        format!(
            "{count} sequences (seeds {first}..{}) agree on sw0 and {other_name} in {:.1}s \
             ({threads} workers; {stats})",
            first + count - 1,
            start.elapsed().as_secs_f64()
        ),
    );
}

/// Runs the sequences of `seeds` in lockstep on a context of sw0 and one of `other_name`; the
/// report of each divergence (only the first unless `keep_going`), with the shortest sequence
/// found that shows it.
fn compare_seeds(
    seeds: impl Iterator<Item = u64>,
    other_name: &str,
    keep_going: bool,
) -> (Stats, Vec<String>) {
    const TEST: &str = "software_device_agrees_with_the_real_one_on_random_verb_sequences";
    let sw = Device::open(typed_verbs::software::DEFAULT_DEVICE);
    let other = Device::open(other_name);
    let leaks = LeakCheck::new(&sw.ctx, TEST);
    let mut stats = Stats::default();
    let mut reports = Vec::new();
    for seed in seeds {
        let steps = generate(seed);
        if let Some(d) = compare(&sw, &other, &steps, &mut stats) {
            let diverges = |s: &[Step]| compare(&sw, &other, s, &mut Stats::default()).is_some();
            let short = shrink(steps.clone(), &diverges);
            let d2 = compare(&sw, &other, &short, &mut Stats::default()).unwrap_or(d);
            reports.push(format!(
                "seed {seed}: sw0 and {other_name} disagree at step {} of the shortest sequence \
                 found ({} steps, from {}):\n{}\nsw0: {:?}\n{other_name}: {:?}\n\
                 reproduce: TYPED_VERBS_DIFF_SEED={seed} TYPED_VERBS_DIFF_SEQUENCES=1",
                d2.step,
                short.len(),
                steps.len(),
                Listing(&short),
                d2.reference,
                d2.other,
            ));
            if !keep_going {
                break;
            }
        }
        leaks.assert_unchanged(&format!("sequence {seed}"));
    }
    (stats, reports)
}

// ---------------------------------------------------------------------------------------------
// The divergences the comparison found, each fixed in the software device: the sequence that
// showed it, with what rxe0 answers, run on the test device (sw0 unless TYPED_VERBS_DEVICE says
// otherwise).
// ---------------------------------------------------------------------------------------------

/// Runs `steps` on the test device; each step's result (the completions it produced: at once
/// on the software device, within 50 ms on a real one).
fn run_on_test_device(steps: &[Step]) -> Vec<StepResult> {
    run_with_memory(steps).0
}

/// As [`run_on_test_device`], with the bytes of every MR's region at the end.
fn run_with_memory(steps: &[Step]) -> (Vec<StepResult>, Vec<Vec<u8>>) {
    let d = Device::new(common::open());
    let mut r = Run::new(&d);
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let outcome = r.step(s, i, Some(None));
        let flushed = if d.ctx.is_software() {
            vec![]
        } else {
            // A real device works on in the background: what it does within this time counts,
            // and a QP in ERR (now or by then) is waited for until it flushed every request.
            std::thread::sleep(Duration::from_millis(50));
            (0..r.qps.len()).collect()
        };
        let wcs = r.settle(None, &flushed);
        out.push(StepResult { outcome, wcs });
    }
    let memory = r
        .mrs
        .iter()
        .flatten()
        .map(|m| {
            // SAFETY: the region of a live MR, which nothing writes any more (its QPs are idle).
            unsafe { std::slice::from_raw_parts(m.buf, m.len as usize) }.to_vec()
        })
        .collect();
    r.cleanup();
    (out, memory)
}

/// A completion with every field zero, to build expected ones from.
const NO_WC: Wc = Wc {
    wr_id: 0,
    status: 0,
    opcode: 0,
    byte_len: 0,
    wc_flags: 0,
    imm: 0,
    qp: 0,
    src_qp: None,
};

/// A PD, a CQ of 16, an MR of 4096 bytes with every access.
fn basics() -> Vec<Step> {
    vec![
        Step::AllocPd,
        Step::CreateCq {
            cqe: Size::Lit(16),
            comp_vector_over: false,
        },
        Step::RegMr {
            pd: 0,
            len: 4096,
            access: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC,
        },
    ]
}

fn create_qp(qpt: u32, srq: Option<usize>, recv_wr: u32, recv_sge: u32) -> Step {
    Step::CreateQp {
        pd: 0,
        send_cq: 0,
        recv_cq: 0,
        srq,
        qpt,
        send_wr: Size::Lit(16),
        recv_wr: Size::Lit(recv_wr),
        send_sge: Size::Lit(2),
        recv_sge: Size::Lit(recv_sge),
        inline: Size::Lit(0),
        sig_all: false,
    }
}

/// [`basics`], then a QP of type `qpt` (3) brought to RTS (4, 5, 6), connected to itself.
fn qp_in_rts(qpt: u32) -> Vec<Step> {
    let mut steps = basics();
    steps.push(create_qp(qpt, None, 16, 2));
    steps.extend(to_rts(0, qpt));
    steps
}

/// [`basics`], an AH (3) to the device's own port, then a QP of type `qpt` (4) brought to RTS
/// (5, 6, 7), connected to itself.
fn qp_with_ah_in_rts(qpt: u32) -> Vec<Step> {
    let mut steps = basics();
    steps.push(Step::CreateAh {
        pd: 0,
        sgid_index: 0,
        port: 1,
        is_global: true,
    });
    steps.push(create_qp(qpt, None, 16, 2));
    steps.extend(to_rts(0, qpt));
    steps
}

/// `len` bytes at `off` in the buffer of MR `mr`.
fn sge(mr: usize, off: u32, len: u32) -> Sge {
    Sge { mr, off, len }
}

/// One receive on QP 0 of `len` bytes at `off` in MR 0.
fn recv(off: u32, len: u32) -> Step {
    Step::PostRecv {
        qp: 0,
        wrs: vec![vec![sge(0, off, len)]],
    }
}

/// A request of QP 0 to itself (UD: through AH 0, with the right qkey); RDMA and atomics at
/// `remote` in MR 0.
fn request(opcode: u32, flags: u32, sges: Vec<Sge>, remote: u32) -> SendSpec {
    SendSpec {
        opcode,
        flags,
        sges,
        remote: (0, remote),
        ah: 0,
        dest: 0,
        qkey_ok: true,
    }
}

/// `wrs` posted to QP 0's send queue.
fn post_send(wrs: Vec<SendSpec>) -> Step {
    Step::PostSend { qp: 0, wrs }
}

/// One signaled send on QP 0 of `len` bytes at `off` in MR 0.
fn send(off: u32, len: u32) -> Step {
    post_send(vec![request(
        IBV_WR_SEND,
        SIGNALED,
        vec![sge(0, off, len)],
        0,
    )])
}

/// The completions polled from CQ 0 (the only CQ of [`basics`]).
fn on_cq0(wcs: Vec<Wc>) -> Vec<CqWcs> {
    vec![(0, wcs)]
}

/// The three modifies that bring QP `qp` (of type `qpt`) to RTS, connected to itself.
fn to_rts(qp: usize, qpt: u32) -> Vec<Step> {
    let mut g = Gen {
        rng: Rng(0),
        pds: 1,
        cqs: 1,
        mrs: 1,
        srqs: 0,
        qps: vec![
            GenQp {
                qpt,
                state: IBV_QPS_RESET,
                peer: None,
            };
            qp + 1
        ],
        ahs: 0,
    };
    (0..3)
        .map(|_| match g.modify_qp(qp, true, qp) {
            Step::ModifyQp { qp, a, mask } => Step::ModifyQp {
                qp,
                a: QpAttrs {
                    state: a.state,
                    access: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC,
                    dest: qp,
                    ..QpAttrs::default()
                },
                mask,
            },
            s => s,
        })
        .collect()
}

#[test]
fn timing_a_receive_posted_in_err_is_left_out() {
    // rxe flushes such a receive, or not, as its responder task happens to run: the comparison
    // leaves it out on every device (it failed the lane now and then when the host was loaded).
    let mut steps = qp_in_rts(IBV_QPT_UD); // 3: the QP; 4, 5, 6: to RTS
    steps.push(recv(64, 64)); // 7
    steps.push(Step::ModifyQp {
        qp: 0,
        a: QpAttrs {
            state: IBV_QPS_ERR,
            ..QpAttrs::default()
        },
        mask: M_STATE,
    }); // 8
    steps.push(recv(128, 64)); // 9
    let r = run_on_test_device(&steps);
    assert_eq!(r[7].outcome, Outcome::Post(0, None));
    // The receive posted before the move is flushed by it (waited for on a real device).
    assert_eq!(r[8].outcome, Outcome::Ok(vec![]));
    assert_eq!(
        r[8].wcs,
        on_cq0(vec![Wc {
            wr_id: 7 * 8,
            status: sys::ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
            opcode: r[8].wcs[0].1[0].opcode,
            ..NO_WC
        }])
    );
    assert_eq!(r[9].outcome, Outcome::Skipped("receive posted in ERR"));
    assert_eq!(r[9].wcs, vec![]);
}

#[test]
fn fixed_create_qp_reports_max_recv_sge_0_as_asked() {
    // rxe keeps a receive queue of 0 SGEs: reported as 0, and a receive with one SGE is
    // refused (the software device reported 1 and took it).
    let mut steps = basics();
    steps.push(create_qp(IBV_QPT_RC, None, 16, 0));
    steps.extend(to_rts(0, IBV_QPT_RC).into_iter().take(1));
    steps.push(recv(0, 64));
    let r = run_on_test_device(&steps);
    assert_eq!(r[3].outcome, Outcome::Ok(vec![16, 16, 2, 0, 32]));
    assert_eq!(r[4].outcome, Outcome::Ok(vec![]));
    assert_eq!(r[5].outcome, Outcome::Post(libc::EINVAL, Some(0)));
}

#[test]
fn fixed_create_qp_with_an_srq_reports_the_receive_caps_as_asked() {
    // With an SRQ, rxe's create reports max_recv_wr and max_recv_sge as they were asked (the
    // software device reported 0 for both).
    let mut steps = basics();
    steps.push(Step::CreateSrq {
        pd: 0,
        max_wr: Size::Lit(16),
        max_sge: Size::Lit(1),
        srq_limit: 0,
    });
    steps.push(create_qp(IBV_QPT_RC, Some(0), 4, 1));
    let r = run_on_test_device(&steps);
    assert_eq!(r[4].outcome, Outcome::Ok(vec![16, 4, 2, 1, 32]));
}

#[test]
fn fixed_path_mtu_0_is_taken_and_above_the_port_max_refused() {
    // rxe checks path_mtu only against the port's max_mtu (4096): 0 is taken as it is (the
    // software device refused it).
    for (mtu, want) in [
        (0, Outcome::Ok(vec![])),
        (5, Outcome::Ok(vec![])),
        (6, Outcome::Err(libc::EINVAL)),
    ] {
        let mut steps = basics();
        steps.push(create_qp(IBV_QPT_RC, None, 16, 2));
        let mut up = to_rts(0, IBV_QPT_RC);
        if let Step::ModifyQp { a, .. } = &mut up[1] {
            a.path_mtu = mtu;
        }
        steps.extend(up.into_iter().take(2));
        let r = run_on_test_device(&steps);
        assert_eq!(r[5].outcome, want, "path_mtu {mtu}");
    }
}

#[test]
fn fixed_atomic_and_rdma_read_with_the_inline_flag_complete_with_loc_prot_err() {
    // An inline request carries no SGEs, so the result of an atomic or an RDMA read has
    // nowhere to land: rxe completes it with LOC_PROT_ERR (the software device wrote the result
    // into the SGEs and completed it successfully).
    for opcode in [IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_READ] {
        let mut steps = qp_in_rts(IBV_QPT_RC); // 3: the QP; 4, 5, 6: to RTS
        steps.push(post_send(vec![request(
            opcode,
            SIGNALED | INLINE,
            vec![sge(0, 8, 8)],
            64,
        )]));
        let r = run_on_test_device(&steps);
        assert_eq!(r[7].outcome, Outcome::Post(0, None), "opcode {opcode}");
        assert_eq!(
            r[7].wcs,
            on_cq0(vec![Wc {
                wr_id: 7 * 8,
                status: sys::ibv_wc_status::IBV_WC_LOC_PROT_ERR,
                qp: 0,
                ..NO_WC
            }]),
            "opcode {opcode}"
        );
    }
}

fn modify(qp: usize, state: u32, mask: i32) -> Step {
    Step::ModifyQp {
        qp,
        a: QpAttrs {
            state,
            ..QpAttrs::default()
        },
        mask,
    }
}

#[test]
fn fixed_sqd_is_reached_from_rts_and_left_to_rts_as_the_kernel_table_says() {
    // The kernel's state table has SQD (RTS to SQD, SQD to SQD, SQD to RTS, SQD to RESET or
    // ERR); rxe drains the send queue on the way in. The software device refused SQD.
    for qpt in [IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD] {
        let mut steps = basics();
        steps.push(create_qp(qpt, None, 16, 2));
        steps.push(modify(0, IBV_QPS_SQD, M_STATE)); // 4: from RESET
        steps.extend(to_rts(0, qpt)); // 5, 6, 7
        steps.push(modify(0, IBV_QPS_SQD, M_STATE)); // 8
        steps.push(modify(0, IBV_QPS_SQD, M_STATE)); // 9
        steps.push(modify(0, IBV_QPS_RTS, M_STATE)); // 10
        steps.push(modify(0, IBV_QPS_SQD, M_STATE)); // 11
        steps.push(modify(0, IBV_QPS_ERR, M_STATE)); // 12
        let r = run_on_test_device(&steps);
        let got: Vec<&Outcome> = r[4..].iter().map(|r| &r.outcome).collect();
        let ok = Outcome::Ok(vec![]);
        assert_eq!(
            got,
            [
                &Outcome::Err(libc::EINVAL),
                &ok,
                &ok,
                &ok,
                &ok,
                &ok,
                &ok,
                &ok,
                &ok
            ],
            "QP type {qpt}"
        );
    }
}

#[test]
fn fixed_sends_posted_in_sqd_wait_for_rts_and_the_next_post() {
    // A QP in SQD takes sends (the post succeeds) but starts none; back in RTS they run with the
    // next post, as rxe's requester does.
    let mut steps = qp_in_rts(IBV_QPT_RC); // 3: the QP; 4, 5, 6: to RTS
    steps.push(Step::PostRecv {
        qp: 0,
        wrs: vec![vec![sge(0, 1024, 64)], vec![sge(0, 2048, 64)]],
    }); // 7
    steps.push(modify(0, IBV_QPS_SQD, M_STATE)); // 8
    steps.push(send(0, 16)); // 9
    steps.push(modify(0, IBV_QPS_RTS, M_STATE)); // 10
    steps.push(send(0, 16)); // 11
    let r = run_on_test_device(&steps);
    assert_eq!(r[9].outcome, Outcome::Post(0, None));
    assert_eq!(r[9].wcs, vec![]);
    assert_eq!(r[10].outcome, Outcome::Ok(vec![]));
    assert_eq!(r[10].wcs, vec![]);
    assert_eq!(r[11].outcome, Outcome::Post(0, None));
    let ok = |wr_id, opcode, wc_flags| Wc {
        wr_id,
        opcode,
        byte_len: 16,
        wc_flags,
        ..NO_WC
    };
    use sys::ibv_wc_opcode::{IBV_WC_RECV, IBV_WC_SEND};
    assert_eq!(
        r[11].wcs,
        on_cq0(vec![
            ok(9 * 8, IBV_WC_SEND, 0),
            ok(11 * 8, IBV_WC_SEND, 0),
            ok(7 * 8, IBV_WC_RECV, 1),
            ok(7 * 8 + 1, IBV_WC_RECV, 1),
        ])
    );
}

#[test]
fn fixed_a_queue_of_0_work_requests_takes_none() {
    // rxe rounds a ring of 0 requests to one slot that is always empty: a post to it fails with
    // ENOMEM (the software device rounded 0 up to 1 and took the request).
    let mut steps = basics();
    let mut create = create_qp(IBV_QPT_UC, None, 0, 1);
    if let Step::CreateQp { send_wr, .. } = &mut create {
        *send_wr = Size::Lit(0);
    }
    steps.push(create); // 3
    steps.extend(to_rts(0, IBV_QPT_UC)); // 4, 5, 6
    let one_sge = vec![sge(0, 0, 16)];
    steps.push(Step::PostRecv {
        qp: 0,
        wrs: vec![one_sge.clone()],
    }); // 7
    steps.push(post_send(vec![request(IBV_WR_SEND, SIGNALED, one_sge, 0)])); // 8
    let r = run_on_test_device(&steps);
    assert_eq!(r[3].outcome, Outcome::Ok(vec![0, 0, 2, 1, 32]));
    assert_eq!(r[7].outcome, Outcome::Post(libc::ENOMEM, Some(0)));
    assert_eq!(r[8].outcome, Outcome::Post(libc::ENOMEM, Some(0)));
    assert_eq!(r[8].wcs, vec![]);
}

#[test]
fn fixed_modify_srq_ignores_mask_bits_it_does_not_know() {
    // The kernel and rxe's provider look at IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT only: a mask with
    // another bit changes nothing and succeeds (the software device refused it with EINVAL).
    let steps = [
        Step::AllocPd,
        Step::CreateSrq {
            pd: 0,
            max_wr: Size::Lit(4),
            max_sge: Size::Lit(1),
            srq_limit: 0,
        },
        Step::ModifySrq {
            srq: 0,
            mask: 1 << 2,
            max_wr: 32,
            srq_limit: 4,
        },
        Step::ModifySrq {
            srq: 0,
            mask: SRQ_LIMIT | 1 << 2,
            max_wr: 0,
            srq_limit: 2,
        },
    ];
    let r = run_on_test_device(&steps);
    assert_eq!(r[2].outcome, Outcome::Ok(vec![]));
    assert_eq!(r[3].outcome, Outcome::Ok(vec![]));
}

#[test]
fn fixed_a_qp_that_breaks_itself_as_the_responder_flushes_the_request() {
    // A UC or UD QP sending to itself a message its receive cannot hold: as the responder it
    // moves to ERR before rxe's completer reports the request, which is then flushed
    // (WR_FLUSH_ERR); the software device completed it as if another QP had been the
    // responder. RC completes from the responder's NAK (REM_OP_ERR) either way. A UD receive
    // gets the GRH before the payload fails to fit (the software device placed nothing).
    for qpt in [IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD] {
        let mut steps = qp_with_ah_in_rts(qpt); // 3: the AH; 4: the QP; 5, 6, 7: to RTS
        steps.push(recv(64, 64)); // 8
        steps.push(send(1024, 164)); // 9
        let (r, mem) = run_with_memory(&steps);
        use sys::ibv_wc_status::{IBV_WC_LOC_QP_OP_ERR, IBV_WC_REM_OP_ERR, IBV_WC_WR_FLUSH_ERR};
        assert_eq!(r[9].outcome, Outcome::Post(0, None), "QP type {qpt}");
        assert_eq!(
            r[9].wcs,
            on_cq0(vec![
                Wc {
                    wr_id: 9 * 8,
                    status: if qpt == IBV_QPT_RC {
                        IBV_WC_REM_OP_ERR
                    } else {
                        IBV_WC_WR_FLUSH_ERR
                    },
                    ..NO_WC
                },
                Wc {
                    wr_id: 8 * 8,
                    status: IBV_WC_LOC_QP_OP_ERR,
                    ..NO_WC
                },
            ]),
            "QP type {qpt}"
        );
        // A UD message places its GRH (40 bytes) before its payload fails to fit.
        let placed = if qpt == IBV_QPT_UD { 40 } else { 0 };
        if placed > 0 {
            assert_ne!(mem[0][64..64 + placed], pattern(64, placed)[..], "the GRH");
        }
        assert_eq!(
            mem[0][64 + placed..128],
            pattern(64 + placed, 64 - placed)[..]
        );
    }
}

/// The bytes a fresh region of the sequence holds at `off..off + len` (its fill pattern).
fn pattern(off: usize, len: usize) -> Vec<u8> {
    let words: Vec<u64> = (0..(off + len).div_ceil(8) as u64)
        .map(|i| i.wrapping_mul(0x0101_0101_0101_0101))
        .collect();
    words
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect::<Vec<u8>>()[off..off + len]
        .to_vec()
}

#[test]
fn fixed_packets_before_the_one_that_finds_no_room_are_placed() {
    // rxe places each packet of a message as it comes (cut at the requester's path MTU, 1024
    // bytes here): an RDMA write with immediate that finds no receive (UC: dropped) has written
    // every packet but the last, and a send to a receive too small for it has filled the
    // receive with the packets that fit. The software device placed nothing in either case.
    let write =
        |opcode, off, len, remote| request(opcode, SIGNALED, vec![sge(0, off, len)], remote);
    // MR 0's bytes at `at` hold the pattern of a fresh region from `from` on.
    let holds = |mem: &[Vec<u8>], at: std::ops::Range<usize>, from: usize, what: &str| {
        assert_eq!(mem[0][at.clone()], pattern(from, at.len())[..], "{what}");
    };
    let mut steps = qp_in_rts(IBV_QPT_UC); // 3: the QP; 4, 5, 6: to RTS
    steps.push(post_send(vec![write(
        IBV_WR_RDMA_WRITE_WITH_IMM,
        2048,
        1032,
        0,
    )])); // 7: no receive
    let (r, mem) = run_with_memory(&steps);
    assert_eq!(r[7].outcome, Outcome::Post(0, None));
    holds(&mem, 0..1024, 2048, "first packet written");
    holds(&mem, 1024..1032, 1024, "last packet dropped");

    let mut steps = qp_in_rts(IBV_QPT_UC); // 3: the QP; 4, 5, 6: to RTS
    steps.push(recv(0, 1500)); // 7
    steps.push(post_send(vec![write(IBV_WR_SEND, 2048, 2000, 0)])); // 8
    let (r, mem) = run_with_memory(&steps);
    assert_eq!(r[8].outcome, Outcome::Post(0, None));
    holds(&mem, 0..1024, 2048, "first packet placed");
    holds(&mem, 1024..1500, 1024, "second packet not");
}

#[test]
fn fixed_a_ud_message_over_the_mtu_completes_before_its_sges_are_read() {
    // rxe completes a UD send longer than the port MTU successfully without reading its SGEs,
    // so a bad key in one changes nothing (the software device read them first and completed
    // it with LOC_QP_OP_ERR).
    let mut steps = qp_with_ah_in_rts(IBV_QPT_UD); // 3: the AH; 4: the QP; 5, 6, 7: to RTS
                                                   // MR 1 does not exist: a key no MR has.
    let sges = vec![sge(1, 64, 1024), sge(0, 8, 16)];
    steps.push(post_send(vec![request(IBV_WR_SEND, SIGNALED, sges, 0)])); // 8
    let r = run_on_test_device(&steps);
    assert_eq!(
        r[8].wcs,
        on_cq0(vec![Wc {
            wr_id: 8 * 8,
            opcode: sys::ibv_wc_opcode::IBV_WC_SEND,
            byte_len: 1040,
            ..NO_WC
        }])
    );
}

#[test]
fn fixed_cur_qp_state_is_taken_as_the_state_the_qp_is_in() {
    // With IBV_QP_CUR_STATE, rxe checks the transition from the cur_qp_state given, not from
    // the QP's state: a UD QP in RESET told it is in RTS goes "from RTS to RTS" (the software
    // device checked RESET to RTS and refused).
    let mut steps = basics();
    steps.push(create_qp(IBV_QPT_UD, None, 16, 2)); // 3
    steps.push(modify(0, IBV_QPS_RTS, M_STATE | M_CUR_STATE | M_QKEY)); // 4
    steps.push(modify(0, IBV_QPS_RTR, M_STATE | M_CUR_STATE)); // 5: RTR to RTR: no such move
    let r = run_on_test_device(&steps);
    assert_eq!(r[4].outcome, Outcome::Ok(vec![]));
    assert_eq!(r[5].outcome, Outcome::Err(libc::EINVAL));
}

#[test]
fn fixed_a_response_is_placed_sge_by_sge_up_to_the_one_that_fails() {
    // rxe's copy_data checks the room of all SGEs first, then copies SGE by SGE: an RDMA read
    // whose second SGE lies outside its region completes with LOC_PROT_ERR with the first SGE
    // written (the software device wrote nothing).
    let mut steps = basics();
    steps.push(Step::RegMr {
        pd: 0,
        len: 64,
        access: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC,
    }); // 3: MR 1, 64 bytes
    steps.push(create_qp(IBV_QPT_RC, None, 16, 2)); // 4
    steps.extend(to_rts(0, IBV_QPT_RC)); // 5, 6, 7
                                         // The second SGE runs past MR 1's 64 bytes.
    let sges = vec![sge(0, 200, 100), sge(1, 0, 128)];
    steps.push(post_send(vec![request(
        IBV_WR_RDMA_READ,
        SIGNALED,
        sges,
        1024,
    )])); // 8
    let (r, mem) = run_with_memory(&steps);
    assert_eq!(
        r[8].wcs,
        on_cq0(vec![Wc {
            wr_id: 8 * 8,
            status: sys::ibv_wc_status::IBV_WC_LOC_PROT_ERR,
            ..NO_WC
        }])
    );
    assert_eq!(mem[0][200..300], pattern(1024, 100)[..], "the first SGE");
    assert_eq!(mem[1][..64], pattern(0, 64)[..], "the second SGE");
}

#[test]
fn fixed_a_multi_packet_write_with_immediate_checks_its_key_before_the_receive() {
    // rxe checks the key and range of an RDMA write at its first packet, which needs no
    // receive: a multi-packet write with immediate to a range outside the region completes with
    // REM_ACCESS_ERR even when no receive is posted (the software device looked for the receive
    // first and gave an RNR NAK).
    let mut steps = qp_in_rts(IBV_QPT_RC); // 3: the QP; 4, 5, 6: to RTS
                                           // 2048 bytes from 4000 leave the 4096-byte region.
    let write = request(
        IBV_WR_RDMA_WRITE_WITH_IMM,
        SIGNALED,
        vec![sge(0, 0, 2048)],
        4000,
    );
    steps.push(post_send(vec![write])); // 7
    let r = run_on_test_device(&steps);
    assert_eq!(
        r[7].wcs,
        on_cq0(vec![Wc {
            wr_id: 7 * 8,
            status: sys::ibv_wc_status::IBV_WC_REM_ACCESS_ERR,
            ..NO_WC
        }])
    );
}

#[test]
fn fixed_the_grh_of_a_ud_receive_counts_the_payload_padding() {
    // The IPv6 payload length in the GRH rxe writes in front of a UD receive counts the BTH's
    // pad bytes (the payload rounded up to a multiple of 4): 8 + 12 + 8 + 17 + 3 + 4 = 52 for
    // 17 bytes (the software device left the padding out).
    let mut steps = qp_with_ah_in_rts(IBV_QPT_UD); // 3: the AH; 4: the QP; 5, 6, 7: to RTS
    steps.push(recv(2304, 1024)); // 8
    steps.push(send(0, 17)); // 9
    let (r, mem) = run_with_memory(&steps);
    assert_eq!(r[9].wcs.len(), 1, "{:?}", r[9].wcs);
    assert_eq!(r[9].wcs[0].1.len(), 2, "{:?}", r[9].wcs);
    assert_eq!(
        u16::from_be_bytes([mem[0][2304 + 4], mem[0][2304 + 5]]),
        52,
        "the GRH's payload length"
    );
}

#[test]
fn fixed_modify_srq_checks_max_wr_and_limit_against_the_srq_as_it_is() {
    // rxe_srq_chk_attr checks a new max_wr against the limit armed before the call (the one
    // ibv_create_srq set, here 100) and a new srq_limit against the ring before the call (1
    // request), even when the same call changes the other: both refused with EINVAL (the
    // software device checked them against the new values and took them).
    let steps = [
        Step::AllocPd,
        Step::CreateSrq {
            pd: 0,
            max_wr: Size::Lit(4),
            max_sge: Size::Lit(2),
            srq_limit: 100,
        },
        Step::ModifySrq {
            srq: 0,
            mask: SRQ_MAX_WR | SRQ_LIMIT,
            max_wr: 2,
            srq_limit: 0,
        },
        Step::CreateSrq {
            pd: 0,
            max_wr: Size::Lit(1),
            max_sge: Size::Lit(1),
            srq_limit: 0,
        },
        Step::ModifySrq {
            srq: 1,
            mask: SRQ_MAX_WR | SRQ_LIMIT,
            max_wr: 8,
            srq_limit: 4,
        },
        Step::ModifySrq {
            srq: 1,
            mask: SRQ_MAX_WR,
            max_wr: 8,
            srq_limit: 0,
        },
        Step::ModifySrq {
            srq: 1,
            mask: SRQ_LIMIT,
            max_wr: 0,
            srq_limit: 4,
        },
    ];
    let r = run_on_test_device(&steps);
    let got: Vec<&Outcome> = r[2..].iter().map(|r| &r.outcome).collect();
    let ok = Outcome::Ok(vec![]);
    let einval = Outcome::Err(libc::EINVAL);
    assert_eq!(got, [&einval, &Outcome::Ok(vec![1, 1]), &einval, &ok, &ok]);
}

/// The outcome of a timed exchange: completions as (QP: 0 `a`, 1 `b`; wr_id; status).
fn timed_outcome(wcs: &[(u8, u64, u32)], modifies: &[i32], states: [u32; 2]) -> Outcome {
    Outcome::Timed {
        wcs: wcs.to_vec(),
        modifies: modifies.to_vec(),
        states,
    }
}

#[test]
fn fixed_timed_exchanges_end_as_on_rxe0() {
    use sys::ibv_wc_status::*;
    const OK: u32 = IBV_WC_SUCCESS;
    let cases = [
        // A peer left in INIT: two tries of the first request (retry_cnt 1), then
        // RETRY_EXC_ERR, the second flushed, the sender in ERR.
        (
            Timed::Unready {
                peer: IBV_QPS_INIT,
                sends: 2,
                timeout: 5,
                retry_cnt: 1,
                ready: false,
            },
            timed_outcome(
                &[(0, 0, IBV_WC_RETRY_EXC_ERR), (0, 1, IBV_WC_WR_FLUSH_ERR)],
                &[0, 0],
                [IBV_QPS_ERR, IBV_QPS_INIT],
            ),
        ),
        // A peer in ERR, brought back (RESET, INIT, receives, RTR) while the sender retries
        // without limit: both requests land at a retransmission.
        (
            Timed::Unready {
                peer: IBV_QPS_ERR,
                sends: 2,
                timeout: 8,
                retry_cnt: 7,
                ready: true,
            },
            timed_outcome(
                &[(0, 0, OK), (0, 1, OK), (1, 100, OK), (1, 101, OK)],
                &[0, 0, 0, 0, 0, 0],
                [IBV_QPS_RTS, IBV_QPS_RTR],
            ),
        ),
        // One receive for three requests, rnr_retry 2: the second is NAKed three times and
        // fails, the third is flushed; the responder stays in RTS.
        (
            Timed::Rnr {
                sends: 3,
                recvs: 1,
                rnr_retry: 2,
                min_rnr_timer: 1,
            },
            timed_outcome(
                &[
                    (0, 0, OK),
                    (0, 1, IBV_WC_RNR_RETRY_EXC_ERR),
                    (0, 2, IBV_WC_WR_FLUSH_ERR),
                    (1, 100, OK),
                ],
                &[0, 0],
                [IBV_QPS_ERR, IBV_QPS_RTS],
            ),
        ),
        // rnr_retry 7: the receives posted later take both.
        (
            Timed::Rnr {
                sends: 2,
                recvs: 0,
                rnr_retry: 7,
                min_rnr_timer: 2,
            },
            timed_outcome(
                &[(0, 0, OK), (0, 1, OK), (1, 100, OK), (1, 101, OK)],
                &[0, 0],
                [IBV_QPS_RTS, IBV_QPS_RTS],
            ),
        ),
        // timeout 0: the request the peer dropped in INIT is sent again with the next one.
        (
            Timed::NoTimer,
            timed_outcome(
                &[(0, 0, OK), (0, 1, OK), (1, 100, OK), (1, 101, OK)],
                &[0, 0, 0],
                [IBV_QPS_RTS, IBV_QPS_RTR],
            ),
        ),
        // Drained in SQD after the RNR timer rewound the request; sent again from RTS.
        (
            Timed::SqdAfterRnr { min_rnr_timer: 1 },
            timed_outcome(
                &[(0, 0, OK), (0, 1, OK), (1, 100, OK), (1, 101, OK)],
                &[0, 0, 0, 0],
                [IBV_QPS_RTS, IBV_QPS_RTS],
            ),
        ),
        // Forced from ERR to RTS: it sends, but takes no request (its responder stays in
        // error), so the peer's retries run out.
        (
            Timed::ForcedRts {
                timeout: 5,
                retry_cnt: 1,
            },
            timed_outcome(
                &[(0, 0, OK), (1, 1, IBV_WC_RETRY_EXC_ERR), (1, 100, OK)],
                &[0, 0, 0, 0],
                [IBV_QPS_RTS, IBV_QPS_ERR],
            ),
        ),
    ];
    for (t, want) in cases {
        let r = run_on_test_device(&[Step::Timed(t)]);
        assert_eq!(r[0].outcome, want, "{t:?}");
    }
}

#[test]
fn fixed_a_pair_reset_and_reconnected_with_matching_psns_moves_data_again() {
    // Both QPs through RESET and connected again, each one's sq_psn the other's rq_psn: a send
    // lands as on a fresh pair (reconnecting one side alone leaves the PSNs apart, which rxe
    // checks and the software device does not model: left out of the comparison).
    let mut steps = basics();
    steps.push(create_qp(IBV_QPT_RC, None, 16, 2)); // 3: QP 0
    steps.push(create_qp(IBV_QPT_RC, None, 16, 2)); // 4: QP 1
    for (qp, dest) in [(0, 1), (1, 0)] {
        for s in to_rts(qp, IBV_QPT_RC) {
            let Step::ModifyQp { qp, mut a, mask } = s else {
                unreachable!()
            };
            a.dest = dest;
            steps.push(Step::ModifyQp { qp, a, mask });
        }
    }
    let recvs = |n: usize| Step::PostRecv {
        qp: 1,
        wrs: vec![vec![sge(0, 2048, 64)]; n],
    };
    steps.push(recvs(1)); // 11
    steps.push(send(0, 16)); // 12
                             // After the reconnect the PSNs start at the last one: the second send wraps to 0.
    steps.push(Step::Reconnect {
        qp: 1,
        psn: 0x00ff_ffff,
    }); // 13
    steps.push(recvs(2)); // 14
    steps.push(send(0, 16)); // 15
    steps.push(send(16, 16)); // 16
    let r = run_on_test_device(&steps);
    assert_eq!(r[13].outcome, Outcome::Ok(vec![]));
    let oks = |i: usize| {
        r[i].wcs
            .iter()
            .flat_map(|(_, w)| w)
            .filter(|w| w.status == 0)
            .count()
    };
    // Each send and its receive.
    assert_eq!(oks(12), 2, "{:?}", r[12]);
    assert_eq!(oks(15) + oks(16), 4, "{:?}", &r[15..]);
}
