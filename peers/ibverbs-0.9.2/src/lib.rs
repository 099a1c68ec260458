//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse. The run-time ones print one `PEER-VERDICT` line.
use std::error::Error;

pub type Res<T> = Result<T, Box<dyn Error>>;

/// Opens the first RDMA device.
pub fn open() -> Res<ibverbs::Context> {
    let devices = ibverbs::devices()?;
    Ok(devices.iter().next().ok_or("no RDMA device")?.open()?)
}

/// Prints the program's verdict: `runtime-error` with the error, or `silent` with what happened.
pub fn report(result: Res<String>) {
    match result {
        Ok(what) => println!("PEER-VERDICT silent {what}"),
        Err(e) => {
            // The error with its sources (a wrapper's message alone may hide the errno).
            let mut text = e.to_string();
            let mut source = e.source();
            while let Some(s) = source {
                text += &format!(": {s}");
                source = s.source();
            }
            println!("PEER-VERDICT runtime-error {text}")
        }
    }
}
