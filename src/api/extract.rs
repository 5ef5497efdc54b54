//! Request extraction whose failures are problem+json naming the field.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::api::error::ApiError;
use crate::session::InvalidInput;
use crate::session::service::IdempotencyKey;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Parses JSON, naming the field of a type error or unknown field by its path.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let malformed = |e: serde_json::Error| {
        ApiError::field_error(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            InvalidInput::new("body", format!("is not valid JSON: {e}")),
        )
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: Result<T, _> = serde_path_to_error::deserialize(&mut deserializer);
    if value.is_ok() {
        deserializer.end().map_err(malformed)?;
    }
    value.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let message = strip_position(&inner.to_string());
                let base = if path == "." { String::new() } else { path };
                let field = match named_field(&message) {
                    // serde_path_to_error's path already ends at an unknown field.
                    Some(name) if base == name || base.ends_with(&format!(".{name}")) => base,
                    Some(name) if base.is_empty() => name.to_string(),
                    Some(name) => format!("{base}.{name}"),
                    None if base.is_empty() => "body".to_string(),
                    None => base,
                };
                ApiError::invalid(InvalidInput::new(field, message))
            }
            _ => malformed(inner),
        }
    })
}

/// The field an "unknown field `x`" or "missing field `x`" message is about.
pub fn named_field(message: &str) -> Option<&str> {
    let start = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|prefix| message.find(prefix).map(|i| i + prefix.len()))?;
    message[start..].split('`').next()
}

/// Whether a JSON body is an object with a top-level member `name` (values are skipped,
/// not parsed, so an out-of-range number elsewhere does not hide the member).
pub fn has_member(bytes: &[u8], name: &str) -> bool {
    serde_json::from_slice::<std::collections::HashMap<String, serde::de::IgnoredAny>>(bytes)
        .is_ok_and(|object| object.contains_key(name))
}

/// serde_json appends " at line L column C" to data errors; the field path says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// A JSON body (content type `application/json`, at most [`MAX_BODY_BYTES`]) with its raw
/// bytes, which fingerprint the request for idempotency.
pub struct JsonBody<T> {
    pub value: T,
    pub bytes: Bytes,
}

/// The raw bytes of a JSON request body, checked for content type and size.
pub struct RawJson(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawJson {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return Err(ApiError::field_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                InvalidInput::new(
                    "Content-Type",
                    format!("must be application/json, got {content_type:?}"),
                ),
            ));
        }
        let bytes = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|_| {
                ApiError::field_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body-too-large",
                    InvalidInput::new(
                        "body",
                        format!("is larger than {MAX_BODY_BYTES} bytes, or could not be read"),
                    ),
                )
            })?;
        Ok(RawJson(bytes))
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawJson(bytes) = RawJson::from_request(request, state).await?;
        let value = parse_json(&bytes)?;
        Ok(JsonBody { value, bytes })
    }
}

/// The `Idempotency-Key` header of a request, if any.
pub struct IdempotencyHeader(pub Option<String>);

/// Longest idempotency key accepted.
const MAX_KEY_LEN: usize = 255;

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(IdempotencyHeader(None));
        };
        let key = value
            .to_str()
            .ok()
            .filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN)
            .ok_or_else(|| {
                ApiError::field_error(
                    StatusCode::BAD_REQUEST,
                    "invalid-header",
                    InvalidInput::new(
                        "Idempotency-Key",
                        format!("must be 1 to {MAX_KEY_LEN} visible ASCII characters"),
                    ),
                )
            })?;
        Ok(IdempotencyHeader(Some(key.to_string())))
    }
}

impl IdempotencyHeader {
    /// The key scoped to this request's method and path, with the body's fingerprint.
    pub fn scoped(&self, method: &str, path: &str, body: &[u8]) -> Option<IdempotencyKey> {
        self.0.as_ref().map(|key| IdempotencyKey {
            scope: format!("{method} {path}"),
            key: key.clone(),
            request_hash: format!("{:x}", Sha256::digest(body)),
        })
    }
}

/// A session id from the path; anything that is not a UUID names no session (404).
pub fn session_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::not_found("session"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::views::SuggestRequest;

    #[test]
    fn type_errors_name_the_field() {
        let err = parse_json::<SuggestRequest>(br#"{"count": "two"}"#).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(err.field.as_deref(), Some("count"));
        let err = parse_json::<SuggestRequest>(br#"{"cuont": 2}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("cuont"));
        assert!(err.detail.starts_with("cuont: "), "{}", err.detail);
        assert!(err.detail.contains("unknown field"), "{}", err.detail);
    }

    #[test]
    fn syntax_errors_are_bad_requests() {
        let err = parse_json::<SuggestRequest>(b"{\"count\": NaN}").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        let err = parse_json::<SuggestRequest>(b"{} trailing").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }
}
