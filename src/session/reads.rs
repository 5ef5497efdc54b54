//! The read endpoints of a session: its observations, regret, model, predictions and
//! recommendation. Reads take no lock: they see the latest committed version.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::error::ServiceError;
use super::listing::ObservationListing;
use super::read_budget::HeldJson;
use super::read_model::cached_model;
use super::service::{MAX_PREDICT_POINTS, SessionService};
use crate::domain::InvalidInput;
use crate::domain::config::TimeSource;
use crate::domain::input::MAX_METADATA_BYTES;
use crate::domain::records::History;
use crate::domain::space::Params;
use crate::domain::time::{MAX_CLIENT_TIME, wall_time};
use crate::engine::lead;
use crate::engine::reads::{model_reading, relevance};
use crate::policy::response_time::fit_response_time;
use crate::session::views::{
    Best, ComputeTimeView, ModelView, Observation, ObservationList, PredictRequest,
    PredictResponse, Prediction, RegretReport, ResponseTimeSampleView, ResponseTimeView,
    SuggestResponse, Suggestion,
};
use crate::store::{ObservationQuery, ObservationSort, SortOrder};

/// JSON bytes of an observation in a listing besides its `params` and `metadata`, with
/// the comma before it.
const LISTED_OBSERVATION_BYTES: usize = 512;
/// A page of observations whose answer may be larger than a timeline's largest holds a
/// share of the replica's read budget while it is built and sent (a page of 10,000
/// observations with 4 KiB of metadata each is about 45 MB of JSON); a page of the
/// default 1000 never waits.
const LISTING_HELD_BYTES: usize = super::timeline::MAX_TIMELINE_BYTES as usize;
/// Memory a listing's answer takes while it is built and sent, per byte of its JSON: the
/// rows, their views and the JSON.
const LISTING_MEMORY_PER_BYTE: usize = 3;

impl SessionService {
    /// A page of the session's observations as `listing` filters, orders and places it,
    /// with how many match the filter, as JSON written off the async runtime; a page that
    /// may be large holds its share of the replica's read budget (waiting up to
    /// `READ_WAIT` for it, else [`ServiceError::ReadsBusy`]) until it is sent.
    pub async fn observations_json(
        &self,
        id: Uuid,
        listing: ObservationListing,
    ) -> Result<HeldJson, ServiceError> {
        let query = listing.query()?;
        let limit = query.limit.max(0) as usize;
        let session = self.session_row(id).await?;
        let row_bytes = LISTED_OBSERVATION_BYTES
            + super::timeline::params_bytes(&session.config) as usize
            + MAX_METADATA_BYTES;
        let largest = limit * row_bytes;
        let slot = match largest > LISTING_HELD_BYTES {
            true => Some(self.reads.share(largest * LISTING_MEMORY_PER_BYTE).await?),
            false => None,
        };
        let page = self.observation_page(id, query).await?;
        let json = tokio::task::spawn_blocking(move || serde_json::to_vec(&page))
            .await
            .map_err(|e| ServiceError::Internal(format!("listing task failed: {e}")))?
            .map_err(|e| ServiceError::Internal(format!("listing JSON: {e}")))?;
        Ok(HeldJson { json, slot })
    }

    /// The session's pending suggestions, oldest first.
    pub async fn pending_suggestions(&self, id: Uuid) -> Result<SuggestResponse, ServiceError> {
        self.session_row(id).await?;
        let rows = self.store.pending_suggestions(id).await?;
        Ok(SuggestResponse {
            suggestions: rows.iter().map(Suggestion::from).collect(),
        })
    }

    /// The page `query` selects of session `id`'s observations (the session known to
    /// exist), with how many match its filter.
    async fn observation_page(
        &self,
        id: Uuid,
        query: ObservationQuery,
    ) -> Result<ObservationList, ServiceError> {
        let limit = query.limit;
        let page = self
            .store
            .observation_page(
                id,
                &ObservationQuery {
                    limit: limit + 1,
                    ..query.clone()
                },
            )
            .await?;
        let more = page.rows.len() as i64 > limit;
        let observations: Vec<Observation> = page
            .rows
            .iter()
            .take(limit as usize)
            .map(Into::into)
            .collect();
        let in_seq_order = (query.sort, query.order) == (ObservationSort::Seq, SortOrder::Asc);
        let next_after = (more && in_seq_order)
            .then(|| observations.last().map(|o| o.seq))
            .flatten();
        Ok(ObservationList {
            observations,
            next_after,
            total: Some(page.total),
            failed: Vec::new(),
        })
    }

    /// Regret per observation: reported by the client, or estimated as
    /// max_x μ(x, t_i) − μ(x_i, t_i) under the current model ([`RegretReport::of`]).
    pub async fn regret(&self, id: Uuid) -> Result<RegretReport, ServiceError> {
        let history = self.history(id).await?;
        let rows = self.store.list_observations(id, 0, i64::MAX, true).await?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<RegretReport, ServiceError> {
            let model = cached_model(&cache, &history)?;
            Ok(RegretReport::of(
                &history.session.config,
                model.as_deref(),
                &history.active,
                &rows,
            ))
        })
        .await?
    }

    /// The model's hyperparameters, dataset, response-time samples and policy state
    /// ([`model_reading`], [`relevance`]).
    pub async fn model(&self, id: Uuid) -> Result<ModelView, ServiceError> {
        let history = self.history(id).await?;
        let summaries = self.store.response_time_summaries(id).await?;
        let calls = self.store.call_stats(id).await?;
        let t = Self::default_time(&history, Utc::now());
        let (dataset_size, lead) = (history.active.len() as i64, lead(&history));
        let cache = self.models.clone();
        let (reading, relevance) = self
            .blocking(id, move || -> Result<_, ServiceError> {
                let model = cached_model(&cache, &history)?;
                let relevance = relevance(model.as_deref(), &history.active, t)?;
                Ok((model_reading(&history)?, relevance))
            })
            .await??;
        Ok(ModelView {
            dataset_size,
            max_dataset_size: reading.state.max_dataset_size.map(|n| n as i64),
            hyperparameters: reading.hyperparameters,
            hyperpriors: reading.hyperpriors,
            lead,
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
            prior_selection: reading.prior_selection,
            algorithm_state: reading.state,
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
    pub async fn best(
        &self,
        id: Uuid,
        t: Option<f64>,
        mut fixed: Params,
    ) -> Result<Best, ServiceError> {
        let history = self.history(id).await?;
        let t = Self::query_time(&history, t)?;
        let space = history.session.config.space();
        // A context not given is the newest observation's: where the system is now.
        if let Some(newest) = history.active.iter().max_by_key(|o| o.seq) {
            for p in space.parameters().iter().filter(|p| p.context) {
                if let Some(value) = newest.params.get(&p.name) {
                    fixed.entry(p.name.clone()).or_insert_with(|| value.clone());
                }
            }
        }
        let coordinates = space.fixed_coordinates(&fixed)?;
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
            let (x, arm) = model.recommend(config, t, &coordinates, cores);
            let (mean, std) = model
                .predict(&x, t)
                .expect("the recommendation is one of the arms");
            // The values held, exactly (the unit cube's round trip may move the last digit).
            let mut params = space.from_unit(&x);
            params.extend(fixed);
            Ok(Best {
                t,
                params,
                arm,
                mean: config.goal.sign() * mean,
                std,
            })
        })
        .await?
    }
}
