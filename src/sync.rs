//! The crate's sync facade: its locks, the atomics and cells of the structures that are model
//! checked, and what valgrind's thread checkers are told about them.
//!
//! **Builds.** A normal build gets parking_lot's `Mutex`, `Condvar`, `RwLock` and `RawMutex`,
//! std's atomics, a `#[repr(transparent)]` `UnsafeCell` whose `with`/`with_mut` are inlined
//! away, and std's clock, spin hint and yield: the same code as naming them directly. With
//! `RUSTFLAGS="--cfg typed_verbs_loom"` (the models, `scripts/loom.sh`,
//! docs/model-checking.md) the same names are loom's, which loom sees, as tokio's `loom`
//! module does: loom cannot see parking_lot's atomics and futexes. The cfg is the crate's own,
//! as crossbeam's `crossbeam_loom` is: a global `--cfg loom` would also switch tokio (a
//! dev-dependency) to its own loom build. Code that the models drive takes its sync types
//! from here and nowhere else.
//!
//! **Under loom.** The locks keep parking_lot's API (`lock()` returns the guard, the condition
//! variable waits on `&mut` guard) and their `const` constructors, which statics need: each
//! makes its loom object on first use, in the execution that uses it (a static that a model
//! touches is declared with [`sync_static!`], made anew for each execution). The raw mutex is a
//! flag under loom's mutex, waited for on loom's condition variable (blocked, not spinning:
//! loom has no fairness, and would explore two threads spinning on it for ever). loom has no
//! clock: a timed wait ([`Condvar::wait_until`]) is modelled as a wait that never times out
//! (what loom's own `wait_timeout` does), and [`time::Instant`] never reaches a deadline, so a
//! bounded wait is an unbounded one. The deadlines in the modelled code are escapes for
//! liveness (a teardown refused after a second, a teardown handed on after a second); where
//! one leads somewhere the models check, they drive that path directly (`run_or_hand`), and a
//! model whose wait could only end at a deadline shows up as a loom deadlock instead of
//! passing. A sleep is a yield.
//!
//! **valgrind.** helgrind and DRD see a happens-before edge only where the pthread API makes
//! one. The crate's locks are parking_lot's, built from atomics and futexes that neither tool
//! understands, and the software CQ's ring hands completions from producer to consumer through
//! acquire/release atomics: without help the tools report every access these order as a race.
//! With the feature `valgrind` (the sanitizer lane, `scripts/sanitize.sh`), each lock and the
//! ring state their edges with the client requests `ANNOTATE_HAPPENS_BEFORE` (just before a
//! release) and `ANNOTATE_HAPPENS_AFTER` (just after an acquire), keyed by the lock's or the
//! atomic's address; helgrind and DRD share these two requests. The annotations add ordering
//! only where the lock or the atomic really orders: an access the crate's synchronisation does
//! not order is still reported.
//!
//! Without the feature the types below are parking_lot's own and the annotations are empty, so
//! a normal build pays nothing. Outside valgrind a client request is a few no-op instructions.
//! Under loom the annotations are empty too.
// Without the software device the typed layer's `Mutex` is the only user of this module.
#![cfg_attr(not(feature = "software-device"), allow(dead_code, unused_imports))]

#[cfg(all(
    not(typed_verbs_loom),
    not(all(feature = "valgrind", target_arch = "x86_64", not(miri)))
))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard, RawMutex, RwLock};

    /// A raw mutex, unlocked: `RawMutex::INIT`.
    #[inline(always)]
    pub(crate) const fn raw_mutex() -> RawMutex {
        <RawMutex as lock_api::RawMutex>::INIT
    }

    /// Annotates a release on `_sync` (a no-op without the feature `valgrind`).
    #[inline(always)]
    pub(crate) fn release<T: ?Sized>(_sync: &T) {}

    /// Annotates an acquire on `_sync` (a no-op without the feature `valgrind`).
    #[inline(always)]
    pub(crate) fn acquire<T: ?Sized>(_sync: &T) {}
}

