//! Memory regions (ibv_reg_mr(3)) tied to the buffer they register.
//!
//! [`Mr`] borrows its buffer mutably for as long as it is registered: the buffer cannot be
//! freed, moved or touched through another path meanwhile, and it is back in the caller's hands
//! once the region is deregistered (or dropped). The device reads and writes the buffer on its
//! own (DMA), so safe access goes through copies ([`Mr::read`], [`Mr::write`]); a slice of it is
//! `unsafe`, for the caller to promise that no work request is using that range.

use crate::backend;
use crate::error::{DestroyError, Error, Result, Verb};
use crate::ffi::sys;
use crate::object::{destroy, Destroy};
use crate::pd::Pd;
use crate::qp_state::AccessFlags;
use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;

/// A registered memory region over a `&'b mut [u8]`.
pub struct Mr<'b> {
    raw: NonNull<sys::ibv_mr>,
    _m: PhantomData<&'b mut [u8]>,
}

// SAFETY: the region is an address range and keys; its buffer is only reached through copies
// (or `unsafe` accessors whose callers synchronise), so it may move between threads and be
// shared.
unsafe impl Send for Mr<'_> {}
// SAFETY: as above; `read` and `write` copy through raw pointers, like the device does.
unsafe impl Sync for Mr<'_> {}

/// A scatter/gather element: part of a registered region (`struct ibv_sge`).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Sge(pub(crate) sys::ibv_sge);

static_assertions::assert_eq_size!(Sge, sys::ibv_sge);

impl PartialEq for Sge {
    fn eq(&self, o: &Sge) -> bool {
        (self.addr(), self.length(), self.lkey()) == (o.addr(), o.length(), o.lkey())
    }
}
impl Eq for Sge {}

impl std::fmt::Debug for Sge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sge")
            .field("addr", &self.addr())
            .field("length", &self.length())
            .field("lkey", &self.lkey())
            .finish()
    }
}

impl Sge {
    /// The address.
    pub fn addr(&self) -> u64 {
        self.0.addr
    }
    /// The length in bytes.
    pub fn length(&self) -> u32 {
        self.0.length
    }
    /// The local key of the region it lies in.
    pub fn lkey(&self) -> u32 {
        self.0.lkey
    }
}

/// What a peer needs to access a region remotely: its address, length and rkey. Send it to the
/// peer; it is plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteMr {
    /// The region's start address.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Its remote key.
    pub rkey: u32,
}

impl RemoteMr {
    /// The remote address `offset` bytes in, if `len` bytes from there fit in the region.
    pub fn at(&self, offset: u64, len: u64) -> Option<RemoteAddr> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then_some(RemoteAddr {
            addr: self.addr + offset,
            rkey: self.rkey,
        })
    }
}

impl RemoteMr {
    /// The 8-byte word at `offset`, as the target of an atomic: `None` unless it lies in the
    /// region and its address is 8-byte aligned (the verbs require both). Checked here, once, so
    /// posting the atomic checks nothing.
    pub fn atomic_at(&self, offset: u64) -> Option<AtomicTarget> {
        let at = self.at(offset, 8)?;
        (at.addr % 8 == 0).then_some(AtomicTarget(at))
    }
}

/// An 8-byte-aligned remote word that atomics may target; made by [`RemoteMr::atomic_at`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicTarget(RemoteAddr);

impl AtomicTarget {
    /// The remote address and rkey.
    pub fn addr(&self) -> RemoteAddr {
        self.0
    }
}

/// A remote address with the rkey that opens it, for RDMA and atomic work requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteAddr {
    /// The address in the peer's region.
    pub addr: u64,
    /// The peer region's rkey.
    pub rkey: u32,
}

