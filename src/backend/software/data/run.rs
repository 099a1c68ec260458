//! Executing a send work request at its destination: the steps of one delivery.

use super::*;

impl SendWqe {
    /// Checks and copies one `ibv_send_wr`, as rxe's post_one_send does.
    ///
    /// # Safety
    /// `w` is a valid request of a live QP: its SGE array readable, inline data readable, a
    /// UD request's AH live.
    pub(super) unsafe fn new(qp: &SwQp, w: &sys::ibv_send_wr) -> Result<SendWqe, c_int> {
        if w.num_sge < 0 || w.num_sge as u32 > qp.cap.max_send_sge {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller's contract: `sg_list` holds `num_sge` entries.
        let sges = unsafe { copy_sges(w.sg_list, w.num_sge as usize) }?;
        let length: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        // No message is longer than the port's max_msg_sz; the device would otherwise buffer
        // (and the caller allocate) what no port can send.
        if length > MAX_MSG_SZ {
            return Err(libc::EINVAL);
        }
        let atomic = matches!(
            w.opcode,
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
        );
        // SAFETY: reading the union as its atomic member, whose remote_addr overlays rdma's.
        let (remote_addr, rkey, compare_add, swap) = unsafe {
            if atomic {
                let a = w.wr.atomic;
                (a.remote_addr, a.rkey, a.compare_add, a.swap)
            } else {
                let r = w.wr.rdma;
                (r.remote_addr, r.rkey, 0, 0)
            }
        };
        if atomic && (length < 8 || remote_addr & 7 != 0) {
            return Err(libc::EINVAL);
        }
        if w.send_flags & SEND_INLINE != 0 && length > qp.cap.max_inline_data.into() {
            return Err(libc::EINVAL);
        }
        let mut inline = None;
        if w.send_flags & SEND_INLINE != 0 {
            let mut data = Vec::new();
            data.try_reserve_exact(length as usize)
                .map_err(|_| libc::ENOMEM)?;
            for s in sges.iter().filter(|s| s.length > 0) {
                // SAFETY: the caller's contract: inline data is readable at post time.
                data.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(s.addr as *const u8, s.length as usize)
                });
            }
            inline = Some(data);
        }
        let (mut remote_qpn, mut remote_qkey, mut ah) = (0, 0, None);
        if qp.qpt() == IBV_QPT_UD {
            // SAFETY: a UD request's `wr` is its `ud` member.
            let ud = unsafe { w.wr.ud };
            if ud.ah.is_null() {
                return Err(libc::EINVAL);
            }
            remote_qpn = ud.remote_qpn & 0x00ff_ffff;
            remote_qkey = ud.remote_qkey;
            // SAFETY: the caller's contract: a software AH, live (`ibv_post_send`) or the copy
            // an extended QP's `wr_set_ud_addr` made of one; a destroyed one leaves `ah` None,
            // and the request fails when it runs, as rxe's kernel fails to find it.
            let sw = unsafe { &*(ud.ah as *const SwAh) };
            ah = super::super::objects::ah_live(sw.id).then_some(sw.attr);
        }
        Ok(SendWqe {
            wr_id: w.wr_id,
            opcode: w.opcode,
            signaled: w.send_flags & SEND_SIGNALED != 0 || qp.sq_sig_all != 0,
            solicited: w.send_flags & SEND_SOLICITED != 0,
            // SAFETY: a plain u32 either way.
            imm: unsafe { w.imm_data_invalidated_rkey_union.imm_data },
            sges,
            inline,
            length,
            remote_addr,
            rkey,
            compare_add,
            swap,
            remote_qpn,
            remote_qkey,
            ah,
            before_sqd: false,
        })
    }

    pub(super) fn has_imm(&self) -> bool {
        matches!(
            self.opcode,
            IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE_WITH_IMM
        )
    }
}

/// How a request ended, or that it waits.
pub(super) enum Step<'g> {
    Done {
        status: u32,
        /// A responder that moves to ERR (after the sender's completion is written).
        responder: Option<&'g SwQp>,
    },
    /// The request stays at the head of the send queue until QP `n` is kicked.
    Wait(u32),
    /// The responder's receive completion found its CQ full (class G): the completion is lost,
    /// the responder moves to ERR, and the RC request, never acknowledged, waits for it (as
    /// `Wait`); a UC or UD request completes.
    Overflowed(&'g SwQp),
}

