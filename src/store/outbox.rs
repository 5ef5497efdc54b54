//! What leaves the server after a step committed (docs/events.md): the events of a tenant
//! in commit order (the stream `GET /v1/events`), the tenant's webhooks and their
//! deliveries, and the idle scan that raises `session-idle`. One trait, [`Outbox`], a
//! part of every [`Store`](super::Store); the SQL is written once for both backends in
//! `outbox_on!`, like `queries.rs`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::rows::{Columns, event_from_row, from_json, parse_uuid};
use super::{StoreError, from_micros};
use crate::domain::events::{NewEvent, StoredEvent};

/// An event as the stream and the webhooks send it: its global id (the order of commit,
/// on SQLite; of the id's draw, on PostgreSQL) and its session.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    pub id: i64,
    pub session: Uuid,
    pub event: StoredEvent,
}

/// A webhook as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookRow {
    pub id: Uuid,
    pub tenant: String,
    pub url: String,
    /// The event kinds it takes; empty for every kind.
    pub kinds: Vec<String>,
    pub secret: String,
    pub created_at: DateTime<Utc>,
    pub health: WebhookHealth,
}

/// How a webhook's deliveries have been going: what its circuit breaker reads
/// (docs/events.md, "Delivery"). A new webhook's is the default: no failure, active.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookHealth {
    /// Attempts that failed in a row since the last delivered one.
    pub consecutive_failures: i64,
    /// When the first of them was made.
    pub failing_since: Option<DateTime<Utc>>,
    /// When the breaker paused it (None: active).
    pub paused_at: Option<DateTime<Utc>>,
    /// The last failed attempt's error when it was paused.
    pub paused_reason: Option<String>,
}

/// When a webhook's breaker opens: after `failures` failed attempts in a row, the first
/// of them at least `after` ago.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Breaker {
    pub failures: i64,
    /// Micros.
    pub after: i64,
}

/// A delivery of an event to a webhook, as its log lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryRow {
    pub event_id: i64,
    pub session: Uuid,
    pub seq: i64,
    pub kind: String,
    /// `pending`, `delivered` or `failed` (retries gave up).
    pub state: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    /// When it is due again (pending ones).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A delivery a replica claimed: until `lease_until` no other replica takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimedDelivery {
    pub webhook_id: Uuid,
    pub url: String,
    pub secret: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// When the delivery was first due (the event's commit): retries stop a day later.
    pub created_at: DateTime<Utc>,
    pub event: EventRecord,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AttemptOutcome {
    /// A 2xx answer.
    Delivered { status: i64 },
    /// Try again at `next_attempt` (micros since the epoch).
    Retry {
        status: Option<i64>,
        error: String,
        next_attempt: i64,
    },
    /// Retries gave up (or the webhook's host is no longer allowed).
    Failed { status: Option<i64>, error: String },
}

/// A session the idle scan found silent: no observation since `last_observed_micros`, for
/// longer than its `idle_seconds`, and not yet told.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleSession {
    pub id: Uuid,
    pub tenant: String,
    pub last_observed_micros: i64,
    pub idle_seconds: f64,
    /// Session time of its newest step.
    pub last_t: Option<f64>,
}

