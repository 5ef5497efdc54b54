//! The store contract, checked against every backend: each `check_*` function takes a
//! `&dyn Store` over an empty database and runs once on SQLite (a temporary file) and once
//! on PostgreSQL (a fresh database, skipped with a printed reason when no server is set).

use crate::common;

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use tvbo::domain::checked::CheckedConfig;
use tvbo::domain::config::CreateSession;
use tvbo::domain::hyperpriors::{BoundHit, FitReport};
use tvbo::domain::records::{FittedHyperparameters, RecordedOptimum, StepSnapshot};
use tvbo::domain::space::numbers;
use tvbo::server::open_store;
use tvbo::store::{
    CallRecord, ChangeSet, Deactivation, IdempotencyRecord, ObservationRow, PoolSettings,
    PostgresStore, RECENT_REGRETS, ResponseTimeSample, ResponseTimeSummary, SessionRow,
    SqliteStore, Store, StoreError, StoredTimeline, SuggestionRow, SuggestionStatus,
};
use uuid::Uuid;

/// Runs `check` on a store over a fresh SQLite file.
async fn on_sqlite<F, Fut>(check: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .expect("open SQLite");
    check(Arc::new(store.clone())).await;
    store.pool().close().await;
}

/// Runs `check` on a store over a fresh PostgreSQL database (dropped afterwards, also when
/// the check panics); prints a skip reason and returns when no server is configured.
async fn on_postgres<F, Fut>(test: &str, check: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(db) = common::PgDatabase::create(test).await else {
        return;
    };
    let store = PostgresStore::connect(&db.url, &PoolSettings::default())
        .await
        .expect("open PostgreSQL");
    check(Arc::new(store.clone())).await;
    store.pool().close().await;
}

/// One `#[tokio::test]` per check and backend: `sqlite::<check>` and `postgres::<check>`.
macro_rules! store_tests {
    ($($check:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $check() {
                    super::on_sqlite(|s| async move { super::$check(&*s).await }).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $check() {
                    super::on_postgres(stringify!($check), |s| async move {
                        super::$check(&*s).await
                    })
                    .await;
                }
            )*
        }
    };
}

mod backends;
mod commits;
mod outbox;
mod reads;
mod sessions;

/// A timestamp with whole microseconds (the stored precision).
fn at(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap()
}

fn config(name: &str) -> CheckedConfig {
    let request: CreateSession = serde_json::from_value(json!({
        "name": name,
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": "gp-ucb"},
        "time": {"source": "client"},
        "seed": 7
    }))
    .unwrap();
    CheckedConfig::from_request(request, 1).unwrap()
}

fn session(name: &str, created_micros: i64) -> SessionRow {
    SessionRow {
        id: Uuid::new_v4(),
        tenant: "default".into(),
        config: config(name),
        created_at: at(created_micros),
        status: "active".into(),
        version: 0,
        state: json!({"initial": true}),
        suggest_count: 0,
        last_suggest: None,
        last_optimum_mean: None,
        observation_count: 0,
        dataset_size: 0,
        pending_count: 0,
    }
}

fn suggestion(ordinal: i64, issued_t: f64) -> SuggestionRow {
    let x = 0.1 * (ordinal + 1) as f64;
    SuggestionRow {
        id: Uuid::new_v4(),
        ordinal,
        params: numbers([("x", x), ("y", 0.5)]),
        unit: vec![x, 0.5],
        arm: (ordinal % 2 == 1).then(|| format!("arm{ordinal}")),
        issued_t,
        t: issued_t + 1.0,
        created_at: at(1_700_000_000_000_000 + ordinal),
        status: SuggestionStatus::Pending,
    }
}

fn observation(seq: i64, of: Option<&SuggestionRow>, t: f64) -> ObservationRow {
    ObservationRow {
        seq,
        suggestion_id: of.map(|s| s.id),
        params: numbers([("x", 0.25), ("y", seq as f64 / 100.0)]),
        unit: vec![0.25, seq as f64 / 100.0],
        value: -(seq as f64) / 3.0,
        t,
        measured_at: Some(at(1_700_000_100_000_000 + seq)),
        regret: (seq % 2 == 0).then_some(0.5 * seq as f64),
        regret_estimate: (seq % 2 == 1).then_some(0.25 * seq as f64),
        active: true,
        removed_at: None,
        removed_t: None,
        removed_reason: None,
        metadata: None,
        created_at: at(1_700_000_200_000_000 + seq),
    }
}

fn record(scope: &str, session_id: Option<Uuid>, key: &str) -> IdempotencyRecord {
    IdempotencyRecord {
        scope: scope.into(),
        session_id,
        key: key.into(),
        request_hash: "ab".repeat(32),
        status: 201,
        body: r#"{"ok":true}"#.into(),
    }
}

/// A session created in `store`, with its row as stored.
async fn created(store: &dyn Store, name: &str, created_micros: i64) -> SessionRow {
    let row = session(name, created_micros);
    store.create_session(&row, None, None, false).await.unwrap();
    row
}

fn call(kind: &'static str, seconds: f64) -> CallRecord {
    CallRecord {
        kind,
        t: 1.0,
        dataset_size: 3,
        compute_seconds: seconds,
        snapshot: None,
    }
}