impl Step<'_> {
    fn ok() -> Self {
        Step::Done {
            status: IBV_WC_SUCCESS,
            responder: None,
        }
    }
    pub(super) fn fail(status: u32) -> Self {
        Step::Done {
            status,
            responder: None,
        }
    }
}

/// One data-path operation under the fabric lock. The QPs a post or a modify unblocks are
/// collected in `kicks` first and run one after the other, so no QP's queue runs inside
/// another's.
pub(super) struct Run<'g> {
    f: &'g Fabric,
    pub(super) kicks: Vec<&'g SwQp>,
}

impl<'g> Run<'g> {
    pub(super) fn new(f: &'g Fabric) -> Self {
        Run {
            f,
            kicks: Vec::new(),
        }
    }

    /// Runs every QP kicked so far.
    pub(super) fn drain(&mut self) {
        while let Some(q) = self.kicks.pop() {
            self.run_sq(q);
        }
    }

    /// Kicks the QPs whose head request waits for a QP that `matches`.
    pub(super) fn kick_waiting_for(&mut self, matches: impl Fn(&SwQp) -> bool) {
        for r in self.f.qps.values() {
            // SAFETY: registered, so live while `self.f` is borrowed (see Fabric::get).
            let q: &'g SwQp = unsafe { &*r.0 };
            let waits = {
                let q = q.queues.lock();
                // Without a retransmit timer, only a post of its own sends it again.
                q.blocked_on.filter(|_| !q.no_timer)
            };
            if let Some(n) = waits {
                if self.f.get(n).is_some_and(&matches) {
                    self.kicks.push(q);
                }
            }
        }
    }

    /// Runs `qp`'s send queue from its head while requests can complete.
    pub(super) fn run_sq(&mut self, qp: &'g SwQp) {
        loop {
            let state = qp.state();
            let w = {
                let mut q = qp.queues.lock();
                if q.acking.is_some() {
                    // The head was carried out and waits for its ACK; the rest wait behind it.
                    return;
                }
                let Some(w) = q.sq.pop_front() else {
                    return;
                };
                w
            };
            if state == IBV_QPS_ERR {
                send_completion(qp, &w, IBV_WC_WR_FLUSH_ERR);
                continue;
            }
            if qp.qpt() == IBV_QPT_RC {
                // A request that got no answer is sent again when its ACK timeout expires, and
                // fails there when no retry is left, in SQD too (before the drain rewinds it).
                match retransmission(qp) {
                    Retransmission::Send => {}
                    Retransmission::NotYet => {
                        qp.queues.lock().sq.push_front(w);
                        return;
                    }
                    Retransmission::Exhausted => {
                        qp.queues.lock().unblock();
                        send_completion(qp, &w, IBV_WC_RETRY_EXC_ERR);
                        to_error(qp);
                        continue;
                    }
                }
            }
            // In SQD only a request handed to the device before the drain began runs.
            if state != IBV_QPS_RTS && !(state == IBV_QPS_SQD && w.before_sqd) {
                let rewound = {
                    let mut q = qp.queues.lock();
                    q.sq.push_front(w);
                    // A head request that waited (an RNR timer, an ACK timeout, a peer) and is
                    // retried in SQD: rxe's requester rewinds it (req_retry: posted again, not
                    // in progress) and, draining, sends nothing new, so the drain ends here
                    // (rxe0). It is sent at the next post in RTS; the retries it used stay
                    // used, as rxe's completer counts them.
                    state == IBV_QPS_SQD && q.blocked_on.take().is_some()
                };
                if rewound {
                    qp.ctx().raise(
                        crate::ffi::event_type::SQ_DRAINED,
                        qp as *const SwQp as usize,
                    );
                }
                return;
            }
            match self.execute(qp, &w) {
                Step::Overflowed(responder) if qp.qpt() == IBV_QPT_RC => {
                    let n = responder.ibv.qp_base.qp_num;
                    {
                        let mut q = qp.queues.lock();
                        q.sq.push_front(w);
                        q.blocked_on = Some(n);
                        q.retry = None;
                    }
                    to_error(responder);
                    // Never acknowledged: the request is sent again when the ACK timeout
                    // expires, and the responder, now in ERR, drops it each time.
                    let _ = no_answer(qp, n);
                    return;
                }
                Step::Overflowed(responder) => {
                    qp.queues.lock().unblock();
                    if w.signaled {
                        send_completion(qp, &w, IBV_WC_SUCCESS);
                    }
                    to_error(responder);
                }
                Step::Wait(n) => {
                    let mut q = qp.queues.lock();
                    q.sq.push_front(w);
                    q.blocked_on = Some(n);
                    return;
                }
                Step::Done {
                    mut status,
                    responder,
                } => {
                    if qp.qpt() != IBV_QPT_RC && responder.is_some_and(|r| ptr::eq(r, qp)) {
                        // A UC or UD QP that sent to itself and moved itself to ERR as the
                        // responder: rxe's responder runs inline from the loopback transmit,
                        // before the completer reports the request, which it then flushes. (An
                        // RC requester completes from the responder's NAK, as for another QP.)
                        status = IBV_WC_WR_FLUSH_ERR;
                    }
                    qp.queues.lock().unblock();
                    let ack_delay = || qp.ctx().config().ack_delay;
                    if status == IBV_WC_SUCCESS
                        && responder.is_none()
                        && qp.qpt() == IBV_QPT_RC
                        && !ack_delay().is_zero()
                    {
                        // Carried out; the completion comes with the ACK, from the timer thread
                        // (running: the creation of this RC QP started it).
                        if let Some(t) = rnr_timer() {
                            // A delay beyond the clock's range: an ACK that never comes (the
                            // request holds its slot until a flush, a reset or the destroy;
                            // arming 0 is no timer's).
                            let due = Instant::now().checked_add(ack_delay());
                            let arming = due.map_or(0, |at| t.arm(at, qp.ibv.qp_base.qp_num));
                            let mut q = qp.queues.lock();
                            q.sq.push_front(w);
                            q.acking = Some(arming);
                            return;
                        }
                    }
                    if status != IBV_WC_SUCCESS || w.signaled {
                        send_completion(qp, &w, status);
                    }
                    if let Some(r) = responder {
                        to_error(r);
                    }
                    if status != IBV_WC_SUCCESS {
                        to_error(qp);
                    }
                }
            }
        }
    }

