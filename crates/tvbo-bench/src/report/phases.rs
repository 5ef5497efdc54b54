//! The fraction of the optimum achieved through a replayed trace's day: by phase of its
//! scenario ([`PhaseSummary`]: per (objective, algorithm, phase), over the replications)
//! and over time ([`AchievedSeries`]: a rolling mean), for the objectives that replay a
//! trace ([`ScenarioPhases`]). Synthetic objectives have no phases and get neither.

use serde::Serialize;

use crate::run_log::RunResult;
use crate::runner::Iteration;
use crate::stats::MeanSe;
use crate::trace::Scenario;

/// The rolling mean's window at most (seconds of simulated time).
const ROLLING_WINDOW: f64 = 300.0;
/// The rolling mean's window at most, as a fraction of the horizon, so that a short run
/// still shows its phases.
const ROLLING_FRACTION: f64 = 1.0 / 12.0;
/// Points of the rolling mean over the horizon.
const ROLLING_POINTS: usize = 240;

/// One phase of a scenario's period: the condition the system runs under from `start` to
/// `end` (seconds from the period's start).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub condition: String,
    pub start: f64,
    pub end: f64,
}

/// The schedule of a replayed trace: its scenario's phases, which repeat every `period`
/// seconds, the last `ramp_seconds` of each blending into the next.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioPhases {
    pub objective: String,
    pub phases: Vec<Phase>,
    pub period: f64,
    pub ramp_seconds: f64,
    #[serde(skip_serializing)]
    scenario: Scenario,
}

impl ScenarioPhases {
    /// The phases of `scenario`, the scenario of objective `objective`.
    pub fn new(objective: &str, scenario: Scenario) -> ScenarioPhases {
        let mut start = 0.0;
        let phases = scenario
            .phases
            .iter()
            .map(|p| {
                let phase = Phase {
                    condition: p.condition.clone(),
                    start,
                    end: start + p.seconds,
                };
                start = phase.end;
                phase
            })
            .collect();
        ScenarioPhases {
            objective: objective.to_string(),
            phases,
            period: start,
            ramp_seconds: scenario.ramp_seconds,
            scenario,
        }
    }

    /// The index of the phase time `t` falls in (a ramp is the end of its phase, so a
    /// query in a ramp counts for the phase the ramp ends).
    pub fn phase_at(&self, t: f64) -> usize {
        self.scenario.phase_at(t).0
    }

    /// Every occurrence of a phase within [0, `horizon`]: (phase index, start, end), the
    /// last one cut at the horizon.
    pub fn bands(&self, horizon: f64) -> Vec<(usize, f64, f64)> {
        let mut bands = Vec::new();
        let mut offset = 0.0;
        while offset < horizon {
            for (k, phase) in self.phases.iter().enumerate() {
                let start = offset + phase.start;
                if start >= horizon {
                    break;
                }
                bands.push((k, start, (offset + phase.end).min(horizon)));
            }
            offset += self.period;
        }
        bands
    }
}

/// One (objective, algorithm, phase) over the replications: each run's queries in the
/// phase (every occurrence of it within the horizon together) averaged, then mean ±
/// standard error over the runs that made a query in it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseSummary {
    pub objective: String,
    pub algorithm: String,
    /// Index into the scenario's phases (from 0; the report numbers them from 1).
    pub phase: usize,
    pub condition: String,
    /// Runs with a query in the phase.
    pub replications: usize,
    /// Mean over those runs of their queries in the phase.
    pub iterations: f64,
    /// Mean ± standard error over those runs of the mean regret of their queries in it.
    pub average_regret: MeanSe,
    /// The same of the fraction of the per-moment optimum achieved, where every query in
    /// the phase has one.
    pub achieved: Option<MeanSe>,
}

/// The mean over `iterations` of the fraction achieved; `None` if one has none (or there
/// are none).
fn mean_achieved(iterations: &[&Iteration]) -> Option<f64> {
    let sum: Option<f64> = iterations.iter().map(|i| i.achieved).sum();
    sum.filter(|_| !iterations.is_empty())
        .map(|s| s / iterations.len() as f64)
}

