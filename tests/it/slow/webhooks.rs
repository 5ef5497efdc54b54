//! Webhooks on the real binary (docs/events.md, "Delivery"): a receiver on loopback gets
//! every event of a run, at least once and deduplicable by id, in order per session, while
//! the server is SIGKILLed twice and restarted; with two replicas on PostgreSQL no event
//! is delivered by both. Keys on, as a deployment has them.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::scale_out::Replica;
use crate::common::PgDatabase;
use tvbo::delivery::sign::signature;

/// A delivery as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    id: i64,
    body: Value,
    signed_correctly: bool,
}

/// A webhook receiver on 127.0.0.1: records each delivery, checks its signature with
/// `secret`, answers 500 to the first attempt of every fifth event id (the server must
/// retry) and takes `delay` over each answer (so that a kill finds deliveries in flight).
struct Receiver {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(secret: String, delay: Duration, refuse_some: bool) -> Receiver {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let seen_refused: Arc<Mutex<Vec<i64>>> = Arc::default();
        let log = received.clone();
        let handler = move |headers: HeaderMap, body: axum::body::Bytes| {
            let (log, seen_refused, secret) = (log.clone(), seen_refused.clone(), secret.clone());
            async move {
                tokio::time::sleep(delay).await;
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string()
                };
                let id: i64 = header("tvbo-event-id").parse().unwrap_or(-1);
                let sent = header("tvbo-signature");
                let timestamp: i64 = sent
                    .split(',')
                    .find_map(|part| part.strip_prefix("t="))
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                let signed_correctly = sent == signature(&secret, timestamp, &body)
                    && (chrono::Utc::now().timestamp() - timestamp).abs() < 300;
                if refuse_some && id % 5 == 0 {
                    let mut refused = seen_refused.lock().unwrap();
                    if !refused.contains(&id) {
                        refused.push(id);
                        return StatusCode::INTERNAL_SERVER_ERROR;
                    }
                }
                log.lock().unwrap().push(Received {
                    id,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    signed_correctly,
                });
                StatusCode::NO_CONTENT
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { port, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// An operator's key for the database at `url` (`tvbo keys create`).
fn operator_key(url: &str) -> String {
    let made = Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .args(["keys", "create", "--name", "webhooks"])
        .env("DATABASE_URL", url)
        .output()
        .expect("tvbo keys create runs");
    assert!(made.status.success(), "{made:?}");
    String::from_utf8(made.stdout).unwrap().trim().to_string()
}

async fn start(name: &'static str, url: &str, allow: &str) -> Replica {
    let env = [
        ("TVBO_AUTH", "on"),
        ("TVBO_WEBHOOK_ALLOW", allow),
        ("TVBO_DRAIN_PERIOD", "0"),
    ];
    Replica::start(name, url, &env).await
}

/// POSTs `body` to `base` + `path` with the key; the answer's status and JSON.
async fn post(base: &str, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(base: &str, key: &str, path: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    response.json().await.unwrap()
}

/// A BOLT session in client time, 1-D.
async fn session(base: &str, key: &str, seed: u64) -> String {
    let body = json!({
        "parameters": [{"name": "x", "low": 0, "high": 1}],
        "algorithm": {"name": "bolt"},
        "time": {"source": "client"},
        "seed": seed,
    });
    let (status, answer) = post(base, key, "/v1/sessions", &body).await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_str().unwrap().to_string()
}

/// One suggest/observe round at time `t` of a session whose optimum jumps between 0.2 and
/// 0.8 every 40 steps (each jump an `optimum-moved` once the model follows).
async fn round(base: &str, key: &str, id: &str, t: f64) {
    let (status, answer) = post(
        base,
        key,
        &format!("/v1/sessions/{id}/suggestions"),
        &json!({"t": t}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let suggestion = &answer["suggestions"][0];
    let x = suggestion["params"]["x"].as_f64().unwrap();
    let centre = if (t as i64 / 40) % 2 == 0 { 0.2 } else { 0.8 };
    let value = (-(x - centre).powi(2) / 0.02).exp() + 0.01 * (t * 1.7).sin();
    let body = json!({"suggestion_id": suggestion["id"], "value": value, "t": t});
    let (status, answer) = post(base, key, &format!("/v1/sessions/{id}/observations"), &body).await;
    assert_eq!(status, 201, "{answer}");
}

/// Every event of the sessions, as the server lists them.
async fn events(base: &str, key: &str, sessions: &[String]) -> Vec<Value> {
    let mut all = Vec::new();
    for id in sessions {
        let listed = get(base, key, &format!("/v1/sessions/{id}/events?limit=10000")).await;
        all.extend(listed["events"].as_array().unwrap().iter().cloned());
    }
    all
}

/// Waits until the receiver holds every event of `expected` (by id), or panics after
/// `patience`.
async fn wait_for_all(receiver: &Receiver, expected: &[Value], patience: Duration) {
    let deadline = Instant::now() + patience;
    loop {
        let got: Vec<i64> = receiver.received().iter().map(|r| r.id).collect();
        let missing: Vec<i64> = expected
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .filter(|id| !got.contains(id))
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "events never delivered: {missing:?} (received {got:?})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates a webhook for every kind; its secret.
async fn webhook(base: &str, key: &str, port: u16) -> String {
    let body = json!({"url": format!("http://127.0.0.1:{port}/hook")});
    let (status, answer) = post(base, key, "/v1/webhooks", &body).await;
    assert_eq!(status, 201, "{answer}");
    answer["secret"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_reaches_the_receiver_across_two_sigkills() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let key = operator_key(&url);
    let secret = "whsec_test_secret_0123".to_string();
    let receiver = Receiver::start(secret.clone(), Duration::from_millis(150), true).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    let mut replica = start("a", &url, &allow).await;

    // Outside the allow list: refused, naming the field.
    let elsewhere = json!({"url": "http://127.0.0.2:9/hook"});
    let (status, problem) = post(&replica.base, &key, "/v1/webhooks", &elsewhere).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (422, Some("url")),
        "{problem}"
    );

    let body = json!({"url": format!("http://127.0.0.1:{}/hook", receiver.port), "secret": secret});
    let (status, answer) = post(&replica.base, &key, "/v1/webhooks", &body).await;
    assert_eq!(status, 201, "{answer}");
    let sessions = [
        session(&replica.base, &key, 5).await,
        session(&replica.base, &key, 6).await,
    ];
    // 200 steps (100 rounds of each session), the server SIGKILLed after steps 70 and 140.
    for step in 0..200 {
        if step == 70 || step == 140 {
            replica.kill();
            replica = start(if step == 70 { "b" } else { "c" }, &url, &allow).await;
        }
        let id = &sessions[step % 2];
        round(&replica.base, &key, id, (step / 2) as f64).await;
    }
    let expected = events(&replica.base, &key, &sessions).await;
    assert!(
        expected.len() >= 4,
        "the run raised too few events: {expected:?}"
    );
    wait_for_all(&receiver, &expected, Duration::from_secs(90)).await;

    let received = receiver.received();
    let by_id: HashMap<i64, &Value> = expected
        .iter()
        .map(|e| (e["id"].as_i64().unwrap(), e))
        .collect();
    for delivery in &received {
        assert!(
            delivery.signed_correctly,
            "bad signature on {}",
            delivery.id
        );
        let listed = by_id
            .get(&delivery.id)
            .unwrap_or_else(|| panic!("unknown id {}", delivery.id));
        assert_eq!(
            &delivery.body, *listed,
            "a delivery's body is the listed event"
        );
    }
    // In order per session: the first receipt of each event follows the session's seq.
    for id in &sessions {
        let mut firsts: Vec<i64> = Vec::new();
        for delivery in &received {
            let seq = delivery.body["seq"].as_i64().unwrap();
            if delivery.body["session"] == *id && !firsts.contains(&seq) {
                firsts.push(seq);
            }
        }
        assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{id}: {firsts:?}");
    }
    // The delivery log says delivered, with the retries the receiver forced.
    let webhooks = get(&replica.base, &key, "/v1/webhooks").await;
    let hook = webhooks["webhooks"][0]["id"].as_str().unwrap().to_string();
    let log = get(
        &replica.base,
        &key,
        &format!("/v1/webhooks/{hook}/deliveries"),
    )
    .await;
    let log = log["deliveries"].as_array().unwrap();
    assert_eq!(log.len(), expected.len());
    assert!(log.iter().all(|d| d["state"] == "delivered"), "{log:?}");
    assert!(
        log.iter()
            .filter(|d| d["event"].as_i64().unwrap() % 5 == 0)
            .all(|d| d["attempts"].as_i64().unwrap() >= 2),
        "{log:?}"
    );
    eprintln!(
        "{} events, {} deliveries received (duplicates after the kills: {})",
        expected.len(),
        received.len(),
        received.len() - expected.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_postgres_deliver_each_event_once() {
    let Some(db) = PgDatabase::create("two_replicas_on_postgres_deliver_each_event_once").await
    else {
        return;
    };
    let key = operator_key(&db.url);
    let receiver = Receiver::start("unused-secret-1234".into(), Duration::ZERO, false).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    let replicas = [
        start("a", &db.url, &allow).await,
        start("b", &db.url, &allow).await,
    ];
    webhook(&replicas[0].base, &key, receiver.port).await;
    let sessions = [
        session(&replicas[0].base, &key, 7).await,
        session(&replicas[1].base, &key, 8).await,
    ];
    for step in 0..200 {
        let base = &replicas[step % 2].base;
        round(base, &key, &sessions[(step / 2) % 2], (step / 4) as f64).await;
    }
    let expected = events(&replicas[0].base, &key, &sessions).await;
    assert!(
        expected.len() >= 2,
        "the run raised too few events: {expected:?}"
    );
    wait_for_all(&receiver, &expected, Duration::from_secs(30)).await;
    // Both replicas' workers looked for deliveries all along; give a late duplicate time.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for delivery in receiver.received() {
        *counts.entry(delivery.id).or_default() += 1;
    }
    assert_eq!(counts.len(), expected.len());
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
}
