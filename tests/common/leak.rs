//! Leak checks: live-object snapshots on the software device, drop counters, explicit destroys.

use super::skip;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
#[cfg(feature = "software-device")]
use typed_verbs::software::{self, LiveObjects};
#[cfg(feature = "software-device")]
use typed_verbs::Context;

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

/// Opens the test device, runs `f` on it, and asserts that `f` left no object behind (`after`
/// says what `f` did, for the failure message; on a real device nothing is checked).
#[cfg(feature = "software-device")]
pub fn leak_checked<R>(test: &str, after: &str, f: impl FnOnce(&Context) -> R) -> R {
    let ctx = super::open();
    let leaks = LeakCheck::new(&ctx, test);
    let r = f(&ctx);
    leaks.assert_unchanged(after);
    r
}

/// Asserts that `build`, given a counted user context, fails: its user context dropped once and
/// nothing left on `ctx` (`after` names the failure, for the leak check's message). Gives the
/// error.
#[cfg(feature = "software-device")]
#[track_caller]
pub fn assert_refused<T>(
    ctx: &Context,
    test: &str,
    after: &str,
    build: impl FnOnce(Token) -> typed_verbs::Result<T>,
) -> typed_verbs::Error {
    let leaks = LeakCheck::new(ctx, test);
    let drops = Drops::new();
    let Err(e) = build(drops.token(1)) else {
        panic!("{test}: {after}: the build succeeded");
    };
    assert_eq!(
        drops.count(),
        1,
        "{test}: the refused builder's context dropped once"
    );
    leaks.assert_unchanged(after);
    e
}

/// [`assert_refused`] for naming an object of another context (`what`): refused by `verb`.
#[cfg(feature = "software-device")]
#[track_caller]
pub fn assert_foreign_refused<T>(
    ctx: &Context,
    test: &str,
    verb: typed_verbs::Verb,
    what: &'static str,
    build: impl FnOnce(Token) -> typed_verbs::Result<T>,
) {
    let e = assert_refused(ctx, test, &format!("a foreign {what}"), build);
    super::assert_wrong_context(&e, verb, what);
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

/// Asserts that an explicit `destroy()` (or `close()`, or a `try_` one) succeeded. A
/// `DestroyError<T>` has no `Debug` where `T` has none, so `.unwrap()` does not compile on it.
#[track_caller]
pub fn destroyed<E: std::fmt::Display>(r: std::result::Result<(), E>) {
    if let Err(e) = r {
        panic!("destroy failed: {e}");
    }
}
