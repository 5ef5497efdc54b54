//! Drift events (docs/events.md): what a step found that an operator should be told,
//! stored with the step (an outbox, in the step's transaction) and listed by
//! `GET /v1/sessions/{id}/events`.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::domain::space::Params;

/// The kinds of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The recommendation (the posterior mean's maximiser a suggest records) moved
    /// farther than `events.optimum_moved.distance` (default [`OPTIMUM_MOVED_DISTANCE`])
    /// from where it stood at the last such event, and stayed there for
    /// `events.optimum_moved.persistence` (default [`OPTIMUM_MOVED_PERSISTENCE`]) suggests.
    OptimumMoved,
    /// R-GP-UCB or ET-GP-UCB reset its model: every observation before was forgotten.
    ModelReset,
    /// A session whose algorithm keeps its observations (all but BOLT) reached the
    /// server's cap on active observations: further observes are refused.
    DatasetFull,
    /// PE-GP-UCB or PE-GP-TS eliminated a prior from its active set.
    PriorEliminated,
    /// No observation arrived for the session's `events.idle_seconds`: raised by the
    /// server's idle scan, not by a step ([`session_idle`]).
    SessionIdle,
    /// The newest window of regrets rose beyond the noise over the window before it
    /// ([`TrackingState`]).
    TrackingLost,
    /// After a `tracking-lost`, the newest window of regrets is back near the level
    /// before the loss ([`TrackingState`]).
    TrackingRegained,
    /// The fitted temporal lengthscale moved by `events.drift_rate_factor` from its
    /// reference, for [`DRIFT_RATE_PERSISTENCE`] fits in a row ([`RateState`]).
    DriftRateChanged,
}

impl EventKind {
    /// Every kind, in the order docs/events.md lists them.
    pub const ALL: [EventKind; 8] = [
        EventKind::OptimumMoved,
        EventKind::TrackingLost,
        EventKind::TrackingRegained,
        EventKind::DriftRateChanged,
        EventKind::ModelReset,
        EventKind::DatasetFull,
        EventKind::PriorEliminated,
        EventKind::SessionIdle,
    ];

    /// The kind of this name ([`EventKind::as_str`]), if any.
    pub fn named(name: &str) -> Option<EventKind> {
        EventKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// The name the API and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::OptimumMoved => "optimum-moved",
            EventKind::ModelReset => "model-reset",
            EventKind::DatasetFull => "dataset-full",
            EventKind::PriorEliminated => "prior-eliminated",
            EventKind::SessionIdle => "session-idle",
            EventKind::TrackingLost => "tracking-lost",
            EventKind::TrackingRegained => "tracking-regained",
            EventKind::DriftRateChanged => "drift-rate-changed",
        }
    }
}

/// An event a step found, before it is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    pub kind: EventKind,
    /// Session time of the step that found it.
    pub t: f64,
    /// What the kind says of it (docs/events.md).
    pub data: serde_json::Value,
}

/// An event as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// The session's events count from 1, in the order their steps were committed.
    pub seq: i64,
    /// The id of the step (call) that found it, as `GET …/steps` lists it.
    pub step: i64,
    /// An [`EventKind`]'s name, kept as stored (a newer replica may write kinds this one
    /// does not know).
    pub kind: String,
    pub t: f64,
    pub data: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// The kind of an event whose stored row does not read back (damaged by hand, a script or
/// a failing disk): listed, streamed and logged as a marker in its place, so that one
/// damaged row stops nothing after it; never delivered to a webhook.
pub const UNREADABLE_KIND: &str = "unreadable";

impl StoredEvent {
    /// The marker of event `seq` whose row does not read back because of `reason`: kind
    /// [`UNREADABLE_KIND`], `data` `{"error": reason}`, step, time and date those of the
    /// row where they read back (else 0, 0 and the epoch).
    pub fn unreadable(
        seq: i64,
        step: Option<i64>,
        t: Option<f64>,
        created_at: Option<DateTime<Utc>>,
        reason: String,
    ) -> StoredEvent {
        StoredEvent {
            seq,
            step: step.unwrap_or(0),
            kind: UNREADABLE_KIND.to_string(),
            t: t.filter(|t| t.is_finite()).unwrap_or(0.0),
            data: serde_json::json!({ "error": reason }),
            created_at: created_at.unwrap_or(DateTime::UNIX_EPOCH),
        }
    }

    /// Whether this is the marker of a row that does not read back.
    pub fn is_unreadable(&self) -> bool {
        self.kind == UNREADABLE_KIND
    }
}

