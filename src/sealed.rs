//! The seals of the crate's proof-carrying traits.
//!
//! A trait whose impls a guarantee relies on (a QP type, a receive side, a state, an
//! [`SgeList`](crate::SgeList) that claims to fit a cap, ...) has one of these traits as a
//! supertrait. They are public traits in this private module: code outside the crate cannot
//! name them, so it cannot implement them, so it cannot implement the traits they seal, and
//! every impl of those is one written here. A trait sealed by a sealed supertrait (such as
//! `FixedDest: QpType`) names its seal too, so that a user's impl fails with the message below.
//!
//! Most traits share [`Sealed`]; a trait whose implementors are a family of their own has its
//! own seal, so that the compiler's list of "types that implement it" is that family.

macro_rules! seals {
    ($($(#[$m:meta])* $name:ident $(<$l:ident>)?;)*) => {$(
        $(#[$m])*
        #[diagnostic::on_unimplemented(
            message = "`{Self}` cannot implement this typed-verbs trait: it is sealed, because the crate's guarantees rely on its impls; use the crate's types that implement it",
            label = "typed-verbs traits that carry a proof are implemented by the crate only",
            note = "use one of the types that implement it in typed-verbs"
        )]
        pub trait $name $(<$l>)? {}
    )*};
}

seals! {
    /// The crate's marker and handle types: QP types, receive sides, states, threading, CQs,
    /// flag sets, completion states; `Sge` and `[Sge; N]` for the SGE-cap traits.
    Sealed;
    /// `Self: SealedFor<L>`: `Self` may implement a sealed trait about `L`. A trait generic over
    /// a type the caller picks (such as [`HasOwnRq<L>`](crate::wr::HasOwnRq)) is not sealed by a
    /// seal on `Self` alone: `impl HasOwnRq<MyList> for UsesSrq` would pass the orphan rules.
    SealedFor<L>;
    /// The references that are an [`SgeList`](crate::SgeList).
    SealedSgeList;
    /// What a batch's data method takes as one SGE ([`OneSge`](crate::wr::OneSge)).
    SealedOneSge;
    /// The attribute structs of QP state transitions.
    SealedTransitionAttr;
    /// The parent objects, and the ways of holding one ([`Parent`](crate::object::parent::Parent)).
    SealedParent;
    /// `Self: SealedCqContext<T>`: `Self` may be the user context of a CQ of threading `T`.
    SealedCqContext<T>;
    /// `Self: SealedWorkRequest<T>`: `Self` may be a work request for a QP of type `T`
    /// ([`WorkRequestFor`](crate::wr::WorkRequestFor)).
    SealedWorkRequest<T>;
    /// `Self: SealedQpContext<C>`: `C` may be the user context of a QP of threading `Self`.
    SealedQpContext<L>;
    /// `Self: SealedAttrOf<(E, Q)>`: `Self` may be passed where a transition of a `Q` QP takes
    /// `E` ([`AttrOf`](crate::qp::state::AttrOf)).
    SealedAttrOf<L>;
    /// The CM's marker traits: [`PortSpace`](crate::cm::PortSpace),
    /// [`IdState`](crate::cm::IdState) and the state rules.
    SealedCm;
}
