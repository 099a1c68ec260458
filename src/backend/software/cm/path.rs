//! The verbs of rdma_cm(7) for the software device (its CmPath).

use super::*;

impl CmPath for SoftwareCm {
    unsafe fn create_event_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::rdma_event_channel>, Errno> {
        let q = EventQueue::new()?;
        let ch = Box::new(Channel {
            raw: sys::rdma_event_channel { fd: q.raw_fd() },
            ctx: ctx as usize,
            q,
        });
        let p = Box::into_raw(ch);
        lock().channels.insert(p as usize, 0);
        // SAFETY: a live software context (caller's contract).
        unsafe { super::super::sw_context(ctx) }
            .live
            .cm_channels
            .fetch_add(1, Ordering::Relaxed);
        Ok(NonNull::new(p.cast()).expect("Box::into_raw is not NULL"))
    }

    unsafe fn destroy_event_channel(&self, ch: *mut sys::rdma_event_channel) {
        let mut s = lock();
        match s.channels.get(&(ch as usize)) {
            Some(0) => {
                s.channels.remove(&(ch as usize));
            }
            // Ids still use it (the caller broke the contract): leaked rather than freed
            // under them.
            _ => return,
        }
        drop(s);
        // SAFETY: the channel is still allocated; its context is live until this count drops.
        unsafe { counters(ch as usize) }
            .cm_channels
            .fetch_sub(1, Ordering::Relaxed);
        // SAFETY: made by Box::into_raw in create_event_channel and removed from the table;
        // no id refers to it. Its unread events (there are none: every id is gone) drop with
        // the queue.
        drop(unsafe { Box::from_raw(ch as *mut Channel) });
    }

    unsafe fn create_id(
        &self,
        ch: *mut sys::rdma_event_channel,
        context: *mut c_void,
        ps: sys::rdma_port_space::Type,
    ) -> Result<NonNull<sys::rdma_cm_id>, Errno> {
        let ud = match ps {
            sys::rdma_port_space::RDMA_PS_TCP => false,
            sys::rdma_port_space::RDMA_PS_UDP => true,
            _ => return Err(libc::EOPNOTSUPP),
        };
        let mut s = lock();
        if !s.channels.contains_key(&(ch as usize)) {
            return Err(libc::EINVAL);
        }
        let h = s.new_id(ch as usize, context, ps, ud);
        Ok(NonNull::new(s.ids[&h].raw as *mut sys::rdma_cm_id).expect("not NULL"))
    }

    unsafe fn destroy_id(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let g = global();
        let mut s = g.m.lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        s.retire(h);
        // librdmacm's rdma_destroy_id: "wait for all events to be acked".
        loop {
            let i = &s.ids[&h];
            if i.reported == i.acked {
                break;
            }
            g.acked.wait(&mut s);
        }
        s.free(h);
        Ok(())
    }

