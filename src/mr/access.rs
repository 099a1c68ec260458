//! A memory region's access rights as a type. The flags are written as in C, as values whose
//! type carries them:
//!
//! ```
//! use typed_verbs::{access, Access, Mr, PageBuf};
//! # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
//! let rights = Access::LOCAL_WRITE | Access::REMOTE_READ;
//! assert_eq!(rights.bits(), 1 | 4); // IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ
//! let mr = Mr::new(&pd, PageBuf::new(4096)?, rights)?;
//! let _: &Mr<'_, PageBuf, access!(LOCAL_WRITE | REMOTE_READ)> = &mr; // its type, by name
//! let readable = mr.remote(); // what a peer may read: the rights are in its type too
//! assert!(readable.at(0, 4096).is_some() && readable.at(4096, 1).is_none());
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists these rules with the crate's
//! other compile-time ones, and [diagnostics](crate::guide::diagnostics) the compiler's message
//! for each misuse.
//!
//! ibv_reg_mr(3) registers a region with `access` flags, and the flags decide what may be done
//! with it: a receive, an RDMA read's or an atomic's result is written by the local device
//! ("`IBV_ACCESS_LOCAL_WRITE` Enable Local Write Access"), a peer may write, read or run atomics
//! on it only with the matching remote right, and "If `IBV_ACCESS_REMOTE_WRITE` or
//! `IBV_ACCESS_REMOTE_ATOMIC` is set, then `IBV_ACCESS_LOCAL_WRITE` must be set too." Here the
//! flags a region was registered with are its type, [`Access`]`<LW, RW, RR, RA>`, one
//! [`Yes`]/[`No`] per right, so each rule is checked by the compiler:
//!
//! | Rule (ibv_reg_mr(3), ibv_post_send(3), ibv_post_recv(3)) | Enforced by |
//! |---|---|
//! | `REMOTE_WRITE` or `REMOTE_ATOMIC` needs `LOCAL_WRITE` | [`Access::REMOTE_WRITE`] and [`Access::REMOTE_ATOMIC`] include it; [`Rights`] is not implemented without it |
//! | a receive, an RDMA read's destination need `LOCAL_WRITE` | the SGEs of such a region are `Sge<'_, No>`, which [`LocalWriteList`](crate::wr::LocalWriteList) refuses |
//! | an atomic's result needs `LOCAL_WRITE` | [`Mr::atomic_result`](crate::mr::Mr::atomic_result) needs [`LocalWriteAccess`] |
//! | an RDMA write's, read's or atomic's remote address needs that right | [`RemoteAddr`](crate::RemoteAddr)`<A>` and [`AtomicTarget`](crate::AtomicTarget) are made from a [`RemoteMr`](crate::RemoteMr)`<A>` whose `A` has it: a local region's own rights (`mr.remote()`), or a peer's as the peer declares them ([`RemoteMr::from_peer`](crate::RemoteMr::from_peer)), which its device checks |
//!
//! Rights are type-level bits ([`Yes`], [`No`]) rather than `const bool` parameters so that
//! `|` computes the type of its result on stable Rust.

use crate::sealed::Sealed;
use std::fmt;
use std::marker::PhantomData;

/// A right that is granted: a type-level `true`.
///
/// ```
/// use typed_verbs::access::{Bit, Yes};
/// assert!(Yes::ON);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Yes;

/// A right that is not granted: a type-level `false`.
///
/// ```
/// use typed_verbs::access::{Bit, No};
/// assert!(!No::ON);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct No;

/// A type-level bit: [`Yes`] or [`No`]. Sealed.
///
/// ```
/// use typed_verbs::access::{Bit, No, Yes};
/// fn on<B: Bit>() -> bool { B::ON }
/// assert!(on::<<No as Bit>::Or<Yes>>());
/// ```
pub trait Bit: Sealed + Copy + Default + 'static {
    /// The bit's value.
    const ON: bool;
    /// `Self | B`.
    type Or<B: Bit>: Bit;
}
impl Sealed for Yes {}
impl Sealed for No {}
impl Bit for Yes {
    const ON: bool = true;
    type Or<B: Bit> = Yes;
}
impl Bit for No {
    const ON: bool = false;
    type Or<B: Bit> = B;
}

