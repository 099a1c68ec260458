// Neighbour of user_sge_list_impl, user_has_own_rq_impl and user_transition_attr_impl: the
// sealed traits stay usable as bounds in user code; their impls are the crate's (the SGE lists
// `&[Sge; N]`, `&[Sge]` and `&Vec<Sge>`, `OwnRq`, the transitions' attribute structs).
use typed_verbs::qp_state::{Init, QpState};
use typed_verbs::wr::{HasOwnRq, LocalWriteList, RecvReady};
use typed_verbs::{
    Access, AccessFlags, ConnectedInit, Context, Cq, Mr, OwnRq, Pd, Qp, QpType, Rc, RecvSide, Sge, SgeList, Shared,
};

/// Posts a receive on any QP that has its own receive queue, with any list that fits it.
fn recv_into<T: QpType, R: RecvSide + HasOwnRq<L>, St: QpState + RecvReady, L: LocalWriteList>(
    qp: &Qp<'_, T, R, Shared, (), St>,
    wr_id: u64,
    list: L,
) -> typed_verbs::Result<()> {
    qp.post_recv(wr_id, list)
}

/// The number of SGEs in any list for a cap of 2, and whether it was proven to fit.
fn len_of<L: SgeList<2>>(list: L) -> (usize, bool) {
    (list.into_slice().len(), L::FITS)
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp: Qp<'_, Rc, OwnRq, Shared, (), Init> =
        Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(4).build()?.to_init(init)?;
    let one = [mr.sge(0..8).unwrap()];
    let slice: &[Sge] = &one;
    let vec = vec![mr.sge(8..16).unwrap()];
    recv_into(&qp, 1, &one)?;
    recv_into(&qp, 2, slice)?;
    recv_into(&qp, 3, &vec)?;
    let lens = (len_of(&one), len_of(slice), len_of(&vec), len_of(&[one[0], one[0]]));
    assert_eq!(lens, ((1, true), (1, false), (1, false), (2, true)));
    Ok(())
}
