//! The connection manager's state: ids, channels and their events, and how an event is made.

use super::*;

impl State {
    fn random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.seed;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn psn(&mut self) -> u32 {
        (self.random() >> 40) as u32 & 0xff_ffff
    }

    /// The handle of a live id of this module.
    ///
    /// # Safety
    /// `id` is an id this module made and has not freed.
    pub(super) unsafe fn handle(&self, id: *mut sys::rdma_cm_id) -> Result<u64, Errno> {
        if id.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: an IdBox, whose first field is the rdma_cm_id.
        let h = unsafe { (*(id as *mut IdBox)).handle };
        if self.ids.contains_key(&h) {
            Ok(h)
        } else {
            Err(libc::EINVAL)
        }
    }

    pub(super) fn id(&mut self, h: u64) -> &mut Id {
        self.ids.get_mut(&h).expect("a live id")
    }

    /// Queues an event of type `ty` for the id `to` (dropped if it is gone or being destroyed),
    /// with `fill` writing the parameters.
    pub(super) fn deliver(
        &mut self,
        to: u64,
        ty: u32,
        status: i32,
        fill: impl FnOnce(&mut EventBox),
    ) {
        let Some(id) = self.ids.get(&to) else { return };
        if id.dying {
            return;
        }
        let mut b = new_event(id.raw as *mut sys::rdma_cm_id, ty, status, to);
        fill(&mut b);
        // SAFETY: the id's channel outlives it (destroy_event_channel's contract, and the
        // channel count below keeps a channel with ids from being freed).
        unsafe { channel(id.ch) }.q.push(Ev(b));
    }

    /// A REJ from `from`'s side to its peer: REJECTED (status `reason`, 148 bytes of private
    /// data) where the peer is still connecting; the peer's CM goes idle.
    pub(super) fn send_rej(&mut self, peer: u64, reason: i32, data: &[u8]) {
        let waiting = |cm| matches!(cm, Cm::ReqSent | Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd);
        self.refuse(peer, waiting, ev::RDMA_CM_EVENT_REJECTED, reason, |e| {
            set_conn_data(e, data, REJ_PRIVATE)
        });
    }

    /// A SIDR REP with a status other than success: UNREACHABLE with that status.
    pub(super) fn send_sidr_fail(&mut self, peer: u64, status: i32, data: &[u8]) {
        let waiting = |cm| cm == Cm::SidrReqSent;
        self.refuse(peer, waiting, ev::RDMA_CM_EVENT_UNREACHABLE, status, |e| {
            set_ud_data(e, data, SIDR_REP_PRIVATE)
        });
    }

    /// A refusal to `peer` (a REJ, a failed SIDR REP) where its CM is in a state `waiting`
    /// accepts: the peer's CM goes idle and, if it is still connecting, it gets `ty` with
    /// `status`, `fill` writing the parameters.
    fn refuse(
        &mut self,
        peer: u64,
        waiting: impl FnOnce(Cm) -> bool,
        ty: u32,
        status: i32,
        fill: impl FnOnce(&mut EventBox),
    ) {
        let Some(p) = self.ids.get_mut(&peer) else {
            return;
        };
        if !waiting(p.cm) {
            return;
        }
        p.cm = Cm::Idle;
        if p.st != St::Connect {
            return;
        }
        self.deliver(peer, ty, status, fill);
    }

    /// `h`'s CM enters TIMEWAIT (it sent or received the DREP): TIMEWAIT_EXIT follows after
    /// [`TIMEWAIT`], if the id is still there.
    pub(super) fn enter_timewait(&mut self, h: u64) {
        let Some(i) = self.ids.get_mut(&h) else {
            return;
        };
        i.cm = Cm::Timewait;
        i.timewait += 1;
        let n = i.timewait;
        arm_timewait(std::time::Instant::now() + TIMEWAIT, h, n);
    }

