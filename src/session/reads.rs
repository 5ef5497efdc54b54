//! The read endpoints of a session: its observations, regret, model, predictions and
//! recommendation. Reads take no lock: they see the latest committed version.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::error::ServiceError;
use super::read_model::cached_model;
use super::service::{MAX_PREDICT_POINTS, SessionService};
use crate::domain::InvalidInput;
use crate::domain::config::TimeSource;
use crate::domain::hyperpriors::{HyperpriorSet, Hyperpriors};
use crate::domain::records::History;
use crate::domain::time::{MAX_CLIENT_TIME, wall_time};
use crate::engine::regret::regrets;
use crate::engine::{CurrentModel, fitted_hyperparameters, lead, policy_state};
use crate::gp::relevance::relevances;
use crate::policy;
use crate::policy::response_time::fit_response_time;
use crate::session::views::{
    Best, ComputeTimeView, ModelView, ObservationList, PredictRequest, PredictResponse, Prediction,
    PriorSelectionView, RegretPoint, RegretReport, RelevanceView, ResponseTimeSampleView,
    ResponseTimeView,
};

impl SessionService {
    /// A page of observations with seq > `after`.
    pub async fn list_observations(
        &self,
        id: Uuid,
        after: i64,
        limit: i64,
        include_pruned: bool,
    ) -> Result<ObservationList, ServiceError> {
        if !(1..=10_000).contains(&limit) {
            return Err(InvalidInput::new("limit", "must be between 1 and 10000").into());
        }
        self.session_row(id).await?;
        let rows = self
            .store
            .list_observations(id, after, limit + 1, include_pruned)
            .await?;
        let more = rows.len() as i64 > limit;
        let observations: Vec<_> = rows.iter().take(limit as usize).map(Into::into).collect();
        let next_after = more
            .then(|| {
                observations
                    .last()
                    .map(|o: &crate::session::views::Observation| o.seq)
            })
            .flatten();
        Ok(ObservationList {
            observations,
            next_after,
        })
    }

