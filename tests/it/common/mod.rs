//! Shared test harness: a real server on port 0 over a temporary SQLite file, and fresh
//! PostgreSQL databases for the tests that run against PostgreSQL too.
//!
//! [`TestServer::post`], [`TestServer::get`] and [`TestServer::send`] call the server's
//! router in-process (tower's `oneshot`, as the axum examples test), with the client's
//! key; `client` and `base` reach the same router through its socket, for the tests
//! whose subject is the connection.
#![allow(dead_code)]

pub mod browser;
pub mod sse;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response};
use serde_json::{Value, json};
use sqlx::{ColumnIndex, Decode, Row, Type};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tower::ServiceExt;
use tvbo::api::RouterSettings;
use tvbo::api::auth::AccessSettings;
use tvbo::engine::Limits;
use tvbo::server::ConnectionSettings;
use tvbo::store::{PoolSettings, PostgresStore, SqliteStore, Store};

/// The database behind a [`TestServer`].
enum Backend {
    Sqlite {
        store: SqliteStore,
        dir: Option<tempfile::TempDir>,
    },
    /// `db` is None for a second replica ([`TestServer::replica`]): the first drops it.
    Postgres {
        store: PostgresStore,
        db: Option<PgDatabase>,
    },
}

/// Every table, with the columns that order its rows (SQLite, PostgreSQL): keys where
/// there are keys, insertion order (SQLite's rowid, PostgreSQL's id) where there are none.
const TABLES: [(&str, &str, &str); 9] = [
    ("sessions", "id", "id"),
    ("suggestions", "id", "id"),
    ("observations", "session_id, seq", "session_id, seq"),
    ("ended_runs", "rowid", "id"),
    ("response_times", "rowid", "id"),
    ("response_time_summaries", "session_id, n", "session_id, n"),
    ("calls", "rowid", "id"),
    ("idempotency", "scope, key", "scope, key"),
    ("api_keys", "id", "id"),
];

