// Natural code: a generated slot loop whose handler hands a failed completion on with `?`
// (`try_poll`; the error record is a `std::error::Error`), in a main returning a boxed error.
use std::sync::Arc;
use typed_verbs::prelude::*;
completion_record! {
    /// What the program reads of a completion: its slot back, and what happened.
    struct Done { slot, opcode, byte_len }
    max_batch = 8;
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
    let qp = || Qp::<Rc>::slot_builder(&pd, &cq, &cq).max_send_wr(4).build();
    let (a, b) = (qp()?, qp()?);
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
    let mut slots = Slot::register(&pd, PageBuf::new(3 << 12)?, Access::LOCAL_WRITE, 4096)?;
    b.post_recv_slot(slots.pop().unwrap())?;
    let mut msg = slots.pop().unwrap();
    msg.fill(7);
    a.post_send_slot(msg, 4096)?;
    let (mut poller, mut done) = (cq.poller()?, 0);
    while done < 2 {
        done += Done::try_poll(&mut poller, |c| {
            match c? {
                r if r.opcode() == WcOpcode::RECV => assert!(r.received().iter().all(|&x| x == 7)),
                sent => drop(sent.into_slot()),
            }
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    Ok(())
}
