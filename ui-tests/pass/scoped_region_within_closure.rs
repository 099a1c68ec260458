// Neighbour of scoped_region_escapes and sge_outlives_scoped_region: the region and its SGEs are
// used inside the closure (posting, copies), and what leaves it is plain data: a result, the
// region as a peer sees it (an rkey a peer may hold after the scope is checked by the device
// against its registered regions: a deregistered key fails the request).
use typed_verbs::{Access, Context, Mr, Pd, RemoteMr};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let (len, remote): (u32, RemoteMr<typed_verbs::access!(REMOTE_WRITE)>) =
        Mr::scoped(&pd, &mut buf, Access::REMOTE_WRITE, |mr| {
            mr.write(0, b"inside")?;
            let sge = mr.sge(0..6).expect("in range"); // post work requests naming it here
            Ok::<_, typed_verbs::Error>((sge.length(), mr.remote()))
        })??;
    assert_eq!((len, remote.len()), (6, 64));
    assert_eq!(&buf[..6], b"inside");
    Ok(())
}