/// The `session-idle` event the server's scan raises at session time `t` (the session's
/// newest step's) for a session whose threshold is `idle_seconds` (its
/// `events.idle_seconds`) and whose newest observation, at `last_observation_at` (none:
/// it has none), is `silent_seconds` old. `data`: the three, by those names.
pub fn session_idle(
    idle_seconds: f64,
    silent_seconds: f64,
    last_observation_at: Option<DateTime<Utc>>,
    t: f64,
) -> NewEvent {
    NewEvent {
        kind: EventKind::SessionIdle,
        t,
        data: json!({
            "idle_seconds": idle_seconds,
            "silent_seconds": silent_seconds,
            "last_observation_at": last_observation_at,
        }),
    }
}

/// Default of `events.optimum_moved.distance`: how far the recommendation must move, in
/// the unit cube's largest coordinate change, to be an `optimum-moved` event: a fifth of a
/// parameter's range.
pub const OPTIMUM_MOVED_DISTANCE: f64 = 0.2;

/// Default of `events.optimum_moved.persistence`: how many consecutive suggests the
/// recommendation must stand away from the last reference (and near itself) before `optimum-moved` is found; as many to settle a
/// first reference. A single suggest's argmax can jump between two near-equal maxima of
/// a noisy posterior; three in a row cannot, by chance, often.
pub const OPTIMUM_MOVED_PERSISTENCE: u32 = 3;

/// Default of `events.tracking.window`: regrets per window of the tracking comparison.
pub const TRACKING_WINDOW: u32 = 32;

/// Bounds of `events.tracking.window` (and the fewest regrets [`WindowStats::of`] takes):
/// 8 regrets at least, for a standard error worth the name.
pub const TRACKING_WINDOW_BOUNDS: (u32, u32) = (8, 1024);

/// Default of `events.tracking.rise`, in standard errors. The comparison runs once per
/// window of regrets, 62 times in 2,000 observations: at 3 standard errors an i.i.d.
/// regret (normal, half-normal, exponential or log-normal) found a `tracking-lost` in 3.5
/// to 11.5 % of 2,000-observation runs, at 4 in 0 to 0.5 % (200 runs each;
/// docs/events.md).
pub const TRACKING_RISE: f64 = 4.0;

/// Default of `events.tracking.hysteresis`, in standard errors.
pub const TRACKING_HYSTERESIS: f64 = 1.0;

/// The least rise of the newest window's mean regret over the window before, as a
/// fraction of the earlier mean, for a `tracking-lost`: a regret that hardly varies has a
/// tiny standard error, and a rise of a few of them is no news.
pub const TRACKING_RELATIVE_RISE: f64 = 0.1;

/// Default of `events.drift_rate_factor`.
pub const DRIFT_RATE_FACTOR: f64 = 2.0;

/// How many consecutive fits the temporal lengthscale must stand the factor away from its
/// reference (and within it of the fit before) for a `drift-rate-changed`; as many to
/// settle a first reference. One fit of l_T on a few hundred noisy points can be off by
/// a factor of 2; three in a row, in the same direction, rarely are.
pub const DRIFT_RATE_PERSISTENCE: u32 = 3;

/// Default of `events.idle_seconds`: an hour.
pub const IDLE_SECONDS: f64 = 3600.0;
/// Least `events.idle_seconds`: the server looks for silent sessions every 15 s, and a
/// smaller threshold would raise an event at every pause between two observations.
pub const MIN_IDLE_SECONDS: f64 = 60.0;

/// A recommendation as the drift events compare it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecommendationAt {
    /// In the unit cube.
    pub x: Vec<f64>,
    pub params: Params,
    /// The posterior mean there, in the objective's units and sign.
    pub mean: f64,
    pub t: f64,
    /// The coordinates its suggest held (context parameters and any other `fixed`), in
    /// order: the recommendation is the best setting of the others at those values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<usize>,
}

/// What the drift events carry from step to step (in the policy's saved state).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DriftState {
    /// Where the recommendation stood at the last `optimum-moved` event (or where it first
    /// settled); none until it settles, and again after a model reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RecommendationAt>,
    /// The newest recommendation away from the reference (or, while settling, the newest
    /// one), and for how many consecutive suggests it has stood near where it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<RecommendationAt>,
    #[serde(default)]
    pub streak: u32,
    /// The newest regrets and whether tracking is lost (`tracking-lost`,
    /// `tracking-regained`).
    #[serde(default, skip_serializing_if = "TrackingState::is_empty")]
    pub tracking: TrackingState,
    /// The temporal lengthscale's reference and candidate (`drift-rate-changed`).
    #[serde(default, skip_serializing_if = "RateState::is_empty")]
    pub rate: RateState,
}

