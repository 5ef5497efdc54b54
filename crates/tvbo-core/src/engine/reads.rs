//! The read side of a session, as pure functions of its history and current model: the
//! relevance of each active observation, and what the model view shows of the fit, its
//! hyperpriors and the priors' standing. (The regret curve is [`super::regret`].) The
//! server loads the history, runs these off its async runtime, and answers with what they
//! return.

use serde::{Deserialize, Serialize};

use super::{CurrentModel, EngineError, fitted_hyperparameters, policy_state};
use crate::domain::config::SessionConfig;
use crate::domain::hyperpriors::{HyperpriorSet, Hyperpriors};
use crate::domain::records::{FittedHyperparameters, History, ObservationRow};
use crate::gp::GpError;
use crate::gp::relevance::relevances;
use crate::policy::prior_selection::{PriorSelectionState, StepRecord, entropy};
use crate::policy::{PolicyState, SessionPolicy};

/// How much the posterior would move without one active observation (W-DBO / BOLT).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RelevanceView {
    pub seq: i64,
    /// R_i = √(W̄²_i / W̄²_∅): the integrated Wasserstein distance between the posteriors
    /// with and without the observation over `[0,1]^d` × [now, ∞), relative to the
    /// posterior's own size.
    pub relevance: f64,
}

/// The relevance at time `t` of each of the `active` observations `model` was built from,
/// oldest first (W-DBO §4, eq. 12, as [`relevances`]); empty for a model without time or
/// over arms, and without a model.
pub fn relevance(
    model: Option<&CurrentModel>,
    active: &[ObservationRow],
    t: f64,
) -> Result<Vec<RelevanceView>, GpError> {
    let Some(CurrentModel::Surrogate(surrogate)) = model else {
        return Ok(Vec::new());
    };
    if surrogate.gp().spec().temporal.is_none() {
        return Ok(Vec::new());
    }
    let values = relevances(surrogate.gp(), t)?;
    Ok(active
        .iter()
        .zip(values)
        .map(|(o, relevance)| RelevanceView {
            seq: o.seq,
            relevance,
        })
        .collect())
}

/// The state of one prior (paper 003).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PriorStatusView {
    pub name: String,
    /// Still in the active set P_t (the elimination rules remove priors).
    pub active: bool,
    /// The step at which the prior was eliminated.
    pub eliminated_at: Option<u64>,
    /// |S_{t,p}|: observed steps whose suggestion was chosen under this prior (every rule).
    pub selected: u64,
    /// Σ_{i∈S} η_i, the prior's summed prediction errors (003 Alg. 1, line 9).
    pub error_sum: f64,
    /// Σ_{i∈S} √β_i σ_{i,p}(x_i), the confidence part of the elimination threshold.
    pub confidence_sum: f64,
    /// Hyperposterior probability P_t(p) (003 Alg. 2, line 6).
    pub probability: f64,
}

/// Prior selection: the priors, the hyperposterior's entropy, and every step's choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PriorSelectionView {
    /// Observations recorded.
    pub steps: u64,
    pub priors: Vec<PriorStatusView>,
    /// Entropy (nats) of the hyperposterior now.
    pub entropy: f64,
    /// One record per observation, oldest first: the index of the prior its suggestion
    /// was chosen under (null for warm-up or client-chosen settings) and the entropy
    /// after it.
    pub history: Vec<StepRecord>,
}

impl PriorSelectionView {
    /// The view of `state`, the priors named by `names` in their order.
    pub fn new(names: Vec<String>, state: PriorSelectionState) -> Self {
        let probabilities = state.hyperposterior();
        PriorSelectionView {
            steps: state.steps,
            entropy: entropy(&state.log_hyperposterior),
            priors: names
                .into_iter()
                .enumerate()
                .map(|(p, name)| PriorStatusView {
                    name,
                    active: state.active[p],
                    eliminated_at: state.eliminated_at[p],
                    selected: state.selected[p],
                    error_sum: state.error_sum[p],
                    confidence_sum: state.confidence_sum[p],
                    probability: probabilities[p],
                })
                .collect(),
            history: state.history,
        }
    }
}

/// What the model view shows of a session's model, read from its history alone.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReading {
    /// The last fit's hyperparameters ([`fitted_hyperparameters`]); none before a fit.
    pub hyperparameters: Option<FittedHyperparameters>,
    /// The priors the next fit maximises under, for the active data now (l_T's depends on
    /// their time span); none under `hyperpriors: none` and before a fit.
    pub hyperpriors: Option<HyperpriorSet>,
    /// The priors' standing, for prior selection over arms (paper 003).
    pub prior_selection: Option<PriorSelectionView>,
    /// The policy's saved state, without its prior-selection part (shown above instead).
    pub state: PolicyState,
}

/// The [`ModelReading`] of a session's history.
pub fn model_reading(history: &History) -> Result<ModelReading, EngineError> {
    let config = &history.session.config;
    let mut state = policy_state(&history.session)?;
    let prior_selection = match SessionPolicy::of(config) {
        SessionPolicy::Arms(selection) => {
            let saved = state
                .prior_selection
                .take()
                .unwrap_or_else(|| selection.initial_state());
            Some(PriorSelectionView::new(prior_names(config), saved))
        }
        SessionPolicy::Surrogate(_) | SessionPolicy::TimeVaryingArms(_) => None,
    };
    let hyperparameters = fitted_hyperparameters(config, &state);
    let hyperpriors =
        (hyperparameters.is_some() && config.model.hyperpriors == Hyperpriors::Robust).then(|| {
            let space = config.space();
            HyperpriorSet::robust(
                space.continuous_dim(),
                space.has_categorical(),
                history.active.iter().map(|o| o.t),
            )
        });
    Ok(ModelReading {
        hyperparameters,
        hyperpriors,
        prior_selection,
        state,
    })
}

/// The names of a session's priors, `prior-<i>` where a prior has none.
pub(crate) fn prior_names(config: &SessionConfig) -> Vec<String> {
    config
        .algorithm
        .priors()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, p)| p.name.clone().unwrap_or_else(|| format!("prior-{i}")))
        .collect()
}
