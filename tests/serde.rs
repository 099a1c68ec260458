//! The `serde` feature: the plain data a program sends its peer (`Endpoint`, `Gid`, `Mtu`,
//! `RcParams`, `RemoteMr`, `RemoteAddr`) through JSON and back, their wire forms, bad input
//! refused with an error that names the field, and two QPs that connect from endpoints read
//! out of JSON and move a send and an RDMA write into a region read out of JSON. Runs on the
//! test device (`TYPED_VERBS_DEVICE`, else sw0): `cargo test --features serde --test serde`.
#![cfg(feature = "serde")]

mod common;

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::time::Duration;
use typed_verbs::connect::RcParams;
use typed_verbs::{
    access, Access, AccessFlags, Endpoint, Gid, Mr, Mtu, Qp, Rc, RemoteAddr, RemoteMr, SendWr,
};

/// `v` as JSON, read back equal.
#[track_caller]
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: &T) -> String {
    let text = serde_json::to_string(v).unwrap();
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(&back, v, "{text}");
    text
}

/// Reading `text` as a `T` fails, and the error's message contains `says`.
#[track_caller]
fn refused<T: DeserializeOwned + Debug>(text: &str, says: &str) {
    match serde_json::from_str::<T>(text) {
        Ok(v) => panic!("{text} was read as {v:?}"),
        Err(e) => assert!(e.to_string().contains(says), "{text}: {e}"),
    }
}

fn endpoint() -> Endpoint {
    Endpoint {
        qp_num: 0x12,
        port_num: 1,
        lid: 7,
        gid: Gid([
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56,
        ]),
        gid_index: 1,
        psn: 0xab_cdef,
        mtu: Mtu::Mtu2048,
    }
}

#[test]
fn an_endpoint_is_a_map_of_its_fields() {
    let text = round_trip(&endpoint());
    assert_eq!(
        text,
        r#"{"qp_num":18,"port_num":1,"lid":7,"gid":"fe80::5054:ff:fe12:3456","gid_index":1,"psn":11259375,"mtu":2048}"#
    );
    // The largest values that fit.
    let e = Endpoint {
        qp_num: 0xff_ffff,
        psn: 0xff_ffff,
        port_num: 255,
        ..endpoint()
    };
    round_trip(&e);
}

#[test]
fn an_endpoint_out_of_range_is_an_error_naming_the_field() {
    let good = serde_json::to_value(endpoint()).unwrap();
    let with = |field: &str, v: serde_json::Value| {
        let mut e = good.clone();
        e[field] = v;
        e.to_string()
    };
    refused::<Endpoint>(&with("qp_num", (1u32 << 24).into()), "`qp_num` is 16777216");
    refused::<Endpoint>(&with("psn", (1u32 << 24).into()), "`psn` is 16777216");
    refused::<Endpoint>(&with("port_num", 0.into()), "`port_num` is 0");
    // Past the field's integer type: serde's error, at its position in the text.
    refused::<Endpoint>(&with("port_num", 256.into()), "expected u8");
    refused::<Endpoint>(&with("mtu", 1500.into()), "256, 512, 1024, 2048 or 4096");
    refused::<Endpoint>(&with("mtu", 3.into()), "an MTU in bytes"); // enum ibv_mtu's, not bytes
    refused::<Endpoint>(&with("gid", "fe80::1::2".into()), "IPv6");
    refused::<Endpoint>(&with("gid", (-1).into()), "IPv6");
    refused::<Endpoint>(&with("lid", 65536.into()), "expected u16");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("psn");
    refused::<Endpoint>(&missing.to_string(), "missing field `psn`");
    refused::<Endpoint>("[]", "");
}

