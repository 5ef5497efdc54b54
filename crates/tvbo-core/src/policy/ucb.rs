//! The UCB step shared by the GP-UCB family (fit, hallucinate the pending points,
//! maximise μ + √β σ), the β schedules' values, and the model BOLT's and W-DBO's
//! forgetting read after an observe.

use super::surrogate::search_start;
use super::{
    FitSettings, Observation, ObserveContext, Policy, PolicyError, PolicyRng, PolicyState,
    Proposal, Proposed, SuggestContext, Surrogate, random_proposal,
};
use crate::acquisition::{self, AcquisitionOptions};
use crate::domain::config::{Beta, BetaSchedule};
use crate::domain::hyperpriors::Hyperpriors;
use crate::gp::KernelSpec;

/// The exploration weight β for a dataset of `n` points in `dim` dimensions.
pub fn beta_value(beta: Beta, dim: usize, n: usize, arms: Option<usize>) -> f64 {
    match beta {
        Beta::Constant(b) => b,
        Beta::Schedule(BetaSchedule::Wdbo) => acquisition::beta_wdbo(dim, n.max(1)),
        Beta::Schedule(BetaSchedule::Srinivas) => match arms {
            Some(arms) => {
                acquisition::beta_srinivas_finite(arms, n + 1, acquisition::SRINIVAS_DEFAULT_DELTA)
            }
            None => acquisition::beta_srinivas_continuous(
                dim,
                n + 1,
                acquisition::SRINIVAS_DEFAULT_DELTA,
                acquisition::SRINIVAS_DEFAULT_A,
                acquisition::SRINIVAS_DEFAULT_B,
                acquisition::SRINIVAS_DEFAULT_R,
            ),
        },
    }
}

/// The model of the active data after this call's observations, with the saved
/// hyperparameters (fitted now when there are none yet), for the
/// relevance-based forgetting of BOLT and W-DBO.
pub(crate) fn model_after(
    policy: &dyn Policy,
    ctx: &ObserveContext<'_>,
    state: &mut PolicyState,
) -> Result<(Vec<Observation>, Surrogate), PolicyError> {
    let data: Vec<Observation> = ctx.data.iter().chain(ctx.new).cloned().collect();
    let dim = data.first().map_or(0, |o| o.x.len());
    let spec = policy.model_kernel(ctx.model, ctx.space);
    let surrogate = match state.hyperparameters {
        Some(hyper) => Surrogate::with_hyperparameters(spec, dim, &data, hyper, ctx.model.warping)?,
        None => {
            let surrogate = Surrogate::fit(
                spec,
                dim,
                &data,
                &FitSettings {
                    fixed_temporal_lengthscale: policy.fixed_temporal_lengthscale(),
                    ..FitSettings::from_default_start(ctx.fixed_noise, ctx.model)
                },
            )?;
            state.hyperparameters = Some(*surrogate.hyperparameters());
            state.last_fit = Some(surrogate.fit_report().clone());
            surrogate
        }
    };
    Ok((data, surrogate))
}

