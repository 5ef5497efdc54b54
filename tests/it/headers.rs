//! The headers every answer carries (src/api/headers.rs): `nosniff` on all of them,
//! `no-store` on the API's answers (errors included), a content security policy that
//! forbids framing on the pages and the API, CORS only for the origins allowed, and
//! gzip for large answers to the clients that accept it.

use crate::common;

use common::TestServer;
use reqwest::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL,
    CONTENT_SECURITY_POLICY, HeaderMap, X_CONTENT_TYPE_OPTIONS,
};
use reqwest::{Method, StatusCode};
use tvbo::api::RouterSettings;
use tvbo::api::headers::CorsOrigins;

async fn headers_of(server: &TestServer, method: Method, path: &str) -> (StatusCode, HeaderMap) {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("origin", "https://elsewhere.example")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.send(request).await;
    (response.status(), response.headers().clone())
}

#[tokio::test]
async fn every_answer_is_nosniff_the_api_is_not_stored_and_nothing_is_framed() {
    let server = TestServer::start().await;
    let id = server.create(common::client_session("gp-ucb", 1)).await;
    let unknown = "/v1/sessions/0b6c1c57-4c3e-4bb3-9d36-3f7cbb1b2a10";
    let asset = format!(
        "/docs/assets/swagger-ui-{}/swagger-ui.css",
        tvbo::docs_ui::SWAGGER_UI_VERSION
    );
    // (method, path, status, whether the API's `no-store` applies)
    let answers = [
        (Method::GET, "/v1/sessions".to_string(), 200, true),
        (Method::GET, format!("/v1/sessions/{id}"), 200, true),
        (Method::GET, unknown.to_string(), 404, true),
        (Method::GET, "/nowhere".to_string(), 404, true),
        (Method::PUT, "/v1/sessions".to_string(), 405, true),
        (Method::GET, "/openapi.json".to_string(), 200, true),
        (Method::GET, "/healthz".to_string(), 200, true),
        (Method::GET, "/readyz".to_string(), 200, true),
        (Method::GET, "/".to_string(), 200, false),
        (Method::GET, format!("/sessions/{id}"), 200, false),
        (Method::GET, "/assets/core.js".to_string(), 200, false),
        (Method::GET, "/assets/nope.js".to_string(), 404, true),
        (Method::GET, "/docs".to_string(), 200, false),
        (Method::GET, "/docs/assets/docs.js".to_string(), 200, false),
        (Method::GET, asset, 200, false),
    ];
    for (method, path, status, api) in answers {
        let (got, headers) = headers_of(&server, method, &path).await;
        assert_eq!(got.as_u16(), status, "{path}");
        assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
        let csp = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        if api {
            assert_eq!(headers[CACHE_CONTROL], "no-store", "{path}");
            assert_eq!(
                csp,
                tvbo::api::headers::API_CONTENT_SECURITY_POLICY,
                "{path}"
            );
        }
        assert!(
            !headers
                .keys()
                .any(|k| k.as_str().starts_with("access-control-")),
            "{path}: CORS is off by default: {headers:?}"
        );
    }
    let policy = tvbo::dashboard::CONTENT_SECURITY_POLICY;
    assert!(policy.starts_with("default-src 'none'; script-src 'self';"));
    for path in ["/", "/docs"] {
        let (_, headers) = headers_of(&server, Method::GET, path).await;
        assert_eq!(headers[CONTENT_SECURITY_POLICY], policy, "{path}");
    }
    // Not a CORS preflight without CORS: the API has no OPTIONS.
    let (status, _) = headers_of(&server, Method::OPTIONS, "/v1/sessions").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    server.stop().await;
}

#[tokio::test]
async fn cors_answers_the_allowed_origins_only() {
    let allowed = "https://app.example.com";
    let settings = RouterSettings {
        cors_origins: CorsOrigins::parse(&format!("{allowed}, http://localhost:3000")).unwrap(),
        ..common::open_settings(Default::default())
    };
    let server = TestServer::start_configured(settings, Default::default()).await;
    let preflight = |origin: &str| {
        server
            .client
            .request(Method::OPTIONS, server.url("/v1/sessions"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type, idempotency-key",
            )
            .send()
    };
    let answer = preflight(allowed).await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    assert_eq!(answer.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], allowed);
    let allowed_headers = answer.headers()[ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .unwrap()
        .to_string();
    for header in ["authorization", "content-type", "idempotency-key"] {
        assert!(allowed_headers.contains(header), "{allowed_headers}");
    }
    assert_eq!(answer.headers()[X_CONTENT_TYPE_OPTIONS], "nosniff");

    let refused = preflight("https://evil.example").await.unwrap();
    assert!(
        refused.headers().get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "{:?}",
        refused.headers()
    );

    let simple = server
        .client
        .get(server.url("/v1/sessions"))
        .header("origin", allowed)
        .send()
        .await
        .unwrap();
    assert_eq!(simple.status(), StatusCode::OK);
    assert_eq!(simple.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], allowed);
    assert_eq!(simple.headers()[CACHE_CONTROL], "no-store");
    server.stop().await;
}

