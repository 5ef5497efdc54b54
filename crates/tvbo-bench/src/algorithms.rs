//! The algorithms the bench can run: one [`AlgorithmEntry`] per algorithm of the service
//! (the core's [`AlgorithmName::ALL`], in its order) and per peer, in report order
//! ([`ALGORITHMS`]), and the options ([`AlgorithmOptions`]) a run may give one.

use std::sync::LazyLock;

use serde_json::{Value, json};
use tvbo_core::domain::algorithm::{AlgorithmName, PriorUse};

use super::error::BenchError;

/// An algorithm the bench can run: its name, the service's algorithm its sessions use,
/// and how it runs them. The service's algorithms come from the core's list; adding a
/// peer is one entry of `PEERS`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlgorithmEntry {
    /// The service's algorithm name, or a peer's name (`tune-once`, `optuna-tpe`, ...).
    pub name: &'static str,
    /// The algorithm of the sessions it creates (with the paper defaults: no options): its
    /// own for the service's algorithms, GP-UCB for `tune-once` while it tunes, `random`
    /// for Optuna's samplers (whose sessions only record what Optuna asks).
    pub service: AlgorithmName,
    /// How the bench runs it: a session of the service, or a peer.
    pub kind: AlgorithmKind,
}

/// How the bench runs an algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlgorithmKind {
    /// A session of the service with the entry's `request`.
    Session,
    /// Tuning once ([`crate::peers::TuneOnce`]): a session of the entry's `request` for
    /// the first `seconds`, then its best observed setting, kept.
    TuneOnce { seconds: f64 },
    /// Optuna's `sampler` through ask/tell ([`crate::peers::Optuna`]), one study for the
    /// run or a new one every `restart_every` seconds.
    Optuna {
        sampler: &'static str,
        restart_every: Option<f64>,
    },
}

impl AlgorithmEntry {
    /// Whether the algorithm is one of the service's (not a peer).
    pub fn is_session(&self) -> bool {
        self.kind == AlgorithmKind::Session
    }

    /// Whether the algorithm selects among given priors (003): it runs only on
    /// objectives that come with priors, which it receives in `algorithm.priors` (and
    /// the noise variance in `model.noise`).
    pub fn needs_priors(&self) -> bool {
        self.is_session() && self.service.priors() == PriorUse::Required
    }

    /// The `algorithm` object of its sessions' create request: the paper defaults with
    /// each of `options` set.
    pub fn request(&self, options: Option<&AlgorithmOptions>) -> Value {
        let mut request = json!({"name": self.service.as_str()});
        if let (Value::Object(fields), Some(options)) = (&mut request, options) {
            fields.extend(options.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        request
    }

    /// Whether its runs fit tvbo's GP over the settings, whose spatial lengthscales and
    /// warping `model.lengthscales` and `model.warping` (`--lengthscales`, `--warping`)
    /// choose: the service's GP algorithms, and
    /// `tune-once`, a GP-UCB session while it tunes. Not `random` (no model), the
    /// prior-selection rules (their GPs are the given priors, nothing fitted), nor
    /// Optuna's samplers (not tvbo's model at all): their runs do not depend on it.
    pub fn fits_tvbos_gp(&self) -> bool {
        match self.kind {
            AlgorithmKind::Session => !self.needs_priors() && self.service.facts().fits_a_model,
            AlgorithmKind::TuneOnce { .. } => true,
            AlgorithmKind::Optuna { .. } => false,
        }
    }
    /// Whether its sessions' kernel has time (the core's [`AlgorithmName::uses_time`]),
    /// so that `model.level` applies to it.
    pub fn uses_time(&self) -> bool {
        self.service.uses_time()
    }
}

/// Minutes of tuning of `tune-once` (the "10-minute tuning at the start").
const TUNE_ONCE_SECONDS: f64 = 600.0;
/// Optuna's restart period of the `-restart` peers: every 30 minutes of the clock.
const OPTUNA_RESTART_SECONDS: f64 = 1800.0;

/// The peers, in report order: what people use today.
const PEERS: [AlgorithmEntry; 5] = [
    AlgorithmEntry {
        name: "tune-once",
        service: AlgorithmName::GpUcb,
        kind: AlgorithmKind::TuneOnce {
            seconds: TUNE_ONCE_SECONDS,
        },
    },
    AlgorithmEntry {
        name: "optuna-tpe",
        service: AlgorithmName::Random,
        kind: AlgorithmKind::Optuna {
            sampler: "tpe",
            restart_every: None,
        },
    },
    AlgorithmEntry {
        name: "optuna-tpe-restart",
        service: AlgorithmName::Random,
        kind: AlgorithmKind::Optuna {
            sampler: "tpe",
            restart_every: Some(OPTUNA_RESTART_SECONDS),
        },
    },
    AlgorithmEntry {
        name: "optuna-gp",
        service: AlgorithmName::Random,
        kind: AlgorithmKind::Optuna {
            sampler: "gp",
            restart_every: None,
        },
    },
    AlgorithmEntry {
        name: "optuna-gp-restart",
        service: AlgorithmName::Random,
        kind: AlgorithmKind::Optuna {
            sampler: "gp",
            restart_every: Some(OPTUNA_RESTART_SECONDS),
        },
    },
];

/// Every algorithm, in report order: the service's ([`AlgorithmName::ALL`]: 002's Table
/// 3 order, the floor, then 003's rules), then the peers (`PEERS`).
pub static ALGORITHMS: LazyLock<Vec<AlgorithmEntry>> = LazyLock::new(|| {
    AlgorithmName::ALL
        .into_iter()
        .map(|service| AlgorithmEntry {
            name: service.as_str(),
            service,
            kind: AlgorithmKind::Session,
        })
        .chain(PEERS)
        .collect()
});

/// The service's own algorithms, in report order (the suites' "every algorithm").
pub fn session_algorithms() -> impl Iterator<Item = &'static AlgorithmEntry> {
    ALGORITHMS.iter().filter(|a| a.is_session())
}

/// The algorithm entry of an API name.
pub fn algorithm(name: &str) -> Result<&'static AlgorithmEntry, BenchError> {
    ALGORITHMS.iter().find(|a| a.name == name).ok_or_else(|| {
        let known: Vec<&str> = ALGORITHMS.iter().map(|a| a.name).collect();
        BenchError::Options(format!(
            "unknown algorithm {name:?} (known: {})",
            known.join(", ")
        ))
    })
}

