//! Devices, contexts, ports, PDs, parent domains and completion channels.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

mod common;

use common::{assert_out_of_range, destroyed, feature, open, open_registered, skip, LeakCheck};
use std::os::fd::AsRawFd;
use typed_verbs::software::{self, LiveObjects, SwConfig};
use typed_verbs::{devices, CompChannel, Context, ErrorKind, ParentDomain, Pd, Verb};

#[test]
fn device_list_contains_sw0_and_the_test_device() {
    let ctx = open();
    let list = devices().expect("device list");
    let sw0 = list
        .iter()
        .find(|d| d.name() == software::DEFAULT_DEVICE)
        .expect("sw0 is always in the device list");
    assert!(sw0.is_software());
    assert_eq!(
        list.iter()
            .filter(|d| d.name() == software::DEFAULT_DEVICE)
            .count(),
        1,
        "sw0 listed once"
    );
    let mine = list
        .iter()
        .find(|d| d.name() == ctx.device_name())
        .expect("the test device is in the list");
    assert_eq!(mine.is_software(), ctx.is_software());
    // Opening through the Device works and gives a context on that device.
    let again = mine.open().expect("Device::open");
    assert_eq!(again.device_name(), ctx.device_name());
    assert_eq!(again.is_software(), ctx.is_software());
    assert_eq!(again.attr(), ctx.attr());
    again.close().expect("close");
}

/// Real devices come first in the list, the software devices after them, so that a program
/// walking the list meets a real device first.
#[test]
fn real_devices_come_before_software_devices() {
    let list = devices().expect("device list");
    let first_software = list
        .iter()
        .position(|d| d.is_software())
        .expect("sw0 is always listed");
    assert!(
        list[first_software..].iter().all(|d| d.is_software()),
        "a real device follows a software device: {list:?}"
    );
    assert!(
        list[..first_software].iter().all(|d| !d.is_software()),
        "{list:?}"
    );
}

/// Run by [`open_from_env_unset_takes_the_first_real_device`] in a child process whose
/// environment lacks `TYPED_VERBS_DEVICE` (the tests of one binary share the environment, so it
/// is not removed here).
#[test]
#[ignore = "run by open_from_env_unset_takes_the_first_real_device, without the variable"]
fn open_from_env_unset_child() {
    assert!(std::env::var_os(typed_verbs::DEVICE_ENV).is_none());
    let list = devices().expect("device list");
    let expected = list
        .iter()
        .find(|d| !d.is_software())
        .map_or(software::DEFAULT_DEVICE, |d| d.name());
    let ctx = Context::open_from_env().expect("open_from_env");
    assert_eq!(ctx.device_name(), expected, "devices: {list:?}");
    assert_eq!(ctx.is_software(), expected == software::DEFAULT_DEVICE);
    println!("OPENED {}", ctx.device_name());
}