#[test]
fn a_bad_origin_fails_at_start_naming_the_setting() {
    use clap::Parser;
    let cli = tvbo::config::Cli::try_parse_from(["tvbo", "--cors-origins", "https://a.example/"])
        .unwrap();
    let error = cli.serve.router_settings().unwrap_err().to_string();
    assert!(error.starts_with("TVBO_CORS_ORIGINS "), "{error}");
}

/// An answer given before the request's body was read (a 401 from the key check, a 404
/// of no route) says `Connection: close`, since the server will not read that body to
/// keep the connection; an answer to a request whose body was read keeps it.
#[tokio::test]
async fn an_answer_before_the_body_was_read_closes_the_connection() {
    let secured = RouterSettings {
        access: tvbo::api::auth::AccessSettings::default(),
        ..Default::default()
    };
    let server = TestServer::start_configured(secured, Default::default()).await;
    let body = serde_json::to_vec(&common::client_session("gp-ucb", 1)).unwrap();
    let post = |path: &str, key: Option<&str>| {
        let mut request = axum::http::Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/json")
            .header("content-length", body.len());
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        request.body(axum::body::Body::from(body.clone())).unwrap()
    };
    let made = tvbo::keys::new_key("t", Some("t"), false).unwrap();
    server.store().insert_api_key(&made.row).await.unwrap();
    let closes = |response: &axum::http::Response<axum::body::Body>| {
        response
            .headers()
            .get("connection")
            .is_some_and(|value| value == "close")
    };
    let unauthorised = server.send(post("/v1/sessions", None)).await;
    assert_eq!(unauthorised.status(), StatusCode::UNAUTHORIZED);
    assert!(closes(&unauthorised));
    let nowhere = server.send(post("/v1/nowhere", Some(&made.key))).await;
    assert_eq!(nowhere.status(), StatusCode::NOT_FOUND);
    assert!(closes(&nowhere));
    let created = server.send(post("/v1/sessions", Some(&made.key))).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert!(!closes(&created), "{:?}", created.headers());
}

/// The answer to GET `path` with `accept-encoding` (when given): its status, its
/// `content-encoding` and `vary`, and its body as sent.
async fn encoded(
    server: &TestServer,
    path: &str,
    accept: Option<&str>,
) -> (u16, String, String, Vec<u8>) {
    let mut request = axum::http::Request::get(path);
    if let Some(accept) = accept {
        request = request.header("accept-encoding", accept);
    }
    let response = server
        .send(request.body(axum::body::Body::empty()).unwrap())
        .await;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map_or(String::new(), |v| v.to_str().unwrap().to_string())
    };
    let (encoding, vary) = (header("content-encoding"), header("vary"));
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, encoding, vary, body.to_vec())
}

#[tokio::test]
async fn large_answers_are_gzipped_for_clients_that_accept_it_and_nothing_else_is() {
    use std::io::Read;
    let server = TestServer::start().await;
    let id = server.create(common::client_session("gp-ucb", 1)).await;
    let observations = (0..80)
        .map(|k| serde_json::json!({"params": {"x": f64::from(k) / 80.0, "y": 0.5}, "value": f64::from(k).sin(), "t": f64::from(k)}))
        .collect();
    server.observe_batch(&id, observations).await;
    // The timeline (sent a chunk at a time) and the OpenAPI document: large.
    for path in [
        format!("/v1/sessions/{id}/timeline"),
        "/openapi.json".to_string(),
    ] {
        let (status, encoding, _, plain) = encoded(&server, &path, None).await;
        assert_eq!((status, encoding.as_str()), (200, ""), "{path}");
        assert!(
            plain.len() >= usize::try_from(tvbo::api::headers::COMPRESS_FROM_BYTES).unwrap(),
            "{path}: {} bytes",
            plain.len()
        );
        let (status, encoding, vary, gzipped) =
            encoded(&server, &path, Some("gzip, deflate, br")).await;
        assert_eq!((status, encoding.as_str()), (200, "gzip"), "{path}");
        assert!(
            vary.to_ascii_lowercase().contains("accept-encoding"),
            "{path}: {vary}"
        );
        assert!(
            gzipped.len() * 2 < plain.len(),
            "{path}: {} of {}",
            gzipped.len(),
            plain.len()
        );
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&gzipped[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        // The same answer, but for the time it was given (a timeline's `as_of`).
        let as_json = |bytes: &[u8]| {
            let mut json = serde_json::from_slice::<serde_json::Value>(bytes).unwrap();
            if let Some(tracking) = json.get_mut("tracking") {
                tracking["as_of"] = serde_json::Value::Null;
            }
            json
        };
        assert!(as_json(&unzipped) == as_json(&plain), "{path}");
    }
    // A small answer goes as it is, whatever the client accepts.
    let (status, encoding, _, _) =
        encoded(&server, &format!("/v1/sessions/{id}"), Some("gzip")).await;
    assert_eq!((status, encoding.as_str()), (200, ""));
    // The event stream is never compressed: its messages must not wait in a compressor.
    let request = axum::http::Request::get(format!("/v1/events?session={id}"))
        .header("accept-encoding", "gzip")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.send(request).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers().get("content-encoding").is_none(),
        "{:?}",
        response.headers()
    );
}
