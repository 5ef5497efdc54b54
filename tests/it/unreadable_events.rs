//! One damaged event row stalls nothing (docs/events.md, "Unreadable events"): with keys
//! on, a session's event whose stored data was changed by hand is listed and streamed as
//! an `unreadable` marker with the events after it, its webhook delivery fails with a
//! reason while the next one is delivered, `tvbo check` names it, and a create that
//! resumes a session whose row does not read back answers 409 naming `name`. On both
//! backends.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::common;
use crate::delivery_fairness::{created, get, raise_events, settings};

use common::TestServer;

backend_tests!(
    settings = super::settings();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_unreadable_event_is_passed_with_a_marker_and_checked,
    resuming_an_unreadable_session_names_the_name,
);

/// A receiver that answers 503 until `open` is set, then 204, recording the event ids it
/// accepted; its port.
async fn receiver(open: Arc<Mutex<bool>>, accepted: Arc<Mutex<Vec<i64>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let (open, accepted) = (open.clone(), accepted.clone());
            async move {
                if !*open.lock().unwrap() {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                }
                let id = headers["tvbo-event-id"].to_str().unwrap().parse().unwrap();
                accepted.lock().unwrap().push(id);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// The `event:` names of the first `count` events of the tenant's stream after `after`.
async fn streamed_kinds(server: &TestServer, key: &str, after: i64, count: usize) -> Vec<String> {
    let response = reqwest::Client::new()
        .get(server.url(&format!("/v1/events?after={after}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let kinds = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix("event:"))
            .map(|kind| kind.trim().to_string())
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while kinds(&text).len() < count {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("the stream went on past the unreadable event")
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    kinds(&text)
}

async fn an_unreadable_event_is_passed_with_a_marker_and_checked(server: TestServer) {
    let key = server.new_key("acme").await;
    let (open, accepted) = (
        Arc::new(Mutex::new(false)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let port = receiver(open.clone(), accepted.clone()).await;
    let hook = json!({"url": format!("http://127.0.0.1:{port}/hook")});
    let webhook = created(&server, &key, "/v1/webhooks", hook).await;
    let body = json!({"parameters": [{"name": "x", "low": 0, "high": 1}]});
    let session = created(&server, &key, "/v1/sessions", body).await;
    raise_events(&server, &session, 0, 3).await;
    // The second event's data damaged by hand, while its delivery waits behind the first.
    server
        .execute(
            "UPDATE events SET data = 'not json' WHERE session_id = $1 AND seq = 2",
            &session,
        )
        .await;

    let (status, listed) = get(&server, &key, &format!("/v1/sessions/{session}/events")).await;
    assert_eq!(status, 200, "{listed}");
    let events = listed["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["dataset-full", "unreadable", "dataset-full"]);
    assert_eq!(events[1]["seq"], 2);
    assert!(
        events[1]["data"]["error"]
            .as_str()
            .unwrap()
            .contains("event data"),
        "{listed}"
    );
    let before = events[0]["id"].as_i64().unwrap() - 1;
    assert_eq!(
        streamed_kinds(&server, &key, before, 3).await,
        ["dataset-full", "unreadable", "dataset-full"]
    );

    // The receiver recovers: the first and third are delivered, the second fails, saying why.
    *open.lock().unwrap() = true;
    let ids: Vec<i64> = events.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while accepted.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*accepted.lock().unwrap(), [ids[0], ids[2]]);
    // The receiver's answer reaches the log when the worker records it, a moment after
    // the receiver took the delivery.
    let states = |log: &Value| -> Vec<String> {
        log["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["state"].as_str().unwrap().to_string())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let log = loop {
        let (status, log) = get(&server, &key, &format!("/v1/webhooks/{webhook}/deliveries")).await;
        assert_eq!(status, 200, "{log}");
        if !states(&log).iter().any(|s| s == "pending") || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(states(&log), ["delivered", "failed", "delivered"], "{log}");
    assert!(
        log["deliveries"][1]["last_error"]
            .as_str()
            .unwrap()
            .contains("does not read back"),
        "{log}"
    );

    let report = tvbo::session::check::check_database(server.store().as_ref())
        .await
        .unwrap();
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].id.to_string(), session);
    assert!(
        report.damaged[0].problems[0].starts_with("event 2: "),
        "{report:?}"
    );
    assert_eq!((report.webhooks, report.damaged_webhooks.len()), (1, 0));
}

async fn resuming_an_unreadable_session_names_the_name(server: TestServer) {
    let key = server.new_key("acme").await;
    let body = json!({"name": "tuned", "parameters": [{"name": "x", "low": 0, "high": 1}]});
    let session = created(&server, &key, "/v1/sessions", body.clone()).await;
    server
        .execute(
            "UPDATE sessions SET config = '{\"hand\": \"edited\"}' WHERE id = $1",
            &session,
        )
        .await;
    let mut resume = body;
    resume["resume"] = json!(true);
    let before = server.dump().await;
    let response = reqwest::Client::new()
        .post(server.url("/v1/sessions"))
        .bearer_auth(&key)
        .json(&resume)
        .send()
        .await
        .unwrap();
    let (status, problem) = TestServer::read(response).await;
    assert_eq!(status, 409, "{problem}");
    assert_eq!(problem["field"], "name", "{problem}");
    assert_eq!(
        server.dump().await,
        before,
        "a refused resume changed the database"
    );
}
