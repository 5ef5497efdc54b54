//! This replica's cache of read models (the model of a session's active data that
//! predictions, recommendations and regret estimates are read from), keyed by session
//! version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::error::ServiceError;
use crate::domain::records::History;
use crate::engine::{CurrentModel, policy_state};

/// Bytes of models a replica keeps for reads (predict, best, regret, model).
const MODEL_CACHE_BYTES: usize = 512 << 20;
/// Bytes of one cache entry besides its model: the map's slot (key, entry and control
/// byte) and the `Arc`'s counts.
const CACHE_ENTRY_BYTES: usize =
    std::mem::size_of::<(Uuid, CachedModel)>() + 1 + 2 * std::mem::size_of::<usize>();

/// This replica's models of recently read sessions, each with the session version it
/// was built from: a read at another version rebuilds. Entries past
/// [`MODEL_CACHE_BYTES`] are dropped least recently used first.
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
    fn get(&mut self, id: Uuid, version: i64) -> Option<Option<Arc<CurrentModel>>> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(&id).filter(|e| e.version == version)?;
        entry.last_used = clock;
        Some(entry.model.clone())
    }

    fn insert(&mut self, id: Uuid, version: i64, model: Option<Arc<CurrentModel>>) {
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

/// The session's current model from this replica's cache when it was built from
/// the same session version, else rebuilt (on the blocking pool: call from there).
pub(super) fn cached_model(
    cache: &Mutex<ModelCache>,
    history: &History,
) -> Result<Option<Arc<CurrentModel>>, ServiceError> {
    let (id, version) = (history.session.id, history.session.version);
    if let Some(model) = cache.lock().expect("model cache poisoned").get(id, version) {
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
        assert!(cache.get(a, 1).is_none());
        cache.insert(a, 1, None);
        cache.insert(b, 4, None);
        assert!(cache.get(a, 1).is_some(), "same version: a hit");
        assert!(
            cache.get(a, 2).is_none(),
            "the stored version moved on: rebuild"
        );
        cache.insert(a, 2, None);
        assert!(cache.get(a, 1).is_none(), "one entry per session");
        assert!(cache.get(a, 2).is_some() && cache.get(b, 4).is_some());
        assert_eq!(cache.entries.len(), 2);
        // Even an empty entry costs its slot: the cap counts memory, not matrix sizes.
        assert_eq!(cache.bytes, 2 * CACHE_ENTRY_BYTES);
    }
}
