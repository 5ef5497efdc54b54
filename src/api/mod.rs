//! The HTTP API (DESIGN.md §5): axum router, handlers, problem+json errors, OpenAPI.

pub mod error;
pub mod extract;
pub mod handlers;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;
use utoipa::OpenApi;

use crate::session::service::{Limits, SessionService};
use crate::store::Store;

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    pub service: SessionService,
}

/// Longest a request may take before the server answers 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The OpenAPI description of the API, generated from the handlers and types.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "tvbo",
        description = "Time-varying Bayesian optimization as a service: sessions suggest settings, clients observe values, the server models the objective over space and time and forgets what went stale."
    ),
    paths(
        handlers::create_session,
        handlers::list_sessions,
        handlers::get_session,
        handlers::delete_session,
        handlers::suggest,
        handlers::observe,
        handlers::list_observations,
        handlers::regret,
        handlers::model,
        handlers::predict,
        handlers::best,
        handlers::healthz,
        handlers::readyz,
    ),
    components(schemas(crate::session::views::ObservationInput))
)]
pub struct ApiDoc;

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

/// The application's router over a store, with the given caps on each session's work.
pub fn router(store: Arc<dyn Store>, limits: Limits) -> Router {
    let state = AppState {
        service: SessionService::new(store, limits),
    };
    Router::new()
        .route(
            "/v1/sessions",
            post(handlers::create_session).get(handlers::list_sessions),
        )
        .route(
            "/v1/sessions/{id}",
            get(handlers::get_session).delete(handlers::delete_session),
        )
        .route("/v1/sessions/{id}/suggestions", post(handlers::suggest))
        .route(
            "/v1/sessions/{id}/observations",
            post(handlers::observe).get(handlers::list_observations),
        )
        .route("/v1/sessions/{id}/regret", get(handlers::regret))
        .route("/v1/sessions/{id}/model", get(handlers::model))
        .route("/v1/sessions/{id}/predict", post(handlers::predict))
        .route("/v1/sessions/{id}/best", get(handlers::best))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .route("/openapi.json", get(openapi_handler))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .with_state(state)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
}
