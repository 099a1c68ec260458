//! A region as the peer sees it: RemoteMr, RemoteAddr, AtomicTarget.

use super::*;

/// What a peer needs to access a region remotely: its address, length and rkey. Send it to the
/// peer; it is plain data.
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
/// let remote = mr.remote(); // send to the peer
/// let target = remote.at(1024, 64).unwrap(); // an RDMA write's destination, on the peer
/// assert!(remote.at(4090, 64).is_none());
/// # let _ = target;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct RemoteMr<A: Rights> {
    pub(super) addr: u64,
    pub(super) len: u64,
    pub(super) rkey: u32,
    pub(super) _a: PhantomData<A>,
}

impl<A: Rights> Clone for RemoteMr<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Rights> Copy for RemoteMr<A> {}
impl<A: Rights> PartialEq for RemoteMr<A> {
    fn eq(&self, o: &Self) -> bool {
        (self.addr, self.len, self.rkey) == (o.addr, o.len, o.rkey)
    }
}
impl<A: Rights> Eq for RemoteMr<A> {}
impl<A: Rights> std::hash::Hash for RemoteMr<A> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.addr, self.len, self.rkey).hash(h);
    }
}
impl<A: Rights> std::fmt::Debug for RemoteMr<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteMr")
            .field("addr", &self.addr)
            .field("len", &self.len)
            .field("rkey", &self.rkey)
            .field("access", &crate::mr::access::AccessFlags::from_raw(A::BITS))
            .finish()
    }
}

impl<A: Rights> RemoteMr<A> {
    /// A peer's region, from what the peer sent: its address, length, rkey and the rights it
    /// registered the region with. The rights are the peer's word (this side cannot check them);
    /// they decide which work requests may name the region here, and the peer's device refuses
    /// an access the region does not allow (a completion error, `REM_ACCESS_ERR`).
    ///
    /// ```
    /// use typed_verbs::{Access, RemoteMr};
    /// let (addr, len, rkey) = (0x7f00_0000_1000, 4096, 0x1234); // as received from the peer
    /// let table = RemoteMr::from_peer(addr, len, rkey, Access::REMOTE_READ);
    /// assert!(table.at(0, 64).is_some());
    /// ```
    pub fn from_peer(addr: u64, len: u64, rkey: u32, _rights: A) -> RemoteMr<A> {
        RemoteMr {
            addr,
            len,
            rkey,
            _a: PhantomData,
        }
    }

    /// The region's start address (what its work requests name: the iova).
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    /// assert_eq!(mr.remote().addr(), mr.sge(0..1).unwrap().addr());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Its length in bytes.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    /// assert_eq!(mr.remote().len(), 4096);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[allow(clippy::len_without_is_empty)] // a region is never empty
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Its remote key.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    /// assert_eq!(mr.remote().rkey(), mr.rkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// The remote address `offset` bytes in, if `len` bytes from there fit in the region.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    /// assert!(mr.remote().at(0, 4096).is_some());
    /// assert!(mr.remote().at(1, 4096).is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn at(&self, offset: u64, len: u64) -> Option<RemoteAddr<A>> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then_some(RemoteAddr {
            addr: self.addr + offset,
            rkey: self.rkey,
            _a: PhantomData,
        })
    }

    /// The 8-byte word at `offset`, as the target of an atomic: `None` unless it lies in the
    /// region and its address is 8-byte aligned (the verbs require both). Checked here, once, so
    /// posting the atomic checks nothing.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
    /// assert!(mr.remote().atomic_at(16).is_some() && mr.remote().atomic_at(12).is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn atomic_at(&self, offset: u64) -> Option<AtomicTarget>
    where
        A: RemoteAtomicAccess,
    {
        let at = self.at(offset, 8)?;
        (at.addr % 8 == 0).then_some(AtomicTarget(at.retype()))
    }
}

/// An 8-byte-aligned remote word that atomics may target; made by [`RemoteMr::atomic_at`].
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
/// let counter = mr.remote().atomic_at(8).unwrap();
/// assert!(mr.remote().atomic_at(4).is_none()); // not 8-byte aligned
/// # let _ = counter;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicTarget(RemoteAddr<crate::access!(REMOTE_ATOMIC)>);

impl AtomicTarget {
    /// The remote address and rkey.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// # let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
    /// let target = mr.remote().atomic_at(8).unwrap();
    /// assert_eq!(target.addr().addr() % 8, 0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn addr(&self) -> RemoteAddr<crate::access!(REMOTE_ATOMIC)> {
        self.0
    }
}

/// A remote address with the rkey that opens it, for RDMA and atomic work requests.
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
/// let at = mr.remote().at(16, 8).unwrap();
/// assert_eq!(at.rkey(), mr.rkey());
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct RemoteAddr<A: Rights> {
    addr: u64,
    rkey: u32,
    _a: PhantomData<A>,
}

