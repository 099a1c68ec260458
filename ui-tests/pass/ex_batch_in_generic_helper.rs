// Neighbour of ex_op_in_generic_code and ex_batch_to_thread: a helper generic over the send ops
// with the bound that names the op, fed data computed on another thread.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::{qp::ex::HasRdmaWrite, send_ops, wr::PostBatch};

fn write<O: HasRdmaWrite>(b: &mut PostBatch<'_, Rc, O, 2>, data: &[u8], at: RemoteAddr<typed_verbs::access!(REMOTE_WRITE)>) -> Result<()> {
    b.rdma_write(1, at).signaled().inline(data)
}

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND | RDMA_WRITE)>(&pd, &cq)?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?; // the QP's PD
    let data = std::thread::spawn(|| *b"computed").join().unwrap();
    qp.post_batch(|b| write(b, &data, mr.remote().at(0, 8).unwrap()))?;
    common::expect_successes(&cq, 1)?;
    let mut got = [0; 8];
    mr.read(0, &mut got)?;
    assert_eq!(&got, b"computed");
    Ok(())
}
