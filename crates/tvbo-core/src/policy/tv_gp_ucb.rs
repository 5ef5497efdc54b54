//! TV-GP-UCB (Bogunovic et al. 2016, paper 000, Section 3, Algorithm 2): GP-UCB under the
//! time-varying kernel k(x,x')·(1−ε)^{|t−t'|/2} (their Eq. (7)–(8)).
//!
//! (1−ε)^{|Δt|/2} = exp(−|Δt|/l_T) with l_T = −2/ln(1−ε), the Matérn-1/2 correlation in
//! time; ε is per second. When no ε is configured, l_T is fitted by marginal likelihood
//! with the other hyperparameters, as the paper does on its real data (Section 5.2), and
//! reported back as ε = 1 − e^{−2/l_T}.

use std::sync::Arc;

use super::{
    ArmSet, BuildPolicy, Observation, Policy, PolicyError, PolicyRng, PolicyState, Proposal,
    Proposed, SessionPolicy, Stage, SuggestContext, beta_value,
};
use crate::domain::algorithm::tv_gp_ucb::TvGpUcb;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;
use crate::domain::config::{TEMPORAL_LENGTHSCALE_BOUNDS, temporal_lengthscale_of_epsilon};
use crate::domain::priors::PriorSpec;
use crate::domain::space::Arm;
use crate::gp::arms::{ArmPrior, TimeVaryingArmGp};
use crate::gp::{Hyperparameters, KernelKind};

/// Golden-section steps of the l_T fit with a given prior: the bracket [0.1 s, 10⁷ s]
/// shrinks to 1e-8 of its log-width.
const TEMPORAL_FIT_STEPS: usize = 40;

impl BuildPolicy for TvGpUcb {
    /// TV-GP-UCB with ε learned (None) or fixed; given a prior over the session's arms,
    /// under that prior ([`TvGpUcbWithPrior`]).
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        match config.given_priors() {
            Some(given) => SessionPolicy::TimeVaryingArms(TvGpUcbWithPrior {
                prior: given.priors.first().clone(),
                arms: given.arms.arms.clone(),
                arm_points: ArmSet::new(given.arms.points.clone()),
                sign: config.goal.sign(),
                noise_variance: given.noise,
                epsilon: self.epsilon,
                beta: self.beta,
            }),
            None => SessionPolicy::Surrogate(Box::new(self.clone())),
        }
    }
}

impl Policy for TvGpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }

    fn fixed_temporal_lengthscale(&self) -> Option<f64> {
        self.epsilon.map(temporal_lengthscale_of_epsilon)
    }
}

/// TV-GP-UCB on an arm set with one given prior as the spatial kernel:
/// k((a,t),(a',t')) = C_{aa'}·(1−ε)^{|t−t'|/2}. With no ε configured, l_T maximises the
/// marginal likelihood (golden-section search on ln l_T over the fit's bounds; the prior
/// itself is not rescaled).
pub struct TvGpUcbWithPrior {
    pub prior: PriorSpec,
    pub arms: Vec<Arm>,
    /// The arms in the unit cube, as observations carry them.
    pub arm_points: ArmSet,
    /// +1 to maximise, −1 to minimise (the prior is in the objective's units).
    pub sign: f64,
    pub noise_variance: f64,
    pub epsilon: Option<f64>,
    pub beta: Beta,
}

impl TvGpUcbWithPrior {
    /// Bytes of heap memory held: the prior's specification and the arms.
    pub fn heap_bytes(&self) -> usize {
        self.prior.heap_bytes()
            + self.arms.iter().map(Arm::heap_bytes).sum::<usize>()
            + self.arms.capacity() * std::mem::size_of::<Arm>()
            + self.arm_points.heap_bytes()
    }

    fn build_prior(&self) -> Result<Arc<ArmPrior>, PolicyError> {
        super::prior_cache::build_prior(&self.prior, &self.arms, self.sign)
    }

    fn triples(&self, data: &[Observation]) -> Result<Vec<(usize, f64, f64)>, PolicyError> {
        data.iter()
            .map(|o| Ok((self.arm_points.index_of(&o.x)?, o.t, o.y)))
            .collect()
    }

