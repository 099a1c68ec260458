//! What the runtime tests share, one module per concern:
//!
//! - [`device`]: opening the device named by `TYPED_VERBS_DEVICE` (the software device `sw0`
//!   when unset), visible SKIP and NOTE lines, and what a test needs the software device for;
//! - [`pair`]: loopback address vectors and connected QP pairs on one device;
//! - [`poll`]: polling with deadlines, and the expectations on errors tests share;
//! - [`leak`]: leak checks on the software device and a user context that counts its drops;
//! - [`raw`]: the raw verbs' bring-up (QPs to RTS through `ibv_modify_qp`) and their C constants.
//!
//! Without the `software-device` feature the test files that need the software device's hooks
//! compile to nothing (`#![cfg(feature = "software-device")]`), and so do the helpers here that
//! use them.
//!
//! Every test binary includes this module once (`mod common;`, or with `#[path]` from a
//! directory's main.rs) and uses only part of it.
#![allow(dead_code, unused_imports)]

pub mod device;
pub mod leak;
pub mod pair;
pub mod poll;
pub mod raw;

pub use device::*;
pub use leak::*;
pub use pair::*;
pub use poll::*;
