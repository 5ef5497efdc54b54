//! The SQL both backends run, written once, and the Rust that binds and decodes it.
//!
//! One text serves both dialects: `$N` placeholders (sqlx's SQLite driver binds `$N` as
//! the N-th argument, as PostgreSQL does), `TRUE`/`FALSE` and a bare boolean column in
//! conditions (SQLite ≥ 3.23 knows the keywords; it stores the flag as 0/1), the row-value
//! comparison of the listing cursor (SQLite ≥ 3.15), `ON CONFLICT … DO NOTHING` (SQLite
//! ≥ 3.24). Where the dialects differ, each backend keeps its own copy, pointing to the
//! other: the insertion order of samples and calls (PostgreSQL's `id`, SQLite's `rowid`), the isolation of
//! the history snapshot, PostgreSQL's retry classification, SQLite's checkpoint at close.
//!
//! [`store_on!`] expands the queries and the `Store` implementation for one backend. A
//! macro, not generic functions: sqlx's executor and encoding bounds would have to be restated on
//! every generic function for every bound type, and the expansion is the same text.

/// The columns of a session row, with the counts the API reports.
pub(super) const SESSION_COLUMNS: &str = "s.id, s.config, s.created_micros, s.status, \
     s.version, s.state, s.suggest_count, s.last_suggest_t, s.last_suggest_n, \
     s.last_optimum_mean, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id) AS observation_count, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id AND o.active) AS dataset_size, \
     (SELECT COUNT(*) FROM suggestions g WHERE g.session_id = s.id AND g.status = 'pending') \
     AS pending_count";

/// The `SELECT` of the rows a bucketed series keeps: from the buckets `b` (columns `k`,
/// `first_seq`, `last_seq` and one extreme per name of `extremes`) over the rows
/// `rows` (columns `k`, `key` and `values`), each bucket's first and last row and, for
/// each extreme, the first row holding it (`values[i / 2]` equal to `extremes[i]`).
pub(super) fn kept_of_buckets(rows: &str, key: &str, values: &[&str], extremes: &[&str]) -> String {
    let mut parts = vec![
        "SELECT first_seq AS seq FROM b".to_string(),
        "SELECT last_seq FROM b".to_string(),
    ];
    for (i, extreme) in extremes.iter().enumerate() {
        let value = values[i / 2];
        parts.push(format!(
            "SELECT MIN({rows}.{key}) FROM {rows} JOIN b ON {rows}.k = b.k \
             AND {rows}.{value} = b.{extreme} GROUP BY {rows}.k"
        ));
    }
    parts.join(" UNION ")
}

