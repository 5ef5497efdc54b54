//! The handlers of what leaves the server (docs/events.md): the live event stream and
//! the webhooks.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::api::AppState;
use crate::api::error::{ApiError, Problem};
use crate::api::extract::{Authenticated, JsonBody, QueryParams};
use crate::delivery::kind_names;
use crate::delivery::views::{CreateWebhook, DeliveryList, PingResult, Webhook, WebhookList};
use crate::domain::InvalidInput;
use crate::domain::events::EventKind;
use crate::session::stream::{SAFETY_LOOK, StreamMessage, StreamRequest};
use crate::session::views::Event;
use crate::store::changes::ChangeNotice;

type ApiResult<T> = Result<T, ApiError>;

/// How often an idle stream sends a comment, so that proxies keep it open and clients
/// know it is alive.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The reconnection delay the stream asks of clients.
const RETRY: Duration = Duration::from_secs(2);
/// How often an open stream checks that its key is still valid, unless every writer of
/// the database is heard (PostgreSQL's listener;
/// [`crate::store::changes::ChangeFeed::hears_every_writer`]): a
/// revoked key's streams end within this time.
pub const KEY_RECHECK: Duration = Duration::from_secs(5);

/// Query of the event stream.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Start after this event id (a `Last-Event-ID` header takes precedence); without
    /// either, the stream starts with the events committed from now on.
    pub after: Option<i64>,
    /// Only this session's events; the stream then also sends `version` messages when
    /// the session changes.
    pub session: Option<Uuid>,
    /// Only these kinds, comma-separated.
    pub kinds: Option<String>,
    /// Without `session`: also a `version` message whenever one of the tenant's sessions
    /// changes (created, suggested, observed), from the connection on (and those of the 5 s
    /// before it).
    pub changes: Option<bool>,
}

