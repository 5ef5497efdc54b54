//! A batch of changes to distinct sessions written in one PostgreSQL transaction with a
//! few statements (PostgreSQL's writer, `postgres_writer.rs`): the version bumps, the new
//! rows of every table in one statement, the forgetting, the timeline's summaries. The
//! rows are those `commit.rs` writes change by change (the same argument builders,
//! transposed into arrays that `unnest` turns back into rows, `store/unnest.rs`), so that
//! a batch costs five or six round trips whatever its size (one or two more with
//! idempotency keys, one more per event), where change by change costs
//! about ten per change (docs/performance.md, "What bounds PostgreSQL").
//!
//! A change of the batch still commits alone in effect: what can refuse one (a session
//! gone, a version moved on, a taken idempotency key) is decided before anything of it
//! is written, and only the changes that pass are written. A failure after that fails
//! the batch's transaction, and the writer then commits its changes one by one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

use chrono::Utc;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection};

use super::commit::{
    self, Arg, BUMP_COLUMNS, CALLS, ENDED_RUNS, IDEMPOTENCY, OBSERVATIONS, RESPONSE_TIMES,
    SUGGESTIONS, SeriesPoint,
};
use super::queued::Job;
use super::timeline::Bucket;
use super::unnest::{Writes, arrays, bind_columns, query, unnest};
use super::{IDEMPOTENCY_TTL_MICROS, StoreError, to_micros};

/// Begins a batch's transaction, whose statements find the rows they change by index.
/// A prepared statement's generic plan cannot see how many rows an array argument
/// holds; one made while a table was small (a new database) joins the batch's rows by
/// reading the whole table, and the connection keeps it as the table grows (the
/// suggestions' statuses read 36 million rows in a 10-second run of the load bench). Every
/// row a batch reads or changes is found by a key, so no plan of the batch needs a
/// sequential scan.
pub(super) const BEGIN: &str = "BEGIN; SET LOCAL enable_seqscan = off";

/// Splits `jobs` (in their order) into batches in which no two change the same session (a
/// row is updated at most once per statement, and a session's second change is planned
/// from its first) or store the same idempotency key: each job goes to the first batch
/// after every one holding a job of its session or its key, so that a session's changes
/// keep their order.
pub(super) fn into_batches(jobs: Vec<Job>) -> Vec<Vec<Job>> {
    let mut batches: Vec<Vec<Job>> = Vec::new();
    let mut last_of_session = HashMap::new();
    let mut last_of_key = HashMap::new();
    for job in jobs {
        let key = job
            .idempotency
            .as_ref()
            .map(|r| (r.scope.clone(), r.key.clone()));
        let after_session = last_of_session.get(&job.id).map_or(0, |i| i + 1);
        let after_key = key
            .as_ref()
            .and_then(|k| last_of_key.get(k))
            .map_or(0, |i| i + 1);
        let index = after_session.max(after_key);
        if index == batches.len() {
            batches.push(Vec::new());
        }
        last_of_session.insert(job.id, index);
        if let Some(key) = key {
            last_of_key.insert(key, index);
        }
        batches[index].push(job);
    }
    batches
}

/// Writes `batch` (changes to distinct sessions and keys, [`into_batches`]) inside the
/// transaction on `conn`; each change's outcome, in order. An error fails the whole
/// transaction (the caller rolls it back).
pub(super) async fn write(
    conn: &mut PgConnection,
    batch: &[Job],
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let now = to_micros(Utc::now());
    let keyed = batch.iter().any(|job| job.idempotency.is_some());
    let mut outcomes = if keyed {
        refusals(conn, batch, now).await?
    } else {
        batch.iter().map(|_| Ok(())).collect()
    };
    let mut live: Vec<(&Job, String)> = batch
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| outcome.is_ok())
        .map(|(job, _)| (job, job.id.to_string()))
        .collect();
    if live.is_empty() {
        return Ok(outcomes);
    }
    let counts = bump_versions(conn, &live, now).await?;
    if counts.len() < live.len() {
        if keyed {
            return Err(StoreError::Corrupt(format!(
                "a batch's version bump matched {} of {} locked sessions",
                counts.len(),
                live.len()
            )));
        }
        refuse_unmatched(conn, batch, &counts, &mut outcomes).await?;
        live.retain(|(_, key)| counts.contains_key(key));
    }
    if !live.is_empty() {
        write_rows(conn, &live, &counts, now).await?;
    }
    Ok(outcomes)
}

