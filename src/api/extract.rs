//! Request extraction whose failures are problem+json naming the field.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::Deserializer;
use serde::de::value::{Error as ValueError, MapDeserializer};
use serde::de::{DeserializeOwned, Error as _, IntoDeserializer, Unexpected, Visitor};
use sha2::{Digest, Sha256};
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{KnownFormat, ObjectBuilder, Required, SchemaFormat, Type};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::api::AppState;
use crate::api::body::{self, ShapeError};
use crate::api::error::ApiError;
use crate::domain::InvalidInput;
use crate::keys::Caller;
use crate::session::idempotency::IdempotencyKey;

/// Largest request body accepted, in bytes (but for predict's).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Largest body of a predict, in bytes: its most points
/// ([`MAX_PREDICT_POINTS`](crate::session::service::MAX_PREDICT_POINTS)) fit at
/// 4 parameters whatever their names (names of up to 100 characters, values written to
/// 17 digits: 5.1 MB), and at 16 parameters of 10-character names.
pub const MAX_PREDICT_BODY_BYTES: usize = 8 << 20;

/// Parses a JSON body into `T`, holding it to `T`'s schema in the API's document.
///
/// Syntax errors (and numbers beyond f64) are 400 `malformed-json` naming `body`. An
/// object with the same key twice, anywhere in the document, is a 422 naming the repeated
/// key's path (`observations[0].params.x`) instead of silently keeping the last value; an
/// array where the schema admits none (serde would read a struct's fields from it) is a
/// 422 naming it; a wrong type, unknown field or missing field is a 422 naming the field
/// by its path.
pub fn parse_json<T: DeserializeOwned + ToSchema>(bytes: &[u8]) -> Result<T, ApiError> {
    let malformed = |e: serde_json::Error| {
        ApiError::field_error(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            InvalidInput::new("body", format!("is not valid JSON: {e}")),
        )
    };
    let body_field = |path: String| if path.is_empty() { "body".into() } else { path };
    match body::check(bytes, &T::name()).map_err(malformed)? {
        Some(ShapeError::RepeatedKey(path)) => {
            return Err(ApiError::invalid(InvalidInput::new(
                body_field(path),
                "appears more than once in its object",
            )));
        }
        Some(ShapeError::UnexpectedArray(path, types)) => {
            return Err(ApiError::invalid(InvalidInput::new(
                body_field(path),
                format!("must be {types}, not an array"),
            )));
        }
        None => {}
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let message = strip_position(&inner.to_string());
                ApiError::invalid(InvalidInput::new(
                    field_of(&path, &message, "body"),
                    message,
                ))
            }
            _ => malformed(inner),
        }
    })
}

/// The field a deserialisation error is about: serde_path_to_error's `path` (`.` at the
/// top level), extended by the name an unknown, missing or duplicate field message quotes
/// (unless the path already ends there), or `whole` when neither names one.
fn field_of(path: &str, message: &str, whole: &str) -> String {
    let base = if path == "." { "" } else { path };
    match named_field(message) {
        Some(name) if base == name || base.ends_with(&format!(".{name}")) => base.to_string(),
        Some(name) if base.is_empty() => name.to_string(),
        Some(name) => format!("{base}.{name}"),
        None if base.is_empty() => whole.to_string(),
        None => base.to_string(),
    }
}

/// The field an "unknown field `x`", "missing field `x`" or "duplicate field `x`" message
/// is about.
fn named_field(message: &str) -> Option<&str> {
    let start = ["unknown field `", "missing field `", "duplicate field `"]
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

/// A JSON body (content type `application/json`, at most `LIMIT` bytes) with its raw
/// bytes, which fingerprint the request for idempotency.
pub struct JsonBody<T, const LIMIT: usize = MAX_BODY_BYTES> {
    pub value: T,
    pub bytes: Bytes,
}

/// The raw bytes of a JSON request body, checked for content type and size (at most
/// `LIMIT` bytes).
pub struct RawJson<const LIMIT: usize = MAX_BODY_BYTES>(pub Bytes);

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for RawJson<LIMIT> {
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
        let bytes = axum::body::to_bytes(request.into_body(), LIMIT)
            .await
            .map_err(|_| {
                ApiError::field_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body-too-large",
                    InvalidInput::new(
                        "body",
                        format!("is larger than {LIMIT} bytes, or could not be read"),
                    ),
                )
            })?;
        Ok(RawJson(bytes))
    }
}

