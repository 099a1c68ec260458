//! Memory regions on the test device: registration of owned buffers (page-aligned, huge pages,
//! Vec, Box) and of borrowed ones inside a scope, keys, the region as a peer sees it,
//! scatter/gather elements within it, copies in and out, no leak on the error path, and leak
//! safety: a forgotten region keeps its memory, a scope deregisters on every exit.
//!
//! A binary of its own: `a_million_registrations_leave_memory_flat` measures the process's
//! resident memory, which tests of other areas running beside it would grow.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

mod common;

use common::{open, skip, LeakCheck};
use typed_verbs::{software, Access, AccessFlags, ErrorKind, HugeBuf, Mr, PageBuf, Pd, Verb};

#[test]
fn register_read_write_and_deregister() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let access = Access::REMOTE_WRITE | Access::REMOTE_READ;
    let mr = Mr::new(&pd, PageBuf::new(4096).unwrap(), access).expect("ibv_reg_mr");
    assert_eq!(mr.len(), 4096);
    assert_ne!(mr.lkey(), 0);
    let remote = mr.remote();
    assert_eq!((remote.len(), remote.rkey()), (4096, mr.rkey()));
    assert_eq!(remote.addr() % 4096, 0, "a PageBuf is page-aligned");
    assert_eq!(
        remote.at(4000, 96).map(|r| r.addr()),
        Some(remote.addr() + 4000)
    );
    assert_eq!(remote.at(4000, 97), None, "past the end");
    let sge = mr.sge(100..164).unwrap();
    assert_eq!(
        (sge.addr(), sge.length(), sge.lkey()),
        (remote.addr() + 100, 64, mr.lkey())
    );
    assert!(mr.sge(4000..4097).is_none());
    mr.write(10, b"hello").unwrap();
    let mut out = [0u8; 5];
    mr.read(10, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    let e = mr.read(4094, &mut out).expect_err("past the end");
    assert_eq!(e.verb, Verb::MrRead);
    assert!(matches!(e.kind, ErrorKind::OutOfRange { .. }));
    let buf = mr.destroy().unwrap();
    // The buffer is the caller's again, zeroed but for what was written through the region.
    assert_eq!(buf.len(), 4096);
    assert_eq!(&buf[10..15], b"hello");
    assert!(buf[..10].iter().chain(&buf[15..]).all(|&b| b == 0));
}

#[test]
fn vec_and_box_come_back_with_their_contents() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut v = Vec::with_capacity(100);
    v.extend_from_slice(b"vector");
    let mr = Mr::new(&pd, v, Access::LOCAL_WRITE).unwrap();
    assert_eq!(mr.len(), 6, "a Vec is registered over its length");
    mr.write(0, b"V").unwrap();
    assert_eq!(mr.destroy().unwrap(), b"Vector");
    let b: Box<[u8]> = Box::new(*b"boxed");
    let mr = Mr::new(&pd, b, Access::LOCAL_WRITE).unwrap();
    mr.write(0, b"B").unwrap();
    assert_eq!(&*mr.destroy().unwrap(), b"Boxed");
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
    // Registration with every remote right works on the device as built.
    Mr::new(
        &pd,
        vec![0u8; 64],
        Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
    )
    .expect("ibv_reg_mr with remote access");
}

#[test]
fn an_empty_buffer_is_refused_before_the_call() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let leaks = LeakCheck::new(&ctx, "an_empty_buffer_is_refused_before_the_call");
    let e = Mr::new(&pd, Vec::new(), Access::LOCAL_WRITE).expect_err("empty");
    assert_eq!((e.verb, e.errno()), (Verb::RegMr, libc::EINVAL));
    let e = Mr::new(&pd, PageBuf::new(0).unwrap(), Access::LOCAL_WRITE).expect_err("empty");
    assert_eq!((e.verb, e.errno()), (Verb::RegMr, libc::EINVAL));
    let e = Mr::scoped(&pd, &mut [], Access::LOCAL_WRITE, |_| {
        panic!("the closure does not run")
    })
    .expect_err("empty");
    assert_eq!((e.verb, e.errno()), (Verb::RegMr, libc::EINVAL));
    leaks.assert_unchanged("a refused registration");
}

#[test]
fn a_page_buffer_too_large_to_lay_out_is_out_of_range() {
    let e = PageBuf::new(usize::MAX).expect_err("too large");
    assert_eq!(e.verb, Verb::AllocBuf);
    assert!(
        matches!(e.kind, ErrorKind::OutOfRange { what: "len", .. }),
        "{e}"
    );
}

