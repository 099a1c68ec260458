//! Memory regions (ibv_reg_mr(3)) and the memory they cover.
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
//!
//! ```
//! use typed_verbs::{Access, Context, Mr, PageBuf, Pd};
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let owned = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?; // owns its buffer
//! let buf = owned.destroy()?; // the buffer back after ibv_dereg_mr
//! let mut stack = [0u8; 64];
//! Mr::scoped(&pd, &mut stack, Access::LOCAL_WRITE, |mr| mr.write(0, b"x"))??; // a borrow
//! assert_eq!(stack[0], b'x');
//! # drop(buf);
//! # Ok::<(), typed_verbs::Error>(())
//! ```

pub mod access;
pub(crate) mod sge;

use crate::backend;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::dma;
use crate::ffi::sys;
use crate::mr::access::{Bit, LocalWrite, LocalWriteAccess, No, RemoteAtomicAccess, Rights, Yes};
use crate::object::parent::Parent;
use crate::object::Node;
use crate::pd::Pd;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;

mod give_back {
    use crate::error::Error;

    /// How a region's memory is given back after deregistration.
    pub trait Release {
        /// After a successful `ibv_dereg_mr` from `Drop`: drops the owned buffer at
        /// `addr..addr + len` (nothing for a borrow).
        ///
        /// # Safety
        /// `addr` and `len` are those of a buffer registered through this type, now
        /// deregistered, released once.
        unsafe fn release(addr: *mut u8, len: usize);
        /// `ibv_dereg_mr` failed in `Drop`: the memory may still be written by the device.
        fn dereg_failed(error: &Error);
    }

    /// An owned buffer taken apart for registration and put back together after it.
    pub trait IntoRaw: Release + Sized {
        /// The buffer's address and length; the buffer is now owned by the region.
        fn into_raw(self) -> (*mut u8, usize);
        /// The buffer back.
        ///
        /// # Safety
        /// `addr`, `len` came from `into_raw` of this type, and are put back once.
        unsafe fn from_raw(addr: *mut u8, len: usize) -> Self;
    }
}

/// What a region covers: an owned buffer ([`OwnedBuf`]) or a scoped borrow ([`Borrowed`]).
/// Sealed: the crate's leak safety rests on how each kind is given back.
///
/// ```
/// use typed_verbs::{mr::{Borrowed, Memory}, Mr, PageBuf};
/// fn length<B: Memory>(mr: &Mr<'_, B>) -> usize { mr.len() }
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let owned: Mr<'_, PageBuf> = Mr::new(&pd, PageBuf::new(4096)?, typed_verbs::Access::LOCAL_WRITE)?;
/// assert_eq!(length(&owned), 4096);
/// let mut buf = [0u8; 64];
/// Mr::scoped(&pd, &mut buf, typed_verbs::Access::LOCAL_WRITE, |mr: &Mr<'_, Borrowed<'_>>| length(mr))?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not memory a region can cover: register a `PageBuf`, `HugeBuf`, `Vec<u8>` or `Box<[u8]>`, or borrow it inside `Mr::scoped`",
    label = "not an owned buffer"
)]
pub trait Memory: give_back::Release {}

/// A buffer a region can own ([`Mr::new`]): its bytes stay at one address while the value is
/// owned, even when it moves, and the region never hands it out while registered. Implemented
/// by [`PageBuf`], [`HugeBuf`], `Vec<u8>` (registered over its length; spare capacity is given
/// back first) and `Box<[u8]>`. Sealed.
///
/// ```
/// use typed_verbs::{Access, Mr};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, vec![1u8; 100], Access::LOCAL_WRITE)?; // Vec<u8>: OwnedBuf
/// let back: Vec<u8> = mr.destroy()?;
/// assert_eq!(back.len(), 100);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// A borrowed slice is not an owned buffer (use [`Mr::scoped`]):
///
/// ```compile_fail,E0277
/// # use typed_verbs::{Access, Mr};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mut buf = [0u8; 64];
/// let mr = Mr::new(&pd, &mut buf[..], Access::LOCAL_WRITE)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer a memory region can own: register a `PageBuf`, `HugeBuf`, `Vec<u8>` or `Box<[u8]>`, or borrow it inside `Mr::scoped`",
    label = "not an owned buffer",
    note = "a borrowed buffer would be given back when the region is forgotten while the device may still write it; `Mr::scoped(&pd, &mut buf, access, |mr| ...)` registers a borrow for the closure's run"
)]
pub trait OwnedBuf: Memory + give_back::IntoRaw + Send {}

