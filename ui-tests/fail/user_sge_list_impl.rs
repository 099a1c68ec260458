// A user's SgeList that claims to fit a cap of 1 (FITS, so no check when posted) while it
// hands over three SGEs: the trait is sealed, only the crate's lists implement it.
use typed_verbs::access::Yes;
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, Rc, SendWr, Sge, SgeList};

#[derive(Clone, Copy)]
struct Three<'a>(&'a [Sge<'a>; 3]);

impl<const CAP: usize> SgeList<CAP> for Three<'_> {
    const FITS: bool = true;
    type LocalWrite = Yes;
    fn into_slice<'x>(self) -> &'x [Sge<'x>]
    where
        Self: 'x,
    {
        self.0
    }
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let _qp = qp.to_init(init)?;
    let three = [mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap(), mr.sge(16..24).unwrap()];
    let _wr = SendWr::<Rc, 1>::send(1, Three(&three));
    Ok(())
}
