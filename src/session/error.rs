//! The failures of a session operation, as the API maps them to statuses.

use crate::domain::InvalidInput;
use crate::engine::EngineError;
use crate::policy::PolicyError;
use crate::store::StoreError;

/// Failures of a session operation.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Bad input: 422 naming the field.
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// The session (or another resource) does not exist: 404.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request conflicts with the session's state: 409 naming the field.
    #[error("{}: {}", .0.field, .0.message)]
    Conflict(InvalidInput),
    /// The idempotency key was taken concurrently; look it up again.
    #[error("idempotency key taken concurrently")]
    IdempotencyRace,
    /// The idempotency key was used before with another request body: 422 naming the
    /// `Idempotency-Key` header.
    #[error("Idempotency-Key: was already used for a different request body")]
    IdempotencyKeyReused,
    /// A cap of the server is reached (pending suggestions, active dataset): 409 of the
    /// given kind naming the field.
    #[error("{}: {}", .1.field, .1.message)]
    Limit(&'static str, InvalidInput),
    /// Other replicas kept changing the session for `COMMIT_RETRY_BUDGET` (`session::service`): 503, retry.
    #[error("the session stayed busy with concurrent changes")]
    Busy,
    /// The replica's memory for large reads stayed taken by other reads for
    /// `READ_WAIT` (`session::read_budget`): 503, retry.
    #[error("the replica's memory for large reads stayed taken")]
    ReadsBusy,
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ServiceError::NotFound("session"),
            StoreError::DuplicateKey => ServiceError::IdempotencyRace,
            other => ServiceError::Store(other),
        }
    }
}

impl From<EngineError> for ServiceError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(e) => ServiceError::Invalid(e),
            EngineError::Conflict(e) => ServiceError::Conflict(e),
            EngineError::Limit(kind, e) => ServiceError::Limit(kind, e),
            EngineError::CorruptState(e) => {
                ServiceError::Store(StoreError::Corrupt(format!("policy state: {e}")))
            }
            EngineError::Policy(e) => ServiceError::Policy(e),
        }
    }
}

impl From<crate::gp::GpError> for ServiceError {
    fn from(e: crate::gp::GpError) -> Self {
        ServiceError::Policy(PolicyError::Gp(e))
    }
}
