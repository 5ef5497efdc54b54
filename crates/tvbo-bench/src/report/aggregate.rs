//! The runs aggregated: each run summarised ([`RunSummary`]), each (objective, algorithm)
//! over its replications ([`Summary`], [`Series`]; for a replayed trace also by phase of
//! its scenario and over its day, [`super::phases`]), each algorithm over the objectives
//! ([`Normalised`]), all held by the [`Report`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::phases::{AchievedSeries, PhaseSummary, ScenarioPhases, phase_summaries};
use crate::algorithms::AlgorithmOptions;
use crate::options::{BenchOptions, ServerTime};
use crate::plan::Plan;
use crate::reference;
use crate::run_log::RunResult;
use crate::stats::MeanSe;
use crate::suites::ObjectiveSpec;
use tvbo_core::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;

/// Points of the time series (bins over the horizon).
const SERIES_POINTS: usize = 60;

/// One run, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    pub objective: String,
    pub algorithm: String,
    pub replication: usize,
    pub seed: u64,
    pub iterations: usize,
    /// Mean regret over the run's queries (warm-up included): R_T / T.
    pub average_regret: f64,
    /// Mean regret over the queries after the warm-up (0 if there were none).
    pub average_regret_after_warmup: f64,
    pub final_dataset_size: usize,
    /// Mean over the iterations of the dataset size after each observation.
    pub mean_dataset_size: f64,
    /// Mean seconds of compute (suggest + observe) per iteration.
    pub compute_per_iteration: f64,
    pub wall_seconds: f64,
    /// Mean over the queries of the fraction of the per-moment optimum reached, for an
    /// objective in real units (a trace replay).
    pub achieved: Option<f64>,
}

impl RunSummary {
    fn new(run: &RunResult) -> RunSummary {
        let n = run.iterations.len().max(1) as f64;
        RunSummary {
            objective: run.objective.clone(),
            algorithm: run.algorithm.clone(),
            replication: run.replication,
            seed: run.seed,
            iterations: run.iterations.len(),
            average_regret: run.iterations.iter().map(|i| i.regret).sum::<f64>() / n,
            average_regret_after_warmup: {
                let after = run.iterations.get(run.warmup..).unwrap_or(&[]);
                after.iter().map(|i| i.regret).sum::<f64>() / after.len().max(1) as f64
            },
            final_dataset_size: run.iterations.last().map_or(0, |i| i.dataset_size),
            mean_dataset_size: run
                .iterations
                .iter()
                .map(|i| i.dataset_size as f64)
                .sum::<f64>()
                / n,
            compute_per_iteration: run.iterations.iter().map(|i| i.compute).sum::<f64>() / n,
            wall_seconds: run.wall_seconds,
            achieved: run
                .iterations
                .iter()
                .map(|i| i.achieved)
                .sum::<Option<f64>>()
                .map(|sum| sum / n),
        }
    }
}

/// One (objective, algorithm) over its replications.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub objective: String,
    pub label: String,
    pub algorithm: String,
    pub replications: usize,
    /// Mean ± standard error over replications of each run's average regret.
    pub average_regret: MeanSe,
    /// The same over the queries after the warm-up.
    pub average_regret_after_warmup: MeanSe,
    pub iterations: f64,
    pub final_dataset_size: f64,
    pub mean_dataset_size: f64,
    pub compute_per_iteration: f64,
    /// The published average regret of this pair (002's Table 3), where there is one
    /// and the runs follow its protocol (its horizon).
    pub published: Option<MeanSe>,
    /// Mean ± standard error over replications of [`RunSummary::achieved`], where every
    /// run has it.
    pub achieved: Option<MeanSe>,
}