/// What `tracking-lost` and `tracking-regained` carry from step to step.
///
/// The rule, with `window`, `rise` and `hysteresis` of `events.tracking`: each observation
/// adds its regret (reported, else the estimate its observe step made against the
/// optimum the last suggest recorded; an observation with neither adds none). Once per
/// `window` regrets, the newest `window` are compared with the `window` before them:
/// - not lost: `tracking-lost` when the newest mean exceeds the earlier one by more than
///   `rise` standard errors of the difference (Welch's, [`WindowStats::rise_over`]) and by
///   more than [`TRACKING_RELATIVE_RISE`] of the earlier mean; the earlier window is the
///   reference level the loss keeps;
/// - lost: `tracking-regained` when the newest mean is back within `hysteresis` standard
///   errors (of the newest window and the reference window, Welch's) of the reference
///   mean. The band between `hysteresis` and `rise` keeps the two from flapping.
///
/// Once per window, not at every observation: the comparisons of successive observations
/// share all but one regret, and checking each multiplies the chances of a noisy rise
/// (2,000 i.i.d. regrets cross 3 standard errors somewhere in 40 to 70 % of runs when
/// checked at every observation, docs/events.md). A model reset clears the regrets (the model
/// starts over, its first regrets are no measure of tracking), not the loss.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrackingState {
    /// The newest regrets, oldest first: at most 2 × `window`.
    #[serde(default)]
    pub regrets: VecDeque<f64>,
    /// Regrets added since the session started, or since the last reset: the comparison
    /// runs when it is a multiple of `window`.
    #[serde(default)]
    pub count: u64,
    /// The loss being tracked, while it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<TrackingLoss>,
}

impl TrackingState {
    fn is_empty(&self) -> bool {
        *self == TrackingState::default()
    }
}

/// A `tracking-lost` and the level it is measured from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrackingLoss {
    /// The earlier window of the loss: the reference level.
    pub reference: WindowStats,
    /// Session time of the step that found the loss.
    pub t: f64,
}

/// What `drift-rate-changed` carries from step to step.
///
/// The rule, with `factor` = `events.drift_rate_factor`: each fit of a session whose
/// model has a temporal lengthscale l_T (BOLT, W-DBO, TV-GP-UCB; TV-GP-UCB's ε is
/// 1 − e^(−2/l_T)) is *resolved* when l_T is below the time span of the data it was
/// fitted to: a fit with l_T at or above it says only that the data show no drift over
/// their window (on a static objective the fitted l_T grows with the span, at 10 to 250
/// times it in our runs of BOLT, W-DBO and TV-GP-UCB), and breaks the count below. A first reference
/// settles, without an event, once [`DRIFT_RATE_PERSISTENCE`] consecutive resolved fits
/// lie within `factor` of each other in turn; then `drift-rate-changed` is found when as
/// many consecutive resolved fits stand at least `factor` from the reference (l_T ≥
/// factor × reference, or ≤ reference / factor) and within `factor` of each other in turn:
/// the last becomes the reference. A fit back within `factor` of the reference clears the
/// count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateState {
    /// l_T at the last `drift-rate-changed` (or where it first settled), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<f64>,
    /// The newest resolved l_T away from the reference (while settling, the newest one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<f64>,
    #[serde(default)]
    pub streak: u32,
}

impl RateState {
    fn is_empty(&self) -> bool {
        *self == RateState::default()
    }
}

/// The mean of a window of regrets and its standard error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowStats {
    pub mean: f64,
    /// s/√n, s the sample standard deviation (n − 1 in its denominator).
    pub standard_error: f64,
}

impl WindowStats {
    /// The statistics of `values`; `None` below [`TRACKING_WINDOW_BOUNDS`]' least window.
    pub fn of(values: &[f64]) -> Option<WindowStats> {
        if values.len() < TRACKING_WINDOW_BOUNDS.0 as usize {
            return None;
        }
        let n = values.len() as f64;
        let mean = mean(values)?;
        let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
        Some(WindowStats {
            mean,
            standard_error: (variance / n).sqrt(),
        })
    }

    /// The rise of this window's mean over an `earlier` window's, and the standard error
    /// of that difference: Welch's, √(se₁² + se₂²), for windows whose variances may
    /// differ.
    pub fn rise_over(&self, earlier: &WindowStats) -> (f64, f64) {
        (
            self.mean - earlier.mean,
            self.standard_error.hypot(earlier.standard_error),
        )
    }

    /// Whether this window's mean rose over an `earlier` window's by more than
    /// `standard_errors` standard errors of the difference and by more than
    /// [`TRACKING_RELATIVE_RISE`] of the earlier mean.
    pub fn rose_beyond(&self, earlier: &WindowStats, standard_errors: f64) -> bool {
        let (rise, standard_error) = self.rise_over(earlier);
        rise > standard_errors * standard_error && rise > TRACKING_RELATIVE_RISE * earlier.mean
    }
}

/// The mean of `values`; `None` when there are none.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod kind_tests {
    use super::EventKind;

    #[test]
    fn every_kind_is_named_once_and_found_by_its_name() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::named(kind.as_str()), Some(kind));
            let same = EventKind::ALL
                .iter()
                .filter(|k| k.as_str() == kind.as_str());
            assert_eq!(same.count(), 1, "{}", kind.as_str());
        }
        assert_eq!(EventKind::named("optimum_moved"), None);
    }
}
