// ibv_reg_mr(3): IBV_ACCESS_LOCAL_WRITE lets the device write the region, which a receive does.
// An SGE of a region registered without it (here REMOTE_READ only) is `Sge<'_, No>`, and
// `post_recv` takes only lists the device may write. Neighbour: typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?.to_init(init)?;
    let table = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    qp.post_recv(1, &[table.sge(0..64).unwrap()])?;
    Ok(())
}
