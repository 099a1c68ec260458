//! The connection manager at the raw level (`typed_verbs::raw`'s rdma_* verbs: librdmacm on a
//! real device, the software device's own CM on sw0), driving the same sequences on both and
//! asserting what the kernel's rdma_cm answers through librdmacm for ids without a librdmacm
//! QP: the events and their order, statuses, private data (padded to the CM message's size),
//! `rdma_init_qp_attr`'s masks and values (QP numbers, PSNs and GIDs aside), address and port
//! rules, and what destroying an id does. Client and server are two channels on the device of
//! `TYPED_VERBS_DEVICE`, at the address `TYPED_VERBS_CM_ADDR` (127.0.0.1 by default; rxe0's
//! lane sets its own), each test on ports of its own.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{leak_checked, note};
use std::ptr;
use std::time::{Duration, Instant};
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::Context;

use sys::rdma_cm_event_type::*;
use sys::rdma_port_space::{RDMA_PS_TCP, RDMA_PS_UDP};

// enum ibv_qp_attr_mask, as rdma-sys has it
use typed_verbs::ffi::qp_attr_mask::{
    ACCESS_FLAGS, AV, DEST_QPN, MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER, PATH_MTU,
    PKEY_INDEX, PORT, QKEY, RETRY_CNT, RNR_RETRY, RQ_PSN, SQ_PSN, STATE, TIMEOUT,
};

const REMOTE_WRITE: u32 = 1 << 1;
const REMOTE_READ: u32 = 1 << 2;
const REMOTE_ATOMIC: u32 = 1 << 3;

/// RDMA_UDP_QKEY.
const UDP_QKEY: u32 = 0x0123_4567;
/// How long an expected event may take (TCG VMs are slow).
const WAIT: Duration = Duration::from_secs(20);

/// The test address (`TYPED_VERBS_CM_ADDR`, 127.0.0.1 by default).
fn cm_ip() -> [u8; 4] {
    let s = std::env::var("TYPED_VERBS_CM_ADDR").unwrap_or_else(|_| "127.0.0.1".into());
    let ip: std::net::Ipv4Addr = s.parse().expect("TYPED_VERBS_CM_ADDR is an IPv4 address");
    ip.octets()
}

/// A test's port: a base far from the ephemeral range plus the test's index.
fn port(i: u16) -> u16 {
    19100 + i
}

/// A QP number for connects that need no QP, one per test (or port): far above the QP numbers
/// rxe hands out, and apart from every other test's, because the kernel's CM refuses a REQ
/// naming a remote QP another connection still holds (IB_CM_REJ_STALE_CONN).
fn fake_qpn(i: u16) -> u32 {
    0x80_0000 + 16 * u32::from(i)
}

fn sin(ip: [u8; 4], port: u16) -> libc::sockaddr_in {
    // SAFETY: plain C data.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from_be_bytes(ip).to_be();
    a
}

fn sa(a: &mut libc::sockaddr_in) -> *mut libc::sockaddr {
    a as *mut libc::sockaddr_in as *mut libc::sockaddr
}

/// An event, copied out of the C one (which is acked at once).
#[derive(Debug, Clone)]
struct Event {
    ty: u32,
    status: i32,
    id: *mut sys::rdma_cm_id,
    listen_id: *mut sys::rdma_cm_id,
    /// The private data, `private_data_len` bytes of it.
    data: Vec<u8>,
    /// The conn param (RC) fields.
    responder_resources: u8,
    initiator_depth: u8,
    retry_count: u8,
    rnr_retry_count: u8,
    qp_num: u32,
    /// The UD param fields.
    ud_qpn: u32,
    ud_qkey: u32,
    ud_ah: Option<Ah>,
}

/// The UD param's address vector.
#[derive(Clone, Copy)]
struct Ah(sys::ibv_ah_attr);

impl std::fmt::Debug for Ah {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.0;
        write!(
            f,
            "Ah {{ is_global {} port {} sgid_index {} hop_limit {} }}",
            a.is_global, a.port_num, a.grh.sgid_index, a.grh.hop_limit
        )
    }
}

/// An event channel of the test's device.
struct Chan(*mut sys::rdma_event_channel);

impl Chan {
    fn new(ctx: &Context) -> Chan {
        // SAFETY: a live context.
        let ch = unsafe { raw::rdma_create_event_channel(ctx.as_raw()) }.expect("channel");
        Chan(ch.as_ptr())
    }

    fn id(&self, ps: u32) -> *mut sys::rdma_cm_id {
        // SAFETY: a live channel.
        unsafe { raw::rdma_create_id(self.0, ptr::null_mut(), ps) }
            .expect("rdma_create_id")
            .as_ptr()
    }

    /// The next event within `within`, or None.
    fn next_within(&self, within: Duration) -> Option<Event> {
        // SAFETY: a live channel's fd.
        let fd = unsafe { (*self.0).fd };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, within.as_millis() as i32) };
        if n <= 0 {
            return None;
        }
        // SAFETY: a live channel with an event waiting.
        let e = unsafe { raw::rdma_get_cm_event(self.0) }
            .expect("rdma_get_cm_event")
            .as_ptr();
        // SAFETY: a live event: read, then acked once.
        unsafe {
            let r = &*e;
            let ud = (*r.id).ps == RDMA_PS_UDP;
            let (pd, plen) = if ud {
                (r.param.ud.private_data, r.param.ud.private_data_len)
            } else {
                (r.param.conn.private_data, r.param.conn.private_data_len)
            };
            let data = if pd.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(pd as *const u8, plen.into()).to_vec()
            };
            assert!(
                !pd.is_null() || plen == 0,
                "NULL private data of length {plen}"
            );
            let out = Event {
                ty: r.event,
                status: r.status,
                id: r.id,
                listen_id: r.listen_id,
                data,
                responder_resources: if ud {
                    0
                } else {
                    r.param.conn.responder_resources
                },
                initiator_depth: if ud { 0 } else { r.param.conn.initiator_depth },
                retry_count: if ud { 0 } else { r.param.conn.retry_count },
                rnr_retry_count: if ud { 0 } else { r.param.conn.rnr_retry_count },
                qp_num: if ud { 0 } else { r.param.conn.qp_num },
                ud_qpn: if ud { r.param.ud.qp_num } else { 0 },
                ud_qkey: if ud { r.param.ud.qkey } else { 0 },
                ud_ah: ud.then_some(Ah(r.param.ud.ah_attr)),
            };
            raw::rdma_ack_cm_event(e).expect("rdma_ack_cm_event");
            Some(out)
        }
    }

    /// The next event, which must be of type `ty` (skipping none).
    #[track_caller]
    fn expect(&self, ty: u32) -> Event {
        let e = self
            .next_within(WAIT)
            .unwrap_or_else(|| panic!("no event within {WAIT:?}; expected {}", name(ty)));
        assert_eq!(name(e.ty), name(ty), "event: {e:?}");
        e
    }

    /// No event within `within`, except TIMEWAIT_EXIT (which a kernel may send): returns
    /// whether one came.
    fn quiet(&self, test: &str, within: Duration) -> bool {
        let mut tw = false;
        while let Some(e) = self.next_within(within) {
            if e.ty == RDMA_CM_EVENT_TIMEWAIT_EXIT {
                note(test, "RDMA_CM_EVENT_TIMEWAIT_EXIT after the disconnect");
                tw = true;
                continue;
            }
            panic!("unexpected event {}: {e:?}", name(e.ty));
        }
        tw
    }
}