#[cfg(all(
    not(typed_verbs_loom),
    feature = "valgrind",
    target_arch = "x86_64",
    not(miri)
))]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    /// `VG_USERREQ_TOOL_BASE('H','G') + 256 + 33`: helgrind's `_VG_USERREQ__HG_USERSO_SEND_PRE`,
    /// which DRD answers as `VG_USERREQ__DRD_ANNOTATE_HAPPENS_BEFORE` (valgrind's helgrind.h and
    /// drd.h).
    const HAPPENS_BEFORE: usize = 0x4847_0000 + 256 + 33;
    /// `... + 34`: `_VG_USERREQ__HG_USERSO_RECV_POST` / `VG_USERREQ__DRD_ANNOTATE_HAPPENS_AFTER`.
    const HAPPENS_AFTER: usize = 0x4847_0000 + 256 + 34;

    /// valgrind.h's `VALGRIND_DO_CLIENT_REQUEST_EXPR` for amd64: the rotations of `rdi` (by 128
    /// bits in all, so it is unchanged) and `xchg rbx, rbx` do nothing on a CPU; valgrind
    /// recognises the sequence and serves the request whose words `rax` points at.
    #[inline(always)]
    fn client_request(request: usize, arg: usize) {
        let args: [usize; 6] = [request, arg, 0, 0, 0, 0];
        // SAFETY: the instructions leave every register as it was but rdx (declared) and the
        // flags (not declared preserved), and touch no memory; valgrind reads `args`. No
        // `nomem`/`readonly`: the request must stay where it is among the accesses it orders.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") args.as_ptr(),
                inout("rdx") 0usize => _,
                options(nostack),
            );
        }
    }

    /// Annotates a release on `sync`: what this thread did so far happens before whatever a
    /// thread does after a later [`acquire`] of the same object.
    #[inline(always)]
    pub(crate) fn release<T: ?Sized>(sync: &T) {
        client_request(HAPPENS_BEFORE, sync as *const T as *const () as usize);
    }

    /// Annotates an acquire on `sync` (see [`release`]).
    #[inline(always)]
    pub(crate) fn acquire<T: ?Sized>(sync: &T) {
        client_request(HAPPENS_AFTER, sync as *const T as *const () as usize);
    }

    /// One way of holding a parking_lot raw lock (`self.0`), annotated: its lock and a try-lock
    /// that succeeds are an acquire after, its unlock a release before.
    macro_rules! annotated {
        ($lock:ident, $try_lock:ident, $unlock:ident) => {
            fn $lock(&self) {
                self.0.$lock();
                acquire(self);
            }

            fn $try_lock(&self) -> bool {
                let locked = self.0.$try_lock();
                if locked {
                    acquire(self);
                }
                locked
            }

            unsafe fn $unlock(&self) {
                release(self);
                // SAFETY: the caller's contract (the lock is held in this context, in this
                // mode), which is the inner lock's.
                unsafe { self.0.$unlock() }
            }
        };
    }

    /// parking_lot's raw lock of the same name, annotated, implementing the same
    /// `lock_api` trait, with [`annotated!`] each way of holding it.
    macro_rules! annotated_raw {
        ($(#[$doc:meta])* $raw:ident: $(($lock:ident, $try_lock:ident, $unlock:ident)),+) => {
            $(#[$doc])*
            #[repr(transparent)]
            pub(crate) struct $raw(parking_lot::$raw);

            // SAFETY: parking_lot's raw lock of this name, with annotations around its lock and
            // unlock calls, which change no state.
            unsafe impl lock_api::$raw for $raw {
                #[allow(clippy::declare_interior_mutable_const)]
                const INIT: Self = $raw(<parking_lot::$raw as lock_api::$raw>::INIT);
                type GuardMarker = <parking_lot::$raw as lock_api::$raw>::GuardMarker;

                $(annotated!($lock, $try_lock, $unlock);)+
            }
        };
    }

    annotated_raw! {
        /// parking_lot's raw mutex, annotated.
        RawMutex: (lock, try_lock, unlock)
    }

    annotated_raw! {
        /// parking_lot's raw reader-writer lock, annotated. A read unlock is a release too: what
        /// a reader read happens before the next writer writes.
        RawRwLock:
            (lock_shared, try_lock_shared, unlock_shared),
            (lock_exclusive, try_lock_exclusive, unlock_exclusive)
    }

    pub(crate) type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

    /// A raw mutex, unlocked: `RawMutex::INIT`.
    #[inline(always)]
    pub(crate) const fn raw_mutex() -> RawMutex {
        <RawMutex as lock_api::RawMutex>::INIT
    }

    /// parking_lot's mutex, annotated. Its own type rather than `lock_api::Mutex<RawMutex, T>`
    /// because parking_lot's [`Condvar`] waits only on parking_lot's guard.
    pub(crate) struct Mutex<T: ?Sized>(parking_lot::Mutex<T>);

    /// The guard of [`Mutex`].
    pub(crate) struct MutexGuard<'a, T: ?Sized>(parking_lot::MutexGuard<'a, T>);

    impl<T> Mutex<T> {
        pub(crate) const fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }
    }

    impl<T: ?Sized> Mutex<T> {
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            let guard = self.0.lock();
            acquire(&self.0);
            MutexGuard(guard)
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex::new(T::default())
        }
    }

    impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fmt(f)
        }
    }

    impl<T: ?Sized> MutexGuard<'_, T> {
        fn mutex(&self) -> &parking_lot::Mutex<T> {
            parking_lot::MutexGuard::mutex(&self.0)
        }
    }

    impl<T: ?Sized> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            // The inner guard unlocks after this, when the field is dropped.
            release(self.mutex());
        }
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.0
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.0
        }
    }

    /// parking_lot's condition variable, waiting on an annotated [`Mutex`]: the wait releases
    /// the mutex and acquires it again.
    #[derive(Default, Debug)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) const fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        pub(crate) fn notify_one(&self) -> bool {
            self.0.notify_one()
        }

        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all()
        }

        pub(crate) fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
            release(guard.mutex());
            self.0.wait(&mut guard.0);
            acquire(guard.mutex());
        }

        pub(crate) fn wait_until<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            at: Instant,
        ) -> parking_lot::WaitTimeoutResult {
            release(guard.mutex());
            let r = self.0.wait_until(&mut guard.0, at);
            acquire(guard.mutex());
            r
        }
    }
}