impl<S: Send + Sync, T: DeserializeOwned + ToSchema, const LIMIT: usize> FromRequest<S>
    for JsonBody<T, LIMIT>
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawJson(bytes) = RawJson::<LIMIT>::from_request(request, state).await?;
        let value = parse_json(&bytes)?;
        Ok(JsonBody { value, bytes })
    }
}

/// A query string parsed into `T`: a struct of optional scalars (strings, `i64`, `f64`,
/// `bool`) that denies unknown fields. A parameter that does not parse as its type, is
/// repeated, or is unknown is a 400 `invalid-query` naming the parameter; bytes that do
/// not decode to UTF-8 are a 400 naming `query`.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or("")).map(QueryParams)
    }
}

/// Parses an `application/x-www-form-urlencoded` query string into `T` (see
/// [`QueryParams`]).
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let invalid = |field: String, message: String| {
        ApiError::field_error(
            StatusCode::BAD_REQUEST,
            "invalid-query",
            InvalidInput::new(field, message),
        )
    };
    let pairs = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = form_decode(name)
                .ok_or_else(|| invalid("query".into(), "is not UTF-8 once decoded".into()))?;
            let value = form_decode(value)
                .ok_or_else(|| invalid(name.clone(), "is not UTF-8 once decoded".into()))?;
            Ok((name, QueryValue(value)))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let deserializer = MapDeserializer::<_, ValueError>::new(pairs.into_iter());
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        invalid(field_of(&path, &message, "query"), message)
    })
}

/// Decodes one name or value of a form-encoded query: `+` is a space and `%XX` a byte
/// (a `%` not followed by two hex digits stands for itself); None when the bytes are not
/// UTF-8.
fn form_decode(raw: &str) -> Option<String> {
    let spaced = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .ok()
        .map(|decoded| decoded.into_owned())
}

/// One decoded query value: deserialises as the type asked for, parsing its text.
struct QueryValue(String);

impl QueryValue {
    fn parse<T: std::str::FromStr>(self, expected: &str) -> Result<T, ValueError> {
        self.0
            .parse()
            .map_err(|_| ValueError::invalid_value(Unexpected::Str(&self.0), &expected))
    }
}

impl<'de> IntoDeserializer<'de, ValueError> for QueryValue {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for QueryValue {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_string(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_some(self)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_bool(self.parse("true or false")?)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_i64(self.parse("an integer")?)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_f64(self.parse("a number")?)
    }

    /// A unit variant named by the text (`sort=name`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u32 u64 u128 f32 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// The `Idempotency-Key` header of a request, if any: 1 to [`MAX_KEY_LEN`] visible ASCII
/// characters (`!` to `~`, no spaces), else a 400 naming the header.
pub struct IdempotencyHeader(pub Option<String>);

/// Longest idempotency key accepted.
pub const MAX_KEY_LEN: usize = 255;

/// The keys accepted, as the OpenAPI document states them.
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[!-~]{1,255}$";

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(IdempotencyHeader(None));
        };
        let key = value
            .to_str()
            .ok()
            .filter(|k| {
                (1..=MAX_KEY_LEN).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic())
            })
            .ok_or_else(|| {
                ApiError::field_error(
                    StatusCode::BAD_REQUEST,
                    "invalid-header",
                    InvalidInput::new(
                        "Idempotency-Key",
                        format!("must be 1 to {MAX_KEY_LEN} visible ASCII characters (no spaces)"),
                    ),
                )
            })?
            .to_string();
        Ok(IdempotencyHeader(Some(key)))
    }
}