impl Drop for Chan {
    fn drop(&mut self) {
        // SAFETY: every id of the channel was destroyed by the test first.
        unsafe { raw::rdma_destroy_event_channel(self.0) }
    }
}

fn name(ty: u32) -> String {
    // SAFETY: a static string for any value.
    unsafe { std::ffi::CStr::from_ptr(sys::rdma_event_str(ty)) }
        .to_string_lossy()
        .into_owned()
}

fn destroy(id: *mut sys::rdma_cm_id) {
    // SAFETY: a live id, destroyed once.
    unsafe { raw::rdma_destroy_id(id) }.expect("rdma_destroy_id");
}

/// `rdma_init_qp_attr` for `state`: the attributes and mask, or the errno.
fn init_attr(id: *mut sys::rdma_cm_id, state: u32) -> Result<(sys::ibv_qp_attr, i32), i32> {
    // SAFETY: plain C data.
    let mut a: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = state;
    let mut m = 0;
    // SAFETY: a live id; attr and mask valid.
    unsafe { raw::rdma_init_qp_attr(id, &mut a, &mut m) }?;
    Ok((a, m))
}

/// A listener bound to the test address and `port`, listening.
fn listener(ch: &Chan, ps: u32, port: u16) -> *mut sys::rdma_cm_id {
    let id = ch.id(ps);
    let mut a = sin(cm_ip(), port);
    // SAFETY: a live id, a valid address.
    unsafe { raw::rdma_bind_addr(id, sa(&mut a)) }.expect("rdma_bind_addr");
    // SAFETY: a bound id.
    unsafe { raw::rdma_listen(id, 8) }.expect("rdma_listen");
    id
}

/// A client id with its address and route resolved towards the test address and `port`.
fn resolved(ch: &Chan, ps: u32, port: u16) -> *mut sys::rdma_cm_id {
    let id = ch.id(ps);
    let mut dst = sin(cm_ip(), port);
    // SAFETY: a live id, a valid destination.
    unsafe { raw::rdma_resolve_addr(id, ptr::null_mut(), sa(&mut dst), 5000) }
        .expect("rdma_resolve_addr");
    let e = ch.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
    assert_eq!((e.status, e.id, e.data.len()), (0, id, 0));
    // SAFETY: an id whose address is resolved.
    unsafe { raw::rdma_resolve_route(id, 5000) }.expect("rdma_resolve_route");
    let e = ch.expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
    assert_eq!((e.status, e.id), (0, id));
    id
}

/// QP attributes with only the state (and a zero SQ PSN).
fn bare(state: u32) -> sys::ibv_qp_attr {
    // SAFETY: plain C data.
    let mut a: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = state;
    a
}

fn conn_param(data: &[u8], qpn: u32, resp: u8, init: u8) -> sys::rdma_conn_param {
    sys::rdma_conn_param {
        private_data: if data.is_empty() {
            ptr::null()
        } else {
            data.as_ptr().cast()
        },
        private_data_len: data.len() as u8,
        responder_resources: resp,
        initiator_depth: init,
        flow_control: 0,
        retry_count: 6,
        rnr_retry_count: 5,
        srq: 0,
        qp_num: qpn,
    }
}

/// A server channel with a listener on `port` and a client channel with an id resolved to it
/// (its address and route), in the port space `ps`.
fn listening_and_resolved(
    ctx: &Context,
    ps: u32,
    port: u16,
) -> (Chan, Chan, *mut sys::rdma_cm_id, *mut sys::rdma_cm_id) {
    let (sch, cch) = (Chan::new(ctx), Chan::new(ctx));
    let lid = listener(&sch, ps, port);
    let cid = resolved(&cch, ps, port);
    (sch, cch, lid, cid)
}

/// `rdma_connect` on `id` with [`conn_param`]'s parameters.
fn connect(id: *mut sys::rdma_cm_id, data: &[u8], qpn: u32, resp: u8, init: u8) -> Result<(), i32> {
    let mut cp = conn_param(data, qpn, resp, init);
    // SAFETY: a live id; the param lives across the call, its data readable.
    unsafe { raw::rdma_connect(id, &mut cp) }
}

/// `rdma_accept` on `id` (a request's) with [`conn_param`]'s parameters.
fn accept(id: *mut sys::rdma_cm_id, data: &[u8], qpn: u32, resp: u8, init: u8) -> Result<(), i32> {
    let mut sp = conn_param(data, qpn, resp, init);
    // SAFETY: a live id; the param lives across the call, its data readable.
    unsafe { raw::rdma_accept(id, &mut sp) }
}

fn padded(data: &[u8], len: usize) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(len, 0);
    v
}

/// Raw verbs objects of one side: a PD, a CQ, a QP, a registered buffer.
struct Side {
    pd: *mut sys::ibv_pd,
    cq: *mut sys::ibv_cq,
    qp: *mut sys::ibv_qp,
    mr: *mut sys::ibv_mr,
    buf: Box<[u8; 4096]>,
}