    /// A timer of [`State::enter_timewait`] fired.
    pub(super) fn timewait_exit(&mut self, h: u64, n: u64) {
        let Some(i) = self.ids.get_mut(&h) else {
            return;
        };
        if i.cm != Cm::Timewait || i.timewait != n {
            return;
        }
        i.cm = Cm::Idle;
        // cma_ib_handler passes IB_CM_TIMEWAIT_EXIT on only in RDMA_CM_DISCONNECT.
        if i.st == St::Disconnect {
            self.deliver(h, ev::RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, |_| {});
        }
    }

    /// A DREQ or DREP reaching `peer`: DISCONNECTED where its rdma_cm state is still CONNECT.
    pub(super) fn peer_disconnected(&mut self, peer: u64) {
        let Some(p) = self.ids.get_mut(&peer) else {
            return;
        };
        if p.st != St::Connect {
            return;
        }
        p.st = St::Disconnect;
        self.deliver(peer, ev::RDMA_CM_EVENT_DISCONNECTED, 0, |_| {});
    }

    /// Binds `h` to `addr` (port 0: an ephemeral one), as cma_get_port does.
    pub(super) fn bind_port(&mut self, h: u64, addr: Addr) -> Result<Addr, Errno> {
        let ps = self.id(h).ps;
        let port = if addr.port == 0 {
            let span = u64::from(EPHEMERAL.1 - EPHEMERAL.0) + 1;
            let start = self.random() % span;
            (0..span)
                .map(|i| EPHEMERAL.0 + ((start + i) % span) as u16)
                .find(|p| !self.ports.contains_key(&(ps, *p)))
                .ok_or(libc::EADDRNOTAVAIL)?
        } else {
            if let Some(owners) = self.ports.get(&(ps, addr.port)) {
                for o in owners {
                    let Some(cur) = self.ids.get(o).and_then(|i| i.src) else {
                        continue;
                    };
                    // cma_check_port skips ids of another family only when both are afonly:
                    // IPv4 ids are, IPv6 ones are not (bindv6only = 0), so it never does.
                    if addr.is_any() || cur.is_any() {
                        return Err(libc::EADDRNOTAVAIL);
                    }
                    if addr.same_ip(&cur) {
                        return Err(libc::EADDRINUSE);
                    }
                }
            }
            addr.port
        };
        self.ports.entry((ps, port)).or_default().push(h);
        let bound = addr.with_port(port);
        let id = self.id(h);
        id.src = Some(bound);
        id.holds_port = true;
        Ok(bound)
    }

    fn release_port(&mut self, h: u64) {
        let id = self.id(h);
        if !id.holds_port {
            return;
        }
        id.holds_port = false;
        let key = (id.ps, id.src.map_or(0, |a| a.port));
        if let Some(v) = self.ports.get_mut(&key) {
            v.retain(|o| *o != h);
            if v.is_empty() {
                self.ports.remove(&key);
            }
        }
    }

    /// The listener for a connect to `dst` in port space `ps`: one bound to that address, or
    /// to the wildcard.
    pub(super) fn listener(&self, ps: u32, dst: &Addr) -> Option<u64> {
        let owners = self.ports.get(&(ps, dst.port))?;
        let listening = |o: &&u64| {
            self.ids
                .get(o)
                .is_some_and(|i| i.st == St::Listen && !i.dying)
        };
        let addr_of = |o: &u64| self.ids.get(o).and_then(|i| i.src);
        owners
            .iter()
            .filter(listening)
            .find(|o| addr_of(o).is_some_and(|a| a.same_ip(dst)))
            .or_else(|| {
                owners
                    .iter()
                    .filter(listening)
                    .find(|o| addr_of(o).is_some_and(|a| a.is_any()))
            })
            .copied()
    }

