//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse. The run-time ones print one `PEER-VERDICT` line.
use std::fmt::Display;

/// The device the run-time programs open: `TYPED_VERBS_DEVICE`, or the software device `sw0`.
pub fn device() -> String {
    std::env::var("TYPED_VERBS_DEVICE").unwrap_or_else(|_| "sw0".into())
}

/// Prints the program's verdict: `runtime-error` with the error, or `silent` with what happened.
pub fn report<E: Display>(result: Result<String, E>) {
    match result {
        Ok(what) => println!("PEER-VERDICT silent {what}"),
        Err(e) => println!("PEER-VERDICT runtime-error {e}"),
    }
}