impl Side {
    fn new(ctx: &Context, qp_type: u32) -> Side {
        // SAFETY: live objects of one context, each used only while live.
        unsafe {
            let pd = raw::ibv_alloc_pd(ctx.as_raw()).expect("pd").as_ptr();
            let cq = raw::ibv_create_cq(ctx.as_raw(), 16, ptr::null_mut(), ptr::null_mut(), 0)
                .expect("cq")
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
                qp_type,
                sq_sig_all: 1,
            };
            let qp = raw::ibv_create_qp(pd, &mut init).expect("qp").as_ptr();
            let mut buf = Box::new([0u8; 4096]);
            let mr = raw::ibv_reg_mr(
                pd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0 as i32,
            )
            .expect("mr")
            .as_ptr();
            Side {
                pd,
                cq,
                qp,
                mr,
                buf,
            }
        }
    }

    fn qpn(&self) -> u32 {
        // SAFETY: a live QP.
        unsafe { (*self.qp).qp_num }
    }

    /// Moves the QP with the CM's attributes for `state`.
    #[track_caller]
    fn modify(&self, (mut a, m): (sys::ibv_qp_attr, i32)) {
        // SAFETY: a live QP; attributes from rdma_init_qp_attr.
        unsafe { raw::ibv_modify_qp(self.qp, &mut a, m) }.unwrap_or_else(|e| {
            panic!(
                "ibv_modify_qp to {} with mask {m:#x}: errno {e}",
                a.qp_state
            )
        });
    }

    fn post_recv(&mut self, len: usize) {
        let mut sge = sys::ibv_sge {
            addr: self.buf.as_mut_ptr() as u64,
            length: len as u32,
            // SAFETY: a live MR.
            lkey: unsafe { (*self.mr).lkey },
        };
        // SAFETY: plain C data.
        let mut wr: sys::ibv_recv_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = 1;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        let mut bad = ptr::null_mut();
        // SAFETY: a live QP; the WR and its SGE live across the call; the buffer is registered
        // and outlives the receive (the QP is destroyed first).
        assert_eq!(unsafe { sys::ibv_post_recv(self.qp, &mut wr, &mut bad) }, 0);
    }

    /// Sends `data` (from the start of the buffer); `ud` addresses a UD peer.
    fn send(&mut self, data: &[u8], ud: Option<(*mut sys::ibv_ah, u32, u32)>) {
        self.buf[..data.len()].copy_from_slice(data);
        let mut sge = sys::ibv_sge {
            addr: self.buf.as_mut_ptr() as u64,
            length: data.len() as u32,
            // SAFETY: a live MR.
            lkey: unsafe { (*self.mr).lkey },
        };
        // SAFETY: plain C data.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = 2;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = sys::ibv_wr_opcode::IBV_WR_SEND;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        if let Some((ah, qpn, qkey)) = ud {
            wr.wr.ud.ah = ah;
            wr.wr.ud.remote_qpn = qpn;
            wr.wr.ud.remote_qkey = qkey;
        }
        let mut bad = ptr::null_mut();
        // SAFETY: a live QP in RTS; the WR lives across the call, the buffer is registered.
        assert_eq!(unsafe { sys::ibv_post_send(self.qp, &mut wr, &mut bad) }, 0);
    }

    /// The next completion (status, opcode, byte_len), waiting at most [`WAIT`].
    #[track_caller]
    fn completion(&self) -> (u32, u32, u32) {
        let deadline = Instant::now() + WAIT;
        loop {
            // SAFETY: plain C data.
            let mut wc: sys::ibv_wc = unsafe { std::mem::zeroed() };
            // SAFETY: a live CQ, one entry.
            let n = unsafe { sys::ibv_poll_cq(self.cq, 1, &mut wc) };
            assert!(n >= 0);
            if n == 1 {
                return (wc.status, wc.opcode, wc.byte_len);
            }
            assert!(Instant::now() < deadline, "no completion within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        // SAFETY: live objects, destroyed once, QP first.
        unsafe {
            raw::ibv_destroy_qp(self.qp).expect("destroy qp");
            raw::ibv_dereg_mr(self.mr).expect("dereg mr");
            raw::ibv_destroy_cq(self.cq).expect("destroy cq");
            raw::ibv_dealloc_pd(self.pd).expect("dealloc pd");
        }
    }
}

/// The CM's source GID index names a GID of port 1: sw0's only one (index 0); on rxe0 the
/// RoCE v2 GID of the test address (index 1 there, after the link-local one).
#[track_caller]
fn assert_gid(ctx: &Context, test: &str, index: u8) {
    // SAFETY: plain C data.
    let mut g: sys::ibv_gid = unsafe { std::mem::zeroed() };
    // SAFETY: a live context, port 1; `g` valid for writes.
    unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, index.into(), &mut g) }.expect("ibv_query_gid");
    // SAFETY: the union's raw bytes.
    let raw = unsafe { g.raw };
    assert_ne!(raw, [0; 16], "sgid_index {index} names no GID");
    if ctx.is_software() {
        assert_eq!(index, 0);
    } else {
        note(test, format!("sgid_index {index}: GID {raw:02x?}"));
    }
}

fn active_mtu(ctx: &Context) -> u32 {
    ctx.query_port(1).expect("query_port").active_mtu
}

/// `rdma_init_qp_attr` for RTR on `id` (the `side` of an RC connection, for the messages),
/// checked: the RTR mask, `dest` as the peer's QP, the port's active MTU, `rd_atomic` reads in,
/// no RNR timer, a global route on port 1 through a GID of the port.
fn rc_rtr_attr(
    ctx: &Context,
    test: &str,
    (id, side): (*mut sys::rdma_cm_id, &str),
    dest: u32,
    rd_atomic: u8,
) -> (sys::ibv_qp_attr, i32) {
    let (a, m) =
        init_attr(id, sys::ibv_qp_state::IBV_QPS_RTR).unwrap_or_else(|e| panic!("{side} RTR: {e}"));
    assert_eq!(
        m,
        STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
        "{side} RTR mask"
    );
    assert_eq!(a.dest_qp_num, dest, "{side}");
    assert_eq!(a.path_mtu, active_mtu(ctx), "{side}");
    assert_eq!(
        (a.max_dest_rd_atomic, a.min_rnr_timer),
        (rd_atomic, 0),
        "{side}"
    );
    assert_eq!((a.ah_attr.is_global, a.ah_attr.port_num), (1, 1), "{side}");
    assert_gid(ctx, test, a.ah_attr.grh.sgid_index);
    (a, m)
}