/// Passes whether the OS has huge pages or not: with them, a region over huge pages works;
/// without, the error is the typed `NoHugePages`, and the kernel indeed has none free.
#[test]
fn huge_pages_are_registered_where_the_os_has_them() {
    let e = HugeBuf::new(0).expect_err("empty");
    assert!(matches!(e.kind, ErrorKind::OutOfRange { .. }), "{e}");
    match HugeBuf::new(1) {
        Ok(buf) => {
            let huge = HugeBuf::huge_page_size().expect("mapped, so the kernel has a size");
            assert_eq!(buf.len(), huge, "rounded up to one huge page");
            assert!(buf.iter().all(|&b| b == 0));
            let ctx = open();
            let pd = Pd::new(&ctx).unwrap();
            let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE).unwrap();
            assert_eq!(mr.remote().addr() % huge as u64, 0, "huge-page aligned");
            mr.write(huge - 4, b"tail").unwrap();
            let buf = mr.destroy().unwrap();
            assert_eq!(&buf[huge - 4..], b"tail");
        }
        Err(e) => {
            assert_eq!(e.verb, Verb::AllocHugeBuf);
            assert!(
                matches!(e.kind, ErrorKind::NoHugePages(_)),
                "without huge pages the error is NoHugePages: {e:?}"
            );
            let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
            let free = meminfo
                .lines()
                .find_map(|l| l.strip_prefix("HugePages_Free:"))
                .and_then(|n| n.trim().parse::<u64>().ok());
            let overcommit = std::fs::read_to_string("/proc/sys/vm/nr_overcommit_hugepages")
                .ok()
                .and_then(|n| n.trim().parse::<u64>().ok());
            assert!(
                free.unwrap_or(0) == 0 && overcommit.unwrap_or(0) == 0 || free.is_none(),
                "NoHugePages although the kernel reports free huge pages ({free:?}, \
                 overcommit {overcommit:?})"
            );
            skip(
                "huge_pages_are_registered_where_the_os_has_them",
                format!("registration part: no huge pages ({e})"),
            );
        }
    }
}

#[test]
fn a_scoped_region_is_deregistered_when_the_scope_ends() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut buf = vec![0u8; 64];
    let (lkey, n) = Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| {
        mr.write(0, b"scoped").unwrap();
        (mr.lkey(), software::live_objects(&ctx).map(|l| l.mrs))
    })
    .unwrap();
    assert_eq!(&buf[..6], b"scoped", "the buffer is the caller's again");
    if let (Some(inside), Some(after)) = (n, software::live_objects(&ctx)) {
        assert_eq!((inside, after.mrs), (1, 0), "registered in the scope only");
    }
    let _ = lkey;
}

/// A panic inside the scope still deregisters the buffer (the unwind drops the region, which
/// the caller never owns): the software device counts no live region afterwards, and the
/// buffer can be registered again.
#[test]
fn a_scoped_region_is_deregistered_when_the_closure_panics() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let leaks = LeakCheck::new(
        &ctx,
        "a_scoped_region_is_deregistered_when_the_closure_panics",
    );
    let mut buf = vec![0u8; 64];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| {
            mr.write(0, b"before the panic").unwrap();
            panic!("inside the scope");
        })
    }));
    assert!(r.is_err(), "the panic propagates");
    leaks.assert_unchanged("a panic inside Mr::scoped");
    assert_eq!(&buf[..16], b"before the panic");
    Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| mr.len()).expect("registered again");
}