/// An owned buffer whose deregistration failed in `Drop`: it may still be written, so it is
/// leaked (it stays allocated; nothing safe can reach it).
fn leak_on_dereg_failure(_: &Error) {}

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

/// The memory of a region registered inside [`Mr::scoped`]: a borrow of the caller's buffer for
/// the scope. It cannot be made outside the crate.
///
/// ```
/// use typed_verbs::{Access, Mr};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mut stack = [0u8; 256];
/// let lkey = Mr::scoped(&pd, &mut stack, Access::LOCAL_WRITE, |mr| mr.lkey())?;
/// # let _ = lkey;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Borrowed<'b>(PhantomData<&'b mut [u8]>);

impl give_back::Release for Borrowed<'_> {
    unsafe fn release(_: *mut u8, _: usize) {}
    fn dereg_failed(error: &Error) {
        // The borrow ends when `scoped` returns or unwinds, and the caller may then free or
        // reuse the buffer while the device can still write it. It cannot be leaked instead
        // (it is not ours), and returning would hand it back: stop the process.
        eprintln!(
            "typed-verbs: {error}: a borrowed buffer is still registered and its borrow is \
             ending; aborting, since the device could write memory that is no longer ours"
        );
        std::process::abort();
    }
}
impl Memory for Borrowed<'_> {}

/// The page size (`sysconf(_SC_PAGESIZE)`; asked each time: a buffer is not made in a hot path).
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// A zeroed buffer aligned to the page size, from the global allocator: what a region usually
/// covers. It dereferences to `[u8]` while the program owns it; once given to [`Mr::new`] it
/// comes back from [`Mr::destroy`].
///
/// ```
/// let mut buf = typed_verbs::PageBuf::new(8192)?;
/// buf[..4].copy_from_slice(b"data"); // a plain slice until it is registered
/// assert_eq!(buf.as_ptr() as usize % 4096, 0);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: owns its bytes like a Box<[u8]>.
unsafe impl Send for PageBuf {}
// SAFETY: as above; `&PageBuf` gives `&[u8]` only.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// `len` zeroed bytes at a page-aligned address. `len` 0 allocates nothing (and cannot be
    /// registered); a `len` whose page-rounded size exceeds `isize::MAX` is `OutOfRange`, an
    /// allocation failure `ENOMEM`.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] naming `len` when the page-rounded size exceeds `isize::MAX`;
    /// `ENOMEM` ([`ErrorKind::Os`]) when the allocation fails.
    ///
    /// ```
    /// let buf = typed_verbs::PageBuf::new(4096)?;
    /// assert!(buf.iter().all(|&b| b == 0));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(len: usize) -> Result<PageBuf> {
        let page = page_size();
        if len == 0 {
            // An aligned dangling pointer, as for an empty Vec.
            return Ok(PageBuf {
                ptr: NonNull::new(page as *mut u8).expect("a page size is not 0"),
                len: 0,
            });
        }
        let layout = Self::layout(len).ok_or_else(|| {
            Error::range(
                Verb::AllocBuf,
                "len",
                len as u64,
                0,
                (isize::MAX as usize - (page - 1)) as u64,
            )
        })?;
        // SAFETY: the layout's size is not zero.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).ok_or(Error::os(Verb::AllocBuf, libc::ENOMEM))?;
        Ok(PageBuf { ptr, len })
    }

    fn layout(len: usize) -> Option<std::alloc::Layout> {
        std::alloc::Layout::from_size_align(len, page_size()).ok()
    }

    /// The length in bytes.
    ///
    /// ```
    /// let buf = typed_verbs::PageBuf::new(100)?;
    /// assert_eq!(buf.len(), 100);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a buffer of no bytes.
    ///
    /// ```
    /// assert!(typed_verbs::PageBuf::new(0)?.is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by `self` (or a dangling empty slice).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Self::layout(self.len).expect("the layout it was allocated with");
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl give_back::Release for PageBuf {
    unsafe fn release(addr: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        drop(unsafe { <Self as give_back::IntoRaw>::from_raw(addr, len) })
    }
    fn dereg_failed(error: &Error) {
        leak_on_dereg_failure(error)
    }
}
impl give_back::IntoRaw for PageBuf {
    fn into_raw(self) -> (*mut u8, usize) {
        let this = ManuallyDrop::new(self);
        (this.ptr.as_ptr(), this.len)
    }
    unsafe fn from_raw(addr: *mut u8, len: usize) -> Self {
        PageBuf {
            // SAFETY: the caller's contract: the pointer of a PageBuf, never null.
            ptr: unsafe { NonNull::new_unchecked(addr) },
            len,
        }
    }
}
impl Memory for PageBuf {}
impl OwnedBuf for PageBuf {}