impl Summary {
    /// The summary of `mine`, the runs of `algorithm` on `spec` (at least one), over a
    /// suite of this `horizon`.
    fn of(spec: &ObjectiveSpec, algorithm: &str, mine: &[&RunSummary], horizon: f64) -> Summary {
        let mean = |f: &dyn Fn(&RunSummary) -> f64| {
            mine.iter().map(|r| f(r)).sum::<f64>() / mine.len() as f64
        };
        let each = |f: &dyn Fn(&RunSummary) -> f64| {
            MeanSe::of(&mine.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        Summary {
            objective: spec.name.clone(),
            label: spec.label.clone(),
            algorithm: algorithm.to_string(),
            replications: mine.len(),
            average_regret: each(&|r| r.average_regret),
            average_regret_after_warmup: each(&|r| r.average_regret_after_warmup),
            iterations: mean(&|r| r.iterations as f64),
            final_dataset_size: mean(&|r| r.final_dataset_size as f64),
            mean_dataset_size: mean(&|r| r.mean_dataset_size),
            compute_per_iteration: mean(&|r| r.compute_per_iteration),
            published: (horizon == reference::TABLE_3_HORIZON)
                .then(|| reference::table_3(&spec.name, algorithm))
                .flatten(),
            achieved: mine
                .iter()
                .map(|r| r.achieved)
                .collect::<Option<Vec<f64>>>()
                .map(|a| MeanSe::of(&a)),
        }
    }
}

/// 002's normalised regret of one algorithm (Figure 3, last row of Table 3): per
/// objective on which at least two algorithms ran, (r − r_best)/(r_worst − r_best) over
/// the algorithms of the report, averaged over those objectives (± standard error over
/// them). Between fewer than two algorithms it means nothing, and there is none.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Normalised {
    pub algorithm: String,
    pub normalised_regret: MeanSe,
    pub objectives: usize,
}

/// Mean over replications of a run's state at regular times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub objective: String,
    pub algorithm: String,
    pub times: Vec<f64>,
    /// Running average regret R_t / t at each time (None before the first query).
    pub average_regret: Vec<Option<f64>>,
    /// Active dataset size at each time.
    pub dataset_size: Vec<Option<f64>>,
}

/// Everything a benchmark produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub suite: String,
    pub mode: String,
    pub horizon: f64,
    pub replications: usize,
    /// Runs of the plan; `runs` holds fewer in an interim report (`--report-only`).
    pub planned_runs: usize,
    pub seed: u64,
    pub jobs: usize,
    pub fixed_compute: Option<f64>,
    pub started: String,
    /// Seconds the bench ran; `None` for a report of recorded runs (`--report-only`).
    pub total_seconds: Option<f64>,
    pub objectives: Vec<(String, String)>,
    pub algorithms: Vec<String>,
    /// `--algorithm-options` per algorithm; the others ran with their defaults.
    pub algorithm_options: BTreeMap<String, AlgorithmOptions>,
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
    pub summaries: Vec<Summary>,
    pub normalised: Vec<Normalised>,
    pub runs: Vec<RunSummary>,
    pub series: Vec<Series>,
    /// The schedule of each objective that replays a trace.
    pub scenarios: Vec<ScenarioPhases>,
    /// Per (objective, algorithm, phase) of those objectives, in the order of `summaries`
    /// and then of the phases.
    pub phase_summaries: Vec<PhaseSummary>,
    /// The fraction achieved over the day, per (objective, algorithm) of those objectives.
    pub achieved_series: Vec<AchievedSeries>,
}

fn series(runs: &[&RunResult], horizon: f64) -> (Vec<f64>, Vec<Option<f64>>, Vec<Option<f64>>) {
    let times: Vec<f64> = (1..=SERIES_POINTS)
        .map(|b| horizon * b as f64 / SERIES_POINTS as f64)
        .collect();
    let mut regret = vec![(0.0, 0usize); SERIES_POINTS];
    let mut size = vec![(0.0, 0usize); SERIES_POINTS];
    for run in runs {
        let mut sum = 0.0;
        let mut k = 0;
        for (b, &end) in times.iter().enumerate() {
            while k < run.iterations.len() && run.iterations[k].t <= end {
                sum += run.iterations[k].regret;
                k += 1;
            }
            if k > 0 {
                regret[b].0 += sum / k as f64;
                regret[b].1 += 1;
                size[b].0 += run.iterations[k - 1].dataset_size as f64;
                size[b].1 += 1;
            }
        }
    }
    let mean = |v: &[(f64, usize)]| -> Vec<Option<f64>> {
        v.iter()
            .map(|(s, n)| (*n > 0).then(|| s / *n as f64))
            .collect()
    };
    (times, mean(&regret), mean(&size))
}