/// The phase summaries of `runs`, the runs of (`objective`, `algorithm`), under
/// `scenario`: one per phase in which a run made a query, in the scenario's order.
pub fn phase_summaries(
    scenario: &ScenarioPhases,
    objective: &str,
    algorithm: &str,
    runs: &[&RunResult],
) -> Vec<PhaseSummary> {
    (0..scenario.phases.len())
        .filter_map(|k| {
            let per_run: Vec<Vec<&Iteration>> = runs
                .iter()
                .map(|run| {
                    run.iterations
                        .iter()
                        .filter(|i| scenario.phase_at(i.t) == k)
                        .collect::<Vec<_>>()
                })
                .filter(|mine| !mine.is_empty())
                .collect();
            if per_run.is_empty() {
                return None;
            }
            let regrets: Vec<f64> = per_run
                .iter()
                .map(|mine| mine.iter().map(|i| i.regret).sum::<f64>() / mine.len() as f64)
                .collect();
            let achieved: Option<Vec<f64>> =
                per_run.iter().map(|mine| mean_achieved(mine)).collect();
            Some(PhaseSummary {
                objective: objective.to_string(),
                algorithm: algorithm.to_string(),
                phase: k,
                condition: scenario.phases[k].condition.clone(),
                replications: per_run.len(),
                iterations: per_run.iter().map(Vec::len).sum::<usize>() as f64
                    / per_run.len() as f64,
                average_regret: MeanSe::of(&regrets),
                achieved: achieved.map(|a| MeanSe::of(&a)),
            })
        })
        .collect()
}

/// The fraction of the optimum achieved over time, of one (objective, algorithm): at
/// each of `times`, each run's mean over its queries within `window` / 2 of it (a
/// centred rolling mean), averaged over the runs with a query there (`None`: none has).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AchievedSeries {
    pub objective: String,
    pub algorithm: String,
    /// Seconds of simulated time the rolling mean spans.
    pub window: f64,
    pub times: Vec<f64>,
    pub achieved: Vec<Option<f64>>,
}

impl AchievedSeries {
    /// The series of `runs`, the runs of (`objective`, `algorithm`) over [0, `horizon`];
    /// `None` when no run's queries have a fraction achieved.
    pub fn new(
        objective: &str,
        algorithm: &str,
        horizon: f64,
        runs: &[&RunResult],
    ) -> Option<AchievedSeries> {
        let runs: Vec<&RunResult> = runs
            .iter()
            .copied()
            .filter(|r| r.iterations.iter().any(|i| i.achieved.is_some()))
            .collect();
        if runs.is_empty() {
            return None;
        }
        let window = rolling_window(horizon);
        let times: Vec<f64> = (0..=ROLLING_POINTS)
            .map(|k| horizon * k as f64 / ROLLING_POINTS as f64)
            .collect();
        let achieved = times
            .iter()
            .map(|&at| {
                let means: Vec<f64> = runs
                    .iter()
                    .filter_map(|run| {
                        let near: Vec<f64> = run
                            .iterations
                            .iter()
                            .filter(|i| (i.t - at).abs() <= window / 2.0)
                            .filter_map(|i| i.achieved)
                            .collect();
                        (!near.is_empty()).then(|| near.iter().sum::<f64>() / near.len() as f64)
                    })
                    .collect();
                (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
            })
            .collect();
        Some(AchievedSeries {
            objective: objective.to_string(),
            algorithm: algorithm.to_string(),
            window,
            times,
            achieved,
        })
    }
}

/// The file name of the plot of objective `objective`'s fraction achieved over the day.
pub fn achieved_plot_file(objective: &str) -> String {
    format!("achieved-{objective}.svg")
}

/// The rolling mean's window for runs of `horizon` seconds: 5 minutes, or a twelfth of
/// a shorter horizon.
fn rolling_window(horizon: f64) -> f64 {
    ROLLING_WINDOW.min(horizon * ROLLING_FRACTION)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Phases `a` (100 s, its last 20 s a ramp into `b`) and `b` (50 s).
    pub(crate) fn scenario() -> ScenarioPhases {
        let scenario = Scenario::parse(
            r#"{"name": "s", "label": "S", "trace": "s.jsonl", "goal": "minimize",
                "objective": [{"quantity": "cpu"}], "evaluation_seconds": 1,
                "phases": [{"condition": "a", "seconds": 100}, {"condition": "b", "seconds": 50}],
                "ramp_seconds": 20}"#,
        )
        .unwrap();
        ScenarioPhases::new("trace-s", scenario)
    }

