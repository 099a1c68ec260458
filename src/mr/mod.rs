//! Memory regions (ibv_reg_mr(3)) and the memory they cover.
//!
//! ```
//! use typed_verbs::{Access, Context, Mr, PageBuf, Pd};
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let owned = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?; // owns its buffer
//! owned.write(0, b"hi")?; // safe access is a copy
//! let mut got = [0; 2];
//! owned.read(0, &mut got)?;
//! assert_eq!(&got, b"hi");
//! let buf = owned.destroy()?; // the buffer back after ibv_dereg_mr
//! let mut stack = [0u8; 64];
//! Mr::scoped(&pd, &mut stack, Access::LOCAL_WRITE, |mr| mr.write(0, b"x"))??; // a borrow
//! assert_eq!(stack[0], b'x');
//! # drop(buf);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists the rules that regions keep.
//!
//! Registered memory is shared with the device, which reads and writes it on its own for as
//! long as it is registered; [`crate::ffi::dma`] sets out who may touch it when and why the safe
//! API's accesses are free of data races. Two things make a region safe whatever the program
//! leaks:
//!
//! - **An owned region** ([`Mr::new`]) owns its buffer: a [`PageBuf`] (page-aligned, zeroed), a
//!   [`HugeBuf`] (huge pages, where the OS has them), a `Vec<u8>` or a `Box<[u8]>`, whose heap
//!   data does not move when the value does ([`OwnedBuf`], sealed). The buffer comes back only
//!   once `ibv_dereg_mr` has succeeded ([`Mr::destroy`]). Forgetting the region
//!   (`mem::forget`, an `Rc` cycle) leaks the buffer with it: the memory the device may still
//!   write stays allocated, and no safe code can reach it.
//! - **A borrowed buffer** is registered only inside [`Mr::scoped`], which deregisters it before
//!   returning, on every exit path, unwinding included; the closure gets a reference to the
//!   region that cannot leave it.
//!
//! While registered, the buffer is never handed out as a Rust reference: safe access is through
//! copies ([`Mr::read`], [`Mr::write`], byte-wise atomic), and a slice of it is `unsafe`
//! ([`Mr::as_slice`]). For zero copy, register the memory as [`Slot`](crate::Slot)s instead.

// Access rights as types (`Access`, `Rights`, `access!`) and a QP's run-time `AccessFlags`.
pub mod access;
/// What a region covers: owned buffers (`PageBuf`, `HugeBuf`, `Box`, `Vec`) and scoped
/// borrows, and how each is given back.
mod buf;
/// A region as the peer sees it: `RemoteMr`, `RemoteAddr`, `AtomicTarget`.
mod remote;
/// An SGE (`Sge`, `AtomicResult`), and the rules of SGE lists: caps in a queue's type, lists
/// that fit them (public through `typed_verbs::wr`).
pub(crate) mod sge;

pub use buf::*;
pub use remote::*;
pub use sge::{AtomicResult, Sge};

use crate::backend;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::dma;
use crate::ffi::sys;
use crate::mr::access::{LocalWrite, LocalWriteAccess, No, RemoteAtomicAccess, Rights};
use crate::object::parent::Parent;
use crate::object::Node;
use crate::pd::Pd;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;

/// A registered memory region. `B` is what it covers: an owned buffer (default [`PageBuf`]),
/// or [`Borrowed`] inside [`Mr::scoped`]. One pointer in size: the buffer's address and length
/// are the region's own (`ibv_mr.addr`, `length`).
///
/// ```
/// use typed_verbs::{Access, Context, Mr, PageBuf, Pd};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_READ)?;
/// mr.write(0, b"hello")?;                 // byte-wise atomic copy in
/// let sge = mr.sge(0..5).unwrap();        // for a work request: it borrows the region
/// let remote = mr.remote();               // for the peer: address, length, rkey
/// let mut out = [0; 5];
/// mr.read(0, &mut out)?;                  // and out
/// assert_eq!(&out, b"hello");
/// # let _ = (sge, remote);
/// let buf: PageBuf = mr.destroy()?;       // ibv_dereg_mr, then the buffer back
/// assert_eq!(&buf[..5], b"hello");
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Mr<'pd, B: Memory = PageBuf, A: Rights = LocalWrite> {
    node: NonNull<Node<sys::ibv_mr>>,
    _m: PhantomData<(&'pd (), B, A)>,
}

