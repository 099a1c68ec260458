#![allow(dead_code)]

include!("../../../../ui-tests/common.rs");