/// Zeroed memory backed by huge pages: an anonymous `mmap` with `MAP_HUGETLB`, of the system's
/// default huge page size, where the OS provides them. Its length is the requested one rounded
/// up to whole huge pages, and a region over it covers all of it.
///
/// ```
/// use typed_verbs::{ErrorKind, HugeBuf};
/// match HugeBuf::new(1 << 20) {
///     Ok(buf) => assert!(buf.len() >= 1 << 20),
///     Err(e) if matches!(e.kind, ErrorKind::NoHugePages(_)) => println!("no huge pages here: {e}"),
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct HugeBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: owns its mapping like a Box<[u8]>.
unsafe impl Send for HugeBuf {}
// SAFETY: as above; `&HugeBuf` gives `&[u8]` only.
unsafe impl Sync for HugeBuf {}

impl HugeBuf {
    /// The default huge page size (`Hugepagesize` in `/proc/meminfo`), if the kernel has one.
    ///
    /// ```
    /// if let Some(size) = typed_verbs::HugeBuf::huge_page_size() {
    ///     assert!(size.is_power_of_two());
    /// }
    /// ```
    pub fn huge_page_size() -> Option<usize> {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("Hugepagesize:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kb.checked_mul(1024).filter(|s| s.is_power_of_two())
    }

    /// At least `len` zeroed bytes on huge pages, reserved now (no fault can fail later).
    ///
    /// Fails before the call with `OutOfRange` for `len` 0 or a length that cannot be rounded
    /// up, and with [`ErrorKind::NoHugePages`] when the kernel has no huge page size
    /// (`EOPNOTSUPP`), `mmap` finds no free huge pages (`ENOMEM`: none configured in
    /// `vm.nr_hugepages`, or all in use) or the kernel lacks hugetlb support (`ENOSYS`,
    /// `EINVAL`); any other `mmap` failure is its errno.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] for `len` 0 or a length that cannot be rounded up.
    /// - [`ErrorKind::NoHugePages`] with the errno: `EOPNOTSUPP` (no huge page size), `ENOMEM`
    ///   (none free), `ENOSYS` or `EINVAL` (no hugetlb support).
    /// - Any other `mmap` errno ([`ErrorKind::Os`]).
    ///
    /// ```
    /// if let Ok(buf) = typed_verbs::HugeBuf::new(4096) {
    ///     assert_eq!(buf.len() % typed_verbs::HugeBuf::huge_page_size().unwrap(), 0);
    /// }
    /// ```
    pub fn new(len: usize) -> Result<HugeBuf> {
        let no_huge = |errno| Error {
            verb: Verb::AllocHugeBuf,
            kind: ErrorKind::NoHugePages(errno),
        };
        let huge = Self::huge_page_size().ok_or(no_huge(libc::EOPNOTSUPP))?;
        let size = len
            .checked_next_multiple_of(huge)
            .filter(|&s| len > 0 && s <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::range(
                    Verb::AllocHugeBuf,
                    "len",
                    len as u64,
                    1,
                    (isize::MAX as usize / huge * huge) as u64,
                )
            })?;
        // SAFETY: a new private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = Error::last_os(Verb::AllocHugeBuf);
            return Err(match e.errno() {
                errno @ (libc::ENOMEM | libc::ENOSYS | libc::EINVAL) => no_huge(errno),
                _ => e,
            });
        }
        Ok(HugeBuf {
            ptr: NonNull::new(p.cast()).expect("mmap succeeded"),
            len: size,
        })
    }

    /// The length in bytes: whole huge pages.
    ///
    /// ```
    /// if let Ok(buf) = typed_verbs::HugeBuf::new(1) {
    ///     assert_eq!(Some(buf.len()), typed_verbs::HugeBuf::huge_page_size()); // one whole huge page
    /// }
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a `HugeBuf` has at least one page.
    ///
    /// ```
    /// if let Ok(buf) = typed_verbs::HugeBuf::new(1) {
    ///     assert!(!buf.is_empty());
    /// }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Deref for HugeBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: a live mapping of `len` readable bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for HugeBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, writable, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HugeBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; a failure (impossible for a whole
        // mapping) would leave it mapped, which is safe.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

