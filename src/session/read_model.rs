//! This replica's cache of read models (the model of a session's active data that
//! predictions, recommendations and regret estimates are read from), keyed by session
//! version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::error::ServiceError;
use crate::domain::records::History;
use crate::engine::{CurrentModel, policy_state};
use crate::telemetry::{self, CacheOutcome};

/// Bytes of models a replica keeps for reads (predict, best, regret, model).
const MODEL_CACHE_BYTES: usize = 512 << 20;
/// Bytes of one cache entry besides its model: the map's slot (key, entry and control
/// byte) and the `Arc`'s counts.
const CACHE_ENTRY_BYTES: usize =
    std::mem::size_of::<(Uuid, CachedModel)>() + 1 + 2 * std::mem::size_of::<usize>();

/// This replica's models of recently read sessions, each with the session version it
/// was built from: a read at another version rebuilds. Entries past
/// [`MODEL_CACHE_BYTES`] are dropped least recently used first. Lookups are counted by
/// outcome ([`telemetry::MODEL_CACHE_LOOKUPS`]) and the bytes kept go to
/// [`telemetry::MODEL_CACHE_BYTES`].
#[derive(Default)]
pub(super) struct ModelCache {
    entries: HashMap<Uuid, CachedModel>,
    bytes: usize,
    clock: u64,
}

struct CachedModel {
    version: i64,
    model: Option<Arc<CurrentModel>>,
    bytes: usize,
    last_used: u64,
}

impl ModelCache {
    /// The session's model at `version`, or why there is none; counted by outcome.
    fn lookup(
        &mut self,
        id: Uuid,
        version: i64,
    ) -> Result<Option<Arc<CurrentModel>>, CacheOutcome> {
        let found = self.find(id, version);
        telemetry::record_model_cache_lookup(
            found.as_ref().err().copied().unwrap_or(CacheOutcome::Hit),
        );
        found
    }

    fn find(&mut self, id: Uuid, version: i64) -> Result<Option<Arc<CurrentModel>>, CacheOutcome> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(&id).ok_or(CacheOutcome::Absent)?;
        if entry.version != version {
            return Err(CacheOutcome::Stale);
        }
        entry.last_used = clock;
        Ok(entry.model.clone())
    }

    fn insert(&mut self, id: Uuid, version: i64, model: Option<Arc<CurrentModel>>) {
        let before = self.bytes;
        self.store(id, version, model);
        telemetry::model_cache_bytes_changed(self.bytes as f64 - before as f64);
    }

    fn store(&mut self, id: Uuid, version: i64, model: Option<Arc<CurrentModel>>) {
        let bytes = CACHE_ENTRY_BYTES + model.as_deref().map_or(0, CurrentModel::memory_bytes);
        if let Some(old) = self.entries.remove(&id) {
            self.bytes -= old.bytes;
        }
        if bytes > MODEL_CACHE_BYTES {
            return;
        }
        while self.bytes + bytes > MODEL_CACHE_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some(old) = self.entries.remove(&oldest) {
                self.bytes -= old.bytes;
            }
        }
        self.clock += 1;
        self.bytes += bytes;
        self.entries.insert(
            id,
            CachedModel {
                version,
                model,
                bytes,
                last_used: self.clock,
            },
        );
    }
}

impl Drop for ModelCache {
    fn drop(&mut self) {
        telemetry::model_cache_bytes_changed(-(self.bytes as f64));
    }
}

/// The session's current model from this replica's cache when it was built from
/// the same session version, else rebuilt (on the blocking pool: call from there).
pub(super) fn cached_model(
    cache: &Mutex<ModelCache>,
    history: &History,
) -> Result<Option<Arc<CurrentModel>>, ServiceError> {
    let (id, version) = (history.session.id, history.session.version);
    if let Ok(model) = cache
        .lock()
        .expect("model cache poisoned")
        .lookup(id, version)
    {
        return Ok(model);
    }
    let config = &history.session.config;
    let state = policy_state(&history.session)?;
    let model = CurrentModel::of(config, &history.active, &history.failed, &state)?.map(Arc::new);
    cache
        .lock()
        .expect("model cache poisoned")
        .insert(id, version, model.clone());
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_models_are_keyed_by_session_version() {
        let mut cache = ModelCache::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(cache.lookup(a, 1).is_err());
        cache.insert(a, 1, None);
        cache.insert(b, 4, None);
        assert!(cache.lookup(a, 1).is_ok(), "same version: a hit");
        assert!(
            cache.lookup(a, 2).is_err(),
            "the stored version moved on: rebuild"
        );
        cache.insert(a, 2, None);
        assert!(cache.lookup(a, 1).is_err(), "one entry per session");
        assert!(cache.lookup(a, 2).is_ok() && cache.lookup(b, 4).is_ok());
        assert_eq!(cache.entries.len(), 2);
        // Even an empty entry costs its slot: the cap counts memory, not matrix sizes.
        assert_eq!(cache.bytes, 2 * CACHE_ENTRY_BYTES);
    }

    #[test]
    fn lookups_say_why_they_miss_and_the_bytes_are_a_gauge() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        metrics::with_local_recorder(&recorder, || {
            let mut cache = ModelCache::default();
            assert_eq!(cache.lookup(a, 1).err(), Some(CacheOutcome::Absent));
            cache.insert(a, 1, None);
            cache.insert(b, 1, None);
            assert!(cache.lookup(a, 1).is_ok());
            assert_eq!(cache.lookup(a, 2).err(), Some(CacheOutcome::Stale));
            let rendered = handle.render();
            for (outcome, count) in [("hit", 1), ("stale", 1), ("absent", 1)] {
                let line = format!(
                    "{}{{outcome=\"{outcome}\"}} {count}",
                    telemetry::MODEL_CACHE_LOOKUPS
                );
                assert!(rendered.lines().any(|l| l == line), "{rendered}");
            }
            let line = format!("{} {}", telemetry::MODEL_CACHE_BYTES, 2 * CACHE_ENTRY_BYTES);
            assert!(rendered.lines().any(|l| l == line), "{rendered}");
            drop(cache);
            let rendered = handle.render();
            let line = format!("{} 0", telemetry::MODEL_CACHE_BYTES);
            assert!(rendered.lines().any(|l| l == line), "{rendered}");
        });
    }
}