    /// A run of `algorithm` on `trace-s` whose queries are (t, fraction achieved), its
    /// regret 1 − the fraction.
    pub(crate) fn run(algorithm: &str, points: &[(f64, f64)]) -> RunResult {
        let iterations: Vec<Iteration> = points
            .iter()
            .map(|&(t, achieved)| Iteration {
                t,
                setting: Default::default(),
                regret: 1.0 - achieved,
                achieved: Some(achieved),
                dataset_size: 1,
                compute: 0.0,
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "objective": "trace-s", "algorithm": algorithm, "replication": 0, "seed": 0,
            "horizon": 300.0, "fixed_compute": 0.0, "warmup": 0,
            "iterations": iterations, "wall_seconds": 0.0,
        }))
        .unwrap()
    }

    #[test]
    fn phases_repeat_over_the_horizon_and_ramps_end_their_phase() {
        let s = scenario();
        assert_eq!(s.period, 150.0);
        assert_eq!((s.phases[1].start, s.phases[1].end), (100.0, 150.0));
        assert_eq!(
            s.bands(260.0),
            vec![
                (0, 0.0, 100.0),
                (1, 100.0, 150.0),
                (0, 150.0, 250.0),
                (1, 250.0, 260.0)
            ]
        );
        // t = 90 is in a's ramp into b: it counts for a.
        assert_eq!(s.phase_at(90.0), 0);
        assert_eq!(s.phase_at(120.0), 1);
        assert_eq!(s.phase_at(160.0), 0);
    }

    /// Each run's queries of a phase, every occurrence together, are averaged; then the
    /// runs, mean ± standard error. A phase without queries has no row.
    #[test]
    fn phase_summaries_average_each_run_then_the_runs() {
        let s = scenario();
        let one = run("x", &[(10.0, 0.5), (90.0, 0.7), (120.0, 0.2), (160.0, 0.9)]);
        let two = run("x", &[(20.0, 0.3), (130.0, 0.4)]);
        let rows = phase_summaries(&s, "trace-s", "x", &[&one, &two]);
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!((a.phase, a.condition.as_str(), a.replications), (0, "a", 2));
        assert_eq!(a.iterations, 2.0);
        // Run one's a: (0.5 + 0.7 + 0.9)/3 = 0.7; run two's: 0.3.
        let achieved = a.achieved.unwrap();
        assert!((achieved.mean - 0.5).abs() < 1e-12, "{achieved:?}");
        assert!((achieved.se - 0.2).abs() < 1e-12, "{achieved:?}");
        assert!((a.average_regret.mean - 0.5).abs() < 1e-12);
        let b = &rows[1];
        assert!((b.achieved.unwrap().mean - 0.3).abs() < 1e-12);
        let only_a = run("x", &[(10.0, 0.5)]);
        assert_eq!(phase_summaries(&s, "trace-s", "x", &[&only_a]).len(), 1);
    }

    /// The rolling mean spans its window around each time, averaged over the runs with a
    /// query there; where no run has one, there is no value.
    #[test]
    fn the_rolling_mean_averages_the_window_then_the_runs() {
        let one = run("x", &[(0.0, 1.0), (10.0, 0.5), (200.0, 0.2)]);
        let two = run("x", &[(5.0, 0.0)]);
        let series = AchievedSeries::new("trace-s", "x", 240.0, &[&one, &two]).unwrap();
        assert_eq!(series.window, 20.0);
        assert_eq!(series.times.len(), ROLLING_POINTS + 1);
        // At t = 0 the window (±10 s) holds run one's queries at 0 and 10 (mean 0.75)
        // and run two's at 5 (0.0): their mean is 0.375.
        assert!((series.achieved[0].unwrap() - 0.375).abs() < 1e-12);
        let at = |t: f64| {
            let k = series.times.iter().position(|&x| x == t).unwrap();
            series.achieved[k]
        };
        assert_eq!(at(100.0), None);
        assert!((at(200.0).unwrap() - 0.2).abs() < 1e-12);
        let synthetic = RunResult {
            iterations: vec![Iteration {
                achieved: None,
                ..one.iterations[0].clone()
            }],
            ..one.clone()
        };
        assert!(AchievedSeries::new("f", "x", 240.0, &[&synthetic]).is_none());
        assert_eq!(rolling_window(7200.0), 300.0);
    }
}