impl std::fmt::Debug for HugeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeBuf")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl give_back::Release for HugeBuf {
    unsafe fn release(addr: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        drop(unsafe { <Self as give_back::IntoRaw>::from_raw(addr, len) })
    }
    fn dereg_failed(error: &Error) {
        leak_on_dereg_failure(error)
    }
}
impl give_back::IntoRaw for HugeBuf {
    fn into_raw(self) -> (*mut u8, usize) {
        let this = ManuallyDrop::new(self);
        (this.ptr.as_ptr(), this.len)
    }
    unsafe fn from_raw(addr: *mut u8, len: usize) -> Self {
        HugeBuf {
            // SAFETY: the caller's contract: the pointer of a mapping, never null.
            ptr: unsafe { NonNull::new_unchecked(addr) },
            len,
        }
    }
}
impl Memory for HugeBuf {}
impl OwnedBuf for HugeBuf {}

impl give_back::Release for Box<[u8]> {
    unsafe fn release(addr: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        drop(unsafe { <Self as give_back::IntoRaw>::from_raw(addr, len) })
    }
    fn dereg_failed(error: &Error) {
        leak_on_dereg_failure(error)
    }
}
impl give_back::IntoRaw for Box<[u8]> {
    fn into_raw(self) -> (*mut u8, usize) {
        let len = self.len();
        (Box::into_raw(self).cast(), len)
    }
    unsafe fn from_raw(addr: *mut u8, len: usize) -> Self {
        // SAFETY: the caller's contract: the parts of a Box<[u8]>.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(addr, len)) }
    }
}
impl Memory for Box<[u8]> {}
impl OwnedBuf for Box<[u8]> {}

impl give_back::Release for Vec<u8> {
    unsafe fn release(addr: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        drop(unsafe { <Box<[u8]> as give_back::IntoRaw>::from_raw(addr, len) })
    }
    fn dereg_failed(error: &Error) {
        leak_on_dereg_failure(error)
    }
}
impl give_back::IntoRaw for Vec<u8> {
    /// Registered as a `Box<[u8]>`: capacity equal to length, so the region's address and
    /// length are all that is needed to give it back.
    fn into_raw(self) -> (*mut u8, usize) {
        <Box<[u8]> as give_back::IntoRaw>::into_raw(self.into_boxed_slice())
    }
    unsafe fn from_raw(addr: *mut u8, len: usize) -> Self {
        // SAFETY: the caller's contract: the parts of the Box<[u8]> `into_raw` made.
        unsafe { <Box<[u8]> as give_back::IntoRaw>::from_raw(addr, len) }.into_vec()
    }
}
impl Memory for Vec<u8> {}
impl OwnedBuf for Vec<u8> {}

/// A scatter/gather element: part of a registered region (`struct ibv_sge`), borrowing the
/// region for `'r`: the region cannot be destroyed, dropped, or (inside [`Mr::scoped`]) left
/// while an SGE of it is still to be posted. Same size and layout as `struct ibv_sge`, so a
/// list of them is the C array the work request points at.
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let sge = mr.sge(128..256).unwrap();
/// assert_eq!((sge.length(), sge.lkey()), (128, mr.lkey()));
/// assert!(mr.sge(0..8192).is_none()); // does not fit
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// An SGE does not outlive its region:
///
/// ```compile_fail,E0505
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let sge = mr.sge(0..64).unwrap();
/// drop(mr);
/// let _ = sge.lkey();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[repr(transparent)]
pub struct Sge<'r, W: Bit = Yes>(pub(crate) sys::ibv_sge, PhantomData<(&'r (), W)>);

