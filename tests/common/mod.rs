//! What the runtime tests share: opening the device named by `TYPED_VERBS_DEVICE` (the software
//! device `sw0` when unset), visible skips, leak checks on the software device, and a user
//! context that counts its drops.
//!
//! Without the `software-device` feature the test files that need the software device's hooks
//! compile to nothing (`#![cfg(feature = "software-device")]`), and so do the helpers here that
//! use them.
//!
//! Every test file includes this module with `mod common;` and uses only part of it.
#![allow(dead_code)]

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
#[cfg(feature = "software-device")]
use typed_verbs::software::{self, LiveObjects, SwConfig};
use typed_verbs::{AddressVector, Context, ErrorKind, Gid, GlobalRoute, Result};

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

/// A snapshot of a context's live objects, to show that an error path leaked nothing. On a
/// real device it prints one SKIP line and checks nothing.
#[cfg(feature = "software-device")]
pub struct LeakCheck<'c> {
    ctx: &'c Context,
    before: Option<LiveObjects>,
}

#[cfg(feature = "software-device")]
impl<'c> LeakCheck<'c> {
    /// Takes the snapshot now.
    pub fn new(ctx: &'c Context, test: &str) -> Self {
        let before = software::live_objects(ctx);
        if before.is_none() {
            skip(
                test,
                format!(
                    "leak checks (software::live_objects) need the software device (running on {})",
                    ctx.device_name()
                ),
            );
        }
        LeakCheck { ctx, before }
    }

    /// Asserts that the context holds exactly the objects it held at the snapshot.
    #[track_caller]
    pub fn assert_unchanged(&self, after: &str) {
        if let Some(before) = self.before {
            let now = software::live_objects(self.ctx).expect("still a software context");
            assert_eq!(now, before, "objects leaked after {after}");
        }
    }

    /// The snapshot (`None` on a real device).
    pub fn before(&self) -> Option<LiveObjects> {
        self.before
    }
}

/// Counts the drops of the [`Token`]s it hands out: a typed user context whose destruction a
/// test can observe.
#[derive(Clone, Default)]
pub struct Drops(Arc<AtomicUsize>);

impl Drops {
    pub fn new() -> Self {
        Drops::default()
    }

    /// A user context carrying `id`, counted by this counter when dropped.
    pub fn token(&self, id: u64) -> Token {
        Token {
            id,
            drops: self.0.clone(),
        }
    }

    /// How many tokens have been dropped so far.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A user context that counts its drop.
#[derive(Debug)]
pub struct Token {
    pub id: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Token {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Asserts that `r` is an `OutOfRange` error of `verb` for `what`, with the given value and
/// bounds, and that it maps to EINVAL as a C program would see it.
#[track_caller]
pub fn assert_out_of_range<T>(
    r: Result<T>,
    verb: typed_verbs::Verb,
    what: &str,
    value: u64,
    min: u64,
    max: u64,
) {
    let e = match r {
        Ok(_) => panic!("{verb} with {what} = {value} succeeded; expected OutOfRange"),
        Err(e) => e,
    };
    assert_eq!(e.verb, verb, "{e}");
    match e.kind {
        ErrorKind::OutOfRange {
            what: w,
            value: v,
            min: lo,
            max: hi,
        } => {
            assert_eq!((w, v, lo, hi), (what, value, min, max), "{e}");
        }
        ref k => panic!("expected OutOfRange for {what}, got {k:?} ({e})"),
    }
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(!e.is_unsupported());
}

/// Asserts that an explicit `destroy()` (or `close()`, or a `try_` one) succeeded. A
/// `DestroyError<T>` has no `Debug` where `T` has none, so `.unwrap()` does not compile on it.
#[track_caller]
pub fn destroyed<E: std::fmt::Display>(r: std::result::Result<(), E>) {
    if let Err(e) = r {
        panic!("destroy failed: {e}");
    }
}

/// The address vector of a loopback peer on port 1: a route to `gid` (RoCE devices, rxe among
/// them, need one) from the local GID at `sgid_index`, hop limit 1.
pub fn av_to(gid: Gid, sgid_index: u8) -> AddressVector {
    AddressVector {
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: 1,
        grh: Some(GlobalRoute {
            dgid: gid,
            flow_label: 0,
            sgid_index,
            hop_limit: 1,
            traffic_class: 0,
        }),
    }
}

/// [`av_to`] the context's own GID at index 0 of port 1: a QP's peer on the same device.
pub fn loopback_av(ctx: &Context) -> AddressVector {
    av_to(ctx.query_gid(1, 0).expect("the port's GID 0"), 0)
}