impl<'b> Mr<'b> {
    /// `ibv_reg_mr` of `buf` in `pd` with `access`. An empty buffer is refused before the call.
    pub fn new(pd: &'b Pd<'_>, buf: &'b mut [u8], access: AccessFlags) -> Result<Self> {
        if buf.is_empty() {
            return Err(Error::range(Verb::RegMr, "length", 0, 1, isize::MAX as u64));
        }
        let pdr = pd.as_raw();
        // SAFETY: a live PD; `buf` stays borrowed (allocated, unmoved) while the region lives.
        let raw = unsafe {
            backend::of((*pdr).context).reg_mr(
                pdr,
                buf.as_mut_ptr().cast(),
                buf.len(),
                access.bits() as i32,
            )
        }
        .map_err(|e| Error::os(Verb::RegMr, e))?;
        Ok(Mr {
            raw,
            _m: PhantomData,
        })
    }

    fn get(&self) -> &sys::ibv_mr {
        // SAFETY: a live MR; the provider does not change these fields after registration.
        unsafe { self.raw.as_ref() }
    }

    /// The local key, for scatter/gather elements.
    pub fn lkey(&self) -> u32 {
        self.get().lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.get().rkey
    }

    /// The region's length.
    pub fn len(&self) -> usize {
        self.get().length
    }

    /// Always false: an empty buffer cannot be registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The region as a peer addresses it.
    pub fn remote(&self) -> RemoteMr {
        RemoteMr {
            addr: self.get().addr as u64,
            len: self.len() as u64,
            rkey: self.rkey(),
        }
    }

    /// A scatter/gather element over `range` of the region, or `None` if it does not fit (or is
    /// longer than a work request can carry).
    pub fn sge(&self, range: Range<usize>) -> Option<Sge> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        let length = u32::try_from(range.end - range.start).ok()?;
        Some(Sge(sys::ibv_sge {
            addr: self.get().addr as u64 + range.start as u64,
            length,
            lkey: self.lkey(),
        }))
    }

    fn check(&self, offset: usize, len: usize, verb: Verb) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(Error::range(
                verb,
                "offset + length",
                offset as u64 + len as u64,
                0,
                self.len() as u64,
            )),
        }
    }

    /// Copies `out.len()` bytes from `offset` of the region.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len(), Verb::MrRead)?;
        // SAFETY: in range (checked); the region's memory is borrowed for 'b and only reached
        // through raw pointers, so no Rust reference aliases what the device writes.
        unsafe {
            std::ptr::copy(
                (self.get().addr as *const u8).add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// Copies `data` into the region at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len(), Verb::MrWrite)?;
        // SAFETY: as in `read`.
        unsafe {
            std::ptr::copy(
                data.as_ptr(),
                (self.get().addr as *mut u8).add(offset),
                data.len(),
            )
        };
        Ok(())
    }

    /// The region as a slice, without a copy.
    ///
    /// # Safety
    /// No work request may be writing the region (a posted receive, a peer's RDMA write or
    /// atomic) while the slice lives, and [`write`](Self::write) must not be called meanwhile.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: the caller's contract; the range is the registered buffer.
        unsafe { std::slice::from_raw_parts(self.get().addr as *const u8, self.len()) }
    }

    /// The C region. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut sys::ibv_mr {
        self.raw.as_ptr()
    }

    /// `ibv_dereg_mr`: the buffer is the caller's again.
    pub fn destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl Destroy for Mr<'_> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        let mr = self.as_raw();
        // SAFETY: a live MR, deregistered once.
        unsafe { backend::of((*mr).context).dereg_mr(mr) }.map_err(|e| Error::os(Verb::DeregMr, e))
    }
}

impl Drop for Mr<'_> {
    fn drop(&mut self) {
        // SAFETY: dropped once; an error cannot be reported from drop (use `destroy`).
        let _ = unsafe { self.destroy_raw() };
    }
}

impl std::fmt::Debug for Mr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mr")
            .field("len", &self.len())
            .field("lkey", &self.lkey())
            .finish_non_exhaustive()
    }
}
