//! The HTTP API (docs/api.md): axum router, handlers, problem+json errors, OpenAPI.

pub mod auth;
mod bearer;
pub mod body;
pub mod drain;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod headers;
pub mod outbound;
pub mod stream_slots;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{delete, get, post};
use serde_json::json;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::api::auth::{Access, AccessSettings};
use crate::dashboard::{BasePath, PageSettings};
use crate::delivery::{AllowList, Webhooks, worker};
use crate::engine::Limits;
use crate::session::service::SessionService;
use crate::store::Store;
use crate::telemetry::{self, MeteredStore};
use bearer::BearerScheme;
use stream_slots::{StreamLimits, StreamSlots};

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    pub service: SessionService,
    pub access: Arc<Access>,
    /// Set when the server is told to stop ([`drain`]): `/readyz` then answers 503.
    pub draining: drain::Draining,
    pub webhooks: Webhooks,
    /// The event streams open on this replica, against their caps.
    pub streams: StreamSlots,
    /// Stops the delivery worker when the last clone of the state goes.
    _worker: Arc<WorkerGuard>,
}

/// Stops the delivery worker ([`worker::run`]) when dropped.
struct WorkerGuard(Arc<tokio::sync::Notify>);

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// Longest a request may take before the server answers 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How the router is set up besides its store.
#[derive(Clone, Debug)]
pub struct RouterSettings {
    /// Caps on each session's work.
    pub limits: Limits,
    /// Longest a request may take before the server answers 503 `timeout`.
    pub request_timeout: Duration,
    /// The path prefix a reverse proxy serves tvbo under, for the dashboard's links.
    pub base_path: BasePath,
    /// Keys, rates and the cap on sessions per tenant.
    pub access: AccessSettings,
    /// The browser origins allowed to call the API (CORS); none by default.
    pub cors_origins: headers::CorsOrigins,
    /// Whether the router serves `/metrics`; false when the metrics have a listener of
    /// their own (`TVBO_METRICS_BIND`, [`telemetry::serve`]).
    pub serve_metrics: bool,
    /// Set by whoever stops the server, to drain first ([`drain`]).
    pub draining: drain::Draining,
    /// The hosts webhooks may reach (`TVBO_WEBHOOK_ALLOW`); none by default.
    pub webhook_allow: AllowList,
    /// Caps on open event streams per key, per tenant and per replica.
    pub streams: StreamLimits,
    /// Model jobs run at once (`TVBO_MODEL_WORKERS`); None: one per core the process sees.
    pub model_workers: Option<usize>,
}

impl Default for RouterSettings {
    /// Default limits, [`REQUEST_TIMEOUT`], no path prefix, keys required, no CORS, `/metrics` served.
    fn default() -> Self {
        RouterSettings {
            limits: Limits::default(),
            request_timeout: REQUEST_TIMEOUT,
            base_path: BasePath::default(),
            access: AccessSettings::default(),
            cors_origins: headers::CorsOrigins::default(),
            serve_metrics: true,
            draining: drain::Draining::default(),
            webhook_allow: AllowList::default(),
            streams: StreamLimits::default(),
            model_workers: None,
        }
    }
}

/// The OpenAPI description of the API, generated from the handlers and types.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "tvbo",
        description = "Time-varying Bayesian optimization as a service: sessions suggest settings, clients observe values, the server models the objective over space and time and forgets what went stale."
    ),
    paths(
        handlers::list_algorithms,
        handlers::create_session,
        handlers::list_sessions,
        handlers::get_session,
        handlers::delete_session,
        handlers::suggest,
        handlers::list_suggestions,
        handlers::abandon_suggestion,
        handlers::observe,
        handlers::list_observations,
        handlers::list_steps,
        handlers::list_events,
        outbound::stream_events,
        outbound::create_webhook,
        outbound::list_webhooks,
        outbound::get_webhook,
        outbound::delete_webhook,
        outbound::ping_webhook,
        outbound::list_deliveries,
        handlers::timeline,
        handlers::regret,
        handlers::model,
        handlers::predict,
        handlers::best,
        handlers::healthz,
        handlers::readyz,
    ),
    modifiers(&CommonAnswers, &Links, &BearerScheme)
)]
pub struct ApiDoc;

/// The answers the transport gives rather than a handler, added to the operations that
/// can get them, as shared `components/responses`: 414, 431 and 503 to every operation;
/// 400 to every operation with a body, a query or a header parameter; 413 and 415 to
/// every operation with a body.
struct CommonAnswers;

impl CommonAnswers {
    /// (status, component name, description) of the answers of access control, which
    /// every operation under `/v1` can get.
    const ACCESS: [(&str, &str, &str); 2] = [
        (
            "401",
            "Unauthorized",
            "No API key, or one that is unknown, revoked or mistyped (`unauthorized`)",
        ),
        (
            "429",
            "TooManyRequests",
            "The key's request rate is spent, or its id's checks of secrets not yet known to \
             this replica (`rate-limited`); `Retry-After` says after how many seconds to retry",
        ),
    ];