/// `rdma_init_qp_attr` for RTS on `id` (the `side` of an RC connection), checked: the RTS
/// mask, the retries, `rd_atomic` reads out, and rxe0's timeout.
fn rc_rts_attr((id, side): (*mut sys::rdma_cm_id, &str), rd_atomic: u8) -> (sys::ibv_qp_attr, i32) {
    let (a, m) =
        init_attr(id, sys::ibv_qp_state::IBV_QPS_RTS).unwrap_or_else(|e| panic!("{side} RTS: {e}"));
    assert_eq!(
        m,
        STATE | SQ_PSN | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | TIMEOUT,
        "{side} RTS mask"
    );
    assert_eq!(
        (a.retry_cnt, a.rnr_retry, a.max_rd_atomic),
        (6, 5, rd_atomic),
        "{side}"
    );
    assert_eq!(a.timeout, 19, "{side} RTS timeout (rxe0, Linux 6.1)");
    (a, m)
}

/// An RC connection through the CM, end to end: events, private data, init_qp_attr at every
/// step, traffic both ways, then a disconnect from each side.
#[test]
fn rc_connect_accept_traffic_disconnect() {
    let test = "rc_connect_accept_traffic_disconnect";
    leak_checked(test, "the connection's ids and channels", |ctx| {
        let (sch, cch) = (Chan::new(ctx), Chan::new(ctx));
        let lid = listener(&sch, RDMA_PS_TCP, port(0));
        // A listener has a CM id but no connection: no QP attributes.
        assert_eq!(
            init_attr(lid, sys::ibv_qp_state::IBV_QPS_INIT).err(),
            Some(libc::EINVAL)
        );
        let cid = resolved(&cch, RDMA_PS_TCP, port(0));
        let mut client = Side::new(ctx, sys::ibv_qp_type::IBV_QPT_RC);
        // Before the connect there is no CM id: INIT with no remote access.
        let (a, m) = init_attr(cid, sys::ibv_qp_state::IBV_QPS_INIT).expect("INIT attrs");
        assert_eq!(
            m,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS,
            "active INIT mask"
        );
        assert_eq!((a.qp_access_flags, a.pkey_index, a.port_num), (0, 0, 1));
        client.modify((a, m));
        let hello = b"hello from the client";
        connect(cid, hello, client.qpn(), 2, 3).expect("rdma_connect");
        // After it, RTR and RTS wait for the reply.
        for st in [
            sys::ibv_qp_state::IBV_QPS_RTR,
            sys::ibv_qp_state::IBV_QPS_RTS,
        ] {
            assert_eq!(
                init_attr(cid, st).err(),
                Some(libc::EINVAL),
                "state {st} before the reply"
            );
        }

        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        assert_eq!(req.status, 0);
        assert_eq!(req.listen_id, lid);
        assert!(!req.id.is_null() && req.id != lid);
        assert_eq!(
            req.data,
            padded(hello, 56),
            "REQ private data: 92 bytes less the cma header"
        );
        assert_eq!(req.qp_num, client.qpn());
        // The passive side's view: the active side's resources swapped.
        assert_eq!((req.responder_resources, req.initiator_depth), (3, 2));
        assert_eq!((req.retry_count, req.rnr_retry_count), (6, 5));
        let sid = req.id;
        // SAFETY: a live id.
        unsafe {
            assert_eq!((*sid).ps, RDMA_PS_TCP);
            assert_eq!((*sid).qp_type, sys::ibv_qp_type::IBV_QPT_RC);
            assert_eq!((*sid).channel, sch.0);
            assert_eq!((*sid).port_num, 1);
            assert_eq!(
                u16::from_be((*sid).route.addr.src_addr_union.src_sin.sin_port),
                port(0)
            );
        }

        let mut server = Side::new(ctx, sys::ibv_qp_type::IBV_QPT_RC);
        let (a, m) = init_attr(sid, sys::ibv_qp_state::IBV_QPS_INIT).expect("passive INIT");
        assert_eq!(
            m,
            STATE | ACCESS_FLAGS | PKEY_INDEX | PORT,
            "passive INIT mask"
        );
        assert_eq!(
            a.qp_access_flags,
            REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC
        );
        assert_eq!((a.pkey_index, a.port_num), (0, 1));
        server.modify((a, m));
        let (a, m) = rc_rtr_attr(ctx, test, (sid, "passive"), client.qpn(), 3);
        note(
            test,
            format!(
                "passive RTR: hop_limit {} traffic_class {} flow_label {} sl {} static_rate {}",
                a.ah_attr.grh.hop_limit,
                a.ah_attr.grh.traffic_class,
                a.ah_attr.grh.flow_label,
                a.ah_attr.sl,
                a.ah_attr.static_rate
            ),
        );
        server.modify((a, m));
        server.modify(rc_rts_attr((sid, "passive"), 2));
        server.post_recv(64);

        let world = b"and hello from the server";
        accept(sid, world, server.qpn(), 1, 4).expect("rdma_accept");

        let rep = cch.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
        assert_eq!((rep.status, rep.id), (0, cid));
        assert_eq!(rep.data, padded(world, 196), "REP private data");
        assert_eq!(rep.qp_num, server.qpn());
        assert_eq!((rep.responder_resources, rep.initiator_depth), (4, 1));
        assert_eq!(rep.rnr_retry_count, 5);
        client.modify(rc_rtr_attr(ctx, test, (cid, "active"), server.qpn(), 4));
        client.modify(rc_rts_attr((cid, "active"), 1));
        client.post_recv(64);
        // SAFETY: a connected id after its response.
        unsafe { raw::rdma_establish(cid) }.expect("rdma_establish");
        let est = sch.expect(RDMA_CM_EVENT_ESTABLISHED);
        assert_eq!((est.status, est.id, est.data.len()), (0, sid, 0));
        // No ESTABLISHED on the active side.
        if let Some(e) = cch.next_within(Duration::from_millis(300)) {
            panic!("active side got {}: {e:?}", name(e.ty));
        }

        // Each side's sends and receives complete on one CQ: every completion is checked by its
        // opcode too (here each one can only come after the one before it was taken).
        let ok = sys::ibv_wc_status::IBV_WC_SUCCESS;
        client.send(b"ping over the CM", None);
        let (st, op, _) = client.completion();
        assert_eq!((st, op), (ok, sys::ibv_wc_opcode::IBV_WC_SEND));
        let (st, op, len) = server.completion();
        assert_eq!(
            (st, op, len),
            (
                sys::ibv_wc_status::IBV_WC_SUCCESS,
                sys::ibv_wc_opcode::IBV_WC_RECV,
                16
            )
        );
        assert_eq!(&server.buf[..16], b"ping over the CM");
        server.send(b"pong", None);
        let (st, op, _) = server.completion();
        assert_eq!((st, op), (ok, sys::ibv_wc_opcode::IBV_WC_SEND));
        assert_eq!(
            client.completion(),
            (ok, sys::ibv_wc_opcode::IBV_WC_RECV, 4)
        );
        assert_eq!(&client.buf[..4], b"pong");

        // The client disconnects: the server hears at once, the client once the server
        // answers.
        // SAFETY: a connected id.
        unsafe { raw::rdma_disconnect(cid) }.expect("rdma_disconnect");
        let d = sch.expect(RDMA_CM_EVENT_DISCONNECTED);
        assert_eq!((d.status, d.id, d.data.len()), (0, sid, 0));
        // SAFETY: as above.
        unsafe { raw::rdma_disconnect(sid) }.expect("rdma_disconnect (answer)");
        let d = cch.expect(RDMA_CM_EVENT_DISCONNECTED);
        assert_eq!((d.status, d.id), (0, cid));
        // A second disconnect is no error.
        // SAFETY: as above.
        unsafe { raw::rdma_disconnect(cid) }.expect("second rdma_disconnect");
        let tw_c = cch.quiet(test, Duration::from_millis(1500));
        let tw_s = sch.quiet(test, Duration::from_millis(100));
        note(
            test,
            format!("TIMEWAIT_EXIT seen: client {tw_c}, server {tw_s}"),
        );
        for st in [
            sys::ibv_qp_state::IBV_QPS_INIT,
            sys::ibv_qp_state::IBV_QPS_RTS,
        ] {
            note(
                test,
                format!(
                    "init_qp_attr({st}) after the disconnect: {:?}",
                    init_attr(cid, st).map(|(_, m)| m)
                ),
            );
        }
        drop((client, server));
        destroy(cid);
        destroy(sid);
        destroy(lid);
    });
}