/// The locks as loom's, with parking_lot's API (see the module docs).
#[cfg(typed_verbs_loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::sync::{OnceLock, PoisonError};

    /// No annotation under loom, which orders by its own types.
    #[inline(always)]
    pub(crate) fn release<T: ?Sized>(_sync: &T) {}

    /// No annotation under loom, which orders by its own types.
    #[inline(always)]
    pub(crate) fn acquire<T: ?Sized>(_sync: &T) {}

    /// A mutex whose locking loom sees: loom's mutex (made on first use) decides who holds
    /// it; the value sits in a std mutex, taken only by the holder, so never waited for.
    pub(crate) struct Mutex<T: ?Sized> {
        model: OnceLock<loom::sync::Mutex<()>>,
        data: std::sync::Mutex<T>,
    }

    /// The guard of [`Mutex`]. Fields drop in order: the value's lock, then loom's.
    pub(crate) struct MutexGuard<'a, T: ?Sized> {
        mutex: &'a Mutex<T>,
        data: Option<std::sync::MutexGuard<'a, T>>,
        model: Option<loom::sync::MutexGuard<'a, ()>>,
    }

    impl<T> Mutex<T> {
        pub(crate) const fn new(value: T) -> Self {
            Mutex {
                model: OnceLock::new(),
                data: std::sync::Mutex::new(value),
            }
        }
    }

    impl<T: ?Sized> Mutex<T> {
        fn model(&self) -> &loom::sync::Mutex<()> {
            self.model.get_or_init(|| loom::sync::Mutex::new(()))
        }

        /// The value's std lock, for the holder of loom's.
        fn data(&self) -> std::sync::MutexGuard<'_, T> {
            self.data.lock().unwrap_or_else(PoisonError::into_inner)
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            let model = self.model().lock().unwrap_or_else(PoisonError::into_inner);
            MutexGuard {
                mutex: self,
                data: Some(self.data()),
                model: Some(model),
            }
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex::new(T::default())
        }
    }

    impl<T: ?Sized> std::fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Mutex").finish_non_exhaustive()
        }
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.data.as_ref().expect("held")
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.data.as_mut().expect("held")
        }
    }

    /// parking_lot's `WaitTimeoutResult`: under loom a timed wait never times out.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct WaitTimeoutResult(bool);

    // parking_lot's API, which no caller reads yet.
    #[allow(dead_code)]
    impl WaitTimeoutResult {
        pub(crate) fn timed_out(self) -> bool {
            self.0
        }
    }

    /// loom's condition variable (made on first use), waiting on a [`Mutex`]'s guard.
    #[derive(Default)]
    pub(crate) struct Condvar(OnceLock<loom::sync::Condvar>);

    impl std::fmt::Debug for Condvar {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Condvar").finish_non_exhaustive()
        }
    }

    impl Condvar {
        pub(crate) const fn new() -> Self {
            Condvar(OnceLock::new())
        }

        fn model(&self) -> &loom::sync::Condvar {
            self.0.get_or_init(loom::sync::Condvar::new)
        }

        pub(crate) fn notify_one(&self) {
            self.model().notify_one()
        }

        pub(crate) fn notify_all(&self) {
            self.model().notify_all()
        }

        pub(crate) fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
            guard.data = None;
            let model = guard.model.take().expect("held");
            let model = self
                .model()
                .wait(model)
                .unwrap_or_else(PoisonError::into_inner);
            guard.model = Some(model);
            guard.data = Some(guard.mutex.data());
        }

        /// A wait that never times out (loom has no clock: module docs).
        pub(crate) fn wait_until<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _at: std::time::Instant,
        ) -> WaitTimeoutResult {
            self.wait(guard);
            WaitTimeoutResult(false)
        }
    }

    /// A reader-writer lock whose locking loom sees, as [`Mutex`].
    pub(crate) struct RwLock<T: ?Sized> {
        model: OnceLock<loom::sync::RwLock<()>>,
        data: std::sync::RwLock<T>,
    }

    /// A read guard of [`RwLock`]: the value's lock drops first.
    pub(crate) struct RwLockReadGuard<'a, T: ?Sized> {
        data: std::sync::RwLockReadGuard<'a, T>,
        _model: loom::sync::RwLockReadGuard<'a, ()>,
    }

    /// A write guard of [`RwLock`]: the value's lock drops first.
    pub(crate) struct RwLockWriteGuard<'a, T: ?Sized> {
        data: std::sync::RwLockWriteGuard<'a, T>,
        _model: loom::sync::RwLockWriteGuard<'a, ()>,
    }

    impl<T> RwLock<T> {
        pub(crate) const fn new(value: T) -> Self {
            RwLock {
                model: OnceLock::new(),
                data: std::sync::RwLock::new(value),
            }
        }
    }

    impl<T: ?Sized> RwLock<T> {
        fn model(&self) -> &loom::sync::RwLock<()> {
            self.model.get_or_init(|| loom::sync::RwLock::new(()))
        }

        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            let model = self.model().read().unwrap_or_else(PoisonError::into_inner);
            RwLockReadGuard {
                data: self.data.read().unwrap_or_else(PoisonError::into_inner),
                _model: model,
            }
        }

        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            let model = self.model().write().unwrap_or_else(PoisonError::into_inner);
            RwLockWriteGuard {
                data: self.data.write().unwrap_or_else(PoisonError::into_inner),
                _model: model,
            }
        }
    }

    impl<T: Default> Default for RwLock<T> {
        fn default() -> Self {
            RwLock::new(T::default())
        }
    }

    impl<T: ?Sized> std::fmt::Debug for RwLock<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("RwLock").finish_non_exhaustive()
        }
    }

    impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.data
        }
    }

    impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.data
        }
    }

    impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.data
        }
    }

    /// A raw mutex, unlocked, its state made now: made on first use, a state first used by two
    /// threads at once would be read by one of them unordered after the other made it, which
    /// loom reports (the `OnceLock` that orders them is invisible to it).
    pub(crate) fn raw_mutex() -> RawMutex {
        let m = <RawMutex as lock_api::RawMutex>::INIT;
        m.state();
        m
    }

    /// A raw mutex loom sees: a flag under loom's mutex (made on first use), set by `lock`,
    /// which waits on loom's condition variable while it is set (blocked, not spinning: loom
    /// would explore two threads spinning on it for ever), cleared by `unlock`.
    pub(crate) struct RawMutex(OnceLock<(loom::sync::Mutex<bool>, loom::sync::Condvar)>);

    impl RawMutex {
        fn state(&self) -> &(loom::sync::Mutex<bool>, loom::sync::Condvar) {
            self.0
                .get_or_init(|| (loom::sync::Mutex::new(false), loom::sync::Condvar::new()))
        }
    }

    // SAFETY: a mutex: the flag is set only where it was clear, under loom's mutex, so one
    // holder at a time; `unlock` clears it and wakes a waiter; loom's mutex orders what the
    // holders did. The guard may move between threads: the flag is not per thread.
    unsafe impl lock_api::RawMutex for RawMutex {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: Self = RawMutex(OnceLock::new());
        type GuardMarker = lock_api::GuardSend;

        fn lock(&self) {
            let (m, cv) = self.state();
            let mut held = m.lock().unwrap_or_else(PoisonError::into_inner);
            while *held {
                held = cv.wait(held).unwrap_or_else(PoisonError::into_inner);
            }
            *held = true;
        }

        fn try_lock(&self) -> bool {
            let mut held = self
                .state()
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            !std::mem::replace(&mut *held, true)
        }

        unsafe fn unlock(&self) {
            let (m, cv) = self.state();
            *m.lock().unwrap_or_else(PoisonError::into_inner) = false;
            cv.notify_one();
        }
    }
}

