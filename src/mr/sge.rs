//! Scatter/gather lists as work requests take them: what a queue's type promises of its SGE
//! cap ([`TypedSgeCap`], [`MAX_TYPED_SGE`]), which lists fit it at compile time
//! ([`WithinSgeCap`], [`SgeList`]), which the device may write ([`LocalWriteList`]), and the
//! error a single SGE given as a list gets ([`OneSgeIsNotAList`]). Below the queues that take
//! them (QPs, SRQs) and the work requests (`wr`, which re-exports them); an [`Sge`] itself is a
//! region's ([`crate::mr`]).

use super::*;
use crate::mr::access::{Bit, Yes};
use crate::sealed::{Sealed, SealedSgeList};

/// The most SGEs a queue's type can promise ([`QpBuilder::send_sge_cap`](crate::QpBuilder::send_sge_cap),
/// [`recv_sge_cap`](crate::QpBuilder::recv_sge_cap), [`SrqBuilder::sge_cap`](crate::srq::SrqBuilder::sge_cap));
/// devices report at most 64 (`max_sge`), most far fewer. More can still be requested with
/// `max_send_sge(n)` and the like, whose lists are slices checked when posted.
pub const MAX_TYPED_SGE: usize = 64;

/// An SGE cap that can be part of a queue's type: 0 to [`MAX_TYPED_SGE`].
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).send_sge_cap::<4>().build()?; // 4: TypedSgeCap
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a queue's type can promise at most 64 SGEs, not {N}: request more at run time (`max_send_sge(n)`, `max_recv_sge(n)`, `max_sge(n)`)",
    label = "SGE cap too large for the type",
    note = "lists longer than the type's cap are slices, checked against the actual cap when posted"
)]
pub trait TypedSgeCap<const N: usize>: Sealed {}

/// `[Sge; N]: WithinSgeCap<CAP>` holds when `N <= CAP <= MAX_TYPED_SGE`: the comparison the
/// type system makes for a fixed-size list. It is one impl per pair (generated below) rather than
/// typenum arithmetic, so that an error names `[Sge; 3]` and `2`, not `UInt<UInt<UTerm, B1>, B1>`,
/// and appears at `cargo check` (a `const` assertion would wait for monomorphization).
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # let s = mr.sge(0..8).unwrap();
/// let wr = SendWr::<Rc, 1>::send(1, &[s, s]); // two SGEs on a queue whose type promises one
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a fixed-size list `{Self}` is longer than the queue's SGE cap of {CAP}: raise the cap in the queue's type, or pass a slice",
    label = "more SGEs than the queue's type allows",
    note = "raise the cap in the type (`.send_sge_cap::<N>()` / `.recv_sge_cap::<N>()` on the QP builder, `.sge_cap::<N>()` on the SRQ builder), or pass a slice (`&list[..]`), checked against the actual cap when posted"
)]
pub trait WithinSgeCap<const CAP: usize>: Sealed {}

