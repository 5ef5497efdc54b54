//! HTTP handlers: parse, delegate to the [`SessionService`], answer.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::AppState;
use crate::api::error::{ApiError, Problem};
use crate::api::extract::{
    IdempotencyHeader, JsonBody, RawJson, has_member, named_field, parse_json, session_id,
};
use crate::session::InvalidInput;
use crate::session::config::CreateSession;
use crate::session::service::{IdempotencyKey, ServiceError};
use crate::session::views::{
    Best, ModelView, ObservationBatch, ObservationInput, ObservationList, PredictRequest,
    PredictResponse, RegretReport, Session, SessionList, SuggestRequest, SuggestResponse,
};

type ApiResult<T> = Result<T, ApiError>;

/// A query string that failed to parse: 400 naming the parameter serde complained about.
fn query_error(rejection: QueryRejection) -> ApiError {
    let text = rejection.body_text();
    let field = named_field(&text)
        .or_else(|| {
            ["limit", "cursor", "after", "include_pruned", "t"]
                .into_iter()
                .find(|name| {
                    text.contains(&format!("`{name}`")) || text.contains(&format!(" {name}: "))
                })
        })
        .unwrap_or("query")
        .to_string();
    ApiError::field_error(
        StatusCode::BAD_REQUEST,
        "invalid-query",
        InvalidInput::new(field, text),
    )
}

/// A created resource: 201 with its JSON.
fn created<T: serde::Serialize>(body: &T) -> Response {
    (StatusCode::CREATED, Json(body)).into_response()
}

/// Replays the stored answer of an earlier request with the same idempotency key, or
/// refuses a key reused for a different request.
async fn replay(state: &AppState, key: &IdempotencyKey) -> ApiResult<Option<Response>> {
    let Some(record) = state
        .service
        .store()
        .get_idempotency(&key.scope, &key.key)
        .await
        .map_err(ServiceError::from)?
    else {
        return Ok(None);
    };
    if record.request_hash != key.request_hash {
        return Err(ApiError::field_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            InvalidInput::new(
                "Idempotency-Key",
                "was already used for a different request body",
            ),
        ));
    }
    let status = StatusCode::from_u16(record.status).unwrap_or(StatusCode::OK);
    let mut response = (status, record.body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    Ok(Some(response))
}

/// Runs a POST once per idempotency key: replays a stored answer, or runs `action` (which
/// stores its answer in the same transaction as its effect) and answers 201.
///
/// When `action` fails and the key now has a stored answer, a concurrent request with the
/// same key (on this replica or another) acted first, and its answer is replayed: a retry
/// that raced its original gets the original's answer, not the error of acting twice (such
/// as a 409 for observing a suggestion already observed).
async fn once<T, F>(
    state: &AppState,
    key: Option<IdempotencyKey>,
    action: impl FnOnce(Option<IdempotencyKey>) -> F,
) -> ApiResult<Response>
where
    T: serde::Serialize,
    F: Future<Output = Result<T, ServiceError>>,
{
    if let Some(key) = &key
        && let Some(response) = replay(state, key).await?
    {
        return Ok(response);
    }
    let error = match action(key.clone()).await {
        Ok(body) => return Ok(created(&body)),
        Err(error) => error,
    };
    if let Some(key) = &key
        && let Some(response) = replay(state, key).await?
    {
        return Ok(response);
    }
    Err(match error {
        ServiceError::IdempotencyRace if key.is_some() => {
            ServiceError::Internal("idempotency record vanished".into())
        }
        other => other,
    }
    .into())
}

/// Create a session.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions",
    request_body = CreateSession,
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first answer")),
    responses(
        (status = 201, body = Session),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_session(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    idempotency: IdempotencyHeader,
    body: JsonBody<CreateSession>,
) -> ApiResult<Response> {
    let key = idempotency.scoped(method.as_str(), uri.path(), &body.bytes);
    let service = state.service.clone();
    once(&state, key, |key| async move {
        service.create_session(body.value, key.as_ref()).await
    })
    .await
}

/// Query of the session listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListSessionsQuery {
    /// Page size, 1..=1000 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// List sessions, newest first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(ListSessionsQuery),
    responses((status = 200, body = SessionList), (status = 400, body = Problem, content_type = "application/problem+json")))]
pub async fn list_sessions(
    State(state): State<AppState>,
    query: Result<Query<ListSessionsQuery>, QueryRejection>,
) -> ApiResult<Json<SessionList>> {
    let Query(query) = query.map_err(query_error)?;
    Ok(Json(
        state
            .service
            .list_sessions(query.limit.unwrap_or(50), query.cursor.as_deref())
            .await?,
    ))
}

