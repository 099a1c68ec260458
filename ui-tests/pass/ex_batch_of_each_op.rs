// Neighbour of the ex_* fail cases: every op of an RC QP created for all of them, each with the
// data its op takes (SGE, SGE list, inline for sends and writes; writable SGEs for a read; an
// AtomicResult for the atomics) and the flags it may carry, posted in one batch.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::send_ops;

type All = send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_WRITE_WITH_IMM | RDMA_READ | ATOMIC_CMP_AND_SWP | ATOMIC_FETCH_AND_ADD);

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<All>(&pd, &cq)?;
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, rights)?;
    mr.write(0, b"payload!")?;
    for i in 0..3 {
        qp.post_recv(100 + i, &[mr.sge(2048..2112).unwrap()])?;
    }
    let src = mr.sge(0..8).unwrap();
    qp.post_batch(|b| {
        b.send(1).signaled().solicited().sge(src)?;
        b.send_with_imm(2, 7).signaled().inline(b"imm")?;
        b.rdma_write(3, mr.remote().at(1024, 8).unwrap()).signaled().sges(&[src])?;
        b.rdma_write_with_imm(4, mr.remote().at(1032, 8).unwrap(), 9).signaled().solicited().inline(b"inline!!")?;
        b.rdma_read(5, mr.remote().at(1024, 8).unwrap()).signaled().fenced().sge(mr.sge(512..520).unwrap())?;
        b.compare_swap(6, mr.remote().atomic_at(3072).unwrap(), 0, 5).signaled().result(&mr.atomic_result(3080).unwrap())?;
        b.fetch_add(7, mr.remote().atomic_at(3072).unwrap(), 1).signaled().result(&mr.atomic_result(3088).unwrap())
    })?;
    common::expect_successes(&cq, 7 + 3)?;
    let mut read = [0; 8];
    mr.read(512, &mut read)?;
    assert_eq!(&read, b"payload!");
    Ok(())
}
