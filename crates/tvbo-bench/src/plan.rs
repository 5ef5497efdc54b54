//! The plan of a benchmark: the suite of the options, restricted or extended by them, the
//! algorithm options checked, and the runs ([`RunSpec`]) in order, each with its seed.

use std::collections::BTreeMap;

use serde_json::json;

use super::algorithms::{AlgorithmEntry, AlgorithmOptions, algorithm};
use super::error::BenchError;
use super::options::BenchOptions;
use super::seeds::derive_seed;
use super::session::{ModelSettings, session_config};
use super::suites::{ObjectiveKind, Suite, objectives_named, suite};
use tvbo_core::domain::config::AlgorithmConfig;
use tvbo_core::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;

/// One (objective, algorithm, replication).
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub objective: usize,
    pub algorithm: &'static AlgorithmEntry,
    pub replication: usize,
    pub seed: u64,
}

/// The plan of a benchmark: the suite after the options, and its runs in order.
#[derive(Clone, Debug)]
pub struct Plan {
    pub suite: Suite,
    /// The options given for some of the suite's algorithms (the others run with their
    /// defaults), checked against the service's validation.
    pub algorithm_options: BTreeMap<&'static str, AlgorithmOptions>,
    /// Every session's `model.fit_start` (`--fit-start`).
    pub fit_start: FitStart,
    /// Every session's `model.hyperpriors` (`--hyperpriors`).
    pub hyperpriors: Hyperpriors,
    /// Every session's `model.lengthscales` (`--lengthscales`).
    pub lengthscales: Lengthscales,
    /// Every session's `model.warping` (`--warping`).
    pub warping: Warping,
    /// Every session's `model.level` (`--level`).
    pub level: Level,
    pub runs: Vec<RunSpec>,
}

impl Plan {
    /// The `model` settings of every session of this plan.
    pub fn model_settings(&self) -> ModelSettings {
        ModelSettings {
            fit_start: self.fit_start,
            hyperpriors: self.hyperpriors,
            lengthscales: self.lengthscales,
            warping: self.warping,
            level: self.level,
        }
    }

    /// The options of `algorithm` in this plan, if any were given.
    pub fn options_of(&self, algorithm: &str) -> Option<&AlgorithmOptions> {
        self.algorithm_options.get(algorithm)
    }
}