/// Locks the sessions of the ids `$2` in their order and reads their versions, and
/// purges the idempotency keys stored before `$1` in the same round trip (a
/// data-modifying part of a query runs whether or not the query reads it), before the
/// batch's own keys are stored.
static LOCK_AND_PURGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH purged AS ({}) \
         SELECT id, version FROM sessions WHERE id = ANY($2) ORDER BY id FOR UPDATE",
        commit::PURGE_IDEMPOTENCY
    )
});

/// For a batch with idempotency keys: locks the batch's sessions (in the order of their
/// ids, so that two batches never wait for each other in opposite orders) and decides
/// which changes are refused: `NotFound` for a session that is gone, `Conflict` for one
/// whose version moved on, then `DuplicateKey` for a taken idempotency key (the others'
/// records are stored here), so that a refused change writes nothing.
async fn refusals(
    conn: &mut PgConnection,
    batch: &[Job],
    now: i64,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let ids: Vec<String> = batch.iter().map(|job| job.id.to_string()).collect();
    let versions: HashMap<String, i64> = sqlx::query_as(AssertSqlSafe(LOCK_AND_PURGE.as_str()))
        .bind(now - IDEMPOTENCY_TTL_MICROS)
        .bind(&ids)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    let mut outcomes: Vec<Result<(), StoreError>> = batch
        .iter()
        .zip(&ids)
        .map(|(job, id)| match versions.get(id) {
            None => Err(StoreError::NotFound),
            Some(&version) if version != job.expected_version => Err(StoreError::Conflict),
            Some(_) => Ok(()),
        })
        .collect();
    let records: Vec<Vec<Arg>> = batch
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| outcome.is_ok())
        .filter_map(|(job, _)| job.idempotency.as_ref())
        .map(|record| commit::idempotency_args(record, now))
        .collect();
    if records.is_empty() {
        return Ok(outcomes);
    }
    let sql = format!(
        "INSERT INTO {} ({}) SELECT * FROM {} ON CONFLICT (scope, key) DO NOTHING \
         RETURNING scope, key",
        IDEMPOTENCY.name,
        IDEMPOTENCY.columns,
        arrays(&records, 1)
    );
    let stored: HashSet<(String, String)> = bind_columns(query(&sql), records)?
        .try_map(|row: PgRow| <(String, String) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    for (job, outcome) in batch.iter().zip(&mut outcomes) {
        let taken = job
            .idempotency
            .as_ref()
            .is_some_and(|r| !stored.contains(&(r.scope.clone(), r.key.clone())));
        if outcome.is_ok() && taken {
            *outcome = Err(StoreError::DuplicateKey);
        }
    }
    Ok(outcomes)
}

/// The refusal of each change whose version bump matched nothing (a batch without
/// idempotency keys checks the versions by the bump itself): `NotFound` for a session
/// that is gone, else `Conflict`.
async fn refuse_unmatched(
    conn: &mut PgConnection,
    batch: &[Job],
    counts: &HashMap<String, (i64, i64)>,
    outcomes: &mut [Result<(), StoreError>],
) -> Result<(), StoreError> {
    let unmatched: Vec<String> = batch
        .iter()
        .map(|job| job.id.to_string())
        .filter(|id| !counts.contains_key(id))
        .collect();
    let existing: HashSet<String> =
        sqlx::query_scalar("SELECT id FROM sessions WHERE id = ANY($1)")
            .bind(&unmatched)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
    for (job, outcome) in batch.iter().zip(outcomes) {
        let id = job.id.to_string();
        if outcome.is_ok() && !counts.contains_key(&id) {
            *outcome = Err(if existing.contains(&id) {
                StoreError::Conflict
            } else {
                StoreError::NotFound
            });
        }
    }
    Ok(())
}

