// Natural code: a worker struct that owns a share of its CQ and that CQ's one right to poll
// (`ArcPoller`), moved into its thread, polling with a generated loop; the CQ is also what the
// QPs use. No borrow to carry.
use std::sync::Arc;
use typed_verbs::prelude::*;
use typed_verbs::ArcPoller;

completion_record! {
    struct Done { wr_id }
    max_batch = 16;
}

struct Worker {
    poller: ArcPoller<'static, Standard>,
    done: usize,
}

impl Worker {
    fn run(&mut self) -> Result<usize> {
        self.done += Done::poll(&mut self.poller, |_| ())?;
        self.poller.cq().req_notify(false).ok();
        Ok(self.done)
    }
}

fn main() -> Result<()> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(16).build()?);
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?; // the QP keeps the CQ alive too
    let mut worker = Worker { poller: cq.arc_poller()?, done: 0 };
    let done = std::thread::spawn(move || worker.run()).join().expect("worker")?;
    assert_eq!(done, 0);
    drop(qp);
    Ok(())
}