/// A rejection with private data: REJECTED with status 28 (consumer defined) and the data
/// padded to the REJ's 148 bytes.
#[test]
fn rc_reject_with_private_data() {
    leak_checked("rc_reject_with_private_data", "a rejection", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_TCP, port(1));
        connect(cid, b"may I?", fake_qpn(1), 1, 1).expect("connect");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        assert_eq!(req.qp_num, fake_qpn(1));
        let no = b"no, sorry";
        // Too much private data for a REJ.
        let big = [7u8; 149];
        // SAFETY: the request's id; data readable.
        assert_eq!(
            unsafe { raw::rdma_reject(req.id, big.as_ptr().cast(), 149) },
            Err(libc::EINVAL)
        );
        // SAFETY: as above.
        unsafe { raw::rdma_reject(req.id, no.as_ptr().cast(), no.len() as u8) }.expect("reject");
        let rej = cch.expect(RDMA_CM_EVENT_REJECTED);
        assert_eq!((rej.status, rej.id), (28, cid));
        assert_eq!(rej.data, padded(no, 148));
        // The rejected side's CM id is idle: no QP attributes from it any more.
        assert_eq!(
            init_attr(cid, sys::ibv_qp_state::IBV_QPS_INIT).err(),
            Some(libc::EINVAL)
        );
        // Rejecting twice is refused.
        // SAFETY: as above.
        assert_eq!(
            unsafe { raw::rdma_reject(req.id, ptr::null(), 0) },
            Err(libc::EINVAL)
        );
        assert!(cch.next_within(Duration::from_millis(200)).is_none());
        destroy(req.id);
        destroy(cid);
        destroy(lid);
    });
}

/// A connect to a port nobody listens on: REJECTED with IB_CM_REJ_INVALID_SERVICE_ID (8).
#[test]
fn rc_connect_without_listener_is_rejected() {
    leak_checked(
        "rc_connect_without_listener_is_rejected",
        "a connect without listener",
        |ctx| {
            let cch = Chan::new(ctx);
            let cid = resolved(&cch, RDMA_PS_TCP, port(2));
            connect(cid, b"anyone?", fake_qpn(2), 1, 1).expect("connect");
            let rej = cch.expect(RDMA_CM_EVENT_REJECTED);
            assert_eq!((rej.status, rej.id), (8, cid));
            assert_eq!(rej.data, vec![0; 148]);
            destroy(cid);
        },
    );
}

/// Private data limits of connect and accept (RC: 56 and 196 bytes after the cma header), and
/// an accept with too much: refused, and the request rejected.
#[test]
fn rc_private_data_limits() {
    leak_checked("rc_private_data_limits", "private data limits", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_TCP, port(3));
        let big = [0xa5u8; 200];
        assert_eq!(
            connect(cid, &big[..57], fake_qpn(3), 1, 1),
            Err(libc::EINVAL)
        );
        connect(cid, &big[..56], fake_qpn(3), 1, 1).expect("connect with 56 bytes");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        assert_eq!(req.data, big[..56].to_vec());
        assert_eq!(
            accept(req.id, &big[..197], fake_qpn(3) + 1, 1, 1),
            Err(libc::EINVAL)
        );
        let rej = cch.expect(RDMA_CM_EVENT_REJECTED);
        assert_eq!(rej.status, 28);
        destroy(req.id);
        destroy(cid);
        destroy(lid);
    });
}