// SAFETY: the region is a C object usable from any thread, and its memory is only reached
// through byte-wise atomic copies (or `unsafe` accessors whose callers exclude writers); the
// owned buffer `B` is `Send` (sealed impls), so it may come back on another thread.
unsafe impl<B: Memory + Send, A: Rights> Send for Mr<'_, B, A> {}
// SAFETY: `&Mr` gives only keys, copies through `crate::ffi::dma` (race-free, see there) and the
// `unsafe` `as_slice`; never a `&B`.
unsafe impl<B: Memory + Send, A: Rights> Sync for Mr<'_, B, A> {}

impl<'pd, B: OwnedBuf, A: Rights> Mr<'pd, B, A> {
    /// `ibv_reg_mr` of `buf` in `pd` with `access`; the region owns `buf` until
    /// [`destroy`](Self::destroy) gives it back. An empty buffer is refused before the call;
    /// on an error `buf` is dropped (nothing is registered).
    ///
    /// `pd` is `&pd`, or `&Arc<Pd>` for a region that keeps its PD alive
    /// ([`crate::object::parent`]). A borrowed buffer (`&mut [u8]`) does not compile here: register it
    /// with [`Mr::scoped`].
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `length` for an empty buffer, before the call.
    /// - The device's errno from `ibv_reg_mr` ([`ErrorKind::Os`]): `EINVAL` for access flags it
    ///   refuses (remote write or atomic without local write cannot be asked here), `ENOMEM` when
    ///   out of regions (`max_mr`) or memory that can be pinned.
    ///
    /// `buf` is dropped on error.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE)?;
    /// assert!(Mr::new(&pd, Vec::new(), Access::LOCAL_WRITE).is_err()); // empty
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new<'p: 'pd>(pd: impl Parent<'pd, Target = Pd<'p>>, buf: B, access: A) -> Result<Self> {
        Self::new_addressed(pd, buf, access, Addressing::Virtual)
    }

    /// [`new`](Self::new), addressed as `addressing` says: [`Addressing::Slot`] for a slot
    /// region ([`crate::slots`]), whose `Mr` no one but its slots reaches.
    pub(crate) fn new_addressed<'p: 'pd>(
        pd: impl Parent<'pd, Target = Pd<'p>>,
        buf: B,
        _access: A,
        addressing: Addressing,
    ) -> Result<Self> {
        let pd = pd.into_held();
        let (addr, len) = give_back::IntoRaw::into_raw(buf);
        // SAFETY: the buffer's bytes are owned by the region from here: they stay allocated
        // and in place until a successful deregistration gives them back, or forever if the
        // region is leaked.
        match unsafe { reg_mr(pd.get(), addr, len, A::BITS, addressing) } {
            Ok(raw) => Ok(Mr {
                node: Node::into_handle(raw, pd.into_keep()),
                _m: PhantomData,
            }),
            Err(e) => {
                // SAFETY: not registered; the parts `into_raw` just gave, put back once.
                drop(unsafe { <B as give_back::IntoRaw>::from_raw(addr, len) });
                Err(e)
            }
        }
    }

    /// `ibv_dereg_mr`, then the buffer back, with what the device and [`write`](Self::write)
    /// put in it. If it fails, the error is returned and the region dropped: its `Drop` tries
    /// once more and, failing again, leaks the buffer (the device may still write it).
    /// [`try_destroy`](Self::try_destroy) gives the region back instead.
    ///
    /// # Errors
    /// The device's errno from `ibv_dereg_mr` ([`ErrorKind::Os`]); the buffer is then leaked.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let buf = mr.destroy()?;
    /// # drop(buf);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn destroy(self) -> Result<B> {
        Ok(self.try_destroy()?)
    }

    /// `ibv_dereg_mr`, then the buffer back. On failure the region comes back, still
    /// registered, inside the error.
    ///
    /// # Errors
    /// As [`destroy`](Self::destroy); the [`DestroyError`] holds the region, still registered.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let buf = mr.try_destroy().map_err(|e| e.error)?;
    /// # drop(buf);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_destroy(self) -> Result<B, DestroyError<Self>> {
        let (addr, len) = self.parts();
        // SAFETY: a live MR, deregistered once: on success `self` is forgotten.
        match unsafe { self.dereg() } {
            Ok(()) => {
                let node = self.node;
                std::mem::forget(self);
                // SAFETY: deregistered; the parts of the buffer `new` took, given back once,
                // and the node (releasing the PD it keeps) freed once.
                unsafe {
                    Node::<sys::ibv_mr>::free(node.as_ptr().cast());
                    Ok(<B as give_back::IntoRaw>::from_raw(addr, len))
                }
            }
            Err(error) => Err(DestroyError {
                object: self,
                error,
            }),
        }
    }
}

