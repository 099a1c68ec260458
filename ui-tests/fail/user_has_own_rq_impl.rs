// A user's HasOwnRq impl that would enable post_recv on a QP whose receives come from an SRQ:
// the trait is sealed, only the crate's OwnRq implements it.
use typed_verbs::access::No;
use typed_verbs::wr::HasOwnRq;
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, Rc, Sge, Srq, UsesSrq};

struct List<'a>(&'a [Sge<'a, No>]);

impl<'a> HasOwnRq<List<'a>> for UsesSrq {
    fn recv_list<'x>(list: List<'a>) -> (&'x [Sge<'x, No>], bool)
    where
        List<'a>: 'x,
    {
        (list.0, true)
    }
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(4).build()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let _qp = qp.to_init(init)?;
    // `_qp.post_recv(1, List(..))` would need the impl; it is refused above.
    let _list = List(&[mr.sge(0..64).unwrap().read_only()]);
    Ok(())
}
