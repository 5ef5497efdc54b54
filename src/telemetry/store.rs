//! Store latency: a [`Store`] that times every operation of the store it wraps.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use metrics::histogram;
use uuid::Uuid;

use super::STORE_SECONDS;
use crate::domain::events::NewEvent;
use crate::store::outbox::{
    AttemptOutcome, Breaker, ClaimedDelivery, DeliveryRow, IdleSession, WebhookRow,
};
use crate::store::{
    ApiKeyRow, CallStats, ChangeSet, Creation, EventRecord, History, IdempotencyRecord,
    ListedSession, ObservationPage, ObservationQuery, ObservationRow, Outbox, PoolUsage,
    RegretSlice, ResponseTimeSummary, SessionQuery, SessionRow, Store, StoreError, StoredCall,
    StoredTimeline, SuggestionRow, TimelineBudget,
};

/// Wraps a store and records the seconds of each operation, failed ones included, into
/// [`STORE_SECONDS`] with `operation` = the method's name. `pool_usage` and `close` pass
/// through untimed.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        MeteredStore { inner }
    }
}

/// Awaits `operation`, recording its seconds under `name`.
async fn timed<T>(name: &'static str, operation: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let result = operation.await;
    histogram!(STORE_SECONDS, "operation" => name).record(started.elapsed());
    result
}

#[async_trait]
impl Store for MeteredStore {
    async fn create_session(
        &self,
        session: &SessionRow,
        idempotency: Option<&IdempotencyRecord>,
        max_sessions: Option<i64>,
        resume: bool,
    ) -> Result<Creation, StoreError> {
        timed(
            "create_session",
            self.inner
                .create_session(session, idempotency, max_sessions, resume),
        )
        .await
    }

    async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError> {
        timed("get_session", self.inner.get_session(id)).await
    }

    async fn newest_named_session(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        let found = self.inner.newest_named_session(tenant, name);
        timed("newest_named_session", found).await
    }

    async fn list_sessions(
        &self,
        query: &SessionQuery<'_>,
    ) -> Result<Vec<ListedSession>, StoreError> {
        timed("list_sessions", self.inner.list_sessions(query)).await
    }

    async fn regret_slices(
        &self,
        sessions: &[Uuid],
        slices: i64,
    ) -> Result<Vec<RegretSlice>, StoreError> {
        timed("regret_slices", self.inner.regret_slices(sessions, slices)).await
    }

    async fn newest_regrets(
        &self,
        sessions: &[(Uuid, i64)],
    ) -> Result<Vec<(Uuid, f64, f64)>, StoreError> {
        timed("newest_regrets", self.inner.newest_regrets(sessions)).await
    }

    async fn session_tenant(&self, id: Uuid) -> Result<Option<String>, StoreError> {
        timed("session_tenant", self.inner.session_tenant(id)).await
    }

    async fn insert_api_key(&self, key: &ApiKeyRow) -> Result<(), StoreError> {
        timed("insert_api_key", self.inner.insert_api_key(key)).await
    }

