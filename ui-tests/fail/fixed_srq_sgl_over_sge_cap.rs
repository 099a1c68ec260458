// A fixed-size list of three SGEs posted to an SRQ whose type promises two.
use typed_verbs::{Access, Context, Mr, Pd, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let buf = vec![0u8; 48];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let srq = Srq::builder(&pd).max_wr(4).sge_cap::<2>().build()?;
    let sgl = [mr.sge(0..16).unwrap(), mr.sge(16..32).unwrap(), mr.sge(32..48).unwrap()];
    srq.post_recv(1, &sgl)?;
    Ok(())
}