/// Runs the ignored test `child` alone in a child process (`env` sets its environment) and
/// asserts that it succeeded and printed `marker` (`what` says what failing means).
#[track_caller]
fn assert_child_prints(
    child: &str,
    marker: &str,
    what: &str,
    env: impl FnOnce(&mut std::process::Command),
) {
    let out = common::run_alone(child, true, env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(marker),
        "{what}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With `TYPED_VERBS_DEVICE` unset, `open_from_env` opens the first real device, and sw0 only
/// on a machine without one (here: sw0 on a machine without RDMA devices, rxe0 in the VM lane).
#[test]
fn open_from_env_unset_takes_the_first_real_device() {
    assert_child_prints(
        "open_from_env_unset_child",
        "OPENED ",
        "the child test failed",
        |c| {
            c.env_remove(typed_verbs::DEVICE_ENV);
        },
    );
}

/// Run by [`open_from_env_with_a_name_that_is_not_utf8_fails`] in a child process whose
/// `TYPED_VERBS_DEVICE` is not UTF-8.
#[test]
#[ignore = "run by open_from_env_with_a_name_that_is_not_utf8_fails, with the variable set"]
fn open_from_env_not_utf8_child() {
    assert!(std::env::var_os(typed_verbs::DEVICE_ENV).is_some_and(|v| v.to_str().is_none()));
    match Context::open_from_env() {
        Ok(ctx) => println!("OPENED {}", ctx.device_name()),
        Err(e) => {
            assert_eq!(e.verb, Verb::OpenDevice);
            assert!(matches!(e.kind, ErrorKind::NoSuchDevice(_)), "{e:?}");
            println!("REFUSED {e}");
        }
    }
}

/// A `TYPED_VERBS_DEVICE` that is not UTF-8 names no device: `open_from_env` fails, as for any
/// unknown name, instead of opening the default device as if the variable were unset.
#[test]
fn open_from_env_with_a_name_that_is_not_utf8_fails() {
    use std::os::unix::ffi::OsStrExt;
    assert_child_prints(
        "open_from_env_not_utf8_child",
        "REFUSED ",
        "the child test opened a device or failed",
        |c| {
            c.env(
                typed_verbs::DEVICE_ENV,
                std::ffi::OsStr::from_bytes(b"sw0\xff"),
            );
        },
    );
}

#[test]
fn open_by_name_and_unknown_name() {
    let ctx = open();
    let by_name = Context::open(ctx.device_name()).expect("open by name");
    assert_eq!(by_name.device_name(), ctx.device_name());
    assert_ne!(by_name.as_raw(), ctx.as_raw(), "each open is a new context");
    by_name.close().expect("close");

    let name = "typed-verbs-no-such-device";
    let e = Context::open(name).expect_err("unknown device");
    assert_eq!(e.verb, Verb::OpenDevice);
    assert_eq!(e.kind, ErrorKind::NoSuchDevice(name.to_owned()));
    assert_eq!(e.errno(), libc::ENODEV);
    let text = e.to_string();
    assert!(
        text.contains("ibv_open_device") && text.contains(name),
        "{text}"
    );
}

#[test]
fn open_from_env_honours_the_variable() {
    // Without touching the process environment (the tests run in parallel): the context the
    // tests' `open` gives is on the device the variable names, or sw0 (the tests choose it).
    let ctx = open();
    match std::env::var(typed_verbs::DEVICE_ENV) {
        Ok(name) if !name.is_empty() => assert_eq!(ctx.device_name(), name),
        _ => {
            assert_eq!(ctx.device_name(), software::DEFAULT_DEVICE);
            assert!(ctx.is_software());
        }
    }
    assert_eq!(ctx.is_software(), software::live_objects(&ctx).is_some());
}

#[test]
fn query_device_matches_attr() {
    let ctx = open();
    let q = ctx.query_device().expect("query_device");
    assert_eq!(&q, ctx.attr(), "attributes do not change between queries");
    assert!(q.phys_port_cnt >= 1);
    assert!(q.max_cqe >= 1);
    assert!(q.max_qp_wr >= 1);
    assert!(q.max_sge >= 1);
    assert!(q.max_qp >= 1 && q.max_cq >= 1 && q.max_pd >= 1);
    assert!(ctx.num_comp_vectors() >= 1);
    assert!(!q.fw_ver.contains('\0'));
}

#[test]
fn software_device_attr_values_follow_its_config() {
    const TEST: &str = "software_device_attr_values_follow_its_config";
    common::on_software(TEST, "comparing attributes with SwConfig", |ctx| {
        let c = SwConfig::default();
        let a = ctx.attr();
        assert_eq!(a.max_cqe, c.max_cqe);
        assert_eq!(a.max_qp_wr, c.max_qp_wr);
        assert_eq!(a.max_sge, c.max_sge);
        assert_eq!(a.max_srq_wr, c.max_srq_wr);
        assert_eq!(a.max_srq_sge, c.max_srq_sge);
        assert_eq!(
            (a.max_qp, a.max_cq, a.max_srq, a.max_pd),
            (c.max_objects, c.max_objects, c.max_objects, c.max_objects)
        );
        assert_eq!(
            (a.max_mcast_grp, a.max_mcast_qp_attach),
            (c.max_mcast, c.max_mcast)
        );
        assert_eq!(ctx.num_comp_vectors(), c.num_comp_vectors);
        assert_eq!(a.fw_ver, env!("CARGO_PKG_VERSION"));

        // A registered device reports its own limits.
        let custom = SwConfig {
            max_cqe: 100,
            max_qp_wr: 77,
            max_sge: 5,
            max_srq_wr: 33,
            max_srq_sge: 3,
            num_comp_vectors: 4,
            max_objects: 9,
            max_mcast: 2,
            ..SwConfig::default()
        };
        let rctx = open_registered("dev-attr-custom", custom.clone());
        assert!(rctx.is_software());
        assert_eq!(rctx.device_name(), "dev-attr-custom");
        let r = rctx.query_device().expect("query_device");
        assert_eq!(&r, rctx.attr());
        assert_eq!(
            (
                r.max_cqe,
                r.max_qp_wr,
                r.max_sge,
                r.max_srq_wr,
                r.max_srq_sge
            ),
            (
                custom.max_cqe,
                custom.max_qp_wr,
                custom.max_sge,
                custom.max_srq_wr,
                custom.max_srq_sge
            )
        );
        assert_eq!((r.max_qp, r.max_mcast_grp), (9, 2));
        assert_eq!(rctx.num_comp_vectors(), 4);

        let rxe = open_registered("dev-attr-like-rxe", SwConfig::like_rxe());
        let l = SwConfig::like_rxe();
        assert_eq!(
            (rxe.attr().max_qp_wr, rxe.attr().max_srq_wr),
            (l.max_qp_wr, l.max_srq_wr)
        );
    });
}

#[test]
fn register_rejects_bad_and_duplicate_names() {
    const TEST: &str = "register_rejects_bad_and_duplicate_names";
    let Some(_ctx) = common::software_ctx(TEST, "software::register") else {
        return;
    };
    let dup =
        software::register(software::DEFAULT_DEVICE, SwConfig::default()).expect_err("sw0 exists");
    common::assert_os_error(&dup, Verb::RegisterSoftwareDevice, libc::EEXIST);

    software::register("dev-register-once", SwConfig::default()).expect("first registration");
    let again = software::register("dev-register-once", SwConfig::like_rxe())
        .expect_err("second registration");
    assert_eq!(again.kind, ErrorKind::Os(libc::EEXIST));

    for (name, cfg) in [
        ("", SwConfig::default()),
        (&*"x".repeat(64), SwConfig::default()),
        ("dev-nul\0name", SwConfig::default()),
        (
            "dev-zero-vectors",
            SwConfig {
                num_comp_vectors: 0,
                ..SwConfig::default()
            },
        ),
        (
            "dev-zero-cqe",
            SwConfig {
                max_cqe: 0,
                ..SwConfig::default()
            },
        ),
        // ibv_device_attr's limits are C ints: a larger one would read back as nonsense.
        (
            "dev-huge-cqe",
            SwConfig {
                max_cqe: u32::MAX,
                ..SwConfig::default()
            },
        ),
        (
            "dev-huge-sge",
            SwConfig {
                max_sge: i32::MAX as u32 + 1,
                ..SwConfig::default()
            },
        ),
    ] {
        let e = software::register(name, cfg).expect_err("invalid registration");
        assert_eq!(e.kind, ErrorKind::Os(libc::EINVAL), "{name:?}");
        assert!(
            Context::open(name).is_err(),
            "{name:?} must not have been registered"
        );
    }
    // 63 bytes is the longest name.
    let longest = "y".repeat(63);
    let c = open_registered(&longest, SwConfig::default());
    assert_eq!(c.device_name(), longest);
}

#[test]
fn query_port_one_and_out_of_range_ports() {
    let ctx = open();
    let cnt = ctx.attr().phys_port_cnt;
    let p = ctx.query_port(1).expect("port 1");
    assert!(p.max_mtu >= 1 && p.max_mtu <= 5, "{p:?}");
    assert!(p.active_mtu >= 1 && p.active_mtu <= p.max_mtu, "{p:?}");
    assert!(p.link_layer == 1 || p.link_layer == 2, "{p:?}");
    assert!(p.gid_tbl_len >= 1, "{p:?}");
    for port in 2..=cnt {
        ctx.query_port(port)
            .expect("every port up to phys_port_cnt");
    }
    if ctx.is_software() {
        assert_eq!(p.state, 4, "the software port is ACTIVE");
        assert_eq!(p.link_layer, 2, "the software device is RoCE, as rxe");
    }

    assert_out_of_range(
        ctx.query_port(0),
        Verb::QueryPort,
        "port_num",
        0,
        1,
        cnt.into(),
    );
    match cnt.checked_add(1) {
        Some(over) => assert_out_of_range(
            ctx.query_port(over),
            Verb::QueryPort,
            "port_num",
            over.into(),
            1,
            cnt.into(),
        ),
        None => skip(
            "query_port_one_and_out_of_range_ports",
            "the device has 255 ports: no port number is above phys_port_cnt",
        ),
    }
    if cnt < u8::MAX {
        assert_out_of_range(
            ctx.query_port(u8::MAX),
            Verb::QueryPort,
            "port_num",
            255,
            1,
            cnt.into(),
        );
    }
}

#[test]
fn pd_alloc_and_destroy() {
    let ctx = open();
    let before = software::live_objects(&ctx);
    let a = Pd::new(&ctx).expect("alloc pd");
    let b = Pd::new(&ctx).expect("second pd");
    assert_ne!(a.as_raw(), b.as_raw());
    if let Some(before) = before {
        let now = software::live_objects(&ctx).unwrap();
        assert_eq!(now.pds, before.pds + 2);
    } else {
        skip(
            "pd_alloc_and_destroy",
            "live-object counts need the software device",
        );
    }
    destroyed(a.destroy());
    drop(b);
    if let Some(before) = before {
        assert_eq!(software::live_objects(&ctx).unwrap(), before);
    }
    ctx.close().expect("close after every PD is gone");
}

#[test]
fn parent_domain_alloc_and_destroy() {
    const TEST: &str = "parent_domain_alloc_and_destroy";
    let ctx = open();
    let leaks = LeakCheck::new(&ctx, TEST);
    let pd = Pd::new(&ctx).expect("pd");
    if let Some(pdom) = feature(&ctx, TEST, "parent domains", ParentDomain::new(&ctx, &pd)) {
        if let Some(b) = leaks.before() {
            assert_eq!(software::live_objects(&ctx).unwrap().pds, b.pds + 2);
        }
        assert_ne!(pdom.as_raw(), pd.as_raw());
        destroyed(pdom.destroy());
    }
    destroyed(pd.destroy());
    leaks.assert_unchanged("parent domain destroy");
}

#[test]
fn parent_domain_unsupported_on_like_rxe() {
    const TEST: &str = "parent_domain_unsupported_on_like_rxe";
    common::on_like_rxe(TEST, "dev-pdom-like-rxe", |ctx| {
        let pd = Pd::new(ctx).expect("pd");
        let leaks = LeakCheck::new(ctx, TEST);
        let e = ParentDomain::new(ctx, &pd).expect_err("like_rxe has no parent domains");
        common::assert_os_error(&e, Verb::AllocParentDomain, libc::EOPNOTSUPP);
        assert!(e.is_unsupported());
        leaks.assert_unchanged("failed ibv_alloc_parent_domain");
    });
}

#[test]
fn parent_domain_over_a_pd_of_another_context_is_wrong_context() {
    const TEST: &str = "parent_domain_over_a_pd_of_another_context_is_wrong_context";
    let (ctx, other) = common::two_contexts();
    let leaks = LeakCheck::new(&ctx, TEST);
    let other_leaks = LeakCheck::new(&other, TEST);
    let foreign_pd = Pd::new(&other).expect("pd of the other context");
    let e = ParentDomain::new(&ctx, &foreign_pd)
        .expect_err("a parent domain over another context's PD");
    common::assert_wrong_context(&e, Verb::AllocParentDomain, "pd");
    leaks.assert_unchanged("rejected parent domain");
    drop(foreign_pd);
    other_leaks.assert_unchanged("rejected parent domain (other context)");
}

#[test]
fn comp_channel_fd_is_open_and_destroy_works() {
    let ctx = open();
    let leaks = LeakCheck::new(&ctx, "comp_channel_fd_is_open_and_destroy_works");
    let ch = CompChannel::new(&ctx).expect("create comp channel");
    let fd = ch.as_raw_fd();
    assert!(fd >= 0);
    // SAFETY: F_GETFD only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert_ne!(
        flags,
        -1,
        "fcntl(F_GETFD) on the channel's fd: {}",
        std::io::Error::last_os_error()
    );
    let ch2 = CompChannel::new(&ctx).expect("second channel");
    assert_ne!(ch2.as_raw_fd(), fd, "each channel has its own fd");
    if let Some(b) = leaks.before() {
        let now = software::live_objects(&ctx).unwrap();
        assert_eq!(
            now,
            LiveObjects {
                comp_channels: b.comp_channels + 2,
                ..b
            }
        );
    }
    destroyed(ch.destroy());
    destroyed(ch2.destroy());
    leaks.assert_unchanged("channel destroy");
    ctx.close().expect("close");
}
