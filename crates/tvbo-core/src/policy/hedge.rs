//! `algorithm.beta: "hedge"`: the exploration weight chosen from its own results, by
//! GP-Hedge (Hoffman, Brochu & de Freitas 2011, "Portfolio allocation for Bayesian
//! optimization", Algorithm 2) over a portfolio of UCB weights.
//!
//! Each suggest, every member k of the portfolio β_k = β / 4^k (β W-DBO's schedule
//! 0.2·d·ln(2n), k = 0, 1, 2) nominates its UCB maximiser, and one nominee is taken with
//! probability ∝ exp(η g_k). At the next suggest, with the model that has seen what was
//! measured since, each member is rewarded with the posterior mean at its nominee, now:
//! g_k ← γ g_k + μ(x_k, t) (Algorithm 2, line 8, on the standardised scale). The paper's
//! gains never age (γ = 1); here they age as an observation does in the model, γ the
//! temporal kernel's correlation over the time between the two suggests (1 for a kernel
//! without time), so that what a weight earned before the objective moved counts as
//! little as the data of that time. docs/decisions/0014-hedged-exploration.md.

use serde::{Deserialize, Serialize};

use super::{PolicyRng, Surrogate};
use rand::RngExt;

/// What β is divided by for each member of the portfolio.
pub const PORTFOLIO_DIVISORS: [f64; 3] = [1.0, 4.0, 16.0];

/// η of Algorithm 2: the gains are on the standardised scale, where 1 is one standard
/// deviation of the values (scikit-optimize's `gp_hedge` default, on standardised
/// values too).
pub const HEDGE_ETA: f64 = 1.0;

/// The portfolio's gains and the last suggest's nominees (kept with the session).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HedgeState {
    /// g_k, one per member of [`PORTFOLIO_DIVISORS`].
    pub gains: Vec<f64>,
    /// The unit-cube nominee of every member at the last suggest.
    pub nominees: Vec<Vec<f64>>,
    /// Session time of the last suggest.
    pub t: f64,
    /// The member whose nominee the last suggest took.
    pub chosen: usize,
}

impl HedgeState {
    /// Rewards the last suggest's nominees with `model`'s posterior mean at them at time
    /// `t`, after ageing the gains by the temporal correlation over the time since.
    pub fn reward(&mut self, model: &Surrogate, t: f64) {
        if self.nominees.len() != PORTFOLIO_DIVISORS.len() {
            return;
        }
        let spec = model.gp().spec();
        let lengthscale = model.hyperparameters().temporal_lengthscale;
        let age = spec.temporal_correlation((t - self.t).abs() / lengthscale);
        let means = model.gp().predict_mean_many(&self.nominees, t);
        self.gains.resize(PORTFOLIO_DIVISORS.len(), 0.0);
        for (gain, mean) in self.gains.iter_mut().zip(means) {
            if mean.is_finite() && age.is_finite() {
                *gain = age * *gain + mean;
            }
        }
    }

    /// Takes one of `nominees` (one per member) with probability ∝ exp(η g_k), keeps them
    /// for the next reward, and returns the member taken.
    pub fn choose(&mut self, nominees: Vec<Vec<f64>>, t: f64, rng: &mut PolicyRng) -> usize {
        let chosen = draw(&self.gains, rng);
        self.nominees = nominees;
        self.t = t;
        self.chosen = chosen;
        chosen
    }
}

