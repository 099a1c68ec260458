// Neighbour of the flag cases and unknown_wc_flag: each flag alone, the standard set, and all.
use typed_verbs::{cq_ex::flags, wc_flags, AllFields, Context, CqEx, Error, Standard, WcFlags};

fn make<F: WcFlags>(ctx: &Context, bits: u64) -> Result<(), Error> {
    let cq = CqEx::<F>::builder(ctx).cqe(4).build()?;
    assert_eq!(cq.wc_flags(), bits);
    Ok(())
}

fn main() -> Result<(), Error> {
    let ctx = Context::open("sw0")?;
    // Each flag alone: `wc_flags!(NAME)` has the bit `flags::NAME`.
    macro_rules! each {
        ($($name:ident)*) => { $(make::<wc_flags!($name)>(&ctx, flags::$name)?;)* };
    }
    each!(BYTE_LEN IMM QP_NUM SRC_QP SLID SL DLID_PATH_BITS COMPLETION_TIMESTAMP CVLAN FLOW_TAG
          COMPLETION_TIMESTAMP_WALLCLOCK);
    make::<wc_flags!(IBV_WC_EX_WITH_IMM)>(&ctx, flags::IMM)?;
    make::<wc_flags!()>(&ctx, 0)?;
    make::<Standard>(&ctx, flags::STANDARD)?;
    make::<wc_flags!(STANDARD)>(&ctx, flags::STANDARD)?;
    make::<AllFields>(&ctx, flags::ALL)?;
    Ok(())
}
