// Neighbour of free_buffer_while_registered and register_borrowed_buffer: an owned buffer is
// registered by moving it into the region and comes back from `destroy`; a borrowed buffer is
// registered inside `Mr::scoped` and is the caller's again when the scope returns. Meanwhile
// the region is reached through copies.
use typed_verbs::{Access, Context, Mr, PageBuf, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    mr.write(0, &[7; 8])?;
    let buf: Vec<u8> = mr.destroy()?;
    assert_eq!(buf[..8], [7; 8]);
    drop(buf);

    let page = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    let page: PageBuf = page.destroy()?;
    assert_eq!(page.len(), 4096);

    let mut borrowed = vec![0u8; 64];
    Mr::scoped(&pd, &mut borrowed, Access::LOCAL_WRITE, |mr| mr.write(0, &[9; 8]))??;
    assert_eq!(borrowed[..8], [9; 8]);
    drop(borrowed);
    Ok(())
}