    /// Carries out request `w` of `qp` (in RTS), as far as it can go now.
    fn execute(&mut self, qp: &'g SwQp, w: &SendWqe) -> Step<'g> {
        let qpt = qp.qpt();
        let op = w.opcode;
        let valid = match qpt {
            IBV_QPT_RC => matches!(
                op,
                IBV_WR_SEND
                    | IBV_WR_SEND_WITH_IMM
                    | IBV_WR_RDMA_WRITE
                    | IBV_WR_RDMA_WRITE_WITH_IMM
                    | IBV_WR_RDMA_READ
                    | IBV_WR_ATOMIC_CMP_AND_SWP
                    | IBV_WR_ATOMIC_FETCH_AND_ADD
            ),
            IBV_QPT_UC => matches!(
                op,
                IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM
            ),
            IBV_QPT_UD => matches!(op, IBV_WR_SEND | IBV_WR_SEND_WITH_IMM),
            _ => false,
        };
        if !valid {
            return Step::fail(IBV_WC_LOC_QP_OP_ERR);
        }
        if qpt == IBV_QPT_UD && w.ah.is_none() {
            // Its AH was destroyed before the request ran (an extended QP's batch: after
            // `wr_set_ud_addr`, before `wr_complete`): rxe's requester finds no AH for the
            // index (`rxe_get_av`) and fails the request.
            return Step::fail(IBV_WC_LOC_QP_OP_ERR);
        }
        let carries_data = matches!(
            op,
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM
        );
        if qpt == IBV_QPT_UD && w.length > UD_MTU as u64 {
            // C10-93.1.1: nothing is sent, and it is not an error; rxe decides it before it
            // reads any SGE, so a bad key in one changes nothing.
            return Step::ok();
        }
        let payload = match (&w.inline, carries_data) {
            (Some(d), true) => d.clone(),
            (None, true) => match gather(qp, &w.sges) {
                Ok(d) => d,
                Err(MrFault::Key) => return Step::fail(IBV_WC_LOC_QP_OP_ERR),
                Err(MrFault::Range) => return Step::fail(IBV_WC_LOC_PROT_ERR),
                Err(MrFault::NoMem) => return Step::fail(IBV_WC_GENERAL_ERR),
            },
            (_, false) => Vec::new(),
        };

        let dest_qpn = if qpt == IBV_QPT_UD {
            w.remote_qpn
        } else {
            qp.attr.lock().dest_qp_num
        };
        let dest = self
            .f
            .get(dest_qpn)
            // A responder is ready from RTR on; SQD stops only the send queue. One forced out of
            // ERR (CUR_STATE) is not (`SwQp::resp_ready`).
            .filter(|d| {
                d.qpt() == qpt
                    && matches!(d.state(), IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD)
                    && d.resp_ready()
            });
        let Some(dest) = dest else {
            return match qpt {
                // No answer: the request is sent again when the ACK timeout expires.
                IBV_QPT_RC => no_answer(qp, dest_qpn),
                _ => Step::ok(),
            };
        };
        let (access, qkey, max_dest_rd_atomic) = {
            let a = dest.attr.lock();
            (a.qp_access_flags as i32, a.qkey, a.max_dest_rd_atomic)
        };
        if qpt == IBV_QPT_UD && w.remote_qkey != qkey {
            return Step::ok();
        }
        // A class C error (RC): the sender sees `status`, the responder moves to ERR.
        let refuse = |status| Step::Done {
            status,
            responder: Some(dest),
        };
        let needs = match op {
            IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM => ACCESS_REMOTE_WRITE,
            IBV_WR_RDMA_READ => ACCESS_REMOTE_READ,
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => ACCESS_REMOTE_ATOMIC,
            _ => 0,
        };
        if access & needs != needs {
            return match qpt {
                IBV_QPT_RC => refuse(IBV_WC_REM_INV_REQ_ERR),
                _ => Step::ok(), // UC: dropped
            };
        }
        if needs & (ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC) != 0 && max_dest_rd_atomic == 0 {
            return refuse(IBV_WC_REM_INV_REQ_ERR);
        }

        if op == IBV_WR_RDMA_WRITE_WITH_IMM && payload.len() > packet_bytes(qp) {
            // A multi-packet write with immediate: rxe checks the key and range at the first
            // packet, which needs no receive, so a bad one is found before a missing receive.
            let target = check_remote(dest, w, ACCESS_REMOTE_WRITE, payload.len() as u64);
            if target.is_err() {
                return match qpt {
                    IBV_QPT_RC => refuse(IBV_WC_REM_ACCESS_ERR),
                    _ => Step::ok(), // UC: dropped
                };
            }
        }

        // The receive the message consumes.
        let recv = if matches!(
            op,
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE_WITH_IMM
        ) {
            match take_recv(dest) {
                Some(r) => Some(r),
                None => {
                    if op == IBV_WR_RDMA_WRITE_WITH_IMM {
                        write_leading_packets(qp, dest, w, &payload);
                    }
                    if qpt == IBV_QPT_RC {
                        return rnr_nak(qp, dest);
                    }
                    return Step::ok(); // UC, UD: dropped
                }
            }
        } else {
            None
        };

        match op {
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM => {
                let recv = recv.expect("taken above");
                let data = if qpt == IBV_QPT_UD {
                    let mut d = grh(w, payload.len());
                    d.extend_from_slice(&payload);
                    d
                } else {
                    payload
                };
                if scatter(dest, &recv.sges, &data).is_err() {
                    // A malformed receive (class A): the responder moves to ERR. What came
                    // before the part that did not fit was placed, as rxe places each packet
                    // as it comes, and a UD message's GRH before its payload.
                    let room: usize = recv.sges.iter().map(|s| s.length as usize).sum();
                    let placed = match qpt {
                        IBV_QPT_UD if room >= GRH_LEN => GRH_LEN,
                        IBV_QPT_UD => 0,
                        _ => room / packet_bytes(qp) * packet_bytes(qp),
                    };
                    if data.len() > room && placed > 0 {
                        let _ = scatter(dest, &recv.sges, &data[..placed]);
                    }
                    recv_failure(dest, recv.wr_id, IBV_WC_LOC_QP_OP_ERR, w.solicited);
                    let status = match qpt {
                        IBV_QPT_RC => IBV_WC_REM_OP_ERR,
                        _ => IBV_WC_SUCCESS,
                    };
                    return Step::Done {
                        status,
                        responder: Some(dest),
                    };
                }
                let src_qp = if qpt == IBV_QPT_UD {
                    qp.ibv.qp_base.qp_num
                } else {
                    0
                };
                if !recv_success(dest, &recv, w, IBV_WC_RECV, data.len() as u32, src_qp) {
                    return Step::Overflowed(dest);
                }
                Step::ok()
            }
            IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM => {
                let len = payload.len() as u64;
                if len > 0 {
                    let target = check_remote(dest, w, ACCESS_REMOTE_WRITE, len);
                    let Ok(p) = target else {
                        if qpt != IBV_QPT_RC {
                            // UC: dropped (a receive it took stays for the next message).
                            if let Some(r) = recv {
                                give_back(dest, r);
                            }
                            return Step::ok();
                        }
                        if let Some(r) = recv {
                            recv_failure(dest, r.wr_id, IBV_WC_REM_ACCESS_ERR, w.solicited);
                        }
                        return refuse(IBV_WC_REM_ACCESS_ERR);
                    };
                    // Inside a registered, remotely writable region of the responder (checked),
                    // registered while the fabric lock is held.
                    write_registered(p, &payload);
                }
                if let Some(r) = recv {
                    if !recv_success(dest, &r, w, IBV_WC_RECV_RDMA_WITH_IMM, len as u32, 0) {
                        return Step::Overflowed(dest);
                    }
                }
                Step::ok()
            }
            IBV_WR_RDMA_READ => {
                let mut data = Vec::new();
                if data.try_reserve_exact(w.length as usize).is_err() {
                    return Step::fail(IBV_WC_GENERAL_ERR);
                }
                if w.length > 0 {
                    let source = check_remote(dest, w, ACCESS_REMOTE_READ, w.length);
                    let Ok(p) = source else {
                        return refuse(IBV_WC_REM_ACCESS_ERR);
                    };
                    // Inside a registered, remotely readable region (checked), which stays
                    // registered while the fabric lock is held.
                    read_registered(p, w.length as usize, &mut data);
                }
                // The response lands in the local SGEs; any failure there is LOC_PROT_ERR.
                match land(qp, w, &data) {
                    Ok(()) => Step::ok(),
                    Err(_) => Step::fail(IBV_WC_LOC_PROT_ERR),
                }
            }
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => {
                let target = check_remote(dest, w, ACCESS_REMOTE_ATOMIC, 8);
                let Ok(p) = target else {
                    return refuse(IBV_WC_REM_ACCESS_ERR);
                };
                // 8 bytes inside a registered region (checked), 8-byte aligned (checked at the
                // post). IB atomics are atomic with respect to the HCA's other atomics only
                // (IBV_ATOMIC_HCA, the atomic_cap this device reports, as rxe does), not to the
                // CPU. So the word is not an AtomicU64: the program writes the same bytes with
                // byte-wise atomic copies (Mr::write), and an 8-byte atomic write racing 1-byte
                // atomic accesses is a mixed-size race, undefined in Rust's memory model. The
                // read-modify-write runs under the lock all of this device's atomics take,
                // through the same byte-wise primitives as every other access.
                let held = DEVICE_ATOMICS.lock();
                let mut word = Vec::with_capacity(8);
                read_registered(p, 8, &mut word);
                let original = u64::from_ne_bytes(word[..].try_into().expect("8 bytes"));
                let new = if op == IBV_WR_ATOMIC_FETCH_AND_ADD {
                    Some(original.wrapping_add(w.compare_add))
                } else {
                    (original == w.compare_add).then_some(w.swap)
                };
                if let Some(new) = new {
                    write_registered(p, &new.to_ne_bytes());
                }
                drop(held);
                match land(qp, w, &original.to_ne_bytes()) {
                    Ok(()) => Step::ok(),
                    Err(_) => Step::fail(IBV_WC_LOC_PROT_ERR),
                }
            }
            _ => unreachable!("opcodes checked above"),
        }
    }
}

/// The GRH rxe writes in front of a UD receive for a RoCE v2 IPv6 GID: the IPv6 header of the
/// packet (traffic class from the AH, flow label 0, hop limit 64, the UDP payload length).
fn grh(w: &SendWqe, payload: usize) -> Vec<u8> {
    let ah = w.ah.expect("a UD request has an AH");
    // UDP (8) + BTH (12) + DETH (8) + ImmDt (4, with immediate data) + payload, padded to a
    // multiple of 4 (the BTH's pad count), + ICRC (4).
    let pad = (4 - payload % 4) % 4;
    let udp_len = 8 + 12 + 8 + if w.has_imm() { 4 } else { 0 } + payload + pad + 4;
    let tc = ah.grh.traffic_class;
    let mut h = Vec::with_capacity(GRH_LEN);
    h.extend_from_slice(&[0x60 | tc >> 4, tc << 4, 0, 0]);
    h.extend_from_slice(&(udp_len as u16).to_be_bytes());
    h.push(17); // next header: UDP
    h.push(64); // hop limit
    h.extend_from_slice(&super::super::port_gid());
    // SAFETY: a GID is 16 bytes either way.
    h.extend_from_slice(&unsafe { ah.grh.dgid.raw });
    h
}
