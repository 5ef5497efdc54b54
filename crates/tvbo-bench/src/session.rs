//! The session of a run: the create-session request the bench makes of an objective
//! and an algorithm, and the configuration the server would make of it.

use serde_json::{Value, json};

use super::algorithms::{AlgorithmEntry, AlgorithmOptions};
use super::error::BenchError;
use super::objective::Objective;
use super::options::ServerTime;
use tvbo_core::domain::checked::CheckedConfig;
use tvbo_core::domain::config::{CreateSession, FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;
use tvbo_core::domain::space::ParameterSpec;
use tvbo_core::engine::new_session_config;

/// The settings of every session's `model` that the bench's options choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSettings {
    /// `model.fit_start` (`--fit-start`).
    pub fit_start: FitStart,
    /// `model.hyperpriors` (`--hyperpriors`).
    pub hyperpriors: Hyperpriors,
    /// `model.lengthscales` (`--lengthscales`).
    pub lengthscales: Lengthscales,
    /// `model.warping` (`--warping`).
    pub warping: Warping,
    /// `model.level` (`--level`), for the algorithms whose kernel has time.
    pub level: Level,
}

impl ModelSettings {
    /// The papers' protocol: fits from the fixed start, exact maximum likelihood, one
    /// spatial lengthscale for every parameter, the values themselves.
    pub const PAPERS: ModelSettings = ModelSettings {
        fit_start: FitStart::Fixed,
        hyperpriors: Hyperpriors::None,
        lengthscales: Lengthscales::Shared,
        warping: Warping::None,
        level: Level::None,
    };
}

/// The session's parameters for `objective`: its own [`Objective::parameters`], or
/// x1…xd, each over its [`Objective::parameter_range`] or, where
/// [`Objective::choices`] gives K choices, categorical with the choices c0…c(K−1).
pub fn session_parameters(objective: &dyn Objective) -> Vec<ParameterSpec> {
    objective.parameters().unwrap_or_else(|| {
        let (low, high) = objective.parameter_range();
        (0..objective.dim())
            .map(|i| {
                let name = parameter_name(i);
                match objective.choices(i) {
                    0 => ParameterSpec::float(&name, low, high),
                    k => {
                        let choices: Vec<String> = (0..k).map(|c| format!("c{c}")).collect();
                        let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
                        ParameterSpec::categorical(&name, &choices)
                    }
                }
            })
            .collect()
    })
}

/// The name of search input `i` of an objective without parameters of its own: x1, x2, …
fn parameter_name(i: usize) -> String {
    format!("x{}", i + 1)
}

/// The create-session request of a run: the objective's parameters
/// ([`session_parameters`]) or arms, the algorithm with its defaults and `options`
/// (and, for the algorithms that select among priors, the objective's priors and noise
/// variance), the `model` settings (`fit_start`, `hyperpriors`, `lengthscales`, `warping`), client
/// time, the run's seed, minimisation.
pub fn session_request(
    objective: &dyn Objective,
    name: &str,
    algorithm: &AlgorithmEntry,
    options: Option<&AlgorithmOptions>,
    seed: u64,
    time: ServerTime,
    settings: ModelSettings,
) -> Result<Value, BenchError> {
    let (low, high) = objective.parameter_range();
    let parameters = serde_json::to_value(session_parameters(objective))
        .map_err(|e| BenchError::Config(e.to_string()))?;
    let mut algorithm_request = algorithm.request(options);
    let source = match time {
        ServerTime::Client => "client",
        ServerTime::Wall => "wall",
    };
    let mut model = serde_json::Map::new();
    model.insert("fit_start".into(), json!(settings.fit_start));
    model.insert("hyperpriors".into(), json!(settings.hyperpriors));
    model.insert("lengthscales".into(), json!(settings.lengthscales));
    model.insert("warping".into(), json!(settings.warping));
    if settings.level != Level::None && algorithm.uses_time() {
        model.insert("level".into(), json!(settings.level));
    }
    if algorithm.needs_priors() {
        let priors = objective.priors().ok_or_else(|| {
            BenchError::Config(format!(
                "{} selects among priors, and this objective has none",
                algorithm.name
            ))
        })?;
        algorithm_request["priors"] =
            serde_json::to_value(priors).map_err(|e| BenchError::Config(e.to_string()))?;
        model.insert("noise".into(), json!(objective.noise_variance()));
    }
    let mut request = json!({
        "name": name,
        "goal": "minimize",
        "parameters": parameters,
        "algorithm": algorithm_request,
        "model": model,
        "time": {"source": source},
        "seed": seed,
    });
    if let Some(arms) = objective.arms() {
        let arms: Vec<Value> = arms
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let params: serde_json::Map<String, Value> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (parameter_name(i), json!(low + v * (high - low))))
                    .collect();
                json!({"name": format!("a{k}"), "params": params})
            })
            .collect();
        request["arms"] = Value::Array(arms);
    }
    Ok(request)
}