/// The access flags of a memory region, as a type: `LW` local write, `RW` remote write, `RR`
/// remote read, `RA` remote atomic, each [`Yes`] or [`No`]. Made from the constants
/// ([`Access::LOCAL_WRITE`], ...) and `|`; named as a type with [`access!`](crate::access!).
///
/// ```
/// use typed_verbs::access::{Access, No, Yes};
/// let rw: Access<Yes, Yes, Yes, No> = Access::REMOTE_WRITE | Access::REMOTE_READ;
/// assert_eq!(typed_verbs::AccessFlags::from(rw).bits(), 1 | 2 | 4);
/// ```
pub struct Access<LW: Bit, RW: Bit, RR: Bit, RA: Bit>(PhantomData<(LW, RW, RR, RA)>);

impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Clone for Access<LW, RW, RR, RA> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Copy for Access<LW, RW, RR, RA> {}
impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> PartialEq for Access<LW, RW, RR, RA> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Eq for Access<LW, RW, RR, RA> {}
impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> fmt::Debug for Access<LW, RW, RR, RA> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (LW::ON, "LOCAL_WRITE"),
            (RW::ON, "REMOTE_WRITE"),
            (RR::ON, "REMOTE_READ"),
            (RA::ON, "REMOTE_ATOMIC"),
        ];
        let mut set = names.iter().filter(|(on, _)| *on).map(|(_, n)| *n);
        match set.next() {
            None => f.write_str("Access(NONE)"),
            Some(first) => {
                write!(f, "Access({first}")?;
                set.try_for_each(|n| write!(f, " | {n}"))?;
                f.write_str(")")
            }
        }
    }
}

impl Access<No, No, No, No> {
    /// No right: the region is only read, by the local device (sends, RDMA writes' sources).
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, vec![7u8; 64], Access::NONE)?; // a source of sends only
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const NONE: Access<No, No, No, No> = Access(PhantomData);
    /// `IBV_ACCESS_LOCAL_WRITE`: the local device may write the region (receives, RDMA reads'
    /// destinations, atomics' results).
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const LOCAL_WRITE: Access<Yes, No, No, No> = Access(PhantomData);
    /// `IBV_ACCESS_REMOTE_WRITE`, with the `LOCAL_WRITE` ibv_reg_mr(3) requires of it.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, vec![0u8; 64], Access::REMOTE_WRITE)?; // a peer may RDMA-write it
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const REMOTE_WRITE: Access<Yes, Yes, No, No> = Access(PhantomData);
    /// `IBV_ACCESS_REMOTE_READ`.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, vec![0u8; 64], Access::REMOTE_READ)?; // a peer may RDMA-read it
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const REMOTE_READ: Access<No, No, Yes, No> = Access(PhantomData);
    /// `IBV_ACCESS_REMOTE_ATOMIC`, with the `LOCAL_WRITE` ibv_reg_mr(3) requires of it.
    ///
    /// ```
    /// # use typed_verbs::{Access, Mr};
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let mr = Mr::new(&pd, vec![0u8; 64], Access::REMOTE_ATOMIC)?; // a peer's atomics may target it
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const REMOTE_ATOMIC: Access<Yes, No, No, Yes> = Access(PhantomData);
}

impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Access<LW, RW, RR, RA> {
    /// The value of a rights type, for a type named with [`access!`](crate::access!) (the
    /// type is the promise; the value carries nothing).
    ///
    /// ```
    /// use typed_verbs::{access, Access, Mr, PageBuf};
    /// type Table = access!(REMOTE_READ | REMOTE_WRITE);
    /// const TABLE: Table = Access::new();
    /// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
    /// let table: Mr<'_, PageBuf, Table> = Mr::new(&pd, PageBuf::new(4096)?, TABLE)?;
    /// # drop(table);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub const fn new() -> Self
    where
        Self: Rights,
    {
        Access(PhantomData)
    }

    /// Both sets of rights (`|` in a `const`).
    ///
    /// ```
    /// use typed_verbs::{access, Access};
    /// const RW: access!(REMOTE_READ | REMOTE_WRITE) = Access::REMOTE_READ.union(Access::REMOTE_WRITE);
    /// # let _ = RW;
    /// ```
    #[allow(clippy::type_complexity)]
    pub const fn union<LW2: Bit, RW2: Bit, RR2: Bit, RA2: Bit>(
        self,
        _other: Access<LW2, RW2, RR2, RA2>,
    ) -> Access<LW::Or<LW2>, RW::Or<RW2>, RR::Or<RR2>, RA::Or<RA2>> {
        Access(PhantomData)
    }

    /// The C bits (`IBV_ACCESS_*`).
    ///
    /// ```
    /// # use typed_verbs::Access;
    /// assert_eq!(Access::REMOTE_ATOMIC.bits(), 1 | 8); // LOCAL_WRITE | REMOTE_ATOMIC
    /// ```
    pub const fn bits(self) -> u32 {
        (LW::ON as u32) | (RW::ON as u32) << 1 | (RR::ON as u32) << 2 | (RA::ON as u32) << 3
    }
}

impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit, LW2: Bit, RW2: Bit, RR2: Bit, RA2: Bit>
    std::ops::BitOr<Access<LW2, RW2, RR2, RA2>> for Access<LW, RW, RR, RA>
{
    type Output = Access<LW::Or<LW2>, RW::Or<RW2>, RR::Or<RR2>, RA::Or<RA2>>;
    fn bitor(self, other: Access<LW2, RW2, RR2, RA2>) -> Self::Output {
        self.union(other)
    }
}

impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Default for Access<LW, RW, RR, RA>
where
    Self: Rights,
{
    /// [`Access::new`]: the value of the rights type.
    fn default() -> Self {
        Self::new()
    }
}

impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> From<Access<LW, RW, RR, RA>> for AccessFlags {
    fn from(a: Access<LW, RW, RR, RA>) -> AccessFlags {
        AccessFlags::from_raw(a.bits())
    }
}

/// The access types a region can be registered with: every [`Access`] in which a remote write
/// or atomic right comes with `LOCAL_WRITE` (ibv_reg_mr(3): "If `IBV_ACCESS_REMOTE_WRITE` or
/// `IBV_ACCESS_REMOTE_ATOMIC` is set, then `IBV_ACCESS_LOCAL_WRITE` must be set too"). Sealed.
///
/// ```
/// use typed_verbs::{access::Rights, Mr, mr::Memory};
/// fn is_remotely_readable<B: Memory, A: Rights>(_: &Mr<'_, B, A>) -> bool {
///     A::BITS & 4 != 0
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let mr = Mr::new(&pd, vec![0u8; 64], typed_verbs::Access::REMOTE_READ)?;
/// assert!(is_remotely_readable(&mr));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the rights a region can be registered with: pass `Access::LOCAL_WRITE`, `Access::REMOTE_READ`, ... joined with `|` (a region's rights are its type), or, in generic code over the rights `A`, add the bound `A: typed_verbs::access::Rights`",
    label = "not region access rights",
    note = "`AccessFlags` are a QP's run-time flags, not a region's; in `Access<LW, RW, RR, RA>`, remote write or atomic needs LOCAL_WRITE (`LW = Yes`, ibv_reg_mr(3)), which `Access::REMOTE_WRITE` and `Access::REMOTE_ATOMIC` include"
)]
pub trait Rights: Sealed + Copy + 'static {
    /// The C bits (`IBV_ACCESS_*`).
    const BITS: u32;
    /// Whether the region has `LOCAL_WRITE`: the SGEs it makes are `Sge<'_, Self::LocalWrite>`.
    type LocalWrite: Bit;
}
impl<LW: Bit, RW: Bit, RR: Bit, RA: Bit> Sealed for Access<LW, RW, RR, RA> {}
impl<RW: Bit, RR: Bit, RA: Bit> Rights for Access<Yes, RW, RR, RA> {
    const BITS: u32 = Access::<Yes, RW, RR, RA>(PhantomData).bits();
    type LocalWrite = Yes;
}
impl<RR: Bit> Rights for Access<No, No, RR, No> {
    const BITS: u32 = Access::<No, No, RR, No>(PhantomData).bits();
    type LocalWrite = No;
}