impl Report {
    pub fn new(
        plan: &Plan,
        options: &BenchOptions,
        results: &[RunResult],
        total: Option<f64>,
    ) -> Report {
        let runs: Vec<RunSummary> = results.iter().map(RunSummary::new).collect();
        // A column for each algorithm the plan runs at all (the prior-selection ones only
        // run where an objective comes with priors).
        let algorithms: Vec<String> = plan
            .suite
            .algorithms
            .iter()
            .filter(|a| plan.runs.iter().any(|r| r.algorithm.name == a.name))
            .map(|a| a.name.to_string())
            .collect();
        let mut summaries = Vec::new();
        let mut all_series = Vec::new();
        let mut scenarios = Vec::new();
        let mut by_phase = Vec::new();
        let mut achieved_series = Vec::new();
        for spec in &plan.suite.objectives {
            let scenario = spec.scenario().map(|s| ScenarioPhases::new(&spec.name, s));
            for algorithm in &algorithms {
                let mine: Vec<&RunSummary> = runs
                    .iter()
                    .filter(|r| r.objective == spec.name && &r.algorithm == algorithm)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                summaries.push(Summary::of(spec, algorithm, &mine, plan.suite.horizon));
                let raw: Vec<&RunResult> = results
                    .iter()
                    .filter(|r| r.objective == spec.name && &r.algorithm == algorithm)
                    .collect();
                if let Some(scenario) = &scenario {
                    by_phase.extend(phase_summaries(scenario, &spec.name, algorithm, &raw));
                    achieved_series.extend(AchievedSeries::new(
                        &spec.name,
                        algorithm,
                        plan.suite.horizon,
                        &raw,
                    ));
                }
                let (times, average_regret, dataset_size) = series(&raw, plan.suite.horizon);
                all_series.push(Series {
                    objective: spec.name.clone(),
                    algorithm: algorithm.clone(),
                    times,
                    average_regret,
                    dataset_size,
                });
            }
            scenarios.extend(scenario);
        }
        let normalised = normalise(&summaries, &algorithms);
        let mode = match (&options.server, options.server_time) {
            (None, _) => "in-process".to_string(),
            (Some(url), ServerTime::Client) => format!("server {url} (client time)"),
            (Some(url), ServerTime::Wall) => format!("server {url} (wall-clock time)"),
        };
        Report {
            suite: plan.suite.name.clone(),
            mode,
            horizon: plan.suite.horizon,
            replications: plan.suite.replications,
            planned_runs: plan.runs.len(),
            seed: options.seed,
            jobs: options.jobs,
            fixed_compute: options.fixed_compute,
            started: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            total_seconds: total,
            objectives: plan
                .suite
                .objectives
                .iter()
                .map(|o| (o.name.clone(), o.label.clone()))
                .collect(),
            algorithms,
            algorithm_options: plan
                .algorithm_options
                .iter()
                .map(|(name, options)| (name.to_string(), options.clone()))
                .collect(),
            fit_start: plan.fit_start,
            hyperpriors: plan.hyperpriors,
            lengthscales: plan.lengthscales,
            warping: plan.warping,
            level: plan.level,
            summaries,
            normalised,
            runs,
            series: all_series,
            scenarios,
            phase_summaries: by_phase,
            achieved_series,
        }
    }

    /// The label of objective `name` in the report (its name if it has none).
    pub fn label<'a>(&'a self, name: &'a str) -> &'a str {
        self.objectives
            .iter()
            .find(|(n, _)| n == name)
            .map_or(name, |(_, label)| label.as_str())
    }

    /// The summary of (objective, algorithm), if it ran.
    pub fn summary(&self, objective: &str, algorithm: &str) -> Option<&Summary> {
        self.summaries
            .iter()
            .find(|s| s.objective == objective && s.algorithm == algorithm)
    }
}