macro_rules! within_sge_cap {
    ([$($below:literal)*]) => {};
    ([$($below:literal)*] $cap:literal $($rest:literal)*) => {
        impl TypedSgeCap<$cap> for Sge<'_> {}
        $(impl<W: Bit> WithinSgeCap<$cap> for [Sge<'_, W>; $below] {})*
        impl<W: Bit> WithinSgeCap<$cap> for [Sge<'_, W>; $cap] {}
        within_sge_cap!([$($below)* $cap] $($rest)*);
    };
}
impl<W: Bit> Sealed for Sge<'_, W> {}
impl<W: Bit, const N: usize> Sealed for [Sge<'_, W>; N] {}
within_sge_cap!([] 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
    29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
    60 61 62 63 64);

/// A scatter/gather list for a queue whose type promises `CAP` SGEs per work request: a QP's
/// send queue (`Qp<.., SGE>`), its own receive queue (`OwnRq<N>`) or an SRQ (`Srq<.., N>`).
///
/// ibv_create_qp(3): `max_send_sge` / `max_recv_sge` are the "requested max number of s/g
/// elements in a WR in the SQ / RQ"; ibv_create_srq(3): `max_sge`, "per WR". A fixed-size list,
/// `&[Sge; N]`, must have `N <= CAP`, or the program does not compile; a slice (`&[Sge]`,
/// `&Vec<Sge>`) may be longer than `CAP` and is checked against the queue's actual cap when
/// posted ([`ErrorKind::OutOfRange`](crate::error::ErrorKind::OutOfRange)).
///
/// Sealed: a list that claims `FITS` is posted without a check, so only the crate's lists
/// implement it.
///
/// An empty send list is written `&[] as &[Sge; 0]` (or `&[Sge]`): `&[]` alone does not say
/// whether its SGEs would be `Sge<'_, Yes>` or `Sge<'_, No>`, and the compiler asks
/// (E0283). A receive's `&[]` needs no annotation.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let (head, body) = (mr.sge(0..64).unwrap(), mr.sge(64..4096).unwrap());
/// let pair = [head, body];
/// let fixed = SendWr::<Rc, 2>::send(1, &pair); // checked at compile time
/// let list = vec![head, body];
/// let slice = SendWr::<Rc, 2>::send(2, &list); // checked against the QP's actual cap at post
/// # let _ = (fixed, slice);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not fit the queue's SGE cap of {CAP}: raise the cap in the queue's type, or pass a slice",
    label = "more SGEs than the queue's type allows",
    note = "raise the cap in the type (`.send_sge_cap::<N>()` / `.recv_sge_cap::<N>()` on the QP builder, `.sge_cap::<N>()` on the SRQ builder), or pass a slice (`&list[..]`), checked against the actual cap when posted"
)]
pub trait SgeList<const CAP: usize>: Copy + SealedSgeList {
    /// Whether the length is proven within the cap at compile time (no check when posted).
    const FITS: bool;
    /// [`Yes`] when every SGE of the list lies in a region with `LOCAL_WRITE`
    /// ([`mod@crate::mr::access`]): what a receive or an RDMA read's destination needs
    /// ([`LocalWriteList`]).
    type LocalWrite: Bit;
    /// The elements, for as long as the list borrows them.
    ///
    /// ```
    /// use typed_verbs::{wr::SgeList, Sge};
    /// fn total<const CAP: usize>(list: impl SgeList<CAP>) -> u32 {
    ///     list.into_slice().iter().map(Sge::length).sum()
    /// }
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// # let mr = typed_verbs::Mr::new(&pd, typed_verbs::PageBuf::new(64)?, typed_verbs::Access::LOCAL_WRITE)?;
    /// let pair = [mr.sge(0..8).unwrap(), mr.sge(8..24).unwrap()];
    /// assert_eq!(total::<2>(&pair), 24);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    fn into_slice<'x>(self) -> &'x [Sge<'x, Self::LocalWrite>]
    where
        Self: 'x;
}

/// `impl SgeList` for a reference type: `fits` says whether its length is proven at compile time.
macro_rules! sge_list {
    ($([$($g:tt)*] $t:ty, fits: $fits:literal, where [$($w:tt)*];)*) => {$(
        impl<$($g)*> SgeList<CAP> for $t where $($w)* {
            const FITS: bool = $fits;
            type LocalWrite = W;
            #[inline(always)]
            fn into_slice<'x>(self) -> &'x [Sge<'x, W>]
            where
                Self: 'x,
            {
                self
            }
        }
    )*};
}
impl<W: Bit, const N: usize> SealedSgeList for &[Sge<'_, W>; N] {}
impl<W: Bit> SealedSgeList for &[Sge<'_, W>] {}
impl<W: Bit> SealedSgeList for &Vec<Sge<'_, W>> {}
sge_list! {
    ['m, W: Bit, const N: usize, const CAP: usize] &[Sge<'m, W>; N], fits: true, where [[Sge<'m, W>; N]: WithinSgeCap<CAP>];
    [W: Bit, const CAP: usize] &[Sge<'_, W>], fits: false, where [];
    [W: Bit, const CAP: usize] &Vec<Sge<'_, W>>, fits: false, where [];
}

/// A scatter/gather list the device may write: every SGE in it lies in a region registered
/// with `LOCAL_WRITE` (its SGEs are `Sge<'_, Yes>`). A receive (ibv_post_recv(3),
/// ibv_post_srq_recv(3)) and an RDMA read's destination take one; a region without the right
/// would fail the request with a completion error instead (and a receive moves its QP to ERR). Sealed.
///
/// ```
/// # use typed_verbs::prelude::*;
/// use typed_verbs::wr::LocalWriteList;
/// fn into<L: LocalWriteList>(_: L) {}
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// into(&[rx.sge(0..64).unwrap()]);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// A region without `LOCAL_WRITE` is not received into:
///
/// ```compile_fail,E0277
/// # use typed_verbs::prelude::*;
/// # use typed_verbs::wr::LocalWriteList;
/// # fn into<L: LocalWriteList>(_: L) {}
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// let table = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
/// into(&[table.sge(0..64).unwrap()]);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "the device writes into this list, and `{Self}` may hold SGEs of a region registered without LOCAL_WRITE: register the region with `Access::LOCAL_WRITE` (ibv_reg_mr(3)), or, in generic code, bound the region's rights `A: typed_verbs::access::LocalWriteAccess` (or the list `L: typed_verbs::wr::LocalWriteList`)",
    label = "SGEs the device cannot write",
    note = "an SGE of a region without LOCAL_WRITE is `Sge<'_, No>`; receives and RDMA reads' destinations need `Sge<'_, Yes>`"
)]
pub trait LocalWriteList: SealedSgeList {}
impl<const N: usize> LocalWriteList for &[Sge<'_, Yes>; N] {}
impl LocalWriteList for &[Sge<'_, Yes>] {}
impl LocalWriteList for &Vec<Sge<'_, Yes>> {}
impl LocalWriteList for Sge<'_, Yes> {}
impl LocalWriteList for &Sge<'_, Yes> {}

/// Implemented by nothing: the bound of the `SgeList` impls of `Sge` and `&Sge`, which
/// therefore never apply. A single SGE given where a list is taken then gets an error that
/// says so, rather than one about the queue's SGE cap.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// # let pd = Pd::new(&ctx)?;
/// # let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).build()?;
/// # let (cq, mut poller) = cq.split();
/// # let (a, b) = (Qp::<Rc>::builder(&pd, cq, cq).build()?, Qp::<Rc>::builder(&pd, cq, cq).build()?);
/// # let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// # let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
/// # let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE)?;
/// # let tx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// # let rx = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
/// let sge = rx.sge(0..4096).unwrap();
/// b.post_recv(1, &[sge])?; // a list that holds the one SGE, not `sge` itself
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a single `Sge` is not a scatter/gather list: pass a list that holds it, `&[sge]` (an array, a slice or a `&Vec<Sge>`)",
    label = "one SGE where a list is taken",
    note = "a list of up to the queue's SGE cap ({CAP} in its type) is checked at compile time when it is an array"
)]
pub trait OneSgeIsNotAList<const CAP: usize>: Sealed {}
impl<W: Bit> SealedSgeList for Sge<'_, W> {}
impl<W: Bit> SealedSgeList for &Sge<'_, W> {}
/// The `SgeList` impls of a single SGE, by value or by reference: never applying, as their
/// bound is implemented by nothing, so nothing calls `into_slice`.
macro_rules! one_sge_is_not_a_list {
    ($($t:ty),*) => {$(
        impl<'m, W: Bit, const CAP: usize> SgeList<CAP> for $t
        where
            Sge<'m, W>: OneSgeIsNotAList<CAP>,
        {
            const FITS: bool = false;
            type LocalWrite = W;
            fn into_slice<'x>(self) -> &'x [Sge<'x, W>]
            where
                Self: 'x,
            {
                unreachable!("no type implements OneSgeIsNotAList")
            }
        }
    )*};
}
one_sge_is_not_a_list!(Sge<'m, W>, &Sge<'m, W>);

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
pub struct Sge<'r, W: Bit = Yes>(pub(crate) sys::ibv_sge, pub(super) PhantomData<(&'r (), W)>);

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
pub struct AtomicResult<'r>(pub(super) [Sge<'r>; 1]);

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
