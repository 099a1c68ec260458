//! The C side: rdma-sys re-exported as `sys`, a few constants, and compile-time checks that every
//! Rust mirror of a C structure has the C layout.
//!
//! ```
//! use typed_verbs::ffi::{sys, wc_ex_flags};
//! let ctx = typed_verbs::Context::open("sw0")?;
//! let raw: *mut sys::ibv_context = ctx.as_raw(); // for what the crate does not wrap
//! assert!(!raw.is_null());
//! assert_eq!(wc_ex_flags::STANDARD & wc_ex_flags::BYTE_LEN, wc_ex_flags::BYTE_LEN);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page sums up what the crate keeps at the
//! FFI boundary, and [architecture](crate::guide::architecture) where this layer sits.
//!
//! rdma-sys generates most structures with bindgen, which copies the C layout. A few (`ibv_wc`,
//! `ibv_gid`, `rdma_cm_event`, ...) it writes by hand; those, and the C structures that the
//! software device embeds, are checked here against sizes and offsets measured from
//! <infiniband/verbs.h> and <rdma/rdma_cma.h> by the build script (`c_layout.rs`; it compiles
//! a probe for the target and reads the values from the object file's symbol sizes, running
//! nothing). A mismatch is a compile error.
//!
//! C enums that C fills are read as integers. rdma-sys generates every C enum as integer
//! constants (a `Type` alias and a module of values, or a bit-set newtype) except
//! `enum ibv_event_type`, which it makes a Rust `enum`: a value the build's headers lack would
//! be undefined behaviour in it, so `struct ibv_async_event` is read through the crate's own
//! mirror, [`RawAsyncEvent`], whose `event_type` is a `u32`.

pub mod dma;
pub(crate) mod fd;

pub use rdma_sys as sys;

use static_assertions::const_assert_eq;
use std::mem::{align_of, offset_of, size_of};

/// The C layout build.rs measured (the software device checks its `verbs_qp` prefix here).
#[allow(non_upper_case_globals, dead_code)]
pub(crate) mod c {
    include!(concat!(env!("OUT_DIR"), "/c_layout.rs"));
}

macro_rules! check_layout {
    ($t:ident { $($f:ident $(=> $cf:ident)?),* }) => {
        pastey::paste! {
            const_assert_eq!(size_of::<sys::$t>(), c::[<SIZEOF_ $t>]);
            const_assert_eq!(align_of::<sys::$t>(), c::[<ALIGNOF_ $t>]);
            $( const_assert_eq!(offset_of!(sys::$t, $f), check_layout!(@off $t $f $($cf)?)); )*
        }
    };
    (@off $t:ident $f:ident) => { pastey::paste!(c::[<OFFSETOF_ $t _ $f>]) };
    (@off $t:ident $f:ident $cf:ident) => { pastey::paste!(c::[<OFFSETOF_ $t _ $cf>]) };
}

/// C constants by name: `ibv_qp_attr_mask`, `ibv_event_type`, the `IBV_WC_EX_WITH_*` flags,
/// and a few more.
mod consts;
/// C entry points: `c_entry!`, so that no panic unwinds into C.
mod entry;
/// verbs.h's inline verbs, which rdma-sys 0.3 gets wrong on 64-bit (`verbs_get_ctx`), written
/// again.
mod inline;
/// Every Rust mirror of a C structure checked against the C layout, and the crate's own mirror
/// of `struct ibv_async_event`.
mod layout;

pub use consts::*;
pub(crate) use entry::*;
pub(crate) use inline::*;
pub use layout::*;

#[cfg(test)]
mod tests {
    /// The layout checked in for docs.rs (build.rs uses it there when the headers are missing)
    /// is the one measured from this build's headers.
    #[test]
    #[cfg(all(
        target_arch = "x86_64",
        target_os = "linux",
        not(typed_verbs_checked_in_layout)
    ))]
    fn the_checked_in_layout_is_the_measured_one() {
        let values = |text: &'static str| -> Vec<&'static str> {
            text.lines()
                .filter(|l| l.starts_with("pub const"))
                .collect()
        };
        let measured = values(include_str!(concat!(env!("OUT_DIR"), "/c_layout.rs")));
        let checked_in = values(include_str!("../../c_layout/x86_64-linux.rs"));
        assert!(measured.len() > 100, "{measured:?}");
        assert_eq!(
            checked_in, measured,
            "c_layout/x86_64-linux.rs is stale: copy OUT_DIR/c_layout.rs's constants into it"
        );
    }

    crate::ffi::c_entry! {
        fn panics(n: i32) -> i32 = on_panic(-libc::EIO) {
            if n > 0 {
                panic!("a bug in a C entry point");
            }
            n
        }
        fn panics_without_value() = on_panic(()) {
            panic!("a bug in a C entry point that returns nothing");
        }
    }

    #[test]
    fn a_panic_in_a_c_entry_point_is_its_failure_value() {
        // SAFETY: the functions have no preconditions.
        unsafe {
            assert_eq!(panics(0), 0);
            assert_eq!(panics(1), -libc::EIO);
            panics_without_value();
        }
    }
}
