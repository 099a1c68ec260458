//! Memory regions on the test device: registration, keys, the region as a peer sees it,
//! scatter/gather elements within it, copies in and out, and no leak on the error path.

mod common;

use common::{open, LeakCheck};
use typed_verbs::{AccessFlags, ErrorKind, Mr, Pd, Verb};

#[test]
fn register_read_write_and_deregister() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut buf = vec![0u8; 4096];
    let access = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let mr = Mr::new(&pd, &mut buf, access).expect("ibv_reg_mr");
    assert_eq!(mr.len(), 4096);
    assert_ne!(mr.lkey(), 0);
    let remote = mr.remote();
    assert_eq!((remote.len, remote.rkey), (4096, mr.rkey()));
    assert_eq!(
        remote.at(4000, 96).map(|r| r.addr),
        Some(remote.addr + 4000)
    );
    assert_eq!(remote.at(4000, 97), None, "past the end");
    let sge = mr.sge(100..164).unwrap();
    assert_eq!(
        (sge.addr(), sge.length(), sge.lkey()),
        (remote.addr + 100, 64, mr.lkey())
    );
    assert!(mr.sge(4000..4097).is_none());
    mr.write(10, b"hello").unwrap();
    let mut out = [0u8; 5];
    mr.read(10, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    let e = mr.read(4094, &mut out).expect_err("past the end");
    assert_eq!(e.verb, Verb::MrRead);
    assert!(matches!(e.kind, ErrorKind::OutOfRange { .. }));
    mr.destroy().unwrap();
    // The buffer is the caller's again, with what was written through the region.
    assert_eq!(&buf[10..15], b"hello");
}

#[test]
fn remote_write_includes_local_write_as_the_verbs_require() {
    assert_eq!(
        AccessFlags::REMOTE_WRITE.bits() & AccessFlags::LOCAL_WRITE.bits(),
        AccessFlags::LOCAL_WRITE.bits()
    );
    assert_eq!(
        AccessFlags::REMOTE_ATOMIC.bits() & AccessFlags::LOCAL_WRITE.bits(),
        AccessFlags::LOCAL_WRITE.bits()
    );
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut buf = [0u8; 64];
    // Registration with every remote right works on the device as built.
    Mr::new(
        &pd,
        &mut buf,
        AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
    )
    .expect("ibv_reg_mr with remote access");
}

#[test]
fn an_empty_buffer_is_refused_before_the_call() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let leaks = LeakCheck::new(&ctx, "an_empty_buffer_is_refused_before_the_call");
    let e = Mr::new(&pd, &mut [], AccessFlags::LOCAL_WRITE).expect_err("empty");
    assert_eq!((e.verb, e.errno()), (Verb::RegMr, libc::EINVAL));
    leaks.assert_unchanged("a refused registration");
}
