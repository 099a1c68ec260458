// Neighbour of send_wr_for_ud_on_rc: `post_send` takes the QP's own work request as `&wr`, and
// as `&wr` where `wr` is already a reference (`for wr in &wrs`), as when it took a `&SendWr` and
// the compiler dereferenced the argument to it. Each arrives.
mod common;
use typed_verbs::{Access, Context, Cq, Mr, Pd, Qp, Rc, SendWr};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(16).build()?;
    let tx = Mr::new(&pd, b"abcd".to_vec(), Access::LOCAL_WRITE)?;
    let rx = Mr::new(&pd, vec![0u8; 4], Access::LOCAL_WRITE)?;

    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?;
    let qp = common::connect_to_itself(qp)?;

    let sges: Vec<[typed_verbs::Sge; 1]> = (0..4).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    for i in 0..4 {
        qp.post_recv(10 + i, &[rx.sge(i as usize..i as usize + 1).unwrap()])?;
    }
    let wrs: Vec<SendWr<'_, Rc>> = sges[..2].iter().zip(0..).map(|(s, i)| SendWr::send(i, s).signaled()).collect();
    for wr in &wrs {
        qp.post_send(&wr)?; // `wr` is a `&SendWr`: this is a `&&SendWr`
    }
    let third = SendWr::send(2, &sges[2]).signaled();
    qp.post_send(&&third)?;
    qp.post_send(&SendWr::send(3, &sges[3]).signaled())?;

    common::expect_successes(&cq, 8)?;
    let mut out = [0u8; 4];
    rx.read(0, &mut out)?;
    assert_eq!(&out, b"abcd");
    Ok(())
}