impl<'pd, 'b, A: Rights> Mr<'pd, Borrowed<'b>, A> {
    /// Registers the borrowed `buf` in `pd` with `access` for the run of `f`, and deregisters
    /// it before returning `f`'s result: on every exit path, a panic in `f` included (the
    /// region is a local of this function, which the caller cannot forget).
    ///
    /// `f` gets the region by a reference of its own lifetime (`for<'s>`), so neither the
    /// region nor the reference can leave it, nor can its [`Sge`]s, which borrow it; a
    /// [`RemoteMr`] copied out is plain data, which the peer's device checks against its
    /// registered regions (after the scope it names none). An empty buffer is refused
    /// before the call (and `f` does not run).
    ///
    /// If `ibv_dereg_mr` fails here the process aborts with a message: the buffer is only
    /// borrowed, so it can neither be kept registered (it is not ours to leak) nor be given
    /// back while the device may still write it. (Neither rdma-core nor the software device
    /// fails a deregistration of a region no memory window is bound to; this crate binds none.)
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `length` for an empty buffer, before the call.
    /// - The device's errno from `ibv_reg_mr` ([`ErrorKind::Os`]); `f` does not run.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mut buf = vec![0u8; 4096];
    /// let first = Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| -> typed_verbs::Result<u8> {
    ///     mr.write(0, &[42])?; // post work requests naming mr.sge(..) here, and poll them
    ///     let mut b = [0];
    ///     mr.read(0, &mut b)?;
    ///     Ok(b[0])
    /// })??; // deregistered here
    /// assert_eq!((first, buf[0]), (42, 42));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    ///
    /// The region cannot leave the closure:
    ///
    /// ```compile_fail
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mut buf = vec![0u8; 4096];
    /// let escaped = Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| mr)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn scoped<R>(
        pd: &'pd Pd<'_>,
        buf: &'b mut [u8],
        _access: A,
        f: impl for<'s> FnOnce(&'s Mr<'pd, Borrowed<'s>, A>) -> R,
    ) -> Result<R> {
        // SAFETY: `buf` is borrowed mutably until this function returns, and `mr` is dropped
        // (deregistered, or the process aborts) before it returns or finishes unwinding.
        let raw = unsafe {
            reg_mr(
                pd,
                buf.as_mut_ptr(),
                buf.len(),
                A::BITS,
                Addressing::Virtual,
            )
        }?;
        let mr = Mr::<'pd, Borrowed<'b>, A> {
            node: Node::into_handle(raw, crate::object::parent::Keep::NONE),
            _m: PhantomData,
        };
        Ok(f(&mr))
        // `mr` drops here, or during unwinding: `ibv_dereg_mr`, abort on failure.
    }
}

