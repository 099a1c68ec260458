// Neighbour of post_send_chain_before_rts: a chain of sends posted on an RC QP in RTS
// (connected to itself) arrives in order; an empty chain posts nothing and is Ok.
mod common;
use typed_verbs::{Access, Mr, Qp, Rc, SendWr};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let tx = Mr::new(&pd, b"firstsecond".to_vec(), Access::LOCAL_WRITE)?;
    let rx = Mr::new(&pd, vec![0u8; 16], Access::LOCAL_WRITE)?;

    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(4).max_recv_wr(4).build()?;
    let qp = common::connect_to_itself(qp)?;

    qp.post_recv(1, &[rx.sge(0..5).unwrap()])?;
    qp.post_recv(2, &[rx.sge(5..11).unwrap()])?;
    qp.post_send_chain::<0>(&[])?;
    let (first, second) = ([tx.sge(0..5).unwrap()], [tx.sge(5..11).unwrap()]);
    qp.post_send_chain(&[SendWr::send(3, &first).signaled(), SendWr::send(4, &second).signaled()])
        ?;
    common::expect_successes(&cq, 4)?;
    let mut out = [0u8; 11];
    rx.read(0, &mut out)?;
    assert_eq!(&out, b"firstsecond");
    Ok(())
}
