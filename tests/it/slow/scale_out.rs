//! Scale-out: several server processes (the real binary) on one PostgreSQL database.
//!
//! - Two replicas serve one session to 8 concurrent clients (suggest, observe, batch
//!   observe, idempotent retries, also sent concurrently to both replicas): every
//!   acknowledged observation is stored exactly once, no suggestion id is handed out twice,
//!   every suggestion is observed at most once, no client is ever answered 409 (the
//!   replicas wait for each other on the session), and the final model on either replica
//!   equals a fresh process's rebuild from the database.
//! - The same load with one replica killed (SIGKILL) in the middle: the other keeps serving;
//!   requests whose reply was lost are retried with their `Idempotency-Key` on the survivor,
//!   and the same exactly-once checks hold.
//!
//! The database's outages are in `database_outages.rs`.
//!
//! The PostgreSQL tests need `TVBO_TEST_POSTGRES_URL` (or a `postgres://` DATABASE_URL) and
//! are skipped, saying so, without it.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use common::PgDatabase;

/// Concurrent clients of the session.
const CLIENTS: usize = 8;
/// Rounds per client; a round is one suggest and its observations, with retries (about
/// three calls), so 8 × 24 rounds are a few hundred calls.
const ROUNDS_PER_CLIENT: usize = 24;
/// Attempts of one logical request (failover included).
const ATTEMPTS: usize = 40;
/// Points at which the final models are compared.
const PREDICT_POINTS: [(f64, f64); 4] = [(0.1, 0.2), (0.3, 0.6), (0.5, 0.5), (0.9, 0.05)];

/// A `tvbo serve` child process; killed (SIGKILL) when dropped.
pub(crate) struct Replica {
    name: &'static str,
    child: Child,
    pub(crate) base: String,
}