    /// The posterior with l_T fixed by ε, or fitted now.
    fn fit(
        &self,
        prior: &Arc<ArmPrior>,
        observations: &[(usize, f64, f64)],
    ) -> Result<TimeVaryingArmGp, PolicyError> {
        let model = |lengthscale: f64| {
            TimeVaryingArmGp::new(
                prior.clone(),
                KernelKind::Matern12,
                lengthscale,
                self.noise_variance,
                observations,
            )
        };
        if let Some(epsilon) = self.epsilon {
            return Ok(model(temporal_lengthscale_of_epsilon(epsilon))?);
        }
        let (low, high) = TEMPORAL_LENGTHSCALE_BOUNDS;
        let (mut a, mut b) = (low.ln(), high.ln());
        if observations.len() < 2 {
            return Ok(model(((a + b) / 2.0).exp())?);
        }
        let ratio = (5f64.sqrt() - 1.0) / 2.0;
        let score = |u: f64| model(u.exp()).map(|m| m.log_marginal_likelihood());
        let mut c = b - ratio * (b - a);
        let mut d = a + ratio * (b - a);
        let (mut fc, mut fd) = (score(c)?, score(d)?);
        for _ in 0..TEMPORAL_FIT_STEPS {
            if fc >= fd {
                b = d;
                d = c;
                fd = fc;
                c = b - ratio * (b - a);
                fc = score(c)?;
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + ratio * (b - a);
                fd = score(d)?;
            }
        }
        Ok(model(((a + b) / 2.0).exp())?)
    }

    /// The posterior after `data` under the saved l_T (fitted now when none is saved).
    pub fn current_model(
        &self,
        data: &[Observation],
        state: &PolicyState,
    ) -> Result<TimeVaryingArmGp, PolicyError> {
        let prior = self.build_prior()?;
        let observations = self.triples(data)?;
        Stage::Fit.run(|| match (self.epsilon, state.hyperparameters) {
            (None, Some(h)) => Ok(TimeVaryingArmGp::new(
                prior,
                KernelKind::Matern12,
                h.temporal_lengthscale,
                self.noise_variance,
                &observations,
            )?),
            _ => self.fit(&prior, &observations),
        })
    }

    /// The arm of a unit-cube point, if it is one of the arms.
    pub fn arm_at(&self, x: &[f64]) -> Option<usize> {
        self.arm_points.index_of(x).ok()
    }
}

impl Policy for TvGpUcbWithPrior {
    fn propose(
        &self,
        ctx: &SuggestContext<'_>,
        state: &mut PolicyState,
        _rng: &mut PolicyRng,
    ) -> Result<Proposed, PolicyError> {
        let prior = self.build_prior()?;
        let mut observations = self.triples(ctx.data)?;
        let fitted = Stage::Fit.run(|| self.fit(&prior, &observations))?;
        let lengthscale = fitted.temporal_lengthscale();
        // The prior's covariance is the spatial kernel as given: λ = 1, no l_S.
        state.hyperparameters = Some(Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 1.0,
            temporal_lengthscale: lengthscale,
            noise_variance: self.noise_variance,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: Default::default(),
            level: None,
        });
        let rebuild = |observations: &[(usize, f64, f64)]| {
            TimeVaryingArmGp::new(
                prior.clone(),
                KernelKind::Matern12,
                lengthscale,
                self.noise_variance,
                observations,
            )
        };
        // Pending points are hallucinated at their posterior mean (GP-BUCB).
        let mut model = fitted;
        if !ctx.pending.is_empty() {
            for (x, t) in ctx.pending {
                let arm = self.arm_points.index_of(x)?;
                observations.push((arm, *t, model.predict(arm, *t).0));
            }
            model = rebuild(&observations)?;
        }
        let arms = self.arm_points.len();
        let beta = beta_value(self.beta, ctx.space.dim(), ctx.data.len(), Some(arms));
        let mut proposals = Vec::with_capacity(ctx.count);
        for i in 0..ctx.count {
            let (arm, _) = (0..arms)
                .map(|a| {
                    let (mean, variance) = model.predict(a, ctx.t);
                    (a, mean + (beta * variance).sqrt())
                })
                .fold(
                    (0, f64::NEG_INFINITY),
                    |best, c| if c.1 > best.1 { c } else { best },
                );
            proposals.push(Proposal {
                x: self.arm_points.point(arm).to_vec(),
                arm: Some(arm),
            });
            if i + 1 < ctx.count {
                observations.push((arm, ctx.t, model.predict(arm, ctx.t).0));
                model = rebuild(&observations)?;
            }
        }
        Ok(proposals.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::epsilon_of_temporal_lengthscale;
    use crate::gp::KernelKind;

    #[test]
    fn epsilon_kernel_is_matern12_in_time() {
        for epsilon in [0.001, 0.03, 0.5] {
            let lengthscale = temporal_lengthscale_of_epsilon(epsilon);
            assert!((epsilon_of_temporal_lengthscale(lengthscale) - epsilon).abs() < 1e-12);
            for dt in [0.0, 0.5, 3.0, 40.0] {
                let paper = (1.0 - epsilon).powf(dt / 2.0);
                let ours = KernelKind::Matern12.correlation(dt / lengthscale);
                assert!((paper - ours).abs() < 1e-12, "ε={epsilon} Δt={dt}");
            }
        }
    }
}
