//! C entry points: `c_entry!`, so that no panic unwinds into C.

/// Runs `body`, the body of a C entry point, so that no panic crosses into C (unwinding out of
/// an `extern "C"` function aborts the process): a panic becomes `on_panic()`, the entry
/// point's failure value. The panic's payload is dropped under a second catch: if that drop
/// panics as well, the second payload is leaked. Used only through [`c_entry!`].
#[inline(always)]
pub(crate) fn no_unwind<R>(on_panic: impl FnOnce() -> R, body: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            // The payload's own drop may panic too: that second payload is leaked rather than
            // let out.
            if let Err(again) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(payload)))
            {
                std::mem::forget(again);
            }
            on_panic()
        }
    }
}

/// Defines functions the crate hands to C as pointers (the software device's `ibv_context.ops`
/// and `ibv_cq_ex` operations, the crate's own `next_poll` for rxe): every one is made here,
/// so every one runs its body under [`no_unwind`], and no `extern "C" fn` of the crate is
/// written anywhere else (`tests/c_entry.rs` checks the sources).
///
/// ```text
/// c_entry! {
///     /// docs
///     pub(super) fn name(arg: Type, ...) -> Ret = on_panic(FAILURE) { body }
/// }
/// ```
///
/// makes `pub(super) unsafe extern "C" fn name(arg: Type, ...) -> Ret`. What a panic returns,
/// by what the C caller expects:
/// * a verb that returns an errno (`post_send`, `post_recv`, `post_srq_recv`,
///   `req_notify_cq`, `start_poll`, `next_poll`): `EIO`;
/// * `poll_cq`, which returns a count or a negative value: `-EIO`;
/// * a completion field reader (`read_*`), which cannot fail: 0;
/// * `end_poll`, which returns nothing: nothing.
///
/// Failures the bodies expect (a full queue, an allocation that cannot be made) are errnos
/// they return themselves; the panic value is for bugs, which then stay inside the process's
/// reach instead of aborting it.
macro_rules! c_entry {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
            = on_panic($fail:expr) $body:block
    )*) => {$(
        $(#[$meta])*
        $vis unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            $crate::ffi::no_unwind(|| $fail, || $body)
        }
    )*};
}
pub(crate) use c_entry;
