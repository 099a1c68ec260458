// A helper generic over the send ops that posts an RDMA write without the bound that says the
// ops have it.
use typed_verbs::{wr::PostBatch, Rc, RemoteAddr, Sge};

fn write<O>(b: &mut PostBatch<'_, Rc, O>, sge: Sge<'_>, at: RemoteAddr<typed_verbs::access!(REMOTE_WRITE)>) -> typed_verbs::Result<()> {
    b.rdma_write(1, at).sge(sge)
}

fn main() {
    let _ = write::<typed_verbs::send_ops!(SEND)>;
}