/// The rights of a remote address whose type no longer says them: the form the post paths
/// hand on, once the rights were checked by type.
pub(crate) type Untyped = crate::mr::access::Access<No, No, No, No>;

impl<A: Rights> Clone for RemoteAddr<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Rights> Copy for RemoteAddr<A> {}
impl<A: Rights> PartialEq for RemoteAddr<A> {
    fn eq(&self, o: &Self) -> bool {
        (self.addr, self.rkey) == (o.addr, o.rkey)
    }
}
impl<A: Rights> Eq for RemoteAddr<A> {}
impl<A: Rights> std::hash::Hash for RemoteAddr<A> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.addr, self.rkey).hash(h);
    }
}
impl<A: Rights> std::fmt::Debug for RemoteAddr<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAddr")
            .field("addr", &self.addr)
            .field("rkey", &self.rkey)
            .field("access", &crate::mr::access::AccessFlags::from_raw(A::BITS))
            .finish()
    }
}

impl<A: Rights> RemoteAddr<A> {
    /// A peer's address, from what the peer sent: the address, the rkey of its region, and the
    /// rights it registered that region with (the peer's word, as in [`RemoteMr::from_peer`]).
    /// Prefer [`RemoteMr::from_peer`] and [`RemoteMr::at`], which check the range.
    ///
    /// ```
    /// use typed_verbs::{Access, RemoteAddr};
    /// let at = RemoteAddr::from_peer(0x7f00_0000_1000, 0x1234, Access::REMOTE_WRITE);
    /// assert_eq!(at.rkey(), 0x1234);
    /// ```
    pub fn from_peer(addr: u64, rkey: u32, _rights: A) -> RemoteAddr<A> {
        RemoteAddr {
            addr,
            rkey,
            _a: PhantomData,
        }
    }

    /// The address in the peer's region.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    /// assert_eq!(mr.remote().at(16, 8).unwrap().addr(), mr.remote().addr() + 16);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The peer region's rkey.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    /// assert_eq!(mr.remote().at(0, 8).unwrap().rkey(), mr.rkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// The same address, its rights dropped from the type (they were checked when it was used).
    pub(crate) fn erase(self) -> RemoteAddr<Untyped> {
        self.retype()
    }

    /// The same address under other rights: for a right the caller has checked.
    pub(crate) fn retype<B: Rights>(self) -> RemoteAddr<B> {
        RemoteAddr {
            addr: self.addr,
            rkey: self.rkey,
            _a: PhantomData,
        }
    }
}

/// Where work requests address a region, in the 64-bit space of addresses its SGEs name.
///
/// A plain region ([`Mr::new`], [`Mr::scoped`]) is addressed by its virtual address, which is
/// below [`SLOT_IOVA`] (checked before the call: user-space addresses are below 2^47, or 2^56
/// with five-level paging); a slot region ([`crate::slots`]) at its virtual address plus
/// [`SLOT_IOVA`] (`ibv_reg_mr_iova2`), so no address a plain region's SGE or work request ever
/// named lies in a slot region, whatever keys the device hands out (see [`crate::safety`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addressing {
    /// `iova == addr`: plain regions.
    Virtual,
    /// `iova == addr + SLOT_IOVA`: slot regions.
    Slot,
}

/// The first address of the upper half of the 64-bit space, where slot regions are addressed
/// and plain regions never are.
pub(crate) const SLOT_IOVA: u64 = 1 << 63;

/// Registers `len` bytes at `addr` in `pd`, addressed as `addressing` says: the one
/// `ibv_reg_mr` of every constructor.
///
/// # Safety
/// `addr..addr + len` stays allocated and in place until the region is deregistered.
pub(super) unsafe fn reg_mr(
    pd: &Pd<'_>,
    addr: *mut u8,
    len: usize,
    access: u32,
    addressing: Addressing,
) -> Result<NonNull<sys::ibv_mr>> {
    if len == 0 {
        return Err(Error::range(Verb::RegMr, "length", 0, 1, isize::MAX as u64));
    }
    // Every region lies below SLOT_IOVA in memory (so plain regions are addressed there): no
    // Linux user-space mapping reaches it, but the argument in crate::safety rests on it.
    let end = (addr as u64).checked_add(len as u64);
    if end.is_none_or(|end| end > SLOT_IOVA) {
        return Err(Error::range(
            Verb::RegMr,
            "addr + length",
            end.unwrap_or(u64::MAX),
            0,
            SLOT_IOVA,
        ));
    }
    let iova = match addressing {
        Addressing::Virtual => addr as u64,
        Addressing::Slot => addr as u64 | SLOT_IOVA,
    };
    let pdr = pd.as_raw();
    // SAFETY: a live PD; the caller keeps the range allocated and in place while registered.
    unsafe { backend::of((*pdr).context).reg_mr(pdr, addr.cast(), len, iova, access as i32) }
        .map_err(|e| Error::os(Verb::RegMr, e))
}