/// The version bumps of `live` (`commit.rs`'s statement over the batch's rows, which
/// takes the sessions' row locks as PostgreSQL's join reads the rows: in their order, the
/// ids', with the nested loop over an index that the batch's plans use; a deadlock with
/// another order is detected and retried), and each matched
/// session's counts of calls and samples after its change.
async fn bump_versions(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    now: i64,
) -> Result<HashMap<String, (i64, i64)>, StoreError> {
    let rows: Vec<Vec<Arg>> = live
        .iter()
        .map(|(job, key)| commit::bump_args(key, job.expected_version, &job.change, now))
        .collect();
    let sql = commit::bump_version_sql(
        &unnest(&rows, &BUMP_COLUMNS, 1),
        "v.id, sessions.call_count, sessions.sample_count",
    );
    Ok(bind_columns(query(&sql), rows)?
        .try_map(|row: PgRow| <(String, i64, i64) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(id, calls, samples)| (id, (calls, samples)))
        .collect())
}

/// Writes the changes of `live` (each with its session's id as text), whose versions
/// have been bumped (`counts`: the sessions' counts of calls and samples after them):
/// their rows in one statement, the observations they forget, the timeline's summaries,
/// their events.
async fn write_rows(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    counts: &HashMap<String, (i64, i64)>,
    now: i64,
) -> Result<(), StoreError> {
    let mut points: Vec<(String, SeriesPoint)> = Vec::new();
    for (job, key) in live {
        let step = counts[key].0 - 1;
        for o in &job.change.new_observations {
            points.push((key.clone(), commit::observation_point(o)));
            if let (Some(t), Some(reason)) = (o.removed_t, &o.removed_reason) {
                points.push((key.clone(), commit::forgetting_point(reason, step, t)));
            }
        }
    }
    let mut ids = insert_rows(conn, live, now).await?;
    forget(conn, live, counts, now, &mut points).await?;
    let mut last_calls = HashMap::new();
    for (job, key) in live {
        let (calls, samples) = counts[key];
        if let Some(sample) = job.change.response_time {
            let id = returned(&mut ids, "s", key, 1)?[0];
            points.push((key.clone(), commit::sample_point(id, sample, samples)));
        }
        let made = &job.change.calls;
        let first = calls - made.len() as i64;
        for (i, (call, id)) in made
            .iter()
            .zip(returned(&mut ids, "c", key, made.len())?)
            .enumerate()
        {
            points.push((key.clone(), commit::call_point(id, call, first + i as i64)));
            last_calls.insert(key.clone(), id);
        }
    }
    record_in_buckets(conn, points).await?;
    for (job, key) in live {
        for event in &job.change.events {
            let call_id = *last_calls.get(key).ok_or_else(|| {
                StoreError::Corrupt("an event without the step that found it".into())
            })?;
            commit::insert_event(&mut *conn, key, call_id, event, now).await?;
        }
    }
    Ok(())
}

/// The ids of the rows a series (`s`: samples, `c`: calls) gave session `key`, in their
/// order (a session's ids rise with its rows); `Corrupt` unless there are `count`.
fn returned(
    ids: &mut HashMap<(String, String), Vec<i64>>,
    series: &str,
    key: &str,
    count: usize,
) -> Result<Vec<i64>, StoreError> {
    let mut got = ids
        .remove(&(series.to_owned(), key.to_owned()))
        .unwrap_or_default();
    got.sort_unstable();
    if got.len() != count {
        return Err(StoreError::Corrupt(format!(
            "an insert of {count} rows of series {series} returned {} ids",
            got.len()
        )));
    }
    Ok(got)
}