impl<'pd, 'b, A: Rights> Mr<'pd, Borrowed<'b>, A> {
    /// [`scoped`](Self::scoped) in several PDs at once: the borrowed `buf` registered in each of
    /// `pds` (on one device or several: multi-rail, which the verbs allow) for the run of `f`,
    /// which gets the regions in the order of `pds`, and deregistered from all of them before
    /// this returns, on every exit path. A registration that fails deregisters the ones before
    /// it (and `f` does not run). The device may write the buffer through any of the regions;
    /// the program reads and writes it through their byte-wise atomic copies, as with one.
    ///
    /// # Errors
    /// As [`scoped`](Self::scoped): `OutOfRange` for an empty buffer, the device's errno from
    /// `ibv_reg_mr` of the first PD that refused.
    ///
    /// ```
    /// # use typed_verbs::{Access, Context, Mr, Pd};
    /// let (rail0, rail1) = (Context::open("sw0")?, Context::open("sw0")?); // two devices, say
    /// let (pd0, pd1) = (Pd::new(&rail0)?, Pd::new(&rail1)?);
    /// let mut buf = vec![0u8; 4096];
    /// Mr::scoped_in([&pd0, &pd1], &mut buf, Access::LOCAL_WRITE, |[on0, on1]| {
    ///     on0.write(0, b"rails")?; // post on either rail, naming its own region's SGEs
    ///     let mut b = [0; 5];
    ///     on1.read(0, &mut b)?; // the same bytes
    ///     assert_eq!(&b, b"rails");
    ///     Ok::<_, typed_verbs::Error>(())
    /// })??;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn scoped_in<const N: usize, R>(
        pds: [&'pd Pd<'_>; N],
        buf: &'b mut [u8],
        _access: A,
        f: impl for<'s> FnOnce(&'s [Mr<'pd, Borrowed<'s>, A>; N]) -> R,
    ) -> Result<R> {
        let (addr, len) = (buf.as_mut_ptr(), buf.len());
        let mut mrs: Vec<Mr<'pd, Borrowed<'b>, A>> = Vec::with_capacity(N);
        for pd in pds {
            // SAFETY: `buf` is borrowed mutably until this function returns, and every region
            // in `mrs` is dropped (deregistered, or the process aborts) before it returns or
            // finishes unwinding, a failed registration's predecessors included.
            let raw = unsafe { reg_mr(pd, addr, len, A::BITS, Addressing::Virtual) }?;
            mrs.push(Mr {
                node: Node::into_handle(raw, crate::object::parent::Keep::NONE),
                _m: PhantomData,
            });
        }
        let Ok(mrs) = <[Mr<'pd, Borrowed<'b>, A>; N]>::try_from(mrs) else {
            unreachable!("one region per PD")
        };
        Ok(f(&mrs))
        // `mrs` drops here, or during unwinding: `ibv_dereg_mr` of each, abort on failure.
    }
}

