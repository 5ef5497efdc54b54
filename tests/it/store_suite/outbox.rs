//! The outbox's contract (`store/outbox.rs`): the events of a tenant by id, webhooks and
//! the fan-out of each event to them, claims (each delivery to one claimant, a session's
//! in order, leases that end), the delivery log, and the idle scan.

use super::*;
use tvbo::domain::events::{EventKind, NewEvent};
use tvbo::store::outbox::{AttemptOutcome, Breaker, WebhookRow};

store_tests!(
    check_events_fan_out_to_the_tenants_webhooks_in_order,
    check_concurrent_claims_take_each_delivery_once,
    check_the_next_due_delivery_is_known,
    check_claims_take_one_per_webhook_and_tenants_take_turns,
    check_a_webhook_that_keeps_failing_is_paused_until_resumed,
    check_the_idle_scan_raises_once_per_silence,
);

const SECOND: i64 = 1_000_000;
/// The worker's breaker (`delivery::worker::BREAKER`): 10 failures, for an hour.
const BREAKER: Breaker = Breaker {
    failures: 10,
    after: 3600 * SECOND,
};

fn event(kind: EventKind) -> NewEvent {
    NewEvent {
        kind,
        t: 2.0,
        data: json!({"k": kind.as_str()}),
    }
}

fn webhook(tenant: &str, kinds: &[&str]) -> WebhookRow {
    WebhookRow {
        id: Uuid::new_v4(),
        tenant: tenant.into(),
        url: "http://127.0.0.1:9/hook".into(),
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        secret: "s".repeat(16),
        created_at: at(1_700_000_000_000_000),
        health: Default::default(),
    }
}

/// Commits one suggest call with `events` at the session's `version`.
async fn commit_events(store: &dyn Store, id: Uuid, version: i64, events: Vec<NewEvent>) {
    let change = ChangeSet {
        new_observations: vec![observation(version + 1, None, 1.0)],
        calls: vec![call("observe", 0.01)],
        events,
        ..ChangeSet::default()
    };
    store.commit(id, version, &change, None).await.unwrap();
}

fn now() -> i64 {
    tvbo::store::to_micros(Utc::now())
}