    /// Writes the id's addresses and port into its `rdma_cm_id`.
    pub(super) fn publish(&self, h: u64) {
        let id = &self.ids[&h];
        let p = id.raw as *mut IdBox;
        // SAFETY: a live IdBox; only this module writes it, under the lock.
        unsafe {
            let r = &mut (*p).raw;
            if let Some(a) = id.src {
                r.route.addr.src_addr_union.src_storage = a.store();
            }
            if let Some(a) = id.dst {
                r.route.addr.dst_addr_union.dst_storage = a.store();
            }
            if id.on_device {
                r.port_num = 1;
                let gid = sys::ibv_gid {
                    raw: super::super::port_gid(),
                };
                r.route.addr.addr.ibaddr = sys::rdma_ib_addr {
                    sgid: gid,
                    dgid: if id.dst.is_some() {
                        gid
                    } else {
                        sys::ibv_gid { raw: [0; 16] }
                    },
                    pkey: 0xffff_u16.to_be(),
                };
            }
        }
    }

    /// Removes the id's unread events from its channel; the new ids of unread connect requests
    /// are destroyed (which rejects those connections), as ucma_cleanup_ctx_events does.
    fn drop_unread(&mut self, h: u64) {
        let ch = self.ids[&h].ch;
        // SAFETY: the id's channel is live.
        let gone = unsafe { channel(ch) }.q.take_matching(|e| e.0.owner == h);
        for e in gone {
            if e.0.child != 0 {
                self.kill(e.0.child);
            }
        }
    }

    /// What destroying `h` does to its peer and its bindings (cm_destroy_id); then `h` is
    /// marked dying. Does not wait for acks nor free the id.
    pub(super) fn retire(&mut self, h: u64) {
        let (cm, peer) = {
            let id = self.id(h);
            id.dying = true;
            (id.cm, id.peer)
        };
        match cm {
            // cm_destroy_id sends a REJ (IB_CM_REJ_TIMEOUT) here; on rxe0 (Linux 6.1) it
            // leaves the passive side's CM id idle without any event: an accept there is then
            // EINVAL.
            Cm::ReqSent => {
                if let Some(p) = self.ids.get_mut(&peer) {
                    if p.cm == Cm::ReqRcvd {
                        p.cm = Cm::Idle;
                    }
                }
            }
            Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd => {
                self.send_rej(peer, REJ_CONSUMER_DEFINED, &[])
            }
            Cm::Established => {
                // DREQ: the peer answers with its own disconnect or destroy.
                if let Some(p) = self.ids.get_mut(&peer) {
                    if p.cm == Cm::Established {
                        p.cm = Cm::DreqRcvd;
                        self.peer_disconnected(peer);
                    }
                }
            }
            // DREP.
            Cm::DreqRcvd if self.ids.get(&peer).is_some_and(|p| p.cm == Cm::DreqSent) => {
                self.enter_timewait(peer);
                self.peer_disconnected(peer);
            }
            Cm::SidrReqRcvd => self.send_sidr_fail(peer, SIDR_REJECT, &[]),
            _ => {}
        }
        self.id(h).cm = Cm::None;
        self.release_port(h);
        self.drop_unread(h);
    }

    /// Destroys an id nobody was handed yet (the new id of an unread connect request).
    fn kill(&mut self, h: u64) {
        if !self.ids.contains_key(&h) {
            return;
        }
        self.retire(h);
        self.free(h);
    }

    /// Frees the id's memory and state (every reported event acked).
    pub(super) fn free(&mut self, h: u64) {
        if let Some(id) = self.ids.remove(&h) {
            if let Some(n) = self.channels.get_mut(&id.ch) {
                *n -= 1;
            }
            // SAFETY: the id's channel is live (it had an id until now).
            unsafe { counters(id.ch) }
                .cm_ids
                .fetch_sub(1, Ordering::Relaxed);
            // SAFETY: made by Box::into_raw in new_id; removed from the table first, so nothing
            // finds it any more.
            drop(unsafe { Box::from_raw(id.raw as *mut IdBox) });
        }
    }

