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

use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use uuid::Uuid;

use crate::domain::records::{ChangeSet, History, ResponseTimeSummary};
use crate::telemetry::{self, CacheOutcome};

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

/// Sessions whose handed-out snapshot version is remembered until their change commits
/// (one change at a time per session and replica, so this is the sessions changing now
/// on this replica, plus those whose change failed before committing).
const HANDED_OUT_SESSIONS: usize = 16_384;

/// The snapshots, least recently used dropped first.
///
/// Each committed change is counted by where its snapshot came from
/// ([`telemetry::SNAPSHOT_LOOKUPS`]): the version [`SnapshotCache::take`] handed out is
/// remembered, and the change's snapshot at [`SnapshotCache::put_after`] is a `hit` when
/// it is that version, `stale` when the service read the session again because another
/// writer had changed it, `absent` when none was kept (a retry after a lost commit race
/// counts as `absent` too). The rows kept go to [`telemetry::SNAPSHOT_ROWS`].
pub(super) struct SnapshotCache {
    kept: Cache<Uuid, SessionSnapshot, Rows>,
    handed_out: Cache<Uuid, i64>,
    /// The rows last added to [`telemetry::SNAPSHOT_ROWS`].
    reported_rows: AtomicU64,
}

impl Default for SnapshotCache {
    fn default() -> Self {
        SnapshotCache {
            kept: Cache::with_weighter(1024, SNAPSHOT_CACHE_ROWS, Rows),
            handed_out: Cache::new(HANDED_OUT_SESSIONS),
            reported_rows: AtomicU64::new(0),
        }
    }
}

impl SnapshotCache {
    /// The session's snapshot, taken out: whoever changes the session puts back the one
    /// after its change, or nothing if it failed in a way that leaves the snapshot in
    /// doubt.
    pub fn take(&self, id: Uuid) -> Option<SessionSnapshot> {
        let taken = self.kept.remove(&id).map(|(_, snapshot)| snapshot);
        match &taken {
            Some(snapshot) => self.handed_out.insert(id, snapshot.history.session.version),
            None => {
                self.handed_out.remove(&id);
            }
        }
        self.report_rows();
        taken
    }

    /// Keeps `snapshot` as the session's current one.
    pub fn put(&self, id: Uuid, snapshot: SessionSnapshot) {
        self.kept.insert(id, snapshot);
        self.report_rows();
    }

    /// Keeps the snapshot `before` turns into once `change` is committed, when it can be
    /// replayed. Call once `change` is committed: this counts where `before` came from.
    pub fn put_after(&self, id: Uuid, before: SessionSnapshot, change: &ChangeSet) {
        let outcome = match self.handed_out.remove(&id) {
            Some((_, version)) if version == before.history.session.version => CacheOutcome::Hit,
            Some(_) => CacheOutcome::Stale,
            None => CacheOutcome::Absent,
        };
        telemetry::record_snapshot_lookup(outcome);
        match before.after(change) {
            Some(snapshot) => self.put(id, snapshot),
            None => self.forget(id),
        }
    }

    /// The session's snapshot, left in place.
    pub fn peek(&self, id: Uuid) -> Option<SessionSnapshot> {
        self.kept.get(&id)
    }

    /// Drops the session's snapshot if it is older than `version`: another writer's
    /// change made it stale.
    pub fn forget_older(&self, id: Uuid, version: i64) {
        let older = |kept: &SessionSnapshot| kept.history.session.version < version;
        if self.kept.remove_if(&id, older).is_some() {
            self.report_rows();
        }
    }

    /// Drops every snapshot.
    pub fn clear(&self) {
        self.kept.clear();
        self.report_rows();
    }

    /// Drops the session's snapshot.
    pub fn forget(&self, id: Uuid) {
        self.kept.remove(&id);
        self.report_rows();
    }

    /// Moves [`telemetry::SNAPSHOT_ROWS`] by the change of the rows kept since the last
    /// report (the swap makes concurrent reports add up to the last one's count).
    fn report_rows(&self) {
        let rows = self.kept.weight();
        let reported = self.reported_rows.swap(rows, Ordering::Relaxed);
        telemetry::snapshot_rows_changed(rows as f64 - reported as f64);
    }
}

impl Drop for SnapshotCache {
    fn drop(&mut self) {
        telemetry::snapshot_rows_changed(-(self.reported_rows.load(Ordering::Relaxed) as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::checked::CheckedConfig;
    use crate::domain::config::CreateSession;
    use crate::engine::new_session_row;

    fn snapshot(id: Uuid, version: i64) -> SessionSnapshot {
        let request: CreateSession = serde_json::from_value(serde_json::json!({
            "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
            "algorithm": {"name": "random"}
        }))
        .unwrap();
        let config = CheckedConfig::from_request(request, 1).unwrap();
        let mut row = new_session_row(id, "default", config, chrono::Utc::now());
        row.version = version;
        SessionSnapshot {
            history: History::new(row),
            response_times: None,
        }
    }

    /// The value of `line`'s metric in a rendering (0 when absent).
    fn value(rendered: &str, metric: &str) -> f64 {
        rendered
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{metric} ")))
            .map_or(0.0, |v| v.parse().unwrap())
    }

    #[test]
    fn committed_changes_are_counted_by_where_their_snapshot_came_from() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let id = Uuid::new_v4();
        let change = ChangeSet::default();
        metrics::with_local_recorder(&recorder, || {
            let cache = SnapshotCache::default();
            // Nothing kept: read from the store.
            assert!(cache.take(id).is_none());
            cache.put_after(id, snapshot(id, 1), &change);
            // The kept one (version 2) planned from: a hit.
            let kept = cache.take(id).expect("kept after the commit");
            assert_eq!(kept.history.session.version, 2);
            cache.put_after(id, kept, &change);
            // Kept (version 3), but another replica moved the session to 7: read again.
            assert!(cache.take(id).is_some());
            cache.put_after(id, snapshot(id, 7), &change);
            let rendered = handle.render();
            for outcome in ["hit", "stale", "absent"] {
                let metric = format!("{}{{outcome=\"{outcome}\"}}", telemetry::SNAPSHOT_LOOKUPS);
                assert_eq!(value(&rendered, &metric), 1.0, "{outcome}: {rendered}");
            }
            // One snapshot kept, of one row (the session: no observations, no pending).
            assert_eq!(
                value(&rendered, telemetry::SNAPSHOT_ROWS),
                1.0,
                "{rendered}"
            );
            drop(cache);
            let rendered = handle.render();
            assert_eq!(
                value(&rendered, telemetry::SNAPSHOT_ROWS),
                0.0,
                "{rendered}"
            );
        });
    }

    #[test]
    fn a_newer_version_drops_an_older_snapshot_only() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let cache = SnapshotCache::default();
        cache.put(a, snapshot(a, 3));
        cache.put(b, snapshot(b, 5));
        cache.forget_older(a, 3);
        assert!(cache.peek(a).is_some(), "the same version stays");
        cache.forget_older(a, 4);
        assert!(cache.peek(a).is_none(), "a newer version drops it");
        cache.clear();
        assert!(cache.peek(b).is_none());
    }
}