/// UD through SIDR: the request's private data (180 bytes), the accept's answer as
/// ESTABLISHED with the peer's QP number, RDMA_UDP_QKEY and an address; init_qp_attr's UD
/// attributes; a datagram both ways.
#[test]
fn ud_sidr_connect_and_datagram() {
    let test = "ud_sidr_connect_and_datagram";
    leak_checked(test, "a UD exchange", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_UDP, port(4));
        let mut client = Side::new(ctx, sys::ibv_qp_type::IBV_QPT_UD);
        let (a, m) = init_attr(cid, sys::ibv_qp_state::IBV_QPS_INIT).expect("UD INIT");
        assert_eq!(m, STATE | PKEY_INDEX | PORT | QKEY, "UD INIT mask");
        assert_eq!((a.qkey, a.pkey_index, a.port_num), (UDP_QKEY, 0, 1));
        client.modify((a, m));
        // The kernel answers every state of a UD id as INIT (cma_ib_init_qp_attr): a program
        // moves a UD QP to RTR and RTS itself, as librdmacm's ucma_init_ud_qp does.
        for st in [
            sys::ibv_qp_state::IBV_QPS_RTR,
            sys::ibv_qp_state::IBV_QPS_RTS,
        ] {
            let (a, m) = init_attr(cid, st).expect("UD attrs");
            assert_eq!(
                m,
                STATE | PKEY_INDEX | PORT | QKEY,
                "UD mask for state {st}"
            );
            assert_eq!((a.qp_state, a.qkey, a.port_num), (st, UDP_QKEY, 1));
        }
        // RTR and RTS as librdmacm's ucma_init_ud_qp moves a UD QP.
        client.modify((bare(sys::ibv_qp_state::IBV_QPS_RTR), STATE));
        client.modify((bare(sys::ibv_qp_state::IBV_QPS_RTS), STATE | SQ_PSN));

        let q = b"UD request";
        connect(cid, q, client.qpn(), 0, 0).expect("connect");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        assert_eq!((req.status, req.listen_id), (0, lid));
        assert_eq!(
            req.data,
            padded(q, 180),
            "SIDR REQ private data: 216 less the cma header"
        );
        assert_eq!((req.ud_qpn, req.ud_qkey), (0, 0));
        let sid = req.id;
        // SAFETY: a live id.
        assert_eq!(unsafe { (*sid).qp_type }, sys::ibv_qp_type::IBV_QPT_UD);
        let mut server = Side::new(ctx, sys::ibv_qp_type::IBV_QPT_UD);
        let (a, m) = init_attr(sid, sys::ibv_qp_state::IBV_QPS_INIT).expect("passive UD INIT");
        assert_eq!(m, STATE | PKEY_INDEX | PORT | QKEY);
        assert_eq!(a.qkey, UDP_QKEY);
        server.modify((a, m));
        server.modify((bare(sys::ibv_qp_state::IBV_QPS_RTR), STATE));
        server.modify((bare(sys::ibv_qp_state::IBV_QPS_RTS), STATE | SQ_PSN));
        server.post_recv(40 + 64);
        let r = b"UD answer";
        accept(sid, r, server.qpn(), 0, 0).expect("accept");
        let est = cch.expect(RDMA_CM_EVENT_ESTABLISHED);
        assert_eq!((est.status, est.id), (0, cid));
        assert_eq!(est.data, padded(r, 136), "SIDR REP private data");
        assert_eq!((est.ud_qpn, est.ud_qkey), (server.qpn(), UDP_QKEY));
        let mut ah = est.ud_ah.expect("ah_attr").0;
        assert_eq!((ah.is_global, ah.port_num), (1, 1));
        assert_gid(ctx, test, ah.grh.sgid_index);
        note(
            test,
            format!(
                "UD ah: hop_limit {} dlid {} sl {}",
                ah.grh.hop_limit, ah.dlid, ah.sl
            ),
        );
        // No event for the passive side.
        assert!(sch.next_within(Duration::from_millis(200)).is_none());

        // SAFETY: a live PD; the AH attributes from the CM.
        let ah = unsafe { raw::ibv_create_ah(client.pd, &mut ah) }
            .expect("ibv_create_ah")
            .as_ptr();
        client.send(b"datagram", Some((ah, est.ud_qpn, est.ud_qkey)));
        assert_eq!(client.completion().0, sys::ibv_wc_status::IBV_WC_SUCCESS);
        let (st, _, len) = server.completion();
        assert_eq!((st, len), (sys::ibv_wc_status::IBV_WC_SUCCESS, 40 + 8));
        assert_eq!(&server.buf[40..48], b"datagram");
        // SAFETY: a live AH, no WR uses it any more.
        unsafe { raw::ibv_destroy_ah(ah) }.expect("destroy ah");
        drop((client, server));
        destroy(cid);
        destroy(sid);
        destroy(lid);
    });
}

/// A UD request rejected: UNREACHABLE with IB_SIDR_REJECT (2) and the data (136 bytes); a UD
/// connect nobody listens to: UNREACHABLE.
#[test]
fn ud_reject_and_no_listener() {
    let test = "ud_reject_and_no_listener";
    leak_checked(test, "UD rejections", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_UDP, port(5));
        connect(cid, b"x", 3, 0, 0).expect("connect");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        // SAFETY: the request's id.
        unsafe { raw::rdma_reject(req.id, b"nope".as_ptr().cast(), 4) }.expect("reject");
        let e = cch.expect(RDMA_CM_EVENT_UNREACHABLE);
        assert_eq!((e.status, e.id), (2, cid));
        assert_eq!(e.data, padded(b"nope", 136));
        destroy(req.id);
        destroy(cid);
        destroy(lid);

        let cid = resolved(&cch, RDMA_PS_UDP, port(6));
        connect(cid, b"", 3, 0, 0).expect("connect");
        match cch.next_within(WAIT) {
            Some(e) => {
                note(
                    test,
                    format!(
                        "UD connect without listener: {} status {}",
                        name(e.ty),
                        e.status
                    ),
                );
                assert_eq!((name(e.ty), e.status), (name(RDMA_CM_EVENT_UNREACHABLE), 1));
            }
            None => panic!("no answer to a UD connect without listener"),
        }
        destroy(cid);
    });
}

