//! `Qp::endpoint` and `Qp::connect` (src/qp/connect.rs): an RC pair and a UC pair connected in one
//! call carry data; bad input is refused before any call. Runs on sw0 and, in the VM lane, on rxe0.

use crate::common;
use std::time::Duration;
use typed_verbs::connect::Connectable;
use typed_verbs::wr::RdmaWriteCapable;
use typed_verbs::{Access, AccessFlags, ErrorKind, Mr, Qp, Rc, SendWr, Uc, Verb};

#[test]
fn a_connected_pair_carries_a_send_and_an_rdma_write() {
    carries_a_send_and_an_rdma_write::<Rc>();
}

#[test]
fn a_connected_uc_pair_carries_a_send_and_an_rdma_write() {
    carries_a_send_and_an_rdma_write::<Uc>();
}

fn carries_a_send_and_an_rdma_write<T: Connectable + RdmaWriteCapable>() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let build = || Qp::<T>::builder(pd, cq, cq).max_send_wr(4).build().unwrap();
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        assert_eq!((ea.qp_num, ea.port_num, ea.gid_index), (a.qp_num(), 1, 0));
        assert_eq!(ea.gid, ctx.query_gid(1, 0).unwrap());
        assert!(ea.psn < 1 << 24 && eb.psn < 1 << 24);
        let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
        let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE).unwrap();
        let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        let (src, dst) = (
            Mr::new(pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap(),
            Mr::new(pd, vec![0u8; 64], access).unwrap(),
        );
        src.write(0, b"connected").unwrap();
        b.post_recv(1, &[dst.sge(0..32).unwrap()]).unwrap();
        let sge = [src.sge(0..9).unwrap()];
        a.post_send(&SendWr::<T>::send(2, &sge).signaled()).unwrap();
        let at = dst.remote().at(32, 9).unwrap();
        a.post_send(&SendWr::<T>::rdma_write(3, &sge, at).signaled())
            .unwrap();
        common::expect_successes(cq, 3, Duration::from_secs(5), "three completions");
        let mut got = [0u8; 41];
        dst.read(0, &mut got).unwrap();
        assert_eq!(
            (&got[..9], &got[32..41]),
            (&b"connected"[..], &b"connected"[..])
        );
    });
}

#[test]
fn bad_endpoints_are_refused_before_any_call() {
    common::with_pd_cq(Some(4), |ctx, pd, cq| {
        let (a, b) = (
            Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
            Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
        );
        let ports = ctx.attr().phys_port_cnt;
        let e = a.endpoint(ports + 1, 0).unwrap_err();
        assert_eq!((e.verb, e.errno()), (Verb::QueryPort, libc::EINVAL));
        let table = ctx.query_port(1).unwrap().gid_tbl_len;
        if let Ok(index) = u8::try_from(table) {
            let e = a.endpoint(1, index).unwrap_err();
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::OutOfRange {
                        what: "gid_index",
                        ..
                    }
                ),
                "{e}"
            );
        }
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        // `a` given `b`'s endpoint as its own: refused, and `a` (taken by value) is destroyed.
        let e = a.connect(&eb, &ea, AccessFlags::LOCAL_WRITE).unwrap_err();
        assert!(
            matches!(
                e.kind,
                ErrorKind::OutOfRange {
                    what: "local.qp_num",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("RESET->INIT"), "{e}");
    });
}