    /// (status, component name, description, whether only operations with a body get it,
    /// whether operations with query or header parameters get it too).
    const ANSWERS: [(&str, &str, &str, bool, bool); 6] = [
        (
            "400",
            "BadRequest",
            "Malformed JSON (`malformed-json`, naming `body`), or a query parameter or header \
             that does not parse (`invalid-query`, `invalid-header`, naming it)",
            true,
            true,
        ),
        (
            "413",
            "PayloadTooLarge",
            "The body is over 1 MiB (`body-too-large`)",
            true,
            false,
        ),
        (
            "414",
            "UriTooLong",
            "The request target is over 8 KiB (`uri-too-long`)",
            false,
            false,
        ),
        (
            "415",
            "UnsupportedMediaType",
            "The content type is not `application/json` (`unsupported-media-type`)",
            true,
            false,
        ),
        (
            "431",
            "HeaderFieldsTooLarge",
            "The header fields total over 32 KiB (`headers-too-large`, naming the largest)",
            false,
            false,
        ),
        (
            "503",
            "ServiceUnavailable",
            "The database is unavailable (`database-unavailable`, `not-ready`), no answer came \
             within the time limit (`timeout`), the server is at capacity (`busy`: \
             connections, checks of keys' secrets, or memory for large reads), or `/readyz` \
             of a server draining before it stops (`draining`: it still serves what it is \
             sent); nothing was changed unless the detail says it may have been",
            false,
            false,
        ),
    ];
}

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let shared = Self::ANSWERS
            .iter()
            .map(|(_, name, description, _, _)| (name, description))
            .chain(
                Self::ACCESS
                    .iter()
                    .map(|(_, name, description)| (name, description)),
            );
        for (name, description) in shared {
            let problem = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build();
            let response = ResponseBuilder::new()
                .description(*description)
                .content("application/problem+json", problem)
                .build();
            components.responses.insert((*name).into(), response.into());
        }
        for operation in operations(openapi, "/v1/") {
            for (status, name, _) in Self::ACCESS {
                operation
                    .responses
                    .responses
                    .insert(status.into(), Ref::from_response_name(name).into());
            }
        }
        for operation in operations(openapi, "") {
            let has_body = operation.request_body.is_some();
            let has_parameters = operation.parameters.iter().flatten().any(|p| {
                matches!(p, RefOr::T(p) if p.parameter_in != utoipa::openapi::path::ParameterIn::Path)
            });
            for (status, name, _, body_only, with_parameters) in Self::ANSWERS {
                if !body_only || has_body || (with_parameters && has_parameters) {
                    operation
                        .responses
                        .responses
                        .insert(status.into(), Ref::from_response_name(name).into());
                }
            }
        }
    }
}

/// Links between operations, for clients and for stateful testing: a created session's
/// `id` feeds every operation on the session, a suggestion's `id` feeds its observation,
/// and an observation leads on to the operations that read what it changed.
struct Links;

impl Links {
    /// The operations on one session, by operation id.
    const ON_SESSION: [&str; 12] = [
        "get_session",
        "delete_session",
        "suggest",
        "observe",
        "list_observations",
        "list_steps",
        "list_events",
        "timeline",
        "regret",
        "model",
        "predict",
        "best",
    ];

    /// The operations that read what an observation changes.
    const AFTER_OBSERVE: [&str; 9] = [
        "suggest",
        "list_observations",
        "list_steps",
        "list_events",
        "timeline",
        "regret",
        "model",
        "predict",
        "best",
    ];
}

impl Modify for Links {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let link =
            |target: &str, id: &str| LinkBuilder::new().operation_id(target).parameter("id", id);
        for operation in operations(openapi, "") {
            let (status, links) = match operation.operation_id.as_deref() {
                Some("create_session") => (
                    "201",
                    Self::ON_SESSION
                        .iter()
                        .map(|target| (*target, link(target, "$response.body#/id").build()))
                        .collect::<Vec<_>>(),
                ),
                Some("suggest") => (
                    "201",
                    vec![(
                        "observe",
                        link("observe", "$request.path.id")
                            .request_body(Some(json!({
                                "suggestion_id": "$response.body#/suggestions/0/id"
                            })))
                            .description(
                                "Observe the first suggestion (add `value`, and `t` in \
                                 client-time sessions)",
                            )
                            .build(),
                    )],
                ),
                Some("observe") => (
                    "201",
                    Self::AFTER_OBSERVE
                        .iter()
                        .map(|target| (*target, link(target, "$request.path.id").build()))
                        .collect(),
                ),
                _ => continue,
            };
            if let Some(RefOr::T(response)) = operation.responses.responses.get_mut(status) {
                for (name, link) in links {
                    response.links.insert(name.into(), link.into());
                }
            }
        }
    }
}

/// Every operation of the document whose path starts with `prefix`.
fn operations<'a>(
    openapi: &'a mut utoipa::openapi::OpenApi,
    prefix: &'a str,
) -> impl Iterator<Item = &'a mut Operation> {
    let items = openapi.paths.paths.iter_mut();
    items
        .filter(move |(path, _)| path.starts_with(prefix))
        .flat_map(|(_, item)| {
            [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ]
            .into_iter()
            .flatten()
        })
}