/// The UCB step shared by the GP-UCB family: fit the model to the data, add the pending
/// points as hallucinated observations (GP-BUCB, Desautels et al. 2014: y = μ(x), which
/// leaves the mean unchanged and shrinks the variance), and pick `count` maximisers of
/// μ + √β σ at the target time, each hallucinated before the next.
///
/// Under `model.hyperpriors: robust`, a fit whose model stays flat in space after the
/// guard's second start (l_S at its upper bound: the data cannot tell points apart, and
/// UCB's maximiser would be an artefact, typically a corner) is answered by uniform
/// random proposals instead, which give the next fit spread-out data
/// ([`crate::domain::hyperpriors::FitReport::explored`];
/// docs/decisions/0009-hyperpriors-and-the-fit-guard.md).
///
/// The fitted model is handed on with the proposals ([`Proposed::model`]) when nothing was
/// added to it: no pending point, and one proposal (the last is not hallucinated).
pub fn ucb_proposals(
    spec: KernelSpec,
    fixed_temporal_lengthscale: Option<f64>,
    beta: Beta,
    ctx: &SuggestContext<'_>,
    state: &mut PolicyState,
    rng: &mut PolicyRng,
) -> Result<Proposed, PolicyError> {
    let mut surrogate = Surrogate::fit(
        spec,
        ctx.space.dim(),
        ctx.data,
        &FitSettings {
            fixed_noise: ctx.fixed_noise,
            fixed_temporal_lengthscale,
            start: search_start(
                ctx.model.fit_start,
                state.hyperparameters.as_ref(),
                ctx.issued_before,
            ),
            hyperpriors: ctx.model.hyperpriors,
            lengthscales: ctx.model.lengthscales,
            warping: ctx.model.warping,
            level: ctx.model.level,
        },
    )?;
    state.hyperparameters = Some(*surrogate.hyperparameters());
    let mut report = surrogate.fit_report().clone();
    report.explored = ctx.model.hyperpriors == Hyperpriors::Robust && report.flat_in_space();
    let explored = report.explored;
    state.last_fit = Some(report);
    // Whether the model stays that of `ctx.data` alone through the proposals.
    let of_data_alone = ctx.pending.is_empty() && ctx.count <= 1;
    if explored {
        return Ok(Proposed {
            proposals: (0..ctx.count).map(|_| random_proposal(ctx, rng)).collect(),
            model: Some(surrogate),
        });
    }
    let beta = beta_value(
        beta,
        ctx.space.dim(),
        ctx.data.len(),
        ctx.arms.map(<[_]>::len),
    );
    for (x, t) in ctx.pending {
        surrogate.hallucinate(x, *t)?;
    }
    let options = AcquisitionOptions::default();
    let mut proposals = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
        let proposal = match ctx.arms {
            Some(arms) => {
                let (index, _) = acquisition::best_arm_ucb(surrogate.gp(), beta, ctx.t, arms);
                Proposal {
                    x: arms[index].clone(),
                    arm: Some(index),
                }
            }
            None => {
                // The step's work on this model, while it is the one handed on.
                let beside = ctx.beside.filter(|_| of_data_alone);
                let model = &surrogate;
                let work = move || {
                    if let Some(beside) = beside {
                        beside.run(model);
                    }
                };
                let (x, _) = acquisition::maximize_ucb_beside(
                    surrogate.gp(),
                    beta,
                    ctx.t,
                    &options,
                    ctx.fixed,
                    ctx.cores,
                    rng,
                    beside.map(|_| &work as &(dyn Fn() + Sync)),
                );
                Proposal {
                    x: ctx.space.snap(&x),
                    arm: None,
                }
            }
        };
        // The next proposal sees this one as pending (the last has no next).
        if i + 1 < ctx.count {
            surrogate.hallucinate(&proposal.x, ctx.t)?;
        }
        proposals.push(proposal);
    }
    Ok(Proposed {
        proposals,
        model: of_data_alone.then_some(surrogate),
    })
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;

    use super::*;
    use crate::domain::checked::CheckedConfig;
    use crate::domain::config::{CreateSession, FitStart, Warping};
    use crate::gp::fit::{FitOptions, fit_hyperparameters};
    use crate::gp::{Hyperparameters, SearchStart};
    use crate::policy::surrogate::standardised;
    use crate::policy::{BesideUcb, policy_for, suggest};

    fn bolt_with(fit_start: FitStart, hyperpriors: Hyperpriors) -> CheckedConfig {
        let request: CreateSession = serde_json::from_value(json!({
            "parameters": [{"name": "a", "low": 0, "high": 1}, {"name": "b", "low": 0, "high": 1}],
            "algorithm": {"name": "bolt"},
            "model": {"warmup": 0, "fit_start": fit_start, "hyperpriors": hyperpriors},
            "time": {"source": "client"}
        }))
        .unwrap();
        CheckedConfig::from_request(request, 0).unwrap()
    }

    fn bolt(fit_start: FitStart) -> CheckedConfig {
        bolt_with(fit_start, Hyperpriors::None)
    }

    /// A suggest of `count` points by `config` on `data` at t = 30 from `state`: its
    /// proposals and the state it leaves.
    fn suggest_on(
        config: &CheckedConfig,
        data: &[Observation],
        mut state: PolicyState,
        count: usize,
    ) -> (Vec<Proposal>, PolicyState) {
        let ctx = SuggestContext {
            space: config.space(),
            arms: None,
            model: &config.model,
            data,
            pending: &[],
            t: 30.0,
            count,
            issued_before: data.len() as u64 + 1,
            fixed_noise: None,
            cores: &1,
            fixed: &[],
            beside: None,
        };
        let policy = policy_for(config);
        let proposals = suggest(
            policy.as_ref(),
            &ctx,
            &mut state,
            &mut PolicyRng::seed_from_u64(3),
        )
        .unwrap()
        .proposals;
        (proposals, state)
    }

    /// Records the models it is run on.
    struct Seen(std::sync::Mutex<Vec<Surrogate>>);

    impl BesideUcb for Seen {
        fn run(&self, model: &Surrogate) {
            self.0.lock().unwrap().push(model.clone());
        }
    }

    /// The work beside UCB runs once, on the very model handed on, when the suggest's
    /// model is of the data alone; with a pending point, or two proposals, not at all.
    #[test]
    fn the_work_beside_ucb_sees_the_model_handed_on_and_no_other() {
        let config = bolt(FitStart::Fixed);
        let data: Vec<Observation> = (0..30)
            .map(|i| Observation {
                seq: i + 1,
                x: vec![(i * 7 % 30) as f64 / 30.0, (i * 11 % 30) as f64 / 30.0],
                t: i as f64,
                y: ((i * 7 % 30) as f64 / 30.0 - 0.4).powi(2),
            })
            .collect();
        let pending = [(vec![0.5, 0.5], 30.0)];
        for (pending, count, runs) in [(&[][..], 1, 1), (&pending[..], 1, 0), (&[][..], 2, 0)] {
            let seen = Seen(std::sync::Mutex::new(Vec::new()));
            let ctx = SuggestContext {
                space: config.space(),
                arms: None,
                model: &config.model,
                data: &data,
                pending,
                t: 30.0,
                count,
                issued_before: data.len() as u64 + 1,
                fixed_noise: None,
                cores: &2,
                fixed: &[],
                beside: Some(&seen),
            };
            let policy = policy_for(&config);
            let mut state = PolicyState::default();
            let mut rng = PolicyRng::seed_from_u64(3);
            let proposed = suggest(policy.as_ref(), &ctx, &mut state, &mut rng).unwrap();
            let seen = seen.0.into_inner().unwrap();
            assert_eq!(seen.len(), runs, "{pending:?}, {count}");
            if let Some(model) = seen.first() {
                let handed = proposed.model.expect("the model of the data alone");
                let spec = policy.model_kernel(&config.model, config.space());
                let hyper = state.hyperparameters.unwrap();
                assert!(model.is_built_from(spec, 2, &data, &hyper, Warping::None));
                assert!(handed.is_built_from(spec, 2, &data, &hyper, Warping::None));
                assert_eq!(model.gp().alpha(), handed.gp().alpha());
            }
        }
    }

    /// Values that depend on time alone, over points spread across the square: the
    /// likelihood wants a model flat in space (l_S at its top) however the fit starts.
    /// Under `robust` the guard searches again, the model stays flat, and the suggest
    /// answers with uniform proposals, recorded as explored; under `none` the report only
    /// names the bound and UCB proposes as the papers' protocol does.
    #[test]
    fn a_model_flat_in_space_is_answered_by_uniform_proposals() {
        let data: Vec<Observation> = (0..60)
            .map(|i| Observation {
                seq: i + 1,
                x: vec![(i * 7 % 60) as f64 / 60.0, (i * 13 % 60) as f64 / 60.0],
                t: i as f64 * 0.5,
                y: (i as f64 / 16.0).sin(),
            })
            .collect();
        let (robust, state) = suggest_on(
            &bolt_with(FitStart::Fixed, Hyperpriors::Robust),
            &data,
            PolicyState::default(),
            2,
        );
        let report = state.last_fit.expect("a fit report");
        assert!(report.flat_in_space(), "{report:?}");
        assert!(report.second_start && report.explored, "{report:?}");
        let (exact, state) = suggest_on(
            &bolt_with(FitStart::Fixed, Hyperpriors::None),
            &data,
            PolicyState::default(),
            2,
        );
        let report = state.last_fit.expect("a fit report");
        assert!(report.flat_in_space(), "{report:?}");
        assert!(!report.second_start && !report.explored, "{report:?}");
        assert_ne!(robust, exact);
    }

    /// The fit a suggest of `config` leaves in a state that held `previous`.
    fn fitted_by_suggest(
        config: &CheckedConfig,
        data: &[Observation],
        previous: Hyperparameters,
    ) -> Hyperparameters {
        let state = PolicyState {
            hyperparameters: Some(previous),
            ..PolicyState::default()
        };
        let (_, state) = suggest_on(config, data, state, 1);
        state.hyperparameters.unwrap()
    }

    #[test]
    fn every_fifth_suggest_of_a_previous_session_fits_from_the_default_start() {
        let h = Hyperparameters::default();
        assert_eq!(
            search_start(FitStart::Previous, Some(&h), 11),
            SearchStart::Previous(&h)
        );
        assert_eq!(
            search_start(FitStart::Previous, Some(&h), 10),
            SearchStart::Default
        );
        assert_eq!(
            search_start(FitStart::Previous, None, 11),
            SearchStart::Default
        );
        assert_eq!(
            search_start(FitStart::Fixed, Some(&h), 11),
            SearchStart::Default
        );
    }

    #[test]
    fn a_suggest_fits_from_the_start_its_session_names() {
        let data: Vec<Observation> = (0..30)
            .map(|i| {
                let (a, b) = ((i * 7 % 30) as f64 / 30.0, (i * 11 % 30) as f64 / 30.0);
                Observation {
                    seq: i + 1,
                    x: vec![a, b],
                    t: i as f64,
                    y: (6.0 * a).sin() + b * b + 0.01 * i as f64,
                }
            })
            .collect();
        let (_, xs, ts, ys) = standardised(&data, Warping::None);
        let spec = KernelSpec::default();
        let previous = Hyperparameters {
            signal_variance: 0.8,
            spatial_lengthscale: 0.25,
            temporal_lengthscale: 50.0,
            noise_variance: 0.02,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: Default::default(),
            level: None,
        };
        let fit = |start| {
            fit_hyperparameters(spec, &xs, &ts, &ys, start, &FitOptions::default()).unwrap()
        };
        let warm = fit(SearchStart::Previous(&previous));
        let fresh = fit(SearchStart::Default);
        assert_ne!(warm, fresh, "the two starts must be told apart");
        assert_eq!(
            fitted_by_suggest(&bolt(FitStart::Previous), &data, previous),
            warm
        );
        assert_eq!(
            fitted_by_suggest(&bolt(FitStart::Fixed), &data, previous),
            fresh
        );
    }
}
