//! Errors as `application/problem+json` (RFC 9457), each naming the offending field.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::InvalidInput;
use crate::session::error::ServiceError;
use crate::store::StoreError;

/// An error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    /// What was wrong, starting with the field's name where one is at fault.
    pub detail: String,
    /// Dotted path of the offending field (e.g. `observations[1].value`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// An error the API answers with.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub detail: String,
    pub field: Option<String>,
    /// Seconds to send as `Retry-After`, when the client should retry after a while.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            detail: detail.into(),
            field: None,
            retry_after: None,
        }
    }

    /// The error with `Retry-After: seconds`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 422 for a field whose value is wrong.
    pub fn invalid(input: InvalidInput) -> Self {
        Self::field_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid-field", input)
    }

    /// An error of `status` naming a field.
    pub fn field_error(status: StatusCode, kind: &'static str, input: InvalidInput) -> Self {
        ApiError {
            status,
            kind,
            detail: format!("{}: {}", input.field, input.message),
            field: Some(input.field),
            retry_after: None,
        }
    }

    pub fn not_found(what: &str) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "not-found",
            detail: format!("{what} not found"),
            field: None,
            retry_after: None,
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(input) => ApiError::invalid(input),
            ServiceError::NotFound(what) => ApiError::not_found(what),
            ServiceError::IdempotencyKeyReused => ApiError::field_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                InvalidInput::new(
                    "Idempotency-Key",
                    "was already used for a different request body",
                ),
            ),
            ServiceError::Conflict(input) => {
                ApiError::field_error(StatusCode::CONFLICT, "conflict", input)
            }
            ServiceError::Limit(kind, input) => {
                ApiError::field_error(StatusCode::CONFLICT, kind, input)
            }
            ServiceError::Busy => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "other replicas kept changing this session; nothing was changed, retry",
            ),
            ServiceError::ReadsBusy => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "this replica's memory for large reads (TVBO_READ_MEMORY_MIB) stayed taken \
                 by other reads for 10 s; retry",
            )
            .retry_after(1),
            ServiceError::Store(StoreError::Conflict) | ServiceError::IdempotencyRace => {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "concurrent-change",
                    "the session is being changed concurrently; retry the request",
                )
            }
            ServiceError::Store(
                e @ (StoreError::Database(_) | StoreError::Sqlite(_) | StoreError::Postgres(_)),
            ) => {
                tracing::error!(error = %e, "database error");
                // A client that honours it waits a second before trying again, as the
                // pool reconnects (a restart or a failover takes seconds).
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database-unavailable",
                    "the database did not complete the request; nothing was changed",
                )
                .retry_after(1)
            }
            other => {
                tracing::error!(error = %other, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error; nothing was changed",
                )
            }
        }
    }
}

impl From<StoreError> for ApiError {
    /// As the service maps it (a database failure is a 503, nothing changed).
    fn from(e: StoreError) -> Self {
        ServiceError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = Problem {
            kind: format!("https://tvbo.dev/problems/{}", self.kind),
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail,
            field: self.field,
        };
        let mut response = (self.status, axum::Json(problem)).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
