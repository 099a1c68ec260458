// An RDMA write of 8 bytes at offset 4092 of a 4096-byte remote region (4 bytes past its end),
// after the same write of the region's last 8 bytes (at offset 4088), which must land.
use std::time::{Duration, Instant};

use peer_typed_verbs::{Failure, Outcome, Step};
use typed_verbs::prelude::*;

fn main() {
    peer_typed_verbs::report((|| -> Outcome<String> {
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
        src.write(0, &[7; 8])?;
        let target = Mr::new(
            &pd,
            PageBuf::new(4096)?,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )?;
        let sgl = [src.sge(0..8).ok_or("the source's SGE")?];
        // The region's last 8 bytes: the write completes and lands.
        let last = target.remote().at(4088, 8).ok_or("RemoteMr::at(4088, 8)")?;
        a.post_send(&SendWr::rdma_write(1, &sgl, last).signaled())
            .setup("the write at 4088")?;
        let (start, mut wc) = (Instant::now(), [const { WorkCompletion::new() }; 1]);
        let done = loop {
            if let [c] = cq.poll(&mut wc)? {
                break c;
            }
            if start.elapsed() > Duration::from_secs(5) {
                return Err(Failure::Setup(
                    "the write at 4088: no completion within 5 s".into(),
                ));
            }
        };
        if done.success().is_none() {
            let e = format!("the write at 4088: completion {:?}", done.status());
            return Err(Failure::Setup(e));
        }
        let mut landed = [0; 8];
        target.read(4088, &mut landed)?;
        if landed != [7; 8] {
            return Err(Failure::Setup(
                "the write at 4088 completed, but did not land".into(),
            ));
        }
        // 4 bytes past the end: no address to write to.
        let past = target.remote().at(4092, 8).ok_or(
            "RemoteMr::at(4092, 8) (the same write at 4088, the last 8 bytes, landed) is None: past the region's end",
        );
        let past = past.misuse("RDMA write of 8 bytes at 4092")?;
        a.post_send(&SendWr::rdma_write(2, &sgl, past))
            .misuse("post_send")?;
        Ok("the write was posted".into())
    })());
}
