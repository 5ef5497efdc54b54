//! Does a session slow down with age? Builds two `bolt` sessions with the same active set
//! (the last `--active` observations, n* held there) and the same model state: an *old*
//! one with `--history` observations behind it (forgotten by relevance), each committed
//! as a live session commits them, with its suggest and observe calls and a
//! response-time sample; and a *fresh* one that holds only the active set. Then it runs
//! `--rounds` suggest → observe rounds on each, alternating between them so that both see
//! the same machine, and prints the median time of each call and the ratio old / fresh.
//!
//! ```sh
//! cargo bench --bench session_age                     # SQLite (in /dev/shm)
//! createdb -h 127.0.0.1 -U postgres tvbo_age
//! cargo bench --bench session_age -- --database-url postgres://postgres@127.0.0.1:5432/tvbo_age
//! ```
//!
//! Building the old session takes minutes (one commit per observation);
//! docs/performance.md has the results.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, ensure};
use chrono::Utc;
use clap::Parser;
use serde_json::json;
use tvbo::domain::config::CreateSession;
use tvbo::domain::input::ObservationInput;
use tvbo::domain::records::{
    CallRecord, ChangeSet, DEFAULT_TENANT, ObservationRow, ResponseTimeSample,
};
use tvbo::domain::space::numbers;
use tvbo::engine::Limits;
use tvbo::gp::Hyperparameters;
use tvbo::policy::PolicyState;
use tvbo::server::open_store;
use tvbo::session::service::SessionService;
use tvbo::session::views::SuggestRequest;
use tvbo::store::{PoolSettings, Store};
use uuid::Uuid;

/// The server's allocator (see `src/main.rs`), so that this measures what it runs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Time suggest and observe on an old session and on a fresh one with the same active set.
#[derive(Debug, Parser)]
struct Args {
    /// Passed by `cargo bench` to every bench; ignored.
    #[arg(long, hide = true)]
    bench: bool,
    /// Database (default: a temporary SQLite file, in /dev/shm where there is one).
    #[arg(long)]
    database_url: Option<String>,
    /// Observations behind the old session's active set.
    #[arg(long, default_value_t = 100_000)]
    history: i64,
    /// Active observations (BOLT's n*, held by `max_dataset_size`).
    #[arg(long, default_value_t = 50)]
    active: i64,
    /// Suggest → observe rounds on each session.
    #[arg(long, default_value_t = 40)]
    rounds: usize,
}

/// Seconds between observations, in session time.
const STEP: f64 = 10.0;

fn objective(x: f64, y: f64, t: f64) -> f64 {
    -(x - 0.5 - 0.3 * (t / 3600.0).sin()).powi(2) - (y - 0.5).powi(2)
}

/// Observation `seq` of the history, active or forgotten.
fn observation(seq: i64, t: f64, active: bool) -> ObservationRow {
    let (x, y) = ((seq as f64 * 0.618).fract(), (seq as f64 * 0.377).fract());
    let now = Utc::now();
    ObservationRow {
        seq,
        suggestion_id: None,
        params: numbers([("x", x), ("y", y)]),
        unit: vec![x, y],
        value: objective(x, y, t),
        t,
        measured_at: None,
        regret: None,
        regret_estimate: None,
        active,
        removed_at: (!active).then_some(now),
        removed_t: (!active).then_some(t + STEP),
        removed_reason: (!active).then(|| "relevance".to_string()),
        metadata: None,
        created_at: now,
    }
}

