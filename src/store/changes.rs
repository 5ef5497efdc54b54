//! Notices of committed changes, which wake the live event streams (docs/events.md, "The
//! stream") instead of each stream polling the database.
//!
//! - **SQLite** (one process): the service publishes each of its commits here after it
//!   returns ([`ChangeFeed::publish_local`]). The feed is always live.
//! - **PostgreSQL** (replicas sharing the database): triggers (migration 0015) call
//!   `pg_notify` in the committing transaction, so PostgreSQL delivers the notice at
//!   commit, and only if the transaction commits. One listening connection per replica
//!   ([`listen`]) turns them into notices here. The feed is live while that connection
//!   is; a lost connection and its return each publish [`ChangeNotice::Missed`], so that
//!   every stream looks once and goes back to sleeping or polling. Keys revoked,
//!   changed or deleted notify too, by any process (`tvbo keys revoke`), so that a
//!   stream learns that its key is gone without asking every few seconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast;
use uuid::Uuid;

/// The PostgreSQL channel the triggers notify.
pub const CHANNEL: &str = "tvbo_changes";

/// Notices a receiver may fall behind by before it is told it missed some: several
/// seconds of a busy database's commits (about 1,300 a second on 2 cores), whose loss
/// costs every stream a look and the replica its kept snapshots.
const BUFFERED: usize = 8192;

/// How long the listener waits before it connects again after losing its connection.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// What a committed change touched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeNotice {
    /// A session of `tenant` was created or its version moved (`events` false), or it
    /// stored events (`events` true); `version` is the session's version after the
    /// change when the notice says it (PostgreSQL's notices of a version's change).
    Session {
        tenant: Arc<str>,
        session: Uuid,
        events: bool,
        version: Option<i64>,
    },
    /// An API key was revoked, changed or deleted (by any process: `tvbo keys revoke`
    /// too); only PostgreSQL's triggers send it.
    Key { key: Uuid },
    /// Notices may have been lost (the listener's connection came or went, or a receiver
    /// fell behind): every stream should look.
    Missed,
}

impl ChangeNotice {
    /// The notice of a trigger's payload, `<id> <v<version>|e|k> <tenant>`: a session's
    /// new version, its events stored, or a key's change; None for a payload of another
    /// form.
    pub fn from_payload(payload: &str) -> Option<ChangeNotice> {
        let (id, rest) = payload.split_once(' ')?;
        let (kind, tenant) = rest.split_once(' ')?;
        let id = id.parse().ok()?;
        let (events, version) = match kind {
            "e" => (true, None),
            "k" => return Some(ChangeNotice::Key { key: id }),
            _ => (false, Some(kind.strip_prefix('v')?.parse().ok()?)),
        };
        Some(ChangeNotice::Session {
            tenant: tenant.into(),
            session: id,
            events,
            version,
        })
    }
}

/// The fan-out of [`ChangeNotice`]s to this process's streams and webhook worker.
#[derive(Debug)]
pub struct ChangeFeed {
    sender: broadcast::Sender<ChangeNotice>,
    /// Whether the database itself sends the notices (PostgreSQL's listener).
    from_database: bool,
    /// Whether every commit's notice reaches this feed now.
    live: AtomicBool,
}

impl ChangeFeed {
    /// The feed of a database that only this process writes: live, fed by
    /// [`Self::publish_local`].
    pub fn in_process() -> ChangeFeed {
        Self::new(false, true)
    }

    /// The feed of a shared database: fed by [`listen`], live once it listens.
    pub fn from_database() -> ChangeFeed {
        Self::new(true, false)
    }

    fn new(from_database: bool, live: bool) -> ChangeFeed {
        ChangeFeed {
            sender: broadcast::channel(BUFFERED).0,
            from_database,
            live: AtomicBool::new(live),
        }
    }