pub(crate) use imp::*;

/// The atomics of the model-checked structures (the gates, the teardowns' count, the software
/// CQ's ring): std's, or loom's.
pub(crate) mod atomic {
    #[cfg(not(typed_verbs_loom))]
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

    #[cfg(typed_verbs_loom)]
    pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
}

/// Interior mutability whose accesses loom checks: loom's `UnsafeCell`, or std's behind the
/// same `with`/`with_mut` (inlined: the same code as `get()`).
pub(crate) mod cell {
    #[cfg(typed_verbs_loom)]
    pub(crate) use loom::cell::UnsafeCell;

    /// std's `UnsafeCell`, reached as loom's is: through a closure given the raw pointer.
    #[cfg(not(typed_verbs_loom))]
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[cfg(not(typed_verbs_loom))]
    impl<T> UnsafeCell<T> {
        #[inline(always)]
        pub(crate) const fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        /// `f` of the pointer to the value, for reads.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// `f` of the pointer to the value, for writes.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// Waiting without a lock: a spin hint, a yield, a sleep. Under loom each is a yield (a sleep
/// is a wait that ends at some point: loom has no clock).
pub(crate) mod thread {
    #[cfg(not(typed_verbs_loom))]
    pub(crate) use std::hint::spin_loop;
    #[cfg(not(typed_verbs_loom))]
    pub(crate) use std::thread::{sleep, yield_now};

