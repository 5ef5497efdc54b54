//! `tvbo check`: read every row of every session and webhook back, as the API would, and
//! report the sessions and webhooks whose rows do not decode (docs/operations.md,
//! "Checking a database").
//!
//! The server refuses a structurally damaged SQLite file at start (its integrity check),
//! but a row whose JSON or values were changed by hand, by a script or by a bug is only
//! found when it is read: this reads them all.

use uuid::Uuid;

use crate::engine::policy_state;
use crate::store::{SessionCursor, SessionQuery, Store, StoreError};

/// Sessions read per page of the listing.
const PAGE: i64 = 200;
/// Observations and calls read per page.
const ROWS_PAGE: i64 = 10_000;

/// A session with rows that do not read back.
#[derive(Clone, Debug, PartialEq)]
pub struct DamagedSession {
    pub id: Uuid,
    /// What could not be read, and why (the first failure of each kind of row).
    pub problems: Vec<String>,
}

/// A webhook with rows (its own, or its deliveries') that do not read back.
#[derive(Clone, Debug, PartialEq)]
pub struct DamagedWebhook {
    pub id: Uuid,
    /// What could not be read, and why.
    pub problems: Vec<String>,
}

/// What [`check_database`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// Sessions read, damaged or not.
    pub sessions: usize,
    pub damaged: Vec<DamagedSession>,
    /// Webhooks read, damaged or not.
    pub webhooks: usize,
    pub damaged_webhooks: Vec<DamagedWebhook>,
}

/// Reads every session of `store` (each row: the session, its policy state, suggestions,
/// observations, response-time samples, step records and events) and every webhook (its
/// row and its deliveries'), and reports what does not decode. An error is a failure to
/// read at all (the database is unreachable, or a session's id or creation time is
/// damaged, so the listing cannot page past it).
pub async fn check_database(store: &dyn Store) -> Result<CheckReport, StoreError> {
    let mut report = CheckReport::default();
    check_webhooks(store, &mut report).await?;
    let mut before: Option<SessionCursor> = None;
    loop {
        let page = store
            .list_sessions(&SessionQuery::newest_first(PAGE, before, None))
            .await?;
        let Some(last) = page.last() else {
            return Ok(report);
        };
        before = Some(last.cursor.clone());
        for listed in page {
            report.sessions += 1;
            let mut problems = Vec::new();
            if let Err(e) = &listed.session {
                problems.push(format!("session row: {e}"));
            }
            problems.extend(check_rows(store, listed.cursor.id).await);
            if !problems.is_empty() {
                report.damaged.push(DamagedSession {
                    id: listed.cursor.id,
                    problems,
                });
            }
        }
    }
}

/// The problems of session `id`'s rows, read the way the API reads them.
async fn check_rows(store: &dyn Store, id: Uuid) -> Vec<String> {
    let mut problems = Vec::new();
    match store.load_history(id).await {
        Ok(Some(history)) => {
            if let Err(e) = policy_state(&history.session) {
                problems.push(format!("session row: {e}"));
            }
        }
        Ok(None) => {}
        Err(e) => problems.push(format!(
            "history (session, pending suggestions, active observations): {e}"
        )),
    }
    let mut after = 0;
    loop {
        match store.list_observations(id, after, ROWS_PAGE, true).await {
            Ok(rows) if rows.is_empty() => break,
            Ok(rows) => after = rows.last().map_or(after, |o| o.seq),
            Err(e) => {
                problems.push(format!("observations after seq {after}: {e}"));
                break;
            }
        }
    }
    problems.extend(check_events(store, id).await);
    if let Err(e) = store.response_time_summaries(id).await {
        problems.push(format!("response-time samples: {e}"));
    }
    let mut after = 0;
    loop {
        match store.list_calls(id, after, ROWS_PAGE).await {
            Ok(calls) if calls.is_empty() => break,
            Ok(calls) => after = calls.last().map_or(after, |c| c.id),
            Err(e) => {
                problems.push(format!("step records after call {after}: {e}"));
                break;
            }
        }
    }
    problems
}

/// The problems of session `id`'s events: those listed as unreadable markers.
async fn check_events(store: &dyn Store, id: Uuid) -> Vec<String> {
    let mut problems = Vec::new();
    let mut after = 0;
    loop {
        match store.list_events(id, after, ROWS_PAGE).await {
            Ok(events) if events.is_empty() => break,
            Ok(events) => {
                after = events.last().map_or(after, |e| e.event.seq);
                problems.extend(
                    events
                        .iter()
                        .map(|e| &e.event)
                        .filter(|e| e.is_unreadable())
                        .map(|e| {
                            format!(
                                "event {}: {}",
                                e.seq,
                                e.data["error"].as_str().unwrap_or("")
                            )
                        }),
                );
            }
            Err(e) => {
                problems.push(format!("events after seq {after}: {e}"));
                break;
            }
        }
    }
    problems
}

/// Reads every webhook and its deliveries into `report`.
async fn check_webhooks(store: &dyn Store, report: &mut CheckReport) -> Result<(), StoreError> {
    for id in store.webhook_ids().await? {
        report.webhooks += 1;
        let mut problems = Vec::new();
        if let Err(e) = store.get_webhook(id).await {
            problems.push(format!("webhook row: {e}"));
        }
        let mut after = 0;
        loop {
            match store.list_deliveries(id, after, ROWS_PAGE).await {
                Ok(rows) if rows.is_empty() => break,
                Ok(rows) => after = rows.last().map_or(after, |d| d.event_id),
                Err(e) => {
                    problems.push(format!("deliveries after event {after}: {e}"));
                    break;
                }
            }
        }
        if !problems.is_empty() {
            report
                .damaged_webhooks
                .push(DamagedWebhook { id, problems });
        }
    }
    Ok(())
}