/// The changes' new rows, in one statement: suggestions and their statuses,
/// observations, ended runs, response-time samples and their summaries, calls (inserted
/// in their order); the ids of the samples (`s`) and calls (`c`) of each session.
async fn insert_rows(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    now: i64,
) -> Result<HashMap<(String, String), Vec<i64>>, StoreError> {
    let rows = |of: &dyn Fn(&Job, &str) -> Vec<Vec<Arg>>| -> Vec<Vec<Arg>> {
        live.iter().flat_map(|(job, key)| of(job, key)).collect()
    };
    let mut writes = Writes::new();
    writes.insert(
        &SUGGESTIONS,
        rows(&|job, key| {
            let new = &job.change.new_suggestions;
            new.iter()
                .map(|g| commit::suggestion_args(key, g))
                .collect()
        }),
    );
    let statuses = statuses(live);
    // A part does not see another's rows: a status of a suggestion the batch adds is set
    // by a statement of its own, after.
    let added: HashSet<String> = live
        .iter()
        .flat_map(|(job, _)| &job.change.new_suggestions)
        .map(|g| g.id.to_string())
        .collect();
    let (later, now_statuses): (Vec<_>, Vec<_>) = statuses
        .into_iter()
        .partition(|row| matches!(&row[0], Arg::Text(Some(id)) if added.contains(id)));
    writes.add(now_statuses, set_statuses);
    writes.insert(
        &OBSERVATIONS,
        rows(&|job, key| {
            let new = &job.change.new_observations;
            new.iter()
                .map(|o| commit::observation_args(key, o))
                .collect()
        }),
    );
    writes.insert(
        &ENDED_RUNS,
        rows(&|job, key| {
            let ended = &job.change.ended_runs;
            ended
                .iter()
                .map(|run| commit::ended_run_args(key, run))
                .collect()
        }),
    );
    let samples = |job: &Job| job.change.response_time.into_iter();
    writes.returning(
        "s",
        rows(&|job, key| {
            samples(job)
                .map(|sample| commit::response_time_args(key, sample, now))
                .collect()
        }),
        |arrays| {
            format!(
                "INSERT INTO {} ({}) SELECT * FROM {arrays} RETURNING session_id, id",
                RESPONSE_TIMES.name, RESPONSE_TIMES.columns
            )
        },
    );
    writes.add(
        rows(&|job, key| {
            samples(job)
                .map(|sample| {
                    let (n, seconds) = (sample.n, sample.seconds);
                    vec![key.into(), n.into(), 1i64.into(), seconds.into()]
                })
                .collect()
        }),
        |arrays| {
            format!(
                "INSERT INTO response_time_summaries (session_id, n, count, total_seconds) \
                 SELECT * FROM {arrays} {}",
                commit::SUMMARY_CONFLICT
            )
        },
    );
    writes.returning(
        "c",
        rows(&|job, key| {
            let calls = &job.change.calls;
            calls
                .iter()
                .map(|call| commit::call_args(key, call, now))
                .collect()
        }),
        |arrays| {
            let columns = CALLS.columns;
            format!(
                "INSERT INTO calls ({columns}) SELECT {columns} FROM {arrays} \
                 WITH ORDINALITY AS v({columns}, ordinal) ORDER BY v.ordinal \
                 RETURNING session_id, id"
            )
        },
    );
    let mut ids: HashMap<(String, String), Vec<i64>> = HashMap::new();
    for (series, session, id) in writes.run(&mut *conn).await? {
        ids.entry((series, session)).or_default().push(id);
    }
    if !later.is_empty() {
        let mut writes = Writes::new();
        writes.add(later, set_statuses);
        writes.run(&mut *conn).await?;
    }
    Ok(ids)
}

/// The new statuses of the suggestions the changes settled, as rows `(id, session_id,
/// status)`: a suggestion's last status in its change, as change by change.
fn statuses(live: &[(&Job, String)]) -> Vec<Vec<Arg>> {
    let mut last: BTreeMap<(String, String), &str> = BTreeMap::new();
    for (job, key) in live {
        for (suggestion, status) in &job.change.suggestion_status {
            last.insert((suggestion.to_string(), key.clone()), status.as_str());
        }
    }
    last.into_iter()
        .map(|((id, key), status)| vec![id.into(), key.into(), status.into()])
        .collect()
}