impl IntoParams for IdempotencyHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_KEY_LEN))
            .pattern(Some(IDEMPOTENCY_KEY_PATTERN));
        vec![
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "Retries with the same key, path and body return the first answer",
                ))
                .schema(Some(schema))
                .build(),
        ]
    }
}

impl IdempotencyHeader {
    /// The key scoped to the caller's tenant and `POST target` (two tenants' keys never
    /// meet), with the body's fingerprint. `target` names a session by its canonical id
    /// (not by whichever of a UUID's spellings the path used), and the fingerprint is of
    /// the body's canonical JSON (keys sorted, no whitespace), so that the same request
    /// re-serialised is the same request.
    pub fn scoped(&self, caller: &Caller, target: &str, body: &[u8]) -> Option<IdempotencyKey> {
        self.0.as_ref().map(|key| IdempotencyKey {
            scope: format!("{} POST {target}", caller.tenant),
            key: key.clone(),
            request_hash: format!("{:x}", Sha256::digest(canonical_json(body))),
        })
    }
}

/// `body` as canonical JSON: object keys sorted, no whitespace, numbers as serde_json
/// writes them. A body that is not JSON is kept as it is (its handler refuses it).
fn canonical_json(body: &[u8]) -> Vec<u8> {
    fn sorted(value: serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(
                    entries.into_iter().map(|(k, v)| (k, sorted(v))).collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.into_iter().map(sorted).collect())
            }
            other => other,
        }
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => serde_json::to_vec(&sorted(value)).expect("JSON values serialise"),
        Err(_) => body.to_vec(),
    }
}

/// The caller that [`authenticate`](crate::api::auth::authenticate) identified.
pub struct Authenticated(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .map(Authenticated)
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "no caller"))
    }
}

/// The `{id}` of a `/v1/sessions/{id}...` path, of a session the caller may see. Anything
/// that is not a UUID (or not UTF-8 once percent-decoded), and a session of another
/// tenant, names no session: 404.
pub struct SessionId(pub Uuid);

impl FromRequestParts<AppState> for SessionId {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found("session"))?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .and_then(|(_, id)| Uuid::parse_str(id).ok())
            .ok_or_else(|| ApiError::not_found("session"))?;
        let Authenticated(caller) = Authenticated::from_request_parts(parts, state).await?;
        state.access.check_session(&caller, id).await?;
        Ok(SessionId(id))
    }
}

impl IntoParams for SessionId {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            ParameterBuilder::new()
                .name("id")
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .description(Some("Session id"))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
                ))
                .build(),
        ]
    }
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
    fn repeated_keys_and_misplaced_arrays_are_named_by_their_path() {
        let err = parse_json::<SuggestRequest>(br#"{"count": 1, "count": 2}"#).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(err.field.as_deref(), Some("count"));
        let err = parse_json::<SuggestRequest>(br#"[1, 2.5]"#).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(err.field.as_deref(), Some("body"));
        assert_eq!(err.detail, "body: must be object, not an array");
        let err = parse_json::<SuggestRequest>(br#"{"count": 1, "count": 2,}"#).unwrap_err();
        assert_eq!(
            err.status,
            StatusCode::BAD_REQUEST,
            "syntax is checked first"
        );
    }

    #[test]
    fn query_values_are_form_decoded() {
        assert_eq!(form_decode("a+b%2B%41%zz%4").as_deref(), Some("a b+A%zz%4"));
        assert_eq!(form_decode("%FF"), None);
        #[derive(Debug, serde::Deserialize)]
        struct TimeQuery {
            t: Option<f64>,
        }
        let query: TimeQuery = parse_query("t=%2D1.5").unwrap();
        assert_eq!(query.t, Some(-1.5));
        let err = parse_query::<TimeQuery>("t=1&t=2").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("t"));
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn syntax_errors_are_bad_requests() {
        let err = parse_json::<SuggestRequest>(b"{\"count\": NaN}").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        let err = parse_json::<SuggestRequest>(b"{} trailing").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }
}
