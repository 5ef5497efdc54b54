//! The SQL both backends run, written once, and the Rust that binds and decodes it (the
//! write of a session's change is in `commit.rs`, written once for the SQLite writer
//! thread's connection as well).
//!
//! One text serves both dialects: `$N` placeholders (sqlx's SQLite driver binds `$N` as
//! the N-th argument, as PostgreSQL does), `TRUE`/`FALSE` and a bare boolean column in
//! conditions (SQLite ≥ 3.23 knows the keywords; it stores the flag as 0/1), the row-value
//! comparison of the listing cursor (SQLite ≥ 3.15), `ON CONFLICT … DO NOTHING` (SQLite
//! ≥ 3.24), window functions (SQLite ≥ 3.25). Where the dialects differ, each backend
//! keeps its own copy, pointing to the other: the insertion order of samples and calls
//! (PostgreSQL's `id`, SQLite's `rowid`), the isolation of the history snapshot,
//! PostgreSQL's retry classification, SQLite's checkpoint at close.
//!
//! [`store_on!`] expands the queries and the `Store` implementation for one backend. A
//! macro, not generic functions: sqlx's executor and encoding bounds would have to be restated on
//! every generic function for every bound type, and the expansion is the same text.

/// The columns of a session row, with the counts the API reports. Each reads an index,
/// not the session's history: observations are numbered 1, 2, … per session and never
/// deleted one by one, so the largest seq is their count; the active ones have a
/// partial index (migration 0002).
pub(super) const SESSION_COLUMNS: &str = "s.id, s.tenant, s.config, s.created_micros, s.status, \
     s.version, s.state, s.suggest_count, s.last_suggest_t, s.last_suggest_n, \
     s.last_optimum_mean, \
     (SELECT COALESCE(MAX(seq), 0) FROM observations o WHERE o.session_id = s.id) \
     AS observation_count, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id AND o.active) AS dataset_size, \
     (SELECT COUNT(*) FROM suggestions g WHERE g.session_id = s.id AND g.status = 'pending') \
     AS pending_count";

/// The columns of an observation a timeline reads, its metadata aside.
pub(super) const TIMELINE_OBSERVATION_COLUMNS: &str = "seq, suggestion_id, params, unit, value, \
     t, measured_micros, regret, regret_estimate, active, removed_micros, removed_t, \
     removed_reason, created_micros";

/// Keys bound in one `IN (…)` list.
pub(super) const KEYS_PER_QUERY: usize = 500;

/// The bytes of metadata of a row and of every newer one (by `order`, descending): a
/// window over the rows a query selects.
pub(super) fn metadata_through(order: &str) -> String {
    format!("SUM(COALESCE(octet_length(metadata), 0)) OVER (ORDER BY {order} DESC)")
}