/// A running server and the database behind it.
pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    /// The router the socket serves, for calls in-process.
    router: axum::Router,
    /// Headers every in-process call carries unless it sets them (the key of
    /// [`Self::with_key`]), as `client` does.
    headers: HeaderMap,
    /// The key of [`Self::with_key`].
    key: Option<String>,
    backend: Backend,
    shutdown: Option<oneshot::Sender<()>>,
    /// Set at [`Self::stop`], as a signal sets it: open event streams end.
    draining: tvbo::api::drain::Draining,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// A server over a fresh SQLite database.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tvbo.db");
        let mut server = Self::start_on(path).await;
        if let Backend::Sqlite { dir: kept, .. } = &mut server.backend {
            *kept = Some(dir);
        }
        server
    }

    /// A server over the SQLite database file at `path` (created if missing).
    pub async fn start_on(path: PathBuf) -> TestServer {
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .expect("open store");
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        Self::serve(shared, Backend::Sqlite { store, dir: None }).await
    }

    /// A server over the SQLite database file at `path` with these settings: with another
    /// over the same file, two replicas of one database.
    pub async fn start_on_configured(path: PathBuf, settings: RouterSettings) -> TestServer {
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .expect("open store");
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let backend = Backend::Sqlite { store, dir: None };
        Self::serve_with(shared, backend, settings, Default::default()).await
    }

    /// A server over a fresh PostgreSQL database (dropped with the server); None, after
    /// printing why `test` is skipped, when no PostgreSQL server is configured.
    pub async fn start_postgres(test: &str) -> Option<TestServer> {
        Self::start_postgres_configured(test, open_settings(Limits::default()), Default::default())
            .await
    }

    /// [`Self::start_postgres`] with these settings.
    pub async fn start_postgres_configured(
        test: &str,
        settings: RouterSettings,
        connections: ConnectionSettings,
    ) -> Option<TestServer> {
        let db = PgDatabase::create(test).await?;
        let store = PostgresStore::connect(&db.url, &PoolSettings::default())
            .await
            .expect("open PostgreSQL store");
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let backend = Backend::Postgres {
            store,
            db: Some(db),
        };
        Some(Self::serve_with(shared, backend, settings, connections).await)
    }

    async fn serve(shared: Arc<dyn Store>, backend: Backend) -> TestServer {
        let settings = open_settings(Limits::default());
        Self::serve_with(shared, backend, settings, Default::default()).await
    }

    /// A server over a fresh SQLite database with the given caps.
    pub async fn start_with(limits: Limits) -> TestServer {
        Self::start_configured(open_settings(limits), Default::default()).await
    }

    /// A server over a fresh SQLite database with these settings.
    pub async fn start_configured(
        settings: RouterSettings,
        connections: ConnectionSettings,
    ) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
        let store = SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .expect("open store");
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let backend = Backend::Sqlite {
            store,
            dir: Some(dir),
        };
        Self::serve_with(shared, backend, settings, connections).await
    }

    /// A server as a person gets it (the default settings: keys required) over a fresh
    /// SQLite database, with a key of `tenant` its client sends.
    pub async fn keys_required(tenant: &str) -> TestServer {
        Self::start_configured(RouterSettings::default(), Default::default())
            .await
            .with_key(tenant)
            .await
    }

    /// Another replica over this server's PostgreSQL database, with its own pool, change
    /// listener and caches, serving `settings`, and this server's key; None on SQLite.
    /// Stop or drop it before this server, which drops the database.
    pub async fn replica(&self, settings: RouterSettings) -> Option<TestServer> {
        let url = self.postgres_url()?;
        let store = PostgresStore::connect(url, &PoolSettings::default())
            .await
            .expect("open PostgreSQL store");
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let backend = Backend::Postgres { store, db: None };
        let mut replica = Self::serve_with(shared, backend, settings, Default::default()).await;
        replica.headers = self.headers.clone();
        replica.key = self.key.clone();
        replica.client = self.client.clone();
        Some(replica)
    }

    /// The URL of the server's PostgreSQL database; None on SQLite.
    pub fn postgres_url(&self) -> Option<&str> {
        match &self.backend {
            Backend::Postgres { db: Some(db), .. } => Some(&db.url),
            _ => None,
        }
    }

    /// The store behind the server.
    pub fn store(&self) -> Arc<dyn Store> {
        match &self.backend {
            Backend::Sqlite { store, .. } => Arc::new(store.clone()),
            Backend::Postgres { store, .. } => Arc::new(store.clone()),
        }
    }

    async fn serve_with(
        shared: Arc<dyn Store>,
        backend: Backend,
        settings: RouterSettings,
        connections: ConnectionSettings,
    ) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let draining = settings.draining.clone();
        let router = tvbo::api::router(shared, settings);
        let served = router.clone();
        let task = tokio::spawn(async move {
            tvbo::server::serve_router(listener, served, connections, async {
                let _ = rx.await;
            })
            .await
            .expect("server runs");
        });
        TestServer {
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            router,
            headers: HeaderMap::new(),
            key: None,
            backend,
            shutdown: Some(tx),
            draining,
            task: Some(task),
        }
    }

    /// Stops the server and closes its database. A SQLite file is kept (unless it is
    /// temporary and the returned directory is dropped); a PostgreSQL database is dropped.
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        self.draining.start();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        match self.backend {
            Backend::Sqlite { store, dir } => {
                store.pool().close().await;
                dir
            }
            Backend::Postgres { store, db } => {
                store.pool().close().await;
                drop(db);
                None
            }
        }
    }

    /// This server with a key of `tenant` made in its database (as `tvbo keys create`
    /// does) and a client that presents it on every request: how a user meets a server
    /// with the default settings (keys required).
    pub async fn with_key(mut self, tenant: &str) -> TestServer {
        let key = self.new_key(tenant).await;
        let mut headers = reqwest::header::HeaderMap::new();
        let bearer = format!("Bearer {key}");
        headers.insert(
            reqwest::header::AUTHORIZATION,
            bearer.parse().expect("a key is a header value"),
        );
        self.headers = headers.clone();
        self.key = Some(key);
        self.client = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .expect("a client");
        self
    }

    /// A new key of `tenant` stored in the server's database, as `tvbo keys create` makes
    /// it: the key as a person would paste it.
    pub async fn new_key(&self, tenant: &str) -> String {
        let made = tvbo::keys::new_key(tenant, None, false).expect("a valid key name");
        self.store()
            .insert_api_key(&made.row)
            .await
            .expect("store the key");
        made.key
    }

    /// The key of [`Self::with_key`], as a person would paste it.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// POSTs JSON in-process; returns status and parsed body (Null when empty or not
    /// JSON).
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let request = Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("a request");
        Self::parsed(self.send(request).await).await
    }

    /// GETs in-process; returns status and parsed body (Null when empty or not JSON).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let request = Request::get(path).body(Body::empty()).expect("a request");
        Self::parsed(self.send(request).await).await
    }

    /// One request through the router in-process (the path without scheme and host),
    /// with the client's headers where the request sets none of its own.
    pub async fn send(&self, mut request: Request<Body>) -> Response<Body> {
        for (name, value) in &self.headers {
            if !request.headers().contains_key(name) {
                request.headers_mut().insert(name, value.clone());
            }
        }
        self.router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers")
    }

    /// POSTs JSON over the server's socket, as a client does: what a client sees, HTTP
    /// included (the fairness test times it; in-process calls would time the scheduler's
    /// turn alone, a fraction of a millisecond that any context switch doubles).
    pub async fn post_over_socket(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        Self::read(response).await
    }

    /// A response's status and parsed body (Null when empty or not JSON).
    pub async fn parsed(response: Response<Body>) -> (u16, Value) {
        let (status, text) = Self::text(response).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A response's status and body as text.
    pub async fn text(response: Response<Body>) -> (u16, String) {
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    pub async fn read(response: reqwest::Response) -> (u16, Value) {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Posts `observations` to session `id` as one batch and asserts it was stored (201).
    pub async fn observe_batch(&self, id: &str, observations: Vec<Value>) {
        let (status, body) = self
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &serde_json::json!({"observations": observations}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }

    /// Creates a session and returns its id.
    pub async fn create(&self, body: Value) -> String {
        let (status, session) = self.post("/v1/sessions", &body).await;
        assert_eq!(status, 201, "{session}");
        session["id"].as_str().unwrap().to_string()
    }

    /// Runs one SQL statement with `$1` bound to `arg` directly on the database (to damage
    /// a row as a person with a database shell might).
    pub async fn execute(&self, sql: &str, arg: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match &self.backend {
            Backend::Sqlite { store, .. } => {
                sqlx::query(sql)
                    .bind(arg)
                    .execute(store.pool())
                    .await
                    .unwrap();
            }
            Backend::Postgres { store, .. } => {
                sqlx::query(sql)
                    .bind(arg)
                    .execute(store.pool())
                    .await
                    .unwrap();
            }
        }
    }

    /// Every row of every table, as text (`table|cell|cell...`, NULL for nulls), each
    /// table ordered as [`TABLES`] says, for before/after comparisons.
    pub async fn dump(&self) -> Vec<String> {
        let mut rows = Vec::new();
        for (table, sqlite_order, postgres_order) in TABLES {
            match &self.backend {
                Backend::Sqlite { store, .. } => {
                    let sql = format!("SELECT * FROM {table} ORDER BY {sqlite_order}");
                    let fetched = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .fetch_all(store.pool())
                        .await
                        .unwrap();
                    rows.extend(fetched.iter().map(|row| render(table, row)));
                }
                Backend::Postgres { store, .. } => {
                    let sql = format!("SELECT * FROM {table} ORDER BY {postgres_order}");
                    let fetched = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .fetch_all(store.pool())
                        .await
                        .unwrap();
                    rows.extend(fetched.iter().map(|row| render(table, row)));
                }
            }
        }
        rows
    }
}

/// Cell `i` of `row` as `T`, or None if its SQL type is not `T`'s.
fn cell<'r, R, T>(row: &'r R, i: usize) -> Option<Option<T>>
where
    R: Row,
    usize: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get::<Option<T>, _>(i).ok()
}

/// A row as `table|cell|cell...`: text, integers, floats (`{:?}`), booleans, NULL.
fn render<R>(table: &str, row: &R) -> String
where
    R: Row,
    usize: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
{
    let mut cells = vec![table.to_string()];
    for i in 0..row.len() {
        let text = cell::<R, String>(row, i)
            .or_else(|| cell::<R, i64>(row, i).map(|v| v.map(|v| v.to_string())))
            .or_else(|| cell::<R, f64>(row, i).map(|v| v.map(|v| format!("{v:?}"))))
            .or_else(|| cell::<R, bool>(row, i).map(|v| v.map(|v| v.to_string())))
            .unwrap_or_else(|| Some("<other>".into()));
        cells.push(text.unwrap_or_else(|| "NULL".into()));
    }
    cells.join("|")
}

/// For each `async fn name(server: TestServer)` of the test file, one test per backend:
/// `sqlite::name` over a fresh SQLite file and `postgres::name` over a fresh PostgreSQL
/// database (skipped, saying so, when no PostgreSQL server is configured). The first
/// argument is the test attribute, e.g. `#[tokio::test]`. With `settings = EXPR;` first,
/// the servers run with those `RouterSettings` (EXPR is evaluated in a child module:
/// `super::f()`), else with [`open_settings`].
#[allow(unused_macros)]
macro_rules! backend_tests {
    (#[$test:meta] $($name:ident),* $(,)?) => {
        backend_tests!(
            settings = super::common::open_settings(Default::default());
            #[$test] $($name),*
        );
    };
    (settings = $settings:expr; #[$test:meta] $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[$test]
                async fn $name() {
                    let server = super::common::TestServer::start_configured(
                        $settings,
                        Default::default(),
                    )
                    .await;
                    super::$name(server).await;
                }
            )*
        }
        mod postgres {
            $(
                #[$test]
                async fn $name() {
                    let name = stringify!($name);
                    let settings = $settings;
                    let started = super::common::TestServer::start_postgres_configured(
                        name,
                        settings,
                        Default::default(),
                    );
                    if let Some(server) = started.await {
                        super::$name(server).await;
                    }
                }
            )*
        }
    };
}

