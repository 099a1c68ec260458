//! Polling with deadlines and the expectations tests share on what comes back.

use typed_verbs::{ErrorKind, Result};

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
