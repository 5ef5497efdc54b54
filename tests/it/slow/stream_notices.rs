//! Streams woken by notices of committed changes instead of polling (docs/events.md, "The
//! stream"), keys on, default stream caps: an event reaches a stream within 100 ms of
//! its commit, on SQLite and from one PostgreSQL replica to another; 200 idle streams
//! leave PostgreSQL all but idle; while a replica's listening connection is away its
//! streams poll, and once it is back they are woken again; a revoked key's streams end at
//! once.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Connection;
use tvbo::api::RouterSettings;
use tvbo::engine::Limits;

use crate::common::TestServer;
use crate::common::sse::Messages;

/// Observations a session keeps before it says `dataset-full`.
const CAP: usize = 3;

fn settings() -> RouterSettings {
    RouterSettings {
        limits: Limits {
            max_active_observations: CAP,
            ..Limits::default()
        },
        ..RouterSettings::default()
    }
}

/// A server over a fresh PostgreSQL database with [`settings`]; None (saying why) without
/// a PostgreSQL server.
async fn postgres(test: &str) -> Option<TestServer> {
    TestServer::start_postgres_configured(test, settings(), Default::default()).await
}

async fn session(server: &TestServer) -> String {
    server
        .create(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "random"},
            "time": {"source": "client"},
        }))
        .await
}

async fn observe(server: &TestServer, id: &str, t: f64) {
    let body = json!({"params": {"x": 0.5}, "value": 1.0, "t": t});
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/observations"), &body)
        .await;
    assert_eq!(status, 201, "{answer}");
}

/// How long after `writer` answered the observe that commits a `dataset-full` event the
/// tenant's event stream on `reader` sent it, for each of `rounds` fresh sessions.
async fn event_delays(writer: &TestServer, reader: &TestServer, rounds: usize) -> Vec<Duration> {
    let mut stream = Messages::open(reader, "?kinds=dataset-full", None).await;
    let mut delays = Vec::new();
    for _ in 0..rounds {
        let id = session(writer).await;
        for t in 0..CAP - 1 {
            observe(writer, &id, t as f64).await;
        }
        // Let the stream fall asleep before the commit that stores the event.
        tokio::time::sleep(Duration::from_millis(300)).await;
        observe(writer, &id, CAP as f64).await;
        let answered = Instant::now();
        let (_, kind, data) = stream
            .next(Duration::from_secs(10))
            .await
            .expect("the event arrives");
        delays.push(Instant::now().saturating_duration_since(answered));
        assert_eq!(
            (kind.as_str(), data["session"].as_str()),
            ("dataset-full", Some(id.as_str()))
        );
    }
    delays
}