/// [`Normalised`] of each of `algorithms` from the summaries of the objectives on which
/// at least two of them ran (none for an algorithm that ran on no such objective).
pub(super) fn normalise(summaries: &[Summary], algorithms: &[String]) -> Vec<Normalised> {
    let mut per_algorithm: Vec<Vec<f64>> = vec![Vec::new(); algorithms.len()];
    let mut objectives: Vec<&str> = summaries.iter().map(|s| s.objective.as_str()).collect();
    objectives.dedup();
    for objective in objectives {
        let mine: Vec<&Summary> = summaries
            .iter()
            .filter(|s| s.objective == objective)
            .collect();
        if mine.len() < 2 {
            continue;
        }
        let best = mine
            .iter()
            .map(|s| s.average_regret.mean)
            .fold(f64::INFINITY, f64::min);
        let worst = mine
            .iter()
            .map(|s| s.average_regret.mean)
            .fold(f64::NEG_INFINITY, f64::max);
        for s in mine {
            let value = if worst > best {
                (s.average_regret.mean - best) / (worst - best)
            } else {
                0.0
            };
            if let Some(k) = algorithms.iter().position(|a| a == &s.algorithm) {
                per_algorithm[k].push(value);
            }
        }
    }
    algorithms
        .iter()
        .zip(per_algorithm)
        .filter(|(_, values)| !values.is_empty())
        .map(|(a, values)| Normalised {
            algorithm: a.clone(),
            normalised_regret: MeanSe::of(&values),
            objectives: values.len(),
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn summary(objective: &str, algorithm: &str, regret: f64) -> Summary {
        Summary {
            objective: objective.into(),
            label: objective.into(),
            algorithm: algorithm.into(),
            replications: 1,
            average_regret: MeanSe {
                mean: regret,
                se: 0.0,
            },
            average_regret_after_warmup: MeanSe {
                mean: regret,
                se: 0.0,
            },
            iterations: 1.0,
            final_dataset_size: 1.0,
            mean_dataset_size: 1.0,
            compute_per_iteration: 0.0,
            published: None,
            achieved: None,
        }
    }

    #[test]
    fn normalised_regret_is_zero_for_the_best_and_one_for_the_worst() {
        let algorithms: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let summaries = vec![
            summary("f", "a", 1.0),
            summary("f", "b", 3.0),
            summary("f", "c", 2.0),
            summary("g", "a", 10.0),
            summary("g", "b", 0.0),
            summary("g", "c", 5.0),
        ];
        let n = normalise(&summaries, &algorithms);
        let get = |a: &str| {
            n.iter()
                .find(|x| x.algorithm == a)
                .unwrap()
                .normalised_regret
        };
        assert_eq!(get("a").mean, 0.5);
        assert_eq!(get("b").mean, 0.5);
        assert_eq!(get("c").mean, 0.5);
        assert_eq!(get("a").se, 0.5);
        // An objective on which one algorithm ran counts for nothing; with one algorithm
        // there is no normalised regret at all.
        let mut with_lone = summaries.clone();
        with_lone.push(summary("h", "a", 4.0));
        assert_eq!(normalise(&with_lone, &algorithms), n);
        let alone = vec![summary("f", "a", 1.0), summary("g", "a", 2.0)];
        assert!(normalise(&alone, &algorithms[..1]).is_empty());
    }

    #[test]
    fn algorithms_that_need_priors_have_columns_only_where_an_objective_has_priors() {
        let columns = |suite: &str| {
            let options = crate::options::BenchOptions {
                suite: suite.into(),
                ..Default::default()
            };
            let plan = crate::plan::Plan::new(&options).unwrap();
            Report::new(&plan, &options, &[], None).algorithms
        };
        let gp = columns("gp");
        assert_eq!(gp.len(), 7, "{gp:?}");
        assert!(!gp.iter().any(|a| a == "hp-gp-ts"), "{gp:?}");
        let quick = columns("quick");
        assert_eq!(quick.len(), 11, "{quick:?}");
    }
}
