//! Executing a plan: its runs on `--jobs` threads, each driven in-process or through a
//! server's HTTP API, appended to the run log as they finish (or reused from it with
//! `--resume`); and [`run`], the whole of `tvbo bench`: plan, execute (or read the
//! recorded runs), report.

use std::collections::{HashMap, VecDeque};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::algorithms::AlgorithmKind;
use super::error::BenchError;
use super::http;
use super::objective::Objective;
use super::options::{BenchOptions, ServerTime};
use super::peers::{Optuna, TuneOnce};
use super::plan::{Plan, RunSpec};
use super::report;
use super::run_log::{RUN_LOG, RunResult, recorded_for_plan, recorded_runs};
use super::runner::{self, ClockMode, Driver, InProcess};
use super::seeds::{derive_seed, name_hash};
use super::session::{session_config, session_request};
use tvbo_core::domain::config::MAX_SEED;

/// Optuna's random trials before its samplers model (`n_startup_trials`, the default of
/// both TPE and GP): the warm-up of an Optuna run.
const OPTUNA_STARTUP_TRIALS: usize = 10;

/// Objective instances shared by the runs that need them: made on first use, dropped
/// after the last run that uses them (a GP sample holds ~12 MB).
struct Instances {
    horizon: f64,
    map: Mutex<HashMap<InstanceKey, Slot>>,
}

/// (objective index, seed; 0 for objectives that do not depend on the seed).
type InstanceKey = (usize, u64);

/// An instance once made, and the number of runs still to use it.
struct Slot {
    instance: Option<Arc<dyn Objective>>,
    remaining: usize,
}

impl Instances {
    fn new(plan: &Plan) -> Instances {
        let mut map: HashMap<InstanceKey, Slot> = HashMap::new();
        for run in &plan.runs {
            map.entry(Self::key(plan, run))
                .or_insert(Slot {
                    instance: None,
                    remaining: 0,
                })
                .remaining += 1;
        }
        Instances {
            horizon: plan.suite.horizon,
            map: Mutex::new(map),
        }
    }

    fn key(plan: &Plan, run: &RunSpec) -> InstanceKey {
        let spec = &plan.suite.objectives[run.objective];
        (
            run.objective,
            if spec.depends_on_seed() { run.seed } else { 0 },
        )
    }

    /// The instance of a run, made under the lock on first use (so it is made once).
    fn get(&self, plan: &Plan, run: &RunSpec) -> Result<Arc<dyn Objective>, BenchError> {
        let key = Self::key(plan, run);
        let mut map = self.map.lock().expect("instances lock");
        let entry = map.get_mut(&key).expect("every run's key is counted");
        match &entry.instance {
            Some(instance) => Ok(instance.clone()),
            None => {
                let instance =
                    plan.suite.objectives[run.objective].instantiate(self.horizon, key.1)?;
                entry.instance = Some(instance.clone());
                Ok(instance)
            }
        }
    }

    /// One run of this key is done; the last one drops the instance.
    fn release(&self, plan: &Plan, run: &RunSpec) {
        let key = Self::key(plan, run);
        let mut map = self.map.lock().expect("instances lock");
        if let Some(entry) = map.get_mut(&key) {
            entry.remaining -= 1;
            if entry.remaining == 0 {
                map.remove(&key);
            }
        }
    }
}