static_assertions::assert_eq_size!(Sge<'static>, sys::ibv_sge);
static_assertions::assert_eq_size!(Sge<'static, No>, sys::ibv_sge);
static_assertions::assert_eq_align!(Sge<'static, No>, sys::ibv_sge);

impl<W: Bit> Clone for Sge<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W: Bit> Copy for Sge<'_, W> {}

impl<W: Bit, W2: Bit> PartialEq<Sge<'_, W2>> for Sge<'_, W> {
    fn eq(&self, o: &Sge<'_, W2>) -> bool {
        (self.addr(), self.length(), self.lkey()) == (o.addr(), o.length(), o.lkey())
    }
}
impl<W: Bit> Eq for Sge<'_, W> {}

impl<W: Bit> std::fmt::Debug for Sge<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sge")
            .field("addr", &self.addr())
            .field("length", &self.length())
            .field("lkey", &self.lkey())
            .field("local_write", &W::ON)
            .finish()
    }
}

impl<'r> From<Sge<'r, Yes>> for Sge<'r, No> {
    fn from(s: Sge<'r, Yes>) -> Sge<'r, No> {
        s.read_only()
    }
}

impl<'r, W: Bit> Sge<'r, W> {
    /// The same SGE, without the claim that its region has `LOCAL_WRITE`: to put it in one list
    /// with SGEs of a region without it (a send's gather list, say).
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf, Sge, access::No};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let header = Mr::new(&pd, PageBuf::new(64)?, Access::LOCAL_WRITE)?;
    /// let payload = Mr::new(&pd, vec![1u8; 4096], Access::NONE)?;
    /// let gather: [Sge<'_, No>; 2] = [header.sge(0..64).unwrap().read_only(), payload.sge(0..4096).unwrap()];
    /// # let _ = gather;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn read_only(self) -> Sge<'r, No> {
        Sge(self.0, PhantomData)
    }

    /// A list of SGEs seen as read-only ones: the form the post paths hand on (the claim of
    /// `LOCAL_WRITE` is checked by type before).
    #[inline(always)]
    pub(crate) fn erase_list<'l>(list: &'l [Sge<'r, W>]) -> &'l [Sge<'r, No>] {
        // SAFETY: `Sge<'r, W>` is `repr(transparent)` over `ibv_sge` for every `W` (a
        // zero-sized marker), so the two slices have one layout; only the type-level claim is
        // dropped.
        unsafe { &*(list as *const [Sge<'r, W>] as *const [Sge<'r, No>]) }
    }
}

impl<W: Bit> Sge<'_, W> {
    /// The address.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// let (a, b) = (mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap());
    /// assert_eq!(b.addr() - a.addr(), 8);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn addr(&self) -> u64 {
        self.0.addr
    }
    /// The length in bytes.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.sge(100..300).unwrap().length(), 200);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn length(&self) -> u32 {
        self.0.length
    }
    /// The local key of the region it lies in.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.sge(0..1).unwrap().lkey(), mr.lkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn lkey(&self) -> u32 {
        self.0.lkey
    }
}

/// Where an atomic's old value lands: exactly 8 bytes of a region, by type (made by
/// [`Mr::atomic_result`]), for [`SendWr::fetch_add`](crate::wr::SendWr::fetch_add) and
/// [`SendWr::compare_swap`](crate::wr::SendWr::compare_swap). The region has
/// [`Access::LOCAL_WRITE`](crate::mr::access::Access::LOCAL_WRITE) by type (the device writes the old
/// value): [`Mr::atomic_result`] needs [`LocalWriteAccess`].
///
/// ```
/// # use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let old = mr.atomic_result(16).unwrap();
/// assert_eq!((old.sge().length(), old.sge().addr() - mr.remote().addr()), (8, 16));
/// assert!(mr.atomic_result(4090).is_none()); // does not fit
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct AtomicResult<'r>([Sge<'r>; 1]);

impl<'r> AtomicResult<'r> {
    /// The SGE of the 8 bytes.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr, PageBuf};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    /// assert_eq!(mr.atomic_result(0).unwrap().sge().lkey(), mr.lkey());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sge(&self) -> Sge<'r> {
        self.0[0]
    }

    /// The one-element list a work request names.
    pub(crate) fn as_list(&self) -> &[Sge<'r>; 1] {
        &self.0
    }
}

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
    addr: u64,
    len: u64,
    rkey: u32,
    _a: PhantomData<A>,
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
unsafe fn reg_mr(
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
