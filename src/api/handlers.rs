//! HTTP handlers: parse, delegate to the
//! [`SessionService`](crate::session::service::SessionService), answer.

use axum::Json;
use axum::extract::{RawPathParams, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::AppState;
use crate::api::error::{ApiError, Problem};
use crate::api::extract::{
    Authenticated, IdempotencyHeader, JsonBody, MAX_PREDICT_BODY_BYTES, QueryParams, RawJson,
    SessionId, has_member, parse_json,
};
use crate::domain::InvalidInput;
use crate::domain::config::CreateSession;
use crate::domain::space::Params;
use crate::session::idempotency::{Once, once};
use crate::session::listing::{AlgorithmName, ListCursor, ListingQuery, ObservationListing};
use crate::session::read_budget::HeldJson;
use crate::session::resume::Resumed;
use crate::session::timeline::DEFAULT_TIMELINE_POINTS;
use crate::session::views::{
    AlgorithmList, Best, EventList, ModelView, ObservationList, ObservationRequest, PredictRequest,
    PredictResponse, RegretReport, Session, SessionList, StepList, SuggestRequest, SuggestResponse,
    Timeline,
};
use crate::store::{ObservationSort, ObservationState, SessionSort, SortOrder};

type ApiResult<T> = Result<T, ApiError>;

/// A created resource: 201 with its JSON.
fn created<T: serde::Serialize>(body: &T) -> Response {
    (StatusCode::CREATED, Json(body)).into_response()
}

/// The answer of a keyed POST ([`once`](crate::session::idempotency::once)):
/// 201 with the body of an action that ran now, or the stored answer of the request
/// that acted first, marked `Idempotent-Replayed: true`.
fn once_answer<T: serde::Serialize>(outcome: Once<T>) -> Response {
    let answer = match outcome {
        Once::Acted(body) => return created(&body),
        Once::Replayed(answer) => answer,
    };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, answer.body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

/// Create a session.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions",
    request_body = CreateSession,
    params(IdempotencyHeader),
    responses(
        (status = 200, description = "With `resume`: the existing session of this name", body = Session),
        (status = 201, description = "The session, with every default filled in", body = Session),
        (status = 409, description = "With `resume`: the session of this name has another configuration (`conflict`, naming the first field that differs)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field's value is wrong (`invalid-field`), or the Idempotency-Key was used for another body (`idempotency-key-reused`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_session(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    idempotency: IdempotencyHeader,
    body: JsonBody<CreateSession>,
) -> ApiResult<Response> {
    let service = &state.service;
    if body.value.resume == Some(true) {
        // Idempotent by itself: a repeated call answers the session the first made.
        let (session, resumed) = service.resume_session(&caller.tenant, body.value).await?;
        return Ok(match resumed {
            Resumed::Yes => Json(session).into_response(),
            Resumed::No => created(&session),
        });
    }
    let key = idempotency.scoped(&caller, "/v1/sessions", &body.bytes);
    let outcome = once(service.store().as_ref(), key, |key| async move {
        service
            .create_session(&caller.tenant, body.value, key.as_ref())
            .await
    })
    .await?;
    Ok(once_answer(outcome))
}

/// Query of the session listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSessionsQuery {
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page, of the same `sort` and `order` (another
    /// order's is a 422); one that does not parse is a 400.
    #[param(
        value_type = Option<String>,
        pattern = r"^(-?[0-9]{1,18}_|(created|observations|last_activity)\.(asc|desc)\.-?[0-9]{1,18}\.|name\.(asc|desc)\.([0-9a-f]{2})*\.|regret\.(asc|desc)\.[0-9a-f]{16}\.)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    )]
    pub cursor: Option<ListCursor>,
    /// Only sessions whose name contains this, ignoring case (ASCII letters on SQLite,
    /// every letter on PostgreSQL).
    pub name: Option<String>,
    /// Only sessions of this algorithm.
    #[param(inline)]
    pub algorithm: Option<AlgorithmName>,
    /// The order: `created` (default; newest first by default), `name` (case folded; A to Z
    /// by default), `observations` (observations ever recorded; most first by default),
    /// `last_activity` (the newest suggest or observe call, else the creation; most recent
    /// first by default). Ties go by id, in the same direction.
    #[param(inline)]
    pub sort: Option<SessionSort>,
    /// The direction, `asc` or `desc` (default: the sort's own).
    #[param(inline)]
    pub order: Option<SortOrder>,
}

/// List the algorithms this server runs.
///
/// Each one's API name (what a create request's `algorithm.name` and the session
/// listing's `algorithm` filter take), what it does in a line, whether it forgets
/// observations, whether its model has time, and whether it takes priors over arms. A
/// client or dashboard reads the names here rather than keeping a list of its own.
#[utoipa::path(get, path = "/v1/algorithms", tag = "sessions",
    responses((status = 200, description = "The algorithms, in the server's order", body = AlgorithmList)))]
pub async fn list_algorithms(Authenticated(_caller): Authenticated) -> Json<AlgorithmList> {
    Json(AlgorithmList::all())
}

/// List sessions, each with its summary.
///
/// Newest first by default; filtered by name and algorithm, sorted by creation, name,
/// observations or last activity. Each session's `summary` gives its regret as the
/// timeline reports it, a sparkline of the mean regret over its history and its last
/// activity.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(ListSessionsQuery),
    responses(
        (status = 200, description = "A page of sessions", body = SessionList),
        (status = 422, description = "`limit` out of range, or a `cursor` of another `sort` or `order` (or not one this server handed out)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_sessions(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    QueryParams(query): QueryParams<ListSessionsQuery>,
) -> ApiResult<Json<SessionList>> {
    let listing = ListingQuery {
        limit: query.limit,
        cursor: query.cursor,
        name: query.name,
        algorithm: query.algorithm,
        sort: query.sort,
        order: query.order,
    };
    Ok(Json(
        state
            .service
            .list_sessions(listing, caller.listing_tenant())
            .await?,
    ))
}

/// A session's configuration, status and counts.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions", params(SessionId),
    responses(
        (status = 200, description = "The session", body = Session),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_session(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> ApiResult<Json<Session>> {
    Ok(Json(state.service.get_session(id).await?))
}

/// Delete a session and everything it holds.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions", params(SessionId),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_session(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> ApiResult<StatusCode> {
    state.service.delete_session(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Abandon a pending suggestion: it stops counting as pending and is recorded as
/// abandoned (timeline, dashboard, exports); it can no longer be observed.
#[utoipa::path(delete, path = "/v1/sessions/{id}/suggestions/{suggestion_id}", tag = "optimisation",
    params(SessionId, ("suggestion_id" = uuid::Uuid, Path, description = "Suggestion id")),
    responses(
        (status = 204, description = "Abandoned (also when it had been already)"),
        (status = 404, description = "No such session or suggestion", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The suggestion was observed or reported failed (`conflict`), or the session holds its cap of runs that ended without a value (`too-many-ended-runs`, naming `suggestion_id`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn abandon_suggestion(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    path: RawPathParams,
) -> ApiResult<StatusCode> {
    let suggestion = path
        .iter()
        .find(|(name, _)| *name == "suggestion_id")
        .and_then(|(_, sid)| uuid::Uuid::parse_str(sid).ok())
        .ok_or_else(|| ApiError::not_found("suggestion"))?;
    state.service.abandon(id, suggestion).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Suggest the next settings to evaluate.
#[utoipa::path(post, path = "/v1/sessions/{id}/suggestions", tag = "optimisation",
    request_body = SuggestRequest,
    params(SessionId, IdempotencyHeader),
    responses(
        (status = 201, description = "The suggestions, now pending", body = SuggestResponse),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The session's cap on pending suggestions is reached (`too-many-pending`), or it changed concurrently (`concurrent-change`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field's value is wrong for this session (`t` given or missing for its time source), or the Idempotency-Key was used for another body", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn suggest(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    Authenticated(caller): Authenticated,
    idempotency: IdempotencyHeader,
    body: JsonBody<SuggestRequest>,
) -> ApiResult<Response> {
    let target = format!("/v1/sessions/{id}/suggestions");
    let key = idempotency.scoped(&caller, &target, &body.bytes);
    let service = &state.service;
    let outcome = once(service.store().as_ref(), key, |key| async move {
        service.suggest(id, body.value, key.as_ref()).await
    })
    .await?;
    Ok(once_answer(outcome))
}

/// Query of the suggestion listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSuggestionsQuery {
    /// Which suggestions: `pending` (the default and, for now, the only one: handed out
    /// and neither observed, failed, abandoned nor expired at a later suggest).
    #[param(inline)]
    pub status: Option<SuggestionListStatus>,
}

/// The suggestions a listing asks for.
#[derive(Clone, Copy, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SuggestionListStatus {
    Pending,
}

/// List a session's pending suggestions, oldest first: what a client that stopped holds
/// and may abandon (`DELETE …/suggestions/{suggestion_id}`). At most the session's cap on
/// pending suggestions (`TVBO_MAX_PENDING_SUGGESTIONS`, 256).
#[utoipa::path(get, path = "/v1/sessions/{id}/suggestions", tag = "optimisation",
    params(SessionId, ListSuggestionsQuery),
    responses(
        (status = 200, description = "The pending suggestions, oldest first", body = SuggestResponse),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "`status` is not `pending` (`invalid-query`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_suggestions(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<ListSuggestionsQuery>,
) -> ApiResult<Json<SuggestResponse>> {
    let SuggestionListStatus::Pending = query.status.unwrap_or(SuggestionListStatus::Pending);
    Ok(Json(state.service.pending_suggestions(id).await?))
}

/// Record one observation, or several (`{"observations": [...]}`, all or nothing).
#[utoipa::path(post, path = "/v1/sessions/{id}/observations", tag = "optimisation",
    request_body = ObservationRequest,
    params(SessionId, IdempotencyHeader),
    responses(
        (status = 201, description = "The observations as stored", body = ObservationList),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A suggestion was observed already (`conflict`), the algorithm's dataset is full (`dataset-full`), a failed run would pass the session's cap of runs that ended without a value (`too-many-ended-runs`, naming the run's `failed`), or the session changed concurrently (`concurrent-change`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field's value is wrong for this session (unknown suggestion, params out of bounds, `t` or `measured_at` for the wrong time source), or the Idempotency-Key was used for another body", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn observe(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    Authenticated(caller): Authenticated,
    idempotency: IdempotencyHeader,
    RawJson(bytes): RawJson,
) -> ApiResult<Response> {
    let request = if has_member(&bytes, "observations") {
        ObservationRequest::Batch(parse_json(&bytes)?)
    } else {
        ObservationRequest::One(parse_json(&bytes)?)
    };
    let inputs = request.into_inputs();
    let target = format!("/v1/sessions/{id}/observations");
    let key = idempotency.scoped(&caller, &target, &bytes);
    let service = &state.service;
    let outcome = once(service.store().as_ref(), key, |key| async move {
        service.observe(id, inputs, key.as_ref()).await
    })
    .await?;
    Ok(once_answer(outcome))
}

/// Query of the observation listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListObservationsQuery {
    /// Only observations with seq greater than this (default 0).
    pub after: Option<i64>,
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<i64>,
    /// Rows of the order skipped before the page (default 0): how the orders other than
    /// `seq` ascending page (with `total`, "rows 51–100 of N").
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Which observations: `active` (default), `all`, or `forgotten` (those the algorithm
    /// removed from its dataset).
    #[param(inline)]
    pub state: Option<ObservationState>,
    /// The older spelling of `state`: true is `all`, false `active`; `state` wins when
    /// both are given.
    pub include_pruned: Option<bool>,
    /// The order: `seq` (default: as recorded), `value`, `regret` (reported, else
    /// estimated when it arrived; observations with neither last in either direction) or
    /// `t` (session time). Ties go by seq, in the same direction.
    #[param(inline)]
    pub sort: Option<ObservationSort>,
    /// The direction, `asc` (default) or `desc`.
    #[param(inline)]
    pub order: Option<SortOrder>,
}

/// List a session's observations.
///
/// Active ones (default), all or the forgotten ones; in the order they were recorded
/// (paged by `after`) or by value, regret or time (paged by `offset`); with `total`, how
/// many match.
#[utoipa::path(get, path = "/v1/sessions/{id}/observations", tag = "optimisation",
    params(SessionId, ListObservationsQuery),
    responses(
        (status = 200, description = "A page of observations, with `total`", body = ObservationList),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` or `offset` out of range", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A large page waited 10 s for the replica's read memory (`busy`, `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_observations(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<ListObservationsQuery>,
) -> ApiResult<Response> {
    let listing = ObservationListing {
        after: query.after,
        limit: query.limit,
        offset: query.offset,
        state: query.state,
        include_pruned: query.include_pruned,
        sort: query.sort,
        order: query.order,
    };
    Ok(sent_holding(
        state.service.observations_json(id, listing).await?,
    ))
}

/// Query of the listings paged by a position (steps by id, events by seq).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Only items past this position (a step's id, an event's seq): the previous page's
    /// `next_after` (default 0).
    pub after: Option<i64>,
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<i64>,
}

/// List the session's steps (suggest and observe calls) in order, each with the model it
/// left: dataset size, n* or budget, hyperparameters, the posterior optimum (suggests),
/// the priors' standing.
#[utoipa::path(get, path = "/v1/sessions/{id}/steps", tag = "insight",
    params(SessionId, PageQuery),
    responses(
        (status = 200, description = "A page of steps", body = StepList),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` out of range", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_steps(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<PageQuery>,
) -> ApiResult<Json<StepList>> {
    Ok(Json(
        state
            .service
            .list_steps(id, query.after.unwrap_or(0), query.limit.unwrap_or(1000))
            .await?,
    ))
}

/// List the session's events in order: what its steps found worth telling an operator
/// (docs/events.md). Each was stored with the step that found it.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "insight",
    params(SessionId, PageQuery),
    responses(
        (status = 200, description = "A page of events", body = EventList),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` out of range", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_events(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<PageQuery>,
) -> ApiResult<Json<EventList>> {
    Ok(Json(
        state
            .service
            .list_events(id, query.after.unwrap_or(0), query.limit.unwrap_or(1000))
            .await?,
    ))
}

/// Query of the timeline.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// Point budget per series (default 2000); past it, each bucket keeps its first,
    /// last, minimum and maximum.
    #[param(minimum = 100, maximum = 20000)]
    pub points: Option<i64>,
}

/// The session's history for plotting (what the dashboard draws): every observation
/// with its regret (reported, or estimated and marked so), every step's model snapshot,
/// and the forgetting events; downsampled past the point budget, keeping extremes. The
/// answer is at most 16 MiB: the point budget is lowered as far as the session's rows
/// need.
#[utoipa::path(get, path = "/v1/sessions/{id}/timeline", tag = "insight",
    params(SessionId, TimelineQuery),
    responses(
        (status = 200, description = "The session's timeline", body = Timeline),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`points` out of range", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn timeline(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<TimelineQuery>,
) -> ApiResult<Response> {
    let answer = state
        .service
        .timeline(id, query.points.unwrap_or(DEFAULT_TIMELINE_POINTS))
        .await?;
    Ok(sent_holding(answer))
}

/// Bytes of an answer handed to the connection at a time.
const SENT_CHUNK_BYTES: usize = 64 << 10;

/// A large read's JSON as the answer's body, sent a chunk at a time, holding its share
/// of the read budget until the last chunk is handed over (compressed on the way by
/// [`super::headers::compression`] where the client accepts it).
fn sent_holding(answer: HeldJson) -> Response {
    let HeldJson { json, slot } = answer;
    let length = json.len();
    // Fused: a layer that reads on after the end (the compressor) gets None again.
    let chunks = futures_util::StreamExt::fuse(futures_util::stream::unfold(
        (bytes::Bytes::from(json), slot),
        |(mut rest, slot)| async move {
            if rest.is_empty() {
                return None;
            }
            let chunk = rest.split_to(rest.len().min(SENT_CHUNK_BYTES));
            Some((Ok::<_, std::convert::Infallible>(chunk), (rest, slot)))
        },
    ));
    let mut response = axum::body::Body::from_stream(chunks).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    response
}

/// Regret of every observation: reported, or estimated from the model.
#[utoipa::path(get, path = "/v1/sessions/{id}/regret", tag = "insight", params(SessionId),
    responses(
        (status = 200, description = "The regret of every observation", body = RegretReport),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn regret(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> ApiResult<Json<RegretReport>> {
    Ok(Json(state.service.regret(id).await?))
}

/// The model: hyperparameters, dataset size, response-time samples and fit, policy state.
#[utoipa::path(get, path = "/v1/sessions/{id}/model", tag = "insight", params(SessionId),
    responses(
        (status = 200, description = "The model behind the session", body = ModelView),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn model(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> ApiResult<Json<ModelView>> {
    Ok(Json(state.service.model(id).await?))
}

/// Posterior mean and standard deviation of the objective at given settings.
#[utoipa::path(post, path = "/v1/sessions/{id}/predict", tag = "insight",
    request_body = PredictRequest,
    params(SessionId),
    responses(
        (status = 200, description = "The posterior at each point", body = PredictResponse),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The session has no active observations to predict from", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A point is wrong for this session (unknown or missing parameter, out of bounds, not an arm)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn predict(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    body: JsonBody<PredictRequest, MAX_PREDICT_BODY_BYTES>,
) -> ApiResult<Json<PredictResponse>> {
    Ok(Json(state.service.predict(id, body.value).await?))
}

/// Query of the recommendation.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct BestQuery {
    /// Session time (default: now, or the latest observation's time in client-time sessions).
    #[param(minimum = -1e10, maximum = 1e10)]
    pub t: Option<f64>,
    /// Parameters held at given values, as a JSON object (`{"load": 0.7}`, URL-encoded):
    /// the best setting of the others given them. A context session's context parameters
    /// not given are held at the newest observation's values.
    pub fixed: Option<String>,
}

/// The current recommendation: the best setting under the posterior mean at time t,
/// given the parameters `fixed` holds (a context session's context: by default, the
/// newest observation's).
#[utoipa::path(get, path = "/v1/sessions/{id}/best", tag = "insight",
    params(SessionId, BestQuery),
    responses(
        (status = 200, description = "The recommendation", body = Best),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The session has no active observations to recommend from", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`t` is not a finite number, or `fixed` is not a JSON object of this session's parameters and values (naming the field, e.g. `fixed.load`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn best(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    QueryParams(query): QueryParams<BestQuery>,
) -> ApiResult<Json<Best>> {
    let fixed = match query.fixed.as_deref() {
        None => Params::new(),
        Some(text) => serde_json::from_str(text).map_err(|_| {
            ApiError::invalid(InvalidInput::new(
                "fixed",
                "must be a JSON object of parameter names and values, e.g. {\"load\": 0.7}",
            ))
        })?,
    };
    Ok(Json(state.service.best(id, query.t, fixed).await?))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "`ok`", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers and the server is not draining before a stop.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "`ready`", body = String)))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<&'static str> {
    if state.draining.is_draining() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining",
            "the server is stopping: it finishes what it was sent, but takes nothing new",
        )
        .retry_after(1));
    }
    state.service.ping().await.map_err(|e| {
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