/// Runs one (objective, algorithm, replication).
fn run_one(
    plan: &Plan,
    options: &BenchOptions,
    objective: &dyn Objective,
    run: &RunSpec,
    http: Option<&http::Client>,
    progress: &ProgressBar,
) -> Result<RunResult, BenchError> {
    let spec = &plan.suite.objectives[run.objective];
    let horizon = plan.suite.horizon;
    let name = format!(
        "bench {} {} r{} seed {}",
        spec.name, run.algorithm.name, run.replication, run.seed
    );
    let noise_seed = derive_seed(run.seed, name_hash(&spec.name));
    let time = match http {
        None => ServerTime::Client,
        Some(_) => options.server_time,
    };
    let algorithm_options = plan.options_of(run.algorithm.name);
    // The API takes seeds up to 2^53 − 1 (so that every JSON client reads them exactly):
    // the session's seed is the run seed's low 53 bits, in-process and over HTTP alike.
    let session_seed = run.seed & MAX_SEED;
    let request = session_request(
        objective,
        &name,
        run.algorithm,
        algorithm_options,
        session_seed,
        time,
        plan.model_settings(),
    )?;
    let config = session_config(&request, session_seed)?;
    let warmup = match run.algorithm.kind {
        AlgorithmKind::Optuna { .. } => OPTUNA_STARTUP_TRIALS,
        _ => config.model.warmup as usize,
    };
    let started = Instant::now();
    let clock = match (http, time) {
        (Some(_), ServerTime::Wall) => ClockMode::Wall,
        _ => ClockMode::Simulated {
            fixed_compute: options.fixed_compute,
        },
    };
    let session = || -> Result<Box<dyn Driver + '_>, BenchError> {
        Ok(match http {
            None => Box::new(InProcess::new(config)?),
            Some(client) => Box::new(http::HttpDriver::create(client, &request, time)?),
        })
    };
    let mut driver: Box<dyn Driver + '_> = match run.algorithm.kind {
        AlgorithmKind::Session => session()?,
        AlgorithmKind::TuneOnce { seconds } => Box::new(TuneOnce::new(session()?, seconds)),
        AlgorithmKind::Optuna {
            sampler,
            restart_every,
        } => Box::new(Optuna::start(
            &request["parameters"],
            sampler,
            session_seed,
            restart_every,
        )?),
    };
    let iterations = runner::run(
        driver.as_mut(),
        objective,
        horizon,
        clock,
        noise_seed,
        |t| progress.set_position((t / horizon * 1000.0) as u64),
    )?;
    Ok(RunResult {
        objective: spec.name.clone(),
        objective_digest: spec.digest(),
        algorithm: run.algorithm.name.to_string(),
        replication: run.replication,
        seed: run.seed,
        horizon,
        fixed_compute: options.fixed_compute,
        algorithm_options: algorithm_options.cloned(),
        fit_start: plan.fit_start,
        hyperpriors: plan.hyperpriors,
        lengthscales: plan.lengthscales,
        warping: plan.warping,
        level: plan.level,
        warmup,
        iterations,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The run log of `options.output`, opened for this plan's runs, and the runs of the
/// plan it already holds (with `options.resume`; else none). With `--resume` the log is
/// rewritten with every run it holds, this plan's and any other's (another algorithm set
/// or mode in the same directory), less a partial last line of an interrupted bench, so
/// that the runs appended next start a line of their own. Without it the log starts
/// empty.
fn open_run_log(
    plan: &Plan,
    options: &BenchOptions,
) -> Result<(Vec<Option<RunResult>>, std::fs::File), BenchError> {
    use std::io::Write as _;
    std::fs::create_dir_all(&options.output)?;
    let log_path = options.output.join(RUN_LOG);
    let (done, kept) = if options.resume {
        for name in &options.rerun {
            super::algorithms::algorithm(name)?;
        }
        // A recorded run of an algorithm to run again, on an objective of this plan.
        let rerun = |run: &RunResult| {
            options.rerun.contains(&run.algorithm)
                && plan
                    .suite
                    .objectives
                    .iter()
                    .any(|o| o.name == run.objective)
        };
        let mut done = recorded_for_plan(plan, options.fixed_compute, &log_path)?;
        for slot in &mut done {
            if slot.as_ref().is_some_and(rerun) {
                *slot = None;
            }
        }
        let mut kept = recorded_runs(&log_path)?;
        kept.retain(|run| !rerun(run));
        (done, kept)
    } else {
        (vec![None; plan.runs.len()], Vec::new())
    };
    let mut log = std::fs::File::create(&log_path)?;
    for run in &kept {
        writeln!(
            log,
            "{}",
            serde_json::to_string(run).expect("runs serialise")
        )?;
    }
    Ok((done, log))
}

/// Appends a finished run to the run log, flushed: an interrupted bench keeps it.
fn append_run(log: &Mutex<std::fs::File>, result: &RunResult) -> Result<(), BenchError> {
    use std::io::Write as _;
    let line = serde_json::to_string(result).expect("runs serialise");
    let mut log = log.lock().expect("log lock");
    writeln!(log, "{line}")?;
    log.flush()?;
    Ok(())
}

/// The progress display: one bar for the suite (`runs`, of which `pending` still to
/// run), and the style of each run's bar. Drawn on standard error when it is a terminal
/// and `options.progress`; hidden otherwise.
fn progress_bars(
    options: &BenchOptions,
    runs: usize,
    pending: usize,
) -> (MultiProgress, ProgressBar, ProgressStyle) {
    let show = options.progress && std::io::stderr().is_terminal();
    let bars = MultiProgress::with_draw_target(if show {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let total = bars.add(ProgressBar::new(runs as u64));
    total.set_position((runs - pending) as u64);
    total.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} runs, {elapsed_precise}")
            .expect("template")
            .progress_chars("=> "),
    );
    total.set_prefix("bench");
    let run_style = ProgressStyle::with_template("{prefix:>12} [{bar:30}] {msg}")
        .expect("template")
        .progress_chars("=> ");
    (bars, total, run_style)
}

/// Runs every run of the plan on `options.jobs` threads; results in plan order. Each
/// finished run is appended to `<output>/runs.jsonl`; with `options.resume` the runs
/// already there are reused instead of run again.
pub fn execute(plan: &Plan, options: &BenchOptions) -> Result<Vec<RunResult>, BenchError> {
    let (done, log) = open_run_log(plan, options)?;
    let log = Mutex::new(log);
    let pending: VecDeque<usize> = (0..plan.runs.len())
        .filter(|&i| done[i].is_none())
        .collect();
    let (bars, total, run_style) = progress_bars(options, plan.runs.len(), pending.len());
    let workers = options.jobs.min(pending.len()).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if workers > cores && options.fixed_compute.is_none() {
        tracing::warn!(
            jobs = workers,
            cores,
            "more parallel runs than cores: the compute each run is charged inflates, and \
             with it its results (docs/benchmarks.md, \"Load on the machine\"); use \
             --jobs {cores} or fewer"
        );
    }
    let queue: Mutex<VecDeque<usize>> = Mutex::new(pending);
    let results: Mutex<Vec<Option<RunResult>>> = Mutex::new(done);
    let failure: Mutex<Option<BenchError>> = Mutex::new(None);
    let instances = Instances::new(plan);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let client = match &options.server {
                    Some(base) => match http::Client::new(base, options.api_key.as_deref()) {
                        Ok(c) => Some(c),
                        Err(e) => {
                            failure.lock().expect("failure lock").get_or_insert(e);
                            return;
                        }
                    },
                    None => None,
                };
                loop {
                    if failure.lock().expect("failure lock").is_some() {
                        return;
                    }
                    let Some(index) = queue.lock().expect("queue lock").pop_front() else {
                        return;
                    };
                    let run = &plan.runs[index];
                    let spec = &plan.suite.objectives[run.objective];
                    let bar = bars.add(ProgressBar::new(1000));
                    bar.set_style(run_style.clone());
                    bar.set_prefix(run.algorithm.name);
                    bar.set_message(format!("{} r{}", spec.name, run.replication));
                    let outcome = instances.get(plan, run).and_then(|objective| {
                        run_one(
                            plan,
                            options,
                            objective.as_ref(),
                            run,
                            client.as_ref(),
                            &bar,
                        )
                    });
                    instances.release(plan, run);
                    bar.finish_and_clear();
                    bars.remove(&bar);
                    total.inc(1);
                    match outcome {
                        Ok(result) => {
                            tracing::info!(
                                objective = %result.objective,
                                algorithm = %result.algorithm,
                                replication = result.replication,
                                iterations = result.iterations.len(),
                                seconds = result.wall_seconds,
                                "run done"
                            );
                            if let Err(e) = append_run(&log, &result) {
                                failure.lock().expect("failure lock").get_or_insert(e);
                                return;
                            }
                            results.lock().expect("results lock")[index] = Some(result);
                        }
                        Err(e) => {
                            failure.lock().expect("failure lock").get_or_insert(e);
                            return;
                        }
                    }
                }
            });
        }
    });
    total.finish_and_clear();
    if let Some(e) = failure.into_inner().expect("failure lock") {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .map(|r| r.expect("every run finished"))
        .collect())
}