/// The OpenAPI document as pretty JSON (what `tvbo openapi` writes).
pub fn openapi_json() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

async fn openapi_handler() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        openapi_json(),
    )
        .into_response()
}

/// `/metrics` (Prometheus text; docs/operations.md, "Metrics") when `serve`, else nothing.
/// It answers without an API key, like the health checks: a scraper has none.
fn metrics_route(serve: bool) -> Router<AppState> {
    let scrape = |State(state): State<AppState>| async move {
        telemetry::scrape(state.service.store().as_ref())
    };
    if serve {
        Router::new().route("/metrics", get(scrape))
    } else {
        Router::new()
    }
}

/// The application's router over a store: the API under `/v1`, its OpenAPI document, the
/// health checks, the metrics (unless they have a listener of their own), the dashboard
/// and the API docs UI. Every request is measured, and every store operation timed
/// ([`telemetry`]; the process's recorder is installed here, once).
pub fn router(store: Arc<dyn Store>, settings: RouterSettings) -> Router {
    let RouterSettings {
        limits,
        request_timeout,
        base_path,
        access,
        cors_origins,
        serve_metrics,
        draining,
        webhook_allow,
        streams,
        model_workers,
    } = settings;
    telemetry::install();
    let store: Arc<dyn Store> = Arc::new(MeteredStore::new(store));
    let mut service = SessionService::new(store.clone(), limits)
        .with_max_sessions_per_tenant(access.max_sessions_per_tenant);
    if let Some(workers) = model_workers {
        service = service.with_model_workers(workers);
    }
    let webhooks = Webhooks::new(store.clone(), webhook_allow);
    let stop_worker = Arc::new(tokio::sync::Notify::new());
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::spawn(worker::run(webhooks.clone(), stop_worker.clone()));
    }
    let state = AppState {
        service,
        access: Arc::new(Access::new(store, &access)),
        draining: draining.clone(),
        webhooks,
        streams: StreamSlots::new(streams),
        _worker: Arc::new(WorkerGuard(stop_worker)),
    };
    Router::new()
        .route("/v1/algorithms", get(handlers::list_algorithms))
        .route(
            "/v1/sessions",
            post(handlers::create_session).get(handlers::list_sessions),
        )
        .route(
            "/v1/sessions/{id}",
            get(handlers::get_session).delete(handlers::delete_session),
        )
        .route(
            "/v1/sessions/{id}/suggestions",
            post(handlers::suggest).get(handlers::list_suggestions),
        )
        .route(
            "/v1/sessions/{id}/suggestions/{suggestion_id}",
            delete(handlers::abandon_suggestion),
        )
        .route(
            "/v1/sessions/{id}/observations",
            post(handlers::observe).get(handlers::list_observations),
        )
        .route("/v1/sessions/{id}/steps", get(handlers::list_steps))
        .route("/v1/sessions/{id}/events", get(handlers::list_events))
        .route("/v1/events", get(outbound::stream_events))
        .route(
            "/v1/webhooks",
            post(outbound::create_webhook).get(outbound::list_webhooks),
        )
        .route(
            "/v1/webhooks/{id}",
            get(outbound::get_webhook).delete(outbound::delete_webhook),
        )
        .route("/v1/webhooks/{id}/ping", post(outbound::ping_webhook))
        .route(
            "/v1/webhooks/{id}/deliveries",
            get(outbound::list_deliveries),
        )
        .route("/v1/sessions/{id}/timeline", get(handlers::timeline))
        .route("/v1/sessions/{id}/regret", get(handlers::regret))
        .route("/v1/sessions/{id}/model", get(handlers::model))
        .route("/v1/sessions/{id}/predict", post(handlers::predict))
        .route("/v1/sessions/{id}/best", get(handlers::best))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .route("/openapi.json", get(openapi_handler))
        .merge(metrics_route(serve_metrics))
        .merge(crate::docs_ui::router(base_path.clone()))
        .merge(crate::dashboard::router(
            PageSettings {
                base: base_path,
                auth: access.auth,
            },
            || {
                use axum::response::IntoResponse;
                error::ApiError::not_found("session").into_response()
            },
        ))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(from_fn_with_state(state.access.clone(), auth::authenticate))
        .with_state(state)
        .layer(from_fn_with_state(
            request_timeout,
            transport::answer_within,
        ))
        .layer(from_fn(transport::limit_head))
        .layer(headers::compression())
        .layer(tower::util::option_layer(cors_origins.layer()))
        .layer(from_fn(headers::add_defaults))
        .layer(from_fn(transport::close_when_body_unread))
        .layer(from_fn_with_state(draining, drain::close_connections))
        .layer(telemetry::http::trace_layer())
        .layer(from_fn(telemetry::request_id::assign))
        .layer(from_fn(telemetry::http::measure))
}
