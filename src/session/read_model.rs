//! The read model: the model of a session's active data that predictions,
//! recommendations and regret estimates are read from, and this replica's cache of them,
//! keyed by session version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::error::ServiceError;
use crate::domain::records::History;
use crate::engine::{policy_data, policy_state};
use crate::gp::arms::{ArmGp, TimeVaryingArmGp};
use crate::policy::tv_gp_ucb::TvGpUcbWithPrior;
use crate::policy::{self, Surrogate};

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

/// The model predictions, recommendations and regret estimates read from.
pub(super) enum CurrentModel {
    /// The GP over the unit cube (× time) with fitted hyperparameters.
    Surrogate(Surrogate),
    /// The posterior over the arms under a given prior.
    Arms {
        selection: policy::PriorSelection,
        gp: ArmGp,
    },
    /// The posterior over (arm, time) under a given prior and TV-GP-UCB's forgetting.
    TimeVaryingArms {
        policy: TvGpUcbWithPrior,
        gp: TimeVaryingArmGp,
    },
}

impl CurrentModel {
    /// The model of the session's active data: under its saved hyperparameters (no
    /// refit), or, for algorithms with priors, the posterior under the most probable
    /// active prior (which exists before any observation).
    pub(super) fn of(history: &History) -> Result<Option<CurrentModel>, ServiceError> {
        let config = &history.session.config;
        let data = policy_data(config, &history.active);
        let state = policy_state(&history.session)?;
        if let Some(selection) = policy::prior_selection_for(config) {
            let gp = selection.current_model(&data, &state)?;
            return Ok(Some(CurrentModel::Arms { selection, gp }));
        }
        if let Some(policy) = policy::tv_gp_ucb_with_prior_for(config) {
            let gp = policy.current_model(&data, &state)?;
            return Ok(Some(CurrentModel::TimeVaryingArms { policy, gp }));
        }
        if history.active.is_empty() {
            return Ok(None);
        }
        let policy = policy::policy_for(config);
        let spec = policy.kernel(&config.model);
        let dim = config.parameters.len();
        let surrogate = match state.hyperparameters {
            Some(hyper) => Surrogate::with_hyperparameters(spec, dim, &data, hyper)?,
            // Nothing fitted yet (warm-up, random search): fit now.
            None => Surrogate::fit(
                spec,
                dim,
                &data,
                config.model.noise,
                policy.fixed_temporal_lengthscale(),
            )?,
        };
        Ok(Some(CurrentModel::Surrogate(surrogate)))
    }

    /// Posterior mean and standard deviation at (x, t) on the internal scale; None for a
    /// point that is not one of the arms of a model over arms.
    pub(super) fn predict(&self, x: &[f64], t: f64) -> Option<(f64, f64)> {
        match self {
            CurrentModel::Surrogate(surrogate) => Some(surrogate.predict(x, t)),
            CurrentModel::Arms { selection, gp } => selection
                .arm_at(x)
                .map(|arm| (gp.mean(arm), gp.variance(arm).sqrt())),
            CurrentModel::TimeVaryingArms { policy, gp } => policy.arm_at(x).map(|arm| {
                let (mean, variance) = gp.predict(arm, t);
                (mean, variance.sqrt())
            }),
        }
    }

    /// Posterior mean at (x, t); −∞ off the arms of a model over arms.
    pub(super) fn mean(&self, x: &[f64], t: f64) -> f64 {
        match self {
            CurrentModel::Surrogate(surrogate) => surrogate.mean(x, t),
            CurrentModel::Arms { .. } | CurrentModel::TimeVaryingArms { .. } => {
                self.predict(x, t).map_or(f64::NEG_INFINITY, |p| p.0)
            }
        }
    }

    /// Bytes of memory the model holds: itself, and everything it owns or keeps alive
    /// on the heap (the prior of a model over arms included, though the prior cache may
    /// share it).
    pub(super) fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + match self {
                CurrentModel::Surrogate(surrogate) => surrogate.gp().heap_bytes(),
                CurrentModel::Arms { selection, gp } => {
                    selection.heap_bytes() + gp.heap_bytes() + gp.prior().heap_bytes()
                }
                CurrentModel::TimeVaryingArms { policy, gp } => {
                    policy.heap_bytes() + gp.heap_bytes() + gp.prior().heap_bytes()
                }
            }
    }

    pub(super) fn uses_time(&self) -> bool {
        match self {
            CurrentModel::Surrogate(surrogate) => surrogate.gp().spec().temporal.is_some(),
            CurrentModel::Arms { .. } => false,
            CurrentModel::TimeVaryingArms { .. } => true,
        }
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
    let model = CurrentModel::of(history)?.map(Arc::new);
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