/// Plans, runs, writes the report files into `options.output`, and returns the report.
/// With `options.report_only`, nothing runs and the report holds the recorded runs.
pub fn run(options: &BenchOptions) -> Result<report::Report, BenchError> {
    let plan = Plan::new(options)?;
    let started = Instant::now();
    let (results, total_seconds) = if options.report_only {
        let recorded: Vec<RunResult> =
            recorded_for_plan(&plan, options.fixed_compute, &options.output.join(RUN_LOG))?
                .into_iter()
                .flatten()
                .collect();
        if recorded.is_empty() {
            return Err(BenchError::Options(format!(
                "--report-only: no run of this suite is recorded in {}",
                options.output.join(RUN_LOG).display()
            )));
        }
        (recorded, None)
    } else {
        let results = execute(&plan, options)?;
        (results, Some(started.elapsed().as_secs_f64()))
    };
    let report = report::Report::new(&plan, options, &results, total_seconds);
    report.write(&options.output)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    /// `--rerun`: with `--resume`, the named algorithm's recorded runs are dropped from
    /// the log and run again; the others' are reused as they are; an unknown name is
    /// refused.
    #[test]
    fn rerun_runs_the_named_algorithms_again_and_reuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = BenchOptions {
            suite: "real".into(),
            objectives: Some(vec!["trace-postgres".into()]),
            algorithms: Some(vec!["random".into(), "tune-once".into()]),
            replications: Some(1),
            horizon: Some(120.0),
            fixed_compute: Some(0.01),
            output: dir.path().to_path_buf(),
            progress: false,
            resume: true,
            ..BenchOptions::default()
        };
        let first = execute(&Plan::new(&options).unwrap(), &options).unwrap();
        options.rerun = vec!["random".into()];
        let second = execute(&Plan::new(&options).unwrap(), &options).unwrap();
        let by = |runs: &[RunResult], name: &str| {
            runs.iter().find(|r| r.algorithm == name).cloned().unwrap()
        };
        assert_eq!(by(&second, "tune-once"), by(&first, "tune-once"));
        assert_ne!(
            by(&second, "random").wall_seconds,
            by(&first, "random").wall_seconds,
            "run again"
        );
        let log = recorded_runs(&dir.path().join(RUN_LOG)).unwrap();
        assert_eq!(log.len(), 2, "the dropped run is not in the log twice");
        options.rerun = vec!["nope".into()];
        let e = execute(&Plan::new(&options).unwrap(), &options).unwrap_err();
        assert!(e.to_string().contains("unknown algorithm"), "{e}");
    }

    /// After a change of `--lengthscales`, `--resume --rerun gp-ucb` runs tvbo's GP again
    /// and reuses the run of an algorithm that fits none (`random`, as Optuna's), recorded
    /// before runs recorded the field; without `--rerun`, the GP's runs of the other
    /// lengthscales are not reused either, and stay in the log.
    #[test]
    fn a_change_of_lengthscales_runs_tvbos_gps_again_and_reuses_the_rest() {
        use tvbo_core::domain::config::Lengthscales;
        let dir = tempfile::tempdir().unwrap();
        let mut options = BenchOptions {
            suite: "real".into(),
            objectives: Some(vec!["trace-postgres".into()]),
            algorithms: Some(vec!["random".into(), "gp-ucb".into()]),
            replications: Some(1),
            horizon: Some(120.0),
            fixed_compute: Some(0.01),
            output: dir.path().to_path_buf(),
            progress: false,
            resume: true,
            ..BenchOptions::default()
        };
        let first = execute(&Plan::new(&options).unwrap(), &options).unwrap();
        let by = |runs: &[RunResult], name: &str| {
            runs.iter().find(|r| r.algorithm == name).cloned().unwrap()
        };
        assert_eq!(by(&first, "gp-ucb").lengthscales, Lengthscales::Shared);
        // The log as an earlier version wrote it.
        let log_path = dir.path().join(RUN_LOG);
        let text = std::fs::read_to_string(&log_path).unwrap();
        let old = text.replace(r#","lengthscales":"shared""#, "");
        assert!(!old.contains("lengthscales"), "{old}");
        std::fs::write(&log_path, old).unwrap();
        options.lengthscales = Lengthscales::PerParameter;
        options.rerun = vec!["gp-ucb".into()];
        let second = execute(&Plan::new(&options).unwrap(), &options).unwrap();
        assert_eq!(by(&second, "random"), by(&first, "random"));
        assert_eq!(
            by(&second, "gp-ucb").lengthscales,
            Lengthscales::PerParameter
        );
        let log = recorded_runs(&log_path).unwrap();
        assert_eq!(log.len(), 2, "the dropped run is not in the log");
        // Back to `shared` without --rerun: gp-ucb's run of per-parameter lengthscales is
        // not reused, but kept; random's still is.
        options.lengthscales = Lengthscales::Shared;
        options.rerun = Vec::new();
        let third = execute(&Plan::new(&options).unwrap(), &options).unwrap();
        assert_eq!(by(&third, "random"), by(&first, "random"));
        assert_eq!(by(&third, "gp-ucb").lengthscales, Lengthscales::Shared);
        assert_ne!(
            by(&third, "gp-ucb").wall_seconds,
            by(&second, "gp-ucb").wall_seconds
        );
        assert_eq!(recorded_runs(&log_path).unwrap().len(), 3);
    }
}
