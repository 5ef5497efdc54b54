//! A session's configuration as its check leaves it (as linfa's checked parameter sets):
//! the stored [`SessionConfig`] with what the check derived from it, so that nothing later
//! re-derives it — the search space, the arms' unit-cube points, and the model its policy
//! works from: a GP over the unit cube, or, for an algorithm whose options hold priors,
//! the priors with the arms and the observation noise they assume ([`PolicySettings`]).
//!
//! A stored configuration is checked as it is read ([`CheckedConfig`] deserialises from
//! a [`SessionConfig`]); it reads as one through `Deref`.

use std::ops::Deref;

use serde::{Deserialize, Serialize};

use crate::domain::InvalidInput;
use crate::domain::config::{CreateSession, SessionConfig};
use crate::domain::priors::{PriorSpec, arms_required};
use crate::domain::space::{Arm, SearchSpace};

/// A session's configuration, checked, with what the check derived.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SessionConfig", into = "SessionConfig")]
pub struct CheckedConfig {
    config: SessionConfig,
    space: SearchSpace,
    policy: PolicySettings,
}

/// A session's arms, with their points in the unit cube in the same order.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionArms {
    pub arms: Vec<Arm>,
    pub points: Vec<Vec<f64>>,
}

/// What a session's policy is built from: a GP it fits, or the priors it is given.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySettings {
    /// A GP over the unit cube (× time), fitted by the policy; UCB's search is restricted
    /// to the arms where the session has them.
    Surrogate { arms: Option<SessionArms> },
    /// Given priors over the session's arms (paper 003, or GP-UCB and TV-GP-UCB given a
    /// prior): every algorithm whose options hold priors.
    Priors(GivenPriors),
}

/// Priors over a session's arms, with the arms and the observation-noise variance
/// `noise` they assume (`model.noise`).
#[derive(Clone, Debug, PartialEq)]
pub struct GivenPriors {
    pub priors: PriorList,
    pub arms: SessionArms,
    pub noise: f64,
}

/// A list of priors that is not empty.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorList {
    first: PriorSpec,
    rest: Vec<PriorSpec>,
}

impl PriorList {
    /// `priors` as a list, if there is at least one.
    pub fn new(priors: &[PriorSpec]) -> Option<PriorList> {
        let (first, rest) = priors.split_first()?;
        Some(PriorList {
            first: first.clone(),
            rest: rest.to_vec(),
        })
    }

    /// The first prior (the one of TV-GP-UCB and GP-UCB, which take one).
    pub fn first(&self) -> &PriorSpec {
        &self.first
    }

    /// Every prior, in order.
    pub fn to_vec(&self) -> Vec<PriorSpec> {
        std::iter::once(self.first.clone())
            .chain(self.rest.iter().cloned())
            .collect()
    }
}

impl CheckedConfig {
    /// A create request validated, filled in with every default
    /// ([`SessionConfig::from_request`]) and checked.
    pub fn from_request(
        request: CreateSession,
        random_seed: u64,
    ) -> Result<CheckedConfig, InvalidInput> {
        CheckedConfig::new(SessionConfig::from_request(request, random_seed)?)
    }

    /// Checks `config` (a validated request's, or a stored one) and derives the search
    /// space, the arms' unit-cube points and the policy's settings. An algorithm with
    /// priors needs arms and `model.noise`.
    pub fn new(config: SessionConfig) -> Result<CheckedConfig, InvalidInput> {
        let space = SearchSpace::new(config.parameters.clone())?;
        let arms = match &config.arms {
            None => None,
            Some(arms) => Some(SessionArms {
                points: arms
                    .iter()
                    .enumerate()
                    .map(|(i, a)| space.to_unit(&a.params, &format!("arms[{i}].params")))
                    .collect::<Result<_, _>>()?,
                arms: arms.clone(),
            }),
        };
        let policy = policy_settings(&config, arms)?;
        Ok(CheckedConfig {
            config,
            space,
            policy,
        })
    }

    /// The configuration as stored and echoed (it also reads as one through `Deref`).
    pub fn into_config(self) -> SessionConfig {
        self.config
    }

    /// The search space of the parameters.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// What the session's policy is built from.
    pub fn policy(&self) -> &PolicySettings {
        &self.policy
    }

    /// The given priors, with their arms and noise, of an algorithm whose options hold
    /// priors (every one whose priors are [required](crate::domain::algorithm::PriorUse)
    /// has them).
    pub fn given_priors(&self) -> Option<&GivenPriors> {
        match &self.policy {
            PolicySettings::Surrogate { .. } => None,
            PolicySettings::Priors(given) => Some(given),
        }
    }

    /// The session's arms and their unit-cube points, if it has arms.
    pub fn arms(&self) -> Option<&SessionArms> {
        match &self.policy {
            PolicySettings::Surrogate { arms } => arms.as_ref(),
            PolicySettings::Priors(given) => Some(&given.arms),
        }
    }
}