/// Expands, in the calling module, a module `queries` of async functions over
/// `&mut $connection` (each runs the statements of one store operation on a connection: a
/// pooled one, or a transaction the caller opened and commits), and the [`Store`]
/// implementation of `$store` on them.
///
/// `$store` has a field `pool` and, for what differs between the dialects:
/// `fn classify(StoreError) -> StoreError` (which write errors are a lost race),
/// `async fn begin_snapshot(&self)` (the transaction the history is read in),
/// `const ROW_ID` (the column that orders response-time samples and calls by insertion) and `async fn close_pool(&self)`.
///
/// [`Store`]: crate::store::Store
macro_rules! store_on {
    ($store:ty, $connection:ty) => {
        mod queries {
            use chrono::Utc;
            use sqlx::Row;
            use uuid::Uuid;

            use $crate::store::queries::SESSION_COLUMNS;
            use $crate::store::rows::{
                RECENT_DELAYS, call_from_row, corrupt, observation_from_row, parse_uuid,
                response_time_from_row, session_from_row, suggestion_from_row, to_json,
            };
            use $crate::store::queries::kept_of_buckets;
            use $crate::store::{
                CallStats, ChangeSet, ForgetSpan, History, IDEMPOTENCY_TTL_MICROS,
                IdempotencyRecord, ObservationRow, SessionCursor, SessionRow, StoreError,
                StoredTimeline, SuggestionRow, to_micros,
            };

            type Connection = $connection;

            pub(super) async fn get_session(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<Option<SessionRow>, StoreError> {
                let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1");
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.to_string())
                    .fetch_optional(&mut *c)
                    .await?;
                row.as_ref().map(session_from_row).transpose()
            }

            /// Newest first; strictly before `before` if given.
            pub(super) async fn list_sessions(
                c: &mut Connection,
                limit: i64,
                before: Option<SessionCursor>,
            ) -> Result<Vec<SessionRow>, StoreError> {
                // The row comparison follows the index's order, (created_micros, id); the
                // first page starts past every row.
                let sql = format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s \
                     WHERE (s.created_micros, s.id) < ($1, $2) \
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT $3"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(before.map_or(i64::MAX, |cursor| cursor.created_micros))
                    .bind(before.map_or_else(String::new, |cursor| cursor.id.to_string()))
                    .bind(limit)
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(session_from_row)
                    .collect()
            }

            pub(super) async fn insert_session(
                c: &mut Connection,
                session: &SessionRow,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO sessions (id, name, config, created_micros, status, version, \
                     state, suggest_count, last_suggest_t, last_suggest_n, last_optimum_mean) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(session.id.to_string())
                .bind(&session.config.name)
                .bind(to_json(&session.config))
                .bind(to_micros(session.created_at))
                .bind(&session.status)
                .bind(session.version)
                .bind(to_json(&session.state))
                .bind(session.suggest_count)
                .bind(session.last_suggest.map(|(t, _)| t))
                .bind(session.last_suggest.map(|(_, n)| n))
                .bind(session.last_optimum_mean)
                .execute(&mut *c)
                .await?;
                Ok(())
            }

            /// Purges expired records, then stores `record`; `DuplicateKey` if its
            /// (scope, key) is taken.
            pub(super) async fn insert_idempotency(
                c: &mut Connection,
                record: &IdempotencyRecord,
            ) -> Result<(), StoreError> {
                let now = to_micros(Utc::now());
                sqlx::query("DELETE FROM idempotency WHERE created_micros < $1")
                    .bind(now - IDEMPOTENCY_TTL_MICROS)
                    .execute(&mut *c)
                    .await?;
                let result = sqlx::query(
                    "INSERT INTO idempotency (scope, session_id, key, request_hash, status, \
                     body, created_micros) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (scope, key) DO NOTHING",
                )
                .bind(&record.scope)
                .bind(record.session_id.map(|id| id.to_string()))
                .bind(&record.key)
                .bind(&record.request_hash)
                .bind(i64::from(record.status))
                .bind(&record.body)
                .bind(now)
                .execute(&mut *c)
                .await?;
                if result.rows_affected() == 0 {
                    return Err(StoreError::DuplicateKey);
                }
                Ok(())
            }

            pub(super) async fn get_idempotency(
                c: &mut Connection,
                scope: &str,
                key: &str,
            ) -> Result<Option<IdempotencyRecord>, StoreError> {
                let row = sqlx::query(
                    "SELECT scope, session_id, key, request_hash, status, body \
                     FROM idempotency WHERE scope = $1 AND key = $2",
                )
                .bind(scope)
                .bind(key)
                .fetch_optional(&mut *c)
                .await?;
                row.map(|r| {
                    let session_id: Option<&str> = r.try_get("session_id")?;
                    Ok(IdempotencyRecord {
                        scope: r.try_get("scope")?,
                        session_id: session_id.map(parse_uuid).transpose()?,
                        key: r.try_get("key")?,
                        request_hash: r.try_get("request_hash")?,
                        status: u16::try_from(r.try_get::<i64, _>("status")?)
                            .map_err(|e| corrupt("status", e))?,
                        body: r.try_get("body")?,
                    })
                })
                .transpose()
            }

            /// Deletes the session's idempotency records, then the session (its
            /// suggestions, observations, response times and calls go by ON DELETE
            /// CASCADE); false if there was none. Run it in a transaction.
            pub(super) async fn delete_session(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<bool, StoreError> {
                let id = id.to_string();
                sqlx::query("DELETE FROM idempotency WHERE session_id = $1")
                    .bind(&id)
                    .execute(&mut *c)
                    .await?;
                let deleted = sqlx::query("DELETE FROM sessions WHERE id = $1")
                    .bind(&id)
                    .execute(&mut *c)
                    .await?
                    .rows_affected();
                Ok(deleted > 0)
            }

            /// The session with its active observations and pending suggestions. Run it
            /// in a transaction that sees one snapshot.
            pub(super) async fn load_history(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<Option<History>, StoreError> {
                let Some(session) = get_session(&mut *c, id).await? else {
                    return Ok(None);
                };
                let key = id.to_string();
                let active = sqlx::query(
                    "SELECT * FROM observations WHERE session_id = $1 AND active ORDER BY seq",
                )
                .bind(&key)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(observation_from_row)
                .collect::<Result<Vec<_>, _>>()?;
                let pending = sqlx::query(
                    "SELECT * FROM suggestions WHERE session_id = $1 AND status = 'pending' \
                     ORDER BY ordinal",
                )
                .bind(&key)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(suggestion_from_row)
                .collect::<Result<Vec<_>, _>>()?;
                let recent_delays = sqlx::query(
                    "SELECT o.t - g.issued_t AS delay FROM observations o \
                     JOIN suggestions g ON g.id = o.suggestion_id \
                     WHERE o.session_id = $1 ORDER BY o.seq DESC LIMIT $2",
                )
                .bind(&key)
                .bind(RECENT_DELAYS)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(|r| r.try_get::<f64, _>("delay"))
                .collect::<Result<Vec<_>, _>>()?;
                let next_seq: i64 = sqlx::query_scalar(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM observations WHERE session_id = $1",
                )
                .bind(&key)
                .fetch_one(&mut *c)
                .await?;
                Ok(Some(History {
                    session,
                    active,
                    pending,
                    recent_delays,
                    next_seq,
                }))
            }

            /// Applies `change` if the session's version is still `expected_version`.
            /// Run it in a transaction; the caller commits.
            pub(super) async fn commit(
                c: &mut Connection,
                id: Uuid,
                expected_version: i64,
                change: &ChangeSet,
                idempotency: Option<&IdempotencyRecord>,
            ) -> Result<(), StoreError> {
                let key = id.to_string();
                let now = to_micros(Utc::now());
                // The version bump comes first: it takes the session's row lock
                // (PostgreSQL) or the database's write lock (SQLite) until the transaction
                // ends, and it is the optimistic-concurrency check.
                let updated = sqlx::query(
                    "UPDATE sessions SET version = version + 1, \
                     state = COALESCE($3, state), \
                     suggest_count = suggest_count + $4, \
                     last_suggest_t = COALESCE($5, last_suggest_t), \
                     last_suggest_n = COALESCE($6, last_suggest_n), \
                     last_optimum_mean = COALESCE($7, last_optimum_mean) \
                     WHERE id = $1 AND version = $2",
                )
                .bind(&key)
                .bind(expected_version)
                .bind(change.state.as_ref().map(to_json))
                .bind(change.new_suggestions.len() as i64)
                .bind(change.last_suggest.map(|(t, _)| t))
                .bind(change.last_suggest.map(|(_, n)| n))
                .bind(change.last_optimum_mean)
                .execute(&mut *c)
                .await?
                .rows_affected();
                if updated == 0 {
                    let exists: i64 =
                        sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE id = $1")
                            .bind(&key)
                            .fetch_one(&mut *c)
                            .await?;
                    return Err(if exists > 0 {
                        StoreError::Conflict
                    } else {
                        StoreError::NotFound
                    });
                }
                for s in &change.new_suggestions {
                    sqlx::query(
                        "INSERT INTO suggestions (id, session_id, ordinal, params, unit, arm, \
                         issued_t, t, created_micros, status) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(s.id.to_string())
                    .bind(&key)
                    .bind(s.ordinal)
                    .bind(to_json(&s.params))
                    .bind(to_json(&s.unit))
                    .bind(&s.arm)
                    .bind(s.issued_t)
                    .bind(s.t)
                    .bind(to_micros(s.created_at))
                    .bind(s.status.as_str())
                    .execute(&mut *c)
                    .await?;
                }
                for (suggestion, status) in &change.suggestion_status {
                    sqlx::query(
                        "UPDATE suggestions SET status = $3 WHERE id = $1 AND session_id = $2",
                    )
                    .bind(suggestion.to_string())
                    .bind(&key)
                    .bind(status.as_str())
                    .execute(&mut *c)
                    .await?;
                }
                for o in &change.new_observations {
                    sqlx::query(
                        "INSERT INTO observations (session_id, seq, suggestion_id, params, \
                         unit, value, t, measured_micros, regret, active, removed_micros, \
                         removed_reason, created_micros, removed_t, regret_estimate) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
                         $15)",
                    )
                    .bind(&key)
                    .bind(o.seq)
                    .bind(o.suggestion_id.map(|s| s.to_string()))
                    .bind(to_json(&o.params))
                    .bind(to_json(&o.unit))
                    .bind(o.value)
                    .bind(o.t)
                    .bind(o.measured_at.map(to_micros))
                    .bind(o.regret)
                    .bind(o.active)
                    .bind(o.removed_at.map(to_micros))
                    .bind(&o.removed_reason)
                    .bind(to_micros(o.created_at))
                    .bind(o.removed_t)
                    .bind(o.regret_estimate)
                    .execute(&mut *c)
                    .await?;
                }
                for d in &change.deactivate {
                    sqlx::query(
                        "UPDATE observations SET active = FALSE, removed_micros = $3, \
                         removed_reason = $4, removed_t = $5 \
                         WHERE session_id = $1 AND seq = $2 AND active",
                    )
                    .bind(&key)
                    .bind(d.seq)
                    .bind(now)
                    .bind(&d.reason)
                    .bind(d.t)
                    .execute(&mut *c)
                    .await?;
                }
                if let Some(sample) = change.response_time {
                    sqlx::query(
                        "INSERT INTO response_times (session_id, n, seconds, recorded_micros) \
                         VALUES ($1, $2, $3, $4)",
                    )
                    .bind(&key)
                    .bind(sample.n)
                    .bind(sample.seconds)
                    .bind(now)
                    .execute(&mut *c)
                    .await?;
                }
                for call in &change.calls {
                    sqlx::query(
                        "INSERT INTO calls (session_id, kind, t, dataset_size, compute_seconds, \
                         recorded_micros, snapshot) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(&key)
                    .bind(call.kind)
                    .bind(call.t)
                    .bind(call.dataset_size)
                    .bind(call.compute_seconds)
                    .bind(now)
                    .bind(call.snapshot.as_ref().map(to_json))
                    .execute(&mut *c)
                    .await?;
                }
                if let Some(record) = idempotency {
                    insert_idempotency(&mut *c, record).await?;
                }
                Ok(())
            }

            pub(super) async fn get_suggestion(
                c: &mut Connection,
                session_id: Uuid,
                suggestion_id: Uuid,
            ) -> Result<Option<SuggestionRow>, StoreError> {
                let row =
                    sqlx::query("SELECT * FROM suggestions WHERE id = $1 AND session_id = $2")
                        .bind(suggestion_id.to_string())
                        .bind(session_id.to_string())
                        .fetch_optional(&mut *c)
                        .await?;
                row.as_ref().map(suggestion_from_row).transpose()
            }

            /// Observations with seq > `after`, ascending, at most `limit`.
            pub(super) async fn list_observations(
                c: &mut Connection,
                session_id: Uuid,
                after: i64,
                limit: i64,
                include_inactive: bool,
            ) -> Result<Vec<ObservationRow>, StoreError> {
                sqlx::query(
                    "SELECT * FROM observations WHERE session_id = $1 AND seq > $2 \
                     AND ($3 OR active) ORDER BY seq LIMIT $4",
                )
                .bind(session_id.to_string())
                .bind(after)
                .bind(include_inactive)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(observation_from_row)
                .collect()
            }

            /// [`Store::timeline`](crate::store::Store::timeline), on a connection that
            /// sees one snapshot; `row_id` orders samples and calls by insertion.
            pub(super) async fn timeline(
                c: &mut Connection,
                session_id: Uuid,
                budget: i64,
                row_id: &str,
            ) -> Result<StoredTimeline, StoreError> {
                let key = session_id.to_string();
                let counts = sqlx::query(
                    "SELECT COUNT(*) AS observations, COUNT(regret) AS reported, \
                     COUNT(CASE WHEN regret IS NULL THEN regret_estimate END) AS estimated, \
                     SUM(COALESCE(regret, regret_estimate)) AS regret_sum, \
                     (SELECT COUNT(*) FROM calls WHERE session_id = $1) AS steps, \
                     (SELECT COUNT(*) FROM response_times WHERE session_id = $1) AS samples \
                     FROM observations WHERE session_id = $1",
                )
                .bind(&key)
                .fetch_one(&mut *c)
                .await?;
                let observation_count: i64 = counts.try_get("observations")?;
                let step_count: i64 = counts.try_get("steps")?;
                let samples: i64 = counts.try_get("samples")?;
                // Up to 6 points kept per bucket of observations (first, last, extremes
                // of value and regret), 4 per bucket of calls and of samples.
                let bucket = |count: i64, kept: i64| -> i64 {
                    let buckets = (budget / kept).max(1);
                    if count <= budget { 1 } else { (count + buckets - 1) / buckets }
                };
                let sql = format!(
                    "WITH o AS (SELECT seq, value, COALESCE(regret, regret_estimate) AS r, \
                       (seq - 1) / $2 AS k FROM observations WHERE session_id = $1), \
                     b AS (SELECT k, MIN(seq) AS first_seq, MAX(seq) AS last_seq, \
                       MIN(value) AS lo, MAX(value) AS hi, MIN(r) AS rlo, MAX(r) AS rhi \
                       FROM o GROUP BY k), \
                     kept AS ({}) \
                     SELECT * FROM observations WHERE session_id = $1 \
                     AND seq IN (SELECT seq FROM kept) ORDER BY seq",
                    kept_of_buckets("o", "seq", &["value", "r"], &["lo", "hi", "rlo", "rhi"])
                );
                let observations = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(bucket(observation_count, 6))
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(observation_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                let sql = format!(
                    "WITH o AS (SELECT {row_id} AS seq, dataset_size AS d, \
                       (ROW_NUMBER() OVER (ORDER BY {row_id}) - 1) / $2 AS k \
                       FROM calls WHERE session_id = $1), \
                     b AS (SELECT k, MIN(seq) AS first_seq, MAX(seq) AS last_seq, \
                       MIN(d) AS lo, MAX(d) AS hi FROM o GROUP BY k), \
                     kept AS ({}) \
                     SELECT {row_id} AS id, kind, t, dataset_size, compute_seconds, snapshot \
                     FROM calls WHERE session_id = $1 AND {row_id} IN (SELECT seq FROM kept) \
                     ORDER BY {row_id}",
                    kept_of_buckets("o", "seq", &["d"], &["lo", "hi"])
                );
                let calls = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(bucket(step_count, 4))
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(call_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                let sql = format!(
                    "WITH o AS (SELECT {row_id} AS seq, seconds AS s, \
                       (ROW_NUMBER() OVER (ORDER BY {row_id}) - 1) / $2 AS k \
                       FROM response_times WHERE session_id = $1), \
                     b AS (SELECT k, MIN(seq) AS first_seq, MAX(seq) AS last_seq, \
                       MIN(s) AS lo, MAX(s) AS hi FROM o GROUP BY k), \
                     kept AS ({}) \
                     SELECT n, seconds FROM response_times WHERE session_id = $1 \
                     AND {row_id} IN (SELECT seq FROM kept) ORDER BY {row_id}",
                    kept_of_buckets("o", "seq", &["s"], &["lo", "hi"])
                );
                let response_times = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(bucket(samples, 4))
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(response_time_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                // Forgetting events: grouped by step and reason, then, past the budget,
                // merged into spans of consecutive steps.
                let forgotten = sqlx::query(
                    "WITH e AS (SELECT removed_t AS t, removed_reason AS reason, COUNT(*) AS n \
                       FROM observations WHERE session_id = $1 AND removed_t IS NOT NULL \
                       GROUP BY removed_t, removed_reason), \
                     r AS (SELECT t, reason, n, \
                       (ROW_NUMBER() OVER (ORDER BY t) - 1) / $2 AS k FROM e) \
                     SELECT MIN(t) AS t, MAX(t) AS t_end, reason, CAST(SUM(n) AS BIGINT) AS count \
                     FROM r GROUP BY k, reason ORDER BY MIN(t), reason",
                )
                .bind(&key)
                .bind(bucket(observation_count, 1))
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(|r| {
                    Ok(ForgetSpan {
                        t: r.try_get("t")?,
                        t_end: r.try_get("t_end")?,
                        reason: r.try_get("reason")?,
                        count: r.try_get("count")?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
                Ok(StoredTimeline {
                    observation_count,
                    step_count,
                    reported_regrets: counts.try_get("reported")?,
                    estimated_regrets: counts.try_get("estimated")?,
                    regret_sum: counts.try_get::<Option<f64>, _>("regret_sum")?.unwrap_or(0.0),
                    observations,
                    calls,
                    response_times,
                    forgotten,
                })
            }

            pub(super) async fn call_stats(
                c: &mut Connection,
                session_id: Uuid,
            ) -> Result<Vec<CallStats>, StoreError> {
                sqlx::query(
                    "SELECT kind, COUNT(*) AS count, AVG(compute_seconds) AS mean, \
                     MAX(compute_seconds) AS max FROM calls WHERE session_id = $1 \
                     GROUP BY kind ORDER BY kind",
                )
                .bind(session_id.to_string())
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(|r| {
                    Ok(CallStats {
                        kind: r.try_get("kind")?,
                        count: r.try_get("count")?,
                        mean_seconds: r.try_get("mean")?,
                        max_seconds: r.try_get("max")?,
                    })
                })
                .collect()
            }
        }

        // In a block of its own, for its imports.
        const _: () = {
            use uuid::Uuid;

            use $crate::store::rows::{call_from_row, response_time_from_row};
            use $crate::store::{
                CallStats, ChangeSet, History, IdempotencyRecord, ObservationRow,
                ResponseTimeSample, SessionCursor, SessionRow, StoreError, StoredCall,
                StoredTimeline, SuggestionRow,
            };

            #[async_trait::async_trait]
            impl $crate::store::Store for $store {
                async fn create_session(
                    &self,
                    session: &SessionRow,
                    idempotency: Option<&IdempotencyRecord>,
                ) -> Result<(), StoreError> {
                    async {
                        let mut tx = self.pool.begin().await?;
                        queries::insert_session(&mut tx, session).await?;
                        if let Some(record) = idempotency {
                            queries::insert_idempotency(&mut tx, record).await?;
                        }
                        tx.commit().await?;
                        Ok(())
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError> {
                    queries::get_session(&mut *self.pool.acquire().await?, id).await
                }

                async fn list_sessions(
                    &self,
                    limit: i64,
                    before: Option<SessionCursor>,
                ) -> Result<Vec<SessionRow>, StoreError> {
                    queries::list_sessions(&mut *self.pool.acquire().await?, limit, before).await
                }

                async fn delete_session(&self, id: Uuid) -> Result<bool, StoreError> {
                    async {
                        let mut tx = self.pool.begin().await?;
                        let deleted = queries::delete_session(&mut tx, id).await?;
                        tx.commit().await?;
                        Ok(deleted)
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError> {
                    async {
                        let mut tx = self.begin_snapshot().await?;
                        let history = queries::load_history(&mut tx, id).await?;
                        tx.commit().await?;
                        Ok(history)
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn commit(
                    &self,
                    id: Uuid,
                    expected_version: i64,
                    change: &ChangeSet,
                    idempotency: Option<&IdempotencyRecord>,
                ) -> Result<(), StoreError> {
                    async {
                        let mut tx = self.pool.begin().await?;
                        queries::commit(&mut tx, id, expected_version, change, idempotency).await?;
                        tx.commit().await?;
                        Ok(())
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn get_suggestion(
                    &self,
                    session_id: Uuid,
                    suggestion_id: Uuid,
                ) -> Result<Option<SuggestionRow>, StoreError> {
                    let mut c = self.pool.acquire().await?;
                    queries::get_suggestion(&mut c, session_id, suggestion_id).await
                }

                async fn list_observations(
                    &self,
                    session_id: Uuid,
                    after: i64,
                    limit: i64,
                    include_inactive: bool,
                ) -> Result<Vec<ObservationRow>, StoreError> {
                    let mut c = self.pool.acquire().await?;
                    queries::list_observations(&mut c, session_id, after, limit, include_inactive)
                        .await
                }

                async fn response_times(
                    &self,
                    session_id: Uuid,
                ) -> Result<Vec<ResponseTimeSample>, StoreError> {
                    let sql = format!(
                        "SELECT n, seconds FROM response_times WHERE session_id = $1 \
                         ORDER BY {}",
                        Self::ROW_ID
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(session_id.to_string())
                        .fetch_all(&self.pool)
                        .await?
                        .iter()
                        .map(response_time_from_row)
                        .collect()
                }

                async fn list_calls(
                    &self,
                    session_id: Uuid,
                    after: i64,
                    limit: i64,
                ) -> Result<Vec<StoredCall>, StoreError> {
                    let sql = format!(
                        "SELECT {id} AS id, kind, t, dataset_size, compute_seconds, snapshot \
                         FROM calls WHERE session_id = $1 AND {id} > $2 ORDER BY {id} LIMIT $3",
                        id = Self::ROW_ID
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(session_id.to_string())
                        .bind(after)
                        .bind(limit)
                        .fetch_all(&self.pool)
                        .await?
                        .iter()
                        .map(call_from_row)
                        .collect()
                }

                async fn timeline(
                    &self,
                    session_id: Uuid,
                    budget: i64,
                ) -> Result<StoredTimeline, StoreError> {
                    let mut tx = self.begin_snapshot().await?;
                    let timeline = queries::timeline(&mut tx, session_id, budget, Self::ROW_ID).await?;
                    tx.commit().await?;
                    Ok(timeline)
                }

                async fn call_stats(&self, session_id: Uuid) -> Result<Vec<CallStats>, StoreError> {
                    queries::call_stats(&mut *self.pool.acquire().await?, session_id).await
                }

                async fn get_idempotency(
                    &self,
                    scope: &str,
                    key: &str,
                ) -> Result<Option<IdempotencyRecord>, StoreError> {
                    queries::get_idempotency(&mut *self.pool.acquire().await?, scope, key).await
                }

                async fn ping(&self) -> Result<(), StoreError> {
                    sqlx::query("SELECT 1").execute(&self.pool).await?;
                    Ok(())
                }

                async fn close(&self) {
                    self.close_pool().await;
                }
            }
        };
    };
}

pub(super) use store_on;