impl Replica {
    /// Starts the binary on `database_url` with `TVBO_BIND=127.0.0.1:0` and extra `env`,
    /// reads the bound address from its log, and waits until `/readyz` answers 200.
    pub(crate) async fn start(
        name: &'static str,
        database_url: &str,
        env: &[(&str, &str)],
    ) -> Replica {
        let mut child = spawn_server(database_url, env);
        let address = listening_address(name, &mut child)
            .unwrap_or_else(|| panic!("replica {name} exited before listening"));
        let base = format!("http://{address}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = reqwest::get(format!("{base}/readyz")).await
                && r.status().is_success()
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {name} did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Replica { name, child, base }
    }

    /// SIGKILL: no graceful shutdown, connections and transactions cut where they are.
    pub(crate) fn kill(&mut self) {
        self.child.kill().expect("SIGKILL the replica");
        self.child.wait().expect("reap the replica");
        eprintln!("replica {} killed", self.name);
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tvbo serve` on `database_url`, port 0, JSON logs on a piped stdout (where the server
/// logs).
fn spawn_server(database_url: &str, env: &[(&str, &str)]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tvbo"));
    command
        .arg("serve")
        .env("TVBO_BIND", "127.0.0.1:0")
        .env("DATABASE_URL", database_url)
        // Keys are tested in tests/it/access.rs; this test is about the process.
        .env("TVBO_AUTH", "off")
        .env("TVBO_LOG_FORMAT", "json")
        .env("RUST_LOG", "warn,tvbo=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("the tvbo binary starts")
}

/// The address in the child's "tvbo listening" log line; None if it exits first. Every
/// log line is forwarded to the test's stderr (prefixed with `name`) by a thread that keeps
/// draining the pipe.
fn listening_address(name: &'static str, child: &mut Child) -> Option<SocketAddr> {
    let logs = child.stdout.take().expect("stdout is piped");
    let (found, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut found = Some(found);
        for line in BufReader::new(logs).lines() {
            let Ok(line) = line else { break };
            eprintln!("[{name}] {line}");
            let parsed: Option<SocketAddr> = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|log| log["fields"]["address"].as_str()?.parse().ok());
            if let Some(addr) = parsed
                && let Some(sender) = found.take()
            {
                let _ = sender.send(addr);
            }
        }
    });
    address.recv_timeout(Duration::from_secs(30)).ok()
}

/// The session every load test drives: client time (so the final model does not depend on
/// when it is read), 2-D, BOLT with its dataset held between 8 and 24 observations and a
/// warm-up of 4. BOLT fits and uses a spatio-temporal GP from the fifth suggestion on,
/// hallucinates pending points, records response times and forgets by relevance, so every
/// kind of write happens under concurrency; the small dataset keeps each call of a
/// test-profile build in milliseconds.
pub(crate) fn load_session() -> Value {
    json!({
        "name": "scale-out",
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": "bolt", "min_dataset_size": 8, "max_dataset_size": 24},
        "model": {"warmup": 4},
        "time": {"source": "client"},
        "seed": 7
    })
}

/// The measured value of an observation: a smooth objective plus `id`·1e-6, so that each
/// logical observation has its own value and can be found in the database by it.
fn objective(x: f64, y: f64, id: usize) -> f64 {
    -(x - 0.3).powi(2) - (y - 0.6).powi(2) + id as f64 * 1e-6
}

/// What the clients were told (2xx answers only).
#[derive(Default)]
struct Ledger {
    /// Idempotency key of each suggest call → the suggestion ids it answered.
    suggestions: HashMap<String, Vec<String>>,
    /// Value of each logical observation → (seq, suggestion id) as acknowledged.
    observations: HashMap<u64, (i64, Option<String>)>,
    /// Requests retried because the replica refused the connection (it was dead).
    refused_retries: usize,
    /// Requests retried because the reply was lost after the request went out (the
    /// replica died under it): the request may or may not have acted.
    lost_reply_retries: usize,
    /// Requests retried after 503.
    status_retries: usize,
}

/// Clients of a set of replicas, failing over between them.
struct Cluster {
    client: reqwest::Client,
    bases: Vec<String>,
    session: String,
    ledger: Mutex<Ledger>,
    /// Session time: every request takes the next tick (client-time session).
    clock: AtomicUsize,
    /// Logical observations so far (their ids).
    observation_ids: AtomicUsize,
    /// Rounds completed by all clients.
    rounds_done: AtomicUsize,
}

impl Cluster {
    fn tick(&self) -> f64 {
        self.clock.fetch_add(1, Ordering::SeqCst) as f64 * 0.05
    }

    /// POSTs `body` with `key` until a 2xx answer: first to replica `first`, then to the
    /// next one on transport errors (a dead replica) and 503. Any other answer (a 409
    /// `concurrent-change` among them) fails the test.
    async fn post(&self, first: usize, path: &str, key: &str, body: &Value) -> Value {
        let url_path = format!("/v1/sessions/{}/{path}", self.session);
        for attempt in 0..ATTEMPTS {
            let base = &self.bases[(first + attempt) % self.bases.len()];
            let sent = self
                .client
                .post(format!("{base}{url_path}"))
                .header("Idempotency-Key", key)
                .json(body)
                .send()
                .await;
            let reply = match sent {
                Ok(response) => {
                    let status = response.status().as_u16();
                    response.text().await.map(|text| (status, text))
                }
                Err(e) => Err(e),
            };
            match reply {
                Ok((status, text)) => {
                    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    if (200..300).contains(&status) {
                        return answer;
                    }
                    // A client that did nothing wrong never sees a 409: the replicas wait
                    // for each other on the session (no `concurrent-change` answers).
                    assert_eq!(
                        status, 503,
                        "{path} with key {key} on {base}: {status} {text}"
                    );
                    self.ledger.lock().unwrap().status_retries += 1;
                }
                Err(e) if e.is_connect() => self.ledger.lock().unwrap().refused_retries += 1,
                Err(_) => self.ledger.lock().unwrap().lost_reply_retries += 1,
            }
            tokio::time::sleep(Duration::from_millis(20 * (attempt as u64 + 1).min(10))).await;
        }
        panic!("{path} with key {key}: no 2xx answer in {ATTEMPTS} attempts");
    }

    /// A suggest call; records the ids it answered under its key.
    async fn suggest(&self, first: usize, key: &str, count: usize) -> Vec<(String, f64, f64)> {
        let body = json!({"count": count, "t": self.tick()});
        let answer = self.post(first, "suggestions", key, &body).await;
        self.record_suggestions(key, &answer);
        suggestions_of(&answer)
    }

    fn record_suggestions(&self, key: &str, answer: &Value) {
        let ids: Vec<String> = suggestions_of(answer).into_iter().map(|s| s.0).collect();
        let mut ledger = self.ledger.lock().unwrap();
        if let Some(earlier) = ledger.suggestions.insert(key.to_string(), ids.clone()) {
            assert_eq!(earlier, ids, "suggest key {key} answered two ways");
        }
    }

    /// A body observing `suggestion` (id, x, y) with a fresh logical id.
    fn observation_of(&self, suggestion: &(String, f64, f64)) -> Value {
        let id = self.observation_ids.fetch_add(1, Ordering::SeqCst);
        json!({
            "suggestion_id": suggestion.0,
            "value": objective(suggestion.1, suggestion.2, id),
            "t": self.tick()
        })
    }

    /// A body observing a setting of the client's own.
    fn own_observation(&self, x: f64, y: f64) -> Value {
        let id = self.observation_ids.fetch_add(1, Ordering::SeqCst);
        json!({"params": {"x": x, "y": y}, "value": objective(x, y, id), "t": self.tick()})
    }

    /// An observe call (single or batch); records what it acknowledged.
    async fn observe(&self, first: usize, key: &str, body: &Value) -> Value {
        let answer = self.post(first, "observations", key, body).await;
        self.record_observations(&answer);
        answer
    }

    fn record_observations(&self, answer: &Value) {
        let mut ledger = self.ledger.lock().unwrap();
        for o in answer["observations"].as_array().expect("observations") {
            let value = o["value"].as_f64().expect("value");
            let seq = o["seq"].as_i64().expect("seq");
            let suggestion = o["suggestion_id"].as_str().map(str::to_string);
            if let Some(earlier) = ledger
                .observations
                .insert(value.to_bits(), (seq, suggestion.clone()))
            {
                assert_eq!(
                    earlier,
                    (seq, suggestion),
                    "observation {value} acknowledged twice, differently"
                );
            }
        }
    }

    /// One client's rounds. Round kinds rotate: (0) suggest, observe; (1) suggest two,
    /// batch-observe them with a setting of the client's own; (2) suggest, and observe,
    /// each sent concurrently to both replicas under one key (both answers must agree);
    /// (3) suggest, observe, and resend the observe to the other replica (a replay).
    async fn run_client(&self, client: usize) {
        for round in 0..ROUNDS_PER_CLIENT {
            let first = (client + round) % self.bases.len();
            let other = first + 1;
            let key = |what: &str| format!("c{client}-r{round}-{what}");
            match (client + round) % 4 {
                0 => {
                    let s = self.suggest(first, &key("suggest"), 1).await;
                    let body = self.observation_of(&s[0]);
                    self.observe(other, &key("observe"), &body).await;
                }
                1 => {
                    let s = self.suggest(first, &key("suggest"), 2).await;
                    let own = (
                        round as f64 / ROUNDS_PER_CLIENT as f64,
                        client as f64 / CLIENTS as f64,
                    );
                    let body = json!({"observations": [
                        self.observation_of(&s[0]),
                        self.own_observation(own.0, own.1),
                        self.observation_of(&s[1]),
                    ]});
                    self.observe(first, &key("batch"), &body).await;
                }
                2 => {
                    let body = json!({"count": 1, "t": self.tick()});
                    let k = key("suggest");
                    let (a, b) = tokio::join!(
                        self.post(first, "suggestions", &k, &body),
                        self.post(other, "suggestions", &k, &body)
                    );
                    assert_eq!(a, b, "concurrent retries of {k} answered differently");
                    self.record_suggestions(&k, &a);
                    let s = suggestions_of(&a);
                    let body = self.observation_of(&s[0]);
                    let k = key("observe");
                    let (a, b) = tokio::join!(
                        self.observe(first, &k, &body),
                        self.observe(other, &k, &body)
                    );
                    assert_eq!(a, b, "concurrent retries of {k} answered differently");
                }
                _ => {
                    let s = self.suggest(first, &key("suggest"), 1).await;
                    let body = self.observation_of(&s[0]);
                    let k = key("observe");
                    let a = self.observe(first, &k, &body).await;
                    let b = self.observe(other, &k, &body).await;
                    assert_eq!(a, b, "the retry of {k} was not a replay");
                }
            }
            self.rounds_done.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// (id, x, y) of each suggestion of a suggest answer.
fn suggestions_of(answer: &Value) -> Vec<(String, f64, f64)> {
    answer["suggestions"]
        .as_array()
        .expect("suggestions")
        .iter()
        .map(|s| {
            (
                s["id"].as_str().expect("id").to_string(),
                s["params"]["x"].as_f64().expect("x"),
                s["params"]["y"].as_f64().expect("y"),
            )
        })
        .collect()
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200, "GET {url}");
    response.json().await.unwrap()
}

/// The model view, and the predictions at [`PREDICT_POINTS`] and session time `t`, of
/// `session` on `base`.
async fn final_model(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    t: f64,
) -> (Value, Value) {
    let model = get(client, format!("{base}/v1/sessions/{session}/model")).await;
    let points: Vec<Value> = PREDICT_POINTS
        .iter()
        .map(|(x, y)| json!({"x": x, "y": y}))
        .collect();
    let response = client
        .post(format!("{base}/v1/sessions/{session}/predict"))
        .json(&json!({"points": points, "t": t}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "predict on {base}");
    (model, response.json().await.unwrap())
}

/// Which replica to SIGKILL, and when.
struct Kill {
    /// Index in the replicas.
    replica: usize,
    /// Rounds (of all clients) done before the kill.
    after_rounds: usize,
}

/// Drives the session from [`CLIENTS`] clients through `replicas`, killing one as `kill`
/// says if it is given. Then checks, from the
/// database and the API, that every acknowledged observation is stored exactly once, that
/// the stored suggestions are exactly those handed out (no id twice), that each is observed
/// at most once, and that the survivors and a fresh process give the same model.
async fn drive_and_check(db: &PgDatabase, mut replicas: Vec<Replica>, kill: Option<Kill>) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let created = client
        .post(format!("{}/v1/sessions", replicas[0].base))
        .json(&load_session())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let session = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cluster = Arc::new(Cluster {
        client: client.clone(),
        bases: replicas.iter().map(|r| r.base.clone()).collect(),
        session: session.clone(),
        ledger: Mutex::default(),
        clock: AtomicUsize::new(0),
        observation_ids: AtomicUsize::new(0),
        rounds_done: AtomicUsize::new(0),
    });

    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let cluster = cluster.clone();
            tokio::spawn(async move { cluster.run_client(c).await })
        })
        .collect();
    let mut killed = None;
    if let Some(kill) = kill {
        // A client that stops early (it failed) must not leave the test waiting here.
        while cluster.rounds_done.load(Ordering::SeqCst) < kill.after_rounds
            && !clients.iter().any(tokio::task::JoinHandle::is_finished)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut replica = replicas.remove(kill.replica);
        replica.kill();
        killed = Some(replica);
    }
    for c in clients {
        c.await.expect("a client failed");
    }
    let ledger = std::mem::take(&mut *cluster.ledger.lock().unwrap());
    let calls = cluster.clock.load(Ordering::SeqCst);
    eprintln!(
        "{} rounds ({calls} suggest and observe requests, plus duplicates) in {:.1} s; \
         retried: {} refused connections, {} lost replies, {} after 503",
        CLIENTS * ROUNDS_PER_CLIENT,
        started.elapsed().as_secs_f64(),
        ledger.refused_retries,
        ledger.lost_reply_retries,
        ledger.status_retries,
    );
    if killed.is_some() {
        assert!(
            ledger.refused_retries > 0,
            "clients met the dead replica and failed over"
        );
    }

    // The database.
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let stored_observations =
        sqlx::query("SELECT value, seq, suggestion_id FROM observations WHERE session_id = $1")
            .bind(&session)
            .fetch_all(&pool)
            .await
            .unwrap();
    let logical_observations = cluster.observation_ids.load(Ordering::SeqCst);
    assert_eq!(
        ledger.observations.len(),
        logical_observations,
        "every observation the clients made was acknowledged (they retry until it is)"
    );
    let mut stored: HashMap<u64, Vec<(i64, Option<String>)>> = HashMap::new();
    for row in &stored_observations {
        let value: f64 = row.get("value");
        stored
            .entry(value.to_bits())
            .or_default()
            .push((row.get("seq"), row.get("suggestion_id")));
    }
    for (value, acknowledged) in &ledger.observations {
        let rows = stored.get(value).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            rows,
            std::slice::from_ref(acknowledged),
            "observation {} is stored once, as acknowledged",
            f64::from_bits(*value)
        );
    }
    assert_eq!(
        stored_observations.len(),
        logical_observations,
        "nothing but the acknowledged observations is stored"
    );

    let handed_out: Vec<&String> = ledger.suggestions.values().flatten().collect();
    let distinct: HashSet<&String> = handed_out.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        handed_out.len(),
        "a suggestion id was handed out twice"
    );
    let stored_suggestions: Vec<(String, String)> =
        sqlx::query_as("SELECT id, status FROM suggestions WHERE session_id = $1")
            .bind(&session)
            .fetch_all(&pool)
            .await
            .unwrap();
    let stored_ids: HashSet<&String> = stored_suggestions.iter().map(|(id, _)| id).collect();
    assert_eq!(
        stored_ids, distinct,
        "the stored suggestions are those handed out"
    );
    let mut observed_per_suggestion: HashMap<&str, usize> = HashMap::new();
    for (_, suggestion) in ledger.observations.values() {
        if let Some(id) = suggestion {
            *observed_per_suggestion.entry(id).or_default() += 1;
        }
    }
    for (id, status) in &stored_suggestions {
        assert_eq!(
            observed_per_suggestion.get(id.as_str()),
            Some(&1),
            "suggestion {id} is observed exactly once (each client observes what it gets)"
        );
        assert_eq!(status, "observed", "suggestion {id}");
    }
    let suggest_rows: i64 = sqlx::query_scalar("SELECT suggest_count FROM sessions WHERE id = $1")
        .bind(&session)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(suggest_rows as usize, distinct.len(), "suggest_count");
    pool.close().await;

    // The API, on every surviving replica and on a fresh process over the same database.
    let fresh = Replica::start("fresh", &db.url, &[]).await;
    let last_t = cluster.tick();
    let reference = final_model(&client, &fresh.base, &session, last_t).await;
    assert!(
        reference.0["dataset_size"].as_i64().unwrap() > 0,
        "the final model has data: {}",
        reference.0
    );
    let means: HashSet<u64> = reference.1["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["mean"].as_f64().unwrap().to_bits())
        .collect();
    assert_eq!(
        means.len(),
        PREDICT_POINTS.len(),
        "the final model is not flat: {}",
        reference.1
    );
    for replica in &replicas {
        let view = get(&client, format!("{}/v1/sessions/{session}", replica.base)).await;
        assert_eq!(view["observation_count"], json!(logical_observations));
        assert_eq!(view["pending_count"], json!(0));
        let model = final_model(&client, &replica.base, &session, last_t).await;
        assert_eq!(
            model.0, reference.0,
            "model on {} vs a fresh process",
            replica.name
        );
        assert_eq!(
            model.1, reference.1,
            "predictions on {} vs a fresh process",
            replica.name
        );
    }
    drop(killed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_one_session_exactly_once() {
    let Some(db) = PgDatabase::create("two_replicas_serve_one_session_exactly_once").await else {
        return;
    };
    let a = Replica::start("a", &db.url, &[]).await;
    let b = Replica::start("b", &db.url, &[]).await;
    drive_and_check(&db, vec![a, b], None).await;
}

/// Heavier contention than [`drive_and_check`]'s: a GP session with a few hundred
/// observations, so that each plan takes long enough for the replicas to collide on most
/// commits, and 8 clients alternating between the replicas. Every answer must be a 2xx:
/// the losing replica backs off and re-plans instead of answering `409 concurrent-change`
/// (which it did after 8 lost races in a row).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_session_never_answers_409() {
    const ROUNDS: usize = 12;
    let Some(db) = PgDatabase::create("contended_session_never_answers_409").await else {
        return;
    };
    let replicas = [
        Replica::start("a", &db.url, &[]).await,
        Replica::start("b", &db.url, &[]).await,
    ];
    let bases: Vec<String> = replicas.iter().map(|r| r.base.clone()).collect();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(110))
        .build()
        .unwrap();
    let mut session = load_session();
    session["algorithm"] = json!({"name": "gp-ucb"});
    let created = client
        .post(format!("{}/v1/sessions", bases[0]))
        .json(&session)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let seed: Vec<Value> = (0..300)
        .map(|i| {
            let (x, y) = ((i as f64 * 0.618).fract(), (i as f64 * 0.755).fract());
            json!({"params": {"x": x, "y": y}, "value": objective(x, y, i), "t": 0.0})
        })
        .collect();
    let seeded = client
        .post(format!("{}/v1/sessions/{id}/observations", bases[0]))
        .json(&json!({"observations": seed}))
        .send()
        .await
        .unwrap();
    assert_eq!(seeded.status().as_u16(), 201);
    let clock = Arc::new(AtomicUsize::new(1));
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (client, bases, id, clock) = (client.clone(), bases.clone(), id.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for round in 0..ROUNDS {
                let base = &bases[(c + round) % 2];
                let t = clock.fetch_add(1, Ordering::SeqCst) as f64 * 0.01;
                let response = client
                    .post(format!("{base}/v1/sessions/{id}/suggestions"))
                    .json(&json!({"t": t}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                answers.push((status, answer.clone()));
                if status != 201 {
                    continue;
                }
                let s = &answer["suggestions"][0];
                let (x, y) = (
                    s["params"]["x"].as_f64().unwrap(),
                    s["params"]["y"].as_f64().unwrap(),
                );
                let body = json!({
                    "suggestion_id": s["id"],
                    "value": objective(x, y, 1000 + c * ROUNDS + round),
                    "t": t,
                });
                let response = client
                    .post(format!(
                        "{}/v1/sessions/{id}/observations",
                        bases[(c + round + 1) % 2]
                    ))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                answers.push((status, response.json().await.unwrap_or(Value::Null)));
            }
            answers
        }));
    }
    let mut refused = Vec::new();
    let mut calls = 0;
    for task in tasks {
        for (status, answer) in task.await.expect("a client failed") {
            calls += 1;
            if !(200..300).contains(&status) {
                refused.push(format!("{status} {answer}"));
            }
        }
    }
    eprintln!(
        "{calls} calls on one contended session, {} refused",
        refused.len()
    );
    assert!(refused.is_empty(), "clients were refused: {refused:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_loses_nothing_acknowledged() {
    let Some(db) = PgDatabase::create("a_killed_replica_loses_nothing_acknowledged").await else {
        return;
    };
    let a = Replica::start("a", &db.url, &[]).await;
    let b = Replica::start("b", &db.url, &[]).await;
    let kill = Kill {
        replica: 1,
        after_rounds: CLIENTS * ROUNDS_PER_CLIENT * 2 / 5,
    };
    drive_and_check(&db, vec![a, b], Some(kill)).await;
}
