// Neighbour of free_buffer_while_registered: the buffer is used again once its region is
// deregistered, and a region is read through copies meanwhile.
use typed_verbs::{AccessFlags, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let mr = Mr::new(&pd, &mut buf, AccessFlags::LOCAL_WRITE)?;
    mr.write(0, &[7; 8])?;
    mr.destroy().map_err(|e| e.error)?;
    assert_eq!(buf[..8], [7; 8]);
    drop(buf);
    Ok(())
}
