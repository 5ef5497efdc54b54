//! Sessions: search space, configuration, time, and the suggest/observe lifecycle.

pub mod config;
pub mod priors;
pub mod service;
pub mod space;
pub mod time;

/// A client error in a request: which field, and what was wrong with it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidInput {
    /// Dotted path of the offending field, e.g. `observations[2].value`.
    pub field: String,
    pub message: String,
}

impl InvalidInput {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidInput {
            field: field.into(),
            message: message.into(),
        }
    }
}
pub mod views;