    #[cfg(typed_verbs_loom)]
    pub(crate) use loom::hint::spin_loop;
    #[cfg(typed_verbs_loom)]
    pub(crate) use loom::thread::yield_now;

    /// A sleep under loom: a yield.
    #[cfg(typed_verbs_loom)]
    pub(crate) fn sleep(_: std::time::Duration) {
        yield_now()
    }
}

/// The clock of the modelled deadlines: std's, or under loom one that never reaches a deadline
/// (module docs).
pub(crate) mod time {
    #[cfg(not(typed_verbs_loom))]
    pub(crate) use std::time::Instant;

    /// A moment under loom: now (false) or a deadline (true), which now never reaches.
    #[cfg(typed_verbs_loom)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub(crate) struct Instant(bool);

    #[cfg(typed_verbs_loom)]
    impl Instant {
        pub(crate) fn now() -> Instant {
            Instant(false)
        }
    }

    #[cfg(typed_verbs_loom)]
    impl std::ops::Add<std::time::Duration> for Instant {
        type Output = Instant;
        fn add(self, _: std::time::Duration) -> Instant {
            Instant(true)
        }
    }
}

/// A thread-local: std's, or loom's (one per model thread: loom's threads share an OS thread).
#[cfg(not(typed_verbs_loom))]
pub(crate) use std::thread_local;

/// loom's `thread_local!`, taking std's `const { .. }` initializer (loom's macro does not).
#[cfg(typed_verbs_loom)]
macro_rules! loom_thread_local {
    ($(#[$m:meta])* static $name:ident: $t:ty = const { $init:expr };) => {
        loom::thread_local! { $(#[$m])* static $name: $t = $init; }
    };
}

#[cfg(typed_verbs_loom)]
pub(crate) use loom_thread_local as thread_local;

/// A static of this module's types that a model touches: a plain `static` (its initializer is
/// `const`), or under loom one made anew in each execution (`loom::lazy_static!`): loom's
/// objects live for one execution.
macro_rules! sync_static {
    ($($(#[$m:meta])* static $name:ident: $t:ty = $init:expr;)+) => {
        $(
            #[cfg(not(typed_verbs_loom))]
            $(#[$m])*
            static $name: $t = $init;
        )+
        #[cfg(typed_verbs_loom)]
        loom::lazy_static! {
            $($(#[$m])* static ref $name: $t = $init;)+
        }
    };
}
pub(crate) use sync_static;

/// How the models run (docs/model-checking.md).
#[cfg(all(test, typed_verbs_loom))]
pub(crate) mod model {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Arc;

    /// `loom::model(f)`, with at most `max_preemptions` preemptions when given (fewer if
    /// `LOOM_MAX_PREEMPTIONS` says so); prints how many executions loom explored.
    pub(crate) fn check(max_preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if let Some(max) = max_preemptions {
            builder.preemption_bound = Some(builder.preemption_bound.map_or(max, |p| p.min(max)));
        }
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        builder.check(move || {
            counted.fetch_add(1, Relaxed);
            f()
        });
        let name = std::thread::current().name().unwrap_or("model").to_owned();
        println!("loom: {name}: {} executions", runs.load(Relaxed));
    }
}
