//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse. The run-time ones print one `PEER-VERDICT` line, or `SETUP-FAILED` when a
//! step before the misuse fails (then there is no verdict).
use std::error::Error;

/// The device the run-time programs open: `TYPED_VERBS_DEVICE`, or the software device `sw0`.
pub fn device() -> String {
    std::env::var("TYPED_VERBS_DEVICE").unwrap_or_else(|_| "sw0".into())
}

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
        Failure::Setup(e.into().to_string())
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
        self.map_err(|e| Failure::Setup(format!("{step}: {}", e.into())))
    }
    fn misuse(self, step: &str) -> Outcome<T> {
        self.map_err(|e| Failure::Misuse(format!("{step}: {}", e.into())))
    }
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
