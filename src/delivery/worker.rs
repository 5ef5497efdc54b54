//! The delivery worker every replica runs (docs/events.md, "Delivery"): it claims due
//! deliveries (each by one replica, for a lease), POSTs them, and records how each went;
//! it raises `session-idle` for silent sessions and prunes the delivery log.
//!
//! At least once: a delivery is marked delivered only after a 2xx; a replica that dies
//! holding a claim leaves it due again when the lease ends. In order per session and
//! webhook: a delivery waits while an earlier one of its session is pending (retries
//! included), until that one is delivered or given up.
//!
//! Fair: a webhook has at most one delivery in flight (on all replicas together), the
//! tenants take turns in each claim, and each attempt runs on its own, so that a slow or
//! dead receiver holds one of [`IN_FLIGHT`] slots and delays no one else's deliveries. A
//! webhook whose attempts keep failing is paused ([`BREAKER`]) until a delivered ping
//! resumes it.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinSet;

use super::Webhooks;
use super::send::{ATTEMPT_TIMEOUT, Attempt};
use crate::domain::events::session_idle;
use crate::domain::time::{Backoff, Jitter};
use crate::session::views::Event;
use crate::store::changes::{ChangeFeed, ChangeNotice};
use crate::store::outbox::{AttemptOutcome, Breaker, ClaimedDelivery};
use crate::store::to_micros;

/// How long a claim holds a delivery: an attempt's timeout and a margin.
pub const LEASE: Duration = Duration::from_secs(ATTEMPT_TIMEOUT.as_secs() + 5);
/// Retries stop this long after the event (the delivery is then `failed`).
pub const RETRY_FOR: Duration = Duration::from_secs(24 * 3600);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// Most attempts a replica makes at once, each to a different webhook.
pub const IN_FLIGHT: usize = 64;
/// A webhook is paused after 10 failed attempts in a row, failing for an hour: a
/// receiver down for a deploy or a short outage is retried, one gone for good stops
/// taking a share of the attempts.
pub const BREAKER: Breaker = Breaker {
    failures: 10,
    after: 3600 * 1_000_000,
};
/// Shortest wait before a replica looks for due deliveries again without a notice, and
/// its wait unless every writer of the database is heard (stored events' notices wake
/// it at once; otherwise it waits for the next delivery to fall due: [`until_next_due`]).
const POLL: Duration = Duration::from_secs(1);
/// How often the idle scan runs.
const IDLE_SCAN: Duration = Duration::from_secs(15);
/// Delivered and failed deliveries are kept this long in the log.
const LOG_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Runs the worker until `stop` is notified (the attempts in flight are dropped: their
/// leases end and they are tried again).
pub async fn run(webhooks: Webhooks, stop: Arc<Notify>) {
    let feed = webhooks.store.change_feed();
    let mut notices = feed.subscribe();
    let mut last_idle_scan = tokio::time::Instant::now() - IDLE_SCAN;
    // The first prune an hour after the start: a replica that starts has nothing to do
    // more urgently than serve.
    let mut last_prune = tokio::time::Instant::now();
    let mut attempts = JoinSet::new();
    loop {
        if last_idle_scan.elapsed() >= IDLE_SCAN {
            last_idle_scan = tokio::time::Instant::now();
            if idle_scan(&webhooks).await {
                continue;
            }
        }
        if last_prune.elapsed() >= Duration::from_secs(3600) {
            last_prune = tokio::time::Instant::now();
            let before = to_micros(Utc::now()) - LOG_KEPT.as_micros() as i64;
            if let Err(e) = webhooks.store.prune_deliveries(before).await {
                tracing::warn!(error = %e, "cannot prune the webhook delivery log");
            }
        }
        let free = IN_FLIGHT - attempts.len();
        let claimed = if free == 0 {
            0
        } else {
            match claim_due(&webhooks, free, &mut attempts).await {
                Ok(claimed) => claimed,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim webhook deliveries");
                    0
                }
            }
        };
        if claimed == free && free > 0 {
            continue;
        }
        // Claims again when an attempt ends (a slot and its webhook are free), when events
        // are stored, or when the next delivery falls due.
        let wait = if free == 0 {
            POLL
        } else {
            until_next_due(&webhooks, &feed, last_idle_scan + IDLE_SCAN).await
        };
        tokio::select! {
            Some(_) = attempts.join_next(), if !attempts.is_empty() => {}
            () = events_stored(&mut notices) => {}
            () = tokio::time::sleep(wait) => {}
            () = stop.notified() => return,
        }
    }
}

