//! The data of a session page for a long-lived session: 100,000 observations (the last
//! 200 active, the rest forgotten by relevance), a suggest and an observe step per
//! observation with their model snapshots, and a response-time sample per suggest, in
//! an SQLite file.
//!
//! - `session_page/100000`: what the page fetches (the session, its timeline at the
//!   default point budget and its recommendation), one after the other.
//! - `session/100000`, `best/100000`, `timeline/100000`: each alone.
//! - `page_in_chromium/100000`: the session page in headless Chromium (Debian's
//!   `chromium`; skipped without one), from navigation to the page drawn (the time the
//!   page itself records when its first draw is done), served by a real server.
//!
//! The session is built once through `Store::commit`, one commit per observation as a
//! live session makes them (a few minutes); the figure is in docs/performance.md.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tvbo::domain::config::CreateSession;
use tvbo::domain::records::{
    CallRecord, ChangeSet, DEFAULT_TENANT, FittedHyperparameters, ObservationRow, RecordedOptimum,
    ResponseTimeSample, StepSnapshot,
};
use tvbo::domain::space::numbers;
use tvbo::engine::Limits;
use tvbo::gp::Hyperparameters;
use tvbo::policy::PolicyState;
use tvbo::session::service::SessionService;
use tvbo::session::timeline::DEFAULT_TIMELINE_POINTS;
use tvbo::store::{PoolSettings, SqliteStore, Store};
use uuid::Uuid;

// The browser tests' DevTools driver; this bench opens pages only.
#[allow(dead_code)]
#[path = "../tests/it/common/browser.rs"]
mod browser;

const OBSERVATIONS: i64 = 100_000;
const ACTIVE: i64 = 200;

fn snapshot(t: f64, with_optimum: bool) -> StepSnapshot {
    StepSnapshot {
        dataset_size: ACTIVE,
        max_dataset_size: Some(ACTIVE as u64),
        budget: None,
        hyperparameters: Some(FittedHyperparameters {
            signal_variance: 1.2,
            spatial_lengthscale: 0.3,
            temporal_lengthscale: Some(900.0),
            noise_variance: 0.01,
            epsilon: None,
            categorical_lengthscale: None,
            lengthscales: Some([("x".to_string(), 0.2), ("y".to_string(), 0.45)].into()),
            level_variance: None,
            level_lengthscale: None,
        }),
        optimum: with_optimum.then(|| RecordedOptimum {
            t,
            params: numbers([("x", 0.5 + 0.3 * (t / 3600.0).sin()), ("y", 0.5)]),
            arm: None,
            mean: 1.0,
        }),
        prior_probabilities: None,
        priors_active: None,
        response_time_fit: (!with_optimum).then_some([0.02, 1e-4, 1e-7, 1e-10]),
        state_not_saved: None,
        fit: None,
    }
}

