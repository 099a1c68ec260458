//! A work request's data and registered memory: the checks rxe makes, gather, scatter, landing.

use super::*;

/// Why a region check failed (rxe's copy_data: a key lookup fails with EINVAL, a range with
/// EFAULT; the caller turns them into statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MrFault {
    /// No region with that key in the PD, or without the access asked for.
    Key,
    /// The range is not inside the region.
    Range,
    /// The device could not allocate what the request needs (its length is bounded by the
    /// port's max_msg_sz, but memory may still run out).
    NoMem,
}

/// Checks `[addr, addr + len)` against the region `key` of `ctx` for `pd` and `access`; gives
/// the address in memory that `addr` names in the region.
pub(super) fn check_mr(
    ctx: &super::super::SwContext,
    key: u32,
    pd: *mut sys::ibv_pd,
    access: i32,
    addr: u64,
    len: u64,
) -> Result<*mut u8, MrFault> {
    let mrs = ctx.mrs.read();
    let m = mrs.get(&key).ok_or(MrFault::Key)?;
    if m.pd != pd as usize || m.access & access != access {
        return Err(MrFault::Key);
    }
    // Work requests address the region as [iova, iova + len) (reg_mr checked that it does not
    // wrap); rxe's mr_check_range, then lookup_iova's `iova - mr->iova` offset into its pages.
    let (start, end) = (m.iova, m.iova + m.len as u64);
    if addr < start || addr.checked_add(len).is_none_or(|e| e > end) {
        return Err(MrFault::Range);
    }
    Ok((m.addr + (addr - start) as usize) as *mut u8)
}

/// Checks the remote range of `w` at the responder `dest`: `len` bytes at its `remote_addr`,
/// in the region its `rkey` names, for `access`.
pub(super) fn check_remote(
    dest: &SwQp,
    w: &SendWqe,
    access: i32,
    len: u64,
) -> Result<*mut u8, MrFault> {
    check_mr(
        dest.ctx(),
        w.rkey,
        dest.ibv.qp_base.pd,
        access,
        w.remote_addr,
        len,
    )
}

/// Copies the bytes of `sges` (regions of `qp`'s PD) out.
pub(super) fn gather(qp: &SwQp, sges: &[sys::ibv_sge]) -> Result<Vec<u8>, MrFault> {
    let mut spans = Vec::with_capacity(sges.len());
    for s in sges.iter().filter(|s| s.length > 0) {
        let p = check_mr(
            qp.ctx(),
            s.lkey,
            qp.ibv.qp_base.pd,
            0,
            s.addr,
            s.length.into(),
        )?;
        spans.push((p, s.length as usize));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(spans.iter().map(|s| s.1).sum())
        .map_err(|_| MrFault::NoMem)?;
    for (p, n) in spans {
        read_registered(p, n, &mut out);
    }
    Ok(out)
}

/// Writes `data` into `sges` (regions of `qp`'s PD with LOCAL_WRITE), in order, as rxe's
/// copy_data: fails, writing nothing, if the SGEs are too small for `data`; else writes SGE by
/// SGE and fails at the first whose region check fails, the SGEs before it written.
pub(super) fn scatter(qp: &SwQp, sges: &[sys::ibv_sge], data: &[u8]) -> Result<(), MrFault> {
    let room: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if data.len() as u64 > room {
        return Err(MrFault::Range);
    }
    let mut off = 0;
    for s in sges {
        if off == data.len() {
            break;
        }
        let n = (data.len() - off).min(s.length as usize);
        if n == 0 {
            continue;
        }
        let p = check_mr(
            qp.ctx(),
            s.lkey,
            qp.ibv.qp_base.pd,
            ACCESS_LOCAL_WRITE,
            s.addr,
            n as u64,
        )?;
        // Inside a registered region with LOCAL_WRITE (checked), registered while the fabric
        // lock is held.
        write_registered(p, &data[off..off + n]);
        off += n;
    }
    Ok(())
}

/// The payload bytes of one packet of an RC or UC message from `qp`: its path MTU (rxe cuts
/// messages at the requester's `path_mtu`). `usize::MAX` (one packet) for a path_mtu that
/// names no size, as UD has none.
pub(super) fn packet_bytes(qp: &SwQp) -> usize {
    match qp.attr.lock().path_mtu {
        m @ sys::ibv_mtu::IBV_MTU_256..=sys::ibv_mtu::IBV_MTU_4096 => 128 << m,
        _ => usize::MAX,
    }
}

/// An RDMA write with immediate that found no receive at `dest`: rxe writes each packet as it
/// comes, and only the last one needs the receive, so every packet before it is written (the
/// range checked at the first packet for the whole message) before the message is dropped
/// (UC) or the last packet gets an RNR NAK (RC).
pub(super) fn write_leading_packets(qp: &SwQp, dest: &SwQp, w: &SendWqe, payload: &[u8]) {
    let mtu = packet_bytes(qp);
    if payload.len() <= mtu {
        return;
    }
    let leading = (payload.len() - 1) / mtu * mtu;
    let target = check_remote(dest, w, ACCESS_REMOTE_WRITE, payload.len() as u64);
    if let Ok(p) = target {
        // Inside a registered, remotely writable region of the responder (checked), registered
        // while the fabric lock is held.
        write_registered(p, &payload[..leading]);
    }
}

/// Writes the response of RDMA read or atomic `w` (`data`) into its SGEs, as `scatter`. A
/// request posted with IBV_SEND_INLINE has none: rxe's provider stores the inline data where
/// the SGEs would be, so a response of any length has nowhere to land (LOC_PROT_ERR at rxe's
/// completer).
pub(super) fn land(qp: &SwQp, w: &SendWqe, data: &[u8]) -> Result<(), MrFault> {
    if w.inline.is_some() && !data.is_empty() {
        return Err(MrFault::Range);
    }
    scatter(qp, &w.sges, data)
}

/// Appends the `n` bytes of registered memory at `p` to `out`, each byte read as a Relaxed
/// `AtomicU8` load (`crate::ffi::dma`): the program may be copying into the same bytes on another
/// thread, and so may another transfer.
///
/// `p..p + n` must lie in a region found in an MR table under the fabric lock, which the caller
/// holds: it stays registered, so allocated, until the lock is released.
pub(super) fn read_registered(p: *const u8, n: usize, out: &mut Vec<u8>) {
    out.reserve(n);
    let len = out.len();
    // SAFETY: `p..p + n` is registered memory (the caller found it in an MR table and holds the
    // fabric lock), which every party accesses byte-wise atomically (crate::ffi::dma's model). The
    // spare capacity of `out` (reserved above) is private and cannot overlap registered memory
    // (a Vec of the device's); its `n` bytes are initialised by the copy before `set_len`.
    unsafe {
        crate::ffi::dma::copy_from_shared(p, out.as_mut_ptr().add(len), n);
        out.set_len(len + n);
    }
}

/// Writes `data` into registered memory at `p`, each byte as a Relaxed `AtomicU8` store
/// (`crate::ffi::dma`). `data` is the device's own copy (gathered before, so a loopback transfer
/// cannot overlap it). Same requirement on `p..p + data.len()` as [`read_registered`].
pub(super) fn write_registered(p: *mut u8, data: &[u8]) {
    // SAFETY: as in `read_registered`; `data` is a private buffer of the device's, not
    // registered memory, so the two do not overlap and nobody writes `data` meanwhile.
    unsafe { crate::ffi::dma::copy_to_shared(data.as_ptr(), p, data.len()) }
}
