//! This replica's snapshots of the sessions it changes: after committing a change, the
//! service keeps the session's history as the change left it ([`History::apply`]), and
//! plans the session's next change from it instead of reading the session back (its
//! active observations, pending suggestions, lead-time delays and response-time
//! summaries: five to seven queries, and the JSON of every active observation decoded).
//!
//! A snapshot is only ever a guess at the database: the change planned from it is
//! committed against its version, so a session another replica changed meanwhile fails
//! that check and is planned again from the database ([`Store::commit`]'s optimistic
//! concurrency), never from a stale snapshot.
//!
//! [`Store::commit`]: crate::store::Store::commit

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use uuid::Uuid;

use crate::domain::records::{ChangeSet, History, ResponseTimeSummary};

/// Rows (active observations, pending suggestions, response-time summaries, one per
/// session) of the snapshots a replica keeps: about 0.5 kB each at three parameters, so
/// some 50 MB at most. Past it, the sessions used least recently are read back on their
/// next change.
pub const SNAPSHOT_CACHE_ROWS: u64 = 100_000;

/// What a change of a session is planned from.
#[derive(Clone, Debug)]
pub struct SessionSnapshot {
    pub history: History,
    /// The response-time summaries, once an observe has read them.
    pub response_times: Option<Vec<ResponseTimeSummary>>,
}

impl SessionSnapshot {
    /// The snapshot after `change` is committed onto it; None when it cannot be replayed
    /// in memory ([`History::apply`]).
    fn after(mut self, change: &ChangeSet) -> Option<SessionSnapshot> {
        self.history.apply(change, |_| None).ok()?;
        if let (Some(summaries), Some(sample)) = (&mut self.response_times, change.response_time) {
            ResponseTimeSummary::fold(summaries, sample);
        }
        Some(self)
    }

    fn rows(&self) -> u64 {
        let history = &self.history;
        let summaries = self.response_times.as_ref().map_or(0, Vec::len);
        (1 + history.active.len() + history.pending.len() + summaries) as u64
    }
}

#[derive(Clone)]
struct Rows;

impl Weighter<Uuid, SessionSnapshot> for Rows {
    fn weight(&self, _id: &Uuid, snapshot: &SessionSnapshot) -> u64 {
        snapshot.rows()
    }
}

/// The snapshots, least recently used dropped first.
pub(super) struct SnapshotCache(Cache<Uuid, SessionSnapshot, Rows>);

impl Default for SnapshotCache {
    fn default() -> Self {
        SnapshotCache(Cache::with_weighter(1024, SNAPSHOT_CACHE_ROWS, Rows))
    }
}

impl SnapshotCache {
    /// The session's snapshot, taken out: whoever changes the session puts back the one
    /// after its change, or nothing if it failed in a way that leaves the snapshot in
    /// doubt.
    pub fn take(&self, id: Uuid) -> Option<SessionSnapshot> {
        self.0.remove(&id).map(|(_, snapshot)| snapshot)
    }

    /// Keeps `snapshot` as the session's current one.
    pub fn put(&self, id: Uuid, snapshot: SessionSnapshot) {
        self.0.insert(id, snapshot);
    }

    /// Keeps the snapshot `before` turns into once `change` is committed, when it can be
    /// replayed.
    pub fn put_after(&self, id: Uuid, before: SessionSnapshot, change: &ChangeSet) {
        match before.after(change) {
            Some(snapshot) => self.put(id, snapshot),
            None => self.forget(id),
        }
    }

    /// The session's snapshot, left in place.
    pub fn peek(&self, id: Uuid) -> Option<SessionSnapshot> {
        self.0.get(&id)
    }

    /// Drops the session's snapshot.
    pub fn forget(&self, id: Uuid) {
        self.0.remove(&id);
    }
}
