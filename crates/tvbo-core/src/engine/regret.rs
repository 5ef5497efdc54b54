//! Regret of a session's observations, read from its current model: reported by the
//! client, or estimated as max_x μ(x, t_i) − μ(x_i, t_i).

use std::collections::HashMap;

use super::CurrentModel;
use crate::domain::config::SessionConfig;
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

/// The regret of each of `rows` at its time: the client's where it reported one, else
/// max_x μ(x, t_i) − μ(x_i, t_i) (at least 0) under `model`, the maximum taken over the
/// session's arms, or over [`REGRET_CANDIDATES`] Sobol points and the `active`
/// observations' inputs (a simplification of a full optimisation per observation,
/// docs/architecture.md). Without a model, unknown.
pub fn regrets(
    config: &SessionConfig,
    model: Option<&CurrentModel>,
    active: &[ObservationRow],
    rows: &[ObservationRow],
) -> Vec<Regret> {
    let candidates = config.arm_points().unwrap_or_else(|| {
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
    });
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
