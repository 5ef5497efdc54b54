//! The API docs UI at `/docs`: Swagger UI over the server's own `/openapi.json`.
//!
//! Swagger UI is vendored (assets/swagger-ui/README.md gives its version, origin and
//! checksums) and embedded in the binary at build time: the page works offline and asks
//! nothing of any other host (no CDN, no validator). Its files are served under a path
//! naming their version, so browsers may keep them for a year; the page and its init
//! script, which change with tvbo, are revalidated.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::dashboard::{BasePath, CONTENT_SECURITY_POLICY};

/// The vendored Swagger UI's version (swagger-ui-dist on npm); part of its assets' path.
pub const SWAGGER_UI_VERSION: &str = "5.35.0";

const PAGE: &str = include_str!("assets/page.html");
const INIT_SCRIPT: &str = include_str!("assets/docs.js");

/// The vendored files served under `/docs/assets/swagger-ui-<version>/`: (name, content
/// type, content). The licences go with the code they cover.
const SWAGGER_UI_FILES: [(&str, &str, &[u8]); 5] = [
    (
        "swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/swagger-ui/swagger-ui-bundle.js"),
    ),
    (
        "swagger-ui.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/swagger-ui/swagger-ui.css"),
    ),
    (
        "LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("assets/swagger-ui/LICENSE"),
    ),
    (
        "NOTICE",
        "text/plain; charset=utf-8",
        include_bytes!("assets/swagger-ui/NOTICE"),
    ),
    (
        "swagger-ui-bundle.js.LICENSE.txt",
        "text/plain; charset=utf-8",
        include_bytes!("assets/swagger-ui/swagger-ui-bundle.js.LICENSE.txt"),
    ),
];

/// Where the vendored files are served, relative to the base path.
fn swagger_ui_dir() -> String {
    format!("/docs/assets/swagger-ui-{SWAGGER_UI_VERSION}")
}

/// The docs UI's routes, to merge into the API's router: `/docs`, its init script and
/// the vendored Swagger UI; every link in the page is prefixed with `base`.
pub fn router<S: Clone + Send + Sync + 'static>(base: BasePath) -> Router<S> {
    let html = PAGE
        .replace(
            "{{swagger}}",
            &format!("{}{}", base.as_str(), swagger_ui_dir()),
        )
        .replace("{{base}}", base.as_str());
    let mut router = Router::new()
        .route("/docs", get(move || async move { page(html.clone()) }))
        .route(
            "/docs/assets/docs.js",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (header::CACHE_CONTROL, "no-cache"),
                    ],
                    INIT_SCRIPT,
                )
            }),
        );
    for (name, content_type, body) in SWAGGER_UI_FILES {
        router = router.route(
            &format!("{}/{name}", swagger_ui_dir()),
            get(move || async move {
                (
                    [
                        (header::CONTENT_TYPE, content_type),
                        (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
                    ],
                    body,
                )
            }),
        );
    }
    router
}

/// The page, revalidated on every load, with the dashboard's content security policy:
/// Swagger UI needs nothing it forbids (its icons are `data:` images, which it allows).
fn page(html: String) -> Response {
    let mut response = (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        html,
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    async fn get(router: &Router, path: &str) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (parts.status, parts.headers, body.to_vec())
    }

    #[tokio::test]
    async fn the_page_links_its_assets_under_the_base_path_and_they_are_served() {
        let router: Router = router(BasePath::parse("/tvbo").unwrap());
        let (status, headers, html) = get(&router, "/docs").await;
        let html = String::from_utf8(html).unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
        let swagger = format!("/tvbo/docs/assets/swagger-ui-{SWAGGER_UI_VERSION}");
        for expected in [
            format!(r#"href="{swagger}/swagger-ui.css""#),
            format!(r#"src="{swagger}/swagger-ui-bundle.js""#),
            r#"src="/tvbo/docs/assets/docs.js""#.to_string(),
            r#"data-base="/tvbo""#.to_string(),
        ] {
            assert!(html.contains(&expected), "{expected} in {html}");
        }
        assert!(!html.contains("{{"), "every placeholder filled: {html}");
        // The routes themselves are unprefixed: the proxy strips the base path.
        for (name, _, body) in SWAGGER_UI_FILES {
            let (status, headers, served) =
                get(&router, &format!("{}/{name}", swagger_ui_dir())).await;
            assert_eq!(status, StatusCode::OK, "{name}");
            assert!(
                headers[header::CACHE_CONTROL]
                    .to_str()
                    .unwrap()
                    .contains("immutable")
            );
            assert_eq!(served, body, "{name}");
        }
        let (status, _, script) = get(&router, "/docs/assets/docs.js").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(script, INIT_SCRIPT.as_bytes());
    }
}
