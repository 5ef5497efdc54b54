//! Shared test harness: a real server on port 0 over a temporary SQLite file, and fresh
//! PostgreSQL databases for the tests that run against PostgreSQL too.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use sqlx::Row;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tvbo::store::{SqliteStore, Store};

/// A running server and the database file behind it.
pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    pub store: SqliteStore,
    pub db_path: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// A server over a fresh database.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tvbo.db");
        let mut server = Self::start_on(path).await;
        server._dir = Some(dir);
        server
    }

    /// A server over the database file at `path` (created if missing).
    pub async fn start_on(path: PathBuf) -> TestServer {
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::connect(&url).await.expect("open store");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let task = tokio::spawn(async move {
            tvbo::server::serve(listener, shared, async {
                let _ = rx.await;
            })
            .await
            .expect("server runs");
        });
        TestServer {
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            store,
            db_path: path,
            shutdown: Some(tx),
            task: Some(task),
            _dir: None,
        }
    }

    /// Stops the server and closes its database; keeps the file (unless it is temporary
    /// and this value is dropped).
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        self.store.pool().close().await;
        self._dir.take()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// POSTs JSON; returns status and parsed body (Null when empty or not JSON).
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        Self::read(response).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        Self::read(response).await
    }

    pub async fn read(response: reqwest::Response) -> (u16, Value) {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Creates a session and returns its id.
    pub async fn create(&self, body: Value) -> String {
        let (status, session) = self.post("/v1/sessions", &body).await;
        assert_eq!(status, 201, "{session}");
        session["id"].as_str().unwrap().to_string()
    }

    /// Every row of every table, as text, for before/after comparisons.
    pub async fn dump(&self) -> Vec<String> {
        let mut rows = Vec::new();
        for table in [
            "sessions",
            "suggestions",
            "observations",
            "response_times",
            "calls",
            "idempotency",
        ] {
            let sql = format!("SELECT * FROM {table} ORDER BY rowid");
            for row in sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(self.store.pool())
                .await
                .unwrap()
            {
                let mut cells = vec![table.to_string()];
                for i in 0..row.len() {
                    let cell: Option<String> = row
                        .try_get::<Option<String>, _>(i)
                        .or_else(|_| {
                            row.try_get::<Option<i64>, _>(i)
                                .map(|v| v.map(|v| v.to_string()))
                        })
                        .or_else(|_| {
                            row.try_get::<Option<f64>, _>(i)
                                .map(|v| v.map(|v| format!("{v:?}")))
                        })
                        .unwrap_or_else(|_| Some("<blob>".into()));
                    cells.push(cell.unwrap_or_else(|| "NULL".into()));
                }
                rows.push(cells.join("|"));
            }
        }
        rows
    }
}

/// A 2-D client-time session body.
pub fn client_session(algorithm: &str, seed: u64) -> Value {
    json!({
        "name": "test",
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": algorithm},
        "model": {"warmup": 5},
        "time": {"source": "client"},
        "seed": seed
    })
}

/// The environment variable naming the PostgreSQL server the tests may use (an admin URL:
/// its user may create and drop databases).
pub const POSTGRES_URL_VAR: &str = "TVBO_TEST_POSTGRES_URL";

/// The admin URL of the test PostgreSQL server: `TVBO_TEST_POSTGRES_URL`, else
/// `DATABASE_URL` if it is a PostgreSQL URL; None (after printing why `test` is skipped)
/// when neither is set.
pub fn postgres_admin_url(test: &str) -> Option<String> {
    let url = std::env::var(POSTGRES_URL_VAR).ok().or_else(|| {
        std::env::var("DATABASE_URL")
            .ok()
            .filter(|u| u.starts_with("postgres://") || u.starts_with("postgresql://"))
    });
    if url.is_none() {
        eprintln!(
            "SKIPPED {test} on PostgreSQL: set {POSTGRES_URL_VAR} (or DATABASE_URL) to \
             postgres://user@host:port/db to run it"
        );
    }
    url
}

/// A fresh, empty database on the test PostgreSQL server, dropped by [`PgDatabase::drop`].
pub struct PgDatabase {
    admin_url: String,
    name: String,
    /// The URL of the fresh database.
    pub url: String,
}

impl PgDatabase {
    /// Creates `tvbo_test_<random>`; None (with a printed skip reason) when no server is
    /// configured.
    pub async fn create(test: &str) -> Option<PgDatabase> {
        use sqlx::Connection;
        let admin_url = postgres_admin_url(test)?;
        let name = format!("tvbo_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("connect to the test PostgreSQL server");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create a test database");
        admin.close().await.expect("close admin connection");
        let mut url = reqwest::Url::parse(&admin_url).expect("a PostgreSQL URL");
        url.set_path(&format!("/{name}"));
        Some(PgDatabase {
            admin_url,
            name,
            url: url.to_string(),
        })
    }

    /// Drops the database, disconnecting whoever still uses it.
    pub async fn drop(self) {
        use sqlx::Connection;
        let mut admin = sqlx::PgConnection::connect(&self.admin_url)
            .await
            .expect("connect to the test PostgreSQL server");
        let name = &self.name;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&mut admin)
        .await
        .expect("drop the test database");
        admin.close().await.expect("close admin connection");
    }
}