async fn create(service: &SessionService, name: &str, active: i64) -> anyhow::Result<Uuid> {
    let request: CreateSession = serde_json::from_value(json!({
        "name": name,
        "parameters": [{"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 1}],
        "algorithm": {"name": "bolt", "max_dataset_size": active},
        "model": {"warmup": 0},
        "time": {"source": "client"},
        "seed": 1
    }))?;
    Ok(service
        .create_session(DEFAULT_TENANT, request, None)
        .await?
        .id)
}

fn state(active: i64) -> serde_json::Value {
    serde_json::to_value(PolicyState {
        hyperparameters: Some(Hyperparameters {
            temporal_lengthscale: 900.0,
            ..Hyperparameters::default()
        }),
        max_dataset_size: Some(active as u64),
        ..PolicyState::default()
    })
    .expect("state serialises")
}

/// `history` observations, the last `active` of them active, one commit each as a live
/// session makes them (with its two calls and a response-time sample).
async fn old_session(store: &dyn Store, id: Uuid, history: i64, active: i64) -> anyhow::Result<()> {
    let started = Instant::now();
    for seq in 1..=history {
        let t = seq as f64 * STEP;
        let calls = ["suggest", "observe"].map(|kind| CallRecord {
            kind,
            t,
            dataset_size: active.min(seq),
            compute_seconds: 0.01,
            snapshot: None,
        });
        let change = ChangeSet {
            new_observations: vec![observation(seq, t, seq > history - active)],
            calls: calls.to_vec(),
            response_time: Some(ResponseTimeSample {
                n: active.min(seq),
                seconds: STEP + (seq % 7) as f64 * 0.01,
            }),
            state: (seq == 1).then(|| state(active)),
            ..Default::default()
        };
        store.commit(id, seq - 1, &change, None).await?;
        if seq % 10_000 == 0 {
            eprintln!(
                "  old session: {seq} of {history} observations ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// The old session's active observations alone, renumbered from 1, in one commit.
async fn fresh_session(
    store: &dyn Store,
    id: Uuid,
    history: i64,
    active: i64,
) -> anyhow::Result<()> {
    let change = ChangeSet {
        new_observations: (1..=active)
            .map(|seq| {
                let old_seq = history - active + seq;
                ObservationRow {
                    seq,
                    ..observation(old_seq, old_seq as f64 * STEP, true)
                }
            })
            .collect(),
        state: Some(state(active)),
        ..Default::default()
    };
    store.commit(id, 0, &change, None).await?;
    Ok(())
}

/// Seconds of one suggest and of the observe of its suggestion, at session time t.
async fn round(service: &SessionService, id: Uuid, t: f64) -> anyhow::Result<(f64, f64)> {
    let started = Instant::now();
    let suggested = service
        .suggest(
            id,
            SuggestRequest {
                count: Some(1),
                t: Some(t),
                fixed: None,
            },
            None,
        )
        .await?;
    let suggest = started.elapsed().as_secs_f64();
    let s = &suggested.suggestions[0];
    let input = ObservationInput {
        suggestion_id: Some(s.id),
        value: Some(objective(
            s.params["x"].as_number().context("x is a number")?,
            s.params["y"].as_number().context("y is a number")?,
            t,
        )),
        t: Some(t),
        ..ObservationInput::default()
    };
    let started = Instant::now();
    service
        .observe(id, vec![(String::new(), input)], None)
        .await?;
    Ok((suggest, started.elapsed().as_secs_f64()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.active >= 2 && args.history > args.active,
        "need history > active ≥ 2"
    );
    ensure!(args.rounds > 0, "--rounds must be at least 1");
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir()?
    };
    let url = args
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("age.db").display()));
    let store: Arc<dyn Store> = open_store(&url, &PoolSettings::default())
        .await
        .with_context(|| format!("opening {url}"))?;
    let service = SessionService::new(store.clone(), Limits::default());
    let old = create(&service, "old", args.active).await?;
    let fresh = create(&service, "fresh", args.active).await?;
    eprintln!("building the old session ({} observations)…", args.history);
    old_session(store.as_ref(), old, args.history, args.active).await?;
    fresh_session(store.as_ref(), fresh, args.history, args.active).await?;
    let (mut old_times, mut fresh_times) = (Vec::new(), Vec::new());
    for r in 0..args.rounds {
        let t = (args.history + 1 + r as i64) as f64 * STEP;
        // Alternate which goes first, so that neither always follows the other.
        let order = if r % 2 == 0 {
            [old, fresh]
        } else {
            [fresh, old]
        };
        for id in order {
            let times = round(&service, id, t).await?;
            if id == old {
                old_times.push(times);
            } else {
                fresh_times.push(times);
            }
        }
    }
    let backend = url.split(':').next().unwrap_or("?");
    for (call, pick) in [("suggest", 0), ("observe", 1)] {
        let of = |v: &[(f64, f64)]| {
            median(
                v.iter()
                    .map(|p| if pick == 0 { p.0 } else { p.1 })
                    .collect(),
            )
        };
        let (o, f) = (of(&old_times), of(&fresh_times));
        println!(
            "{backend} {call}: old ({} observations) {:.2} ms, fresh ({} observations) {:.2} ms, old / fresh {:.2}",
            args.history,
            o * 1e3,
            args.active,
            f * 1e3,
            o / f
        );
    }
    let history = store.load_history(old).await?.context("the old session")?;
    ensure!(
        history.active.len() as i64 == args.active,
        "n* was not held: {} active",
        history.active.len()
    );
    store.delete_session(old).await?;
    store.delete_session(fresh).await?;
    Ok(())
}