/// The events reach the stream within 100 ms of their commit: the median of the delays
/// (a stream that polled every second would see about half a second), and each within
/// a fifth of a poll, for a machine busy with other tests.
fn assert_prompt(delays: &[Duration], what: &str) {
    let mut sorted = delays.to_vec();
    sorted.sort();
    println!("{what}: event delays {delays:?}");
    let (median, worst) = (sorted[sorted.len() / 2], sorted[sorted.len() - 1]);
    assert!(
        median < Duration::from_millis(100) && worst < Duration::from_millis(200),
        "{what}: events took {delays:?} to reach the stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_an_event_reaches_a_stream_within_100_ms() {
    let server = TestServer::start_configured(settings(), Default::default())
        .await
        .with_key("acme")
        .await;
    let delays = event_delays(&server, &server, 5).await;
    assert_prompt(&delays, "SQLite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_committed_on_one_replica_reaches_a_stream_on_another_within_100_ms() {
    let Some(first) =
        postgres("an_event_committed_on_one_replica_reaches_a_stream_on_another_within_100_ms")
            .await
    else {
        return;
    };
    let first = first.with_key("acme").await;
    let second = first.replica(settings()).await.unwrap();
    let delays = event_delays(&first, &second, 5).await;
    assert_prompt(&delays, "PostgreSQL, replica to replica");
}

/// Transactions committed in the database so far (PostgreSQL's statistics, read on a
/// connection of the test's own).
async fn transactions(url: &str) -> i64 {
    let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
    let count = sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut connection)
    .await
    .unwrap();
    connection.close().await.unwrap();
    count
}

/// Longer than PostgreSQL's delay in reporting an idle backend's counts: 10 s, and 10 s
/// more when the backend finds the statistics locked (a machine busy with other tests).
const SETTLE: Duration = Duration::from_secs(21);

/// The database's transactions in the next 10 s, the test's own reading included.
async fn transactions_in_a_window(url: &str) -> i64 {
    let before = transactions(url).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    transactions(url).await - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_idle_streams_make_fewer_than_20_transactions_in_10_s() {
    let Some(server) =
        postgres("two_hundred_idle_streams_make_fewer_than_20_transactions_in_10_s").await
    else {
        return;
    };
    let url = server.postgres_url().unwrap().to_string();
    // What the replica makes without streams (its webhook worker asks when the next
    // delivery is due at each idle scan). A backend reports its counts up to 10 s late
    // when it goes idle (20 s when the statistics are busy): each window starts
    // [`SETTLE`] after what came before it.
    tokio::time::sleep(SETTLE).await;
    let alone = transactions_in_a_window(&url).await;
    // Four tenants, two keys each (the default caps: 32 streams a key, 128 a tenant),
    // 25 streams a key: a session's dashboard, the tenant's events, the list's changes.
    // Each tenant's from an address of its own (127.0.0.1 to .4): a replica takes at
    // most 128 connections from one address.
    let mut streams = Vec::new();
    let mut watched = Vec::new();
    for (i, tenant) in ["acme", "globex", "initech", "umbrella"].iter().enumerate() {
        let from = std::net::Ipv4Addr::new(127, 0, 0, 1 + i as u8);
        let client = reqwest::Client::builder()
            .local_address(std::net::IpAddr::V4(from))
            .build()
            .unwrap();
        let owner = server.new_key(tenant).await;
        let created = client
            .post(server.url("/v1/sessions"))
            .bearer_auth(&owner)
            .json(&json!({
                "parameters": [{"name": "x", "low": 0, "high": 1}],
                "algorithm": {"name": "random"},
            }))
            .send()
            .await
            .unwrap();
        let (status, created) = TestServer::read(created).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().unwrap().to_string();
        watched.push((owner, id.clone()));
        for key_index in 0..2 {
            let key = server.new_key(tenant).await;
            for i in 0..25 {
                let query = match (key_index + i) % 3 {
                    0 => format!("?session={id}"),
                    1 => "?kinds=dataset-full".to_string(),
                    _ => "?changes=true".to_string(),
                };
                let request = client.get(server.url(&format!("/v1/events{query}")));
                streams.push(Messages::from(request.bearer_auth(&key)).await);
            }
        }
    }
    assert_eq!(streams.len(), 200);
    // The first 10-s window that the streams' opening looks have left, within a minute:
    // a busy machine delays PostgreSQL's counts of them. Streams that polled would make
    // hundreds in every window.
    tokio::time::sleep(SETTLE).await;
    let mut windows = Vec::new();
    while windows.len() < 6 && windows.last().is_none_or(|&made| made >= 20) {
        windows.push(transactions_in_a_window(&url).await);
    }
    println!(
        "in 10 s: {windows:?} transactions with 200 idle streams, {alone} without (the \
         database's, all of them)"
    );
    assert!(
        windows.last().is_some_and(|&made| made < 20),
        "200 idle streams: {windows:?} transactions in 10-s windows"
    );

    // Asleep, not dead: a commit wakes its session's streams at once.
    let (key, id) = &watched[0];
    let mut stream = Messages::open_as(&server, &format!("?session={id}"), key).await;
    let (_, kind, data) = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(
        (kind.as_str(), data["version"].as_i64()),
        ("version", Some(0))
    );
    drop(streams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_poll_while_the_listener_is_away_and_are_woken_once_it_is_back() {
    let Some(server) =
        postgres("streams_poll_while_the_listener_is_away_and_are_woken_once_it_is_back").await
    else {
        return;
    };
    let server = server.with_key("acme").await;
    let url = server.postgres_url().unwrap().to_string();
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert_eq!(ended, [true], "one listening connection");
    // Away: the stream polls, so the event still comes, within a poll.
    let delays = event_delays(&server, &server, 1).await;
    assert!(delays[0] < Duration::from_millis(1500), "{delays:?}");
    // Back within a second or so (the replica connects again every second): woken again,
    // in well under the half second a poll's events wait on average.
    let back = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let listening: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            )
            .fetch_one(&mut admin)
            .await
            .unwrap();
            if listening == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(back.is_ok(), "the replica listens again");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut delays = event_delays(&server, &server, 5).await;
    println!("PostgreSQL, after the listener came back: event delays {delays:?}");
    delays.sort();
    assert!(delays[2] < Duration::from_millis(250), "{delays:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_a_stream_ends_at_once_when_its_key_is_revoked() {
    let Some(server) =
        postgres("on_postgresql_a_stream_ends_at_once_when_its_key_is_revoked").await
    else {
        return;
    };
    let lasted = crate::common::sse::lasts_after_its_key_is_revoked(&server, "acme").await;
    println!("the stream lasted {lasted:?} after the revocation");
    assert!(
        lasted.is_some_and(|d| d < Duration::from_secs(1)),
        "{lasted:?}"
    );
}
