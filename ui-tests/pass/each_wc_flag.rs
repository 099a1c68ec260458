// Neighbour of the flag cases and unknown_wc_flag: each flag alone, the standard set, and all.
use typed_verbs::{cq_ex::flags, wc_flags, AllFields, Context, CqEx, Error, Standard, WcFlags};

fn make<F: WcFlags>(ctx: &Context, bits: u64) -> Result<(), Error> {
    let cq = CqEx::<F>::builder(ctx).cqe(4).build()?;
    assert_eq!(cq.wc_flags(), bits);
    Ok(())
}

fn main() -> Result<(), Error> {
    let ctx = Context::open("sw0")?;
    make::<wc_flags!(BYTE_LEN)>(&ctx, flags::BYTE_LEN)?;
    make::<wc_flags!(IMM)>(&ctx, flags::IMM)?;
    make::<wc_flags!(QP_NUM)>(&ctx, flags::QP_NUM)?;
    make::<wc_flags!(SRC_QP)>(&ctx, flags::SRC_QP)?;
    make::<wc_flags!(SLID)>(&ctx, flags::SLID)?;
    make::<wc_flags!(SL)>(&ctx, flags::SL)?;
    make::<wc_flags!(DLID_PATH_BITS)>(&ctx, flags::DLID_PATH_BITS)?;
    make::<wc_flags!(COMPLETION_TIMESTAMP)>(&ctx, flags::COMPLETION_TIMESTAMP)?;
    make::<wc_flags!(CVLAN)>(&ctx, flags::CVLAN)?;
    make::<wc_flags!(FLOW_TAG)>(&ctx, flags::FLOW_TAG)?;
    make::<wc_flags!(COMPLETION_TIMESTAMP_WALLCLOCK)>(&ctx, flags::COMPLETION_TIMESTAMP_WALLCLOCK)?;
    make::<wc_flags!(IBV_WC_EX_WITH_IMM)>(&ctx, flags::IMM)?;
    make::<wc_flags!()>(&ctx, 0)?;
    make::<Standard>(&ctx, flags::STANDARD)?;
    make::<wc_flags!(STANDARD)>(&ctx, flags::STANDARD)?;
    make::<AllFields>(&ctx, flags::ALL)?;
    Ok(())
}