/// The outbox's reads and writes (see the module's doc).
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Up to `limit` events of the tenant's sessions (every tenant's if None; of
    /// `session` only, if given) with `after` < id <= `until`, by id.
    async fn tenant_events(
        &self,
        tenant: Option<&str>,
        session: Option<Uuid>,
        after: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<EventRecord>, StoreError>;
    /// The ids of up to `limit` events of any session with id > `after`, by id, each with
    /// its commit time (micros): where the ids have gaps that may yet fill.
    async fn event_ids_after(&self, after: i64, limit: i64) -> Result<Vec<(i64, i64)>, StoreError>;
    /// Up to `limit` of the tenant's sessions (every tenant's if None) whose last step was
    /// committed after `since` (micros), each with its version and that time, oldest
    /// first.
    async fn changed_sessions(
        &self,
        tenant: Option<&str>,
        since: i64,
        limit: i64,
    ) -> Result<Vec<(Uuid, i64, i64)>, StoreError>;
    /// The largest event id so far (0 if none).
    async fn newest_event_id(&self) -> Result<i64, StoreError>;
    /// Stores a webhook unless its tenant already has `max` (false then).
    async fn insert_webhook(&self, webhook: &WebhookRow, max: i64) -> Result<bool, StoreError>;
    async fn get_webhook(&self, id: Uuid) -> Result<Option<WebhookRow>, StoreError>;
    /// The tenant's webhooks, oldest first.
    async fn list_webhooks(&self, tenant: &str) -> Result<Vec<WebhookRow>, StoreError>;
    /// Deletes a webhook and its deliveries; false if there was none.
    async fn delete_webhook(&self, id: Uuid) -> Result<bool, StoreError>;
    /// The ids of every tenant's webhooks (`tvbo check` reads each).
    async fn webhook_ids(&self) -> Result<Vec<Uuid>, StoreError>;
    /// Up to `limit` deliveries of the webhook with event id > `after`, by event id.
    async fn list_deliveries(
        &self,
        webhook: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError>;
    /// Claims up to `limit` deliveries due at `now` (micros) until `lease_until`: pending,
    /// not claimed by a live lease, and first of their webhook and session still pending
    /// (a session's events go out in order), of active webhooks that have no delivery in
    /// flight; at most one per webhook, taking turns between tenants (each tenant's first
    /// webhook before any tenant's second), the longest due first. Replicas never claim
    /// the same row at once.
    async fn claim_deliveries(
        &self,
        now: i64,
        lease_until: i64,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;
    /// When the earliest pending delivery may next be claimed (micros): its next attempt,
    /// or the end of its lease if later; None when no delivery is pending. Deliveries
    /// that wait behind another of their webhook, or of a paused webhook, count too, so
    /// the time may be past while nothing can be claimed.
    async fn next_due(&self) -> Result<Option<i64>, StoreError>;
    /// Records how the attempt on a claimed delivery ended, and ends the claim; counts it
    /// in the webhook's health, and pauses the webhook when `breaker` says so: whether
    /// this attempt paused it.
    async fn finish_delivery(
        &self,
        webhook: Uuid,
        event: i64,
        outcome: &AttemptOutcome,
        breaker: Breaker,
        now: i64,
    ) -> Result<bool, StoreError>;
    /// Resumes a paused webhook (its failures forgotten); false if there was none.
    async fn resume_webhook(&self, id: Uuid) -> Result<bool, StoreError>;
    /// Deletes delivered and failed deliveries made before `before` (micros); how many.
    async fn prune_deliveries(&self, before: i64) -> Result<u64, StoreError>;
    /// Up to `limit` sessions silent at `now` (micros) beyond their threshold and not yet
    /// told so.
    async fn idle_sessions(&self, now: i64, limit: i64) -> Result<Vec<IdleSession>, StoreError>;
    /// Raises `event` (a `session-idle`) for the session if it is still silent since
    /// `last_observed_micros` and not yet told, marking it told; its id, or None if
    /// another replica (or an observation) came first.
    async fn raise_idle(
        &self,
        session: &IdleSession,
        event: &NewEvent,
        now: i64,
    ) -> Result<Option<i64>, StoreError>;
}

// Decoding, once for both backends (as `rows.rs` does for the rest).
pub(crate) fn event_record_from_row(row: &impl Columns) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        id: row.int("id")?,
        session: parse_uuid(row.text("session_id")?)?,
        event: event_from_row(row)?,
    })
}