/// The policy's settings of a checked configuration: the given priors of an algorithm
/// whose options hold them, else a GP's.
fn policy_settings(
    config: &SessionConfig,
    arms: Option<SessionArms>,
) -> Result<PolicySettings, InvalidInput> {
    match config.algorithm.priors() {
        None => Ok(PolicySettings::Surrogate { arms }),
        Some(priors) => prior_settings(config, priors, arms),
    }
}

/// The settings of an algorithm with `priors`: they need arms, at least one prior, and
/// the noise they assume.
fn prior_settings(
    config: &SessionConfig,
    priors: &[PriorSpec],
    arms: Option<SessionArms>,
) -> Result<PolicySettings, InvalidInput> {
    let name = config.algorithm.name();
    let arms = arms.ok_or_else(|| arms_required(name))?;
    let priors = PriorList::new(priors)
        .ok_or_else(|| InvalidInput::new("algorithm.priors", "must hold at least one prior"))?;
    let noise = config.model.noise.ok_or_else(|| {
        InvalidInput::new(
            "model.noise",
            format!(
                "is required by {name} with priors: the observation-noise variance the priors assume"
            ),
        )
    })?;
    Ok(PolicySettings::Priors(GivenPriors {
        priors,
        arms,
        noise,
    }))
}

impl TryFrom<SessionConfig> for CheckedConfig {
    type Error = InvalidInput;

    fn try_from(config: SessionConfig) -> Result<Self, Self::Error> {
        CheckedConfig::new(config)
    }
}

impl From<CheckedConfig> for SessionConfig {
    fn from(checked: CheckedConfig) -> Self {
        checked.config
    }
}

impl Deref for CheckedConfig {
    type Target = SessionConfig;

    fn deref(&self) -> &SessionConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(body: serde_json::Value) -> CreateSession {
        serde_json::from_value(body).unwrap()
    }

    fn arms_session(algorithm: serde_json::Value, noise: Option<f64>) -> serde_json::Value {
        json!({
            "parameters": [{"name": "x", "low": 0, "high": 4}],
            "arms": [{"name": "a", "params": {"x": 1}}, {"name": "b", "params": {"x": 3}}],
            "algorithm": algorithm,
            "model": {"noise": noise},
        })
    }

    /// The check derives the arms' points from the space, and an algorithm with priors
    /// gets its rule, priors, arms and noise together.
    #[test]
    fn prior_algorithms_get_arms_priors_and_noise_together() {
        let priors = json!([{"mean": [0, 0], "covariance": [[1, 0], [0, 1]]}]);
        let config = CheckedConfig::from_request(
            request(arms_session(
                json!({"name": "pe-gp-ts", "priors": priors, "delta": 0.1}),
                Some(0.5),
            )),
            1,
        )
        .unwrap();
        let PolicySettings::Priors(GivenPriors {
            priors,
            arms,
            noise,
        }) = config.policy()
        else {
            panic!("pe-gp-ts has priors");
        };
        assert_eq!(priors.to_vec().len(), 1);
        assert_eq!(arms.points, vec![vec![0.25], vec![0.75]]);
        assert_eq!(*noise, 0.5);
        assert_eq!(config.arms(), Some(arms));
        assert_eq!(
            config
                .space()
                .to_unit(&config.arms.as_ref().unwrap()[1].params, "x")
                .unwrap(),
            arms.points[1]
        );
    }

    /// A stored configuration is checked as it is read: one whose algorithm needs what it
    /// lacks does not read, naming the field.
    #[test]
    fn a_stored_configuration_is_checked_as_it_is_read() {
        let priors = json!([{"mean": [0, 0], "covariance": [[1, 0], [0, 1]]}]);
        let config = CheckedConfig::from_request(
            request(arms_session(
                json!({"name": "gp-ucb", "priors": priors}),
                Some(0.5),
            )),
            1,
        )
        .unwrap();
        let stored = serde_json::to_value(&config).unwrap();
        let read: CheckedConfig = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read, config);
        let mut without_noise = stored.clone();
        without_noise["model"]["noise"] = serde_json::Value::Null;
        let err = serde_json::from_value::<CheckedConfig>(without_noise).unwrap_err();
        assert!(err.to_string().contains("model.noise"), "{err}");
        let mut without_arms = stored;
        without_arms["arms"] = serde_json::Value::Null;
        let err = serde_json::from_value::<CheckedConfig>(without_arms).unwrap_err();
        assert!(err.to_string().starts_with("arms:"), "{err}");
    }

    /// Algorithms without priors fit a GP; their arms, if any, restrict the search.
    #[test]
    fn algorithms_without_priors_are_surrogates() {
        let config =
            CheckedConfig::from_request(request(arms_session(json!({"name": "bolt"}), None)), 1)
                .unwrap();
        assert!(matches!(
            config.policy(),
            PolicySettings::Surrogate { arms: Some(_) }
        ));
        assert_eq!(config.arms().unwrap().arms.len(), 2);
    }
}
