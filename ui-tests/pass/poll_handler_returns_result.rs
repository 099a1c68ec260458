// A poll handler that returns a Result: `try_poll` ends the batch at the first Err and returns
// it (into anyhow here, into the crate's Error or Box<dyn Error> alike); `let r = r?;` hands a
// failed completion on, as the error record is a std::error::Error.
use typed_verbs::prelude::*;
use typed_verbs::{software, InjectedCompletion};

completion_record! {
    /// What the program reads of a receive.
    pub struct Recv { wr_id, byte_len }
    max_batch = 8;
}

fn drain(cq: &mut CqEx<'_, Standard>, seen: &mut Vec<u64>) -> anyhow::Result<usize> {
    let n = Recv::try_poll(cq, |r| -> anyhow::Result<()> {
        let r = r?;
        anyhow::ensure!(r.byte_len() <= 64, "receive {} too long", r.wr_id());
        seen.push(r.wr_id());
        Ok(())
    })?;
    Ok(n)
}

fn main() -> anyhow::Result<()> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let recv = |id, len| InjectedCompletion::success(id, WcOpcode::RECV).byte_len(len);
    software::inject(&cq, recv(1, 16))?;
    software::inject(&cq, recv(2, 16))?;
    let mut seen = Vec::new();
    assert_eq!(drain(&mut cq, &mut seen)?, 2);
    assert_eq!(seen, [1, 2]);

    // The handler's error ends the batch; the completion after it stays for the next poll.
    software::inject(&cq, recv(3, 4096))?;
    software::inject(&cq, recv(4, 16))?;
    let e = drain(&mut cq, &mut seen).expect_err("receive 3 is too long");
    assert_eq!(e.to_string(), "receive 3 too long");
    assert_eq!(drain(&mut cq, &mut seen)?, 1);
    assert_eq!(seen, [1, 2, 4]);

    // A failed completion, handed on with `?`.
    software::inject(&cq, InjectedCompletion::error(5, WcStatus::WR_FLUSH_ERR, 0))?;
    let e = drain(&mut cq, &mut seen).expect_err("a flushed receive");
    assert!(e.to_string().starts_with("work completion failed"), "{e}");

    // The same handler shape into the crate's Error.
    software::inject(&cq, recv(6, 16))?;
    let n: Result<usize> = Recv::try_poll(&mut cq, |r| -> Result<()> {
        assert!(r.is_ok());
        Ok(())
    });
    assert_eq!(n?, 1);
    Ok(())
}