    async fn get_api_key(&self, id: Uuid) -> Result<Option<ApiKeyRow>, StoreError> {
        timed("get_api_key", self.inner.get_api_key(id)).await
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRow>, StoreError> {
        timed("list_api_keys", self.inner.list_api_keys()).await
    }

    async fn revoke_api_key(&self, id: Uuid) -> Result<bool, StoreError> {
        timed("revoke_api_key", self.inner.revoke_api_key(id)).await
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool, StoreError> {
        timed("delete_session", self.inner.delete_session(id)).await
    }

    async fn session_version(&self, id: Uuid) -> Result<Option<i64>, StoreError> {
        timed("session_version", self.inner.session_version(id)).await
    }

    async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError> {
        timed("load_history", self.inner.load_history(id)).await
    }

    async fn commit(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        timed(
            "commit",
            self.inner.commit(id, expected_version, change, idempotency),
        )
        .await
    }

    async fn get_suggestion(
        &self,
        session_id: Uuid,
        suggestion_id: Uuid,
    ) -> Result<Option<SuggestionRow>, StoreError> {
        timed(
            "get_suggestion",
            self.inner.get_suggestion(session_id, suggestion_id),
        )
        .await
    }

    async fn pending_suggestions(
        &self,
        session_id: Uuid,
    ) -> Result<Vec<SuggestionRow>, StoreError> {
        timed(
            "pending_suggestions",
            self.inner.pending_suggestions(session_id),
        )
        .await
    }

    async fn list_observations(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
        include_inactive: bool,
    ) -> Result<Vec<ObservationRow>, StoreError> {
        timed(
            "list_observations",
            self.inner
                .list_observations(session_id, after, limit, include_inactive),
        )
        .await
    }

    async fn observation_page(
        &self,
        session_id: Uuid,
        query: &ObservationQuery,
    ) -> Result<ObservationPage, StoreError> {
        timed(
            "observation_page",
            self.inner.observation_page(session_id, query),
        )
        .await
    }

    async fn response_time_summaries(
        &self,
        session_id: Uuid,
    ) -> Result<Vec<ResponseTimeSummary>, StoreError> {
        timed(
            "response_time_summaries",
            self.inner.response_time_summaries(session_id),
        )
        .await
    }

    async fn list_calls(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredCall>, StoreError> {
        timed(
            "list_calls",
            self.inner.list_calls(session_id, after, limit),
        )
        .await
    }

    async fn list_events(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<EventRecord>, StoreError> {
        timed(
            "list_events",
            self.inner.list_events(session_id, after, limit),
        )
        .await
    }

    async fn timeline(
        &self,
        session_id: Uuid,
        budget: &TimelineBudget,
    ) -> Result<StoredTimeline, StoreError> {
        timed("timeline", self.inner.timeline(session_id, budget)).await
    }

    async fn call_stats(&self, session_id: Uuid) -> Result<Vec<CallStats>, StoreError> {
        timed("call_stats", self.inner.call_stats(session_id)).await
    }

    async fn get_idempotency(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        timed("get_idempotency", self.inner.get_idempotency(scope, key)).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        timed("ping", self.inner.ping()).await
    }

    fn pool_usage(&self) -> PoolUsage {
        self.inner.pool_usage()
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }

    fn change_feed(&self) -> std::sync::Arc<crate::store::changes::ChangeFeed> {
        self.inner.change_feed()
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}

#[async_trait]
impl Outbox for MeteredStore {
    async fn tenant_events(
        &self,
        tenant: Option<&str>,
        session: Option<Uuid>,
        after: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let events = self
            .inner
            .tenant_events(tenant, session, after, until, limit);
        timed("tenant_events", events).await
    }

    async fn event_ids_after(&self, after: i64, limit: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        timed("event_ids_after", self.inner.event_ids_after(after, limit)).await
    }

    async fn changed_sessions(
        &self,
        tenant: Option<&str>,
        since: i64,
        limit: i64,
    ) -> Result<Vec<(Uuid, i64, i64)>, StoreError> {
        let changed = self.inner.changed_sessions(tenant, since, limit);
        timed("changed_sessions", changed).await
    }

    async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        timed("next_due", self.inner.next_due()).await
    }

    async fn newest_event_id(&self) -> Result<i64, StoreError> {
        timed("newest_event_id", self.inner.newest_event_id()).await
    }

    async fn insert_webhook(&self, webhook: &WebhookRow, max: i64) -> Result<bool, StoreError> {
        timed("insert_webhook", self.inner.insert_webhook(webhook, max)).await
    }

    async fn get_webhook(&self, id: Uuid) -> Result<Option<WebhookRow>, StoreError> {
        timed("get_webhook", self.inner.get_webhook(id)).await
    }

    async fn list_webhooks(&self, tenant: &str) -> Result<Vec<WebhookRow>, StoreError> {
        timed("list_webhooks", self.inner.list_webhooks(tenant)).await
    }

    async fn webhook_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        timed("webhook_ids", self.inner.webhook_ids()).await
    }

    async fn delete_webhook(&self, id: Uuid) -> Result<bool, StoreError> {
        timed("delete_webhook", self.inner.delete_webhook(id)).await
    }

    async fn list_deliveries(
        &self,
        webhook: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let deliveries = self.inner.list_deliveries(webhook, after, limit);
        timed("list_deliveries", deliveries).await
    }

    async fn claim_deliveries(
        &self,
        now: i64,
        lease_until: i64,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let claimed = self.inner.claim_deliveries(now, lease_until, limit);
        timed("claim_deliveries", claimed).await
    }

    async fn finish_delivery(
        &self,
        webhook: Uuid,
        event: i64,
        outcome: &AttemptOutcome,
        breaker: Breaker,
        now: i64,
    ) -> Result<bool, StoreError> {
        let finished = self
            .inner
            .finish_delivery(webhook, event, outcome, breaker, now);
        timed("finish_delivery", finished).await
    }

    async fn resume_webhook(&self, id: Uuid) -> Result<bool, StoreError> {
        timed("resume_webhook", self.inner.resume_webhook(id)).await
    }

    async fn prune_deliveries(&self, before: i64) -> Result<u64, StoreError> {
        timed("prune_deliveries", self.inner.prune_deliveries(before)).await
    }

    async fn idle_sessions(&self, now: i64, limit: i64) -> Result<Vec<IdleSession>, StoreError> {
        timed("idle_sessions", self.inner.idle_sessions(now, limit)).await
    }

    async fn raise_idle(
        &self,
        session: &IdleSession,
        event: &NewEvent,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        timed("raise_idle", self.inner.raise_idle(session, event, now)).await
    }
}