macro_rules! right_traits {
    ($($(#[$doc:meta])* $trait:ident: ($($sup:tt)*) for <$($p:ident),*> [$($a:ty),*]: $msg:literal, $label:literal;)*) => {$(
        $(#[$doc])*
        #[diagnostic::on_unimplemented(message = $msg, label = $label, note = "a region's access flags are its type (`Mr<'_, B, A>`): register it with the right (`Access::LOCAL_WRITE | ...`), or, in generic code over the rights `A`, add the bound")]
        pub trait $trait: $($sup)* {}
        impl<$($p: Bit),*> $trait for Access<$($a),*> where Access<$($a),*>: $($sup)* {}
    )*};
}

right_traits! {
    /// Rights with `LOCAL_WRITE`: the device may write the region (receives, RDMA reads'
    /// destinations, atomics' results). Its SGEs are `Sge<'_, Yes>` (the supertrait says so), so
    /// generic code with this bound may post receives into them.
    ///
    /// ```
    /// fn writable<A: typed_verbs::access::LocalWriteAccess>(_: A) {}
    /// writable(typed_verbs::Access::LOCAL_WRITE | typed_verbs::Access::REMOTE_READ);
    /// ```
    LocalWriteAccess: (Rights<LocalWrite = Yes>) for <RW, RR, RA> [Yes, RW, RR, RA]:
        "the device writes this memory, and the region's rights `{Self}` lack LOCAL_WRITE: register it with `Access::LOCAL_WRITE` (ibv_reg_mr(3)), or, in generic code over the rights `A`, add the bound `A: typed_verbs::access::LocalWriteAccess`",
        "needs a region registered with LOCAL_WRITE";
    /// Rights with `REMOTE_WRITE`: a peer may RDMA-write the region.
    ///
    /// ```
    /// fn target<A: typed_verbs::access::RemoteWriteAccess>(_: A) {}
    /// target(typed_verbs::Access::REMOTE_WRITE);
    /// ```
    RemoteWriteAccess: (Rights) for <RR, RA> [Yes, Yes, RR, RA]:
        "an RDMA write needs a remote region registered with REMOTE_WRITE, and `{Self}` lacks it: register the target with `Access::REMOTE_WRITE`, or, in generic code over the rights `A`, add the bound `A: typed_verbs::access::RemoteWriteAccess`",
        "the target region has no REMOTE_WRITE";
    /// Rights with `REMOTE_READ`: a peer may RDMA-read the region.
    ///
    /// ```
    /// fn source<A: typed_verbs::access::RemoteReadAccess>(_: A) {}
    /// source(typed_verbs::Access::REMOTE_READ);
    /// ```
    RemoteReadAccess: (Rights) for <LW, RW, RA> [LW, RW, Yes, RA]:
        "an RDMA read needs a remote region registered with REMOTE_READ, and `{Self}` lacks it: register the source with `Access::REMOTE_READ`, or, in generic code over the rights `A`, add the bound `A: typed_verbs::access::RemoteReadAccess`",
        "the source region has no REMOTE_READ";
    /// Rights with `REMOTE_ATOMIC`: a peer's atomics may target the region.
    ///
    /// ```
    /// fn counter<A: typed_verbs::access::RemoteAtomicAccess>(_: A) {}
    /// counter(typed_verbs::Access::REMOTE_ATOMIC);
    /// ```
    RemoteAtomicAccess: (Rights) for <RW, RR> [Yes, RW, RR, Yes]:
        "an atomic needs a remote region registered with REMOTE_ATOMIC, and `{Self}` lacks it: register the target with `Access::REMOTE_ATOMIC`, or, in generic code over the rights `A`, add the bound `A: typed_verbs::access::RemoteAtomicAccess`",
        "the target region has no REMOTE_ATOMIC";
}

/// The rights a slot region is registered with: `LOCAL_WRITE`, and no remote right. A slot may
/// be received into (the device writes it; a region without `LOCAL_WRITE` would fail the
/// receive and move the QP to ERR), and no peer may reach it: a remote right would let a peer
/// write or read a slot the program holds ([`crate::slots`]).
///
/// ```
/// fn slots<A: typed_verbs::access::SlotAccess>(_: A) {}
/// slots(typed_verbs::Access::LOCAL_WRITE);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the rights of a slot region: register slots with `Access::LOCAL_WRITE` (a remote right would let a peer write or read a slot the program holds, and a receive needs LOCAL_WRITE)",
    label = "slot regions are registered with LOCAL_WRITE only",
    note = "register memory a peer reaches as a plain region (`Mr::new`)"
)]
pub trait SlotAccess: Rights {}
impl SlotAccess for Access<Yes, No, No, No> {}

