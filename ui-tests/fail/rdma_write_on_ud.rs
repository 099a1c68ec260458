// An RDMA write work request for a UD QP.
use typed_verbs::{Access, Context, Mr, Pd, SendWr, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::REMOTE_WRITE | Access::REMOTE_READ)?;
    let sgl = [mr.sge(0..64).unwrap()];
    let remote = mr.remote().at(0, 64).unwrap();
    let _wr = SendWr::<Ud>::rdma_write(1, &sgl, remote);
    Ok(())
}