/// A member drawn with probability ∝ exp(η g_k) (uniformly before any gain).
fn draw(gains: &[f64], rng: &mut PolicyRng) -> usize {
    let members = PORTFOLIO_DIVISORS.len();
    if gains.len() != members {
        return rng.random_range(0..members);
    }
    let top = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = gains
        .iter()
        .map(|g| (HEDGE_ETA * (g - top)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (k, w) in weights.iter().enumerate() {
        if u < *w {
            return k;
        }
        u -= w;
    }
    members - 1
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;

    use super::*;
    use crate::domain::checked::CheckedConfig;
    use crate::domain::config::CreateSession;
    use crate::policy::{Observation, PolicyState, SuggestContext, policy_for, suggest};

    fn hedged_bolt() -> CheckedConfig {
        let request: CreateSession = serde_json::from_value(json!({
            "parameters": [{"name": "a", "low": 0, "high": 1}, {"name": "b", "low": 0, "high": 1}],
            "algorithm": {"name": "bolt", "beta": "hedge"},
            "model": {"warmup": 0},
            "time": {"source": "client"}
        }))
        .unwrap();
        CheckedConfig::from_request(request, 0).unwrap()
    }

    /// One suggest of `config` on `data` at time `t` from `state`.
    fn suggest_at(
        config: &CheckedConfig,
        data: &[Observation],
        t: f64,
        state: &mut PolicyState,
    ) -> crate::policy::Proposed {
        let ctx = SuggestContext {
            space: config.space(),
            arms: None,
            model: &config.model,
            data,
            pending: &[],
            t,
            count: 1,
            issued_before: data.len() as u64 + 1,
            fixed_noise: None,
            cores: &1,
            fixed: &[],
            beside: None,
        };
        let policy = policy_for(config);
        let mut rng = PolicyRng::seed_from_u64(t as u64);
        suggest(policy.as_ref(), &ctx, state, &mut rng).unwrap()
    }

    /// A suggest takes one of the three members' nominees and keeps them all; the next
    /// rewards each with the new model's posterior mean at it (Algorithm 2, line 8).
    #[test]
    fn a_hedged_suggest_takes_a_nominee_and_the_next_rewards_them_all() {
        let config = hedged_bolt();
        let mut data: Vec<Observation> = (0..30)
            .map(|i| {
                let x = vec![(i * 7 % 30) as f64 / 30.0, (i * 11 % 30) as f64 / 30.0];
                let y = -(x[0] - 0.3f64).powi(2) - (x[1] - 0.6f64).powi(2);
                Observation {
                    seq: i + 1,
                    x,
                    t: i as f64,
                    y,
                }
            })
            .collect();
        let mut state = PolicyState::default();
        let first = suggest_at(&config, &data, 30.0, &mut state);
        let hedge = state.hedge.clone().expect("the hedge's state");
        assert_eq!(hedge.nominees.len(), PORTFOLIO_DIVISORS.len());
        assert_eq!(first.proposals[0].x, hedge.nominees[hedge.chosen]);
        assert!(hedge.gains.is_empty(), "nothing to reward yet");
        data.push(Observation {
            seq: 31,
            x: first.proposals[0].x.clone(),
            t: 30.0,
            y: -0.01,
        });
        let second = suggest_at(&config, &data, 31.0, &mut state);
        let model = second.model.expect("the model of the data alone");
        let means = model.gp().predict_mean_many(&hedge.nominees, 31.0);
        let gains = &state.hedge.as_ref().unwrap().gains;
        assert_eq!(gains.len(), PORTFOLIO_DIVISORS.len());
        for (gain, mean) in gains.iter().zip(means) {
            assert!((gain - mean).abs() < 1e-12, "{gain} vs {mean}");
        }
    }

    /// Gains age by the temporal correlation over the time since they were earned.
    #[test]
    fn gains_age_with_the_model_temporal_correlation() {
        let config = hedged_bolt();
        let data: Vec<Observation> = (0..20)
            .map(|i| Observation {
                seq: i + 1,
                x: vec![(i * 3 % 20) as f64 / 20.0, (i * 7 % 20) as f64 / 20.0],
                t: i as f64,
                y: (i * 3 % 20) as f64 / 20.0,
            })
            .collect();
        let mut state = PolicyState::default();
        suggest_at(&config, &data, 20.0, &mut state);
        let mut hedge = state.hedge.clone().unwrap();
        hedge.gains = vec![2.0, -1.0, 0.5];
        state.hedge = Some(hedge.clone());
        let later = 20.0 + 50.0;
        let proposed = suggest_at(&config, &data, later, &mut state);
        let model = proposed.model.unwrap();
        let spec = model.gp().spec();
        let l_t = model.hyperparameters().temporal_lengthscale;
        let age = spec.temporal_correlation(50.0 / l_t);
        assert!(age < 1.0);
        let means = model.gp().predict_mean_many(&hedge.nominees, later);
        let gains = &state.hedge.as_ref().unwrap().gains;
        for k in 0..3 {
            let expected = age * hedge.gains[k] + means[k];
            assert!((gains[k] - expected).abs() < 1e-12, "{k}");
        }
    }

    #[test]
    fn the_draw_follows_the_softmax_of_the_gains() {
        let mut rng = PolicyRng::seed_from_u64(7);
        let gains = [0.0, 1.0, -1.0];
        let draws = 60_000;
        let mut counts = [0usize; 3];
        for _ in 0..draws {
            counts[draw(&gains, &mut rng)] += 1;
        }
        let z: f64 = gains.iter().map(|g: &f64| g.exp()).sum();
        for k in 0..3 {
            let expected = gains[k].exp() / z;
            let seen = counts[k] as f64 / draws as f64;
            assert!(
                (seen - expected).abs() < 0.01,
                "member {k}: {seen} vs {expected}"
            );
        }
    }

    #[test]
    fn a_first_draw_is_uniform() {
        let mut rng = PolicyRng::seed_from_u64(8);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[draw(&[], &mut rng)] += 1;
        }
        for c in counts {
            assert!((c as f64 / 30_000.0 - 1.0 / 3.0).abs() < 0.015);
        }
    }
}
