//! Webhooks against an outside attack (docs/events.md, "Outbound safety"), through the
//! real server with keys on:
//!
//! - an allowed name that resolved to 127.0.0.1 reached the server's own network: where a
//!   name resolves is checked at each connection, and loopback is reached only when an
//!   address entry lists it;
//! - `ping` echoed the receiver's status and error text (a port scanner): it answers a
//!   few words, as the delivery log does;
//! - a secret with NUL (503 on PostgreSQL, stored on SQLite), 60,000 repeated event kinds
//!   and port 0 were accepted: each is a 422 naming the field, and nothing is stored, on
//!   both backends;
//! - malformed `TVBO_WEBHOOK_ALLOW` entries were taken: the server refuses to start.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::delivery::AllowList;
use tvbo::engine::Limits;

use crate::common::{self, TestServer};

/// The settings of a server whose sessions hold 3 active observations (the third raises
/// `dataset-full`, an event to deliver) and whose webhooks may reach `allow`.
fn settings(allow: &str) -> RouterSettings {
    RouterSettings {
        limits: Limits {
            max_active_observations: 3,
            ..Limits::default()
        },
        webhook_allow: AllowList::parse(allow).unwrap(),
        ..RouterSettings::default()
    }
}

/// A SQLite server with keys on, its webhooks allowed to reach `allow`.
async fn server(allow: &str) -> TestServer {
    TestServer::start_configured(settings(allow), Default::default())
        .await
        .with_key("acme")
        .await
}

/// A receiver on loopback that answers every POST to `/hook` with `status` and a body
/// nobody but its caller should read; it counts what it got.
struct Receiver {
    port: u16,
    hits: Arc<AtomicUsize>,
}

const RECEIVER_TEXT: &str = "internal detail: db=10.0.0.7 user=admin";