async fn check_events_fan_out_to_the_tenants_webhooks_in_order(store: &dyn Store) {
    let every = webhook("default", &[]);
    let moved_only = webhook("default", &["optimum-moved"]);
    let other_tenant = webhook("other", &[]);
    for hook in [&every, &moved_only, &other_tenant] {
        assert!(store.insert_webhook(hook, 20).await.unwrap());
    }
    assert!(
        !store
            .insert_webhook(&webhook("other", &[]), 1)
            .await
            .unwrap()
    );
    assert_eq!(store.list_webhooks("default").await.unwrap().len(), 2);
    assert_eq!(
        store.get_webhook(every.id).await.unwrap(),
        Some(every.clone())
    );

    let session = created(store, "watched", 1).await;
    let before = store.newest_event_id().await.unwrap();
    commit_events(store, session.id, 0, vec![event(EventKind::ModelReset)]).await;
    commit_events(store, session.id, 1, vec![event(EventKind::OptimumMoved)]).await;

    // The tenant's events, by id, after a cursor and up to a bound.
    let events = store
        .tenant_events(Some("default"), None, before, i64::MAX, 10)
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind.as_str()).collect();
    assert_eq!(kinds, ["model-reset", "optimum-moved"]);
    assert!(events[0].id < events[1].id && events[0].session == session.id);
    let (first, second) = (events[0].id, events[1].id);
    let only_first = store
        .tenant_events(None, Some(session.id), before, first, 10)
        .await
        .unwrap();
    assert_eq!(only_first.len(), 1);
    assert!(
        store
            .tenant_events(Some("other"), None, before, i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let ids = store.event_ids_after(before, 10).await.unwrap();
    assert_eq!(ids.iter().map(|i| i.0).collect::<Vec<_>>(), [first, second]);

    // Each webhook of the tenant took the kinds it asked for; the other tenant's none.
    let logged = |hook: Uuid| async move { store.list_deliveries(hook, 0, 10).await.unwrap() };
    assert_eq!(logged(every.id).await.len(), 2);
    assert_eq!(logged(moved_only.id).await.len(), 1);
    assert!(logged(other_tenant.id).await.is_empty());

    // A claim takes the first pending delivery of each webhook and session, once.
    let t0 = now();
    let lease = 15 * SECOND;
    let claimed = store.claim_deliveries(t0, t0 + lease, 16).await.unwrap();
    let mut got: Vec<(Uuid, i64)> = claimed.iter().map(|c| (c.webhook_id, c.event.id)).collect();
    got.sort();
    let mut expected = vec![(every.id, first), (moved_only.id, second)];
    expected.sort();
    assert_eq!(got, expected);
    assert!(
        claimed
            .iter()
            .all(|c| c.attempts == 1 && c.secret == every.secret)
    );
    assert!(
        store
            .claim_deliveries(t0, t0 + lease, 16)
            .await
            .unwrap()
            .is_empty()
    );

    // Refused: retried later; the session's next event waits behind it.
    let retry = AttemptOutcome::Retry {
        status: Some(500),
        error: "answered 500".into(),
        next_attempt: t0 + 10 * SECOND,
    };
    store
        .finish_delivery(every.id, first, &retry, BREAKER, t0)
        .await
        .unwrap();
    let delivered = AttemptOutcome::Delivered { status: 200 };
    store
        .finish_delivery(moved_only.id, second, &delivered, BREAKER, t0)
        .await
        .unwrap();
    assert!(
        store
            .claim_deliveries(t0 + SECOND, t0 + lease, 16)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store
        .claim_deliveries(t0 + 11 * SECOND, t0 + lease, 16)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].event.id, again[0].attempts), (first, 2));
    store
        .finish_delivery(every.id, first, &delivered, BREAKER, t0)
        .await
        .unwrap();
    let next = store
        .claim_deliveries(t0 + 12 * SECOND, t0 + lease, 16)
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].event.id, second);
    // A claimant that vanished: its lease ends and the delivery is due again.
    let late = t0 + lease + SECOND;
    let reclaimed = store
        .claim_deliveries(late, late + lease, 16)
        .await
        .unwrap();
    assert_eq!((reclaimed.len(), reclaimed[0].attempts), (1, 2));
    let failed = AttemptOutcome::Failed {
        status: None,
        error: "cannot connect".into(),
    };
    store
        .finish_delivery(every.id, second, &failed, BREAKER, late)
        .await
        .unwrap();

    let log = logged(every.id).await;
    let states: Vec<(&str, i64)> = log.iter().map(|d| (d.state.as_str(), d.attempts)).collect();
    assert_eq!(states, [("delivered", 2), ("failed", 2)]);
    assert_eq!(log[0].last_status, Some(200));
    assert_eq!(log[1].last_error.as_deref(), Some("cannot connect"));
    assert!(log[0].delivered_at.is_some() && log[0].next_attempt_at.is_none());
    assert_eq!(log[1].kind, "optimum-moved");
    assert_eq!(
        store
            .list_deliveries(every.id, first, 10)
            .await
            .unwrap()
            .len(),
        1
    );

    // Pruning keeps pending ones; deleting a webhook takes its log.
    assert_eq!(store.prune_deliveries(i64::MAX).await.unwrap(), 3);
    assert!(store.delete_webhook(every.id).await.unwrap());
    assert!(!store.delete_webhook(every.id).await.unwrap());
    assert_eq!(store.get_webhook(every.id).await.unwrap(), None);
}

async fn check_concurrent_claims_take_each_delivery_once(store: &dyn Store) {
    // 24 webhooks and a session's event: 24 deliveries, none waiting behind another.
    for _ in 0..24 {
        store
            .insert_webhook(&webhook("default", &[]), 100)
            .await
            .unwrap();
    }
    let session = created(store, "s", 1).await;
    commit_events(store, session.id, 0, vec![event(EventKind::DatasetFull)]).await;
    let t0 = now();
    let claims = (0..6).map(|_| store.claim_deliveries(t0, t0 + 15 * SECOND, 5));
    let mut seen: Vec<(Uuid, i64)> = futures_util::future::join_all(claims)
        .await
        .into_iter()
        .flat_map(|claimed| claimed.unwrap())
        .map(|c| (c.webhook_id, c.event.id))
        .collect();
    let total = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), total, "a delivery was claimed twice");
    assert_eq!(total, 24);
}

