//! A batch written with one statement per table stores what its changes store one by one
//! (`commit.rs`'s statements under savepoints): the same rows in every table, the same
//! timeline summaries, the same refusals. Needs `TVBO_TEST_POSTGRES_URL` (skipped, saying
//! so, without it).

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::Connection;
use uuid::Uuid;

use super::super::postgres::PostgresStore;
use super::super::postgres_writer::commit_one_by_one;
use super::super::queued::Job;
use super::super::{IdempotencyRecord, PoolSettings, Store, StoreError, test_session};
use super::{into_batches, write};
use crate::domain::events::{EventKind, NewEvent};
use crate::domain::records::{
    CallRecord, ChangeSet, Deactivation, EndedRun, ObservationRow, ResponseTimeSample, RunEnd,
    SessionRow, SuggestionRow, SuggestionStatus,
};

/// Sessions per set.
const SESSIONS: usize = 5;
/// Rounds of changes: enough for a session's calls and observations to fill two buckets.
const ROUNDS: usize = 70;

#[tokio::test]
async fn a_batch_stores_what_its_changes_store_one_by_one() {
    on_scratch("a_batch_stores_what_its_changes_store_one_by_one", compare).await;
}

/// A key stored longer ago than its time to live is purged by the next batch with keys:
/// the same key then acts again (its new answer stored), and only a live key is taken.
#[tokio::test]
async fn an_expired_key_is_purged_by_a_batch_and_acts_again() {
    on_scratch(
        "an_expired_key_is_purged_by_a_batch_and_acts_again",
        expired_key_acts_again,
    )
    .await;
}

/// Runs `check` on a store over a database of its own, dropped after it; fails the test
/// with what `check` found. Skipped, saying so, without `TVBO_TEST_POSTGRES_URL`.
async fn on_scratch(test: &str, check: impl AsyncFnOnce(&PostgresStore) -> Result<(), String>) {
    let Some(scratch) = Scratch::new(test).await else {
        return;
    };
    let outcome = check(&scratch.store).await;
    scratch.close().await;
    outcome.unwrap();
}

async fn expired_key_acts_again(store: &PostgresStore) -> Result<(), String> {
    let row = test_session("gp-ucb");
    store.create_session(&row, None, None, false).await.unwrap();
    let record = |body: &str| IdempotencyRecord {
        scope: "POST /v1/sessions/x/suggestions".into(),
        session_id: Some(row.id),
        key: "retried".into(),
        request_hash: "cd".repeat(32),
        status: 201,
        body: body.into(),
    };
    let commit = |version: i64, body: &'static str| {
        let change = ChangeSet {
            calls: vec![call(version as f64, version)],
            ..ChangeSet::default()
        };
        let job = Job::new(row.id, version, &change, Some(&record(body))).0;
        async move {
            let mut transaction = store.pool().begin().await.map_err(|e| e.to_string())?;
            let outcome = write(&mut transaction, &[job])
                .await
                .map_err(|e| e.to_string())?;
            transaction.commit().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(kinds(&outcome))
        }
    };
    let stored = || async {
        store
            .get_idempotency("POST /v1/sessions/x/suggestions", "retried")
            .await
            .map_err(|e| e.to_string())
            .map(|r| r.map(|r| r.body))
    };
    assert_eq!(commit(0, "first").await?, ["ok"]);
    assert_eq!(commit(1, "second").await?, ["duplicate key"], "a live key");
    sqlx::query("UPDATE idempotency SET created_micros = created_micros - $1")
        .bind(super::IDEMPOTENCY_TTL_MICROS + 1)
        .execute(store.pool())
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(stored().await?.as_deref(), Some("first"));
    assert_eq!(commit(1, "third").await?, ["ok"], "an expired key");
    assert_eq!(stored().await?.as_deref(), Some("third"));
    Ok(())
}

/// A database of its own on the test PostgreSQL server, with a store over it; None
/// (after saying why) without `TVBO_TEST_POSTGRES_URL`.
struct Scratch {
    store: PostgresStore,
    admin: sqlx::PgConnection,
    name: String,
}

