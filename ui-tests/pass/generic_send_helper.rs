// Natural generic code: a helper over any connected QP type (RC, UC) and any receive side that
// takes plain sends posts a send and an RDMA write, and `connect` brings up RC and UC pairs
// alike. Neighbour of plain_send_in_generic_code.
use typed_verbs::connect::Connectable;
use typed_verbs::prelude::*;
use typed_verbs::slots::PlainSendQueue;
use typed_verbs::wr::RdmaWriteCapable;
use typed_verbs::RemoteAddr;

fn send_and_write<T: RdmaWriteCapable + Connectable, R: PlainSendQueue>(
    qp: &Qp<'_, T, R, Shared, (), Rts>,
    sge: Sge<'_>,
    at: RemoteAddr<access!(REMOTE_WRITE)>,
) -> Result<()> {
    qp.post_send(&SendWr::send(1, &[sge]).signaled())?;
    qp.post_send(&SendWr::rdma_write(2, &[sge], at).signaled())
}

fn pair<T: RdmaWriteCapable + Connectable>() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let (a, b) = (Qp::<T>::builder(&pd, &cq, &cq).build()?, Qp::<T>::builder(&pd, &cq, &cq).build()?);
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    b.post_recv(1, &[mr.sge(64..128).unwrap()])?;
    send_and_write(&a, mr.sge(0..8).unwrap(), mr.remote().at(256, 8).unwrap())
}

fn main() -> Result<()> {
    pair::<Rc>()?;
    pair::<Uc>()
}