/// Router settings with these caps and no key needed (most tests are not about keys).
pub fn open_settings(limits: Limits) -> RouterSettings {
    RouterSettings {
        limits,
        access: AccessSettings::open(),
        ..Default::default()
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

/// A fresh, empty database on the test PostgreSQL server, dropped with this value.
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
}

/// Drops the database, disconnecting whoever still uses it, also when a test panics (then
/// a failure to drop is printed, not raised).
impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // A thread with its own runtime: Drop cannot await, and may run on a runtime thread.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                use sqlx::Connection;
                let mut admin = sqlx::PgConnection::connect(&admin_url).await?;
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&mut admin)
                    .await?;
                admin.close().await
            })?;
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("cannot drop test database {}: {e}", self.name),
            Err(_) => eprintln!(
                "cannot drop test database {}: the dropper panicked",
                self.name
            ),
        }
    }
}

/// The row sqlx records for an applied migration of `version`, as a newer release would
/// have left it (`success` false: half applied); `checksum` is the backend's literal of a
/// byte string (`X'00'` on SQLite, `'\x00'::bytea` on PostgreSQL).
pub fn newer_migration_row(version: i64, success: bool, checksum: &str) -> String {
    format!(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ({version}, 'a newer release', {success}, {checksum}, 0)"
    )
}
