//! A batch of changes to distinct sessions written in one PostgreSQL transaction with one
//! statement per table (PostgreSQL's writer, `postgres_writer.rs`): the rows are those
//! `commit.rs` writes change by change (the same argument builders, transposed into
//! arrays that `unnest` turns back into rows), so that a batch costs about ten round trips
//! whatever its size, where change by change costs about ten per change
//! (docs/performance.md, "What bounds PostgreSQL").
//!
//! A change of the batch still commits alone in effect: what can refuse one (a session
//! gone, a version moved on, a taken idempotency key) is decided first, under the
//! sessions' row locks, and only the changes that pass are written. A failure after that
//! fails the batch's transaction, and the writer then commits its changes one by one.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::Utc;
use sqlx::PgConnection;
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::query::Query;

use super::commit::{
    self, Arg, BUMP_COLUMNS, CALLS, ENDED_RUNS, IDEMPOTENCY, OBSERVATIONS, RESPONSE_TIMES,
    SUGGESTIONS, SeriesPoint, Table,
};
use super::queued::Job;
use super::timeline::Bucket;
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
    let outcomes = refusals(conn, batch, now).await?;
    let live: Vec<(&Job, String)> = batch
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| outcome.is_ok())
        .map(|(job, _)| (job, job.id.to_string()))
        .collect();
    if !live.is_empty() {
        write_rows(conn, &live, now).await?;
    }
    Ok(outcomes)
}