/// Options of an algorithm's create request (`algorithm.reset_every`, ...), as a JSON
/// object without `name`.
pub type AlgorithmOptions = serde_json::Map<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::SetupKind;
    use crate::objective::Objective;
    use crate::prior_setup;
    use crate::session::{ModelSettings, session_config, session_request};
    use crate::suites::ObjectiveSpec;
    use crate::synthetic::SyntheticFunction;
    use tvbo_core::domain::checked::PolicySettings;

    /// [`AlgorithmEntry::fits_tvbos_gp`] is what the service makes of each
    /// entry's request: a fitted GP over the settings (any surrogate algorithm but
    /// `random`), not a selection among given priors (on an objective with priors, where
    /// those rules run); Optuna's samplers are not the service's model whatever their
    /// request.
    #[test]
    fn the_algorithms_that_fit_spatial_lengthscales_are_the_services_gps() {
        let box_objective = ObjectiveSpec::synthetic(SyntheticFunction::Hartmann3)
            .instantiate(600.0, 0)
            .unwrap();
        let prior_objective =
            prior_setup::PriorSetupObjective::with_arms(SetupKind::Hill, 0, 30).unwrap();
        let fitting: Vec<&str> = ALGORITHMS
            .iter()
            .filter(|a| a.fits_tvbos_gp())
            .map(|a| a.name)
            .collect();
        for entry in ALGORITHMS.iter() {
            let fits = match entry.kind {
                AlgorithmKind::Optuna { .. } => false,
                _ => {
                    let objective: &dyn Objective = if entry.needs_priors() {
                        &prior_objective
                    } else {
                        box_objective.as_ref()
                    };
                    let request = session_request(
                        objective,
                        "t",
                        entry,
                        None,
                        1,
                        crate::options::ServerTime::Client,
                        ModelSettings::PAPERS,
                    )
                    .unwrap();
                    let config = session_config(&request, 1).unwrap();
                    matches!(config.policy(), PolicySettings::Surrogate { .. })
                        && config.algorithm.facts().fits_a_model
                }
            };
            assert_eq!(entry.fits_tvbos_gp(), fits, "{}", entry.name);
        }
        for name in ["gp-ucb", "bolt", "w-dbo", "tune-once"] {
            assert!(fitting.contains(&name), "{name}");
        }
        for name in ["random", "pe-gp-ts", "optuna-gp"] {
            assert!(!fitting.contains(&name), "{name}");
        }
    }
}
