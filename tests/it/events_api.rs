//! The event stream `GET /v1/events` and the webhook API (docs/events.md) over a socket,
//! keys on: the stream sends a session's version and events as they are committed and
//! resumes after `Last-Event-ID`; webhooks are refused outside the allow list (422
//! naming `url`), scoped to their tenant, pinged, deleted.

use std::time::Duration;

use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::delivery::AllowList;
use tvbo::engine::Limits;

use crate::common::TestServer;
use crate::common::sse::Messages;

/// A server with keys on, the allow list `allow` and at most `cap` active observations per
/// session.
async fn server(allow: &str, cap: usize) -> TestServer {
    let settings = RouterSettings {
        limits: Limits {
            max_active_observations: cap,
            ..Limits::default()
        },
        webhook_allow: AllowList::parse(allow).unwrap(),
        ..RouterSettings::default()
    };
    TestServer::start_configured(settings, Default::default())
        .await
        .with_key("acme")
        .await
}

/// Observes `count` settings of the 1-D session `id` at times from `t0` on.
async fn observe(server: &TestServer, id: &str, t0: f64, count: usize) {
    for i in 0..count {
        let t = t0 + i as f64;
        let body = json!({"params": {"x": (0.37 * t).sin().abs()}, "value": 1.0, "t": t});
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/observations"), &body)
            .await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// The status and body of a GET with a key of another tenant.
async fn get_as_stranger(server: &TestServer, path: &str) -> (u16, Value) {
    let made = tvbo::keys::new_key("stranger", Some("someone-else"), false).unwrap();
    server.store().insert_api_key(&made.row).await.unwrap();
    let response = reqwest::Client::new()
        .get(server.url(path))
        .bearer_auth(&made.key)
        .send()
        .await
        .unwrap();
    TestServer::read(response).await
}

async fn session(server: &TestServer) -> String {
    server
        .create(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "gp-ucb"},
            "time": {"source": "client"},
        }))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_sends_versions_and_events_live_and_resumes_after_an_id() {
    let server = server("", 5).await;
    let id = session(&server).await;
    let query = format!("?session={id}");
    let mut stream = Messages::open(&server, &query, None).await;
    let (_, kind, data) = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        (kind.as_str(), data["version"].as_i64()),
        ("version", Some(0))
    );
    // Five observations reach the cap: one dataset-full, after five versions.
    observe(&server, &id, 0.0, 5).await;
    let mut event = None;
    while let Some((event_id, kind, data)) = stream.next(Duration::from_secs(5)).await {
        if kind == "dataset-full" {
            event = Some((event_id.unwrap(), data));
            break;
        }
        assert_eq!(kind, "version", "{data}");
    }
    let (event_id, data) = event.expect("the dataset-full event arrives live");
    assert_eq!(data["id"].as_i64(), Some(event_id));
    assert_eq!(data["session"], id.as_str());
    assert_eq!(
        (data["kind"].as_str(), data["data"]["cap"].as_i64()),
        (Some("dataset-full"), Some(5))
    );
    // The listing shows the same event, with the same id.
    let (_, listed) = server.get(&format!("/v1/sessions/{id}/events")).await;
    assert_eq!(listed["events"][0], data);

    // Resumed after the event: not sent again; resumed before it: sent again.
    let mut after =
        Messages::open(&server, "?kinds=dataset-full", Some(&event_id.to_string())).await;
    assert!(after.next(Duration::from_millis(1500)).await.is_none());
    let before = (event_id - 1).to_string();
    let mut again = Messages::open(&server, "?kinds=dataset-full", Some(&before)).await;
    let (replayed, _, _) = again.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(replayed, Some(event_id));
    // Filtered out by kind: nothing.
    let mut other =
        Messages::open(&server, &format!("?kinds=model-reset&after={before}"), None).await;
    assert!(other.next(Duration::from_millis(1500)).await.is_none());

    // Bad input names the field; another tenant's session is not found.
    let bad = server
        .client
        .get(server.url("/v1/events"))
        .header("last-event-id", "x");
    let bad: Value = bad.send().await.unwrap().json().await.unwrap();
    assert_eq!(bad["field"], "Last-Event-ID");
    let (status, problem) = server.get("/v1/events?kinds=nonsense").await;
    assert_eq!((status, problem["field"].as_str()), (422, Some("kinds")));
    let (status, _) = get_as_stranger(&server, &format!("/v1/events?session={id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_are_checked_scoped_pinged_and_deleted() {
    // The default: no host allowed, and the refusal says how to allow one.
    let closed = server("", 100).await;
    let (status, problem) = closed
        .post(
            "/v1/webhooks",
            &json!({"url": "https://hooks.example.com/x"}),
        )
        .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (422, Some("url")),
        "{problem}"
    );
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("TVBO_WEBHOOK_ALLOW")
    );

    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = receiver.local_addr().unwrap().port();
    let app = axum::Router::new().route("/hook", axum::routing::post(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(receiver, app).await });
    let server = server("127.0.0.1", 100).await;
    let url = format!("http://127.0.0.1:{port}/hook");
    for (body, field) in [
        (json!({"url": "http://127.0.0.2/hook"}), "url"),
        (json!({"url": "ftp://127.0.0.1/hook"}), "url"),
        (
            json!({"url": url, "events": ["optimum-moved", "nope"]}),
            "events[1]",
        ),
        (json!({"url": url, "secret": "short"}), "secret"),
        (json!({"url": url, "extra": 1}), "extra"),
    ] {
        let (status, problem) = server.post("/v1/webhooks", &body).await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (422, Some(field)),
            "{body}: {problem}"
        );
    }
    let (status, made) = server
        .post(
            "/v1/webhooks",
            &json!({"url": url, "events": ["optimum-moved"]}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert!(made["secret"].as_str().unwrap().starts_with("whsec_"));
    let hook = made["id"].as_str().unwrap().to_string();
    let (_, listed) = server.get("/v1/webhooks").await;
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1);
    assert!(listed["webhooks"][0].get("secret").is_none(), "{listed}");

    let (status, ping) = server
        .post(&format!("/v1/webhooks/{hook}/ping"), &json!({}))
        .await;
    assert_eq!(
        (status, ping["delivered"].as_bool(), ping["status"].as_i64()),
        (200, Some(true), Some(200))
    );
    let (_, log) = server.get(&format!("/v1/webhooks/{hook}/deliveries")).await;
    assert_eq!(log["deliveries"], json!([]));

    let (status, _) = get_as_stranger(&server, &format!("/v1/webhooks/{hook}")).await;
    assert_eq!(status, 404);
    let (_, theirs) = get_as_stranger(&server, "/v1/webhooks").await;
    assert_eq!(theirs["webhooks"], json!([]));
    let deleted = server
        .client
        .delete(server.url(&format!("/v1/webhooks/{hook}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let (status, _) = server.get(&format!("/v1/webhooks/{hook}")).await;
    assert_eq!(status, 404);
    let (status, _) = server.get("/v1/webhooks/not-a-uuid").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ends_when_its_key_is_revoked() {
    let server = server("", 100).await;
    let lasted = crate::common::sse::lasts_after_its_key_is_revoked(&server, "acme").await;
    let lasted = lasted.expect("the stream outlived its key");
    eprintln!("the stream ended {lasted:?} after the revocation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_changes_the_stream_tells_each_changed_session_of_the_tenant() {
    let server = server("", 100).await;
    let quiet = session(&server).await;
    let mut stream = Messages::open(&server, "?changes=true", None).await;
    let busy = session(&server).await;
    observe(&server, &busy, 0.0, 2).await;
    let mut told = Vec::new();
    while let Some((id, kind, data)) = stream.next(Duration::from_secs(3)).await {
        assert_eq!((id, kind.as_str()), (None, "version"));
        told.push((
            data["session"].as_str().unwrap().to_string(),
            data["version"].as_i64().unwrap(),
        ));
        if told.last() == Some(&(busy.clone(), 2)) {
            break;
        }
    }
    // The new session up to its last observe, each version once and in order; the quiet
    // one (created just before the connection, which reaches 5 s back) at most as it was.
    assert_eq!(told.last(), Some(&(busy.clone(), 2)), "{told:?}");
    assert!(
        told.iter().all(|t| *t == (quiet.clone(), 0) || t.0 == busy),
        "{told:?}"
    );
    let versions: Vec<i64> = told.iter().filter(|t| t.0 == busy).map(|t| t.1).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
}
