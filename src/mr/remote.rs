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
///
/// With the `serde` feature it is `Serialize` and `Deserialize`: `{"addr":140737354096640,
/// "len":4096,"rkey":4660,"access":["LOCAL_WRITE","REMOTE_WRITE"]}`, `access` naming the rights
/// `A` (its `IBV_ACCESS_*` flags without the prefix). Reading one makes what
/// [`RemoteMr::from_peer`] makes, the peer's word about its own memory, and checks what can be
/// checked here: the region is not empty and does not wrap past 2^64 (so
/// [`at`](RemoteMr::at) cannot overflow), and `access` includes every right `A` claims
/// (`REMOTE_WRITE` alone implies the `LOCAL_WRITE` ibv_reg_mr(3) requires with it; more
/// rights than `A` are fine, an RDMA write needs only the remote write), so a region the peer
/// registered without the right is an error when it is read rather than `REM_ACCESS_ERR` at
/// the first access.
///
/// This is sound to deserialize: no guarantee of this crate rests on a remote address or key
/// ([the guide's guarantees](crate::guide::guarantees): a device reaches only regions registered with the right, in the PD of
/// the queue that asks, inside their range, whatever key a work request names); a wrong
/// address, key or right fails at the peer's device, a completion error. A deserialized region
/// names nothing a program could not already name with `from_peer`.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use typed_verbs::{access, RemoteMr};
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE | Access::REMOTE_READ)?;
/// let line = serde_json::to_string(&mr.remote()).unwrap(); // to the peer, which reads:
/// let region: RemoteMr<access!(REMOTE_WRITE)> = serde_json::from_str(&line).unwrap();
/// assert_eq!((region.addr(), region.len(), region.rkey()), (mr.remote().addr(), 4096, mr.rkey()));
/// let atomics = serde_json::from_str::<RemoteMr<access!(REMOTE_ATOMIC)>>(&line);
/// assert!(atomics.unwrap_err().to_string().contains("REMOTE_ATOMIC")); // not registered with it
/// # }
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
    /// // A peer's region that would end past 2^64: no address there wraps.
    /// let odd = typed_verbs::RemoteMr::from_peer(u64::MAX - 4, 10, 7, Access::REMOTE_WRITE);
    /// assert!(odd.at(2, 1).is_some() && odd.at(5, 1).is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn at(&self, offset: u64, len: u64) -> Option<RemoteAddr<A>> {
        let end = offset.checked_add(len)?;
        // A peer's description may name a region that ends past 2^64 (`from_peer` takes what
        // the peer sent): such an address is `None`, never a wrapped one.
        let addr = self.addr.checked_add(offset)?;
        (end <= self.len).then_some(RemoteAddr {
            addr,
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
///
/// With the `serde` feature it is `Serialize` and `Deserialize`, as [`RemoteMr`] is, without
/// the length: `{"addr":140737354096656,"rkey":4660,"access":["LOCAL_WRITE","REMOTE_WRITE"]}`.
/// Reading one makes what [`RemoteAddr::from_peer`] makes and checks that `access` includes
/// the rights `A` claims. Sound for the same reason as [`RemoteMr`]'s. Prefer sending the
/// [`RemoteMr`] and calling [`RemoteMr::at`], which checks the range.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use typed_verbs::{access, RemoteAddr};
/// let text = r#"{"addr":4096,"rkey":7,"access":["REMOTE_READ"]}"#;
/// let at: RemoteAddr<access!(REMOTE_READ)> = serde_json::from_str(text).unwrap();
/// assert_eq!((at.addr(), at.rkey()), (4096, 7));
/// assert_eq!(serde_json::to_string(&at).unwrap(), text);
/// assert!(serde_json::from_str::<RemoteAddr<access!(REMOTE_WRITE)>>(text).is_err());
/// # }
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

/// The wire forms of [`RemoteMr`] and [`RemoteAddr`] (their docs say them), and the checks
/// made when one is read.
#[cfg(feature = "serde")]
mod wire {
    use super::{PhantomData, RemoteAddr, RemoteMr, Rights};
    use serde::de::Error as _;
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// The `IBV_ACCESS_*` flags by name, in the order of their bits.
    const NAMES: [(u32, &str); 4] = [
        (1, "LOCAL_WRITE"),
        (2, "REMOTE_WRITE"),
        (4, "REMOTE_READ"),
        (8, "REMOTE_ATOMIC"),
    ];

    /// Access flags as a list of their names.
    pub(super) struct Flags(pub(super) u32);

    impl Serialize for Flags {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let set = NAMES.iter().filter(|(bit, _)| self.0 & bit != 0);
            let mut seq = s.serialize_seq(Some(set.clone().count()))?;
            for (_, name) in set {
                seq.serialize_element(name)?;
            }
            seq.end()
        }
    }

    impl<'de> Deserialize<'de> for Flags {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flags, D::Error> {
            let mut bits = 0;
            for name in Vec::<String>::deserialize(d)? {
                let Some(&(bit, _)) = NAMES.iter().find(|(_, n)| *n == name) else {
                    const KNOWN: &[&str] = &[NAMES[0].1, NAMES[1].1, NAMES[2].1, NAMES[3].1];
                    return Err(D::Error::unknown_variant(&name, KNOWN));
                };
                bits |= bit;
            }
            Ok(Flags(bits))
        }
    }

    fn names(bits: u32) -> String {
        let set: Vec<&str> = NAMES
            .iter()
            .filter(|(bit, _)| bits & bit != 0)
            .map(|(_, n)| *n)
            .collect();
        format!("[{}]", set.join(", "))
    }

    /// The rights the peer sent include those `A` claims (a remote write or atomic implies the
    /// local write that ibv_reg_mr(3) requires with it).
    fn covers<A: Rights, E: serde::de::Error>(sent: Flags) -> Result<(), E> {
        let implied = if sent.0 & (2 | 8) != 0 {
            sent.0 | 1
        } else {
            sent.0
        };
        let missing = A::BITS & !implied;
        if missing == 0 {
            return Ok(());
        }
        Err(E::custom(format_args!(
            "`access` is {}, without {} that the type claims",
            names(sent.0),
            names(missing)
        )))
    }

    #[derive(Serialize, Deserialize)]
    struct Region {
        addr: u64,
        len: u64,
        rkey: u32,
        access: Flags,
    }

    #[derive(Serialize, Deserialize)]
    struct Addr {
        addr: u64,
        rkey: u32,
        access: Flags,
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    impl<A: Rights> Serialize for RemoteMr<A> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (addr, len, rkey) = (self.addr, self.len, self.rkey);
            let access = Flags(A::BITS);
            Region {
                addr,
                len,
                rkey,
                access,
            }
            .serialize(s)
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    impl<'de, A: Rights> Deserialize<'de> for RemoteMr<A> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let r = Region::deserialize(d)?;
            if r.len == 0 {
                return Err(D::Error::custom("`len` is 0: a region is never empty"));
            }
            // The last byte must have an address: a region may end at 2^64, not past it.
            if r.addr.checked_add(r.len - 1).is_none() {
                return Err(D::Error::custom(format_args!(
                    "`addr` {:#x} + `len` {:#x} ends past 2^64",
                    r.addr, r.len
                )));
            }
            covers::<A, D::Error>(r.access)?;
            Ok(RemoteMr {
                addr: r.addr,
                len: r.len,
                rkey: r.rkey,
                _a: PhantomData,
            })
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    impl<A: Rights> Serialize for RemoteAddr<A> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (addr, rkey) = (self.addr, self.rkey);
            let access = Flags(A::BITS);
            Addr { addr, rkey, access }.serialize(s)
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    impl<'de, A: Rights> Deserialize<'de> for RemoteAddr<A> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let a = Addr::deserialize(d)?;
            covers::<A, D::Error>(a.access)?;
            Ok(RemoteAddr {
                addr: a.addr,
                rkey: a.rkey,
                _a: PhantomData,
            })
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
