//! The API docs UI (`/docs`) in real headless Chromium that can reach nothing but the
//! test server: the page loads without a console error or a blocked resource, makes
//! every request to the test server, renders every operation of the served OpenAPI
//! document, and has the Authorize button. Under a base path (the server nested under
//! `/tvbo`, as a proxy that strips the prefix would serve it), a key entered through
//! Authorize goes with "Try it out" to the prefixed URL.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under CI).

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::dashboard::BasePath;
use tvbo::store::{PoolSettings, SqliteStore, Store};

/// The operation ids of an OpenAPI document, as Swagger UI names their blocks
/// (`operations-<tag>-<operation id>`).
fn operation_blocks(document: &Value) -> BTreeSet<String> {
    let mut blocks = BTreeSet::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let tag = operation["tags"][0].as_str().unwrap_or("default");
            let id = operation["operationId"].as_str().unwrap();
            blocks.insert(format!("operations-{tag}-{id}"));
        }
    }
    blocks
}

/// Opens the docs page at `url` (served from `origin`) and checks it: every operation of
/// `document` rendered, no error, nothing requested from elsewhere, Authorize there.
fn open_docs(browser: &mut Browser, url: &str, origin: &str, document: &Value) {
    let expected = operation_blocks(document);
    assert!(expected.len() >= 15, "{expected:?}");
    browser.open(
        url,
        &format!(
            "document.querySelectorAll('.opblock').length === {}",
            expected.len()
        ),
    );
    let rendered: BTreeSet<String> = serde_json::from_value(
        browser.eval("[...document.querySelectorAll('.opblock')].map(block => block.id)"),
    )
    .unwrap();
    assert_eq!(rendered, expected);
    // The validator would be called for a document served elsewhere than on loopback.
    assert_eq!(
        browser.eval("[ui.getConfigs().validatorUrl, ui.getConfigs().deepLinking]"),
        json!([null, true])
    );
    assert_eq!(
        browser.eval("!!document.querySelector('.auth-wrapper .btn.authorize')"),
        json!(true),
        "no Authorize button"
    );
    // Late errors (a blocked style, a failed fetch) have had the render's time to show.
    std::thread::sleep(Duration::from_millis(300));
    browser.eval("1");
    assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    let urls: Vec<&str> = browser
        .requests
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    for url in &urls {
        assert!(
            url.starts_with(&format!("{origin}/")) || url.starts_with("data:"),
            "a request left the test server: {url}"
        );
    }
    assert!(
        urls.iter().any(|u| u.ends_with("/openapi.json")),
        "{urls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swagger_ui_renders_every_operation_offline() {
    let Some(mut browser) = Browser::launch("docs_ui") else {
        return;
    };
    let server = TestServer::start().await;
    let (status, document) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    tokio::task::block_in_place(|| {
        open_docs(&mut browser, &server.url("/docs"), &server.base, &document);
        let urls: Vec<&str> = browser
            .requests
            .iter()
            .map(|r| r["url"].as_str().unwrap())
            .collect();
        assert!(
            urls.contains(&server.url("/openapi.json").as_str()),
            "{urls:?}"
        );
    });
    server.stop().await;
}

/// The router under `/tvbo`, as a reverse proxy that strips the prefix serves it, with
/// keys required; its origin and a key.
async fn serve_under(prefix: &str, dir: &std::path::Path) -> (String, String) {
    let url = format!("sqlite://{}", dir.join("tvbo.db").display());
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .unwrap(),
    );
    let made = tvbo::keys::new_key("docs", None, false).unwrap();
    store.insert_api_key(&made.row).await.unwrap();
    let settings = RouterSettings {
        base_path: BasePath::parse(prefix).unwrap(),
        ..Default::default()
    };
    let app = axum::Router::new().nest(prefix, tvbo::api::router(store, settings));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (origin, made.key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_base_path_authorize_and_try_it_out_use_the_prefix() {
    let Some(mut browser) = Browser::launch("docs_ui") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (origin, key) = serve_under("/tvbo", dir.path()).await;
    let document: Value = reqwest::get(format!("{origin}/tvbo/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    tokio::task::block_in_place(|| {
        open_docs(
            &mut browser,
            &format!("{origin}/tvbo/docs"),
            &origin,
            &document,
        );
        // Authorize with a key: React reads the input's value from its input event.
        browser.eval("document.querySelector('.auth-wrapper .btn.authorize').click()");
        assert!(browser.wait_for(
            "document.querySelector('.auth-container input')",
            Duration::from_secs(5)
        ));
        browser.eval(&format!(
            "(() => {{ const input = document.querySelector('.auth-container input'); \
             Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, '{key}'); \
             input.dispatchEvent(new Event('input', {{bubbles: true}})); \
             document.querySelector('.auth-container .btn.modal-btn.authorize').click(); \
             document.querySelector('.btn-done').click(); }})()",
        ));
        // Open an operation, try it out, and execute it.
        let operation = "#operations-sessions-list_sessions";
        browser.eval(&format!(
            "document.querySelector('{operation} .opblock-summary-control').click()"
        ));
        assert!(browser.wait_for(
            &format!("document.querySelector('{operation} .try-out__btn')"),
            Duration::from_secs(5)
        ));
        browser.eval(&format!(
            "document.querySelector('{operation} .try-out__btn').click()"
        ));
        assert!(browser.wait_for(
            &format!("document.querySelector('{operation} .execute')"),
            Duration::from_secs(5)
        ));
        browser.eval(&format!(
            "document.querySelector('{operation} .execute').click()"
        ));
        let answered = browser.wait_for(
                &format!(
                    "document.querySelector('{operation} .live-responses-table td.response-col_status:not(.col_header)')\
                     ?.textContent.trim() === '200'"
                ),
                Duration::from_secs(10)
            );
        let shown = browser.eval(&format!("document.querySelector('{operation}').innerText"));
        assert!(
            answered,
            "Try it out did not answer 200: {:?} {} {:?}",
            browser.errors,
            shown,
            browser
                .requests
                .iter()
                .map(|r| &r["url"])
                .collect::<Vec<_>>()
        );
        let call = browser
            .requests
            .iter()
            .find(|r| r["url"].as_str().unwrap().contains("/v1/sessions"))
            .expect("the operation's request");
        assert!(
            call["url"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{origin}/tvbo/v1/sessions")),
            "{call}"
        );
        assert_eq!(
            call["headers"]["Authorization"],
            json!(format!("Bearer {key}"))
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    });
}
