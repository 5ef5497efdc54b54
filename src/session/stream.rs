//! The live stream of a tenant's events (`GET /v1/events`, docs/events.md, "The stream"):
//! what the store holds after a cursor, in id order, as it is committed.
//!
//! Ids are drawn in the order of the events' transactions, not of their commits: on
//! PostgreSQL a transaction may commit id 7 after another committed id 8. The stream
//! therefore passes an id only once every id below it is present, or once the event after
//! a gap is [`GAP_GRACE`] old (the missing id's transaction then rolled back, or its event
//! was deleted with its session). SQLite commits in id order, so there are no such gaps.
//!
//! A stream looks at the store when a change that concerns it is committed (the store's
//! [`ChangeFeed`]: this process's commits on SQLite, every replica's through PostgreSQL's
//! `LISTEN` on a shared database), at most every [`LOOK_GAP`] for events, and for
//! versions alone [`VERSION_SETTLE`] after the notice and at most every [`VERSION_GAP`];
//! otherwise it sleeps: for
//! [`SAFETY_LOOK`] while the feed is live, [`GAP_GRACE`] while a gap holds it, and
//! [`POLL`] while the feed is not live (PostgreSQL's listening connection is lost), as
//! it polled before there were notices.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::Stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use crate::session::service::SessionService;
use crate::session::views::Event;
use crate::store::changes::{ChangeFeed, ChangeNotice};
use crate::store::{Store, StoreError, to_micros};

/// How long an id may stay missing below present ones before the stream passes it by: far
/// longer than the few statements between an event's insert and its transaction's commit.
pub const GAP_GRACE: Duration = Duration::from_secs(5);
/// Longest the stream waits before it looks again while the change feed is not live.
pub const POLL: Duration = Duration::from_secs(1);
/// Longest an idle stream sleeps while the change feed is live: a look in case a notice
/// was lost all the same (PostgreSQL drops a listener's notices only with its connection,
/// which the feed reports).
pub const SAFETY_LOOK: Duration = Duration::from_secs(300);
/// Shortest time between two looks when events were stored: a busy session's notices
/// are taken together.
pub const LOOK_GAP: Duration = Duration::from_millis(25);
/// Shortest time between two looks when only versions moved: a session observed many
/// times a second tells its watchers (a dashboard redraws on each message) once a
/// second, as the stream did when it polled.
pub const VERSION_GAP: Duration = POLL;
/// How long a look for versions alone waits after the notice: a client's observe and its
/// next suggest, which follow each other, are told as one move (half a poll, the wait
/// a polling stream's watchers had on average).
pub const VERSION_SETTLE: Duration = Duration::from_millis(500);
/// Events read per look.
const PAGE: i64 = 200;

/// What a stream asks for.
#[derive(Clone, Debug)]
pub struct StreamRequest {
    /// Only this tenant's sessions (None: an admin, every tenant's).
    pub tenant: Option<String>,
    /// Only this session's events, and its version as it moves.
    pub session: Option<Uuid>,
    /// Without `session`: also the version of each of the tenant's sessions as it moves
    /// (created, suggested, observed), from the connection on (and those of the 5 s
    /// before it).
    pub changes: bool,
    /// Only these kinds (empty: every kind).
    pub kinds: Vec<String>,
    /// Events with a larger id than this; None: from now on.
    pub after: Option<i64>,
}

/// A message of the stream.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamMessage {
    Event(Box<Event>),
    /// The watched session's version moved (its first value at connection).
    Version {
        session: Uuid,
        version: i64,
    },
}

struct Cursor {
    store: Arc<dyn Store>,
    feed: Arc<ChangeFeed>,
    notices: broadcast::Receiver<ChangeNotice>,
    request: StreamRequest,
    after: i64,
    /// Whether the last look stopped at a gap in the ids.
    held: bool,
    version: Option<i64>,
    /// With `changes`: the newest step time seen, and each changed session's version sent.
    changed_since: i64,
    versions: HashMap<Uuid, i64>,
    ready: VecDeque<StreamMessage>,
}