    /// Regret per observation: reported by the client, or estimated as
    /// max_x μ(x, t_i) − μ(x_i, t_i) under the current model.
    pub async fn regret(&self, id: Uuid) -> Result<RegretReport, ServiceError> {
        let history = self.history(id).await?;
        let rows = self.store.list_observations(id, 0, i64::MAX, true).await?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<RegretReport, ServiceError> {
            let model = cached_model(&cache, &history)?;
            let regrets = regrets(
                &history.session.config,
                model.as_deref(),
                &history.active,
                &rows,
            );
            let mut cumulative = 0.0;
            let mut counted = 0usize;
            let points = rows
                .iter()
                .zip(regrets)
                .map(|(row, regret)| {
                    if let Some(r) = regret.value {
                        cumulative += r;
                        counted += 1;
                    }
                    RegretPoint {
                        seq: row.seq,
                        t: row.t,
                        value: row.value,
                        regret: regret.value,
                        estimated: regret.estimated,
                        active: row.active,
                        cumulative_regret: cumulative,
                    }
                })
                .collect();
            Ok(RegretReport {
                points,
                cumulative_regret: cumulative,
                average_regret: (counted > 0).then(|| cumulative / counted as f64),
            })
        })
        .await?
    }

    /// The model's hyperparameters, dataset, response-time samples and policy state.
    pub async fn model(&self, id: Uuid) -> Result<ModelView, ServiceError> {
        let history = self.history(id).await?;
        let summaries = self.store.response_time_summaries(id).await?;
        let relevance = {
            let history = history.clone();
            let t = Self::default_time(&history, Utc::now());
            let cache = self.models.clone();
            self.blocking(id, move || -> Result<Vec<RelevanceView>, ServiceError> {
                let model = cached_model(&cache, &history)?;
                let Some(CurrentModel::Surrogate(surrogate)) = model.as_deref() else {
                    return Ok(Vec::new());
                };
                if surrogate.gp().spec().temporal.is_none() {
                    return Ok(Vec::new());
                }
                let values = relevances(surrogate.gp(), t)?;
                Ok(history
                    .active
                    .iter()
                    .zip(values)
                    .map(|(o, relevance)| RelevanceView {
                        seq: o.seq,
                        relevance,
                    })
                    .collect())
            })
            .await??
        };
        let calls = self.store.call_stats(id).await?;
        let session = &history.session;
        let config = &session.config;
        let mut state = policy_state(session)?;
        let prior_selection = match policy::SessionPolicy::of(config) {
            policy::SessionPolicy::Arms(selection) => Some(selection),
            _ => None,
        }
        .map(|selection| {
            let names = config
                .algorithm
                .priors()
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(i, p)| p.name.clone().unwrap_or_else(|| format!("prior-{i}")))
                .collect();
            let saved = state
                .prior_selection
                .take()
                .unwrap_or_else(|| selection.initial_state());
            PriorSelectionView::new(names, saved)
        });
        let hyperparameters = fitted_hyperparameters(config, &state);
        let hyperpriors = (hyperparameters.is_some()
            && config.model.hyperpriors == Hyperpriors::Robust)
            .then(|| {
                HyperpriorSet::robust(config.parameters.len(), history.active.iter().map(|o| o.t))
            });
        Ok(ModelView {
            dataset_size: history.active.len() as i64,
            max_dataset_size: state.max_dataset_size.map(|n| n as i64),
            hyperparameters,
            hyperpriors,
            lead: lead(&history),
            response_time: ResponseTimeView {
                coefficients: fit_response_time(&summaries),
                samples: summaries
                    .iter()
                    .map(|s| ResponseTimeSampleView {
                        n: s.n,
                        seconds: s.mean_seconds(),
                        count: s.count,
                    })
                    .collect(),
            },
            compute_time: calls
                .into_iter()
                .map(|c| ComputeTimeView {
                    kind: c.kind,
                    count: c.count,
                    mean_seconds: c.mean_seconds,
                    max_seconds: c.max_seconds,
                })
                .collect(),
            relevance,
            prior_selection,
            algorithm_state: state,
        })
    }

    /// The time predict and best use when the client gives none.
    fn default_time(history: &History, now: DateTime<Utc>) -> f64 {
        match history.session.config.time.source {
            TimeSource::Wall => wall_time(history.session.created_at, now),
            TimeSource::Client => history.active.iter().map(|o| o.t).fold(0.0, f64::max),
        }
    }

    fn query_time(history: &History, t: Option<f64>) -> Result<f64, ServiceError> {
        match t {
            // The same bound as a client's time: far beyond it the kernels' distances
            // overflow and the posterior is NaN.
            Some(t) if !t.is_finite() || t.abs() > MAX_CLIENT_TIME => Err(InvalidInput::new(
                "t",
                format!("must be a finite number of seconds within ±{MAX_CLIENT_TIME:e}"),
            )
            .into()),
            Some(t) => Ok(t),
            None => Ok(Self::default_time(history, Utc::now())),
        }
    }

    /// Posterior mean and standard deviation of the objective at the given points.
    pub async fn predict(
        &self,
        id: Uuid,
        request: PredictRequest,
    ) -> Result<PredictResponse, ServiceError> {
        if request.points.is_empty() || request.points.len() > MAX_PREDICT_POINTS {
            return Err(InvalidInput::new(
                "points",
                format!("must hold 1 to {MAX_PREDICT_POINTS} points"),
            )
            .into());
        }
        let history = self.history(id).await?;
        let t = Self::query_time(&history, request.t)?;
        let space = history.session.config.space();
        let units = request
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| space.to_unit(p, &format!("points[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<PredictResponse, ServiceError> {
            let config = &history.session.config;
            let model = cached_model(&cache, &history)?.ok_or_else(|| {
                ServiceError::Conflict(InvalidInput::new(
                    "session",
                    "has no active observations to predict from",
                ))
            })?;
            let sign = config.goal.sign();
            let predictions = request
                .points
                .into_iter()
                .zip(&units)
                .enumerate()
                .map(|(i, (params, x))| {
                    let (mean, std) = model.predict(x, t).ok_or_else(|| {
                        InvalidInput::new(
                            format!("points[{i}]"),
                            "is not one of this session's arms (its model lives on the arms)",
                        )
                    })?;
                    Ok(Prediction {
                        params,
                        mean: sign * mean,
                        std,
                    })
                })
                .collect::<Result<_, InvalidInput>>()?;
            Ok(PredictResponse { t, predictions })
        })
        .await?
    }

    /// The maximiser of the posterior mean at time t (the arm with the best mean for arm
    /// sessions).
    pub async fn best(&self, id: Uuid, t: Option<f64>) -> Result<Best, ServiceError> {
        let history = self.history(id).await?;
        let t = Self::query_time(&history, t)?;
        let cache = self.models.clone();
        self.blocking_on_cores(id, move |cores| -> Result<Best, ServiceError> {
            let config = &history.session.config;
            let model = cached_model(&cache, &history)?.ok_or_else(|| {
                ServiceError::Conflict(InvalidInput::new(
                    "session",
                    "has no active observations to recommend from",
                ))
            })?;
            let space = config.space();
            let (x, arm) = model.recommend(config, t, cores);
            let (mean, std) = model
                .predict(&x, t)
                .expect("the recommendation is one of the arms");
            Ok(Best {
                t,
                params: space.from_unit(&x),
                arm,
                mean: config.goal.sign() * mean,
                std,
            })
        })
        .await?
    }
}
