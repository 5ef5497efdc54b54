//! The dashboard: HTML pages that watch sessions live, served by the same binary.
//!
//! Two pages, `/` (the sessions) and `/sessions/{id}` (one session), and their script and
//! style sheet, embedded in the binary at build time (no CDN, works offline). The pages
//! hold no data: the script draws everything from the documented JSON endpoints under
//! `/v1` (the session, its timeline, model and recommendation), as any API client could.
//! Charts are hand-made SVG (docs/dashboard.md says why).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The pages' content security policy: everything from this origin, nothing inline.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const PAGE: &str = include_str!("assets/page.html");
const SCRIPT: &str = include_str!("assets/dashboard.js");
const STYLE: &str = include_str!("assets/dashboard.css");

/// The dashboard's routes, to merge into the API's router.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { page("sessions", "") }))
        .route(
            "/sessions/{id}",
            get(|Path(id): Path<String>| async move { session_page(&id) }),
        )
        .route(
            "/assets/dashboard.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/dashboard.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
}

fn session_page(id: &str) -> Response {
    match uuid::Uuid::parse_str(id) {
        Ok(id) => page("session", &id.to_string()),
        Err(_) => (StatusCode::NOT_FOUND, "no such session").into_response(),
    }
}

/// The page shell: which view to draw and for which session; the script does the rest.
fn page(view: &str, session: &str) -> Response {
    let html = PAGE
        .replace("{{view}}", view)
        .replace("{{session}}", session);
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