/// A session's configuration, status and counts.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = uuid::Uuid, Path, description = "Session id")),
    responses((status = 200, body = Session), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Session>> {
    Ok(Json(state.service.get_session(session_id(&id)?).await?))
}

/// Delete a session and everything it holds.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = uuid::Uuid, Path, description = "Session id")),
    responses((status = 204), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn delete_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.service.delete_session(session_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Suggest the next settings to evaluate.
#[utoipa::path(post, path = "/v1/sessions/{id}/suggestions", tag = "optimisation",
    request_body = SuggestRequest,
    params(("id" = uuid::Uuid, Path, description = "Session id"),
           ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first answer")),
    responses(
        (status = 201, body = SuggestResponse),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn suggest(
    State(state): State<AppState>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    idempotency: IdempotencyHeader,
    body: JsonBody<SuggestRequest>,
) -> ApiResult<Response> {
    let id = session_id(&id)?;
    let key = idempotency.scoped(method.as_str(), uri.path(), &body.bytes);
    let service = state.service.clone();
    once(&state, key, |key| async move {
        service.suggest(id, body.value, key.as_ref()).await
    })
    .await
}

/// Record one observation, or several (`{"observations": [...]}`, all or nothing).
#[utoipa::path(post, path = "/v1/sessions/{id}/observations", tag = "optimisation",
    request_body(content = ObservationBatch, description = "One `ObservationInput`, or `{\"observations\": [ObservationInput, ...]}`"),
    params(("id" = uuid::Uuid, Path, description = "Session id"),
           ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key return the first answer")),
    responses(
        (status = 201, body = ObservationList),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn observe(
    State(state): State<AppState>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    idempotency: IdempotencyHeader,
    RawJson(bytes): RawJson,
) -> ApiResult<Response> {
    let id = session_id(&id)?;
    let is_batch = has_member(&bytes, "observations");
    let inputs: Vec<(String, ObservationInput)> = if is_batch {
        parse_json::<ObservationBatch>(&bytes)?
            .observations
            .into_iter()
            .enumerate()
            .map(|(i, o)| (format!("observations[{i}]."), o))
            .collect()
    } else {
        vec![(String::new(), parse_json::<ObservationInput>(&bytes)?)]
    };
    let key = idempotency.scoped(method.as_str(), uri.path(), &bytes);
    let service = state.service.clone();
    once(&state, key, |key| async move {
        service.observe(id, inputs, key.as_ref()).await
    })
    .await
}

/// Query of the observation listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListObservationsQuery {
    /// Only observations with seq greater than this (default 0).
    pub after: Option<i64>,
    /// Page size, 1..=10000 (default 1000).
    pub limit: Option<i64>,
    /// Include observations the algorithm has forgotten (default false).
    pub include_pruned: Option<bool>,
}

/// List observations in the order they were recorded.
#[utoipa::path(get, path = "/v1/sessions/{id}/observations", tag = "optimisation",
    params(("id" = uuid::Uuid, Path, description = "Session id"), ListObservationsQuery),
    responses((status = 200, body = ObservationList), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn list_observations(
    State(state): State<AppState>,
    Path(id): Path<String>,
    query: Result<Query<ListObservationsQuery>, QueryRejection>,
) -> ApiResult<Json<ObservationList>> {
    let id = session_id(&id)?;
    let Query(query) = query.map_err(query_error)?;
    Ok(Json(
        state
            .service
            .list_observations(
                id,
                query.after.unwrap_or(0),
                query.limit.unwrap_or(1000),
                query.include_pruned.unwrap_or(false),
            )
            .await?,
    ))
}

/// Regret of every observation: reported, or estimated from the model.
#[utoipa::path(get, path = "/v1/sessions/{id}/regret", tag = "insight",
    params(("id" = uuid::Uuid, Path, description = "Session id")),
    responses((status = 200, body = RegretReport), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn regret(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<RegretReport>> {
    Ok(Json(state.service.regret(session_id(&id)?).await?))
}

/// The model: hyperparameters, dataset size, response-time samples and fit, policy state.
#[utoipa::path(get, path = "/v1/sessions/{id}/model", tag = "insight",
    params(("id" = uuid::Uuid, Path, description = "Session id")),
    responses((status = 200, body = ModelView), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn model(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<ModelView>> {
    Ok(Json(state.service.model(session_id(&id)?).await?))
}

/// Posterior mean and standard deviation of the objective at given settings.
#[utoipa::path(post, path = "/v1/sessions/{id}/predict", tag = "insight",
    request_body = PredictRequest,
    params(("id" = uuid::Uuid, Path, description = "Session id")),
    responses(
        (status = 200, body = PredictResponse),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn predict(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: JsonBody<PredictRequest>,
) -> ApiResult<Json<PredictResponse>> {
    let id = session_id(&id)?;
    Ok(Json(state.service.predict(id, body.value).await?))
}

/// Query of the recommendation.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct BestQuery {
    /// Session time (default: now, or the latest observation's time in client-time sessions).
    pub t: Option<f64>,
}

/// The current recommendation: the best setting under the posterior mean at time t.
#[utoipa::path(get, path = "/v1/sessions/{id}/best", tag = "insight",
    params(("id" = uuid::Uuid, Path, description = "Session id"), BestQuery),
    responses(
        (status = 200, body = Best),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn best(
    State(state): State<AppState>,
    Path(id): Path<String>,
    query: Result<Query<BestQuery>, QueryRejection>,
) -> ApiResult<Json<Best>> {
    let id = session_id(&id)?;
    let Query(query) = query.map_err(query_error)?;
    Ok(Json(state.service.best(id, query.t).await?))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = String), (status = 503, body = Problem, content_type = "application/problem+json")))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<&'static str> {
    state.service.store().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-ready",
            "the database does not answer",
        )
    })?;
    Ok("ready")
}

/// Any path the API does not have.
pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not-found",
        format!("no route for {}", uri.path()),
    )
}

/// A method the path does not take.
pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        format!("{} does not take {method}", uri.path()),
    )
}
