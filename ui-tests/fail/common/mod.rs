//! The setup the cases in this folder share: `../common.rs`, included here for `mod common;`.
#![allow(dead_code)]

include!("../../common.rs");
