// Neighbour of scoped_region_escapes: the region is used inside the closure (posting, copies),
// and what leaves it is plain data: a result, an Sge, the region as a peer sees it. The device
// checks those against its registered regions, so using them later is safe (a deregistered
// key fails the work request).
use typed_verbs::{AccessFlags, Context, Mr, Pd, RemoteMr, Sge};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let (sge, remote): (Sge, RemoteMr) =
        Mr::scoped(&pd, &mut buf, AccessFlags::REMOTE_WRITE, |mr| {
            mr.write(0, b"inside")?;
            Ok::<_, typed_verbs::Error>((mr.sge(0..6).expect("in range"), mr.remote()))
        })??;
    assert_eq!((sge.length(), remote.len), (6, 64));
    assert_eq!(&buf[..6], b"inside");
    Ok(())
}