pub(crate) fn webhook_from_row(row: &impl Columns) -> Result<WebhookRow, StoreError> {
    Ok(WebhookRow {
        id: parse_uuid(row.text("id")?)?,
        tenant: row.text("tenant")?.to_string(),
        url: row.text("url")?.to_string(),
        kinds: from_json(row.text("kinds")?, "webhook kinds")?,
        secret: row.text("secret")?.to_string(),
        created_at: from_micros(row.int("created_micros")?)?,
        health: WebhookHealth {
            consecutive_failures: row.int("consecutive_failures")?,
            failing_since: row
                .opt_int("failing_since_micros")?
                .map(from_micros)
                .transpose()?,
            paused_at: row.opt_int("paused_micros")?.map(from_micros).transpose()?,
            paused_reason: row.opt_text("paused_reason")?.map(str::to_string),
        },
    })
}

pub(crate) fn delivery_from_row(row: &impl Columns) -> Result<DeliveryRow, StoreError> {
    let state = row.text("state")?.to_string();
    Ok(DeliveryRow {
        event_id: row.int("event_id")?,
        session: parse_uuid(row.text("session_id")?)?,
        seq: row.int("seq")?,
        kind: row.text("kind")?.to_string(),
        attempts: row.int("attempts")?,
        last_status: row.opt_int("last_status")?,
        last_error: row.opt_text("last_error")?.map(str::to_string),
        next_attempt_at: (state == "pending")
            .then(|| from_micros(row.int("next_attempt_micros")?))
            .transpose()?,
        delivered_at: row
            .opt_int("delivered_micros")?
            .map(from_micros)
            .transpose()?,
        created_at: from_micros(row.int("created_micros")?)?,
        state,
    })
}

/// A claimed delivery, from its event's columns, its webhook's (`webhook_id`, `url`,
/// `secret`), `due_micros` and `attempts` (the claim's count: read while its lease holds).
pub(crate) fn claimed_from_row(row: &impl Columns) -> Result<ClaimedDelivery, StoreError> {
    Ok(ClaimedDelivery {
        webhook_id: parse_uuid(row.text("webhook_id")?)?,
        url: row.text("url")?.to_string(),
        secret: row.text("secret")?.to_string(),
        attempts: row.int("attempts")?,
        created_at: from_micros(row.int("due_micros")?)?,
        event: event_record_from_row(row)?,
    })
}

pub(crate) fn idle_from_row(row: &impl Columns) -> Result<IdleSession, StoreError> {
    Ok(IdleSession {
        id: parse_uuid(row.text("id")?)?,
        tenant: row.text("tenant")?.to_string(),
        last_observed_micros: row.int("last_observed_micros")?,
        idle_seconds: row.real("idle_seconds")?,
        last_t: row.opt_real("last_activity_t")?,
    })
}

/// The columns of an event record, `e` the events table.
pub(super) const EVENT_COLUMNS: &str =
    "e.id, e.session_id, e.seq, e.step, e.kind, e.t, e.data, e.created_micros";

/// Claims due deliveries (`$1` now, `$2` lease end, `$3` limit), in a transaction that
/// holds the claim turn (`CLAIM_TURN`). The candidates: due, not leased, first pending of
/// their webhook and session, of an active webhook with no live lease; then one per
/// webhook (its longest due), ranked within its tenant, so that the tenants take turns.
/// The outer condition is checked again on a row another claim changed meanwhile
/// (PostgreSQL's read committed).
pub(super) const CLAIM_SQL: &str = "UPDATE webhook_deliveries \
     SET claimed_until_micros = $2, attempts = attempts + 1 \
     WHERE state = 'pending' AND claimed_until_micros <= $1 \
     AND (webhook_id, event_id) IN (SELECT webhook_id, event_id FROM ( \
       SELECT webhook_id, event_id, due, \
         ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY due, event_id) AS tenant_turn \
       FROM (SELECT c.webhook_id, c.event_id, c.next_attempt_micros AS due, w.tenant, \
           ROW_NUMBER() OVER (PARTITION BY c.webhook_id \
             ORDER BY c.next_attempt_micros, c.event_id) AS webhook_turn \
         FROM webhook_deliveries c JOIN webhooks w ON w.id = c.webhook_id \
         WHERE c.state = 'pending' AND w.paused_micros IS NULL \
         AND c.next_attempt_micros <= $1 AND c.claimed_until_micros <= $1 \
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p \
           WHERE p.webhook_id = c.webhook_id AND p.session_id = c.session_id \
           AND p.state = 'pending' AND p.seq < c.seq) \
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries f \
           WHERE f.webhook_id = c.webhook_id AND f.state = 'pending' \
           AND f.claimed_until_micros > $1)) due_now \
       WHERE webhook_turn = 1) turns \
     ORDER BY tenant_turn, due, event_id LIMIT $3) \
     RETURNING webhook_id, event_id";