impl Scratch {
    async fn new(test: &str) -> Option<Scratch> {
        let Ok(admin) = std::env::var("TVBO_TEST_POSTGRES_URL") else {
            eprintln!(
                "SKIPPED {test}: set TVBO_TEST_POSTGRES_URL to postgres://user@host:port/db \
                 to run it"
            );
            return None;
        };
        let name = format!("tvbo_test_{}", Uuid::new_v4().simple());
        let mut connection = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut connection)
            .await
            .unwrap();
        let mut url = reqwest::Url::parse(&admin).unwrap();
        url.set_path(&format!("/{name}"));
        let store = PostgresStore::connect(url.as_str(), &PoolSettings::default())
            .await
            .unwrap();
        Some(Scratch {
            store,
            admin: connection,
            name,
        })
    }

    /// Closes the store and drops its database.
    async fn close(mut self) {
        self.store.pool().close().await;
        drop(self.store);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut self.admin)
        .await
        .unwrap();
    }
}

/// Commits the same changes to two sets of sessions, one by one and in batches, and
/// compares what each pair of sessions holds.
async fn compare(store: &PostgresStore) -> Result<(), String> {
    let mut one_by_one = Set::new(store).await;
    let mut batched = Set::new(store).await;
    for round in 0..ROUNDS {
        let mut jobs = Vec::new();
        let mut outcomes = Vec::new();
        for i in 0..SESSIONS {
            let job = one_by_one.job(round, i);
            outcomes.extend(commit_one_by_one(store.pool(), &[job], "id").await);
            jobs.push(batched.job(round, i));
        }
        // A session that is gone, in both.
        let gone = |set: &mut Set| set.job_for(Uuid::new_v4(), 0, round, 0);
        outcomes.extend(commit_one_by_one(store.pool(), &[gone(&mut one_by_one)], "id").await);
        jobs.push(gone(&mut batched));
        let mut transaction = store.pool().begin().await.map_err(|e| e.to_string())?;
        let got = write(&mut transaction, &jobs)
            .await
            .map_err(|e| e.to_string())?;
        transaction.commit().await.map_err(|e| e.to_string())?;
        let (expected, got) = (kinds(&outcomes), kinds(&got));
        if expected != got {
            return Err(format!(
                "round {round}: {expected:?} one by one, {got:?} batched"
            ));
        }
        one_by_one.settle(&outcomes);
        batched.settle(&outcomes);
    }
    for i in 0..SESSIONS {
        let (a, b) = (one_by_one.rows[i].id, batched.rows[i].id);
        for &(table, sql) in &DUMPS {
            let dump = |id: Uuid| async move {
                sqlx::query_scalar::<_, Option<String>>(sql)
                    .bind(id.to_string())
                    .fetch_one(store.pool())
                    .await
                    .map_err(|e| format!("{table}: {e}"))
            };
            let (a, b) = (dump(a).await?, dump(b).await?);
            if a != b {
                return Err(format!(
                    "session {i}, {table}:\none by one {a:?}\nbatched    {b:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Each outcome's kind (errors compare by their variant).
fn kinds(outcomes: &[Result<(), StoreError>]) -> Vec<String> {
    outcomes
        .iter()
        .map(|outcome| match outcome {
            Ok(()) => "ok".into(),
            Err(StoreError::Conflict) => "conflict".into(),
            Err(StoreError::NotFound) => "not found".into(),
            Err(StoreError::DuplicateKey) => "duplicate key".into(),
            Err(other) => format!("{other}"),
        })
        .collect()
}

/// A set of sessions and what their next changes build on.
struct Set {
    rows: Vec<SessionRow>,
    versions: Vec<i64>,
    /// Each session's suggestions so far (their ids).
    suggestions: Vec<Vec<Uuid>>,
    /// Each session's observations so far.
    observed: Vec<i64>,
    /// The session of each job of the round, and whether its suggestions were new.
    pending: Vec<(usize, Vec<Uuid>, i64)>,
}

impl Set {
    async fn new(store: &PostgresStore) -> Set {
        let mut rows = Vec::new();
        for _ in 0..SESSIONS {
            let row = test_session("gp-ucb");
            store.create_session(&row, None, None, false).await.unwrap();
            rows.push(row);
        }
        Set {
            rows,
            versions: vec![0; SESSIONS],
            suggestions: vec![Vec::new(); SESSIONS],
            observed: vec![0; SESSIONS],
            pending: Vec::new(),
        }
    }

    /// Session `i`'s change of `round`: every part of a change in turn, a stale version
    /// every fifth round of session 0 and a taken idempotency key every fourth of
    /// session 1.
    fn job(&mut self, round: usize, i: usize) -> Job {
        let stale = i == 0 && round % 5 == 4;
        let version = self.versions[i] - i64::from(stale);
        self.job_for(self.rows[i].id, version, round, i)
    }

    fn job_for(&mut self, id: Uuid, version: i64, round: usize, i: usize) -> Job {
        let seq = self.observed[i];
        let new: Vec<SuggestionRow> = (0..1 + round % 3)
            .map(|k| suggestion((round * 3 + k) as i64, round as f64))
            .collect();
        let earlier = &self.suggestions[i];
        let mut change = ChangeSet {
            new_suggestions: new.clone(),
            suggestion_status: earlier
                .iter()
                .rev()
                .take(2)
                .map(|g| (*g, SuggestionStatus::Observed))
                .chain(earlier.last().map(|g| (*g, SuggestionStatus::Expired)))
                .collect(),
            new_observations: (1..=3).map(|k| observation(seq + k, round)).collect(),
            state: round
                .is_multiple_of(2)
                .then(|| json!({"round": round, "session": i})),
            last_suggest: (round % 3 != 1).then_some((round as f64, round as i64)),
            last_optimum_mean: round.is_multiple_of(4).then_some(-(round as f64)),
            response_time: (round % 3 != 2).then_some(ResponseTimeSample {
                n: (round % 4) as i64,
                seconds: 0.01 * ((round * 7 + i) % 11) as f64,
            }),
            calls: (0..1 + (round + i) % 2)
                .map(|k| call(round as f64 + k as f64, ((round * 5 + i) % 9) as i64))
                .collect(),
            ..ChangeSet::default()
        };
        if seq > 2 {
            // Forgets an older observation, listed twice, and one already forgotten.
            let d = |seq: i64| Deactivation {
                seq,
                reason: if seq % 2 == 0 { "stale" } else { "budget" }.into(),
                t: round as f64 + 0.5,
            };
            change.deactivate = vec![d(seq - 1), d(seq - 1), d(1)];
        }
        if round % 6 == 3 {
            change.ended_runs.push(EndedRun {
                suggestion_id: new.first().map(|g| g.id),
                kind: if round % 12 == 3 {
                    RunEnd::Failed
                } else {
                    RunEnd::Abandoned
                },
                params: new[0].params.clone(),
                t: round as f64,
                reason: (round % 12 == 3).then(|| "crashed".into()),
                metadata: None,
                created_at: at(round as i64),
            });
        }
        if round % 7 == 2 {
            change.events.push(NewEvent {
                kind: EventKind::OptimumMoved,
                t: round as f64,
                data: json!({"round": round}),
            });
        }
        // Session 1 stores an idempotency record in odd rounds (a batch with keys locks its
        // sessions first; one without checks versions by the bump), reusing the key of two
        // rounds before in every fourth.
        let key = (i == 1 && round % 2 == 1).then(|| {
            let k = if round % 4 == 3 { round - 2 } else { round };
            IdempotencyRecord {
                scope: "POST /v1/sessions/x/observations".into(),
                session_id: Some(id),
                key: format!("{id}-{k}"),
                request_hash: "ab".repeat(32),
                status: 200,
                body: format!(r#"{{"round":{round}}}"#),
            }
        });
        self.pending
            .push((i, new.iter().map(|g| g.id).collect(), seq + 3));
        Job::new(id, version, &change, key.as_ref()).0
    }

    /// Moves each session whose change of the round committed on.
    fn settle(&mut self, outcomes: &[Result<(), StoreError>]) {
        let pending = std::mem::take(&mut self.pending);
        for ((i, new, seq), outcome) in pending.into_iter().zip(outcomes) {
            if outcome.is_ok() {
                self.versions[i] += 1;
                self.suggestions[i].extend(new);
                self.observed[i] = seq;
            }
        }
    }
}

/// What each table holds of session `$1`, with what differs between two sessions given
/// the same changes taken out: ids (a suggestion stands for its ordinal, a call or sample
/// for its rank in the session) and the commit's wall-clock times.
const DUMPS: [(&str, &str); 10] = [
    (
        "sessions",
        "SELECT json_build_array(version, state, suggest_count, last_suggest_t, \
         last_suggest_n, last_optimum_mean, call_count, sample_count, observation_count, \
         last_activity_t, regret_total, regret_count, average_regret)::text \
         FROM sessions WHERE id = $1",
    ),
    (
        "suggestions",
        "SELECT json_agg(json_build_array(ordinal, params, unit, arm, issued_t, t, \
         created_micros, status) ORDER BY ordinal)::text FROM suggestions WHERE session_id = $1",
    ),
    (
        "observations",
        "SELECT json_agg(json_build_array(seq, (SELECT ordinal FROM suggestions g \
         WHERE g.id = o.suggestion_id), params, unit, value, t, measured_micros, regret, \
         active, removed_micros IS NULL, removed_reason, created_micros, removed_t, \
         regret_estimate, metadata) ORDER BY seq)::text FROM observations o \
         WHERE session_id = $1",
    ),
    (
        "ended_runs",
        "SELECT json_agg(json_build_array((SELECT ordinal FROM suggestions g \
         WHERE g.id = r.suggestion_id), kind, params, t, reason, created_micros, metadata) \
         ORDER BY id)::text FROM ended_runs r WHERE session_id = $1",
    ),
    (
        "response_times",
        "SELECT json_agg(json_build_array(n, seconds) ORDER BY id)::text \
         FROM response_times WHERE session_id = $1",
    ),
    (
        "response_time_summaries",
        "SELECT json_agg(json_build_array(n, count, total_seconds) ORDER BY n)::text \
         FROM response_time_summaries WHERE session_id = $1",
    ),
    (
        "calls",
        "SELECT json_agg(json_build_array(kind, t, dataset_size, compute_seconds, snapshot) \
         ORDER BY id)::text FROM calls WHERE session_id = $1",
    ),
    (
        "timeline_buckets",
        "WITH c AS (SELECT id, row_number() OVER (ORDER BY id) AS r FROM calls \
           WHERE session_id = $1), \
         s AS (SELECT id, row_number() OVER (ORDER BY id) AS r FROM response_times \
           WHERE session_id = $1), \
         b AS (SELECT *, CASE series WHEN 'c' THEN 1 WHEN 's' THEN 2 ELSE 0 END AS ids \
           FROM timeline_buckets WHERE session_id = $1) \
         SELECT json_agg(json_build_array(series, bucket, count, lo, hi, lo2, lo2_key, hi2, \
           hi2_key, total, n_valued, n_reported, \
           CASE ids WHEN 1 THEN (SELECT r FROM c WHERE id = first_key) \
             WHEN 2 THEN (SELECT r FROM s WHERE id = first_key) ELSE first_key END, \
           CASE ids WHEN 1 THEN (SELECT r FROM c WHERE id = last_key) \
             WHEN 2 THEN (SELECT r FROM s WHERE id = last_key) ELSE last_key END, \
           CASE ids WHEN 1 THEN (SELECT r FROM c WHERE id = lo_key) \
             WHEN 2 THEN (SELECT r FROM s WHERE id = lo_key) ELSE lo_key END, \
           CASE ids WHEN 1 THEN (SELECT r FROM c WHERE id = hi_key) \
             WHEN 2 THEN (SELECT r FROM s WHERE id = hi_key) ELSE hi_key END) \
           ORDER BY series, bucket)::text FROM b",
    ),
    (
        "events",
        "WITH c AS (SELECT id, row_number() OVER (ORDER BY id) AS r FROM calls \
           WHERE session_id = $1) \
         SELECT json_agg(json_build_array(seq, (SELECT r FROM c WHERE id = step), kind, t, \
           data) ORDER BY seq)::text FROM events WHERE session_id = $1",
    ),
    (
        "idempotency",
        "SELECT json_agg(json_build_array(scope, split_part(key, '-', 6), request_hash, \
         status, body) ORDER BY created_micros, key)::text FROM idempotency \
         WHERE session_id = $1",
    ),
];

fn at(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(1_700_000_000_000_000 + micros).unwrap()
}

fn suggestion(ordinal: i64, issued_t: f64) -> SuggestionRow {
    let x = (ordinal % 10) as f64 / 10.0;
    SuggestionRow {
        id: Uuid::new_v4(),
        ordinal,
        params: serde_json::from_value(json!({"x": x})).unwrap(),
        unit: vec![x],
        arm: (ordinal % 2 == 1).then(|| format!("arm{ordinal}")),
        issued_t,
        t: issued_t + 1.0,
        created_at: at(ordinal),
        status: SuggestionStatus::Pending,
    }
}

/// Observation `seq`: values tied in pairs (the buckets keep the first row of an
/// extreme), regrets reported,
/// estimated or absent, and every fifth stored already forgotten.
fn observation(seq: i64, round: usize) -> ObservationRow {
    let forgotten = seq % 5 == 0;
    ObservationRow {
        seq,
        suggestion_id: None,
        params: serde_json::from_value(json!({"x": 0.5})).unwrap(),
        unit: vec![0.5],
        value: ((seq / 2 * 7) % 5) as f64,
        t: round as f64,
        measured_at: Some(at(seq)),
        regret: (seq % 3 == 1).then_some(3.0 - ((seq / 6) % 4) as f64),
        regret_estimate: (seq % 3 == 0).then_some(3.0 - ((seq / 6) % 4) as f64),
        active: !forgotten,
        removed_at: forgotten.then(|| at(seq)),
        removed_t: forgotten.then_some(round as f64),
        removed_reason: forgotten.then(|| "window".into()),
        metadata: (seq % 4 == 0).then(|| serde_json::from_value(json!({"host": "a"})).unwrap()),
        created_at: at(seq),
    }
}

fn call(t: f64, dataset_size: i64) -> CallRecord {
    CallRecord {
        kind: "observe",
        t,
        dataset_size,
        compute_seconds: 0.001 * dataset_size as f64,
        snapshot: None,
    }
}

#[test]
fn into_batches_keeps_sessions_and_keys_apart_in_order() {
    let id = |n: u128| Uuid::from_u128(n);
    let key = |k: &str| IdempotencyRecord {
        scope: "s".into(),
        session_id: None,
        key: k.into(),
        request_hash: String::new(),
        status: 200,
        body: String::new(),
    };
    let jobs: Vec<Job> = [
        (1, None),
        (1, None),
        (2, Some("a")),
        (3, Some("a")),
        (4, None),
        (1, Some("b")),
    ]
    .into_iter()
    .map(|(session, k)| {
        let record = k.map(key);
        Job::new(
            id(session),
            session as i64,
            &ChangeSet::default(),
            record.as_ref(),
        )
        .0
    })
    .collect();
    let batches: Vec<Vec<(Uuid, i64)>> = into_batches(jobs)
        .into_iter()
        .map(|batch| batch.iter().map(|j| (j.id, j.expected_version)).collect())
        .collect();
    assert_eq!(
        batches,
        [
            vec![(id(1), 1), (id(2), 2), (id(4), 4)],
            vec![(id(1), 1), (id(3), 3)],
            vec![(id(1), 1)],
        ]
    );
}