    /// A new id on channel `ch` (of the software context `ctx`'s device).
    pub(super) fn new_id(&mut self, ch: usize, context: *mut c_void, ps: u32, ud: bool) -> u64 {
        let h = self.next;
        self.next += 1;
        // SAFETY: rdma_cm_id is plain C data (pointers, unions of sockaddrs); all-zero is valid.
        let mut b: Box<IdBox> = Box::new(IdBox {
            raw: unsafe { std::mem::zeroed() },
            handle: h,
        });
        b.raw.channel = ch as *mut sys::rdma_event_channel;
        b.raw.context = context;
        b.raw.ps = ps;
        b.raw.qp_type = if ud {
            sys::ibv_qp_type::IBV_QPT_UD
        } else {
            sys::ibv_qp_type::IBV_QPT_RC
        };
        let raw = Box::into_raw(b) as usize;
        // SAFETY: the channel is live, and so is its software context (its cm_channels count
        // keeps the context from closing).
        unsafe { counters(ch) }
            .cm_ids
            .fetch_add(1, Ordering::Relaxed);
        let psn = self.psn();
        self.ids.insert(
            h,
            Id {
                raw,
                ch,
                ud,
                ps,
                st: St::Idle,
                cm: Cm::None,
                dying: false,
                src: None,
                dst: None,
                holds_port: false,
                on_device: false,
                backlog: 0,
                peer: 0,
                qpn: 0,
                peer_qpn: 0,
                psn,
                peer_psn: 0,
                resp_res: 0,
                init_depth: 0,
                retry: 0,
                rnr_retry: 0,
                ack_timeout: None,
                reported: 0,
                acked: 0,
                timewait: 0,
            },
        );
        *self.channels.entry(ch).or_default() += 1;
        h
    }
}

/// The live-object counters of the context channel `ch` was made for.
///
/// # Safety
/// `ch` is a live channel of this module.
pub(super) unsafe fn counters<'a>(ch: usize) -> &'a super::super::Counters {
    // SAFETY: caller's contract; a channel's context is a live software context (its
    // cm_channels count keeps it from closing while the channel lives).
    unsafe { &super::super::sw_context(channel(ch).ctx as *mut sys::ibv_context).live }
}

/// # Safety
/// `ch` is a live channel of this module.
pub(super) unsafe fn channel<'a>(ch: usize) -> &'a Channel {
    // SAFETY: caller's contract.
    unsafe { &*(ch as *const Channel) }
}

pub(super) fn new_event(
    id: *mut sys::rdma_cm_id,
    ty: u32,
    status: i32,
    owner: u64,
) -> Box<EventBox> {
    // SAFETY: rdma_cm_event is plain C data; all-zero is valid (NULL pointers, zero lengths).
    let mut b: Box<EventBox> = Box::new(EventBox {
        raw: unsafe { std::mem::zeroed() },
        data: [0; 256],
        owner,
        child: 0,
    });
    b.raw.id = id;
    b.raw.event = ty;
    b.raw.status = status;
    b
}

/// `data` zero-padded to `len` bytes as the conn param's private data.
pub(super) fn set_conn_data(e: &mut EventBox, data: &[u8], len: usize) {
    e.data[..data.len()].copy_from_slice(data);
    // The union member `conn` is the one the event's type uses (writing a Copy field is safe).
    e.raw.param.conn.private_data_len = len as u8;
    e.raw.param.conn.private_data = e.data.as_ptr().cast();
}

/// `data` zero-padded to `len` bytes as the UD param's private data.
pub(super) fn set_ud_data(e: &mut EventBox, data: &[u8], len: usize) {
    e.data[..data.len()].copy_from_slice(data);
    // The union member `ud` is the one the event's type uses (writing a Copy field is safe).
    e.raw.param.ud.private_data_len = len as u8;
    e.raw.param.ud.private_data = e.data.as_ptr().cast();
}

/// The private data a caller passed: `len` bytes at `p` (none when NULL or 0).
///
/// # Safety
/// `p` readable for `len` bytes unless NULL.
pub(super) unsafe fn user_data<'a>(p: *const c_void, len: u8) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: caller's contract.
        unsafe { std::slice::from_raw_parts(p.cast(), len.into()) }
    }
}
