//! What a region covers: owned buffers (PageBuf, HugeBuf, Box, Vec) and scoped borrows, and how
//! each is given back.

use super::*;

pub(super) mod give_back {
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

/// How an owned buffer ([`OwnedBuf`]) is given back after deregistration: put back together
/// ([`give_back::IntoRaw`]) and dropped, or leaked if deregistration failed. (Its `Memory` and
/// `OwnedBuf` impls are written out beside it, so that a compile error listing them shows them.)
macro_rules! owned_buf {
    ($t:ty) => {
        impl give_back::Release for $t {
            unsafe fn release(addr: *mut u8, len: usize) {
                // SAFETY: the caller's contract.
                drop(unsafe { <Self as give_back::IntoRaw>::from_raw(addr, len) })
            }
            fn dereg_failed(error: &Error) {
                leak_on_dereg_failure(error)
            }
        }
    };
}

/// A buffer that is its pointer `ptr` (never null) to the `len` initialised bytes it owns
/// ([`PageBuf`], [`HugeBuf`]): `Send` and `Sync`, its bytes as a slice, its `Debug` (the
/// length), and its parts for registration.
macro_rules! ptr_len_buf {
    ($t:ident) => {
        // SAFETY: owns its bytes (a PageBuf's allocation, a HugeBuf's mapping) like a Box<[u8]>.
        unsafe impl Send for $t {}
        // SAFETY: as above; a shared reference to it gives `&[u8]` only.
        unsafe impl Sync for $t {}

        impl Deref for $t {
            type Target = [u8];
            fn deref(&self) -> &[u8] {
                // SAFETY: `len` initialised bytes owned by `self` (a PageBuf's zeroed
                // allocation, or a dangling empty slice; a HugeBuf's live mapping).
                unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
            }
        }

        impl DerefMut for $t {
            fn deref_mut(&mut self) -> &mut [u8] {
                // SAFETY: as in `deref`, writable, borrowed mutably through `self`.
                unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
            }
        }

        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("len", &self.len)
                    .finish_non_exhaustive()
            }
        }

        impl give_back::IntoRaw for $t {
            fn into_raw(self) -> (*mut u8, usize) {
                let this = ManuallyDrop::new(self);
                (this.ptr.as_ptr(), this.len)
            }
            unsafe fn from_raw(addr: *mut u8, len: usize) -> Self {
                $t {
                    // SAFETY: the caller's contract: the pointer of a buffer of this type
                    // (`into_raw`), never null.
                    ptr: unsafe { NonNull::new_unchecked(addr) },
                    len,
                }
            }
        }
    };
}

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

impl Drop for PageBuf {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Self::layout(self.len).expect("the layout it was allocated with");
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

ptr_len_buf!(PageBuf);
owned_buf!(PageBuf);
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

impl Drop for HugeBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; a failure (impossible for a whole
        // mapping) would leave it mapped, which is safe.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

ptr_len_buf!(HugeBuf);
owned_buf!(HugeBuf);
impl Memory for HugeBuf {}
impl OwnedBuf for HugeBuf {}

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
owned_buf!(Box<[u8]>);
impl Memory for Box<[u8]> {}
impl OwnedBuf for Box<[u8]> {}

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
owned_buf!(Vec<u8>);
impl Memory for Vec<u8> {}
impl OwnedBuf for Vec<u8> {}
