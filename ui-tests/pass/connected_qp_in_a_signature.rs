// A connected QP named in a signature from the prelude (or the crate root), without reaching
// into `qp_state`: the states, QP types, receive sides and threading are all there.
use typed_verbs::prelude::*;

type Connected<'a> = Qp<'a, Rc, OwnRq, Shared, (), Rts>;

fn connect<'a>(ctx: &Context, qp: Qp<'a, Rc>, dest_qp_num: u32) -> Result<Connected<'a>> {
    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let qp: Qp<'a, Rc, OwnRq, Shared, (), Init> =
        qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?;
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num, rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let qp: Qp<'a, Rc, OwnRq, Shared, (), Rtr> = qp.to_rtr(rtr)?;
    qp.to_rts(RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 })
}

fn reset(qp: Connected<'_>) -> Result<Qp<'_, Rc, OwnRq, Shared, (), typed_verbs::Reset>> {
    let qp: Qp<'_, Rc, OwnRq, Shared, (), ErrorState> = qp.to_error()?;
    qp.to_reset()
}

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let n = qp.qp_num();
    let qp = connect(&ctx, qp, n)?;
    let qp: Qp<'_, Rc, OwnRq, Shared, (), Reset> = reset(qp)?;
    drop(qp);
    Ok(())
}
