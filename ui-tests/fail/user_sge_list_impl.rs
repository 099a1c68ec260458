// A user's SgeList that claims to fit a cap of 1 (FITS, so no check when posted) while it
// hands over three SGEs: the trait is sealed, only the crate's lists implement it.
mod common;
use typed_verbs::access::Yes;
use typed_verbs::{Access, Rc, SendWr, Sge, SgeList};

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
    let mr = common::region(Access::LOCAL_WRITE)?;
    let three = [mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap(), mr.sge(16..24).unwrap()];
    let _wr = SendWr::<Rc, 1>::send(1, Three(&three));
    Ok(())
}
