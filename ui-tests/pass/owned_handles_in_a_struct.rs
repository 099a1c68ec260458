// Owned handles: a server keeps its context, PD, CQ, QPs and regions in one struct without a
// lifetime parameter, returns it from its setup function, keeps QPs in a map keyed by QP
// number, and moves the whole struct into another thread or an async task. The parents are
// shared through `Arc`; every child keeps what it was created from alive.
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use typed_verbs::{Access, Context, CqEx, Mr, PageBuf, Pd, Qp, Rc, Standard, Srq, Ud, UsesSrq};

struct Server {
    ctx: Arc<Context>,
    pd: Arc<Pd<'static>>,
    cq: Arc<CqEx<'static, Standard>>,
    srq: Arc<Srq<'static>>,
    conns: HashMap<u32, Qp<'static, Rc>>,
    datagram: Qp<'static, Ud, UsesSrq>,
    buffers: Mr<'static>,
}

fn setup() -> Result<Server, typed_verbs::Error> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(64).build()?);
    let srq = Arc::new(Srq::builder(&pd).max_wr(16).build()?);
    let mut conns = HashMap::new();
    for _ in 0..4 {
        let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
        conns.insert(qp.qp_num(), qp);
    }
    let datagram = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let buffers = Mr::new(&pd, PageBuf::new(1 << 16)?, Access::LOCAL_WRITE)?;
    Ok(Server { ctx, pd, cq, srq, conns, datagram, buffers })
}

impl Server {
    fn add(&mut self) -> Result<u32, typed_verbs::Error> {
        let qp = Qp::<Rc>::builder(&self.pd, &self.cq, &self.cq).build()?;
        let n = qp.qp_num();
        self.conns.insert(n, qp);
        Ok(n)
    }
    fn poll(&self) -> Result<usize, typed_verbs::Error> {
        let mut poller = self.cq.poller()?;
        Ok(poller.poll_batch(|_batch| 1)?.unwrap_or(0))
    }
}

/// The bounds of `tokio::spawn`.
fn spawn<F: Future + Send + 'static>(f: F) -> F {
    f
}

fn main() -> Result<(), typed_verbs::Error> {
    let mut server = setup()?;
    let n = server.add()?;
    assert!(server.conns.contains_key(&n));
    let server = std::thread::spawn(move || {
        assert_eq!(server.poll().unwrap(), 0);
        server
    })
    .join()
    .unwrap();
    let task = spawn(async move {
        let _ = (&server.ctx, &server.srq, &server.datagram, &server.buffers);
        server.poll()
    });
    drop(task); // not run here: it shows that the server is a `Send + 'static` future's state
    Ok(())
}