impl<B: Memory, A: Rights> Mr<'_, B, A> {
    #[inline]
    fn get(&self) -> &sys::ibv_mr {
        // SAFETY: a live MR (its node lives as long as the handle); the provider does not
        // change these fields after registration.
        unsafe { &*Node::raw(self.node) }
    }

    /// The registered buffer's address and length.
    fn parts(&self) -> (*mut u8, usize) {
        (self.get().addr.cast(), self.get().length)
    }

    /// `ibv_dereg_mr`.
    ///
    /// # Safety
    /// Called at most once with success; after success the region must not be used or dropped.
    unsafe fn dereg(&self) -> Result<(), Error> {
        let mr = self.as_raw();
        // SAFETY: a live MR (the caller's contract).
        unsafe { backend::of((*mr).context).dereg_mr(mr) }.map_err(|e| Error::os(Verb::DeregMr, e))
    }

    /// The local key, for scatter/gather elements.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.sge(0..1).unwrap().lkey(), mr.lkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn lkey(&self) -> u32 {
        self.get().lkey
    }

    /// The remote key.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    /// assert_eq!(mr.remote().rkey(), mr.rkey()); // what a peer names the region by
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rkey(&self) -> u32 {
        self.get().rkey
    }

    /// The region's length.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(8192)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.len(), 8192);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.get().length
    }

    /// Always false: an empty buffer cannot be registered.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(64)?, Access::LOCAL_WRITE)?;
    /// assert!(!mr.is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The region as a peer addresses it.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    /// let r = mr.remote();
    /// assert_eq!((r.len(), r.rkey()), (4096, mr.rkey()));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn remote(&self) -> RemoteMr<A> {
        RemoteMr {
            addr: self.get().addr as u64,
            len: self.len() as u64,
            rkey: self.rkey(),
            _a: PhantomData,
        }
    }

    /// A scatter/gather element over `range` of the region, or `None` if it does not fit (or is
    /// longer than a work request can carry).
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.sge(0..100).map(|s| s.length()), Some(100));
    /// assert!(mr.sge(4000..5000).is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sge(&self, range: Range<usize>) -> Option<Sge<'_, A::LocalWrite>> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        let length = u32::try_from(range.end - range.start).ok()?;
        Some(Sge(
            sys::ibv_sge {
                addr: self.get().addr as u64 + range.start as u64,
                length,
                lkey: self.lkey(),
            },
            PhantomData,
        ))
    }

    /// The 8 bytes at `offset` of the region, where an atomic's old value lands, or `None` if
    /// they do not fit.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(64)?, Access::LOCAL_WRITE)?;
    /// assert!(mr.atomic_result(56).is_some() && mr.atomic_result(57).is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn atomic_result(&self, offset: usize) -> Option<AtomicResult<'_>>
    where
        A: LocalWriteAccess,
    {
        let end = offset.checked_add(8)?;
        let sge = self.sge(offset..end)?;
        Some(AtomicResult([Sge(sge.0, PhantomData)]))
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

    /// Copies `out.len()` bytes from `offset` of the region. Each byte of the region is read
    /// atomically ([`crate::ffi::dma`]): racing the device or another thread's [`write`](Self::write)
    /// gives some mix of old and new bytes, never undefined behaviour. Poll the completion of
    /// what wrote the range before reading it.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] naming `offset + length` when the range does not lie in the region.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let mut out = [0; 16];
    /// mr.read(4080, &mut out)?;
    /// assert!(mr.read(4090, &mut out).is_err());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len(), Verb::MrRead)?;
        // SAFETY: `offset..offset + out.len()` is inside the registered buffer (checked), which
        // stays allocated while `self` lives and is accessed by others only byte-wise
        // atomically (crate::ffi::dma's model). `out` is a `&mut` of ours: not registered memory
        // (never handed out as `&mut`), so it does not overlap.
        unsafe { dma::copy_from_shared(self.parts().0.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copies `data` into the region at `offset`. Each byte of the region is written
    /// atomically ([`crate::ffi::dma`]), so racing the device or another thread is not a data race.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] naming `offset + length` when the range does not lie in the region.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// mr.write(0, b"request")?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len(), Verb::MrWrite)?;
        // SAFETY: as in `read`. `data` is not written by anyone during the call: a `&[u8]` into
        // this region exists only through `as_slice`, whose contract forbids this call while
        // it lives.
        unsafe { dma::copy_to_shared(data.as_ptr(), self.parts().0.add(offset), data.len()) };
        Ok(())
    }

    /// The region as a slice, without a copy.
    ///
    /// # Safety
    /// While the returned slice lives, nothing may write any byte of the region: no posted
    /// receive or RDMA read response landing in it, no peer's RDMA write or atomic naming it,
    /// no [`write`](Self::write) from any thread. (Readers, the device's included, are fine.)
    /// A `&[u8]` tells the compiler the bytes do not change; a write meanwhile is undefined
    /// behaviour. Typically: poll the completion of every request that writes the range, and
    /// post none until the slice is gone.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// mr.write(0, b"abc")?;
    /// // SAFETY: no work request writing this region is posted, and no other thread writes it.
    /// let bytes = unsafe { mr.as_slice() };
    /// assert_eq!(&bytes[..3], b"abc");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: the registered buffer, allocated for as long as `self` is borrowed; the
        // caller's contract excludes writers for the slice's life.
        unsafe { std::slice::from_raw_parts(self.parts().0, self.len()) }
    }

    /// The C region. It stays owned by `self`.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(unsafe { (*mr.as_raw()).lkey }, mr.lkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn as_raw(&self) -> *mut sys::ibv_mr {
        // SAFETY: the handle's node lives as long as the handle.
        unsafe { Node::raw(self.node) }
    }
}

impl<B: Memory, A: Rights> Drop for Mr<'_, B, A> {
    fn drop(&mut self) {
        let (addr, len) = self.parts();
        // SAFETY: dropped once. An error cannot be reported from drop (use `destroy`).
        match unsafe { self.dereg() } {
            // SAFETY: deregistered; the memory's parts, released once, then the node (and the
            // PD it keeps), freed once.
            Ok(()) => unsafe {
                B::release(addr, len);
                Node::<sys::ibv_mr>::free(self.node.as_ptr().cast());
            },
            // Still registered: an owned buffer is leaked, a borrow aborts (see `scoped`).
            Err(e) => B::dereg_failed(&e),
        }
    }
}

impl<B: Memory, A: Rights> std::fmt::Debug for Mr<'_, B, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mr")
            .field("len", &self.len())
            .field("lkey", &self.lkey())
            .field("access", &crate::mr::access::AccessFlags::from_raw(A::BITS))
            .finish_non_exhaustive()
    }
}
