//! One tenant's dead receivers do not delay another tenant's webhooks (docs/events.md,
//! "Delivery"): with keys on and the default limits, a tenant with 20 webhooks to a
//! receiver that accepts connections and never answers, and 600 deliveries queued for
//! them, leaves another tenant's one event delivered to its healthy receiver within
//! seconds (the worker used to send 16 at a time from one queue and wait for the whole
//! batch: 393 s). On both backends, whose claims are written once for both.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tvbo::api::RouterSettings;
use tvbo::delivery::AllowList;
use tvbo::domain::events::{EventKind, NewEvent};
use tvbo::domain::records::{CallRecord, ChangeSet};
use uuid::Uuid;

use crate::common;

use common::TestServer;

backend_tests!(
    settings = super::settings();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    dead_receivers_of_one_tenant_do_not_delay_another_tenants_delivery,
    a_paused_webhook_is_listed_and_a_delivered_ping_resumes_it,
);

/// Keys on, the default limits, webhooks to loopback allowed (the test's receivers).
pub(crate) fn settings() -> RouterSettings {
    RouterSettings {
        webhook_allow: AllowList::parse("127.0.0.1").unwrap(),
        ..RouterSettings::default()
    }
}

/// A receiver that accepts connections and never answers (each attempt at it waits for
/// the attempt's timeout); its port.
async fn black_hole() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    port
}

/// A receiver that answers 204 at once and records when each delivery arrived; its port.
async fn healthy(arrivals: Arc<Mutex<Vec<Instant>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let arrivals = arrivals.clone();
            async move {
                arrivals.lock().unwrap().push(Instant::now());
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// POSTs `body` to `path` with `key`; asserts a 201 and answers its body.
pub(crate) async fn created(
    server: &TestServer,
    key: &str,
    path: &str,
    body: serde_json::Value,
) -> String {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, answer) = TestServer::read(response).await;
    assert_eq!(status, 201, "{path}: {answer}");
    answer["id"].as_str().unwrap().to_string()
}

/// Commits `count` events to the session at version `version` on, one step each, as the
/// steps of a busy session would (through the store: the server's own events take a
/// model's drift to raise).
pub(crate) async fn raise_events(server: &TestServer, session: &str, version: i64, count: i64) {
    let id: Uuid = session.parse().unwrap();
    for v in version..version + count {
        let change = ChangeSet {
            calls: vec![CallRecord {
                kind: "observe",
                t: v as f64,
                dataset_size: 0,
                compute_seconds: 0.001,
                snapshot: None,
            }],
            events: vec![NewEvent {
                kind: EventKind::DatasetFull,
                t: v as f64,
                data: json!({"active": 1, "cap": 1}),
            }],
            ..ChangeSet::default()
        };
        server.store().commit(id, v, &change, None).await.unwrap();
    }
}

async fn dead_receivers_of_one_tenant_do_not_delay_another_tenants_delivery(server: TestServer) {
    let session_body = json!({"parameters": [{"name": "x", "low": 0, "high": 1}]});
    // The noisy tenant: 20 webhooks to a receiver that never answers, 30 sessions' events
    // for each (600 deliveries).
    let noisy = server.new_key("noisy").await;
    let dead = black_hole().await;
    for _ in 0..20 {
        let hook = json!({"url": format!("http://127.0.0.1:{dead}/hook")});
        created(&server, &noisy, "/v1/webhooks", hook).await;
    }
    for _ in 0..30 {
        let session = created(&server, &noisy, "/v1/sessions", session_body.clone()).await;
        raise_events(&server, &session, 0, 1).await;
    }
    // Let the worker take up the noisy tenant's deliveries first.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The quiet tenant: one webhook to a healthy receiver, one event.
    let quiet = server.new_key("quiet").await;
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let port = healthy(arrivals.clone()).await;
    let hook = json!({"url": format!("http://127.0.0.1:{port}/hook")});
    created(&server, &quiet, "/v1/webhooks", hook).await;
    let session = created(&server, &quiet, "/v1/sessions", session_body).await;
    let raised = Instant::now();
    raise_events(&server, &session, 0, 1).await;
    let deadline = raised + Duration::from_secs(30);
    while arrivals.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let arrived = arrivals.lock().unwrap().first().copied();
    let delay = arrived.expect("the quiet tenant's event was never delivered") - raised;
    println!("the quiet tenant's event waited {delay:?} behind 600 deliveries to dead receivers");
    assert!(delay < Duration::from_secs(3), "delivered after {delay:?}");
}

/// GETs `path` with `key`: status and body.
pub(crate) async fn get(server: &TestServer, key: &str, path: &str) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .get(server.url(path))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    TestServer::read(response).await
}

/// GETs `path` with `key`: the body of a 200.
async fn read(server: &TestServer, key: &str, path: &str) -> serde_json::Value {
    let (status, body) = get(server, key, path).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

async fn a_paused_webhook_is_listed_and_a_delivered_ping_resumes_it(server: TestServer) {
    let key = server.new_key("acme").await;
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let port = healthy(arrivals.clone()).await;
    let hook = json!({"url": format!("http://127.0.0.1:{port}/hook")});
    let webhook = created(&server, &key, "/v1/webhooks", hook).await;
    let listed = read(&server, &key, "/v1/webhooks").await;
    assert_eq!(listed["webhooks"][0]["state"], "active", "{listed}");
    assert_eq!(listed["webhooks"][0]["consecutive_failures"], 0, "{listed}");
    // As the breaker leaves it after an hour of failures (the store suite drives the
    // breaker itself on both backends).
    server
        .execute(
            "UPDATE webhooks SET consecutive_failures = 12, failing_since_micros = 1, \
             paused_micros = 2, paused_reason = 'timeout' WHERE id = $1",
            &webhook,
        )
        .await;
    let listed = read(&server, &key, "/v1/webhooks").await;
    let paused = &listed["webhooks"][0];
    assert_eq!(paused["state"], "paused", "{listed}");
    assert_eq!(paused["paused_reason"], "timeout", "{listed}");
    // Paused: a new event takes no delivery of it.
    let body = json!({"parameters": [{"name": "x", "low": 0, "high": 1}]});
    let session = created(&server, &key, "/v1/sessions", body).await;
    raise_events(&server, &session, 0, 1).await;
    let log = read(&server, &key, &format!("/v1/webhooks/{webhook}/deliveries")).await;
    assert_eq!(log["deliveries"], json!([]), "{log}");
    // A delivered ping resumes it.
    let response = reqwest::Client::new()
        .post(server.url(&format!("/v1/webhooks/{webhook}/ping")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let (status, ping) = TestServer::read(response).await;
    assert_eq!(status, 200, "{ping}");
    assert_eq!(
        (&ping["delivered"], &ping["resumed"]),
        (&json!(true), &json!(true))
    );
    let listed = read(&server, &key, "/v1/webhooks").await;
    let active = &listed["webhooks"][0];
    assert_eq!(active["state"], "active", "{listed}");
    assert_eq!(active["consecutive_failures"], 0, "{listed}");
    assert!(active.get("paused_at").is_none(), "{listed}");
    raise_events(&server, &session, 1, 1).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while arrivals.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        arrivals.lock().unwrap().len(),
        2,
        "the ping and the new event arrive"
    );
}
