//! The snapshot a replica keeps of a session after changing it is what the store reads
//! back: the next change planned from it is the one planned from the database
//! (docs/decisions/0008-sqlite-writer-thread-and-kept-snapshots.md). Its own process: the
//! sessions it runs open model-work spans that a unit test's scoped subscriber would see.
use std::sync::Arc;

use serde_json::json;

use tvbo::domain::input::ObservationInput;
use tvbo::domain::space::numbers;
use tvbo::engine::Limits;
use tvbo::session::service::SessionService;
use tvbo::session::views::SuggestRequest;
use tvbo::store::{PoolSettings, PostgresStore, SqliteStore, Store};

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_kept_snapshots_are_what_the_store_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .unwrap();
    kept_snapshots_are_what_the_store_reads_back(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_kept_snapshots_are_what_the_store_reads_back() {
    let Some(database) = common::PgDatabase::create("kept_snapshots").await else {
        return;
    };
    let store = PostgresStore::connect(&database.url, &PoolSettings::default())
        .await
        .unwrap();
    kept_snapshots_are_what_the_store_reads_back(Arc::new(store)).await;
}

/// After every suggest and observe, of algorithms that forget by age, by relevance and
/// by budget, with failed runs among the observations, the snapshot the service kept is
/// the history (its failed runs included) and the response-time summaries the store
/// reads back, to the bit, also after another replica changed the session.
async fn kept_snapshots_are_what_the_store_reads_back(store: Arc<dyn Store>) {
    let service = SessionService::new(store.clone(), Limits::default());
    // Another replica over the same database, whose changes leave `service`'s snapshot
    // stale: the next change of `service` must notice (PostgreSQL: by the version it
    // reads first; SQLite, one server per file: by the commit's version check) and plan
    // again from the database.
    let other = SessionService::new(store.clone(), Limits::default());
    let algorithms = [
        json!({"name": "bolt", "min_dataset_size": 3, "max_dataset_size": 6}),
        json!({"name": "w-dbo"}),
        json!({"name": "r-gp-ucb"}),
        json!({"name": "tv-gp-ucb"}),
        json!({"name": "random"}),
    ];
    for algorithm in algorithms {
        let request = serde_json::from_value(json!({
            "parameters": [
                {"name": "x", "low": 0.0, "high": 1.0},
                {"name": "y", "low": -2.0, "high": 2.0}
            ],
            "algorithm": algorithm,
            "model": {"warmup": 3},
            "time": {"source": "client"},
            "seed": 11
        }))
        .unwrap();
        let id = service
            .create_session("default", request, None)
            .await
            .unwrap()
            .id;
        let check = async |step: usize, call: &str| {
            let kept = service.kept_snapshot(id).expect("a snapshot is kept");
            let loaded = store.load_history(id).await.unwrap().unwrap();
            assert_eq!(
                format!("{:?}", kept.history),
                format!("{loaded:?}"),
                "{algorithm} after the {call} of step {step}"
            );
            if let Some(kept) = kept.response_times {
                let loaded = store.response_time_summaries(id).await.unwrap();
                assert_eq!(kept, loaded, "{algorithm} after the {call} of step {step}");
            }
        };
        for step in 0..24 {
            let t = 1.7 * step as f64;
            let request = SuggestRequest {
                count: Some(1 + (step % 2) as i64),
                t: Some(t),
                fixed: None,
            };
            let suggested = if step % 7 == 3 {
                other.suggest(id, request, None).await.unwrap()
            } else {
                let suggested = service.suggest(id, request, None).await.unwrap();
                check(step, "suggest").await;
                suggested
            };
            let first = &suggested.suggestions[0];
            let number = |name: &str| first.params[name].as_number().unwrap();
            let (x, y) = (number("x"), number("y"));
            let mut inputs = vec![observation(Some(first.id), None, x - y * y, t + 0.5)];
            // A failed run (the history holds it for the model: `model.failures: impute`).
            if let Some(second) = suggested.suggestions.get(1) {
                let failed = ObservationInput {
                    suggestion_id: Some(second.id),
                    failed: Some(true),
                    t: Some(t + 0.55),
                    ..ObservationInput::default()
                };
                inputs.push((String::new(), failed));
            }
            if step % 5 == 4 {
                let params = numbers([("x", 0.25), ("y", 1.0)]);
                let value = 0.25 - 1.0;
                inputs.push(observation(None, Some(params), value, t + 0.6));
            }
            service.observe(id, inputs, None).await.unwrap();
            check(step, "observe").await;
        }
    }
}

/// On PostgreSQL a replica hears the other replicas' changes (docs/events.md, "The
/// stream"): the snapshot it kept of a session that another replica then changed is
/// dropped as the change's notice comes, so that its next change reads the session
/// instead of first asking for its version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_another_replicas_change_drops_the_kept_snapshot() {
    let Some(database) = common::PgDatabase::create("kept_snapshot_dropped").await else {
        return;
    };
    let connect = async || {
        let store = PostgresStore::connect(&database.url, &PoolSettings::default())
            .await
            .unwrap();
        SessionService::new(Arc::new(store), Limits::default())
    };
    let (this, other) = (connect().await, connect().await);
    let request = serde_json::from_value(json!({
        "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
        "algorithm": {"name": "random"},
        "time": {"source": "client"},
    }))
    .unwrap();
    let id = this
        .create_session("default", request, None)
        .await
        .unwrap()
        .id;
    let suggest = |t: f64| SuggestRequest {
        count: None,
        t: Some(t),
        fixed: None,
    };
    this.suggest(id, suggest(1.0), None).await.unwrap();
    assert!(this.kept_snapshot(id).is_some());
    other.suggest(id, suggest(2.0), None).await.unwrap();
    let dropped = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        while this.kept_snapshot(id).is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(dropped.is_ok(), "the stale snapshot is still kept");
    // Planned from the database: the third suggestion, at version 3.
    this.suggest(id, suggest(3.0), None).await.unwrap();
    let kept = this.kept_snapshot(id).unwrap();
    assert_eq!(kept.history.session.version, 3);
    assert_eq!(kept.history.pending.len(), 3);
}

