//! The crate's locks, and what valgrind's thread checkers are told about them.
//!
//! helgrind and DRD see a happens-before edge only where the pthread API makes one. The crate's
//! locks are parking_lot's, built from atomics and futexes that neither tool understands, and the
//! software CQ's ring hands completions from producer to consumer through acquire/release
//! atomics: without help the tools report every access these order as a race. With the feature
//! `valgrind` (the sanitizer lane, `scripts/sanitize.sh`), each lock and the ring state their
//! edges with the client requests `ANNOTATE_HAPPENS_BEFORE` (just before a release) and
//! `ANNOTATE_HAPPENS_AFTER` (just after an acquire), keyed by the lock's or the atomic's address;
//! helgrind and DRD share these two requests. The annotations add ordering only where the lock
//! or the atomic really orders: an access the crate's synchronisation does not order is still
//! reported.
//!
//! Without the feature the types below are parking_lot's own and the annotations are empty, so
//! a normal build pays nothing. Outside valgrind a client request is a few no-op instructions.
// Without the software device the typed layer's `Mutex` is the only user of this module.
#![cfg_attr(not(feature = "software-device"), allow(dead_code, unused_imports))]

#[cfg(not(all(feature = "valgrind", target_arch = "x86_64", not(miri))))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard, RawMutex, RwLock};

    /// Annotates a release on `_sync` (a no-op without the feature `valgrind`).
    #[inline(always)]
    pub(crate) fn release<T: ?Sized>(_sync: &T) {}

    /// Annotates an acquire on `_sync` (a no-op without the feature `valgrind`).
    #[inline(always)]
    pub(crate) fn acquire<T: ?Sized>(_sync: &T) {}
}

#[cfg(all(feature = "valgrind", target_arch = "x86_64", not(miri)))]
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

pub(crate) use imp::*;
