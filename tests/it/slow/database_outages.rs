//! The database's availability, seen by a server process: PostgreSQL connections do not
//! hold a row lock forever; `/readyz` answers 503 while the database is unreachable (a
//! TCP proxy between the server and PostgreSQL is cut) and 200 again once it is back,
//! without a restart; a server whose database is down at start exits with an error that
//! says so.
//!
//! The PostgreSQL tests need `TVBO_TEST_POSTGRES_URL` (or a `postgres://` DATABASE_URL) and
//! are skipped, saying so, without it.

use crate::common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use common::PgDatabase;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tvbo::store::postgres::IDLE_IN_TRANSACTION_TIMEOUT;
use tvbo::store::{PoolSettings, PostgresStore};

use super::scale_out::{Replica, load_session};

/// A replica that vanishes in the middle of a transaction (no FIN reaches PostgreSQL) must
/// not hold its session's row lock for hours: PostgreSQL ends such transactions after
/// [`IDLE_IN_TRANSACTION_TIMEOUT`] on every connection of the store.
#[tokio::test]
async fn store_connections_have_an_idle_in_transaction_timeout() {
    let Some(db) =
        PgDatabase::create("store_connections_have_an_idle_in_transaction_timeout").await
    else {
        return;
    };
    let store = PostgresStore::connect(&db.url, &PoolSettings::default())
        .await
        .unwrap();
    let timeout: String = sqlx::query_scalar("SHOW idle_in_transaction_session_timeout")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(timeout, IDLE_IN_TRANSACTION_TIMEOUT);
    store.pool().close().await;
}

/// A TCP proxy in front of PostgreSQL that can be cut (open connections dropped, new ones
/// refused) and restored.
struct Proxy {
    addr: SocketAddr,
    open: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (open, _) = watch::channel(true);
        let state = open.clone();
        tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    return;
                };
                let mut open = state.subscribe();
                if !*open.borrow_and_update() {
                    continue; // cut: the connection is dropped at once
                }
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut inbound, mut outbound) = (inbound, outbound);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = open.wait_for(|open| !open) => {}
                    }
                });
            }
        });
        Proxy { addr, open }
    }

    fn cut(&self) {
        self.open.send_replace(false);
    }

    fn restore(&self) {
        self.open.send_replace(true);
    }
}

/// Polls `/readyz` until it answers `status` (or fails the test after `within`).
async fn wait_for_readyz(base: &str, status: u16, within: Duration) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let deadline = Instant::now() + within;
    loop {
        let answered = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .map(|r| r.status().as_u16());
        if answered.as_ref().ok() == Some(&status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz did not answer {status} within {within:?} (last: {answered:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_database_and_recovers() {
    let Some(db) = PgDatabase::create("readyz_follows_the_database_and_recovers").await else {
        return;
    };
    let mut direct = reqwest::Url::parse(&db.url).unwrap();
    let upstream = format!(
        "{}:{}",
        direct.host_str().unwrap(),
        direct.port().unwrap_or(5432)
    );
    let proxy = Proxy::start(upstream).await;
    direct.set_host(Some("127.0.0.1")).unwrap();
    direct.set_port(Some(proxy.addr.port())).unwrap();
    let replica = Replica::start(
        "proxied",
        direct.as_str(),
        &[("TVBO_DB_ACQUIRE_TIMEOUT", "1")],
    )
    .await;
    let client = reqwest::Client::new();
    let create = |client: &reqwest::Client| {
        client
            .post(format!("{}/v1/sessions", replica.base))
            .json(&load_session())
            .send()
    };
    assert_eq!(create(&client).await.unwrap().status().as_u16(), 201);

    proxy.cut();
    wait_for_readyz(&replica.base, 503, Duration::from_secs(10)).await;
    let refused = create(&client).await.unwrap();
    assert_eq!(
        refused.status().as_u16(),
        503,
        "a write while the database is away"
    );
    // When to come back, as the load balancer's own 503 says it.
    assert_eq!(refused.headers()["retry-after"], "1");
    let problem: Value = refused.json().await.unwrap();
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("/database-unavailable"),
        "{problem}"
    );

    proxy.restore();
    wait_for_readyz(&replica.base, 200, Duration::from_secs(15)).await;
    assert_eq!(create(&client).await.unwrap().status().as_u16(), 201);
}

#[tokio::test]
async fn a_server_whose_database_is_down_at_start_exits_saying_so() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .arg("serve")
        .env("TVBO_BIND", "127.0.0.1:0")
        .env(
            "DATABASE_URL",
            format!("postgres://tvbo:secret@127.0.0.1:{port}/tvbo"),
        )
        .env("TVBO_DB_ACQUIRE_TIMEOUT", "1")
        .env("RUST_LOG", "warn")
        .output()
        .expect("the tvbo binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "exit status {}: {stderr}",
        output.status
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains("opening the PostgreSQL database"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "the password leaked: {stderr}");
}