/// Resident memory of the process, in bytes (`/proc/self/statm`'s second field, in pages).
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Nothing is recorded per registration: registering and deregistering a region a million
/// times (plain regions with an SGE made, and scoped ones) leaves the process's memory flat.
/// The software device's keys run on meanwhile, so every registration has a new lkey. (Under
/// valgrind, which the sanitizer lane runs every test binary in, a hundredth of the rounds, and
/// the resident size, valgrind's own included, is not compared.)
#[test]
fn a_million_registrations_leave_memory_flat() {
    let ctx = open();
    let test = "a_million_registrations_leave_memory_flat";
    if !common::software_only(&ctx, test, "a million registrations in the time a test has") {
        return;
    }
    let pd = Pd::new(&ctx).unwrap();
    let valgrind = std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("vgpreload"));
    let rounds: u32 = if valgrind { 10_000 } else { 1_000_000 };
    let mut buf = vec![0u8; 64];
    let mut keys = std::collections::HashSet::new();
    let mut round = |i: u32| {
        let key = if i % 2 == 0 {
            let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap();
            let sge = mr.sge(0..64).unwrap();
            sge.lkey()
        } else {
            Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| mr.lkey()).unwrap()
        };
        if i < 1000 {
            keys.insert(key);
        }
    };
    for i in 0..rounds / 10 {
        round(i);
    }
    let before = resident();
    for i in rounds / 10..rounds {
        round(i);
    }
    let grown = resident().saturating_sub(before);
    assert_eq!(keys.len(), 1000, "every registration had a new lkey");
    if valgrind {
        // valgrind's own memory (shadow memory, its allocator) is in the resident set: the
        // rounds run for memcheck's leak check and helgrind, the size is not compared.
        common::note(test, "under valgrind: resident memory not compared");
        return;
    }
    assert!(
        grown < 1 << 20,
        "{} registrations grew resident memory by {grown} bytes",
        rounds - rounds / 10
    );
}

/// Multi-rail: one borrowed buffer registered on two devices at once (`Mr::scoped_in`; the
/// test device and sw0 beside it, so rxe0 and sw0 in the VM lane), each rail receiving into its
/// own part through its own region; after the scope the buffer holds both, and both regions
/// are gone.
#[test]
fn one_buffer_registered_on_two_rails_receives_on_both() {
    use std::time::Duration;
    use typed_verbs::{Context, Cq, Qp, Rc, SendWr};
    let rails = [open(), Context::open("sw0").unwrap()];
    let pds = [Pd::new(&rails[0]).unwrap(), Pd::new(&rails[1]).unwrap()];
    let cqs = [
        Cq::builder(&rails[0]).cqe(8).build().unwrap(),
        Cq::builder(&rails[1]).cqe(8).build().unwrap(),
    ];
    let mut buf = vec![0u8; 64];
    Mr::scoped_in([&pds[0], &pds[1]], &mut buf, Access::LOCAL_WRITE, |mrs| {
        for (i, mr) in mrs.iter().enumerate() {
            let (pd, cq) = (&pds[i], &cqs[i]);
            let (a, b) = (
                Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
                Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
            );
            let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
            let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
            let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE).unwrap();
            let at = 16 * i;
            b.post_recv(1, &[mr.sge(at..at + 16).unwrap()]).unwrap();
            let msg = format!("rail{i}");
            let src = Mr::new(pd, msg.clone().into_bytes(), Access::LOCAL_WRITE).unwrap();
            a.post_send(&SendWr::send(2, &[src.sge(0..msg.len()).unwrap()]).signaled())
                .unwrap();
            let rail = format!("rail {i}");
            common::expect_successes(cq, 2, Duration::from_secs(5), &rail);
            let mut got = [0u8; 5];
            // The other rail's region reads what this one received: the same memory.
            mrs[1 - i].read(at, &mut got).unwrap();
            assert_eq!(&got, msg.as_bytes());
        }
    })
    .unwrap();
    assert_eq!((&buf[..5], &buf[16..21]), (&b"rail0"[..], &b"rail1"[..]));
}

/// `Mr::scoped_in` whose second registration fails (a device that allows one region) leaves
/// nothing registered, does not run the closure, and gives the buffer back.
#[test]
fn a_failed_registration_on_one_rail_deregisters_the_others() {
    let ctx = common::open_registered(
        "sw-one-region",
        software::SwConfig {
            max_objects: 1,
            ..software::SwConfig::default()
        },
    );
    let pd = Pd::new(&ctx).unwrap();
    let leaks = LeakCheck::new(
        &ctx,
        "a_failed_registration_on_one_rail_deregisters_the_others",
    );
    let mut buf = vec![7u8; 64];
    let mut ran = false;
    let r = Mr::scoped_in([&pd, &pd], &mut buf, Access::LOCAL_WRITE, |_| ran = true);
    let e = r.expect_err("the second registration is refused");
    assert_eq!((e.verb, e.errno()), (Verb::RegMr, libc::ENOMEM));
    assert!(!ran, "the closure ran without its regions");
    leaks.assert_unchanged("a refused second registration");
    assert!(buf.iter().all(|&b| b == 7));
}