impl Receiver {
    async fn start(status: StatusCode) -> Receiver {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let handler = move || {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                (status, [("location", "http://10.0.0.7/")], RECEIVER_TEXT)
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Registers a webhook to `url`; its id.
async fn webhook(server: &TestServer, url: &str) -> String {
    let (status, made) = server.post("/v1/webhooks", &json!({"url": url})).await;
    assert_eq!(status, 201, "{made}");
    made["id"].as_str().unwrap().to_string()
}

async fn ping(server: &TestServer, hook: &str) -> Value {
    let (status, ping) = server
        .post(&format!("/v1/webhooks/{hook}/ping"), &json!({}))
        .await;
    assert_eq!(status, 200, "{ping}");
    ping
}

/// A session that raises `dataset-full` at once: its three observations fill it.
async fn raise_an_event(server: &TestServer) {
    let id = server
        .create(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "gp-ucb"},
            "time": {"source": "client"},
        }))
        .await;
    for t in 0..3 {
        let body = json!({"params": {"x": 0.2 * f64::from(t) + 0.1}, "value": 1.0, "t": t});
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/observations"), &body)
            .await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// The webhook's first delivery once an attempt at it has ended (within 10 s): delivered,
/// or with an error (a claim counts its attempt before it ends).
async fn first_attempted_delivery(server: &TestServer, hook: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, log) = server.get(&format!("/v1/webhooks/{hook}/deliveries")).await;
        let first = &log["deliveries"][0];
        if first["state"] == "delivered" || !first["last_error"].is_null() {
            return first.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no attempt ended within 10 s: {log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_resolving_to_loopback_reaches_it_only_when_its_address_is_listed() {
    let receiver = Receiver::start(StatusCode::NO_CONTENT).await;
    let url = format!("http://localhost:{}/hook", receiver.port);

    // The name alone: allowed as a name, but it resolves to loopback.
    let named = server("localhost").await;
    let hook = webhook(&named, &url).await;
    let answer = ping(&named, &hook).await;
    assert_eq!(
        (&answer["delivered"], &answer["status"], &answer["error"]),
        (&json!(false), &Value::Null, &json!("not-allowed")),
        "{answer}"
    );
    raise_an_event(&named).await;
    let delivery = first_attempted_delivery(&named, &hook).await;
    assert_eq!(
        (&delivery["state"], &delivery["last_error"]),
        (&json!("pending"), &json!("not-allowed")),
        "{delivery}"
    );
    assert_eq!(receiver.hits(), 0, "the receiver was reached");

    // With its address and port listed too, the same URL is delivered to.
    let listed = server(&format!("localhost, 127.0.0.1:{}", receiver.port)).await;
    let hook = webhook(&listed, &url).await;
    let answer = ping(&listed, &hook).await;
    assert_eq!(
        (&answer["delivered"], &answer["status"], &answer["error"]),
        (&json!(true), &json!(204), &Value::Null),
        "{answer}"
    );
    raise_an_event(&listed).await;
    let delivery = first_attempted_delivery(&listed, &hook).await;
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    assert_eq!(receiver.hits(), 2);

    // Another port of the listed address stays closed: to the name, at each connection;
    // to the address, at creation.
    let other = Receiver::start(StatusCode::NO_CONTENT).await;
    let hook = webhook(&listed, &format!("http://localhost:{}/hook", other.port)).await;
    assert_eq!(ping(&listed, &hook).await["error"], "not-allowed");
    let url = format!("http://127.0.0.1:{}/hook", other.port);
    let (status, problem) = listed.post("/v1/webhooks", &json!({"url": url})).await;
    assert_eq!(
        (status, &problem["field"]),
        (422, &json!("url")),
        "{problem}"
    );
    assert_eq!(other.hits(), 0, "a port not listed was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_and_the_delivery_log_say_how_a_receiver_answered_in_a_few_words() {
    let server = server("127.0.0.1").await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let teapot = Receiver::start(StatusCode::IM_A_TEAPOT).await;
    let redirect = Receiver::start(StatusCode::FOUND).await;
    for (port, expected) in [
        (closed, "unreachable"),
        (teapot.port, "answered-4xx"),
        (redirect.port, "answered-3xx"),
    ] {
        let hook = webhook(&server, &format!("http://127.0.0.1:{port}/hook")).await;
        let answer = ping(&server, &hook).await;
        assert_eq!(
            (&answer["delivered"], &answer["status"], &answer["error"]),
            (&json!(false), &Value::Null, &json!(expected)),
            "{answer}"
        );
        // The answer without its timing, whose digits may hold "418" or "302" by chance.
        let mut untimed = answer.clone();
        untimed.as_object_mut().unwrap().remove("duration_ms");
        let text = untimed.to_string();
        for echoed in ["internal", "10.0.0.7", "refused", "418", "302", "onnect"] {
            assert!(!text.contains(echoed), "{echoed} in {text}");
        }
    }
    assert_eq!((teapot.hits(), redirect.hits()), (1, 1));

    // A delivery's log keeps the class too, and the receiver's text nowhere.
    let failing = Receiver::start(StatusCode::INTERNAL_SERVER_ERROR).await;
    let hook = webhook(&server, &format!("http://127.0.0.1:{}/hook", failing.port)).await;
    raise_an_event(&server).await;
    let delivery = first_attempted_delivery(&server, &hook).await;
    assert_eq!(delivery["last_error"], "answered-5xx", "{delivery}");
    assert!(!delivery.to_string().contains("internal"), "{delivery}");
}

// Keys on, the default caps, webhooks allowed to loopback.
backend_tests!(
    settings = super::settings("127.0.0.1");
    #[tokio::test]
    webhook_input_gaps_are_refused_naming_the_field,
);

async fn webhook_input_gaps_are_refused_naming_the_field(server: TestServer) {
    let server = server.with_key("acme").await;
    let url = "http://127.0.0.1:9/hook";
    let secret = |text: &str| json!({"url": url, "secret": format!("0123456789abcdef{text}")});
    let repeated: Vec<&str> = vec!["optimum-moved"; 60_000];
    let before = server.dump().await;
    for (body, field) in [
        (secret("\u{0}"), "secret"),
        (secret("\u{1b}[2J"), "secret"),
        (secret("\n"), "secret"),
        (secret("\u{85}"), "secret"),
        (json!({"url": url, "events": repeated}), "events"),
        (
            json!({"url": url, "events": ["optimum-moved", "tracking-lost", "optimum-moved"]}),
            "events[2]",
        ),
        (json!({"url": "http://127.0.0.1:0/hook"}), "url"),
        (json!({"url": "http://a..localhost/hook"}), "url"),
    ] {
        let (status, problem) = server.post("/v1/webhooks", &body).await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (422, Some(field)),
            "{problem}"
        );
    }
    assert_eq!(server.dump().await, before, "a refused webhook was stored");

    // What is valid still is: every kind once, a secret with spaces and non-ASCII.
    let kinds: Vec<&str> = tvbo::domain::events::EventKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .collect();
    let body = json!({"url": url, "events": kinds, "secret": "a secret, with spaces — ü"});
    let (status, made) = server.post("/v1/webhooks", &body).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["events"].as_array().unwrap().len(), kinds.len());
}

/// A malformed entry in `TVBO_WEBHOOK_ALLOW` stops `tvbo serve` before it listens, naming
/// the entry.
#[test]
fn a_malformed_allow_list_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    for entry in ["..example.com", "*.com", "example.com:0", "10.1.2.3/16"] {
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_tvbo"))
            .arg("serve")
            .env(
                "DATABASE_URL",
                format!("sqlite://{}", dir.path().join("tvbo.db").display()),
            )
            .env("TVBO_BIND", "127.0.0.1:0")
            .env("TVBO_WEBHOOK_ALLOW", format!("hooks.example.com, {entry}"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{entry}: {stderr}");
        assert!(
            stderr.contains("TVBO_WEBHOOK_ALLOW") && stderr.contains(entry),
            "{entry}: {stderr}"
        );
    }
}
