//! The run log `<output>/runs.jsonl`: one [`RunResult`] per finished run, and the runs of
//! a plan recorded there (for `--resume` and `--report-only`).

use serde::{Deserialize, Serialize};

use super::algorithms::AlgorithmOptions;
use super::error::BenchError;
use super::plan::Plan;
use super::runner::Iteration;
use super::suites::ObjectiveSpec;
use tvbo_core::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;

/// The outcome of one run (one line of `runs.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub objective: String,
    /// The digest of the objective's contents ([`ObjectiveSpec::digest`]): for a replayed
    /// trace, its scenario's and trace's (`fnv1a64:…:…`); absent for an objective defined
    /// in code, and in a line of an earlier version. Runs are reused only with the same
    /// one, so a trace run recorded without it is run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective_digest: Option<String>,
    pub algorithm: String,
    pub replication: usize,
    pub seed: u64,
    /// The protocol the run followed: its horizon and its `--fixed-compute` (`None`:
    /// measured). `--resume` and `--report-only` take only runs of the current protocol.
    pub horizon: f64,
    pub fixed_compute: Option<f64>,
    /// `--algorithm-options` of the run's algorithm (absent: its defaults). Runs are
    /// reused only with the same options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm_options: Option<AlgorithmOptions>,
    /// The sessions' `model.fit_start` (`--fit-start`; absent: `fixed`). Runs are reused
    /// only with the same one.
    #[serde(default, skip_serializing_if = "is_fixed")]
    pub fit_start: FitStart,
    /// The sessions' `model.hyperpriors` (`--hyperpriors`), written in every line; a line
    /// without it (an earlier version's) reads as `none`, the exact likelihood those runs
    /// fitted. Runs are reused only with the same one.
    #[serde(default = "exact_likelihood")]
    pub hyperpriors: Hyperpriors,
    /// The sessions' `model.lengthscales` (`--lengthscales`), written in every line; a
    /// line without it (an earlier version's) reads as `shared`, the isotropic kernel
    /// those runs fitted. Runs of an algorithm that fits tvbo's GP
    /// ([`crate::algorithms::AlgorithmEntry::fits_tvbos_gp`]) are reused only
    /// with the same one; the others' runs do not depend on it.
    #[serde(default = "Lengthscales::of_stored_session")]
    pub lengthscales: Lengthscales,
    /// The sessions' `model.warping` (`--warping`); a line without it (an earlier
    /// version's) reads as `none`. Compared as `lengthscales` is.
    #[serde(default = "Warping::of_stored_session")]
    pub warping: Warping,
    /// The sessions' `model.level` (`--level`); a line without it (an earlier version's)
    /// reads as `none`. Compared as `lengthscales` is.
    #[serde(default = "Level::of_stored_session")]
    pub level: Level,
    /// Random warm-up queries of the session (its `model.warmup`): the first iterations.
    pub warmup: usize,
    pub iterations: Vec<Iteration>,
    /// Real seconds the run took.
    pub wall_seconds: f64,
}

fn is_fixed(fit_start: &FitStart) -> bool {
    *fit_start == FitStart::Fixed
}

/// The hyperpriors of a run recorded before `--hyperpriors` existed.
fn exact_likelihood() -> Hyperpriors {
    Hyperpriors::None
}

/// The file of finished runs, one JSON [`RunResult`] per line, appended as runs finish.
pub const RUN_LOG: &str = "runs.jsonl";

/// The runs of a run log's text, and how many of its lines are not runs of this
/// version's format. A partial last line (an interrupted bench's) is not counted.
fn parse_run_log(text: &str) -> (Vec<RunResult>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let mut runs = Vec::with_capacity(lines.len());
    let mut unreadable = 0usize;
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(run) => runs.push(run),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(_) => unreadable += 1,
        }
    }
    (runs, unreadable)
}

/// The runs recorded in `path`. A partial last line (from an interrupted bench) is
/// ignored silently; any other line that is not a run of this version's format is
/// ignored with a warning that counts them, since `--resume` runs those runs again.
pub(super) fn recorded_runs(path: &std::path::Path) -> Result<Vec<RunResult>, BenchError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let (runs, unreadable) = parse_run_log(&text);
    if unreadable > 0 {
        tracing::warn!(
            path = %path.display(),
            unreadable,
            "lines of the run log are not runs of this version's format; they are ignored"
        );
    }
    Ok(runs)
}

