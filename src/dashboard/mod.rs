//! The dashboard: HTML pages that watch sessions live, served by the same binary.
//!
//! Three pages, `/` (the sessions), `/sessions/{id}` (one session) and
//! `/compare?sessions=A,B,…` (sessions side by side), and their scripts and style sheet,
//! embedded in the binary at build time (no CDN, works offline). The pages
//! hold no data: the script draws everything from the documented JSON endpoints under
//! `/v1` (the session, its timeline, model and recommendation), as any API client could.
//! Charts are hand-made SVG (docs/dashboard.md says why).

use axum::Router;
use axum::extract::RawPathParams;
use axum::extract::rejection::RawPathParamsRejection;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The pages' content security policy (the dashboard's and `/docs`): everything from
/// this origin, nothing inline, no framing. (`nosniff` is the router's, on every answer.)
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const PAGE: &str = include_str!("assets/page.html");
/// The pages' scripts and style sheet under `/assets/`, by file name. The scripts are
/// plain (no modules) and run in this order (page.html): helpers first, pages last.
const ASSETS: [(&str, &str, &str); 11] = [
    ("core.js", include_str!("assets/core.js"), JS),
    ("charts.js", include_str!("assets/charts.js"), JS),
    ("events.js", include_str!("assets/events.js"), JS),
    ("maps.js", include_str!("assets/maps.js"), JS),
    ("list.js", include_str!("assets/list.js"), JS),
    (
        "observations.js",
        include_str!("assets/observations.js"),
        JS,
    ),
    (
        "session_charts.js",
        include_str!("assets/session_charts.js"),
        JS,
    ),
    ("stream.js", include_str!("assets/stream.js"), JS),
    ("session.js", include_str!("assets/session.js"), JS),
    ("compare.js", include_str!("assets/compare.js"), JS),
    ("dashboard.css", include_str!("assets/dashboard.css"), CSS),
];
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The path prefix under which a reverse proxy serves tvbo (`/tvbo`, say; empty at the
/// root): the pages prefix every link and request with it. The proxy strips it before
/// forwarding, so the routes themselves do not change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BasePath(String);

impl BasePath {
    /// Empty, or `/` followed by segments of letters, digits and `-._~`, without a
    /// trailing `/` (a lone `/` is the root).
    pub fn parse(path: &str) -> Result<BasePath, String> {
        let path = path.trim_end_matches('/');
        let valid = path.is_empty()
            || (path.starts_with('/')
                && !path.contains("//")
                && path[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c)));
        if valid {
            Ok(BasePath(path.to_string()))
        } else {
            Err(format!(
                "must be empty or a path like /tvbo (letters, digits, -._~ and /), not {path:?}"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the pages need to know of the server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSettings {
    pub base: BasePath,
    /// Whether `/v1` needs an API key: the pages then ask for one before any request.
    pub auth: bool,
}

/// The dashboard's routes, to merge into the API's router; an asset path naming no asset
/// is answered `not_found()` (the API's 404 problem), a session page's path naming no
/// session a page that says so (404).
pub fn router<S: Clone + Send + Sync + 'static>(
    settings: PageSettings,
    not_found: fn() -> Response,
) -> Router<S> {
    let settings = std::sync::Arc::new(settings);
    let list_settings = settings.clone();
    let compare_settings = settings.clone();
    Router::new()
        .route(
            "/",
            get(move || async move { page(&list_settings, "sessions", "") }),
        )
        // The sessions compared are the query's; the script reads them.
        .route(
            "/compare",
            get(move || async move { page(&compare_settings, "compare", "") }),
        )
        .route(
            "/sessions/{id}",
            get(
                move |params: Result<RawPathParams, RawPathParamsRejection>| async move {
                    let params = params.ok();
                    let id = params.iter().flatten().find(|(name, _)| *name == "id");
                    session_page(&settings, id.map_or("", |(_, id)| id))
                },
            ),
        )
        .route(
            "/assets/{file}",
            get(
                move |params: Result<RawPathParams, RawPathParamsRejection>| async move {
                    let params = params.ok();
                    let file = params.iter().flatten().find(|(name, _)| *name == "file");
                    ASSETS
                        .iter()
                        .find(|(name, _, _)| Some(*name) == file.map(|(_, f)| f))
                        .map(|(_, body, content_type)| asset(body, content_type))
                        .unwrap_or_else(not_found)
                },
            ),
        )
}

/// The page of session `id` (any spelling of a UUID); for anything else, a page (404)
/// that says no session has that address, for a person who typed or pasted it.
fn session_page(settings: &PageSettings, id: &str) -> Response {
    match uuid::Uuid::parse_str(id) {
        Ok(id) => page(settings, "session", &id.to_string()),
        Err(_) => {
            let mut response = page(settings, "not-found", "");
            *response.status_mut() = axum::http::StatusCode::NOT_FOUND;
            response
        }
    }
}

/// The page shell: which view to draw and for which session; the script does the rest.
fn page(settings: &PageSettings, view: &str, session: &str) -> Response {
    let html = PAGE
        .replace("{{base}}", settings.base.as_str())
        .replace("{{auth}}", if settings.auth { "on" } else { "off" })
        .replace("{{view}}", view)
        .replace("{{session}}", session);
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_are_checked_and_normalised() {
        assert_eq!(BasePath::parse("").unwrap().as_str(), "");
        assert_eq!(BasePath::parse("/").unwrap().as_str(), "");
        assert_eq!(BasePath::parse("/tvbo/").unwrap().as_str(), "/tvbo");
        assert_eq!(
            BasePath::parse("/a/b-c_d.e~").unwrap().as_str(),
            "/a/b-c_d.e~"
        );
        for bad in ["tvbo", "/a//b", "/a b", "/\"><script>", "/a?b"] {
            assert!(BasePath::parse(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn pages_link_everything_under_the_base_path() {
        use axum::http::StatusCode;
        let base = PageSettings {
            base: BasePath::parse("/tvbo").unwrap(),
            auth: true,
        };
        let response = session_page(&base, "0b6c1c57-4c3e-4bb3-9d36-3f7cbb1b2a10");
        assert_eq!(response.status(), StatusCode::OK);
        let csp = response.headers()[header::CONTENT_SECURITY_POLICY].clone();
        assert_eq!(csp, CONTENT_SECURITY_POLICY);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        for expected in [
            r#"href="/tvbo/assets/dashboard.css""#,
            r#"src="/tvbo/assets/core.js""#,
            r#"src="/tvbo/assets/session.js""#,
            r#"data-base="/tvbo""#,
            r#"data-auth="on""#,
            r#"href="/tvbo/" class="brand""#,
            r#"data-session="0b6c1c57-4c3e-4bb3-9d36-3f7cbb1b2a10""#,
        ] {
            assert!(html.contains(expected), "{expected} in {html}");
        }
        assert!(!html.contains("{{"), "every placeholder filled: {html}");
        // Not a session's address: a page (for a person), 404, that names no session.
        let response = session_page(&base, "not-a-uuid\"><script>");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(html.contains(r#"data-view="not-found""#), "{html}");
        assert!(
            !html.contains("not-a-uuid") && !html.contains("<script>\""),
            "{html}"
        );
    }
}