    unsafe fn bind_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        addr: *mut libc::sockaddr,
    ) -> Result<(), Errno> {
        // SAFETY: caller's contract: a valid address.
        let a = unsafe { Addr::read(addr) }?;
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st != St::Idle {
            return Err(libc::EINVAL);
        }
        if !a.is_local() {
            return Err(libc::EADDRNOTAVAIL);
        }
        s.bind_port(h, a)?;
        let i = s.id(h);
        i.st = St::AddrBound;
        i.on_device = !a.is_any();
        s.publish(h);
        Ok(())
    }

    unsafe fn resolve_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        src: *mut libc::sockaddr,
        dst: *mut libc::sockaddr,
        _timeout_ms: i32,
    ) -> Result<(), Errno> {
        // SAFETY: caller's contract.
        let d = unsafe { Addr::read(dst) }?;
        // SAFETY: as above; `src` may be NULL.
        let sa = if src.is_null() {
            None
        } else {
            Some(unsafe { Addr::read(src) }?)
        };
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // resolve_prepare_src: an idle id is bound first (to `src`, or the wildcard of the
        // destination's family, port 0).
        match s.id(h).st {
            St::Idle => {
                let a = sa.unwrap_or(Addr::any_of(d.v6));
                if a.v6 != d.v6 {
                    return Err(libc::EINVAL);
                }
                if !a.is_local() {
                    return Err(libc::EADDRNOTAVAIL);
                }
                s.bind_port(h, a)?;
                s.id(h).st = St::AddrBound;
            }
            St::AddrBound => {}
            _ => return Err(libc::EINVAL),
        }
        let bound = s.id(h).src.expect("bound");
        if bound.v6 != d.v6 {
            return Err(libc::EINVAL);
        }
        if !d.is_local() {
            // No route from here: rdma_resolve_ip fails at once.
            return Err(libc::ENETUNREACH);
        }
        let i = s.id(h);
        i.dst = Some(d);
        if bound.is_any() && !d.is_any() {
            // The route's source address for a loopback destination is the destination.
            i.src = Some(Addr {
                port: bound.port,
                ..d
            });
        }
        i.on_device = true;
        i.st = St::AddrResolved;
        s.publish(h);
        s.deliver(h, ev::RDMA_CM_EVENT_ADDR_RESOLVED, 0, |_| {});
        Ok(())
    }

    unsafe fn resolve_route(
        &self,
        id: *mut sys::rdma_cm_id,
        _timeout_ms: i32,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st != St::AddrResolved {
            return Err(libc::EINVAL);
        }
        s.id(h).st = St::RouteResolved;
        // SAFETY: a live IdBox, written under the lock.
        unsafe { (*(s.ids[&h].raw as *mut IdBox)).raw.route.num_paths = 1 };
        s.deliver(h, ev::RDMA_CM_EVENT_ROUTE_RESOLVED, 0, |_| {});
        Ok(())
    }

    unsafe fn listen(&self, id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st == St::Idle {
            // rdma_listen binds an idle id to the IPv4 wildcard first.
            s.bind_port(h, Addr::any_of(false))?;
            s.id(h).st = St::AddrBound;
        }
        let i = s.id(h);
        if i.st != St::AddrBound {
            return Err(libc::EINVAL);
        }
        i.st = St::Listen;
        i.cm = Cm::Listen;
        i.backlog = if backlog > 0 && backlog < MAX_BACKLOG {
            backlog
        } else {
            MAX_BACKLOG
        };
        s.publish(h);
        Ok(())
    }

    unsafe fn connect(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (ud, st) = {
            let i = s.id(h);
            (i.ud, i.st)
        };
        // SAFETY: caller's contract.
        let (p, max, data) = unsafe { checked_param(param, ud, st, St::RouteResolved) }?;
        let limit = if ud { SIDR_REQ_PRIVATE } else { REQ_PRIVATE } - CMA_HDR;
        if data.len() > limit {
            return Err(libc::EINVAL);
        }
        let p = p.unwrap_or(sys::rdma_conn_param {
            private_data: ptr::null(),
            private_data_len: 0,
            responder_resources: 0,
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        });
        let depth = |v: u8| if v == MAX_DEPTH { max } else { v };
        let dst = s.id(h).dst.expect("resolved");
        let src = s.id(h).src.expect("bound");
        let lst = s.listener(s.ids[&h].ps, &dst);
        {
            let i = s.id(h);
            i.st = St::Connect;
            i.qpn = p.qp_num;
            i.init_depth = depth(p.initiator_depth);
            i.resp_res = depth(p.responder_resources);
            i.retry = p.retry_count.min(7);
            i.rnr_retry = p.rnr_retry_count.min(7);
            i.cm = if ud { Cm::SidrReqSent } else { Cm::ReqSent };
        }
        // cm_match_req's check for stale connections, before it looks for a listener: a REQ
        // naming a remote QP that another connection of the CM still holds is refused
        // (cm_insert_remote_qpn).
        let stale = !ud
            && s.ids.iter().any(|(o, i)| {
                *o != h
                    && !i.dying
                    && i.peer_qpn == p.qp_num
                    && matches!(
                        i.cm,
                        Cm::ReqRcvd
                            | Cm::RepSent
                            | Cm::RepRcvd
                            | Cm::Established
                            | Cm::DreqSent
                            | Cm::DreqRcvd
                            | Cm::Timewait
                    )
            });
        if stale {
            s.send_rej(h, REJ_STALE_CONN, &[]);
            return Ok(());
        }
        let listener = match lst {
            Some(l) if s.ids[&l].backlog > 0 => l,
            Some(_) => {
                // ucma's backlog is full: the request is refused as a destroyed new id
                // refuses it.
                if ud {
                    s.send_sidr_fail(h, SIDR_REJECT, &[]);
                } else {
                    s.send_rej(h, REJ_CONSUMER_DEFINED, &[]);
                }
                return Ok(());
            }
            None => {
                if ud {
                    s.send_sidr_fail(h, SIDR_UNSUPPORTED, &[]);
                } else {
                    s.send_rej(h, REJ_INVALID_SERVICE_ID, &[]);
                }
                return Ok(());
            }
        };
        // The listener's new id: same channel and context, addresses swapped.
        let (lch, lraw, lctx) = {
            let l = &s.ids[&listener];
            // SAFETY: a live IdBox.
            (l.ch, l.raw, unsafe { (*(l.raw as *mut IdBox)).raw.context })
        };
        let lps = s.ids[&listener].ps;
        let c = s.new_id(lch, lctx, lps, ud);
        let (my_psn, my_init, my_resp, my_retry, my_rnr) = {
            let i = &s.ids[&h];
            (i.psn, i.init_depth, i.resp_res, i.retry, i.rnr_retry)
        };
        let lport = s.ids[&listener].src.map_or(dst.port, |a| a.port);
        {
            let ci = s.id(c);
            ci.st = St::Connect;
            ci.cm = if ud { Cm::SidrReqRcvd } else { Cm::ReqRcvd };
            ci.src = Some(dst.with_port(lport));
            ci.dst = Some(src);
            ci.on_device = true;
            ci.peer = h;
            ci.peer_qpn = p.qp_num;
            ci.peer_psn = my_psn;
            // cm_format_req_event: the passive side's view is the active side's, swapped.
            ci.resp_res = my_init;
            ci.init_depth = my_resp;
            ci.retry = my_retry;
            ci.rnr_retry = my_rnr;
        }
        s.publish(c);
        s.id(h).peer = c;
        s.id(listener).backlog -= 1;
        let craw = s.ids[&c].raw as *mut sys::rdma_cm_id;
        let mut e = new_event(craw, ev::RDMA_CM_EVENT_CONNECT_REQUEST, 0, listener);
        e.child = c;
        e.raw.listen_id = lraw as *mut sys::rdma_cm_id;
        if ud {
            set_ud_data(&mut e, data, SIDR_REQ_PRIVATE - CMA_HDR);
        } else {
            set_conn_data(&mut e, data, REQ_PRIVATE - CMA_HDR);
            // SAFETY: writing Copy fields of the `conn` member.
            unsafe {
                let cp = &mut e.raw.param.conn;
                cp.responder_resources = my_init;
                cp.initiator_depth = my_resp;
                cp.flow_control = p.flow_control;
                cp.retry_count = my_retry;
                cp.rnr_retry_count = my_rnr;
                cp.srq = p.srq;
                cp.qp_num = p.qp_num;
            }
        }
        // SAFETY: the listener's channel is live.
        unsafe { channel(lch) }.q.push(Ev(e));
        Ok(())
    }

    unsafe fn accept(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (ud, st, cm, peer) = {
            let i = s.id(h);
            (i.ud, i.st, i.cm, i.peer)
        };
        // SAFETY: caller's contract.
        let (p, max, data) = unsafe { checked_param(param, ud, st, St::Connect) }?;
        if ud {
            if cm != Cm::SidrReqRcvd {
                return Err(libc::EINVAL);
            }
            if data.len() > SIDR_REP_PRIVATE {
                // __rdma_accept's failure path rejects the request.
                s.id(h).cm = Cm::Idle;
                s.send_sidr_fail(peer, SIDR_REJECT, &[]);
                return Err(libc::EINVAL);
            }
            let qpn = p.map_or(0, |p| p.qp_num);
            s.id(h).qpn = qpn;
            s.id(h).cm = Cm::Idle;
            if s.ids.get(&peer).is_some_and(|a| a.cm == Cm::SidrReqSent) {
                s.id(peer).cm = Cm::Idle;
                s.id(peer).peer_qpn = qpn;
                if s.ids[&peer].st == St::Connect {
                    s.deliver(peer, ev::RDMA_CM_EVENT_ESTABLISHED, 0, |e| {
                        set_ud_data(e, data, SIDR_REP_PRIVATE);
                        // SAFETY: writing Copy fields of the `ud` member.
                        unsafe {
                            let u = &mut e.raw.param.ud;
                            u.qp_num = qpn;
                            u.qkey = UDP_QKEY;
                            u.ah_attr = peer_ah();
                        }
                    });
                }
            }
            return Ok(());
        }
        if cm != Cm::ReqRcvd {
            return Err(libc::EINVAL);
        }
        let p = p.expect("checked above");
        if data.len() > REP_PRIVATE {
            s.id(h).cm = Cm::Idle;
            s.send_rej(peer, REJ_CONSUMER_DEFINED, &[]);
            return Err(libc::EINVAL);
        }
        let (init, resp) = {
            let i = s.id(h);
            // librdmacm's rdma_accept: 0xff keeps what the request offered, within the device.
            i.init_depth = if p.initiator_depth == MAX_DEPTH {
                i.init_depth.min(max)
            } else {
                p.initiator_depth
            };
            i.resp_res = if p.responder_resources == MAX_DEPTH {
                i.resp_res.min(max)
            } else {
                p.responder_resources
            };
            i.qpn = p.qp_num;
            i.cm = Cm::RepSent;
            (i.init_depth, i.resp_res)
        };
        let my_psn = s.ids[&h].psn;
        let rnr = p.rnr_retry_count.min(7);
        let Some(a) = s.ids.get_mut(&peer) else {
            return Ok(());
        };
        if a.cm != Cm::ReqSent {
            return Ok(());
        }
        a.cm = Cm::RepRcvd;
        a.peer_qpn = p.qp_num;
        a.peer_psn = my_psn;
        // cm_rep_handler: the active side's view is the passive side's, swapped.
        a.init_depth = resp;
        a.resp_res = init;
        a.rnr_retry = rnr;
        if a.st != St::Connect {
            return Ok(());
        }
        s.deliver(peer, ev::RDMA_CM_EVENT_CONNECT_RESPONSE, 0, |e| {
            set_conn_data(e, data, REP_PRIVATE);
            // SAFETY: writing Copy fields of the `conn` member.
            unsafe {
                let c = &mut e.raw.param.conn;
                c.responder_resources = init;
                c.initiator_depth = resp;
                c.flow_control = p.flow_control;
                c.rnr_retry_count = rnr;
                c.srq = p.srq;
                c.qp_num = p.qp_num;
            }
        });
        Ok(())
    }

    unsafe fn reject(
        &self,
        id: *mut sys::rdma_cm_id,
        data: *const c_void,
        len: u8,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // SAFETY: caller's contract.
        let d = unsafe { user_data(data, len) };
        let (ud, cm, peer) = {
            let i = s.id(h);
            (i.ud, i.cm, i.peer)
        };
        if cm == Cm::None {
            return Err(libc::EINVAL);
        }
        if ud {
            if cm != Cm::SidrReqRcvd || d.len() > SIDR_REP_PRIVATE {
                return Err(libc::EINVAL);
            }
            s.id(h).cm = Cm::Idle;
            s.send_sidr_fail(peer, SIDR_REJECT, d);
            return Ok(());
        }
        if d.len() > REJ_PRIVATE
            || !matches!(cm, Cm::ReqSent | Cm::ReqRcvd | Cm::RepRcvd | Cm::RepSent)
        {
            return Err(libc::EINVAL);
        }
        s.id(h).cm = Cm::Idle;
        // ucma_reject: librdmacm's reason 0 is IB_CM_REJ_CONSUMER_DEFINED.
        s.send_rej(peer, REJ_CONSUMER_DEFINED, d);
        Ok(())
    }

    unsafe fn establish(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (st, cm, peer, ud) = {
            let i = s.id(h);
            (i.st, i.cm, i.peer, i.ud)
        };
        if st != St::Connect || ud {
            return Err(libc::EINVAL);
        }
        match cm {
            Cm::RepRcvd => {
                // The RTU.
                s.id(h).cm = Cm::Established;
                if let Some(p) = s.ids.get_mut(&peer) {
                    if p.cm == Cm::RepSent {
                        p.cm = Cm::Established;
                        if p.st == St::Connect {
                            s.deliver(peer, ev::RDMA_CM_EVENT_ESTABLISHED, 0, |_| {});
                        }
                    }
                }
                Ok(())
            }
            Cm::ReqRcvd => {
                // cma_rep_recv fails to send an RTU here and rejects the request.
                s.id(h).cm = Cm::Idle;
                s.send_rej(peer, REJ_CONSUMER_DEFINED, &[]);
                Err(libc::EINVAL)
            }
            _ => Err(libc::EINVAL),
        }
    }

    unsafe fn disconnect(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (cm, peer, on_device) = {
            let i = s.id(h);
            (i.cm, i.peer, i.on_device)
        };
        // librdmacm's ucma_shutdown needs the id's device; the kernel a CM id.
        if !on_device || cm == Cm::None {
            return Err(libc::EINVAL);
        }
        match cm {
            Cm::Established => {
                // DREQ.
                s.id(h).cm = Cm::DreqSent;
                if let Some(p) = s.ids.get_mut(&peer) {
                    if p.cm == Cm::Established {
                        p.cm = Cm::DreqRcvd;
                        s.peer_disconnected(peer);
                    }
                }
            }
            Cm::DreqRcvd => {
                // DREP: both ends are disconnected now, and wait in TIMEWAIT.
                s.enter_timewait(h);
                if s.ids.get(&peer).is_some_and(|p| p.cm == Cm::DreqSent) {
                    s.enter_timewait(peer);
                    s.peer_disconnected(peer);
                }
            }
            // rdma_disconnect succeeds whatever the CM state once the id has a CM id.
            _ => {}
        }
        Ok(())
    }

    unsafe fn init_qp_attr(
        &self,
        id: *mut sys::rdma_cm_id,
        attr: *mut sys::ibv_qp_attr,
        mask: *mut i32,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // SAFETY: caller's contract: readable and writable.
        let state = unsafe { (*attr).qp_state };
        let i = s.id(h);
        if !i.on_device {
            return Err(libc::EINVAL);
        }
        // SAFETY: ibv_qp_attr is plain C data; ucma_init_qp_attr zeroes it too.
        let mut a: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = state;
        let m;
        use sys::ibv_qp_state::*;
        if i.ud || i.cm == Cm::None {
            // cma_ib_init_qp_attr, whatever the state asked for.
            a.pkey_index = 0;
            a.port_num = 1;
            let mut mm = STATE | PKEY_INDEX | PORT;
            if i.ud {
                a.qkey = UDP_QKEY;
                mm |= QKEY;
            } else {
                a.qp_access_flags = 0;
                mm |= ACCESS_FLAGS;
            }
            if state == IBV_QPS_RTR {
                a.rq_psn = i.peer_psn;
            }
            m = mm;
        } else {
            let connected = matches!(
                i.cm,
                Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd | Cm::Established
            );
            match state {
                IBV_QPS_INIT if connected || i.cm == Cm::ReqSent => {
                    a.qp_access_flags = REMOTE_WRITE;
                    if i.resp_res > 0 {
                        a.qp_access_flags |= REMOTE_READ | REMOTE_ATOMIC;
                    }
                    a.pkey_index = 0;
                    a.port_num = 1;
                    m = STATE | ACCESS_FLAGS | PKEY_INDEX | PORT;
                }
                IBV_QPS_RTR if connected => {
                    a.ah_attr = peer_ah();
                    a.path_mtu = super::super::ACTIVE_MTU;
                    a.dest_qp_num = i.peer_qpn;
                    a.rq_psn = i.peer_psn;
                    a.max_dest_rd_atomic = i.resp_res;
                    a.min_rnr_timer = 0;
                    m = STATE
                        | AV
                        | PATH_MTU
                        | DEST_QPN
                        | RQ_PSN
                        | MAX_DEST_RD_ATOMIC
                        | MIN_RNR_TIMER;
                }
                IBV_QPS_RTS if connected => {
                    a.sq_psn = i.psn;
                    a.retry_cnt = i.retry;
                    a.rnr_retry = i.rnr_retry;
                    a.max_rd_atomic = i.init_depth;
                    a.timeout = i.ack_timeout.unwrap_or(ACK_TIMEOUT);
                    m = STATE | SQ_PSN | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | TIMEOUT;
                }
                _ => return Err(libc::EINVAL),
            }
        }
        // SAFETY: caller's contract: writable.
        unsafe {
            attr.write(a);
            mask.write(m);
        }
        Ok(())
    }

    unsafe fn set_option(
        &self,
        id: *mut sys::rdma_cm_id,
        level: i32,
        optname: i32,
        optval: *mut c_void,
        optlen: usize,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if (level, optname) != (OPTION_ID, OPTION_ID_ACK_TIMEOUT) {
            // ucma_set_option_level: the other options are librdmacm's to model; this CM
            // has none of them.
            return Err(libc::ENOSYS);
        }
        // ucma_set_option_id: "if (optlen != sizeof(u8))"; rdma_set_ack_timeout: RC ids only.
        if optlen != 1 || optval.is_null() || s.id(h).ud {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: one readable byte.
        let t = unsafe { *optval.cast::<u8>() };
        s.id(h).ack_timeout = Some(t);
        Ok(())
    }

    unsafe fn get_cm_event(
        &self,
        ch: *mut sys::rdma_event_channel,
    ) -> Result<NonNull<sys::rdma_cm_event>, Errno> {
        loop {
            let q = {
                let mut s = lock();
                if !s.channels.contains_key(&(ch as usize)) {
                    return Err(libc::EINVAL);
                }
                // SAFETY: a live channel (just checked, under the lock that frees channels).
                let c = unsafe { channel(ch as usize) };
                if let Some(Ev(b)) = c.q.try_pop() {
                    // Counted under the lock destroy_id takes, before anything can look for
                    // it in the queue: the owner's destroy now waits for its ack.
                    if let Some(o) = s.ids.get_mut(&b.owner) {
                        o.reported += 1;
                        if b.child != 0 {
                            o.backlog += 1;
                        }
                    }
                    let p = Box::into_raw(b);
                    return Ok(NonNull::new(p.cast()).expect("not NULL"));
                }
                &c.q
            };
            // Unlocked: the channel stays live while the caller uses it (its contract).
            q.wait_readable()?;
        }
    }

    unsafe fn ack_cm_event(&self, e: *mut sys::rdma_cm_event) -> Result<(), Errno> {
        if e.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: an event get_cm_event returned (an EventBox made by
        // Box::into_raw), acked once.
        let b = unsafe { Box::from_raw(e as *mut EventBox) };
        let g = global();
        let mut s = g.m.lock();
        if let Some(o) = s.ids.get_mut(&b.owner) {
            o.acked += 1;
            g.acked.notify_all();
        }
        drop(s);
        drop(b);
        Ok(())
    }

    unsafe fn same_device(&self, id: *mut sys::rdma_cm_id, ctx: *mut sys::ibv_context) -> bool {
        let s = lock();
        // SAFETY: caller's contract.
        let Ok(h) = (unsafe { s.handle(id) }) else {
            return false;
        };
        let i = &s.ids[&h];
        if !i.on_device || ctx.is_null() {
            return false;
        }
        // SAFETY: the id's channel is live, and so is the context it was made for (the
        // typed layer's channel holds it); `ctx` is live (caller).
        unsafe {
            let chctx = channel(i.ch).ctx as *mut sys::ibv_context;
            !chctx.is_null() && (*chctx).device == (*ctx).device
        }
    }
}

/// The address vector of the peer as the CM gives it: global, with the port's GID (both ends
/// are on this device), SGID index 0, port 1.
fn peer_ah() -> sys::ibv_ah_attr {
    sys::ibv_ah_attr {
        grh: sys::ibv_global_route {
            dgid: sys::ibv_gid {
                raw: super::super::port_gid(),
            },
            flow_label: 0,
            sgid_index: 0,
            hop_limit: HOP_LIMIT,
            traffic_class: 0,
        },
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        is_global: 1,
        port_num: 1,
    }
}

/// The checks `rdma_connect` and `rdma_accept` make of their param, in their order: librdmacm's
/// ucma_valid_param (an RC id without a QP needs a param), the depths within the device (0xff
/// is the device's maximum), then the id's state `st`, which must be `want`. Returns the param
/// (copied; `None` when NULL), the device's maximum depth and the private data.
///
/// # Safety
/// `param` is NULL or readable, and its private data readable for its length.
unsafe fn checked_param<'a>(
    param: *mut sys::rdma_conn_param,
    ud: bool,
    st: St,
    want: St,
) -> Result<(Option<sys::rdma_conn_param>, u8, &'a [u8]), Errno> {
    if param.is_null() && !ud {
        return Err(libc::EINVAL);
    }
    // SAFETY: caller's contract: readable when not NULL.
    let p = (!param.is_null()).then(|| unsafe { *param });
    let max = max_rd_atom();
    if let (Some(p), false) = (p, ud) {
        if (p.responder_resources != MAX_DEPTH && p.responder_resources > max)
            || (p.initiator_depth != MAX_DEPTH && p.initiator_depth > max)
        {
            return Err(libc::EINVAL);
        }
    }
    if st != want {
        return Err(libc::EINVAL);
    }
    // SAFETY: caller's contract.
    let data = p.map_or(&[][..], |p| unsafe {
        user_data(p.private_data, p.private_data_len)
    });
    Ok((p, max, data))
}