    /// The notices published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ChangeNotice> {
        self.sender.subscribe()
    }

    /// Whether every commit's notice reaches the feed now; while not, whoever waits on it
    /// must also poll.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Whether every process that writes the database is heard now: PostgreSQL's
    /// listener while it is connected. A SQLite file is also written by `tvbo keys`,
    /// which this process does not hear, so who waits on a key's change must poll.
    pub fn hears_every_writer(&self) -> bool {
        self.from_database && self.is_live()
    }

    /// Publishes a notice of this process's commit, unless the database sends it itself.
    pub fn publish_local(&self, tenant: &str, session: Uuid, events: bool) {
        if !self.from_database {
            self.publish(ChangeNotice::Session {
                tenant: tenant.into(),
                session,
                events,
                version: None,
            });
        }
    }

    fn publish(&self, notice: ChangeNotice) {
        // No receiver: nobody waits, nothing to do.
        let _ = self.sender.send(notice);
    }

    /// Marks the feed live or not; a change either way publishes [`ChangeNotice::Missed`].
    fn set_live(&self, live: bool) {
        if self.live.swap(live, Ordering::AcqRel) != live {
            self.publish(ChangeNotice::Missed);
        }
    }
}

/// Listens on [`CHANNEL`] over a connection of `pool` (a pool of its own, so that the
/// listening connection is not one of the store's) and publishes what arrives on `feed`,
/// for as long as it runs: the store aborts it when it closes. A lost connection is
/// opened again every [`RECONNECT`] until it is back.
pub async fn listen(pool: sqlx::PgPool, feed: Arc<ChangeFeed>) {
    let mut warned = false;
    loop {
        match listening(&pool).await {
            Ok(mut listener) => {
                if warned {
                    tracing::info!("listening for change notices again");
                    warned = false;
                }
                feed.set_live(true);
                // `eager_reconnect(false)`: a lost connection ends this loop with
                // `Ok(None)`, and is opened again above, where the feed is live again
                // only once `LISTEN` has been answered.
                while let Ok(Some(notification)) = listener.try_recv().await {
                    if feed.sender.receiver_count() == 0 {
                        continue;
                    }
                    match ChangeNotice::from_payload(notification.payload()) {
                        Some(notice) => feed.publish(notice),
                        None => tracing::warn!(
                            payload = notification.payload(),
                            "a change notice of an unknown form"
                        ),
                    }
                }
            }
            Err(e) if !warned => {
                tracing::warn!(error = %e, "cannot listen for change notices: streams poll");
                warned = true;
            }
            Err(_) => {}
        }
        feed.set_live(false);
        tokio::time::sleep(RECONNECT).await;
    }
}

async fn listening(pool: &sqlx::PgPool) -> Result<sqlx::postgres::PgListener, sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_as_notices() {
        let id = Uuid::new_v4();
        assert_eq!(
            ChangeNotice::from_payload(&format!("{id} e acme corp")),
            Some(ChangeNotice::Session {
                tenant: "acme corp".into(),
                session: id,
                events: true,
                version: None,
            })
        );
        assert_eq!(
            ChangeNotice::from_payload(&format!("{id} v17 ")),
            Some(ChangeNotice::Session {
                tenant: "".into(),
                session: id,
                events: false,
                version: Some(17),
            })
        );
        assert_eq!(
            ChangeNotice::from_payload(&format!("{id} k acme")),
            Some(ChangeNotice::Key { key: id })
        );
        let bad_ones = [
            "",
            "x v1 t",
            &format!("{id} q t"),
            &format!("{id} v t"),
            &format!("{id}"),
        ];
        for bad in bad_ones {
            assert_eq!(ChangeNotice::from_payload(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_local_feed_publishes_and_a_database_feed_waits_for_the_database() {
        let id = Uuid::new_v4();
        let local = ChangeFeed::in_process();
        let mut notices = local.subscribe();
        assert!(local.is_live() && !local.hears_every_writer());
        local.publish_local("acme", id, true);
        assert!(matches!(
            notices.recv().await.unwrap(),
            ChangeNotice::Session { events: true, .. }
        ));

        let shared = ChangeFeed::from_database();
        let mut notices = shared.subscribe();
        assert!(!shared.is_live());
        shared.publish_local("acme", id, true);
        shared.set_live(true);
        assert!(shared.hears_every_writer());
        shared.set_live(true);
        shared.set_live(false);
        // Only the two changes of liveness: the database sends the commits' notices.
        assert_eq!(notices.recv().await.unwrap(), ChangeNotice::Missed);
        assert_eq!(notices.recv().await.unwrap(), ChangeNotice::Missed);
        assert!(notices.try_recv().is_err());
    }
}
