// Generic code over a region's rights `A` that posts a receive into the region: without a bound
// that says the region has LOCAL_WRITE, its SGEs may be `Sge<'_, No>`, and the error names the
// bound to add (`A: LocalWriteAccess`). Neighbour: typed_access_rights (`recv_into`).
use typed_verbs::access::Rights;
use typed_verbs::prelude::*;

fn recv_into<A: Rights>(qp: &Qp<'_, Rc, OwnRq, Shared, (), Init>, mr: &Mr<'_, PageBuf, A>) -> Result<()> {
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])
}

fn main() {
    let _ = recv_into::<access!(LOCAL_WRITE)>;
}
