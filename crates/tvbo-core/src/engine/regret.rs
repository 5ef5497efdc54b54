//! Regret of a session's observations, read from its current model: reported by the
//! client, or estimated as max_x μ(x, t_i) − μ(x_i, t_i).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::CurrentModel;
use crate::domain::checked::CheckedConfig;
use crate::domain::records::ObservationRow;

/// Quasi-random candidates over which regret estimates search the posterior mean's maximum.
pub const REGRET_CANDIDATES: usize = 256;

/// The regret of one observation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Regret {
    /// The regret, if known: reported, or estimated under a model.
    pub value: Option<f64>,
    /// Whether it is an estimate (or would be, had the session a model).
    pub estimated: bool,
}

/// One point of the regret curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegretPoint {
    pub seq: i64,
    pub t: f64,
    pub value: f64,
    /// Reported by the client, or estimated from the model (null when no model exists).
    pub regret: Option<f64>,
    pub estimated: bool,
    /// Whether the observation is in the model's dataset.
    pub active: bool,
    /// Sum of the regrets up to this point.
    pub cumulative_regret: f64,
}

/// The regret of every observation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegretReport {
    pub points: Vec<RegretPoint>,
    pub cumulative_regret: f64,
    /// Cumulative regret over the points that have one (null when none has).
    pub average_regret: Option<f64>,
}

impl RegretReport {
    /// The regret curve of a session's observations `rows` ([`regrets`]), with the running
    /// sum and the mean over the points that have a regret.
    pub fn of(
        config: &CheckedConfig,
        model: Option<&CurrentModel>,
        active: &[ObservationRow],
        rows: &[ObservationRow],
    ) -> RegretReport {
        let mut cumulative = 0.0;
        let mut counted = 0usize;
        let points = rows
            .iter()
            .zip(regrets(config, model, active, rows))
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
        RegretReport {
            points,
            cumulative_regret: cumulative,
            average_regret: (counted > 0).then(|| cumulative / counted as f64),
        }
    }
}

/// The regret of each of `rows` at its time: the client's where it reported one, else
/// max_x μ(x, t_i) − μ(x_i, t_i) (at least 0) under `model`, the maximum taken over the
/// session's arms, or over [`REGRET_CANDIDATES`] Sobol points and the `active`
/// observations' inputs (a simplification of a full optimisation per observation,
/// docs/architecture.md). Without a model, unknown.
pub fn regrets(
    config: &CheckedConfig,
    model: Option<&CurrentModel>,
    active: &[ObservationRow],
    rows: &[ObservationRow],
) -> Vec<Regret> {
    let candidates = config.arms().map_or_else(
        || {
            let dim = config.parameters.len() as u32;
            let mut points: Vec<Vec<f64>> = (0..REGRET_CANDIDATES as u32)
                .map(|i| {
                    (0..dim)
                        .map(|d| f64::from(sobol_burley::sample(i, d, 0x7476_626f)))
                        .collect()
                })
                .collect();
            points.extend(active.iter().map(|o| o.unit.clone()));
            points
        },
        |arms| arms.points.clone(),
    );
    let mut best_by_time: HashMap<u64, f64> = HashMap::new();
    let uses_time = model.is_some_and(CurrentModel::uses_time);
    rows.iter()
        .map(|row| match (row.regret, model) {
            (Some(r), _) => Regret {
                value: Some(r),
                estimated: false,
            },
            (None, None) => Regret {
                value: None,
                estimated: true,
            },
            (None, Some(model)) => {
                let t = row.t;
                let key = if uses_time { t.to_bits() } else { 0 };
                let best = *best_by_time.entry(key).or_insert_with(|| {
                    candidates
                        .iter()
                        .map(|x| model.mean(x, t))
                        .fold(f64::NEG_INFINITY, f64::max)
                });
                let here = model.mean(&row.unit, t);
                Regret {
                    value: Some((best.max(here) - here).max(0.0)),
                    estimated: true,
                }
            }
        })
        .collect()
}
