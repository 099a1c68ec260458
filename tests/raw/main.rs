//! The raw verbs level (`typed_verbs::raw`) in one test binary: data movement (data_raw), the
//! extended QP's `ibv_wr_*` batches (qp_ex_raw), the outcomes rxe's timers decide (timing_raw)
//! and the rules the typed layer encodes, as the device answers them (verbs_rules).

#[path = "../common/mod.rs"]
mod common;

mod data_raw;
mod qp_ex_raw;
mod timing_raw;
mod verbs_rules;