/// Locks the batch's sessions (in the order of their ids, as every writer does, so that
/// two batches never wait for each other in opposite orders) and decides which changes
/// are refused: `NotFound` for a session that is gone, `Conflict` for one whose version
/// moved on, then `DuplicateKey` for a taken idempotency key (the others' records are
/// stored here).
async fn refusals(
    conn: &mut PgConnection,
    batch: &[Job],
    now: i64,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let ids: Vec<String> = batch.iter().map(|job| job.id.to_string()).collect();
    let versions: HashMap<String, i64> = sqlx::query_as(
        "SELECT id, version FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE",
    )
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
    sqlx::query(commit::PURGE_IDEMPOTENCY)
        .bind(now - IDEMPOTENCY_TTL_MICROS)
        .execute(&mut *conn)
        .await?;
    let sql = format!(
        "{} ON CONFLICT (scope, key) DO NOTHING RETURNING scope, key",
        insert_rows(&IDEMPOTENCY, &records, "")
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

/// Writes the changes of `live` (each with its session's id as text), whose versions
/// matched and whose keys were free.
async fn write_rows(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    now: i64,
) -> Result<(), StoreError> {
    let counts = bump_versions(conn, live, now).await?;
    let mut points: Vec<(String, SeriesPoint)> = Vec::new();
    insert(conn, &SUGGESTIONS, live, |job, key| {
        job.change
            .new_suggestions
            .iter()
            .map(|g| commit::suggestion_args(key, g))
            .collect()
    })
    .await?;
    set_statuses(conn, live).await?;
    insert(conn, &OBSERVATIONS, live, |job, key| {
        job.change
            .new_observations
            .iter()
            .map(|o| commit::observation_args(key, o))
            .collect()
    })
    .await?;
    for (job, key) in live {
        let step = counts[key].0 - 1;
        for o in &job.change.new_observations {
            points.push((key.clone(), commit::observation_point(o)));
            if let (Some(t), Some(reason)) = (o.removed_t, &o.removed_reason) {
                points.push((key.clone(), commit::forgetting_point(reason, step, t)));
            }
        }
    }
    forget(conn, live, &counts, now, &mut points).await?;
    insert(conn, &ENDED_RUNS, live, |job, key| {
        job.change
            .ended_runs
            .iter()
            .map(|run| commit::ended_run_args(key, run))
            .collect()
    })
    .await?;
    write_response_times(conn, live, &counts, now, &mut points).await?;
    let last_calls = write_calls(conn, live, &counts, now, &mut points).await?;
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

/// The version bumps of `live` (`commit.rs`'s statement over the batch's rows), and each
/// session's counts of calls and samples after its change. Every session was locked and
/// checked ([`refusals`]), so each must match.
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
        &unnest(&rows, &BUMP_COLUMNS),
        "v.id, sessions.call_count, sessions.sample_count",
    );
    let counts: HashMap<String, (i64, i64)> = bind_columns(query(&sql), rows)?
        .try_map(|row: PgRow| <(String, i64, i64) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(id, calls, samples)| (id, (calls, samples)))
        .collect();
    if counts.len() != live.len() {
        return Err(StoreError::Corrupt(format!(
            "a batch's version bump matched {} of {} locked sessions",
            counts.len(),
            live.len()
        )));
    }
    Ok(counts)
}

/// The new statuses of the suggestions the changes settled (a suggestion's last status in
/// its change, as change by change).
async fn set_statuses(conn: &mut PgConnection, live: &[(&Job, String)]) -> Result<(), StoreError> {
    let mut last: BTreeMap<(String, String), &str> = BTreeMap::new();
    for (job, key) in live {
        for (suggestion, status) in &job.change.suggestion_status {
            last.insert((suggestion.to_string(), key.clone()), status.as_str());
        }
    }
    if last.is_empty() {
        return Ok(());
    }
    let rows: Vec<Vec<Arg>> = last
        .into_iter()
        .map(|((id, key), status)| vec![id.into(), key.into(), status.into()])
        .collect();
    let sql = format!(
        "UPDATE suggestions SET status = v.status FROM {} \
         WHERE suggestions.id = v.id AND suggestions.session_id = v.session_id",
        unnest(&rows, &["id", "session_id", "status"])
    );
    bind_columns(query(&sql), rows)?.execute(&mut *conn).await?;
    Ok(())
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
        unnest_from(&rows, &["session_id", "seq", "reason", "t"], 2)
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

/// The response-time samples, their sizes' summaries, and their points in `points`.
async fn write_response_times(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    counts: &HashMap<String, (i64, i64)>,
    now: i64,
    points: &mut Vec<(String, SeriesPoint)>,
) -> Result<(), StoreError> {
    let samples: Vec<(&String, _)> = live
        .iter()
        .filter_map(|(job, key)| job.change.response_time.map(|sample| (key, sample)))
        .collect();
    if samples.is_empty() {
        return Ok(());
    }
    let rows: Vec<Vec<Arg>> = samples
        .iter()
        .map(|(key, sample)| commit::response_time_args(key, *sample, now))
        .collect();
    let sql = insert_rows(&RESPONSE_TIMES, &rows, "session_id, id");
    let ids: HashMap<String, i64> = bind_columns(query(&sql), rows)?
        .try_map(|row: PgRow| <(String, i64) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    let summaries: Vec<Vec<Arg>> = samples
        .iter()
        .map(|(key, sample)| {
            vec![
                key.as_str().into(),
                sample.n.into(),
                1i64.into(),
                sample.seconds.into(),
            ]
        })
        .collect();
    let sql = format!(
        "INSERT INTO response_time_summaries (session_id, n, count, total_seconds) \
         SELECT * FROM {} {}",
        unnest(&summaries, &["session_id", "n", "count", "total_seconds"]),
        commit::SUMMARY_CONFLICT
    );
    bind_columns(query(&sql), summaries)?
        .execute(&mut *conn)
        .await?;
    for (key, sample) in samples {
        let id = *ids
            .get(key)
            .ok_or_else(|| StoreError::Corrupt("a sample insert returned no id".into()))?;
        points.push((key.clone(), commit::sample_point(id, sample, counts[key].1)));
    }
    Ok(())
}

/// The call records (inserted in their order, so that a session's ids rise with its
/// calls), their points in `points`, and each session's last call's id.
async fn write_calls(
    conn: &mut PgConnection,
    live: &[(&Job, String)],
    counts: &HashMap<String, (i64, i64)>,
    now: i64,
    points: &mut Vec<(String, SeriesPoint)>,
) -> Result<HashMap<String, i64>, StoreError> {
    let rows: Vec<Vec<Arg>> = live
        .iter()
        .flat_map(|(job, key)| {
            job.change
                .calls
                .iter()
                .map(|call| commit::call_args(key, call, now))
        })
        .collect();
    if rows.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "INSERT INTO calls ({}) SELECT {} FROM {} WITH ORDINALITY AS v({}, ordinal) \
         ORDER BY v.ordinal RETURNING session_id, id",
        CALLS.columns,
        CALLS.columns,
        arrays(&rows),
        CALLS.columns
    );
    let mut ids: HashMap<String, Vec<i64>> = HashMap::new();
    let returned: Vec<(String, i64)> = bind_columns(query(&sql), rows)?
        .try_map(|row: PgRow| <(String, i64) as sqlx::FromRow<_>>::from_row(&row))
        .fetch_all(&mut *conn)
        .await?;
    for (session, id) in returned {
        ids.entry(session).or_default().push(id);
    }
    let mut last_calls = HashMap::new();
    for (job, key) in live {
        let mut session_ids = ids.remove(key).unwrap_or_default();
        session_ids.sort_unstable();
        if session_ids.len() != job.change.calls.len() {
            return Err(StoreError::Corrupt("a call insert returned no id".into()));
        }
        let first = counts[key].0 - job.change.calls.len() as i64;
        for (i, (call, id)) in job.change.calls.iter().zip(&session_ids).enumerate() {
            points.push((key.clone(), commit::call_point(*id, call, first + i as i64)));
        }
        if let Some(&last) = session_ids.last() {
            last_calls.insert(key.clone(), last);
        }
    }
    Ok(last_calls)
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
        arrays(&rows),
        commit::merge_into_bucket!()
    );
    bind_columns(query(&sql), rows)?.execute(&mut *conn).await?;
    Ok(())
}

/// Inserts the rows `rows_of` gives for each change of `live` into `table`, in one
/// statement (none without rows).
async fn insert(
    conn: &mut PgConnection,
    table: &Table,
    live: &[(&Job, String)],
    rows_of: impl Fn(&Job, &str) -> Vec<Vec<Arg>>,
) -> Result<(), StoreError> {
    let rows: Vec<Vec<Arg>> = live
        .iter()
        .flat_map(|(job, key)| rows_of(job, key))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let sql = insert_rows(table, &rows, "");
    bind_columns(query(&sql), rows)?.execute(&mut *conn).await?;
    Ok(())
}

/// `INSERT INTO table (columns) SELECT * FROM unnest(…)` of `rows`, returning `returning`
/// if not empty.
fn insert_rows(table: &Table, rows: &[Vec<Arg>], returning: &str) -> String {
    let returning = if returning.is_empty() {
        String::new()
    } else {
        format!(" RETURNING {returning}")
    };
    format!(
        "INSERT INTO {} ({}) SELECT * FROM {}{returning}",
        table.name,
        table.columns,
        arrays(rows)
    )
}

/// `unnest($1::type[], …) AS v(columns)` of `rows`, one array per column.
fn unnest(rows: &[Vec<Arg>], columns: &[&str]) -> String {
    unnest_from(rows, columns, 1)
}

/// [`unnest`] with the arrays' placeholders numbered from `first`.
fn unnest_from(rows: &[Vec<Arg>], columns: &[&str], first: usize) -> String {
    format!("{} AS v({})", arrays_from(rows, first), columns.join(", "))
}

/// `unnest($1::type[], $2::type[], …)` of `rows`: a column's type is its arguments'.
fn arrays(rows: &[Vec<Arg>]) -> String {
    arrays_from(rows, 1)
}

fn arrays_from(rows: &[Vec<Arg>], first: usize) -> String {
    let types: Vec<String> = rows[0]
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let kind = match arg {
                Arg::Text(_) => "text",
                Arg::Int(_) => "bigint",
                Arg::Real(_) => "double precision",
                Arg::Bool(_) => "boolean",
            };
            format!("${}::{kind}[]", first + i)
        })
        .collect();
    format!("unnest({})", types.join(", "))
}