/// How long the worker may wait for a notice before it claims again: until the earliest
/// pending delivery falls due, at least [`POLL`] and at most until the next idle scan
/// (`scan_at`), while every writer of the database is heard (PostgreSQL's listener);
/// else [`POLL`]: other replicas' events while the listener is away, and on SQLite
/// whatever another process wrote. An idle replica on PostgreSQL thus asks the database
/// twice per idle scan.
async fn until_next_due(
    webhooks: &Webhooks,
    feed: &ChangeFeed,
    scan_at: tokio::time::Instant,
) -> Duration {
    if !feed.hears_every_writer() {
        return POLL;
    }
    let to_scan = scan_at.saturating_duration_since(tokio::time::Instant::now());
    let due = match webhooks.store.next_due().await {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read when the next webhook delivery is due");
            return POLL;
        }
    };
    let now = to_micros(Utc::now());
    due.map_or(to_scan, |due| {
        Duration::from_micros(u64::try_from(due - now).unwrap_or(0)).min(to_scan)
    })
    .max(POLL)
}

/// Waits for a notice of stored events (or of missed notices).
async fn events_stored(notices: &mut broadcast::Receiver<ChangeNotice>) {
    loop {
        match notices.recv().await {
            Ok(ChangeNotice::Session { events: true, .. } | ChangeNotice::Missed)
            | Err(RecvError::Lagged(_)) => return,
            Ok(ChangeNotice::Session { events: false, .. } | ChangeNotice::Key { .. }) => {}
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// Claims up to `free` due deliveries and starts an attempt at each in `attempts`; how
/// many were claimed.
async fn claim_due(
    webhooks: &Webhooks,
    free: usize,
    attempts: &mut JoinSet<()>,
) -> Result<usize, crate::store::StoreError> {
    let now = to_micros(Utc::now());
    let lease_until = now + LEASE.as_micros() as i64;
    let claimed = webhooks
        .store
        .claim_deliveries(now, lease_until, free as i64)
        .await?;
    let count = claimed.len();
    for delivery in claimed {
        let webhooks = webhooks.clone();
        attempts.spawn(async move { attempt(&webhooks, delivery).await });
    }
    Ok(count)
}

/// Sends one claimed delivery and records how it went.
async fn attempt(webhooks: &Webhooks, delivery: ClaimedDelivery) {
    let event = &delivery.event;
    let outcome = match webhooks.allow.check(&delivery.url) {
        // A damaged row is not sent as a marker nor retried: `tvbo check` names it.
        _ if event.event.is_unreadable() => AttemptOutcome::Failed {
            status: None,
            error: "not sent: the event's stored row does not read back (tvbo check names it)"
                .into(),
        },
        Err(e) => AttemptOutcome::Failed {
            status: None,
            error: format!("not sent: {}", e.message),
        },
        Ok(url) => {
            let body = Event::from(event.clone());
            let body = serde_json::to_vec(&body).expect("plain data serialises");
            let headers = super::delivery_headers(delivery.webhook_id, event.id, &event.event.kind);
            let attempt = webhooks
                .sender
                .post(url, &delivery.secret, &headers, body)
                .await;
            outcome_of(attempt, &delivery, Utc::now())
        }
    };
    match &outcome {
        AttemptOutcome::Delivered { .. } => {}
        AttemptOutcome::Retry { error, .. } | AttemptOutcome::Failed { error, .. } => {
            tracing::info!(
                webhook = %delivery.webhook_id,
                event = event.id,
                attempts = delivery.attempts,
                given_up = matches!(outcome, AttemptOutcome::Failed { .. }),
                "webhook delivery not accepted: {error}"
            );
        }
    }
    crate::telemetry::record_delivery(&outcome);
    let now = to_micros(Utc::now());
    match webhooks
        .store
        .finish_delivery(delivery.webhook_id, event.id, &outcome, BREAKER, now)
        .await
    {
        Ok(false) => {}
        Ok(true) => {
            tracing::warn!(
                webhook = %delivery.webhook_id,
                failures = BREAKER.failures,
                "webhook paused: its attempts kept failing for an hour; a delivered ping \
                 resumes it"
            );
            crate::telemetry::record_webhook_paused();
        }
        // The lease ends and the delivery is tried again: at least once holds.
        Err(e) => tracing::warn!(error = %e, "cannot record a webhook delivery's outcome"),
    }
}

/// What an attempt means for the delivery: delivered, retried after [`backoff`], or given
/// up when the next attempt would fall past [`RETRY_FOR`] after the event.
fn outcome_of(
    attempt: Attempt,
    delivery: &ClaimedDelivery,
    now: chrono::DateTime<Utc>,
) -> AttemptOutcome {
    match attempt {
        Attempt::Delivered { status } => AttemptOutcome::Delivered {
            status: i64::from(status),
        },
        Attempt::Refused { status, error } => {
            let status = status.map(i64::from);
            let next = now + backoff(delivery.attempts);
            if next - delivery.created_at
                > chrono::Duration::from_std(RETRY_FOR).unwrap_or_default()
            {
                AttemptOutcome::Failed {
                    status,
                    error: format!("{error} (gave up after {} attempts)", delivery.attempts),
                }
            } else {
                AttemptOutcome::Retry {
                    status,
                    error,
                    next_attempt: to_micros(next),
                }
            }
        }
    }
}

/// The wait after the `attempts`-th failed attempt: 2^(attempts−1) seconds, at most
/// [`MAX_BACKOFF`], less up to a quarter at random (replicas and receivers recovering
/// together do not meet in step).
fn backoff(attempts: i64) -> chrono::Duration {
    const DELIVERY_BACKOFF: Backoff = Backoff {
        first: Duration::from_secs(1),
        max: MAX_BACKOFF,
        jitter: Jitter::Quarter,
    };
    let attempt = attempts.clamp(1, 32) as u32;
    let wait = DELIVERY_BACKOFF.wait(attempt, rand::random::<f64>());
    chrono::Duration::milliseconds(wait.as_millis() as i64)
}

/// Raises `session-idle` for each session silent past its threshold; whether it raised
/// as many as it looked at (more may be waiting).
async fn idle_scan(webhooks: &Webhooks) -> bool {
    const SCAN_BATCH: i64 = 100;
    let now = to_micros(Utc::now());
    let idle = match webhooks.store.idle_sessions(now, SCAN_BATCH).await {
        Ok(idle) => idle,
        Err(e) => {
            tracing::warn!(error = %e, "cannot scan for idle sessions");
            return false;
        }
    };
    for session in &idle {
        let silent = (now - session.last_observed_micros) as f64 / 1e6;
        let event = session_idle(
            session.idle_seconds,
            silent,
            crate::store::from_micros(session.last_observed_micros).ok(),
            session.last_t.unwrap_or(0.0),
        );
        match webhooks.store.raise_idle(session, &event, now).await {
            Ok(Some(_)) => {
                crate::telemetry::record_events(std::slice::from_ref(&event));
                let feed = webhooks.store.change_feed();
                feed.publish_local(&session.tenant, session.id, true);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(session = %session.id, error = %e, "cannot raise session-idle")
            }
        }
    }
    idle.len() as i64 == SCAN_BATCH
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::outbox::EventRecord;

    fn delivery(attempts: i64, age: chrono::Duration) -> ClaimedDelivery {
        ClaimedDelivery {
            webhook_id: uuid::Uuid::nil(),
            url: String::new(),
            secret: String::new(),
            attempts,
            created_at: Utc::now() - age,
            event: EventRecord {
                id: 1,
                session: uuid::Uuid::nil(),
                event: crate::domain::events::StoredEvent {
                    seq: 1,
                    step: 1,
                    kind: "model-reset".into(),
                    t: 0.0,
                    data: serde_json::json!({}),
                    created_at: Utc::now(),
                },
            },
        }
    }

    #[test]
    fn the_backoff_doubles_up_to_an_hour_with_jitter_below() {
        for attempts in 1..40 {
            let wait = backoff(attempts).as_seconds_f64();
            let full = 2f64.powi(attempts as i32 - 1).min(3600.0);
            assert!(
                wait <= full + 1e-3 && wait >= 0.75 * full - 1e-3,
                "{attempts}: {wait}"
            );
        }
    }

    #[test]
    fn refusals_are_retried_for_a_day_then_given_up() {
        let refused = || Attempt::Refused {
            status: Some(500),
            error: "answered 500".into(),
        };
        let now = Utc::now();
        assert!(matches!(
            outcome_of(refused(), &delivery(3, chrono::Duration::hours(1)), now),
            AttemptOutcome::Retry {
                status: Some(500),
                ..
            }
        ));
        assert!(matches!(
            outcome_of(refused(), &delivery(30, chrono::Duration::hours(24)), now),
            AttemptOutcome::Failed { .. }
        ));
        assert!(matches!(
            outcome_of(
                Attempt::Delivered { status: 204 },
                &delivery(30, chrono::Duration::hours(30)),
                now
            ),
            AttemptOutcome::Delivered { status: 204 }
        ));
    }
}