/// Names a region's access rights as a type: `access!(LOCAL_WRITE | REMOTE_READ)` is the
/// [`Access`] type of `Access::LOCAL_WRITE | Access::REMOTE_READ`. The names are the man page's
/// without `IBV_ACCESS_` (`LOCAL_WRITE`, `REMOTE_WRITE`, `REMOTE_READ`, `REMOTE_ATOMIC`), and
/// `NONE`; `REMOTE_WRITE` and `REMOTE_ATOMIC` include `LOCAL_WRITE`, as their constants do.
///
/// ```
/// use typed_verbs::{access, Access, Mr, PageBuf};
/// struct Server<'pd> {
///     inbox: Mr<'pd, PageBuf, access!(LOCAL_WRITE)>,
///     table: Mr<'pd, PageBuf, access!(REMOTE_READ | REMOTE_WRITE)>,
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let s = Server {
///     inbox: Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?,
///     table: Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ | Access::REMOTE_WRITE)?,
/// };
/// # let _ = s;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[macro_export]
macro_rules! access {
    (NONE) => { $crate::mr::access::Access<$crate::mr::access::No, $crate::mr::access::No, $crate::mr::access::No, $crate::mr::access::No> };
    (LOCAL_WRITE) => { $crate::mr::access::Access<$crate::mr::access::Yes, $crate::mr::access::No, $crate::mr::access::No, $crate::mr::access::No> };
    (REMOTE_WRITE) => { $crate::mr::access::Access<$crate::mr::access::Yes, $crate::mr::access::Yes, $crate::mr::access::No, $crate::mr::access::No> };
    (REMOTE_READ) => { $crate::mr::access::Access<$crate::mr::access::No, $crate::mr::access::No, $crate::mr::access::Yes, $crate::mr::access::No> };
    (REMOTE_ATOMIC) => { $crate::mr::access::Access<$crate::mr::access::Yes, $crate::mr::access::No, $crate::mr::access::No, $crate::mr::access::Yes> };
    ($other:ident) => {
        ::core::compile_error!(::core::concat!(
            "unknown access flag `", ::core::stringify!($other),
            "`: the flags are LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC and NONE"
        ))
    };
    ($first:ident | $($rest:ident)|+) => {
        <$crate::access!($first) as ::core::ops::BitOr<$crate::access!($($rest)|+)>>::Output
    };
}

/// The rights of a region registered with `LOCAL_WRITE` only: [`Mr`](crate::mr::Mr)'s default.
///
/// ```
/// use typed_verbs::{Access, Mr, PageBuf};
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?;
/// let inbox: Mr<'_> = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?; // Mr<'_, PageBuf, LocalWrite>
/// # drop(inbox);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type LocalWrite = Access<Yes, No, No, No>;

/// `IBV_ACCESS_*` flags of a QP or memory region. Remote write and remote atomic imply local
/// write (the verbs spec requires it), so those constants include it.
///
/// ```
/// use typed_verbs::AccessFlags;
/// const RW: AccessFlags = AccessFlags::REMOTE_READ.union(AccessFlags::REMOTE_WRITE);
/// assert_eq!(RW.bits(), 0b111); // remote write brings local write
/// assert_eq!(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ, AccessFlags::REMOTE_READ.union(AccessFlags::LOCAL_WRITE));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AccessFlags(u32);

impl AccessFlags {
    /// No remote access.
    pub const NONE: AccessFlags = AccessFlags(0);
    /// `IBV_ACCESS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: AccessFlags = AccessFlags(1);
    /// `IBV_ACCESS_REMOTE_WRITE` (with the local write it requires).
    pub const REMOTE_WRITE: AccessFlags = AccessFlags(2 | 1);
    /// `IBV_ACCESS_REMOTE_READ`.
    pub const REMOTE_READ: AccessFlags = AccessFlags(4);
    /// `IBV_ACCESS_REMOTE_ATOMIC` (with the local write it requires).
    pub const REMOTE_ATOMIC: AccessFlags = AccessFlags(8 | 1);

    /// The C bits.
    ///
    /// ```
    /// assert_eq!(typed_verbs::AccessFlags::REMOTE_READ.bits(), 4); // IBV_ACCESS_REMOTE_READ
    /// ```
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The flags as C wrote them (`rdma_init_qp_attr`'s `qp_access_flags`).
    pub(crate) const fn from_raw(bits: u32) -> AccessFlags {
        AccessFlags(bits)
    }

    /// Both sets of rights (`|` in a `const`).
    ///
    /// ```
    /// use typed_verbs::AccessFlags;
    /// const RW: AccessFlags = AccessFlags::REMOTE_READ.union(AccessFlags::REMOTE_WRITE);
    /// assert_eq!(RW, AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE);
    /// ```
    pub const fn union(self, other: AccessFlags) -> AccessFlags {
        AccessFlags(self.0 | other.0)
    }
}

impl std::ops::BitOr for AccessFlags {
    type Output = AccessFlags;
    fn bitor(self, rhs: AccessFlags) -> AccessFlags {
        AccessFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for AccessFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccessFlags({:#x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_types_carry_the_c_bits() {
        assert_eq!(Access::NONE.bits(), 0);
        assert_eq!(Access::LOCAL_WRITE.bits(), 1); // IBV_ACCESS_LOCAL_WRITE
        assert_eq!(Access::REMOTE_WRITE.bits(), 1 | 2); // REMOTE_WRITE needs LOCAL_WRITE
        assert_eq!(Access::REMOTE_READ.bits(), 4);
        assert_eq!(Access::REMOTE_ATOMIC.bits(), 1 | 8); // REMOTE_ATOMIC needs LOCAL_WRITE
        let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
        assert_eq!(all.bits(), 15);
        assert_eq!(
            <access!(REMOTE_READ | REMOTE_ATOMIC) as Rights>::BITS,
            1 | 4 | 8
        );
        assert_eq!(format!("{:?}", Access::NONE), "Access(NONE)");
        assert_eq!(
            format!("{:?}", Access::REMOTE_READ | Access::LOCAL_WRITE),
            "Access(LOCAL_WRITE | REMOTE_READ)"
        );
        assert_eq!(
            AccessFlags::from(all),
            AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC
        );
    }
}
