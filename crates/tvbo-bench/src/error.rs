//! The error of a benchmark.

use tvbo_core::policy::PolicyError;

/// Failures of a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad options (unknown suite, objective or algorithm; invalid numbers).
    #[error("{0}")]
    Options(String),
    /// A session configuration the service rejects.
    #[error("session configuration: {0}")]
    Config(String),
    /// An objective that cannot be built.
    #[error("objective: {0}")]
    Objective(String),
    #[error("policy: {0}")]
    Policy(String),
    /// The server answered with an error or could not be reached.
    #[error("server: {0}")]
    Http(String),
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
    /// The thread's CPU clock could not be read.
    #[error("reading the thread's CPU clock: {0}")]
    Clock(std::io::Error),
}

impl From<PolicyError> for BenchError {
    fn from(e: PolicyError) -> Self {
        BenchError::Policy(e.to_string())
    }
}
