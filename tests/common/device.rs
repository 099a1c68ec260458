//! Opening the test device, visible skips and notes, and what a test needs the software device for.

use std::fmt::Display;
use std::io::Write;
#[cfg(feature = "software-device")]
use typed_verbs::software::{self, SwConfig};
use typed_verbs::{Context, ErrorKind, Result};

/// Opens the device the tests run on: `TYPED_VERBS_DEVICE`, or the software device `sw0` when
/// it is unset, whatever devices the machine has (the tests choose sw0; `open_from_env` would
/// take a real device first). Without the `software-device` feature, unset means
/// `open_from_env`'s choice.
pub fn open() -> Context {
    #[cfg(feature = "software-device")]
    let opened = match std::env::var(typed_verbs::DEVICE_ENV) {
        Ok(name) if !name.is_empty() => Context::open(&name),
        _ => Context::open(software::DEFAULT_DEVICE),
    };
    #[cfg(not(feature = "software-device"))]
    let opened = Context::open_from_env();
    opened.unwrap_or_else(|e| {
        panic!(
            "cannot open the test device ({}={:?}): {e}",
            typed_verbs::DEVICE_ENV,
            std::env::var(typed_verbs::DEVICE_ENV).ok()
        )
    })
}

/// Prints the skip line for `test` on stderr. It is written to the stderr handle itself, not
/// with `eprintln!`, which libtest captures (and hides) for passing tests: a skip is always seen.
pub fn skip(test: &str, reason: impl Display) {
    let line = format!("SKIP {test}: {reason}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Prints an observation of the device's behaviour for `test` (a NOTE line, which
/// docs/test-matrix.md lists), in one write like [`skip`].
#[allow(dead_code)] // not every test binary notes something
pub fn note(test: &str, what: impl Display) {
    let line = format!("NOTE {test}: {what}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// True on the software device; otherwise prints a SKIP line for `test` (naming `needs`, what
/// the test needs the software device for) and returns false.
pub fn software_only(ctx: &Context, test: &str, needs: &str) -> bool {
    if ctx.is_software() {
        true
    } else {
        skip(
            test,
            format!(
                "whole test: {needs} needs the software device (running on {})",
                ctx.device_name()
            ),
        );
        false
    }
}

/// The result of creating something a real device may lack (`feature`): `Some` on success.
///
/// On the software device (default config, which supports everything) the creation must
/// succeed. On a real device an errno from the device (EOPNOTSUPP or the device's own) is
/// accepted with a SKIP line; any other error kind (a range check, a wrong context) fails.
pub fn feature<T>(ctx: &Context, test: &str, feature: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if ctx.is_software() => {
            panic!(
                "{feature} must work on the software device {}: {e}",
                ctx.device_name()
            )
        }
        Err(e) if e.is_unsupported() => {
            skip(
                test,
                format!("{} does not support {feature} ({e})", ctx.device_name()),
            );
            None
        }
        Err(e) if matches!(e.kind, ErrorKind::Os(_)) => {
            skip(
                test,
                format!(
                    "{} refused {feature} with errno {} ({e})",
                    ctx.device_name(),
                    e.errno()
                ),
            );
            None
        }
        Err(e) => panic!(
            "{feature}: unexpected error kind on {}: {e:?}",
            ctx.device_name()
        ),
    }
}

/// Registers a software device `name` with `config` and opens it. Names must be unique within
/// a test binary (the tests of one binary run as threads of one process).
#[cfg(feature = "software-device")]
pub fn open_registered(name: &str, config: SwConfig) -> Context {
    software::register(name, config)
        .unwrap_or_else(|e| panic!("cannot register software device {name}: {e}"));
    Context::open(name).unwrap_or_else(|e| panic!("cannot open software device {name}: {e}"))
}

/// The path libtest gives the test function `test` of the module `module` (its
/// `module_path!()`): the module path without the crate's name, then the function's name. A
/// test that runs itself again in a child process (`--exact`) names itself with it, in a binary
/// of one file and in one of many modules alike.
pub fn test_path(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{test}"),
        None => test.to_string(),
    }
}

/// A software device of the test's own: `name` registered with `config` and opened, where the
/// tests run on the software device; elsewhere a SKIP line for `test` (naming `needs`, what the
/// test needs the software device for) and `None`. Names must be unique within a test binary.
#[cfg(feature = "software-device")]
pub fn registered_for(test: &str, needs: &str, name: &str, config: SwConfig) -> Option<Context> {
    software_only(&open(), test, needs).then(|| open_registered(name, config))
}

/// The address the connection-manager tests listen on and connect to: `TYPED_VERBS_CM_ADDR`
/// (the VM lane sets rxe0's), 127.0.0.1 when unset or empty.
pub fn cm_addr() -> std::net::IpAddr {
    std::env::var("TYPED_VERBS_CM_ADDR")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("TYPED_VERBS_CM_ADDR is an IP address"))
        .unwrap_or_else(|| "127.0.0.1".parse().unwrap())
}

/// An rdma_cm event channel on `ctx`; `None`, with a SKIP line for `test`, where the device has
/// no connection manager (EOPNOTSUPP or ENODEV from `rdma_create_event_channel`).
pub fn event_channel(ctx: &Context, test: &str) -> Option<typed_verbs::cm::EventChannel> {
    match typed_verbs::cm::EventChannel::new(ctx) {
        Ok(ch) => Some(ch),
        Err(e) if e.errno() == libc::EOPNOTSUPP || e.errno() == libc::ENODEV => {
            assert_eq!(e.verb, typed_verbs::Verb::CreateEventChannel);
            skip(
                test,
                format!(
                    "whole test: no connection manager on {}: {e}",
                    ctx.device_name()
                ),
            );
            None
        }
        Err(e) => panic!("rdma_create_event_channel: {e}"),
    }
}

/// What a connection-manager test runs on: an event channel, the device's context, a PD and a
/// CQ of 64. Fields drop in order: the channel before the context, which on the software device
/// stays open (and is leaked if dropped) while a CM channel of it lives.
pub struct CmSetup {
    pub ch: typed_verbs::cm::EventChannel,
    pub ctx: std::sync::Arc<Context>,
    pub pd: std::sync::Arc<typed_verbs::Pd<'static>>,
    pub cq: std::sync::Arc<typed_verbs::Cq<'static>>,
}

/// The test device, an event channel, a PD and a CQ ([`CmSetup`]); `None` (with a SKIP line)
/// where the device has no connection manager.
pub fn cm_setup(test: &str) -> Option<CmSetup> {
    let ctx = std::sync::Arc::new(open());
    let ch = event_channel(&ctx, test)?;
    let pd = std::sync::Arc::new(typed_verbs::Pd::new(&ctx).unwrap());
    let cq = std::sync::Arc::new(typed_verbs::Cq::builder(&ctx).cqe(64).build().unwrap());
    Some(CmSetup { ch, ctx, pd, cq })
}

/// Runs the test `test` (its libtest path, [`test_path`]) of this test binary again, alone, in
/// a child process (`--exact`, `--nocapture`, one thread; `--ignored` where the test is an
/// ignored child half), its command first given to `configure` (environment variables); gives
/// the child's output. For what needs a process of its own: an environment, a limit, an abort.
pub fn run_alone(
    test: &str,
    ignored: bool,
    configure: impl FnOnce(&mut std::process::Command),
) -> std::process::Output {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    if ignored {
        cmd.arg("--ignored");
    }
    configure(&mut cmd);
    cmd.output().expect("run the child test")
}

/// The test device, where it is the software device; elsewhere a SKIP line for `test` (naming
/// `needs`, what the test needs the software device for) and `None`.
pub fn software_ctx(test: &str, needs: &str) -> Option<Context> {
    let ctx = open();
    software_only(&ctx, test, needs).then_some(ctx)
}

/// Runs `f` on [`software_ctx`]'s context, or prints its SKIP line and runs nothing.
pub fn on_software(test: &str, needs: &str, f: impl FnOnce(&Context)) {
    if let Some(ctx) = software_ctx(test, needs) {
        f(&ctx)
    }
}

/// A software device of the test's own ([`registered_for`]) that holds one object of each kind
/// (`max_objects: 1`): the next creation fails in the device (ENOMEM).
#[cfg(feature = "software-device")]
pub fn quota_one(test: &str, name: &str) -> Option<Context> {
    let config = SwConfig {
        max_objects: 1,
        ..SwConfig::default()
    };
    registered_for(test, "software::register (max_objects)", name, config)
}

/// A software device of the test's own ([`registered_for`]) configured as rxe is
/// ([`SwConfig::like_rxe`]), for what rxe lacks.
#[cfg(feature = "software-device")]
pub fn like_rxe(test: &str, name: &str) -> Option<Context> {
    registered_for(
        test,
        "a like_rxe software device",
        name,
        SwConfig::like_rxe(),
    )
}

/// Runs `f` on [`like_rxe`]'s context, or prints its SKIP line and runs nothing.
#[cfg(feature = "software-device")]
pub fn on_like_rxe(test: &str, name: &str, f: impl FnOnce(&Context)) {
    if let Some(ctx) = like_rxe(test, name) {
        f(&ctx)
    }
}

/// The test device opened twice: two contexts of one device, for the checks that refuse an
/// object of another context.
pub fn two_contexts() -> (Context, Context) {
    (open(), open())
}

/// A software device `name` whose port has a GID table of 8 entries (sw0's and rxe0's, 1024,
/// are longer than a u8 index reaches), opened.
#[cfg(feature = "software-device")]
pub fn open_short_gid_table(name: &str) -> Context {
    let config = SwConfig {
        gid_tbl_len: 8,
        ..SwConfig::default()
    };
    open_registered(name, config)
}