impl SessionService {
    /// The stream of [`StreamRequest`]'s events, endless; a store error ends it (the client
    /// reconnects with the last id it saw).
    pub async fn event_stream(
        &self,
        request: StreamRequest,
    ) -> Result<impl Stream<Item = StreamMessage> + Send + use<>, StoreError> {
        // Subscribed before the first look: what commits after it wakes the stream.
        let feed = self.change_feed();
        let notices = feed.subscribe();
        let after = match request.after {
            Some(after) => after,
            None => self.store.newest_event_id().await?,
        };
        let cursor = Cursor {
            store: self.store.clone(),
            feed,
            notices,
            request,
            after,
            held: false,
            version: None,
            changed_since: to_micros(Utc::now()),
            versions: HashMap::new(),
            ready: VecDeque::new(),
        };
        Ok(futures_util::stream::unfold(
            cursor,
            |mut cursor| async move {
                loop {
                    if let Some(message) = cursor.ready.pop_front() {
                        return Some((message, cursor));
                    }
                    let looked = tokio::time::Instant::now();
                    match cursor.look().await {
                        Ok(true) => continue,
                        Ok(false) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "event stream ends: cannot read the store");
                            return None;
                        }
                    }
                    let sleep = cursor.sleep();
                    let next = tokio::select! {
                        urgent = cursor.concerning_notice() => if urgent {
                            looked + LOOK_GAP
                        } else {
                            (looked + VERSION_GAP).max(tokio::time::Instant::now() + VERSION_SETTLE)
                        },
                        () = tokio::time::sleep(sleep) => looked + LOOK_GAP,
                    };
                    tokio::time::sleep_until(next).await;
                }
            },
        ))
    }
}

impl Cursor {
    /// How long to sleep when no notice comes (the module's doc).
    fn sleep(&self) -> Duration {
        match (self.feed.is_live(), self.held) {
            (false, _) => POLL,
            (true, true) => GAP_GRACE,
            (true, false) => SAFETY_LOOK,
        }
    }

