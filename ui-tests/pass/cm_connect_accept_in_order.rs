// The neighbours of the cm_* fail cases: bind then listen, resolve_addr then resolve_route then
// connect, accept on the connect request, receives posted on the request's QP in INIT before
// the accept, sends once the connection is up (RTS). Runs on the software device.
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnParam, EventChannel, Tcp};
use typed_verbs::{Access, Context, Cq, Mr, Pd, Qp, Rc, SendWr, WorkCompletion};

fn main() -> Result<(), typed_verbs::Error> {
    let t = Duration::from_secs(5);
    let ctx = Context::open("sw0")?;
    let (pd, cq) = (Pd::new(&ctx)?, Cq::builder(&ctx).cqe(8).build()?);
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let ch = EventChannel::new(&ctx)?;
    let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(8)?;
    let addr = listener.local_addr().unwrap();
    std::thread::scope(|s| {
        let server = s.spawn(|| -> typed_verbs::Result<()> {
            let req = listener.get_request(t)?;
            let qp = req.init_qp(Qp::<Rc>::builder(&pd, &cq, &cq).build()?)?;
            qp.post_recv(1, &[mr.sge(0..32).unwrap()])?; // in INIT: allowed
            let conn = req.accept(qp, &ConnParam::default(), t)?;
            conn.qp().post_send(&SendWr::send(2, &[mr.sge(32..40).unwrap()]))?; // in RTS
            std::thread::sleep(Duration::from_millis(200));
            Ok(())
        });
        let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, addr, t)?.resolve_route(t)?;
        let qp = id.init_qp(Qp::<Rc>::builder(&pd, &cq, &cq).build()?)?;
        qp.post_recv(3, &[mr.sge(40..64).unwrap()])?;
        let conn = id.connect(qp, &ConnParam::default(), t)?;
        conn.qp().post_send(&SendWr::send(4, &[mr.sge(32..40).unwrap()]))?;
        let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
        let (mut n, start) = (0, std::time::Instant::now());
        while n < 2 && start.elapsed() < t {
            n += cq.poll(&mut wc)?.len();
        }
        assert_eq!(n, 2, "both receives completed");
        server.join().unwrap()
    })
}