/// The runs of `plan` recorded in the log at `path` (same objective, objective digest,
/// algorithm, algorithm options, fit start, hyperpriors, replication, seed, horizon and
/// `fixed_compute`, and the same lengthscales and warping for an algorithm that fits
/// tvbo's GP), in
/// plan order; `None` where a run is missing. Where a missing run is recorded for another
/// digest of its objective (an edited scenario or trace, or a line of an earlier
/// version), a warning counts those runs: `--resume` runs them again, `--report-only`
/// leaves them out.
pub(super) fn recorded_for_plan(
    plan: &Plan,
    fixed_compute: Option<f64>,
    path: &std::path::Path,
) -> Result<Vec<Option<RunResult>>, BenchError> {
    let (runs, changed) = match_plan(plan, fixed_compute, &recorded_runs(path)?);
    if changed > 0 {
        tracing::warn!(
            path = %path.display(),
            "{changed} runs of this plan are recorded for other contents of their objective \
             (its scenario or trace has changed since, or the run was recorded before runs \
             recorded their objective's digest): they are not reused"
        );
    }
    Ok(runs)
}

/// The runs of `plan` among `recorded` (as [`recorded_for_plan`]), and how many of the
/// plan's runs without one are recorded only for another digest of their objective.
fn match_plan(
    plan: &Plan,
    fixed_compute: Option<f64>,
    recorded: &[RunResult],
) -> (Vec<Option<RunResult>>, usize) {
    let digests: Vec<Option<String>> = plan
        .suite
        .objectives
        .iter()
        .map(ObjectiveSpec::digest)
        .collect();
    let mut changed = 0;
    let runs = plan
        .runs
        .iter()
        .map(|run| {
            let name = &plan.suite.objectives[run.objective].name;
            let mut same_run = recorded.iter().filter(|r| {
                &r.objective == name
                    && r.algorithm == run.algorithm.name
                    && r.algorithm_options.as_ref() == plan.options_of(run.algorithm.name)
                    && r.fit_start == plan.fit_start
                    && r.hyperpriors == plan.hyperpriors
                    && ((r.lengthscales == plan.lengthscales
                        && r.warping == plan.warping
                        && r.level == plan.level)
                        || !run.algorithm.fits_tvbos_gp())
                    && r.replication == run.replication
                    && r.seed == run.seed
                    && r.horizon == plan.suite.horizon
                    && r.fixed_compute == fixed_compute
            });
            let digest = &digests[run.objective];
            let found = same_run.clone().find(|r| &r.objective_digest == digest);
            if found.is_none() && same_run.next().is_some() {
                changed += 1;
            }
            found.cloned()
        })
        .collect();
    (runs, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{BenchOptions, parse_algorithm_options};
    use crate::runner;

    #[test]
    fn the_run_log_counts_lines_of_another_format_but_not_a_partial_last_line() {
        let run = RunResult {
            objective: "hartmann3".into(),
            objective_digest: None,
            algorithm: "bolt".into(),
            replication: 0,
            seed: 7,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options: None,
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            warmup: 15,
            iterations: vec![runner::Iteration {
                t: 1.0,
                setting: Default::default(),
                regret: 0.5,
                achieved: None,
                dataset_size: 1,
                compute: 0.01,
            }],
            wall_seconds: 1.0,
        };
        let line = serde_json::to_string(&run).unwrap();
        let old_format = r#"{"objective":"hartmann3","algorithm":"bolt","replication":1}"#;
        let (runs, unreadable) = parse_run_log(&format!("{line}\n{old_format}\n{line}\n"));
        assert_eq!((runs, unreadable), (vec![run.clone(), run.clone()], 1));
        let partial = &line[..line.len() / 2];
        let (runs, unreadable) = parse_run_log(&format!("{line}\n{partial}"));
        assert_eq!((runs, unreadable), (vec![run.clone()], 0));
        // A broken line that is followed by others was not cut off by an interruption.
        let (runs, unreadable) = parse_run_log(&format!("{partial}\n{line}\n"));
        assert_eq!((runs, unreadable), (vec![run], 1));
    }

    #[test]
    fn resumed_runs_are_those_of_the_same_algorithm_options() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(RUN_LOG);
        let options = |given: &[&str]| BenchOptions {
            suite: "paper".into(),
            objectives: Some(vec!["hartmann3".into()]),
            algorithms: Some(vec!["r-gp-ucb".into()]),
            replications: Some(1),
            algorithm_options: given
                .iter()
                .map(|t| parse_algorithm_options(t).unwrap())
                .collect(),
            ..BenchOptions::default()
        };
        let plan = Plan::new(&options(&[r#"r-gp-ucb={"reset_every":60}"#])).unwrap();
        let run = |algorithm_options: Option<AlgorithmOptions>| RunResult {
            objective: "hartmann3".into(),
            objective_digest: None,
            algorithm: "r-gp-ucb".into(),
            replication: 0,
            seed: plan.runs[0].seed,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options,
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            warmup: 15,
            iterations: Vec::new(),
            wall_seconds: 1.0,
        };
        let with_options = run(plan.options_of("r-gp-ucb").cloned());
        let with_defaults = run(None);
        let default_line = serde_json::to_string(&with_defaults).unwrap();
        assert!(
            !default_line.contains("algorithm_options"),
            "{default_line}"
        );
        std::fs::write(
            &log,
            format!(
                "{default_line}\n{}\n",
                serde_json::to_string(&with_options).unwrap()
            ),
        )
        .unwrap();
        assert_eq!(
            recorded_for_plan(&plan, None, &log).unwrap(),
            vec![Some(with_options)]
        );
        let default_plan = Plan::new(&options(&[])).unwrap();
        assert_eq!(
            recorded_for_plan(&default_plan, None, &log).unwrap(),
            vec![Some(with_defaults)]
        );
        let other_plan = Plan::new(&options(&[r#"r-gp-ucb={"reset_every":30}"#])).unwrap();
        assert_eq!(
            recorded_for_plan(&other_plan, None, &log).unwrap(),
            vec![None]
        );
    }

    #[test]
    fn resumed_runs_are_those_of_the_same_fit_start() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(RUN_LOG);
        let plan = |fit_start| {
            Plan::new(&BenchOptions {
                suite: "paper".into(),
                objectives: Some(vec!["hartmann3".into()]),
                algorithms: Some(vec!["bolt".into()]),
                replications: Some(1),
                fit_start,
                ..BenchOptions::default()
            })
            .unwrap()
        };
        let (fixed, previous) = (plan(FitStart::Fixed), plan(FitStart::Previous));
        let run = RunResult {
            objective: "hartmann3".into(),
            objective_digest: None,
            algorithm: "bolt".into(),
            replication: 0,
            seed: previous.runs[0].seed,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options: None,
            fit_start: FitStart::Previous,
            hyperpriors: Hyperpriors::None,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            warmup: 15,
            iterations: Vec::new(),
            wall_seconds: 1.0,
        };
        let line = serde_json::to_string(&run).unwrap();
        assert!(line.contains(r#""fit_start":"previous""#), "{line}");
        std::fs::write(&log, format!("{line}\n")).unwrap();
        assert_eq!(
            recorded_for_plan(&previous, None, &log).unwrap(),
            vec![Some(run)]
        );
        assert_eq!(recorded_for_plan(&fixed, None, &log).unwrap(), vec![None]);
    }

    #[test]
    fn resumed_runs_are_those_of_the_same_hyperpriors() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(RUN_LOG);
        let plan = |hyperpriors| {
            Plan::new(&BenchOptions {
                suite: "paper".into(),
                objectives: Some(vec!["hartmann3".into()]),
                algorithms: Some(vec!["bolt".into()]),
                replications: Some(1),
                hyperpriors,
                ..BenchOptions::default()
            })
            .unwrap()
        };
        let (none, robust) = (plan(Hyperpriors::None), plan(Hyperpriors::Robust));
        assert_eq!(BenchOptions::default().hyperpriors, Hyperpriors::None);
        let run = |hyperpriors| RunResult {
            objective: "hartmann3".into(),
            objective_digest: None,
            algorithm: "bolt".into(),
            replication: 0,
            seed: robust.runs[0].seed,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options: None,
            fit_start: FitStart::Fixed,
            hyperpriors,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            warmup: 15,
            iterations: Vec::new(),
            wall_seconds: 1.0,
        };
        // Recorded in every line, `none` included.
        let robust_line = serde_json::to_string(&run(Hyperpriors::Robust)).unwrap();
        assert!(
            robust_line.contains(r#""hyperpriors":"robust""#),
            "{robust_line}"
        );
        let none_line = serde_json::to_string(&run(Hyperpriors::None)).unwrap();
        assert!(none_line.contains(r#""hyperpriors":"none""#), "{none_line}");
        std::fs::write(&log, format!("{robust_line}\n")).unwrap();
        assert_eq!(
            recorded_for_plan(&robust, None, &log).unwrap(),
            vec![Some(run(Hyperpriors::Robust))]
        );
        assert_eq!(recorded_for_plan(&none, None, &log).unwrap(), vec![None]);
        // A line of an earlier version, without the field, is a run of `none`.
        let old_line = none_line.replace(r#""hyperpriors":"none","#, "");
        assert!(!old_line.contains("hyperpriors"), "{old_line}");
        std::fs::write(&log, format!("{old_line}\n")).unwrap();
        assert_eq!(
            recorded_for_plan(&none, None, &log).unwrap(),
            vec![Some(run(Hyperpriors::None))]
        );
        assert_eq!(recorded_for_plan(&robust, None, &log).unwrap(), vec![None]);
    }

    /// `--lengthscales` is recorded in every line, and a line without it (recorded before
    /// it existed) is a run of `shared`. After a change of it, `--resume` reuses the runs
    /// of the algorithms that do not fit tvbo's GP (Optuna's samplers, `random`) and runs
    /// tvbo's GP algorithms (`tune-once` too, a GP-UCB session while it tunes) again.
    #[test]
    fn resumed_runs_of_tvbos_gps_are_those_of_the_same_lengthscales_and_peers_any() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(RUN_LOG);
        let names = ["bolt", "optuna-tpe", "optuna-gp", "random", "tune-once"];
        let plan = |lengthscales, warping| {
            Plan::new(&BenchOptions {
                suite: "paper".into(),
                objectives: Some(vec!["hartmann3".into()]),
                algorithms: Some(names.iter().map(|n| n.to_string()).collect()),
                replications: Some(1),
                lengthscales,
                warping,
                level: Level::None,
                ..BenchOptions::default()
            })
            .unwrap()
        };
        let (shared, per_parameter, log_warped) = (
            plan(Lengthscales::Shared, Warping::None),
            plan(Lengthscales::PerParameter, Warping::None),
            plan(Lengthscales::Shared, Warping::Log),
        );
        assert_eq!(BenchOptions::default().lengthscales, Lengthscales::Shared);
        let run = |algorithm: &str, lengthscales| RunResult {
            objective: "hartmann3".into(),
            objective_digest: None,
            algorithm: algorithm.into(),
            replication: 0,
            seed: shared.runs[0].seed,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options: None,
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            lengthscales,
            warping: Warping::None,
            level: Level::None,
            warmup: 15,
            iterations: Vec::new(),
            wall_seconds: 1.0,
        };
        let line = |algorithm: &str, lengthscales| {
            serde_json::to_string(&run(algorithm, lengthscales)).unwrap()
        };
        // Recorded in every line, `shared` included.
        assert!(
            line("bolt", Lengthscales::PerParameter).contains(r#""lengthscales":"per_parameter""#)
        );
        let shared_line = line("bolt", Lengthscales::Shared);
        assert!(
            shared_line.contains(r#""lengthscales":"shared""#),
            "{shared_line}"
        );
        assert!(shared_line.contains(r#""warping":"none""#), "{shared_line}");
        // Lines of an earlier version, without the fields: runs of `shared`, unwarped.
        let old_lines: Vec<String> = names
            .iter()
            .map(|name| {
                line(name, Lengthscales::Shared)
                    .replace(r#","lengthscales":"shared""#, "")
                    .replace(r#","warping":"none""#, "")
            })
            .collect();
        assert!(!old_lines[0].contains("lengthscales"), "{}", old_lines[0]);
        assert!(!old_lines[0].contains("warping"), "{}", old_lines[0]);
        std::fs::write(&log, format!("{}\n", old_lines.join("\n"))).unwrap();
        let by_name = |plan: &Plan, recorded: Vec<Option<RunResult>>| {
            plan.runs
                .iter()
                .zip(recorded)
                .map(|(spec, run)| (spec.algorithm.name, run))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let found = by_name(&shared, recorded_for_plan(&shared, None, &log).unwrap());
        assert_eq!(found.len(), names.len());
        for name in names {
            assert_eq!(found[name], Some(run(name, Lengthscales::Shared)), "{name}");
        }
        // Under `per_parameter` the peers' runs, recorded without the field, are reused;
        // bolt's and tune-once's are not.
        let found = by_name(
            &per_parameter,
            recorded_for_plan(&per_parameter, None, &log).unwrap(),
        );
        for name in ["optuna-tpe", "optuna-gp", "random"] {
            assert_eq!(found[name], Some(run(name, Lengthscales::Shared)), "{name}");
        }
        assert_eq!(found["bolt"], None);
        assert_eq!(found["tune-once"], None);
        // So under `--warping log`.
        let found = by_name(
            &log_warped,
            recorded_for_plan(&log_warped, None, &log).unwrap(),
        );
        for name in ["optuna-tpe", "optuna-gp", "random"] {
            assert!(found[name].is_some(), "{name}");
        }
        assert_eq!((&found["bolt"], &found["tune-once"]), (&None, &None));
        // A run of `per_parameter` is bolt's under `per_parameter` only; a peer's, under
        // either.
        std::fs::write(
            &log,
            format!(
                "{}\n{}\n",
                line("bolt", Lengthscales::PerParameter),
                line("optuna-tpe", Lengthscales::PerParameter)
            ),
        )
        .unwrap();
        let found = by_name(
            &per_parameter,
            recorded_for_plan(&per_parameter, None, &log).unwrap(),
        );
        assert_eq!(found["bolt"], Some(run("bolt", Lengthscales::PerParameter)));
        let found = by_name(&shared, recorded_for_plan(&shared, None, &log).unwrap());
        assert_eq!(found["bolt"], None);
        assert_eq!(
            found["optuna-tpe"],
            Some(run("optuna-tpe", Lengthscales::PerParameter))
        );
    }

    /// A replayed trace's runs record the digest of its scenario and trace files; an
    /// edited scenario or trace (or a line of an earlier version, without a digest) does
    /// not reuse them, and they are counted as recorded for other contents.
    #[test]
    fn an_edited_scenario_or_trace_does_not_reuse_runs() {
        let dir = tempfile::tempdir().unwrap();
        let builtin = &crate::trace::BUILTIN[0];
        let scenario_path = dir.path().join("mine.scenario.json");
        let scenario = builtin
            .scenario
            .replace(r#""name": "compression""#, r#""name": "mine""#);
        std::fs::write(&scenario_path, &scenario).unwrap();
        std::fs::write(dir.path().join("compression.jsonl"), builtin.trace).unwrap();
        let options = BenchOptions {
            suite: "real".into(),
            objectives: Some(vec![format!("trace:{}", scenario_path.display())]),
            algorithms: Some(vec!["random".into()]),
            replications: Some(1),
            horizon: Some(60.0),
            fixed_compute: Some(0.01),
            output: dir.path().join("out"),
            progress: false,
            resume: true,
            ..BenchOptions::default()
        };
        let log = options.output.join(RUN_LOG);
        let first = crate::execute(&Plan::new(&options).unwrap(), &options).unwrap();
        let expected = crate::trace::digest(&scenario, builtin.trace);
        assert_eq!(first[0].objective, "trace-mine");
        assert_eq!(
            first[0].objective_digest.as_deref(),
            Some(expected.as_str())
        );
        let line = std::fs::read_to_string(&log).unwrap();
        assert!(
            line.contains(&format!(r#""objective_digest":"{expected}""#)),
            "{line}"
        );
        // Unchanged files: the run is reused (the very run, its wall time included).
        let again = crate::execute(&Plan::new(&options).unwrap(), &options).unwrap();
        assert_eq!(again, first);
        let lines = |log: &std::path::Path| std::fs::read_to_string(log).unwrap().lines().count();
        assert_eq!(lines(&log), 1);
        // An edited scenario (its description only) is another objective to --resume.
        let edited = scenario.replacen(r#""description": ""#, r#""description": "Edited. "#, 1);
        assert_ne!(edited, scenario);
        std::fs::write(&scenario_path, &edited).unwrap();
        let plan = Plan::new(&options).unwrap();
        let (runs, changed) = match_plan(&plan, options.fixed_compute, &first);
        assert_eq!((runs, changed), (vec![None], 1));
        let rerun = crate::execute(&plan, &options).unwrap();
        assert_ne!(rerun[0].objective_digest, first[0].objective_digest);
        assert_eq!(lines(&log), 2, "the earlier run stays in the log");
        // So is an edited trace (one more blank line), and a line without a digest.
        std::fs::write(
            dir.path().join("compression.jsonl"),
            format!("{}\n", builtin.trace),
        )
        .unwrap();
        let plan = Plan::new(&options).unwrap();
        let (runs, changed) = match_plan(&plan, options.fixed_compute, &[rerun[0].clone()]);
        assert_eq!((runs, changed), (vec![None], 1));
        std::fs::write(&scenario_path, &scenario).unwrap();
        std::fs::write(dir.path().join("compression.jsonl"), builtin.trace).unwrap();
        let plan = Plan::new(&options).unwrap();
        let old_line = RunResult {
            objective_digest: None,
            ..first[0].clone()
        };
        let (runs, changed) = match_plan(&plan, options.fixed_compute, &[old_line]);
        assert_eq!((runs, changed), (vec![None], 1));
        // Back to the first files, the first run is found again, and nothing is counted.
        assert_eq!(
            recorded_for_plan(&plan, options.fixed_compute, &log).unwrap(),
            vec![Some(first[0].clone())]
        );
        // An objective defined in code records no digest and matches by name.
        assert_eq!(
            crate::suites::ObjectiveSpec::synthetic(crate::synthetic::SyntheticFunction::Powell)
                .digest(),
            None
        );
    }
}
