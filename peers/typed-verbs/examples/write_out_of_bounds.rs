// An RDMA write of 8 bytes at offset 4092 of a 4096-byte remote region (4 bytes past its end).
use typed_verbs::prelude::*;

fn main() {
    peer_typed_verbs::report(
        (|| -> std::result::Result<String, Box<dyn std::error::Error>> {
            let ctx = Context::open(&peer_typed_verbs::device())?;
            let pd = Pd::new(&ctx)?;
            let cq = Cq::builder(&ctx).cqe(8).build()?;
            let (a, b) = (
                Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
                Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
            );
            let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
            let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
            let _b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
            let src = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
            let target = Mr::new(
                &pd,
                PageBuf::new(4096)?,
                Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            )?;
            let remote = target
                .remote()
                .at(4092, 8)
                .ok_or("RemoteRegion::at(4092, 8) is None: past the region's end")?;
            a.post_send(&SendWr::rdma_write(1, &[src.sge(0..8).unwrap()], remote))?;
            Ok("the write was posted".into())
        })(),
    );
}