/// The update of the statuses from `arrays` of [`statuses`]' rows.
fn set_statuses(arrays: &str) -> String {
    format!(
        "UPDATE suggestions SET status = v.status FROM {arrays} AS v(id, session_id, status) \
         WHERE suggestions.id = v.id AND suggestions.session_id = v.session_id"
    )
}

/// The changes' forgetting of stored observations, and a point in `points` for each
/// observation it forgot (at its change's last call's ordinal).
async fn forget(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    counts: &HashMap<String, (i64, i64)>,
    now: i64,
    points: &mut Vec<(String, SeriesPoint)>,
) -> Result<(), StoreError> {
    let rows: Vec<Vec<Arg>> = live
        .iter()
        .flat_map(|(job, key)| {
            job.change.deactivate.iter().map(|d| {
                vec![
                    key.as_str().into(),
                    d.seq.into(),
                    d.reason.as_str().into(),
                    d.t.into(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE observations SET active = FALSE, removed_micros = $1, \
         removed_reason = v.reason, removed_t = v.t FROM {} \
         WHERE observations.session_id = v.session_id AND observations.seq = v.seq \
         AND observations.active RETURNING v.session_id, v.seq",
        unnest(&rows, &["session_id", "seq", "reason", "t"], 2)
    );
    let forgotten: HashSet<(String, i64)> = bind_columns(query(&sql).bind(now), rows)?
        .try_map(|row: PgRow| <(String, i64) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    for (job, key) in live {
        let step = counts[key].0 - 1;
        let mut seen = HashSet::new();
        for d in &job.change.deactivate {
            // A seq listed twice is forgotten once, as change by change.
            if forgotten.contains(&(key.clone(), d.seq)) && seen.insert(d.seq) {
                points.push((key.clone(), commit::forgetting_point(&d.reason, step, d.t)));
            }
        }
    }
    Ok(())
}

/// Folds `points` (in the order change by change would record them) into one summary
/// per bucket, and those into the stored summaries with one upsert.
async fn record_in_buckets(
    conn: &mut PgConnection,
    points: Vec<(String, SeriesPoint)>,
) -> Result<(), StoreError> {
    let mut buckets: BTreeMap<(String, String, i64), Bucket> = BTreeMap::new();
    for (session, row) in points {
        let summary = Bucket::of(&row.series, &row.point);
        match buckets.entry((session, row.series, row.bucket)) {
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(summary);
            }
            std::collections::btree_map::Entry::Occupied(mut entry) => {
                entry.get_mut().fold(&summary);
            }
        }
    }
    if buckets.is_empty() {
        return Ok(());
    }
    let rows: Vec<Vec<Arg>> = buckets
        .into_iter()
        .map(|((session, series, bucket), b)| {
            vec![
                session.into(),
                series.into(),
                bucket.into(),
                b.first_key.into(),
                b.last_key.into(),
                b.count.into(),
                b.lo.into(),
                b.lo_key.into(),
                b.hi.into(),
                b.hi_key.into(),
                b.lo2.into(),
                b.lo2_key.into(),
                b.hi2.into(),
                b.hi2_key.into(),
                b.total.into(),
                b.n_valued.into(),
                b.n_reported.into(),
            ]
        })
        .collect();
    let sql = format!(
        "INSERT INTO timeline_buckets ({}) SELECT * FROM {} {}",
        commit::BUCKET_COLUMNS,
        arrays(&rows, 1),
        commit::MERGE_INTO_BUCKET
    );
    bind_columns(query(&sql), rows)?.execute(&mut *conn).await?;
    Ok(())
}

#[cfg(test)]
#[path = "postgres_batch_tests.rs"]
mod tests;