async fn check_the_next_due_delivery_is_known(store: &dyn Store) {
    assert_eq!(store.next_due().await.unwrap(), None, "nothing pending");
    let hook = webhook("default", &[]);
    store.insert_webhook(&hook, 10).await.unwrap();
    let session = created(store, "s", 1).await;
    let t0 = now();
    commit_events(store, session.id, 0, vec![event(EventKind::DatasetFull)]).await;
    let due = store.next_due().await.unwrap().expect("a pending delivery");
    assert!((t0..=now()).contains(&due), "due when committed: {due}");
    // Claimed: due again when its lease ends; retried: at its next attempt.
    let claimed = store
        .claim_deliveries(now(), t0 + 15 * SECOND, 5)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(store.next_due().await.unwrap(), Some(t0 + 15 * SECOND));
    let retry = AttemptOutcome::Retry {
        status: Some(500),
        error: "e".into(),
        next_attempt: t0 + 60 * SECOND,
    };
    let event_id = claimed[0].event.id;
    store
        .finish_delivery(hook.id, event_id, &retry, BREAKER, now())
        .await
        .unwrap();
    assert_eq!(store.next_due().await.unwrap(), Some(t0 + 60 * SECOND));
    let delivered = AttemptOutcome::Delivered { status: 200 };
    store
        .finish_delivery(hook.id, event_id, &delivered, BREAKER, now())
        .await
        .unwrap();
    assert_eq!(store.next_due().await.unwrap(), None, "delivered");
}

/// Creates a session of `tenant` named `name` and commits one event of it; its id.
async fn session_with_event(store: &dyn Store, tenant: &str, name: &str, at: i64) -> Uuid {
    let mut row = session(name, at);
    row.tenant = tenant.into();
    store.create_session(&row, None, None, false).await.unwrap();
    commit_events(store, row.id, 0, vec![event(EventKind::DatasetFull)]).await;
    row.id
}

async fn check_claims_take_one_per_webhook_and_tenants_take_turns(store: &dyn Store) {
    // A tenant with 3 webhooks and 10 sessions' events (30 deliveries, all due at once),
    // another with one webhook and one event, due last.
    let busy: Vec<WebhookRow> = (0..3).map(|_| webhook("busy", &[])).collect();
    for hook in &busy {
        store.insert_webhook(hook, 20).await.unwrap();
    }
    for i in 0..10 {
        session_with_event(store, "busy", &format!("busy-{i}"), i).await;
    }
    let quiet = webhook("quiet", &[]);
    store.insert_webhook(&quiet, 20).await.unwrap();
    session_with_event(store, "quiet", "quiet", 20).await;
    let t0 = now() + SECOND;
    let lease = 15 * SECOND;
    // One delivery per webhook, whatever the limit; the quiet tenant's in the first two.
    let claimed = store.claim_deliveries(t0, t0 + lease, 2).await.unwrap();
    let hooks: Vec<Uuid> = claimed.iter().map(|c| c.webhook_id).collect();
    assert!(
        hooks.contains(&quiet.id),
        "the quiet tenant waited: {hooks:?}"
    );
    let rest = store.claim_deliveries(t0, t0 + lease, 100).await.unwrap();
    let mut all: Vec<Uuid> = hooks
        .into_iter()
        .chain(rest.iter().map(|c| c.webhook_id))
        .collect();
    all.sort();
    let mut expected: Vec<Uuid> = busy.iter().map(|h| h.id).chain([quiet.id]).collect();
    expected.sort();
    assert_eq!(all, expected, "one delivery in flight per webhook");
    // A webhook's next delivery is claimed once its attempt ends.
    let first = &rest[0];
    let delivered = AttemptOutcome::Delivered { status: 200 };
    store
        .finish_delivery(first.webhook_id, first.event.id, &delivered, BREAKER, t0)
        .await
        .unwrap();
    let next = store.claim_deliveries(t0, t0 + lease, 100).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].webhook_id, first.webhook_id);
}

