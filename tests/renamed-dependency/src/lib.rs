//! typed-verbs under another name (`tv`, see Cargo.toml): `wc_flags!` and `completion_record!`
//! must expand to paths through `::tv`, since `::typed_verbs` does not exist in this crate.
//! Building this crate is most of the test; its unit test polls what the macros generated.

/// The flag set `wc_flags!` writes, under the renamed crate.
pub type Flags = tv::wc_flags!(BYTE_LEN | IMM | QP_NUM);

tv::completion_record! {
    /// A receive.
    pub struct Recv { wr_id, opcode, byte_len, imm_data, qp_num }
    /// A failed work request.
    pub struct Failed { wr_id, status, vendor_err }
    max_batch = 4;
}

tv::completion_record! {
    /// A receive into a slot (the slot form of the macro).
    pub struct SlotRecv { slot, byte_len }
    max_batch = 4;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tv::{software, Context, Cq, CqEx, InjectedCompletion, WcOpcode, WcStatus};

    #[test]
    fn the_macros_expand_through_the_renamed_crate() {
        let ctx = Context::open(software::DEFAULT_DEVICE).expect("sw0");
        let mut cq = CqEx::<Flags>::builder(&ctx).cqe(8).build().expect("cq_ex");
        let c = InjectedCompletion::success(7, WcOpcode::RECV)
            .byte_len(64)
            .imm_data(0xbeef)
            .qp_num(3);
        software::inject(&cq, c).expect("inject");
        software::inject(
            &cq,
            InjectedCompletion::error(8, WcStatus::REM_ACCESS_ERR, 9),
        )
        .expect("inject");
        let mut seen = Vec::new();
        let n = Recv::poll(&mut cq, |r| {
            seen.push(r.map(|r| r.wr_id()).map_err(|e| e.wr_id))
        })
        .expect("poll");
        assert_eq!((n, seen), (2, vec![Ok(7), Err(8)]));

        let legacy = Cq::builder(&ctx).cqe(8).build().expect("cq");
        software::inject(
            &legacy,
            InjectedCompletion::success(5, WcOpcode::RECV).byte_len(1),
        )
        .expect("inject");
        let mut got = None;
        Recv::poll_legacy(&legacy, |r| got = Some(r.expect("success").byte_len)).expect("poll");
        assert_eq!(got, Some(1));
    }
}