/// Binding: the same address and port twice is EADDRINUSE, the wildcard against a bound port
/// EADDRNOTAVAIL, the two port spaces are apart, port 0 takes an ephemeral port, and a
/// non-local address is not bindable.
#[test]
fn bind_rules() {
    let test = "bind_rules";
    leak_checked(test, "binds", |ctx| {
        let ch = Chan::new(ctx);
        let bind = |id, ip, p| {
            let mut a = sin(ip, p);
            // SAFETY: a live id, a valid address.
            unsafe { raw::rdma_bind_addr(id, sa(&mut a)) }
        };
        let a = ch.id(RDMA_PS_TCP);
        let b = ch.id(RDMA_PS_TCP);
        let c = ch.id(RDMA_PS_TCP);
        let u = ch.id(RDMA_PS_UDP);
        let e = ch.id(RDMA_PS_TCP);
        let x = ch.id(RDMA_PS_TCP);
        bind(a, cm_ip(), port(7)).expect("first bind");
        assert_eq!(bind(b, cm_ip(), port(7)), Err(libc::EADDRINUSE));
        assert_eq!(bind(c, [0; 4], port(7)), Err(libc::EADDRNOTAVAIL));
        bind(u, cm_ip(), port(7)).expect("the same port in the UDP space");
        // A bound id cannot be bound again.
        assert_eq!(bind(a, cm_ip(), port(8)), Err(libc::EINVAL));
        bind(e, cm_ip(), 0).expect("ephemeral");
        // SAFETY: a live id.
        let p = u16::from_be(unsafe { (*e).route.addr.src_addr_union.src_sin.sin_port });
        assert!((32768..=60999).contains(&p), "ephemeral port {p}");
        let r = bind(x, [192, 0, 2, 1], port(9));
        note(test, format!("bind to 192.0.2.1: {r:?}"));
        assert_eq!(r, Err(libc::EADDRNOTAVAIL));
        // Destroying frees the port.
        destroy(a);
        bind(b, cm_ip(), port(7)).expect("bind after the owner's destroy");
        for id in [b, c, u, e, x] {
            destroy(id);
        }
    });
}

/// A destination without a route: the resolve fails at once (the kernel's rdma_resolve_ip).
#[test]
fn resolve_unreachable_address() {
    let test = "resolve_unreachable_address";
    leak_checked(test, "a failed resolve", |ctx| {
        let ch = Chan::new(ctx);
        let id = ch.id(RDMA_PS_TCP);
        let mut dst = sin([192, 0, 2, 1], port(10));
        // SAFETY: a live id, a valid destination.
        let r = unsafe { raw::rdma_resolve_addr(id, ptr::null_mut(), sa(&mut dst), 1000) };
        let ev = if r.is_ok() {
            ch.next_within(Duration::from_secs(5))
        } else {
            None
        };
        note(
            test,
            format!(
                "resolve 192.0.2.1: {r:?}, then {:?}",
                ev.as_ref().map(|e| (name(e.ty), e.status))
            ),
        );
        assert_eq!(r, Err(libc::ENETUNREACH));
        // (No rdma_resolve_route now: librdmacm's reads the device of an id whose address is
        // resolved, and crashes on one without.)
        // The id is bound by the attempt, and can try again.
        let mut dst = sin(cm_ip(), port(10));
        // SAFETY: a live id, a valid destination.
        unsafe { raw::rdma_resolve_addr(id, ptr::null_mut(), sa(&mut dst), 5000) }
            .expect("a second resolve");
        ch.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
        destroy(id);
    });
}

/// Destroying a connected id disconnects its peer (a DREQ): DISCONNECTED there.
#[test]
fn destroying_a_connected_id_disconnects_the_peer() {
    leak_checked(
        "destroying_a_connected_id_disconnects_the_peer",
        "a destroyed connection",
        |ctx| {
            let (sch, cch) = (Chan::new(ctx), Chan::new(ctx));
            let (lid, cid, sid) = connect_pair(&sch, &cch, port(11));
            destroy(cid);
            let d = sch.expect(RDMA_CM_EVENT_DISCONNECTED);
            assert_eq!((d.status, d.id), (0, sid));
            // SAFETY: a live id, disconnected by its peer: the answer is no error.
            unsafe { raw::rdma_disconnect(sid) }.expect("disconnect after the peer left");
            destroy(sid);
            destroy(lid);
        },
    );
}

/// Connects an RC pair without QPs of their own (QP numbers made up): the listener, the client
/// id and the server's new id, established.
fn connect_pair(
    sch: &Chan,
    cch: &Chan,
    p: u16,
) -> (
    *mut sys::rdma_cm_id,
    *mut sys::rdma_cm_id,
    *mut sys::rdma_cm_id,
) {
    let lid = listener(sch, RDMA_PS_TCP, p);
    let cid = resolved(cch, RDMA_PS_TCP, p);
    connect(cid, b"", fake_qpn(p), 1, 1).expect("connect");
    let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
    accept(req.id, b"", fake_qpn(p) + 1, 1, 1).expect("accept");
    cch.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
    // SAFETY: a connected id.
    unsafe { raw::rdma_establish(cid) }.expect("establish");
    sch.expect(RDMA_CM_EVENT_ESTABLISHED);
    (lid, cid, req.id)
}

/// Destroying a listener with a connect request nobody read: the request's new id goes with
/// it, which rejects the connection.
#[test]
fn destroying_a_listener_rejects_unread_requests() {
    let test = "destroying_a_listener_rejects_unread_requests";
    leak_checked(test, "a listener destroyed with a request queued", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_TCP, port(12));
        connect(cid, b"", fake_qpn(12), 1, 1).expect("connect");
        // Wait until the request is there, unread.
        let mut p = libc::pollfd {
            // SAFETY: a live channel.
            fd: unsafe { (*sch.0).fd },
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, WAIT.as_millis() as i32) } != 1 {
            let got = cch.next_within(Duration::from_millis(100));
            panic!(
                "no request within {WAIT:?}; the client got {:?}",
                got.map(|e| (name(e.ty), e.status))
            );
        }
        destroy(lid);
        let rej = cch.expect(RDMA_CM_EVENT_REJECTED);
        assert_eq!((rej.status, rej.id), (28, cid));
        // The request went with its listener.
        assert!(sch.next_within(Duration::from_millis(200)).is_none());
        destroy(cid);
    });
}

/// rdma_destroy_id waits until every event reported for the id is acked.
#[test]
fn destroy_waits_for_the_ack() {
    leak_checked(
        "destroy_waits_for_the_ack",
        "a destroy that waited",
        |ctx| {
            let ch = Chan::new(ctx);
            let id = ch.id(RDMA_PS_TCP);
            let mut dst = sin(cm_ip(), port(13));
            // SAFETY: a live id.
            unsafe { raw::rdma_resolve_addr(id, ptr::null_mut(), sa(&mut dst), 5000) }
                .expect("resolve");
            // SAFETY: a live channel with an event coming.
            let ev = unsafe { raw::rdma_get_cm_event(ch.0) }
                .expect("event")
                .as_ptr() as usize;
            let idu = id as usize;
            let t = std::thread::spawn(move || destroy(idu as *mut sys::rdma_cm_id));
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                !t.is_finished(),
                "rdma_destroy_id returned with an event unacked"
            );
            // SAFETY: the event, acked once; its id is still live (its destroy waits).
            unsafe { raw::rdma_ack_cm_event(ev as *mut sys::rdma_cm_event) }.expect("ack");
            t.join().expect("destroy thread");
        },
    );
}