    /// Waits for a notice that concerns this stream: a change of its session, or of a
    /// session of its tenant (every tenant's for an admin) that stored events, or that
    /// changed at all with `changes`; or notices it missed. Whether it is urgent: events
    /// stored, or notices missed (a version's move is not). Never returns once the feed
    /// is gone (the store outlives its streams).
    async fn concerning_notice(&mut self) -> bool {
        loop {
            match self.notices.recv().await {
                Ok(notice) if concerns(&self.request, &notice) => {
                    return !matches!(notice, ChangeNotice::Session { events: false, .. });
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => return true,
                Err(RecvError::Closed) => std::future::pending().await,
            }
        }
    }

    /// Reads what is new into `ready`; whether there was anything.
    async fn look(&mut self) -> Result<bool, StoreError> {
        if let Some(session) = self.request.session {
            let version = self.store.session_version(session).await?;
            match version {
                Some(version) if self.version != Some(version) => {
                    self.version = Some(version);
                    self.ready
                        .push_back(StreamMessage::Version { session, version });
                }
                _ => {}
            }
        } else if self.request.changes {
            self.look_for_changes().await?;
        }
        let ids = self.store.event_ids_after(self.after, PAGE).await?;
        let until = passable(&ids, self.after, to_micros(Utc::now()));
        self.held = ids.last().is_some_and(|&(last, _)| last > until);
        if until == self.after {
            return Ok(!self.ready.is_empty());
        }
        let request = &self.request;
        let events = self
            .store
            .tenant_events(
                request.tenant.as_deref(),
                request.session,
                self.after,
                until,
                PAGE,
            )
            .await?;
        self.after = until;
        for record in events {
            if request.kinds.is_empty() || request.kinds.contains(&record.event.kind) {
                self.ready
                    .push_back(StreamMessage::Event(Box::new(Event::from(record))));
            }
        }
        Ok(true)
    }

    /// Queues a `version` message for each of the tenant's sessions that changed since
    /// the last look. Replicas stamp their commits with their own clocks, and a commit
    /// stamped earlier may land later: each look reaches [`GAP_GRACE`] further back, and
    /// a session is told of only when its version is newer than the one told.
    async fn look_for_changes(&mut self) -> Result<(), StoreError> {
        let since = self.changed_since - GAP_GRACE.as_micros() as i64;
        let tenant = self.request.tenant.as_deref();
        let changed = self.store.changed_sessions(tenant, since, PAGE).await?;
        for (session, version, at) in changed {
            self.changed_since = self.changed_since.max(at);
            if self
                .versions
                .get(&session)
                .is_none_or(|&told| version > told)
            {
                self.versions.insert(session, version);
                self.ready
                    .push_back(StreamMessage::Version { session, version });
            }
        }
        Ok(())
    }
}

/// Whether `notice` may bring `request` something.
fn concerns(request: &StreamRequest, notice: &ChangeNotice) -> bool {
    match notice {
        ChangeNotice::Missed => true,
        ChangeNotice::Key { .. } => false,
        ChangeNotice::Session {
            tenant,
            session,
            events,
            ..
        } => match request.session {
            Some(watched) => watched == *session,
            None => {
                request.tenant.as_deref().is_none_or(|own| own == &**tenant)
                    && (*events || request.changes)
            }
        },
    }
}

/// The largest id the stream may pass, of `ids` (id, commit micros) read after `after`:
/// the end of the run of ids that follow each other, extended past a gap whose next
/// event is older than [`GAP_GRACE`] at `now`.
fn passable(ids: &[(i64, i64)], after: i64, now: i64) -> i64 {
    let grace = GAP_GRACE.as_micros() as i64;
    let mut until = after;
    for &(id, created) in ids {
        if id == until + 1 || now - created > grace {
            until = id;
        } else {
            break;
        }
    }
    until
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_wakes_for_its_session_its_tenants_events_or_missed_notices() {
        let (mine, other) = (Uuid::new_v4(), Uuid::new_v4());
        let request = |tenant: Option<&str>, session, changes| StreamRequest {
            tenant: tenant.map(str::to_string),
            session,
            changes,
            kinds: vec![],
            after: None,
        };
        let notice = |tenant: &str, session, events| ChangeNotice::Session {
            tenant: tenant.into(),
            session,
            events,
            version: None,
        };
        let watching = request(Some("acme"), Some(mine), false);
        assert!(concerns(&watching, &notice("acme", mine, false)));
        assert!(!concerns(&watching, &notice("acme", other, true)));
        let events = request(Some("acme"), None, false);
        assert!(concerns(&events, &notice("acme", other, true)));
        assert!(!concerns(&events, &notice("acme", other, false)));
        assert!(!concerns(&events, &notice("globex", other, true)));
        let changes = request(Some("acme"), None, true);
        assert!(concerns(&changes, &notice("acme", other, false)));
        assert!(!concerns(&changes, &notice("globex", other, false)));
        let admin = request(None, None, false);
        assert!(concerns(&admin, &notice("globex", other, true)));
        assert!(!concerns(&admin, &notice("globex", other, false)));
        for r in [watching, events, changes, admin] {
            assert!(concerns(&r, &ChangeNotice::Missed));
        }
    }

    #[test]
    fn a_young_gap_holds_the_stream_and_an_old_one_does_not() {
        let now = 100_000_000;
        let young = now - 1_000_000;
        let old = now - 6_000_000;
        // 11 and 12 follow 10; 14 waits for 13 while it is young.
        assert_eq!(
            passable(&[(11, young), (12, young), (14, young)], 10, now),
            12
        );
        // The event after the gap is old: the gap's transaction is gone.
        assert_eq!(
            passable(&[(11, young), (13, old), (14, young)], 10, now),
            14
        );
        assert_eq!(passable(&[], 10, now), 10);
        assert_eq!(passable(&[(12, young)], 10, now), 10);
    }
}