/// A BOLT session with `OBSERVATIONS` observations, one every 10 s of client time,
/// committed as a live session's are: one observation, its suggest and observe steps
/// and one response-time sample per commit.
async fn long_session(service: &SessionService, store: &dyn Store) -> Uuid {
    let request: CreateSession = serde_json::from_value(json!({
        "name": "long-lived",
        "parameters": [{"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 1}],
        "algorithm": {"name": "bolt"},
        "time": {"source": "client"},
        "seed": 1
    }))
    .unwrap();
    let id = service
        .create_session(DEFAULT_TENANT, request, None)
        .await
        .unwrap()
        .id;
    let state = serde_json::to_value(PolicyState {
        hyperparameters: Some(Hyperparameters {
            temporal_lengthscale: 900.0,
            ..Hyperparameters::default()
        }),
        max_dataset_size: Some(ACTIVE as u64),
        ..PolicyState::default()
    })
    .unwrap();
    let now = Utc::now();
    for seq in 1..=OBSERVATIONS {
        let t = seq as f64 * 10.0;
        let (x, y) = ((seq as f64 * 0.618).fract(), (seq as f64 * 0.377).fract());
        let active = seq > OBSERVATIONS - ACTIVE;
        let observation = ObservationRow {
            seq,
            suggestion_id: None,
            params: numbers([("x", x), ("y", y)]),
            unit: vec![x, y],
            value: -(x - 0.5 - 0.3 * (t / 3600.0).sin()).powi(2) - (y - 0.5).powi(2),
            t,
            measured_at: None,
            regret: None,
            regret_estimate: Some((seq % 17) as f64 * 0.01),
            active,
            removed_at: (!active).then_some(now),
            removed_t: (!active).then_some(t + 2000.0),
            removed_reason: (!active).then(|| "relevance".to_string()),
            metadata: None,
            created_at: now,
        };
        let calls = [("suggest", true), ("observe", false)].map(|(kind, optimum)| CallRecord {
            kind,
            t,
            dataset_size: ACTIVE.min(seq),
            compute_seconds: 0.05,
            snapshot: Some(snapshot(t, optimum)),
        });
        let change = ChangeSet {
            new_observations: vec![observation],
            calls: calls.to_vec(),
            response_time: Some(ResponseTimeSample {
                n: ACTIVE.min(seq),
                seconds: 10.0 + (seq % 7) as f64 * 0.01,
            }),
            state: (seq == 1).then(|| state.clone()),
            ..ChangeSet::default()
        };
        store.commit(id, seq - 1, &change, None).await.unwrap();
    }
    id
}

fn bench_session_page(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // In memory-backed storage where there is one: the setup's 100,000 commits each wait
    // for a sync (the benchmark itself only reads).
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let url = format!("sqlite://{}", dir.path().join("long.db").display());
    let (service, store, id) = runtime.block_on(async {
        let store = SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .unwrap();
        let service = SessionService::new(Arc::new(store.clone()), Limits::default());
        let id = long_session(&service, &store).await;
        (service, store, id)
    });
    let mut group = c.benchmark_group("dashboard");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function(format!("session_page/{OBSERVATIONS}"), |b| {
        b.iter(|| {
            runtime.block_on(async {
                let session = service.get_session(id).await.unwrap();
                let answer = service.timeline(id, DEFAULT_TIMELINE_POINTS).await.unwrap();
                let timeline: serde_json::Value = serde_json::from_slice(&answer.json).unwrap();
                assert_eq!(timeline["observation_count"], session.observation_count);
                service.best(id, None, Default::default()).await.unwrap();
            })
        })
    });
    group.bench_function(format!("session/{OBSERVATIONS}"), |b| {
        b.iter(|| runtime.block_on(async { service.get_session(id).await.unwrap() }))
    });
    group.bench_function(format!("load_history/{OBSERVATIONS}"), |b| {
        b.iter(|| runtime.block_on(async { store.load_history(id).await.unwrap() }))
    });
    group.bench_function(format!("best/{OBSERVATIONS}"), |b| {
        b.iter(|| {
            runtime.block_on(async { service.best(id, None, Default::default()).await.unwrap() })
        })
    });
    group.bench_function(format!("timeline/{OBSERVATIONS}"), |b| {
        b.iter(|| {
            runtime.block_on(async { service.timeline(id, DEFAULT_TIMELINE_POINTS).await.unwrap() })
        })
    });
    bench_page_in_chromium(&mut group, &runtime, Arc::new(store.clone()), id);
    group.finish();
}

/// The session page in Chromium, served over HTTP with keys off: from navigation to the
/// end of its first draw, as the page measures it (`performance.now()` then).
fn bench_page_in_chromium(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    runtime: &tokio::runtime::Runtime,
    store: Arc<dyn Store>,
    id: Uuid,
) {
    let Some(mut browser) = browser::Browser::launch("dashboard/page_in_chromium") else {
        return;
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/sessions/{id}", listener.local_addr().unwrap());
    let settings = tvbo::api::RouterSettings {
        access: tvbo::api::auth::AccessSettings::open(),
        ..Default::default()
    };
    let router = tvbo::api::router(store, settings);
    runtime.spawn(async move {
        let connections = tvbo::server::ConnectionSettings::default();
        tvbo::server::serve_router(listener, router, connections, std::future::pending())
            .await
            .unwrap()
    });
    group.bench_function(format!("page_in_chromium/{OBSERVATIONS}"), |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                browser.open(&url, "document.body.dataset.renderedMs !== undefined");
                assert!(browser.errors.is_empty(), "{:?}", browser.errors);
                let ms = browser.eval("Number(document.body.dataset.renderedMs)");
                total += Duration::from_secs_f64(ms.as_f64().unwrap() / 1000.0);
            }
            total
        })
    });
}

criterion_group!(benches, bench_session_page);
criterion_main!(benches);