/// Stream the tenant's events as Server-Sent Events (docs/events.md, "The stream"): each
/// event a message with `id:` (its global id), `event:` (its kind) and `data:` (the
/// event, as `GET /v1/sessions/{id}/events` lists it). Reconnect with `Last-Event-ID` to
/// resume without a gap. With `session`, `version` messages (no id, data
/// `{"session", "version"}`) say the session changed; with `changes=true` instead, any
/// of the tenant's sessions. A comment every 15 s keeps it
/// open; a replica that stops ends its streams, and clients reconnect; a stream whose key
/// is revoked ends within 5 s. Each key, tenant and replica may hold a bounded number of
/// streams at once (docs/api.md, "Limits").
#[utoipa::path(get, path = "/v1/events", tag = "insight",
    params(StreamQuery,
        ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "The stream", content_type = "text/event-stream", body = Event),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`kinds` or `Last-Event-ID` invalid", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The key or its tenant holds as many open streams as it may (`too-many-streams`); Retry-After says when to retry", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The replica holds as many open streams as it may (`busy`); Retry-After says when to retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn stream_events(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    headers: HeaderMap,
    QueryParams(query): QueryParams<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    if let Some(session) = query.session {
        state.access.check_session(&caller, session).await?;
    }
    let slot = state.streams.take(&caller)?;
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|id| *id >= 0)
                .ok_or_else(|| {
                    ApiError::invalid(InvalidInput::new(
                        "Last-Event-ID",
                        "must be an event id (a non-negative integer)",
                    ))
                })?,
        ),
    };
    let kinds = parse_kinds(query.kinds.as_deref()).map_err(ApiError::invalid)?;
    let request = StreamRequest {
        tenant: caller.listing_tenant().map(str::to_string),
        session: query.session,
        changes: query.changes.unwrap_or(false),
        kinds,
        after: last_event_id.or(query.after),
    };
    let events = state
        .service
        .event_stream(request)
        .await
        .map_err(ApiError::from)?;
    // The stream ends when the replica stops (clients reconnect to another) or its key
    // is revoked (or cannot be read back).
    let draining = state.draining.clone();
    let access = state.access.clone();
    let feed = state.service.change_feed();
    let mut notices = feed.subscribe();
    let revoked = async move {
        let Some(key) = caller.key_id else {
            return std::future::pending().await;
        };
        loop {
            // Heard, the key's change comes as a notice; the check after SAFETY_LOOK is
            // for a notice lost all the same.
            let wait = if feed.hears_every_writer() {
                SAFETY_LOOK
            } else {
                KEY_RECHECK
            };
            tokio::select! {
                () = key_changed(&mut notices, key) => {}
                () = tokio::time::sleep(wait) => {}
            }
            if !access.key_is_live(key).await {
                return;
            }
        }
    };
    let stopped = async move {
        tokio::select! {
            () = draining.started() => {}
            () = revoked => {}
        }
    };
    let first = futures_util::stream::once(async { Ok(SseEvent::default().retry(RETRY)) });
    // The slot is the stream's: given back when the stream is dropped.
    let messages = events.take_until(stopped).map(move |message| {
        let _held = &slot;
        Ok(sse_message(message))
    });
    Ok(Sse::new(first.chain(messages)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// Waits for a notice that `key` changed, or that notices were missed.
async fn key_changed(notices: &mut broadcast::Receiver<ChangeNotice>, key: Uuid) {
    loop {
        match notices.recv().await {
            Ok(ChangeNotice::Key { key: changed }) if changed == key => return,
            Ok(ChangeNotice::Missed) | Err(RecvError::Lagged(_)) => return,
            Ok(_) => {}
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

fn sse_message(message: StreamMessage) -> SseEvent {
    match message {
        StreamMessage::Event(event) => SseEvent::default()
            .id(event.id.to_string())
            .event(event.kind.clone())
            .json_data(&*event)
            .expect("an event serialises"),
        StreamMessage::Version { session, version } => SseEvent::default()
            .event("version")
            .json_data(serde_json::json!({"session": session, "version": version}))
            .expect("plain data serialises"),
    }
}

/// The kinds of a comma-separated list, each known (422 naming `kinds`).
fn parse_kinds(kinds: Option<&str>) -> Result<Vec<String>, InvalidInput> {
    let Some(kinds) = kinds else {
        return Ok(Vec::new());
    };
    kinds
        .split(',')
        .map(str::trim)
        .filter(|kind| !kind.is_empty())
        .map(|kind| match EventKind::named(kind) {
            Some(kind) => Ok(kind.as_str().to_string()),
            None => Err(InvalidInput::new(
                "kinds",
                format!("unknown event kind {kind:?}; kinds: {}", kind_names()),
            )),
        })
        .collect()
}

/// Create a webhook: the tenant's events of the kinds asked for are POSTed to `url`,
/// signed (docs/events.md, "Webhooks"). The URL's host must be in the server's allow list
/// (`TVBO_WEBHOOK_ALLOW`, empty by default: 422 naming `url`). The answer holds the
/// signing secret, once.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = CreateWebhook,
    responses(
        (status = 201, description = "Created", body = Webhook),
        (status = 409, description = "The tenant has the most webhooks allowed", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is invalid (`url` outside the allow list)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_webhook(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    body: JsonBody<CreateWebhook>,
) -> ApiResult<(StatusCode, Json<Webhook>)> {
    let webhook = state.webhooks.create(&caller, body.value).await?;
    Ok((StatusCode::CREATED, Json(webhook)))
}

/// List the tenant's webhooks (without their secrets).
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks",
    responses((status = 200, description = "The webhooks", body = WebhookList)))]
pub async fn list_webhooks(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
) -> ApiResult<Json<WebhookList>> {
    Ok(Json(state.webhooks.list(&caller).await?))
}

/// A webhook id of the path: anything but a UUID names no webhook (404).
fn webhook_id(id: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(id).map_err(|_| ApiError::not_found("webhook"))
}

/// Get a webhook (without its secret).
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The webhook", body = Webhook),
        (status = 404, description = "No such webhook", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_webhook(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> ApiResult<Json<Webhook>> {
    Ok(Json(state.webhooks.get(&caller, webhook_id(&id)?).await?))
}

/// Delete a webhook; its pending deliveries are dropped.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such webhook", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_webhook(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.webhooks.delete(&caller, webhook_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test `ping` to the webhook now (event id 0, kind `ping`, signed like every
/// delivery) and say how the receiver answered; a delivered ping resumes a webhook that
/// was paused because its attempts kept failing.
#[utoipa::path(post, path = "/v1/webhooks/{id}/ping", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id")),
    responses(
        (status = 200, description = "How the receiver answered", body = PingResult),
        (status = 404, description = "No such webhook", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn ping_webhook(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
) -> ApiResult<Json<PingResult>> {
    Ok(Json(state.webhooks.ping(&caller, webhook_id(&id)?).await?))
}

/// List the webhook's deliveries by event id: state, attempts, the last status and
/// error (the delivery log; delivered and failed ones are kept 7 days).
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id"), crate::api::handlers::PageQuery),
    responses(
        (status = 200, description = "A page of deliveries", body = DeliveryList),
        (status = 404, description = "No such webhook", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` out of range", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_deliveries(
    State(state): State<AppState>,
    Authenticated(caller): Authenticated,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<crate::api::handlers::PageQuery>,
) -> ApiResult<Json<DeliveryList>> {
    let id = webhook_id(&id)?;
    let (after, limit) = (query.after.unwrap_or(0), query.limit.unwrap_or(1000));
    Ok(Json(
        state.webhooks.deliveries(&caller, id, after, limit).await?,
    ))
}