/// Reads back `count` claimed deliveries with their events and webhooks, by event id;
/// `$1, $2`, `$3, $4` … are the (webhook, event) pairs.
pub(super) fn claimed_sql(count: usize) -> String {
    let pairs: Vec<String> = (0..count)
        .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
        .collect();
    format!(
        "SELECT {EVENT_COLUMNS}, w.id AS webhook_id, w.url, w.secret, d.attempts, \
         d.created_micros AS due_micros FROM webhook_deliveries d \
         JOIN events e ON e.id = d.event_id JOIN webhooks w ON w.id = d.webhook_id \
         WHERE (d.webhook_id, d.event_id) IN (VALUES {}) ORDER BY d.event_id",
        pairs.join(", ")
    )
}

/// Expands the [`Outbox`] implementation of `$store` (a field `pool`, `begin_write` and
/// `const CLAIM_TURN`) on `$connection`.
macro_rules! outbox_on {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::outbox::Outbox for $store {
            async fn tenant_events(
                &self,
                tenant: Option<&str>,
                session: Option<uuid::Uuid>,
                after: i64,
                until: i64,
                limit: i64,
            ) -> Result<Vec<$crate::store::outbox::EventRecord>, $crate::store::StoreError> {
                let sql = format!(
                    "SELECT {} FROM events e JOIN sessions s ON s.id = e.session_id \
                     WHERE ($1 IS NULL OR s.tenant = $1) AND e.id > $2 AND e.id <= $5 \
                     AND ($3 IS NULL OR e.session_id = $3) ORDER BY e.id LIMIT $4",
                    $crate::store::outbox::EVENT_COLUMNS
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(tenant)
                    .bind(after)
                    .bind(session.map(|s| s.to_string()))
                    .bind(limit)
                    .bind(until)
                    .fetch_all(&self.pool)
                    .await?
                    .iter()
                    .map($crate::store::outbox::event_record_from_row)
                    .collect()
            }

            async fn event_ids_after(
                &self,
                after: i64,
                limit: i64,
            ) -> Result<Vec<(i64, i64)>, $crate::store::StoreError> {
                Ok(sqlx::query_as(
                    "SELECT id, created_micros FROM events WHERE id > $1 ORDER BY id LIMIT $2",
                )
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?)
            }

            async fn changed_sessions(
                &self,
                tenant: Option<&str>,
                since: i64,
                limit: i64,
            ) -> Result<Vec<(uuid::Uuid, i64, i64)>, $crate::store::StoreError> {
                let rows: Vec<(String, i64, i64)> = sqlx::query_as(
                    "SELECT id, version, last_activity_micros FROM sessions \
                     WHERE ($1 IS NULL OR tenant = $1) AND last_activity_micros > $2 \
                     ORDER BY last_activity_micros LIMIT $3",
                )
                .bind(tenant)
                .bind(since)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter()
                    .map(|(id, version, at)| Ok(($crate::store::rows::parse_uuid(&id)?, version, at)))
                    .collect()
            }

            async fn next_due(&self) -> Result<Option<i64>, $crate::store::StoreError> {
                Ok(sqlx::query_scalar(
                    "SELECT MIN(CASE WHEN next_attempt_micros > claimed_until_micros \
                     THEN next_attempt_micros ELSE claimed_until_micros END) \
                     FROM webhook_deliveries WHERE state = 'pending'",
                )
                .fetch_one(&self.pool)
                .await?)
            }

            async fn newest_event_id(&self) -> Result<i64, $crate::store::StoreError> {
                Ok(sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM events")
                    .fetch_one(&self.pool)
                    .await?)
            }

            async fn insert_webhook(
                &self,
                webhook: &$crate::store::outbox::WebhookRow,
                max: i64,
            ) -> Result<bool, $crate::store::StoreError> {
                let (_turn, mut tx) = self.begin_write().await?;
                if let Some(lock) = Self::TENANT_LOCK {
                    sqlx::query(lock).bind(&webhook.tenant).execute(&mut *tx).await?;
                }
                let count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM webhooks WHERE tenant = $1")
                        .bind(&webhook.tenant)
                        .fetch_one(&mut *tx)
                        .await?;
                if count >= max {
                    return Ok(false);
                }
                sqlx::query(
                    "INSERT INTO webhooks (id, tenant, url, kinds, secret, created_micros) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(webhook.id.to_string())
                .bind(&webhook.tenant)
                .bind(&webhook.url)
                .bind($crate::store::rows::to_json(&webhook.kinds))
                .bind(&webhook.secret)
                .bind($crate::store::to_micros(webhook.created_at))
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn get_webhook(
                &self,
                id: uuid::Uuid,
            ) -> Result<Option<$crate::store::outbox::WebhookRow>, $crate::store::StoreError> {
                sqlx::query("SELECT * FROM webhooks WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?
                    .as_ref()
                    .map($crate::store::outbox::webhook_from_row)
                    .transpose()
            }

            async fn list_webhooks(
                &self,
                tenant: &str,
            ) -> Result<Vec<$crate::store::outbox::WebhookRow>, $crate::store::StoreError> {
                sqlx::query(
                    "SELECT * FROM webhooks WHERE tenant = $1 ORDER BY created_micros, id",
                )
                .bind(tenant)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map($crate::store::outbox::webhook_from_row)
                .collect()
            }

            async fn webhook_ids(&self) -> Result<Vec<uuid::Uuid>, $crate::store::StoreError> {
                let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM webhooks ORDER BY id")
                    .fetch_all(&self.pool)
                    .await?;
                ids.iter()
                    .map(|id| $crate::store::rows::parse_uuid(id))
                    .collect()
            }

            async fn delete_webhook(&self, id: uuid::Uuid) -> Result<bool, $crate::store::StoreError> {
                let (_turn, mut tx) = self.begin_write().await?;
                let key = id.to_string();
                sqlx::query("DELETE FROM webhook_deliveries WHERE webhook_id = $1")
                    .bind(&key)
                    .execute(&mut *tx)
                    .await?;
                let deleted = sqlx::query("DELETE FROM webhooks WHERE id = $1")
                    .bind(&key)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                tx.commit().await?;
                Ok(deleted > 0)
            }

            async fn list_deliveries(
                &self,
                webhook: uuid::Uuid,
                after: i64,
                limit: i64,
            ) -> Result<Vec<$crate::store::outbox::DeliveryRow>, $crate::store::StoreError> {
                sqlx::query(
                    "SELECT d.*, e.kind FROM webhook_deliveries d \
                     JOIN events e ON e.id = d.event_id \
                     WHERE d.webhook_id = $1 AND d.event_id > $2 ORDER BY d.event_id LIMIT $3",
                )
                .bind(webhook.to_string())
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map($crate::store::outbox::delivery_from_row)
                .collect()
            }

            async fn claim_deliveries(
                &self,
                now: i64,
                lease_until: i64,
                limit: i64,
            ) -> Result<Vec<$crate::store::outbox::ClaimedDelivery>, $crate::store::StoreError>
            {
                use sqlx::Row;
                let (turn, mut tx) = self.begin_write().await?;
                if let Some(claim_turn) = Self::CLAIM_TURN {
                    sqlx::query(claim_turn).execute(&mut *tx).await?;
                }
                let claimed = sqlx::query($crate::store::outbox::CLAIM_SQL)
                    .bind(now)
                    .bind(lease_until)
                    .bind(limit)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                drop(turn);
                if claimed.is_empty() {
                    return Ok(Vec::new());
                }
                // One read of what was claimed, with its event and webhook; a delivery
                // gone meanwhile (its webhook or session deleted) is not read: nothing to
                // send. The lease is this replica's, so its attempts are the claim's.
                let sql = $crate::store::outbox::claimed_sql(claimed.len());
                let mut read = sqlx::query(sqlx::AssertSqlSafe(sql));
                for row in &claimed {
                    read = read
                        .bind(row.try_get::<String, _>("webhook_id")?)
                        .bind(row.try_get::<i64, _>("event_id")?);
                }
                let mut deliveries = Vec::with_capacity(claimed.len());
                for row in read.fetch_all(&self.pool).await? {
                    match $crate::store::outbox::claimed_from_row(&row) {
                        Ok(delivery) => deliveries.push(delivery),
                        // A damaged webhook or delivery row fails its delivery, saying
                        // so, instead of failing every claim after it.
                        Err(e) => {
                            let (webhook, event) = (
                                row.try_get::<String, _>("webhook_id")?,
                                row.try_get::<i64, _>("id")?,
                            );
                            tracing::warn!(%webhook, event, error = %e, "a claimed delivery does not read back");
                            let (_turn, mut tx) = self.begin_write().await?;
                            sqlx::query(
                                "UPDATE webhook_deliveries SET state = 'failed', \
                                 last_error = $3, claimed_until_micros = 0 \
                                 WHERE webhook_id = $1 AND event_id = $2",
                            )
                            .bind(webhook)
                            .bind(event)
                            .bind(format!("not sent: its stored row does not read back: {e}"))
                            .execute(&mut *tx)
                            .await?;
                            tx.commit().await?;
                        }
                    }
                }
                Ok(deliveries)
            }

            async fn finish_delivery(
                &self,
                webhook: uuid::Uuid,
                event: i64,
                outcome: &$crate::store::outbox::AttemptOutcome,
                breaker: $crate::store::outbox::Breaker,
                now: i64,
            ) -> Result<bool, $crate::store::StoreError> {
                use $crate::store::outbox::AttemptOutcome;
                let (state, status, error, next, delivered) = match outcome {
                    AttemptOutcome::Delivered { status } => {
                        ("delivered", Some(*status), None, now, Some(now))
                    }
                    AttemptOutcome::Retry {
                        status,
                        error,
                        next_attempt,
                    } => ("pending", *status, Some(error.as_str()), *next_attempt, None),
                    AttemptOutcome::Failed { status, error } => {
                        ("failed", *status, Some(error.as_str()), now, None)
                    }
                };
                let key = webhook.to_string();
                // In the writer turn, as every write of the outbox: on SQLite a write
                // outside it could land between another transaction's read and its write,
                // which SQLite then refuses (its snapshot is stale), not waits for.
                let (_turn, mut tx) = self.begin_write().await?;
                sqlx::query(
                    "UPDATE webhook_deliveries SET state = $3, last_status = $4, \
                     last_error = $5, next_attempt_micros = $6, delivered_micros = $7, \
                     claimed_until_micros = 0 WHERE webhook_id = $1 AND event_id = $2",
                )
                .bind(&key)
                .bind(event)
                .bind(state)
                .bind(status)
                .bind(error)
                .bind(next)
                .bind(delivered)
                .execute(&mut *tx)
                .await?;
                let paused = match error {
                    None => {
                        sqlx::query(
                            "UPDATE webhooks SET consecutive_failures = 0, \
                             failing_since_micros = NULL \
                             WHERE id = $1 AND consecutive_failures <> 0",
                        )
                        .bind(&key)
                        .execute(&mut *tx)
                        .await?;
                        false
                    }
                    // Every SET reads the row as it was: the failure counted here is the
                    // (consecutive_failures + 1)-th.
                    Some(error) => sqlx::query_scalar::<_, Option<i64>>(
                        "UPDATE webhooks SET consecutive_failures = consecutive_failures + 1, \
                         failing_since_micros = COALESCE(failing_since_micros, $2), \
                         paused_micros = CASE WHEN paused_micros IS NULL \
                           AND consecutive_failures + 1 >= $3 \
                           AND COALESCE(failing_since_micros, $2) <= $2 - $4 \
                           THEN $2 ELSE paused_micros END, \
                         paused_reason = CASE WHEN paused_micros IS NULL \
                           AND consecutive_failures + 1 >= $3 \
                           AND COALESCE(failing_since_micros, $2) <= $2 - $4 \
                           THEN $5 ELSE paused_reason END \
                         WHERE id = $1 RETURNING paused_micros",
                    )
                    .bind(&key)
                    .bind(now)
                    .bind(breaker.failures)
                    .bind(breaker.after)
                    .bind(error)
                    .fetch_optional(&mut *tx)
                    .await?
                    .flatten()
                        == Some(now),
                };
                tx.commit().await?;
                Ok(paused)
            }

            async fn resume_webhook(&self, id: uuid::Uuid) -> Result<bool, $crate::store::StoreError> {
                let (_turn, mut tx) = self.begin_write().await?;
                let resumed = sqlx::query(
                    "UPDATE webhooks SET paused_micros = NULL, paused_reason = NULL, \
                     consecutive_failures = 0, failing_since_micros = NULL \
                     WHERE id = $1 AND paused_micros IS NOT NULL",
                )
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                Ok(resumed > 0)
            }

            async fn prune_deliveries(&self, before: i64) -> Result<u64, $crate::store::StoreError> {
                let (_turn, mut tx) = self.begin_write().await?;
                let pruned = sqlx::query(
                    "DELETE FROM webhook_deliveries WHERE state <> 'pending' \
                     AND created_micros < $1",
                )
                .bind(before)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                Ok(pruned)
            }

            async fn idle_sessions(
                &self,
                now: i64,
                limit: i64,
            ) -> Result<Vec<$crate::store::outbox::IdleSession>, $crate::store::StoreError> {
                sqlx::query(
                    "SELECT id, tenant, last_observed_micros, idle_seconds, last_activity_t \
                     FROM sessions WHERE idle_seconds IS NOT NULL \
                     AND last_observed_micros IS NOT NULL \
                     AND $1 - last_observed_micros > idle_seconds * 1000000.0 \
                     AND (idle_told_micros IS NULL OR idle_told_micros <> last_observed_micros) \
                     ORDER BY last_observed_micros LIMIT $2",
                )
                .bind(now)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map($crate::store::outbox::idle_from_row)
                .collect()
            }

            async fn raise_idle(
                &self,
                session: &$crate::store::outbox::IdleSession,
                event: &$crate::domain::events::NewEvent,
                now: i64,
            ) -> Result<Option<i64>, $crate::store::StoreError> {
                let key = session.id.to_string();
                let (_turn, mut tx) = self.begin_write().await?;
                // Takes the session's lock (as a step's version bump does) and the mark.
                let marked = sqlx::query(
                    "UPDATE sessions SET idle_told_micros = $2 WHERE id = $1 \
                     AND last_observed_micros = $2 \
                     AND (idle_told_micros IS NULL OR idle_told_micros <> $2)",
                )
                .bind(&key)
                .bind(session.last_observed_micros)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if marked == 0 {
                    return Ok(None);
                }
                // The step an idle event belongs to: the session's newest call.
                let step: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT MAX({}) FROM calls WHERE session_id = $1",
                    Self::ROW_ID
                )))
                .bind(&key)
                .fetch_one(&mut *tx)
                .await?;
                let id = $crate::store::commit::insert_event(
                    &mut *tx,
                    &key,
                    step.unwrap_or(0),
                    event,
                    now,
                )
                .await?;
                tx.commit().await?;
                Ok(Some(id))
            }
        }
    };
}

pub(crate) use outbox_on;