/// The session configuration the server would make of `request`.
pub fn session_config(request: &Value, seed: u64) -> Result<CheckedConfig, BenchError> {
    let create: CreateSession =
        serde_json::from_value(request.clone()).map_err(|e| BenchError::Config(e.to_string()))?;
    new_session_config(create, seed).map_err(|e| BenchError::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::ALGORITHMS;
    use crate::experiments::SetupKind;
    use crate::prior_setup;
    use crate::suites::ObjectiveSpec;
    use crate::synthetic::SyntheticFunction;
    use crate::tvgp::{self, TvGpKernel};

    #[test]
    fn every_algorithm_makes_a_valid_session_for_every_kind_of_objective() {
        let box_objective = ObjectiveSpec::synthetic(SyntheticFunction::Hartmann3)
            .instantiate(600.0, 0)
            .unwrap();
        let arm_objective =
            tvgp::TvGpSample::with_grid(TvGpKernel::Matern52, 0.01, 5.0, 0, 4).unwrap();
        let prior_objective =
            prior_setup::PriorSetupObjective::with_arms(SetupKind::Hill, 0, 30).unwrap();
        for entry in ALGORITHMS.iter().filter(|a| a.is_session()) {
            for objective in [
                box_objective.as_ref(),
                &arm_objective as &dyn Objective,
                &prior_objective,
            ] {
                let request = session_request(
                    objective,
                    "t",
                    entry,
                    None,
                    9,
                    ServerTime::Client,
                    ModelSettings::PAPERS,
                );
                if entry.needs_priors() && objective.priors().is_none() {
                    assert!(request.is_err(), "{} without priors", entry.name);
                    continue;
                }
                let config = session_config(&request.unwrap(), 9).unwrap();
                assert_eq!(config.algorithm.name(), entry.name);
                assert_eq!(config.model.hyperpriors, Hyperpriors::None);
                assert_eq!(config.model.lengthscales, Lengthscales::Shared);
                assert_eq!(config.seed, 9);
                assert_eq!(config.arms.is_some(), objective.arms().is_some());
                if entry.needs_priors() {
                    assert_eq!(config.algorithm.priors().map(<[_]>::len), Some(5));
                    assert_eq!(config.model.noise, Some(0.0625));
                    assert_eq!(config.model.warmup, 0, "003's rules start at once");
                } else {
                    assert_eq!(config.model.warmup, 15);
                    assert_eq!(config.model.noise, None);
                }
            }
        }
        // The arms are in the objective's own coordinates: 003's lie in [0, 20].
        let request = session_request(
            &prior_objective,
            "t",
            &ALGORITHMS[0],
            None,
            9,
            ServerTime::Client,
            ModelSettings {
                fit_start: FitStart::Previous,
                hyperpriors: Hyperpriors::Robust,
                lengthscales: Lengthscales::PerParameter,
                warping: Warping::Log,
                level: Level::Drifting,
            },
        )
        .unwrap();
        assert_eq!(request["model"]["fit_start"], "previous");
        assert_eq!(request["model"]["warping"], "log");
        assert_eq!(request["model"]["hyperpriors"], "robust");
        assert_eq!(request["model"]["lengthscales"], "per_parameter");
        let config = session_config(&request, 9).unwrap();
        assert_eq!(config.model.hyperpriors, Hyperpriors::Robust);
        assert_eq!(config.model.lengthscales, Lengthscales::PerParameter);
        assert_eq!(request["parameters"][0]["high"], 20.0);
        assert_eq!(request["arms"][29]["params"]["x1"], 20.0);
    }
}