fn query(sql: &str) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

/// `query` with `rows` (of equal shape, as one argument builder makes them) bound column
/// by column, each as an array of its arguments' type.
fn bind_columns<'q>(
    mut query: Query<'q, Postgres, PgArguments>,
    rows: Vec<Vec<Arg>>,
) -> Result<Query<'q, Postgres, PgArguments>, StoreError> {
    let width = rows.first().map_or(0, Vec::len);
    let mut columns: Vec<Vec<Arg>> = (0..width).map(|_| Vec::with_capacity(rows.len())).collect();
    for row in rows {
        if row.len() != width {
            return Err(uneven());
        }
        for (column, arg) in columns.iter_mut().zip(row) {
            column.push(arg);
        }
    }
    for column in columns {
        query = match column[0] {
            Arg::Text(_) => query.bind(typed(column, Arg::text)?),
            Arg::Int(_) => query.bind(typed(column, Arg::int)?),
            Arg::Real(_) => query.bind(typed(column, Arg::real)?),
            Arg::Bool(_) => query.bind(typed(column, Arg::boolean)?),
        };
    }
    Ok(query)
}

/// A column's arguments as values of the first one's type.
fn typed<T>(column: Vec<Arg>, value: fn(Arg) -> Result<T, Arg>) -> Result<Vec<T>, StoreError> {
    column
        .into_iter()
        .map(|arg| value(arg).map_err(|_| uneven()))
        .collect()
}

fn uneven() -> StoreError {
    StoreError::Corrupt("a batch's rows differ in shape".into())
}

#[cfg(test)]
#[path = "postgres_batch_tests.rs"]
mod tests;