/// `count` placeholders from `$first` on, comma-separated.
pub(super) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Expands, in the calling module, a module `queries` of async functions over
/// `&mut $connection` (each runs the statements of one store operation on a connection: a
/// pooled one, or a transaction the caller opened and commits), and the [`Store`]
/// implementation of `$store` on them.
///
/// `$store` has a field `pool` and, for what differs between the dialects:
/// `fn classify(StoreError) -> StoreError` (which write errors are a lost race),
/// `async fn begin_snapshot(&self)` (the transaction the history is read in),
/// `const ROW_ID` (the column that orders response-time samples and calls by insertion),
/// `const SHARED` ([`Store::shared`]),
/// `const TENANT_LOCK` (the statement, if any, that serialises a tenant's creates in
/// their transactions so that the cap on its sessions holds),
/// `async fn commit_change(&self, …)` (how a session's change is committed: see
/// [`commit`](super::commit)) and `async fn close_pool(&self)`.
///
/// [`Store`]: crate::store::Store
macro_rules! store_on {
    ($store:ty, $connection:ty, $database:ty) => {
        mod queries {
            use chrono::Utc;
            use futures_util::TryStreamExt;
            use sqlx::Row;
            use uuid::Uuid;

            use $crate::store::queries::SESSION_COLUMNS;
            use $crate::store::rows::{
                MODEL_FAILED_RUNS, RECENT_DELAYS, api_key_from_row, call_from_row, corrupt,
                ended_run_from_row, failed_run_from_row, listed_session_from_row,
                observation_from_row, parse_uuid,
                response_time_from_row, session_from_row, suggestion_from_row, to_json,
            };
            use $crate::store::queries::{
                KEYS_PER_QUERY, TIMELINE_OBSERVATION_COLUMNS, metadata_through, placeholders,
            };
            use $crate::store::timeline::{
                BUCKET_ROWS, Bucket, SeriesCounts, TimelineBudget, bucket_from_row, forget_spans,
                kept_keys, newest_holding, regret_groups, with_evenly_spaced,
            };
            use $crate::store::{
                ApiKeyRow, CallStats, EndedRun, ForgetSpan, History, IdempotencyRecord, ListedSession,
                ObservationRow, RECENT_REGRETS, RECENT_SCAN, SessionCursor, SessionRow, StoreError,
                StoredTimeline, SuggestionRow, from_micros, to_micros,
            };

            type Connection = $connection;

            use $crate::store::listing::contains_pattern;
            use $crate::store::{
                ObservationPage, ObservationQuery, ObservationState, RegretSlice, SessionQuery,
                SortKey,
            };

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

            /// The newest `limit` runs of the session that ended without a value, in order
            /// of recording, each with its metadata while the metadata of the newer ones,
            /// summed newest first, fits `metadata_bytes`.
            async fn newest_ended_runs(
                c: &mut Connection,
                key: &str,
                limit: i64,
                metadata_bytes: i64,
                row_id: &str,
            ) -> Result<Vec<EndedRun>, StoreError> {
                let through = metadata_through(row_id);
                let sql = format!(
                    "SELECT * FROM (SELECT {row_id} AS id, suggestion_id, kind, params, t, \
                     reason, created_micros, CASE WHEN {through} <= $3 THEN metadata END \
                     AS metadata FROM ended_runs WHERE session_id = $1 \
                     ORDER BY {row_id} DESC LIMIT $2) newest ORDER BY id"
                );
                let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(key)
                    .bind(limit)
                    .bind(metadata_bytes)
                    .fetch(&mut *c);
                // Decoded as they come: the raw rows are not all held beside the runs.
                let mut runs = Vec::new();
                while let Some(row) = rows.try_next().await? {
                    runs.push(ended_run_from_row(&row)?);
                }
                Ok(runs)
            }

            /// The tenant's newest session named `name`.
            pub(super) async fn newest_named_session(
                c: &mut Connection,
                tenant: &str,
                name: &str,
            ) -> Result<Option<SessionRow>, StoreError> {
                let sql = format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s \
                     WHERE s.tenant = $1 AND s.name = $2 \
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT 1"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(tenant)
                    .bind(name)
                    .fetch_optional(&mut *c)
                    .await?;
                row.as_ref().map(session_from_row).transpose()
            }

            /// [`Store::list_sessions`](crate::store::Store::list_sessions). The filters
            /// that are given, then the position: the sort key past the cursor's (the
            /// index's range) and the row comparison with the id (its exact start).
            pub(super) async fn list_sessions(
                c: &mut Connection,
                query: &SessionQuery<'_>,
            ) -> Result<Vec<ListedSession>, StoreError> {
                let key = query.sort.key_sql();
                let (direction, after) = query.order.sql();
                let mut sql = format!(
                    "SELECT {SESSION_COLUMNS}, s.last_activity_micros, s.last_activity_t, \
                     {key} AS sort_key FROM sessions s WHERE TRUE"
                );
                let mut n = 0;
                let mut placeholder = || {
                    n += 1;
                    format!("${n}")
                };
                if query.tenant.is_some() {
                    sql += &format!(" AND s.tenant = {}", placeholder());
                }
                if query.name.is_some() {
                    let p = placeholder();
                    sql += &format!(" AND lower(s.name) LIKE lower({p}) ESCAPE '\\'");
                }
                if query.algorithm.is_some() {
                    sql += &format!(" AND s.algorithm = {}", placeholder());
                }
                if query.after.is_some() {
                    let (k, id) = (placeholder(), placeholder());
                    sql += &format!(
                        " AND {key} {after}= {k} AND ({key}, s.id) {after} ({k}, {id})"
                    );
                }
                sql += &format!(
                    " ORDER BY {key} {direction}, s.id {direction} LIMIT {}",
                    placeholder()
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql));
                if let Some(tenant) = query.tenant {
                    statement = statement.bind(tenant);
                }
                if let Some(name) = query.name {
                    statement = statement.bind(contains_pattern(name));
                }
                if let Some(algorithm) = query.algorithm {
                    statement = statement.bind(algorithm);
                }
                if let Some(SessionCursor { key, id }) = &query.after {
                    statement = match key {
                        SortKey::Int(value) => statement.bind(*value),
                        SortKey::Text(value) => statement.bind(value.clone()),
                        SortKey::Real(value) => statement.bind(*value),
                    };
                    statement = statement.bind(id.to_string());
                }
                statement
                    .bind(query.limit)
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(|row| listed_session_from_row(row, query.sort))
                    .collect()
            }

            /// [`Store::regret_slices`](crate::store::Store::regret_slices): each 'o'
            /// bucket goes to the slice `bucket · slices / buckets`, so that consecutive
            /// buckets share a slice and there are at most `slices`; a session of at most
            /// two buckets' observations, each observation to `(seq - 1) · slices / n`.
            pub(super) async fn regret_slices(
                c: &mut Connection,
                sessions: &[Uuid],
                slices: i64,
            ) -> Result<Vec<RegretSlice>, StoreError> {
                if sessions.is_empty() {
                    return Ok(Vec::new());
                }
                let placeholders: Vec<String> =
                    (0..sessions.len()).map(|i| format!("${}", i + 2)).collect();
                let sql = format!(
                    "SELECT session_id, slice, CAST(SUM(total) AS DOUBLE PRECISION) AS total, \
                     CAST(SUM(n_valued) AS BIGINT) AS valued, \
                     CAST(SUM(n_reported) AS BIGINT) AS reported \
                     FROM (SELECT session_id, total, n_valued, n_reported, \
                     bucket * $1 / (MAX(bucket) OVER (PARTITION BY session_id) + 1) AS slice \
                     FROM timeline_buckets WHERE series = 'o' AND session_id IN ({})) b \
                     GROUP BY session_id, slice ORDER BY session_id, slice",
                    placeholders.join(", ")
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(slices);
                for id in sessions {
                    statement = statement.bind(id.to_string());
                }
                let from_buckets = statement.fetch_all(&mut *c).await?;
                // A young session (two buckets or fewer) is sliced by its observations
                // themselves: a bucket of 64 would give it one point, no line.
                let young = BUCKET_ROWS * 2;
                let sql = format!(
                    "SELECT session_id, slice, CAST(COALESCE(SUM(r), 0) AS DOUBLE PRECISION) AS total, \
                     CAST(COUNT(r) AS BIGINT) AS valued, CAST(COUNT(regret) AS BIGINT) AS reported \
                     FROM (SELECT o.session_id, o.regret, COALESCE(o.regret, o.regret_estimate) AS r, \
                     (o.seq - 1) * $1 / MAX(o.seq) OVER (PARTITION BY o.session_id) AS slice \
                     FROM observations o WHERE o.session_id IN ({}) AND o.seq <= $2 \
                     AND NOT EXISTS (SELECT 1 FROM observations x \
                     WHERE x.session_id = o.session_id AND x.seq = $2 + 1)) b \
                     GROUP BY session_id, slice ORDER BY session_id, slice",
                    (0..sessions.len()).map(|i| format!("${}", i + 3)).collect::<Vec<_>>().join(", ")
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(slices).bind(young);
                for id in sessions {
                    statement = statement.bind(id.to_string());
                }
                let from_observations = statement.fetch_all(&mut *c).await?;
                let slice = |r: &<$database as sqlx::Database>::Row| -> Result<RegretSlice, StoreError> {
                    Ok(RegretSlice {
                        session_id: parse_uuid(r.try_get("session_id")?)?,
                        slice: r.try_get("slice")?,
                        total: r.try_get("total")?,
                        valued: r.try_get("valued")?,
                        reported: r.try_get("reported")?,
                    })
                };
                let fine = from_observations.iter().map(slice).collect::<Result<Vec<_>, _>>()?;
                let sliced_finely: std::collections::HashSet<Uuid> =
                    fine.iter().map(|s| s.session_id).collect();
                let mut all = fine;
                for row in &from_buckets {
                    let coarse = slice(row)?;
                    if !sliced_finely.contains(&coarse.session_id) {
                        all.push(coarse);
                    }
                }
                Ok(all)
            }

            /// [`Store::newest_regrets`](crate::store::Store::newest_regrets): one
            /// bounded read of each session's newest observations by its key (session,
            /// seq), joined by UNION ALL into one statement.
            pub(super) async fn newest_regrets(
                c: &mut Connection,
                sessions: &[(Uuid, i64)],
            ) -> Result<Vec<(Uuid, f64, f64)>, StoreError> {
                if sessions.is_empty() {
                    return Ok(Vec::new());
                }
                let reads: Vec<String> = (0..sessions.len())
                    .map(|i| {
                        format!(
                            "SELECT * FROM (SELECT session_id, seq, t, \
                             COALESCE(regret, regret_estimate) AS regret FROM observations \
                             WHERE session_id = ${} AND seq > ${} \
                             AND COALESCE(regret, regret_estimate) IS NOT NULL \
                             ORDER BY seq DESC LIMIT $1) AS s{i}",
                            2 * i + 2,
                            2 * i + 3
                        )
                    })
                    .collect();
                let sql = format!("{} ORDER BY session_id, seq", reads.join(" UNION ALL "));
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(RECENT_REGRETS);
                for (id, count) in sessions {
                    statement = statement.bind(id.to_string()).bind(count - RECENT_SCAN);
                }
                statement
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(|r| {
                        Ok((
                            parse_uuid(r.try_get("session_id")?)?,
                            r.try_get::<f64, _>("t")?,
                            r.try_get::<f64, _>("regret")?,
                        ))
                    })
                    .collect()
            }

            pub(super) async fn insert_session(
                c: &mut Connection,
                session: &SessionRow,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO sessions (id, name, config, created_micros, status, version, \
                     state, suggest_count, last_suggest_t, last_suggest_n, last_optimum_mean, \
                     tenant, algorithm, last_activity_micros, idle_seconds) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $4, $14)",
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
                .bind(&session.tenant)
                .bind(session.config.algorithm.name())
                .bind(session.config.events.idle_seconds)
                .execute(&mut *c)
                .await?;
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

            pub(super) async fn session_version(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<Option<i64>, StoreError> {
                Ok(sqlx::query_scalar("SELECT version FROM sessions WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&mut *c)
                    .await?)
            }

            pub(super) async fn session_tenant(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<Option<String>, StoreError> {
                Ok(sqlx::query_scalar("SELECT tenant FROM sessions WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&mut *c)
                    .await?)
            }

            pub(super) async fn count_sessions(
                c: &mut Connection,
                tenant: &str,
            ) -> Result<i64, StoreError> {
                Ok(sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE tenant = $1")
                    .bind(tenant)
                    .fetch_one(&mut *c)
                    .await?)
            }

            pub(super) async fn insert_api_key(
                c: &mut Connection,
                key: &ApiKeyRow,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO api_keys (id, name, tenant, admin, secret_hash, \
                     created_micros, revoked_micros, rate_limit) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(key.id.to_string())
                .bind(&key.name)
                .bind(&key.tenant)
                .bind(key.admin)
                .bind(&key.secret_hash)
                .bind(to_micros(key.created_at))
                .bind(key.revoked_at.map(to_micros))
                .bind(key.rate_limit.map(|rate| i64::from(rate.get())))
                .execute(&mut *c)
                .await?;
                Ok(())
            }

            const API_KEY_COLUMNS: &str =
                "id, name, tenant, admin, secret_hash, created_micros, revoked_micros, rate_limit";

            pub(super) async fn get_api_key(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<Option<ApiKeyRow>, StoreError> {
                let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE id = $1");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.to_string())
                    .fetch_optional(&mut *c)
                    .await?
                    .as_ref()
                    .map(api_key_from_row)
                    .transpose()
            }

            /// Oldest first.
            pub(super) async fn list_api_keys(
                c: &mut Connection,
            ) -> Result<Vec<ApiKeyRow>, StoreError> {
                let sql =
                    format!("SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_micros, id");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(api_key_from_row)
                    .collect()
            }

            /// Marks the key revoked at now; false if there is no such key or it was
            /// revoked already.
            pub(super) async fn revoke_api_key(
                c: &mut Connection,
                id: Uuid,
            ) -> Result<bool, StoreError> {
                let revoked = sqlx::query(
                    "UPDATE api_keys SET revoked_micros = $2 \
                     WHERE id = $1 AND revoked_micros IS NULL",
                )
                .bind(id.to_string())
                .bind(to_micros(Utc::now()))
                .execute(&mut *c)
                .await?
                .rows_affected();
                Ok(revoked > 0)
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

            /// The session with its active observations, pending suggestions and newest
            /// failed runs (`row_id` orders the runs by recording). Run it in a
            /// transaction that sees one snapshot.
            pub(super) async fn load_history(
                c: &mut Connection,
                id: Uuid,
                row_id: &str,
            ) -> Result<Option<History>, StoreError> {
                let Some(session) = get_session(&mut *c, id).await? else {
                    return Ok(None);
                };
                let key = id.to_string();
                // Without the clients' metadata, which no model reads: a history stays in
                // a replica's memory (session::snapshots).
                let active = sqlx::query(
                    "SELECT session_id, seq, suggestion_id, params, unit, value, t, \
                     measured_micros, regret, active, removed_micros, removed_reason, \
                     created_micros, removed_t, regret_estimate, CAST(NULL AS TEXT) AS metadata \
                     FROM observations WHERE session_id = $1 AND active ORDER BY seq",
                )
                .bind(&key)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(observation_from_row)
                .collect::<Result<Vec<_>, _>>()?;
                let pending = pending_suggestions(&mut *c, id).await?;
                let recent_delays = sqlx::query(
                    "SELECT o.t - g.issued_t AS delay FROM observations o \
                     JOIN suggestions g ON g.id = o.suggestion_id \
                     WHERE o.session_id = $1 AND o.suggestion_id IS NOT NULL \
                     ORDER BY o.seq DESC LIMIT $2",
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
                let ended_runs: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM ended_runs WHERE session_id = $1")
                        .bind(&key)
                        .fetch_one(&mut *c)
                        .await?;
                let sql = format!(
                    "SELECT params, t FROM (SELECT {row_id} AS id, params, t FROM ended_runs \
                     WHERE session_id = $1 AND kind = 'failed' \
                     ORDER BY {row_id} DESC LIMIT $2) newest ORDER BY id"
                );
                let failed = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(MODEL_FAILED_RUNS as i64)
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(failed_run_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Some(History {
                    session,
                    active,
                    pending,
                    recent_delays,
                    next_seq,
                    ended_runs: usize::try_from(ended_runs)
                        .map_err(|e| corrupt("ended run count", e))?,
                    failed,
                }))
            }

            /// The session's pending suggestions, by ordinal.
            pub(super) async fn pending_suggestions(
                c: &mut Connection,
                session_id: Uuid,
            ) -> Result<Vec<SuggestionRow>, StoreError> {
                sqlx::query(
                    "SELECT * FROM suggestions WHERE session_id = $1 AND status = 'pending' \
                     ORDER BY ordinal",
                )
                .bind(session_id.to_string())
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(suggestion_from_row)
                .collect()
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

            /// [`Store::observation_page`](crate::store::Store::observation_page), on a
            /// connection that sees one snapshot. The total counts the active rows (their
            /// partial index) and takes the rest from the largest seq: observations are
            /// numbered 1, 2, … and never deleted one by one.
            pub(super) async fn observation_page(
                c: &mut Connection,
                session_id: Uuid,
                query: &ObservationQuery,
            ) -> Result<ObservationPage, StoreError> {
                let key = session_id.to_string();
                let sql = format!(
                    "SELECT * FROM observations WHERE session_id = $1 AND seq > $2{} \
                     ORDER BY {} LIMIT $3 OFFSET $4",
                    query.state_sql(),
                    query.order_sql()
                );
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(query.after)
                    .bind(query.limit)
                    .bind(query.offset)
                    .fetch_all(&mut *c)
                    .await?
                    .iter()
                    .map(observation_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                let counts = sqlx::query(
                    "SELECT (SELECT COALESCE(MAX(seq), 0) FROM observations \
                     WHERE session_id = $1) AS recorded, \
                     (SELECT COUNT(*) FROM observations \
                     WHERE session_id = $1 AND active AND seq > $2) AS active",
                )
                .bind(&key)
                .bind(query.after)
                .fetch_one(&mut *c)
                .await?;
                let recorded: i64 = counts.try_get("recorded")?;
                let active: i64 = counts.try_get("active")?;
                let all = (recorded - query.after.max(0)).max(0);
                let total = match query.state {
                    ObservationState::All => all,
                    ObservationState::Active => active,
                    ObservationState::Forgotten => all - active,
                };
                Ok(ObservationPage { rows, total })
            }

            /// [`Store::timeline`](crate::store::Store::timeline), on a connection that
            /// sees one snapshot; `row_id` orders samples and calls by insertion.
            pub(super) async fn timeline(
                c: &mut Connection,
                session_id: Uuid,
                budget: &TimelineBudget,
                row_id: &str,
            ) -> Result<StoredTimeline, StoreError> {
                let key = session_id.to_string();
                let summaries = sqlx::query(
                    "SELECT * FROM timeline_buckets WHERE session_id = $1 ORDER BY series, bucket",
                )
                .bind(&key)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(bucket_from_row)
                .collect::<Result<Vec<_>, _>>()?;
                let series = |name: &str| -> Vec<&Bucket> {
                    summaries.iter().filter(|b| b.series == name).collect()
                };
                let (observed, calls, samples) = (series("o"), series("c"), series("s"));
                let count = |buckets: &[&Bucket]| buckets.iter().map(|b| b.count).sum::<i64>();
                let ended_run_count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM ended_runs WHERE session_id = $1")
                        .bind(&key)
                        .fetch_one(&mut *c)
                        .await?;
                let counts = SeriesCounts {
                    observations: count(&observed),
                    steps: count(&calls),
                    samples: count(&samples),
                    ended_runs: ended_run_count,
                };
                let points = budget.points_within(&counts);
                let observations = timeline_observations(
                    &mut *c,
                    &key,
                    with_evenly_spaced(kept_keys(&observed, points, 6), &observed, points),
                    budget.metadata_bytes,
                )
                .await?;
                let select_calls = format!(
                    "SELECT {row_id} AS id, kind, t, dataset_size, compute_seconds, snapshot \
                     FROM calls"
                );
                let calls_kept = fetch_kept(
                    &mut *c,
                    &select_calls,
                    row_id,
                    &key,
                    kept_keys(&calls, points, 4),
                    call_from_row,
                )
                .await?;
                let select_samples = format!("SELECT {row_id} AS id, n, seconds FROM response_times");
                let samples_kept = fetch_kept(
                    &mut *c,
                    &select_samples,
                    row_id,
                    &key,
                    kept_keys(&samples, points, 4),
                    response_time_from_row,
                )
                .await?;
                let forgotten = if counts.observations <= points {
                    forget_events(&mut *c, &key).await?
                } else {
                    forget_spans(&summaries, points)
                };
                let ended_runs =
                    newest_ended_runs(&mut *c, &key, points, budget.metadata_bytes, row_id)
                        .await?;
                let recent_regrets = recent_regrets(&mut *c, &key, &observed).await?;
                // When the newest step was committed (the listing's column of the session,
                // which holds the creation time before any step).
                let last_step_at = if calls.is_empty() {
                    None
                } else {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT last_activity_micros FROM sessions WHERE id = $1",
                    )
                    .bind(&key)
                    .fetch_optional(&mut *c)
                    .await?
                    .map(from_micros)
                    .transpose()?
                };
                Ok(StoredTimeline {
                    regret_groups: regret_groups(&observed, points, 6),
                    recent_regrets,
                    last_step_at,
                    ended_run_count,
                    ended_runs,
                    observation_count: counts.observations,
                    step_count: counts.steps,
                    reported_regrets: observed.iter().map(|b| b.n_reported).sum(),
                    estimated_regrets: observed.iter().map(|b| b.n_valued - b.n_reported).sum(),
                    regret_sum: observed.iter().map(|b| b.total).sum(),
                    observations,
                    calls: calls_kept,
                    response_times: samples_kept,
                    forgotten,
                })
            }

            /// The session's observations of `keys` (every one when None), in order, each
            /// with its metadata while the metadata of the newer ones, summed newest
            /// first, fits `metadata_bytes`. Read newest first, a few hundred keys per
            /// query, each query's rows decoded before the next.
            async fn timeline_observations(
                c: &mut Connection,
                key: &str,
                keys: Option<Vec<i64>>,
                metadata_bytes: i64,
            ) -> Result<Vec<ObservationRow>, StoreError> {
                let chunks: Vec<Option<&[i64]>> = match &keys {
                    None => vec![None],
                    Some(keys) => keys.chunks(KEYS_PER_QUERY).map(Some).collect(),
                };
                let through = metadata_through("seq");
                let mut remaining = metadata_bytes;
                let mut parts = Vec::with_capacity(chunks.len());
                for chunk in chunks.into_iter().rev() {
                    let keys = chunk.unwrap_or_default();
                    let filter = match chunk {
                        None => String::new(),
                        Some(chunk) => format!(" AND seq IN ({})", placeholders(3, chunk.len())),
                    };
                    let sql = format!(
                        "SELECT {TIMELINE_OBSERVATION_COLUMNS}, CASE WHEN {through} <= $2 \
                         THEN metadata END AS metadata, {through} AS metadata_through \
                         FROM observations WHERE session_id = $1{filter} ORDER BY seq"
                    );
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(key)
                        .bind(remaining);
                    for k in keys {
                        query = query.bind(*k);
                    }
                    let mut rows = query.fetch(&mut *c);
                    let (mut spent, mut part) = (0, Vec::new());
                    while let Some(row) = rows.try_next().await? {
                        spent = spent.max(row.try_get::<i64, _>("metadata_through")?);
                        part.push(observation_from_row(&row)?);
                    }
                    // Past the first row whose metadata did not fit, no older one has any.
                    remaining = if spent <= remaining { remaining - spent } else { -1 };
                    parts.push(part);
                }
                Ok(parts.into_iter().rev().flatten().collect())
            }

            /// The rows of `select` (a `SELECT … FROM table`) of the session whose
            /// `column` is one of `keys` (every row when None), in its order, decoded by
            /// `decode` a few hundred keys at a time.
            async fn fetch_kept<T>(
                c: &mut Connection,
                select: &str,
                column: &str,
                session: &str,
                keys: Option<Vec<i64>>,
                decode: fn(&<$database as sqlx::Database>::Row) -> Result<T, StoreError>,
            ) -> Result<Vec<T>, StoreError> {
                let Some(keys) = keys else {
                    let sql = format!("{select} WHERE session_id = $1 ORDER BY {column}");
                    let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(session).fetch(&mut *c);
                    let mut decoded = Vec::new();
                    while let Some(row) = rows.try_next().await? {
                        decoded.push(decode(&row)?);
                    }
                    return Ok(decoded);
                };
                let mut rows = Vec::with_capacity(keys.len());
                for chunk in keys.chunks(KEYS_PER_QUERY) {
                    let sql = format!(
                        "{select} WHERE session_id = $1 AND {column} IN ({}) ORDER BY {column}",
                        placeholders(2, chunk.len())
                    );
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(session);
                    for key in chunk {
                        query = query.bind(*key);
                    }
                    for row in query.fetch_all(&mut *c).await? {
                        rows.push(decode(&row)?);
                    }
                }
                Ok(rows)
            }

            /// The session's forgetting, exact: one event per step and reason.
            async fn forget_events(
                c: &mut Connection,
                key: &str,
            ) -> Result<Vec<ForgetSpan>, StoreError> {
                sqlx::query(
                    "SELECT removed_t AS t, removed_t AS t_end, removed_reason AS reason, \
                     COUNT(*) AS count FROM observations \
                     WHERE session_id = $1 AND removed_t IS NOT NULL \
                     GROUP BY removed_t, removed_reason ORDER BY removed_t, removed_reason",
                )
                .bind(key)
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
                .collect()
            }

            /// The newest regrets, exact at any age, for the status of "now", newest last:
            /// read from the newest buckets of `observed` that hold them (none when no
            /// bucket does), so that a long history with few regrets is not scanned at
            /// every read.
            async fn recent_regrets(
                c: &mut Connection,
                key: &str,
                observed: &[&Bucket],
            ) -> Result<Vec<(f64, f64)>, StoreError> {
                let Some(from_seq) = newest_holding(observed, RECENT_REGRETS) else {
                    return Ok(Vec::new());
                };
                let mut regrets = sqlx::query(
                    "SELECT t, COALESCE(regret, regret_estimate) AS regret FROM observations \
                     WHERE session_id = $1 AND seq >= $3 \
                     AND COALESCE(regret, regret_estimate) IS NOT NULL \
                     ORDER BY seq DESC LIMIT $2",
                )
                .bind(key)
                .bind(RECENT_REGRETS)
                .bind(from_seq)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(|r| Ok((r.try_get::<f64, _>("t")?, r.try_get::<f64, _>("regret")?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
                regrets.reverse();
                Ok(regrets)
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

        impl $crate::store::commit::Statements for $connection {
            async fn execute(
                &mut self,
                sql: &str,
                args: Vec<$crate::store::commit::Arg>,
            ) -> Result<u64, $crate::store::StoreError> {
                let query = bind_args(sqlx::query(sqlx::AssertSqlSafe(sql)), args);
                Ok(query.execute(&mut *self).await?.rows_affected())
            }

            async fn fetch_integers(
                &mut self,
                sql: &str,
                args: Vec<$crate::store::commit::Arg>,
            ) -> Result<Option<Vec<i64>>, $crate::store::StoreError> {
                use sqlx::Row;
                let query = bind_args(sqlx::query(sqlx::AssertSqlSafe(sql)), args);
                let Some(row) = query.fetch_optional(&mut *self).await? else {
                    return Ok(None);
                };
                let integers = (0..row.len())
                    .map(|i| row.try_get::<i64, _>(i))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Some(integers))
            }
        }

        /// `query` with `args` bound in order, as their types.
        fn bind_args(
            mut query: sqlx::query::Query<'_, $database, <$database as sqlx::Database>::Arguments>,
            args: Vec<$crate::store::commit::Arg>,
        ) -> sqlx::query::Query<'_, $database, <$database as sqlx::Database>::Arguments> {
            use $crate::store::commit::Arg;
            for arg in args {
                query = match arg {
                    Arg::Text(value) => query.bind(value),
                    Arg::Int(value) => query.bind(value),
                    Arg::Real(value) => query.bind(value),
                    Arg::Bool(value) => query.bind(value),
                };
            }
            query
        }

        // In a block of its own, for its imports.
        const _: () = {
            use uuid::Uuid;

            use $crate::store::rows::{
                call_from_row, response_time_summary_from_row,
            };
            use $crate::store::{
                ApiKeyRow, CallStats, ChangeSet, History, IdempotencyRecord, ObservationRow,
                ResponseTimeSummary, SessionRow, StoreError, StoredCall,
                StoredTimeline, SuggestionRow, TimelineBudget,
            };

            #[async_trait::async_trait]
            impl $crate::store::Store for $store {
                async fn create_session(
                    &self,
                    session: &SessionRow,
                    idempotency: Option<&IdempotencyRecord>,
                    max_sessions: Option<i64>,
                    resume: bool,
                ) -> Result<$crate::store::Creation, StoreError> {
                    async {
                        let (_turn, mut tx) = self.begin_write().await?;
                        if max_sessions.is_some() || resume {
                            if let Some(lock) = Self::TENANT_LOCK {
                                sqlx::query(lock).bind(&session.tenant).execute(&mut *tx).await?;
                            }
                        }
                        if resume {
                            let name = &session.config.name;
                            if let Some(existing) =
                                queries::newest_named_session(&mut tx, &session.tenant, name).await?
                            {
                                return Ok($crate::store::Creation::Existing(Box::new(existing)));
                            }
                        }
                        if let Some(max) = max_sessions
                            && queries::count_sessions(&mut tx, &session.tenant).await? >= max
                        {
                            return Err(StoreError::TooManySessions(max));
                        }
                        queries::insert_session(&mut tx, session).await?;
                        if let Some(record) = idempotency {
                            $crate::store::commit::insert_idempotency(&mut *tx, record).await?;
                        }
                        tx.commit().await?;
                        Ok($crate::store::Creation::Created)
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError> {
                    queries::get_session(&mut *self.pool.acquire().await?, id).await
                }

                async fn newest_named_session(
                    &self,
                    tenant: &str,
                    name: &str,
                ) -> Result<Option<SessionRow>, StoreError> {
                    let c = &mut *self.pool.acquire().await?;
                    queries::newest_named_session(c, tenant, name).await
                }

                async fn list_sessions(
                    &self,
                    query: &$crate::store::SessionQuery<'_>,
                ) -> Result<Vec<$crate::store::ListedSession>, StoreError> {
                    let c = &mut *self.pool.acquire().await?;
                    queries::list_sessions(c, query).await
                }

                async fn regret_slices(
                    &self,
                    sessions: &[Uuid],
                    slices: i64,
                ) -> Result<Vec<$crate::store::RegretSlice>, StoreError> {
                    let c = &mut *self.pool.acquire().await?;
                    queries::regret_slices(c, sessions, slices).await
                }

                async fn newest_regrets(
                    &self,
                    sessions: &[(Uuid, i64)],
                ) -> Result<Vec<(Uuid, f64, f64)>, StoreError> {
                    queries::newest_regrets(&mut *self.pool.acquire().await?, sessions).await
                }

                async fn session_tenant(&self, id: Uuid) -> Result<Option<String>, StoreError> {
                    queries::session_tenant(&mut *self.pool.acquire().await?, id).await
                }


                async fn insert_api_key(&self, key: &ApiKeyRow) -> Result<(), StoreError> {
                    queries::insert_api_key(&mut *self.pool.acquire().await?, key)
                        .await
                        .map_err(Self::classify)
                }

                async fn get_api_key(&self, id: Uuid) -> Result<Option<ApiKeyRow>, StoreError> {
                    queries::get_api_key(&mut *self.pool.acquire().await?, id).await
                }

                async fn list_api_keys(&self) -> Result<Vec<ApiKeyRow>, StoreError> {
                    queries::list_api_keys(&mut *self.pool.acquire().await?).await
                }

                async fn revoke_api_key(&self, id: Uuid) -> Result<bool, StoreError> {
                    queries::revoke_api_key(&mut *self.pool.acquire().await?, id).await
                }

                async fn delete_session(&self, id: Uuid) -> Result<bool, StoreError> {
                    async {
                        let (_turn, mut tx) = self.begin_write().await?;
                        let deleted = queries::delete_session(&mut tx, id).await?;
                        tx.commit().await?;
                        Ok(deleted)
                    }
                    .await
                    .map_err(Self::classify)
                }

                async fn session_version(&self, id: Uuid) -> Result<Option<i64>, StoreError> {
                    queries::session_version(&mut *self.pool.acquire().await?, id).await
                }

                async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError> {
                    async {
                        let mut tx = self.begin_snapshot().await?;
                        let history = queries::load_history(&mut tx, id, Self::ROW_ID).await?;
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
                    self.commit_change(id, expected_version, change, idempotency)
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

                async fn pending_suggestions(
                    &self,
                    session_id: Uuid,
                ) -> Result<Vec<SuggestionRow>, StoreError> {
                    let mut c = self.pool.acquire().await?;
                    queries::pending_suggestions(&mut c, session_id).await
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

                async fn observation_page(
                    &self,
                    session_id: Uuid,
                    query: &$crate::store::ObservationQuery,
                ) -> Result<$crate::store::ObservationPage, StoreError> {
                    let mut tx = self.begin_snapshot().await?;
                    let page = queries::observation_page(&mut tx, session_id, query).await?;
                    tx.commit().await?;
                    Ok(page)
                }

                async fn response_time_summaries(
                    &self,
                    session_id: Uuid,
                ) -> Result<Vec<ResponseTimeSummary>, StoreError> {
                    sqlx::query(
                        "SELECT n, count, total_seconds FROM response_time_summaries \
                         WHERE session_id = $1 ORDER BY n",
                    )
                    .bind(session_id.to_string())
                    .fetch_all(&self.pool)
                    .await?
                    .iter()
                    .map(response_time_summary_from_row)
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

                async fn list_events(
                    &self,
                    session_id: Uuid,
                    after: i64,
                    limit: i64,
                ) -> Result<Vec<$crate::store::EventRecord>, StoreError> {
                    let sql = format!(
                        "SELECT {} FROM events e WHERE e.session_id = $1 AND e.seq > $2 \
                         ORDER BY e.seq LIMIT $3",
                        $crate::store::outbox::EVENT_COLUMNS
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(session_id.to_string())
                    .bind(after)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
                    .iter()
                    .map($crate::store::outbox::event_record_from_row)
                    .collect()
                }

                async fn timeline(
                    &self,
                    session_id: Uuid,
                    budget: &TimelineBudget,
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

                fn pool_usage(&self) -> $crate::store::PoolUsage {
                    $crate::store::PoolUsage::of(&self.pool)
                }

                fn shared(&self) -> bool {
                    Self::SHARED
                }

                fn change_feed(&self) -> std::sync::Arc<$crate::store::changes::ChangeFeed> {
                    self.changes.clone()
                }

                async fn close(&self) {
                    self.close_pool().await;
                }
            }
        };
    };
}

pub(super) use store_on;