async fn check_a_webhook_that_keeps_failing_is_paused_until_resumed(store: &dyn Store) {
    let dead = webhook("default", &[]);
    store.insert_webhook(&dead, 20).await.unwrap();
    let mut t = now() + SECOND;
    let refused = |at: i64| AttemptOutcome::Retry {
        status: None,
        error: "no answer within 10 s".into(),
        next_attempt: at,
    };
    let session = session_with_event(store, "default", "watched", 1).await;
    // Nine failures over two hours, then the tenth: paused only at the tenth.
    for attempt in 1..=10 {
        let claimed = store
            .claim_deliveries(t, t + 15 * SECOND, 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1, "attempt {attempt}");
        let paused = store
            .finish_delivery(dead.id, claimed[0].event.id, &refused(t), BREAKER, t)
            .await
            .unwrap();
        assert_eq!(paused, attempt == 10, "attempt {attempt}");
        let health = store.get_webhook(dead.id).await.unwrap().unwrap().health;
        assert_eq!(health.consecutive_failures, attempt);
        t += 15 * 60 * SECOND;
    }
    let health = store.get_webhook(dead.id).await.unwrap().unwrap().health;
    assert!(health.paused_at.is_some());
    assert_eq!(
        health.paused_reason.as_deref(),
        Some("no answer within 10 s")
    );
    // Paused: nothing claimed, and a new event takes no delivery of it.
    assert!(
        store
            .claim_deliveries(t, t + SECOND, 10)
            .await
            .unwrap()
            .is_empty()
    );
    commit_events(store, session, 1, vec![event(EventKind::OptimumMoved)]).await;
    assert_eq!(
        store.list_deliveries(dead.id, 0, 10).await.unwrap().len(),
        1
    );
    // Resumed: its pending delivery is claimed again, and its failures are forgotten.
    assert!(store.resume_webhook(dead.id).await.unwrap());
    assert!(!store.resume_webhook(dead.id).await.unwrap());
    assert_eq!(
        store.get_webhook(dead.id).await.unwrap().unwrap().health,
        Default::default()
    );
    assert_eq!(
        store
            .claim_deliveries(t, t + SECOND, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn check_the_idle_scan_raises_once_per_silence(store: &dyn Store) {
    let hook = webhook("default", &["session-idle"]);
    store.insert_webhook(&hook, 20).await.unwrap();
    let quiet = created(store, "quiet", 1).await;
    let never_observed = created(store, "never", 2).await;
    commit_events(store, quiet.id, 0, Vec::new()).await;
    let later = now() + 2 * 3600 * SECOND;
    assert!(store.idle_sessions(now(), 10).await.unwrap().is_empty());
    let idle = store.idle_sessions(later, 10).await.unwrap();
    assert_eq!(idle.len(), 1, "{idle:?}");
    assert_eq!((idle[0].id, idle[0].idle_seconds), (quiet.id, 3600.0));
    assert_ne!(idle[0].id, never_observed.id);
    let idle_event = event(EventKind::SessionIdle);
    let raised = store
        .raise_idle(&idle[0], &idle_event, later)
        .await
        .unwrap();
    assert!(raised.is_some());
    // Told once: a second replica's raise, and the next scan, find nothing.
    assert_eq!(
        store
            .raise_idle(&idle[0], &idle_event, later)
            .await
            .unwrap(),
        None
    );
    assert!(store.idle_sessions(later, 10).await.unwrap().is_empty());
    let events = store.list_events(quiet.id, 0, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.kind, "session-idle");
    assert_eq!(
        store.list_deliveries(hook.id, 0, 10).await.unwrap().len(),
        1
    );
    // An observation ends the silence; the next one is told again.
    commit_events(store, quiet.id, 1, Vec::new()).await;
    assert_eq!(
        store.idle_sessions(later + SECOND, 10).await.unwrap().len(),
        1
    );
}
