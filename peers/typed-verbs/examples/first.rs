// The README's first program (an RC pair in loopback, a 4 KiB send and receive, an RDMA write of
// 5 bytes read back), on the device TYPED_VERBS_DEVICE names (sw0 when unset).
use std::sync::Arc;
use typed_verbs::prelude::*;
completion_record! {
    /// What the program reads of a completion: its slot back, and what happened.
    struct Done { slot, opcode, byte_len }
    max_batch = 8;
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let dev = std::env::var("TYPED_VERBS_DEVICE").unwrap_or_else(|_| "sw0".into());
    let ctx = Arc::new(Context::open(&dev)?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx)
        .cqe(16)
        .slots()
        .build()?;
    let qp = || Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build();
    let (a, b) = (qp()?, qp()?);
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?); // exchanged out of band
    let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?; // RESET -> INIT -> RTR -> RTS
    let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    // Zero-copy buffers: 4 KiB slots the program owns, as `&mut [u8]`, until it posts them.
    let mut slots = Slot::register(&pd, PageBuf::new(3 << 12)?, Access::LOCAL_WRITE, 4096)?;
    b.post_recv_slot(slots.pop().unwrap())?; // moves into b's receive queue
    let mut msg = slots.pop().unwrap();
    msg.fill(7); // a plain slice: no copy, no unsafe
    a.post_send_slot(msg, 4096)?;
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE; // an RDMA write's target:
    let target = Mr::new(&pd, PageBuf::new(4096)?, access)?; // a peer may write it, so no slice
    let mut data = slots.pop().unwrap();
    data[..5].copy_from_slice(b"hello");
    a.post_write_slot(data, 5, target.remote().at(0, 5).unwrap())?;
    let (mut poller, mut done) = (cq.poller()?, 0);
    while done < 3 {
        done += Done::try_poll(&mut poller, |c| {
            match c? {
                // a failed completion is an error: `?` hands it on
                r if r.opcode() == WcOpcode::RECV => assert!(r.received().iter().all(|&x| x == 7)),
                sent => drop(sent.into_slot()), // a sent slot comes back writable
            }
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    let mut landed = [0; 5];
    target.read(0, &mut landed)?;
    assert_eq!(&landed, b"hello");
    println!("first: ok on {dev}");
    Ok(())
}