/// The options per algorithm of `given` (later keys win), each checked: the algorithm is
/// one of `algorithms`, the bench's own keys are left alone, and a session the service
/// would create accepts them (the message names the field).
fn checked_algorithm_options(
    given: &[(String, AlgorithmOptions)],
    algorithms: &[&'static AlgorithmEntry],
) -> Result<BTreeMap<&'static str, AlgorithmOptions>, BenchError> {
    let mut merged: BTreeMap<&'static str, AlgorithmOptions> = BTreeMap::new();
    for (name, options) in given {
        let entry = algorithms.iter().find(|a| a.name == name).ok_or_else(|| {
            let names: Vec<&str> = algorithms.iter().map(|a| a.name).collect();
            BenchError::Options(format!(
                "--algorithm-options {name}: this bench does not run {name} (it runs {})",
                names.join(", ")
            ))
        })?;
        if options.contains_key("name") {
            return Err(BenchError::Options(format!(
                "--algorithm-options {name}: `name` is the algorithm's, given before `=`"
            )));
        }
        if options.contains_key("priors") {
            return Err(BenchError::Options(format!(
                "--algorithm-options {name}: `priors` come from the objective (003's setups)"
            )));
        }
        merged
            .entry(entry.name)
            .or_default()
            .extend(options.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    for (&name, options) in &merged {
        let entry = algorithm(name)?;
        let mut request = entry.request(Some(options));
        let invalid = |e: String| BenchError::Options(format!("--algorithm-options {name}: {e}"));
        if entry.needs_priors() {
            // Their options can depend on the objective's priors (a hyperprior holds one
            // weight per prior): names and types are checked here, values when a run's
            // session is created.
            request["priors"] = json!([]);
            serde_json::from_value::<AlgorithmConfig>(request)
                .map_err(|e| invalid(e.to_string()))?;
        } else {
            let create = json!({
                "name": "options check",
                "parameters": [{"name": "x1", "low": 0.0, "high": 1.0}],
                "algorithm": request,
            });
            session_config(&create, 0).map_err(|e| invalid(e.to_string()))?;
        }
    }
    Ok(merged)
}

impl Plan {
    /// The suite of `options.suite`, restricted or extended by the options, its options
    /// checked, and every replayed trace of it read and checked (so that a broken trace
    /// stops the bench before anything runs, not when its first run starts).
    pub fn new(options: &BenchOptions) -> Result<Plan, BenchError> {
        let mut suite = suite(&options.suite)?;
        if let Some(names) = &options.objectives {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            suite.objectives = objectives_named(&names)?;
        }
        // Perhaps hours into a suite were its first run to find it broken.
        for spec in &suite.objectives {
            if matches!(spec.kind, ObjectiveKind::Trace(_)) {
                spec.instantiate(suite.horizon, 0)?;
            }
        }
        if let Some(names) = &options.algorithms {
            suite.algorithms = names
                .iter()
                .map(|n| algorithm(n))
                .collect::<Result<_, _>>()?;
        }
        if let Some(r) = options.replications {
            suite.replications = r;
        }
        if let Some(h) = options.horizon {
            suite.horizon = h;
        }
        if !(suite.horizon.is_finite() && suite.horizon > 0.0) {
            return Err(BenchError::Options(
                "--horizon must be a positive number".into(),
            ));
        }
        if suite.replications == 0 || options.jobs == 0 {
            return Err(BenchError::Options(
                "--replications and --jobs must be at least 1".into(),
            ));
        }
        if let Some(f) = options.fixed_compute
            && !(f.is_finite() && f >= 0.0)
        {
            return Err(BenchError::Options(
                "--fixed-compute must be a number ≥ 0".into(),
            ));
        }
        let algorithm_options =
            checked_algorithm_options(&options.algorithm_options, &suite.algorithms)?;
        let mut runs = Vec::new();
        // Replication by replication: an interrupted suite has whole replications of
        // every (objective, algorithm), which `--resume` completes.
        for replication in 0..suite.replications {
            for (objective, spec) in suite.objectives.iter().enumerate() {
                for &algorithm in &suite.algorithms {
                    if algorithm.needs_priors() && !spec.has_priors() {
                        continue;
                    }
                    runs.push(RunSpec {
                        objective,
                        algorithm,
                        replication,
                        seed: derive_seed(options.seed, replication as u64),
                    });
                }
            }
        }
        Ok(Plan {
            suite,
            algorithm_options,
            fit_start: options.fit_start,
            hyperpriors: options.hyperpriors,
            lengthscales: options.lengthscales,
            warping: options.warping,
            level: options.level,
            runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::session_algorithms;
    use crate::options::{ServerTime, parse_algorithm_options};
    use crate::session::session_request;
    use crate::suites::ObjectiveSpec;
    use crate::synthetic::SyntheticFunction;
    use tvbo_core::domain::algorithm::r_gp_ucb::RGpUcb;

    #[test]
    fn suites_cover_what_they_promise() {
        let quick = suite("quick").unwrap();
        for entry in session_algorithms() {
            assert!(
                quick.algorithms.contains(&entry),
                "quick lacks {}",
                entry.name
            );
        }
        let kinds = |suite: &Suite| -> Vec<ObjectiveKind> {
            suite.objectives.iter().map(|o| o.kind.clone()).collect()
        };
        let quick_kinds = kinds(&quick);
        assert!(
            quick_kinds
                .iter()
                .any(|k| matches!(k, ObjectiveKind::Synthetic(_)))
        );
        assert!(
            quick_kinds
                .iter()
                .any(|k| matches!(k, ObjectiveKind::TvGp { .. }))
        );
        assert!(quick.objectives.iter().any(ObjectiveSpec::has_priors));
        // Every algorithm of quick runs on at least one of its objectives.
        let plan = Plan::new(&BenchOptions::default()).unwrap();
        for entry in session_algorithms() {
            assert!(
                plan.runs.iter().any(|r| r.algorithm == entry),
                "quick never runs {}",
                entry.name
            );
        }
        let paper = suite("paper").unwrap();
        assert_eq!(paper.objectives.len(), 8);
        assert_eq!((paper.horizon, paper.replications), (600.0, 10));
        assert_eq!(suite("gp").unwrap().objectives.len(), 6);
        let priors = suite("priors").unwrap();
        assert_eq!(priors.objectives.len(), 3);
        assert!(priors.objectives.iter().all(ObjectiveSpec::has_priors));
        let wdbo = suite("wdbo").unwrap();
        assert_eq!(wdbo.objectives.len(), 3);
        assert_eq!((wdbo.horizon, wdbo.replications), (150.0, 3));
        let multimodal = suite("multimodal").unwrap();
        let names: Vec<&str> = multimodal
            .objectives
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(names, ["basins4", "shekel-basins5", "drifting-basins6"]);
        let algorithms: Vec<&str> = multimodal.algorithms.iter().map(|a| a.name).collect();
        assert_eq!(algorithms, ["bolt", "w-dbo", "gp-ucb", "random"]);
        assert_eq!((multimodal.horizon, multimodal.replications), (150.0, 5));
        let mixed = suite("mixed").unwrap();
        assert_eq!(mixed.objectives.len(), 1);
        let algorithms: Vec<&str> = mixed.algorithms.iter().map(|a| a.name).collect();
        assert_eq!(algorithms, ["bolt", "random"]);
        let real = suite("real").unwrap();
        let names: Vec<&str> = real.objectives.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "trace-compression",
                "trace-sqlite",
                "trace-postgres",
                "trace-postgres-uneven",
                "trace-rocksdb",
                "trace-jvm-gc"
            ]
        );
        assert_eq!((real.horizon, real.replications), (7200.0, 5));
        assert_eq!(suite("all").unwrap().objectives.len(), 30);
        assert!(suite("nope").is_err());
    }

    #[test]
    fn algorithm_options_are_checked_before_anything_runs_and_name_the_field() {
        let (name, options) = parse_algorithm_options(r#"r-gp-ucb={"reset_every":60}"#).unwrap();
        assert_eq!(
            (name.as_str(), &options["reset_every"]),
            ("r-gp-ucb", &json!(60))
        );
        for (text, says) in [
            ("r-gp-ucb", "NAME=JSON"),
            ("r-gp-ucbb={}", "unknown algorithm"),
            ("r-gp-ucb=60", "JSON object"),
            ("r-gp-ucb={reset_every:60}", "not JSON"),
        ] {
            let e = parse_algorithm_options(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let plan_with = |given: &[&str]| {
            Plan::new(&BenchOptions {
                suite: "paper".into(),
                algorithm_options: given
                    .iter()
                    .map(|t| parse_algorithm_options(t).unwrap())
                    .collect(),
                ..BenchOptions::default()
            })
        };
        for (given, says) in [
            (&[r#"random={}"#][..], "does not run random"),
            (
                &[r#"r-gp-ucb={"name":"bolt"}"#],
                "`name` is the algorithm's",
            ),
            (
                &[r#"gp-ucb={"priors":[]}"#],
                "`priors` come from the objective",
            ),
            (&[r#"r-gp-ucb={"reset_every":0}"#], "algorithm.reset_every"),
            (&[r#"r-gp-ucb={"reset_evry":60}"#], "reset_evry"),
            (&[r#"w-dbo={"alpha":"high"}"#], "invalid type"),
        ] {
            let e = plan_with(given).unwrap_err().to_string();
            assert!(e.contains(says), "{given:?}: {e}");
        }
        let plan = plan_with(&[
            r#"r-gp-ucb={"reset_every":30}"#,
            r#"r-gp-ucb={"reset_every":60,"beta":4.0}"#,
        ])
        .unwrap();
        let options = plan.options_of("r-gp-ucb").unwrap();
        assert_eq!(options["reset_every"], json!(60));
        assert_eq!(plan.options_of("bolt"), None);
        let prior_plan = Plan::new(&BenchOptions {
            suite: "priors".into(),
            algorithm_options: vec![
                parse_algorithm_options(r#"hp-gp-ts={"hyperprior":[1,1,1,2]}"#).unwrap(),
            ],
            ..BenchOptions::default()
        });
        assert!(prior_plan.is_ok(), "{:?}", prior_plan.err());
        let objective = ObjectiveSpec::synthetic(SyntheticFunction::Hartmann3)
            .instantiate(600.0, 0)
            .unwrap();
        let request = session_request(
            objective.as_ref(),
            "t",
            algorithm("r-gp-ucb").unwrap(),
            Some(options),
            9,
            ServerTime::Client,
            ModelSettings::PAPERS,
        )
        .unwrap();
        let config = session_config(&request, 9).unwrap();
        assert!(matches!(
            config.algorithm,
            AlgorithmConfig::RGpUcb(RGpUcb {
                reset_every: 60,
                ..
            })
        ));
    }

    #[test]
    fn runs_share_seeds_across_algorithms() {
        let options = BenchOptions {
            suite: "quick".into(),
            replications: Some(3),
            ..BenchOptions::default()
        };
        let plan = Plan::new(&options).unwrap();
        for run in &plan.runs {
            assert_eq!(run.seed, derive_seed(0, run.replication as u64));
        }
        let seeds: std::collections::BTreeSet<u64> = plan.runs.iter().map(|r| r.seed).collect();
        assert_eq!(seeds.len(), 3);
    }

    /// A scenario of one's own is read, and its trace checked, when the plan is made: a
    /// broken trace stops the bench before any run, naming the file's problem.
    #[test]
    fn a_broken_trace_of_ones_own_stops_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let builtin = &crate::trace::BUILTIN[0];
        let scenario = dir.path().join("mine.scenario.json");
        std::fs::write(&scenario, builtin.scenario).unwrap();
        let options = BenchOptions {
            suite: "real".into(),
            objectives: Some(vec![format!("trace:{}", scenario.display())]),
            ..BenchOptions::default()
        };
        let e = Plan::new(&options).unwrap_err().to_string();
        assert!(e.contains("compression.jsonl"), "{e}");
        // A trace whose block size, on a log scale, is said to start at 0.
        let broken = builtin
            .trace
            .replacen(
                r#""low": 16, "high": 256, "scale": "log""#,
                r#""low": 0, "high": 256, "scale": "log""#,
                1,
            )
            .replacen("\"values\": [16, 64, 256]", "\"values\": [0, 64, 256]", 1);
        assert_ne!(broken, builtin.trace);
        std::fs::write(dir.path().join("compression.jsonl"), &broken).unwrap();
        let e = Plan::new(&options).unwrap_err().to_string();
        assert!(
            e.contains(
                "trace-compression: trace line 1: setting block_kib: a log scale needs low > 0"
            ),
            "{e}"
        );
        std::fs::write(dir.path().join("compression.jsonl"), builtin.trace).unwrap();
        let plan = Plan::new(&options).unwrap();
        assert_eq!(plan.suite.objectives[0].name, "trace-compression");
    }
}