/// On the software device, the channels and ids count among the context's live objects.
#[test]
fn software_counts_cm_objects() {
    common::on_software("software_counts_cm_objects", "live_objects", |ctx| {
        let before = typed_verbs::software::live_objects(ctx).expect("software");
        let ch = Chan::new(ctx);
        let id = ch.id(RDMA_PS_TCP);
        let now = typed_verbs::software::live_objects(ctx).expect("software");
        assert_eq!(
            (now.cm_channels, now.cm_ids),
            (before.cm_channels + 1, before.cm_ids + 1)
        );
        destroy(id);
        drop(ch);
        assert_eq!(typed_verbs::software::live_objects(ctx), Some(before));
    });
}

/// After both sides disconnected, each side's CM leaves TIMEWAIT after a while:
/// RDMA_CM_EVENT_TIMEWAIT_EXIT (rxe0: about 2.3 s after the DREP under TCG; sw0: 2048 ms).
#[test]
fn timewait_exit_follows_the_disconnects() {
    let test = "timewait_exit_follows_the_disconnects";
    leak_checked(test, "a timewait", |ctx| {
        let (sch, cch) = (Chan::new(ctx), Chan::new(ctx));
        let (lid, cid, sid) = connect_pair(&sch, &cch, port(14));
        // SAFETY: connected ids.
        unsafe { raw::rdma_disconnect(cid) }.expect("disconnect");
        sch.expect(RDMA_CM_EVENT_DISCONNECTED);
        let t0 = Instant::now();
        // SAFETY: as above.
        unsafe { raw::rdma_disconnect(sid) }.expect("disconnect");
        cch.expect(RDMA_CM_EVENT_DISCONNECTED);
        for (who, ch, id) in [("client", &cch, cid), ("server", &sch, sid)] {
            let e = ch.expect(RDMA_CM_EVENT_TIMEWAIT_EXIT);
            assert_eq!((e.status, e.id, e.data.len()), (0, id, 0));
            let after = t0.elapsed();
            note(
                test,
                format!("{who}: TIMEWAIT_EXIT {after:?} after the DREP"),
            );
            assert!(
                after >= Duration::from_millis(1500),
                "{who}: TIMEWAIT_EXIT after {after:?}"
            );
        }
        // Nothing more.
        assert!(cch.next_within(Duration::from_millis(300)).is_none());
        assert!(sch.next_within(Duration::from_millis(10)).is_none());
        destroy(cid);
        destroy(sid);
        destroy(lid);
    });
}

/// Destroying the active side while it connects: before the accept (its REQ outstanding) the
/// passive side hears nothing, but its accept is then EINVAL (as on rxe0); after the response, before the RTU, the passive
/// side's new id is rejected with IB_CM_REJ_CONSUMER_DEFINED (28).
#[test]
fn destroying_a_connecting_id_rejects_the_peer() {
    let test = "destroying_a_connecting_id_rejects_the_peer";
    leak_checked(test, "connecting ids destroyed", |ctx| {
        let (sch, cch, lid, cid) = listening_and_resolved(ctx, RDMA_PS_TCP, port(15));
        connect(cid, b"", fake_qpn(15), 1, 1).expect("connect");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        destroy(cid);
        // rxe0 (Linux 6.1) shows the passive side nothing, for 20 s at least.
        if let Some(e) = sch.next_within(Duration::from_secs(3)) {
            panic!("REQ sender destroyed: {} status {}", name(e.ty), e.status);
        }
        // But the REJ left its CM id idle: an accept is refused.
        assert_eq!(
            accept(req.id, b"", fake_qpn(15) + 1, 1, 1),
            Err(libc::EINVAL)
        );
        assert!(sch.next_within(Duration::from_millis(300)).is_none());
        destroy(req.id);

        let cid = resolved(&cch, RDMA_PS_TCP, port(15));
        connect(cid, b"", fake_qpn(15), 1, 1).expect("connect");
        let req = sch.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        accept(req.id, b"", fake_qpn(15) + 2, 1, 1).expect("accept");
        cch.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
        destroy(cid);
        match sch.next_within(WAIT) {
            Some(e) => {
                note(
                    test,
                    format!("REP receiver destroyed: {} status {}", name(e.ty), e.status),
                );
                assert_eq!(
                    (name(e.ty), e.status, e.id),
                    (name(RDMA_CM_EVENT_REJECTED), 28, req.id)
                );
            }
            None => panic!("nothing on the passive side after the active side's destroy"),
        }
        destroy(req.id);
        destroy(lid);
    });
}

/// A REQ naming a remote QP number that another connection still holds is refused as stale:
/// REJECTED with IB_CM_REJ_STALE_CONN (10), and the listener sees nothing.
#[test]
fn a_req_naming_a_connected_qp_is_stale() {
    let test = "a_req_naming_a_connected_qp_is_stale";
    leak_checked(test, "a stale REQ", |ctx| {
        let (sch, cch) = (Chan::new(ctx), Chan::new(ctx));
        let (lid, cid, sid) = connect_pair(&sch, &cch, port(16));
        let cid2 = resolved(&cch, RDMA_PS_TCP, port(16));
        // The QP number of the connected client's QP, again.
        connect(cid2, b"", fake_qpn(port(16)), 1, 1).expect("connect");
        let e = cch.next_within(WAIT).expect("an answer to the second REQ");
        note(
            test,
            format!(
                "second REQ from the same QP: {} status {}",
                name(e.ty),
                e.status
            ),
        );
        assert_eq!(
            (name(e.ty), e.status, e.id),
            (name(RDMA_CM_EVENT_REJECTED), 10, cid2)
        );
        assert!(sch.next_within(Duration::from_millis(300)).is_none());
        destroy(cid2);
        destroy(cid);
        sch.expect(RDMA_CM_EVENT_DISCONNECTED);
        destroy(sid);
        destroy(lid);
    });
}