#[test]
fn a_gid_is_the_text_of_an_ipv6_address() {
    assert_eq!(round_trip(&endpoint().gid), r#""fe80::5054:ff:fe12:3456""#);
    let v4 = Gid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 10]);
    assert_eq!(round_trip(&v4), r#""::ffff:192.168.1.10""#); // RoCE v2 of an IPv4 address
    round_trip(&Gid::default());
    round_trip(&Gid([0xff; 16]));
    // Any text form of the address is read, the uncompressed one too.
    let long: Gid = serde_json::from_str(r#""fe80:0000:0000:0000:5054:00ff:fe12:3456""#).unwrap();
    assert_eq!(long, endpoint().gid);
    refused::<Gid>(r#""fe80::5054:ff:fe12:3456:1:2:3""#, "IPv6");
    refused::<Gid>(r#""""#, "IPv6");
    refused::<Gid>("[254,128]", "IPv6");
}

#[test]
fn an_mtu_is_its_bytes() {
    for (mtu, bytes) in [
        (Mtu::Mtu256, 256),
        (Mtu::Mtu512, 512),
        (Mtu::Mtu1024, 1024),
        (Mtu::Mtu2048, 2048),
        (Mtu::Mtu4096, 4096),
    ] {
        assert_eq!(round_trip(&mtu), bytes.to_string());
    }
    for bad in ["0", "1", "5", "9000", "-1", "1024.5", r#""1024""#] {
        refused::<Mtu>(bad, "");
    }
}

/// A deserializer of a format that is not self-describing, as fixed-width binary formats are:
/// it holds one `u16` and answers only a request for a `u16`.
struct OnlyU16(u16);

impl<'de> serde::Deserializer<'de> for OnlyU16 {
    type Error = serde::de::value::Error;
    fn deserialize_u16<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        v.visit_u16(self.0)
    }
    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom(
            "asked for another type than the u16 written",
        ))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

#[test]
fn an_mtu_reads_the_u16_it_writes() {
    // Serialize writes a u16 (`serialize_u16`); Deserialize must ask for exactly that, or a
    // fixed-width binary format reads the wrong number of bytes.
    use serde::Deserialize;
    assert_eq!(Mtu::deserialize(OnlyU16(2048)).unwrap(), Mtu::Mtu2048);
    assert!(Mtu::deserialize(OnlyU16(1500)).is_err());
}

#[test]
fn rc_params_in_and_out_of_their_ranges() {
    let text = round_trip(&RcParams::default());
    assert_eq!(
        text,
        r#"{"timeout":14,"retry_cnt":6,"rnr_retry":7,"min_rnr_timer":12,"max_rd_atomic":1,"max_dest_rd_atomic":1}"#
    );
    let edges = RcParams {
        timeout: 31,
        retry_cnt: 7,
        rnr_retry: 0,
        min_rnr_timer: 31,
        max_rd_atomic: 255, // the device bounds these: connect_with checks them
        max_dest_rd_atomic: 0,
    };
    round_trip(&edges);
    let good = serde_json::to_value(RcParams::default()).unwrap();
    for (field, bad) in [
        ("timeout", 32),
        ("retry_cnt", 8),
        ("rnr_retry", 8),
        ("min_rnr_timer", 32),
    ] {
        let mut p = good.clone();
        p[field] = bad.into();
        refused::<RcParams>(&p.to_string(), &format!("`{field}` is {bad}"));
    }
    let mut p = good.clone();
    p["max_rd_atomic"] = 256.into();
    refused::<RcParams>(&p.to_string(), "expected u8");
    let mut p = good;
    p.as_object_mut().unwrap().remove("timeout");
    refused::<RcParams>(&p.to_string(), "missing field `timeout`");
}

#[test]
fn a_remote_region_carries_its_rights() {
    type Write = access!(REMOTE_WRITE);
    let r = RemoteMr::from_peer(0x7f00_0000_1000, 4096, 0x1234, Access::REMOTE_WRITE);
    let text = round_trip(&r);
    assert_eq!(
        text,
        r#"{"addr":139637976731648,"len":4096,"rkey":4660,"access":["LOCAL_WRITE","REMOTE_WRITE"]}"#
    );
    // REMOTE_WRITE alone implies the LOCAL_WRITE ibv_reg_mr(3) requires with it.
    let short = r#"{"addr":139637976731648,"len":4096,"rkey":4660,"access":["REMOTE_WRITE"]}"#;
    assert_eq!(serde_json::from_str::<RemoteMr<Write>>(short).unwrap(), r);
    // More rights than the type claims: fine (the write needs only its own).
    let all = RemoteMr::from_peer(4096, 64, 9, Access::REMOTE_WRITE | Access::REMOTE_READ);
    let text = round_trip(&all);
    let w: RemoteMr<Write> = serde_json::from_str(&text).unwrap();
    assert_eq!((w.addr(), w.len(), w.rkey()), (4096, 64, 9));
    // Fewer: an error naming what is missing.
    let read = round_trip(&RemoteMr::from_peer(4096, 64, 9, Access::REMOTE_READ));
    refused::<RemoteMr<Write>>(&read, "without [LOCAL_WRITE, REMOTE_WRITE]");
    refused::<RemoteMr<access!(REMOTE_ATOMIC)>>(&text, "without [REMOTE_ATOMIC]");
    // No rights at all, for a type that claims none.
    let none = round_trip(&RemoteMr::from_peer(4096, 64, 9, Access::NONE));
    assert!(none.ends_with(r#""access":[]}"#), "{none}");
    refused::<RemoteMr<access!(REMOTE_READ)>>(&none, "without [REMOTE_READ]");
    // A region that is empty or wraps past 2^64, an unknown right, a missing field.
    let region = |addr: u64, len: u64, access: &str| {
        format!(r#"{{"addr":{addr},"len":{len},"rkey":1,"access":{access}}}"#)
    };
    refused::<RemoteMr<Write>>(&region(4096, 0, r#"["REMOTE_WRITE"]"#), "never empty");
    refused::<RemoteMr<Write>>(&region(u64::MAX, 2, r#"["REMOTE_WRITE"]"#), "past 2^64");
    // A region may end at 2^64: its last byte, at u64::MAX, has an address.
    let at_end = |addr: u64, len: u64| {
        serde_json::from_str::<RemoteMr<Write>>(&region(addr, len, r#"["REMOTE_WRITE"]"#)).unwrap()
    };
    assert!(at_end(u64::MAX - 1, 1).at(0, 1).is_some());
    let last = at_end(u64::MAX - 1, 2);
    assert!(last.at(1, 1).is_some() && last.at(2, 1).is_none());
    refused::<RemoteMr<Write>>(&region(0, 1, r#"["REMOTE_EXECUTE"]"#), "REMOTE_EXECUTE");
    refused::<RemoteMr<Write>>(&region(0, 1, r#""REMOTE_WRITE""#), "sequence");
    refused::<RemoteMr<Write>>(r#"{"addr":0,"len":1,"rkey":1}"#, "missing field `access`");
}

#[test]
fn a_remote_address_carries_its_rights() {
    let at = RemoteMr::from_peer(4096, 64, 9, Access::REMOTE_WRITE)
        .at(8, 8)
        .unwrap();
    let text = round_trip(&at);
    assert_eq!(
        text,
        r#"{"addr":4104,"rkey":9,"access":["LOCAL_WRITE","REMOTE_WRITE"]}"#
    );
    refused::<RemoteAddr<access!(REMOTE_READ)>>(&text, "without [REMOTE_READ]");
    let from_peer = RemoteAddr::from_peer(4104, 9, Access::REMOTE_WRITE);
    assert_eq!(
        serde_json::from_str::<RemoteAddr<access!(REMOTE_WRITE)>>(&text).unwrap(),
        from_peer
    );
}

/// Two QPs on the test device, each knowing the other only from JSON (as two programs would):
/// they connect from the endpoints read back, `a` sends into `b`'s receive and RDMA-writes
/// into `b`'s region, whose description `b` sent as JSON too.
#[test]
fn endpoints_read_from_json_connect_and_carry_data() {
    common::with_pd_cq(Some(16), |_, pd, cq| {
        let build = || {
            Qp::<Rc>::builder(pd, cq, cq)
                .max_send_wr(4)
                .build()
                .unwrap()
        };
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        let (to_b, to_a) = (
            serde_json::to_string(&ea).unwrap(),
            serde_json::to_string(&eb).unwrap(),
        );
        let (ea_at_b, eb_at_a): (Endpoint, Endpoint) = (
            serde_json::from_str(&to_b).unwrap(),
            serde_json::from_str(&to_a).unwrap(),
        );
        assert_eq!((ea_at_b, eb_at_a), (ea, eb));
        let params: RcParams =
            serde_json::from_str(&serde_json::to_string(&RcParams::default()).unwrap()).unwrap();
        let a = a
            .connect_with(&ea, &eb_at_a, AccessFlags::LOCAL_WRITE, params)
            .unwrap();
        let b = b
            .connect_with(&eb, &ea_at_b, AccessFlags::REMOTE_WRITE, params)
            .unwrap();
        let src = Mr::new(pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap();
        let dst = Mr::new(pd, vec![0u8; 64], Access::REMOTE_WRITE).unwrap();
        let region = serde_json::to_string(&dst.remote()).unwrap(); // b to a
        let region: RemoteMr<access!(REMOTE_WRITE)> = serde_json::from_str(&region).unwrap();
        src.write(0, b"over json").unwrap();
        b.post_recv(1, &[dst.sge(0..32).unwrap()]).unwrap();
        let sge = [src.sge(0..9).unwrap()];
        a.post_send(&SendWr::<Rc>::send(2, &sge).signaled())
            .unwrap();
        let at = region.at(32, 9).unwrap();
        a.post_send(&SendWr::<Rc>::rdma_write(3, &sge, at).signaled())
            .unwrap();
        common::expect_successes(
            cq,
            3,
            Duration::from_secs(5),
            "a send, its receive, a write",
        );
        let mut got = [0u8; 41];
        dst.read(0, &mut got).unwrap();
        assert_eq!(
            (&got[..9], &got[32..41]),
            (&b"over json"[..], &b"over json"[..])
        );
    });
}
