//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse. The run-time ones print one `PEER-VERDICT` line, or `SETUP-FAILED` when a
//! step before the misuse fails (then there is no verdict).
use std::error::Error;

/// The result of a set-up helper (and of the compile-time programs' `main`).
pub type Res<T> = Result<T, Box<dyn Error>>;

/// Why a program stopped before its verdict.
pub enum Failure {
    /// A step before the misuse failed: the program has no verdict.
    Setup(String),
    /// The step under test returned an error: its label, then the error.
    Misuse(String),
}

/// An error that no step labelled as the misuse is a set-up failure.
impl<E: Into<Box<dyn Error>>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Setup(chain(&*e.into()))
    }
}

/// The result of a program: what happened, or why it stopped.
pub type Outcome<T> = Result<T, Failure>;

/// Labels the step of a result: `setup` (a failure means no verdict) or `misuse` (the step under
/// test: its error is the verdict's evidence, after the label).
pub trait Step<T> {
    fn setup(self, step: &str) -> Outcome<T>;
    fn misuse(self, step: &str) -> Outcome<T>;
}

impl<T, E: Into<Box<dyn Error>>> Step<T> for Result<T, E> {
    fn setup(self, step: &str) -> Outcome<T> {
        self.map_err(|e| Failure::Setup(format!("{step}: {}", chain(&*e.into()))))
    }
    fn misuse(self, step: &str) -> Outcome<T> {
        self.map_err(|e| Failure::Misuse(format!("{step}: {}", chain(&*e.into()))))
    }
}

/// The error with its sources (a wrapper's message alone may hide the errno).
pub fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}

/// Opens the first RDMA device.
pub fn open() -> Res<ibverbs::Context> {
    let devices = ibverbs::devices().map_err(|e| format!("devices: {e}"))?;
    let dev = devices.iter().next().ok_or("no RDMA device")?;
    Ok(dev.open().map_err(|e| format!("open: {e}"))?)
}

/// Prints the program's verdict: `runtime-error` with the step under test and its error, or
/// `silent` with what happened; or, when a set-up step failed, `SETUP-FAILED` and that step's
/// error (exit status 3: no verdict).
pub fn report(result: Outcome<String>) {
    match result {
        Ok(what) => println!("PEER-VERDICT silent {what}"),
        Err(Failure::Misuse(text)) => println!("PEER-VERDICT runtime-error {text}"),
        Err(Failure::Setup(text)) => {
            println!("SETUP-FAILED {text}");
            std::process::exit(3);
        }
    }
}
