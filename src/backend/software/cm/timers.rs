//! Timers: TIMEWAIT_EXIT after a disconnect.

use super::*;

/// The TIMEWAIT timers of every id: one thread, started with the first, that sleeps until the
/// earliest is due and then delivers its TIMEWAIT_EXIT (under the CM's lock, taken alone).
struct Timers {
    due: super::super::Due<u64>,
    wake: Condvar,
    started: Mutex<bool>,
}

static TIMERS: Timers = Timers {
    due: Mutex::new(std::collections::BinaryHeap::new()),
    wake: Condvar::new(),
    started: Mutex::new(false),
};

/// Arms the timer that ends TIMEWAIT number `n` of id `h` at `at`. Called under the CM's lock
/// (the timers' lock comes after it). Without a thread (one cannot be made) the timer is
/// dropped: the id stays in TIMEWAIT, which only the missing event shows.
pub(super) fn arm_timewait(at: std::time::Instant, h: u64, n: u64) {
    {
        let mut started = TIMERS.started.lock();
        if !*started {
            let spawned = std::thread::Builder::new()
                .name("typed-verbs-sw-cm".into())
                .spawn(|| TIMERS.run());
            if spawned.is_err() {
                return;
            }
            *started = true;
        }
    }
    TIMERS.due.lock().push(std::cmp::Reverse((at, h, n)));
    TIMERS.wake.notify_one();
}

impl Timers {
    fn run(&self) {
        loop {
            let (h, n) = super::super::next_due(&self.due, &self.wake);
            // `due` is released: the CM's lock is taken alone.
            lock().timewait_exit(h, n);
        }
    }
}
