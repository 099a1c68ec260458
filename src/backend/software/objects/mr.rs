//! Memory regions: registration, and the key space every software context shares.

use super::*;

/// What data movement needs to know of a registered region: work requests address it as
/// `[iova, iova + len)`, which is `[addr, addr + len)` in memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MrEntry {
    pub(crate) addr: usize,
    pub(crate) iova: u64,
    pub(crate) len: usize,
    pub(crate) access: i32,
    pub(crate) pd: usize,
}

/// A memory region; its key is both lkey and rkey.
#[repr(C)]
struct SwMr {
    ibv: sys::ibv_mr,
    ctx: *mut SwContext,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwMr, ibv), 0);

/// `IBV_ACCESS_LOCAL_WRITE`, `_REMOTE_WRITE`, `_REMOTE_READ`, `_REMOTE_ATOMIC`.
const ACCESS_LOCAL_WRITE: i32 = 1;
const ACCESS_REMOTE_WRITE: i32 = 2;
const ACCESS_REMOTE_ATOMIC: i32 = 8;

/// The software device's memory keys, one key space for all its contexts (as hardware has: a
/// process with many contexts would otherwise see the same keys again and again): `key = index
/// << 8 | 0x5a`, a key byte in the low bits as providers put there, with a 24-bit index that
/// wraps. A key is never handed out while it is registered in any context: the index goes past
/// the live ones. What is kept is bounded by the regions alive at once.
pub(crate) struct MrKeys {
    next: u32,
    live: HashSet<u32>,
}

/// The low byte of every software memory key.
const KEY_BYTE: u32 = 0x5a;
/// Indexes run from 1 to this, then start again at 1.
pub(crate) const MAX_KEY_INDEX: u32 = (1 << 24) - 1;

static MR_KEYS: Mutex<Option<MrKeys>> = Mutex::new(None);

#[cfg(test)]
thread_local! {
    /// Where this thread's next registration starts looking for a key ([`MrKeys::set_next`]).
    static NEXT_TAKE_AT: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

impl MrKeys {
    fn with<R>(f: impl FnOnce(&mut MrKeys) -> R) -> R {
        f(MR_KEYS.lock().get_or_insert_with(|| MrKeys {
            next: 1,
            live: HashSet::new(),
        }))
    }

    /// A key no context of the device has registered, recorded as live; `ENOMEM` if every
    /// index is (more regions than 2^24 - 1 at once, far past `max_mr`).
    fn take() -> Result<u32, Errno> {
        Self::with(|k| {
            if k.live.len() >= MAX_KEY_INDEX as usize {
                return Err(libc::ENOMEM);
            }
            #[cfg(test)]
            if let Some(index) = NEXT_TAKE_AT.take() {
                k.next = index.clamp(1, MAX_KEY_INDEX);
            }
            loop {
                let key = k.next << 8 | KEY_BYTE;
                k.next = if k.next >= MAX_KEY_INDEX {
                    1
                } else {
                    k.next + 1
                };
                if k.live.insert(key) {
                    return Ok(key);
                }
            }
        })
    }

    fn give(key: u32) {
        Self::with(|k| k.live.remove(&key));
    }

    /// Makes this thread's next registration start looking for a key at `index`, the counter
    /// set there under the lock that takes the key, so that other threads' registrations do not
    /// get in between (the tests of the wrap and of a key handed out again).
    #[cfg(test)]
    pub(crate) fn set_next(index: u32) {
        NEXT_TAKE_AT.set(Some(index));
    }

    /// How many keys are live in all the device's contexts.
    #[cfg(test)]
    pub(crate) fn live() -> usize {
        Self::with(|k| k.live.len())
    }
}

/// # Safety
/// `pd` live software PD; the caller keeps the range allocated until dereg.
pub(in crate::backend::software) unsafe fn reg_mr(
    pd: *mut sys::ibv_pd,
    addr: *mut std::os::raw::c_void,
    len: usize,
    iova: u64,
    access: i32,
) -> Result<NonNull<sys::ibv_mr>, Errno> {
    // SAFETY: caller's contract.
    let (ctx, c) = unsafe { pd_context(pd) };
    if is_parent_domain(pd) {
        return Err(libc::EINVAL);
    }
    // ib_check_mr_access: remote write and remote atomic need local write.
    if access & (ACCESS_REMOTE_WRITE | ACCESS_REMOTE_ATOMIC) != 0
        && access & ACCESS_LOCAL_WRITE == 0
    {
        return Err(libc::EINVAL);
    }
    // ib_uverbs_reg_mr: "if ((cmd.start & ~PAGE_MASK) != (cmd.hca_va & ~PAGE_MASK)) return
    // -EINVAL"; and the range must not wrap.
    if (addr as u64 ^ iova) & 4095 != 0 || iova.checked_add(len as u64).is_none() {
        return Err(libc::EINVAL);
    }
    take(&c.live.mrs, c.config().max_objects)?;
    let key = match MrKeys::take() {
        Ok(key) => key,
        Err(e) => {
            give(&c.live.mrs);
            return Err(e);
        }
    };
    // SAFETY: caller's contract.
    unsafe { pd_use(pd, 1) };
    let mr = Box::new(SwMr {
        ibv: sys::ibv_mr {
            context: ctx,
            pd,
            addr,
            length: len,
            handle: key,
            lkey: key,
            rkey: key,
        },
        ctx: ctx as *mut SwContext,
    });
    c.mrs.write().insert(
        key,
        MrEntry {
            addr: addr as usize,
            iova,
            len,
            access,
            pd: pd as usize,
        },
    );
    // SAFETY: Box::into_raw is never null; `ibv` at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(mr) as *mut sys::ibv_mr) })
}

/// # Safety
/// `mr` live software MR.
pub(in crate::backend::software) unsafe fn dereg_mr(mr: *mut sys::ibv_mr) -> Result<(), Errno> {
    let sw = mr as *mut SwMr;
    // The fabric lock: no transfer is using the region when it leaves the table.
    let _fabric = data::lock();
    // SAFETY: caller's contract.
    unsafe {
        let c = &*(*sw).ctx;
        let key = (*sw).ibv.lkey;
        c.mrs.write().remove(&key);
        // Out of the table first: the key can be handed out again only after no transfer can
        // find the old region by it.
        MrKeys::give(key);
        pd_use((*sw).ibv.pd, -1);
        give(&c.live.mrs);
        drop(Box::from_raw(sw));
    }
    Ok(())
}