fn observation(
    suggestion_id: Option<uuid::Uuid>,
    params: Option<tvbo::domain::space::Params>,
    value: f64,
    t: f64,
) -> (String, ObservationInput) {
    let input = ObservationInput {
        suggestion_id,
        params,
        value: Some(value),
        t: Some(t),
        ..ObservationInput::default()
    };
    (String::new(), input)
}

/// A step taken before a model chose any suggestion (the warm-up's uniform draws)
/// records no hyperparameters and no posterior optimum, though BOLT and W-DBO fit one at
/// each observe for their forgetting; the first suggestion past the warm-up records
/// both (docs/dashboard.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_up_steps_record_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .unwrap();
    let service = SessionService::new(Arc::new(store), Limits::default());
    for algorithm in ["bolt", "w-dbo", "gp-ucb"] {
        let request = serde_json::from_value(json!({
            "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
            "algorithm": {"name": algorithm},
            "model": {"warmup": 4},
            "time": {"source": "client"},
            "seed": 3
        }))
        .unwrap();
        let id = service
            .create_session("default", request, None)
            .await
            .unwrap()
            .id;
        for step in 0..6 {
            let t = step as f64;
            let request = SuggestRequest {
                count: Some(1),
                t: Some(t),
                fixed: None,
            };
            let suggested = service.suggest(id, request, None).await.unwrap();
            let first = &suggested.suggestions[0];
            let x = first.params["x"].as_number().unwrap();
            let inputs = vec![observation(Some(first.id), None, (6.0 * x).sin(), t + 0.5)];
            service.observe(id, inputs, None).await.unwrap();
        }
        let steps = service.list_steps(id, 0, 100).await.unwrap().steps;
        assert_eq!(steps.len(), 12, "{algorithm}");
        for (i, step) in steps.iter().enumerate() {
            let snapshot = step.snapshot.as_ref().expect("every step has a snapshot");
            // Steps 0–7: four suggests of the warm-up and their observes; step 8 is the
            // first suggest a model made, and its observe (9) keeps that model.
            let modelled = i >= 8;
            let what = format!("{algorithm}, step {i} ({})", step.kind);
            assert_eq!(snapshot.hyperparameters.is_some(), modelled, "{what}");
            if step.kind == "suggest" {
                assert_eq!(snapshot.optimum.is_some(), modelled, "{what}");
            }
        }
    }
}
