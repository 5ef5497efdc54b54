//! `tvbo bench` end to end: a tiny suite writes its report; a fixed compute time makes a
//! run a pure function of its seed; the HTTP mode drives a real server and agrees with
//! the in-process mode.

use crate::common;

use common::TestServer;
use tvbo::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo::domain::hyperpriors::Hyperpriors;
use tvbo_bench::{self as bench, BenchOptions, Plan, RunResult, ServerTime};

fn options(output: &std::path::Path) -> BenchOptions {
    BenchOptions {
        suite: "quick".into(),
        objectives: Some(vec![
            "hartmann3".into(),
            "tvgp-se-0.01".into(),
            "prior-lengthscale".into(),
        ]),
        algorithms: None,
        algorithm_options: Vec::new(),
        fit_start: FitStart::Fixed,
        hyperpriors: Hyperpriors::None,
        lengthscales: Lengthscales::Shared,
        warping: Warping::None,
        level: Level::None,
        replications: Some(1),
        horizon: Some(20.5),
        jobs: 2,
        seed: 11,
        fixed_compute: Some(0.05),
        output: output.to_path_buf(),
        server: None,
        server_time: ServerTime::Client,
        api_key: None,
        progress: false,
        resume: false,
        rerun: Vec::new(),
        report_only: false,
    }
}

/// The runs of the tiny suite: the algorithms without priors on all three objectives,
/// those that select among priors on 003's setup only.
fn tiny_suite_runs() -> usize {
    let without_priors = session_algorithms().filter(|a| !a.needs_priors()).count();
    3 * without_priors + (session_algorithms().count() - without_priors)
}

/// The service's algorithms (the suites' "every algorithm"; the peers run where named).
fn session_algorithms() -> impl Iterator<Item = &'static bench::AlgorithmEntry> {
    bench::ALGORITHMS.iter().filter(|a| a.is_session())
}

/// The runs of the plans of `local` and `remote`, one after the other, off the runtime.
async fn execute_both(
    local: BenchOptions,
    remote: BenchOptions,
) -> (Vec<RunResult>, Vec<RunResult>) {
    tokio::task::spawn_blocking(move || {
        let local_runs = bench::execute(&Plan::new(&local).unwrap(), &local).unwrap();
        let remote_runs = bench::execute(&Plan::new(&remote).unwrap(), &remote).unwrap();
        (local_runs, remote_runs)
    })
    .await
    .unwrap()
}

fn regrets(run: &RunResult) -> Vec<f64> {
    run.iterations.iter().map(|i| i.regret).collect()
}

/// Every algorithm on a box objective, an arm objective and 003's arms with priors: the
/// report files exist and hold one finite summary per pair, the table names every
/// algorithm.
#[test]
fn a_tiny_suite_runs_end_to_end_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path());
    let report = bench::run(&options).unwrap();
    let runs = tiny_suite_runs();
    assert_eq!(report.summaries.len(), runs);
    for s in &report.summaries {
        assert!(s.average_regret.mean.is_finite() && s.average_regret.mean >= 0.0);
        // Hand-outs at 1.05 k + 0.05 s (1 s per evaluation, 0.05 s of compute) up to
        // 20.5 s: 20 iterations.
        assert_eq!(s.iterations, 20.0, "{} {}", s.objective, s.algorithm);
        assert!(s.final_dataset_size >= 1.0);
    }
    assert_eq!(report.normalised.len(), session_algorithms().count());
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for entry in session_algorithms() {
        assert!(markdown.contains(entry.name), "report lacks {}", entry.name);
    }
    for file in [
        "summary.csv",
        "runs.csv",
        "report.json",
        "hartmann3.svg",
        "tvgp-se-0.01.svg",
        "prior-lengthscale.svg",
    ] {
        let path = dir.path().join(file);
        assert!(
            path.metadata().map(|m| m.len() > 0).unwrap_or(false),
            "{file} missing"
        );
    }
    let runs_csv = std::fs::read_to_string(dir.path().join("runs.csv")).unwrap();
    assert_eq!(runs_csv.lines().count(), 1 + runs);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json["suite"], "quick");
    let log = std::fs::read_to_string(dir.path().join(bench::RUN_LOG)).unwrap();
    assert_eq!(log.lines().count(), runs);
    // The session's warm-up is recorded: 15 random queries, none for 003's rules (their
    // sessions have priors), and the after-warm-up average skips exactly those.
    for line in log.lines() {
        let run: RunResult = serde_json::from_str(line).unwrap();
        let entry = bench::algorithm(&run.algorithm).unwrap();
        assert_eq!(run.warmup, if entry.needs_priors() { 0 } else { 15 });
        let after: Vec<f64> = regrets(&run)[run.warmup..].to_vec();
        let summary = report
            .runs
            .iter()
            .find(|r| r.objective == run.objective && r.algorithm == run.algorithm)
            .unwrap();
        let mean = after.iter().sum::<f64>() / after.len() as f64;
        assert!((summary.average_regret_after_warmup - mean).abs() <= 1e-12 * mean.max(1.0));
    }

    // Resuming an interrupted bench: the recorded runs are reused, the missing one is run
    // again (the same, since the compute time is fixed).
    let truncated: Vec<&str> = log.lines().take(runs - 1).collect();
    std::fs::write(
        dir.path().join(bench::RUN_LOG),
        truncated.join("\n") + "\n{\"partial",
    )
    .unwrap();
    let resumed = bench::run(&BenchOptions {
        resume: true,
        ..options.clone()
    })
    .unwrap();
    let key = |r: &bench::report::RunSummary| {
        (
            r.objective.clone(),
            r.algorithm.clone(),
            r.iterations,
            r.average_regret,
        )
    };
    let before: Vec<_> = report.runs.iter().map(key).collect();
    let after: Vec<_> = resumed.runs.iter().map(key).collect();
    assert_eq!(after, before);
    // Only the missing run was run again: the others kept their recorded wall time.
    let same_wall = report
        .runs
        .iter()
        .zip(&resumed.runs)
        .filter(|(a, b)| a.wall_seconds == b.wall_seconds)
        .count();
    assert_eq!(same_wall, runs - 1);
    // A narrower plan resumed in the same directory reuses its runs and keeps the other
    // plans' runs in the log (it used to rewrite the log with its own runs only).
    let narrower = bench::run(&BenchOptions {
        algorithms: Some(vec!["random".into()]),
        resume: true,
        ..options.clone()
    })
    .unwrap();
    assert!(narrower.runs.len() < runs);
    let kept = std::fs::read_to_string(dir.path().join(bench::RUN_LOG)).unwrap();
    assert_eq!(kept.lines().count(), runs);

    // An interim report of an unfinished suite: only the recorded runs, nothing run.
    std::fs::write(dir.path().join(bench::RUN_LOG), truncated.join("\n") + "\n").unwrap();
    let interim = bench::run(&BenchOptions {
        report_only: true,
        ..options.clone()
    })
    .unwrap();
    assert_eq!(interim.runs.len(), runs - 1);
    assert_eq!(interim.planned_runs, runs);
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(markdown.contains(&format!("interim: {} of the {runs} runs", runs - 1)));
    assert!(markdown.contains("from the recorded runs"), "{markdown}");
    assert_eq!(interim.total_seconds, None);
    assert!(resumed.total_seconds.is_some());
    // Runs of another protocol (another horizon or compute) are not this suite's runs.
    for other in [
        BenchOptions {
            horizon: Some(30.0),
            ..options.clone()
        },
        BenchOptions {
            fixed_compute: Some(0.06),
            ..options.clone()
        },
    ] {
        let error = bench::run(&BenchOptions {
            report_only: true,
            ..other
        })
        .unwrap_err();
        assert!(
            error.to_string().contains("no run of this suite"),
            "{error}"
        );
    }
    std::fs::write(dir.path().join(bench::RUN_LOG), "").unwrap();
    assert!(
        bench::run(&BenchOptions {
            report_only: true,
            ..options.clone()
        })
        .is_err()
    );
}

/// With the compute time fixed, the same seed gives the same regrets, iteration by
/// iteration, for algorithms whose forgetting depends on the clock (BOLT's R(n),
/// W-DBO's budget); another seed gives others.
#[test]
fn a_fixed_compute_time_makes_runs_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.objectives = Some(vec!["eggholder".into()]);
    options.algorithms = Some(vec!["bolt".into(), "w-dbo".into(), "et-gp-ucb".into()]);
    options.horizon = Some(6.0);
    options.fixed_compute = Some(0.02);
    let plan = Plan::new(&options).unwrap();
    let first = bench::execute(&plan, &options).unwrap();
    let second = bench::execute(&plan, &options).unwrap();
    assert_eq!(first.len(), 3);
    for (a, b) in first.iter().zip(&second) {
        // Hand-outs at 0.07 k + 0.02 s up to 6 s: 86 iterations, 71 of them model-based.
        assert_eq!(a.iterations.len(), 86);
        assert_eq!(
            regrets(a),
            regrets(b),
            "{} differs between runs",
            a.algorithm
        );
        assert_eq!(a.iterations, b.iterations);
    }
    // Another seed, over the first 2 s (28 iterations): other regrets from the start.
    options.seed = 12;
    options.horizon = Some(2.0);
    let other = bench::execute(&Plan::new(&options).unwrap(), &options).unwrap();
    for (a, b) in first.iter().zip(&other) {
        let b = regrets(b);
        assert!(
            b.len() >= 20,
            "{}: {} iterations in 2 s",
            a.algorithm,
            b.len()
        );
        assert_ne!(
            regrets(a)[..b.len()],
            b[..],
            "{}: seed ignored",
            a.algorithm
        );
    }
}

/// `--algorithm-options` reach the policy: R-GP-UCB with blocks of 4 observations holds
/// at most 3 after an observation (the 4th empties it; by default it holds up to 14),
/// and the runs record the options.
#[test]
fn algorithm_options_change_what_the_policy_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.objectives = Some(vec!["eggholder".into()]);
    options.algorithms = Some(vec!["r-gp-ucb".into()]);
    options.horizon = Some(3.0);
    options.fixed_compute = Some(0.02);
    let largest = |options: &BenchOptions| {
        let runs = bench::execute(&Plan::new(options).unwrap(), options).unwrap();
        let sizes = runs[0].iterations.iter().map(|i| i.dataset_size);
        (sizes.max().unwrap(), runs[0].algorithm_options.clone())
    };
    assert_eq!(largest(&options), (14, None));
    options
        .algorithm_options
        .push(bench::parse_algorithm_options(r#"r-gp-ucb={"reset_every":4}"#).unwrap());
    let (size, recorded) = largest(&options);
    assert_eq!(size, 3);
    assert_eq!(recorded.unwrap()["reset_every"], 4);
}

/// `--server`: the same runs through the HTTP API of a running server, in client time.
/// The server makes the same random warm-up and the same first model-based suggestions
/// as the in-process replay of its service, so the regrets agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_mode_drives_a_real_server_like_the_in_process_mode() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut local = options(dir.path());
    local.objectives = Some(vec!["hartmann3".into(), "prior-lengthscale".into()]);
    local.algorithms = Some(vec!["bolt".into(), "gp-ucb".into(), "hp-gp-ts".into()]);
    let mut remote = local.clone();
    remote.server = Some(server.base.clone());
    let (local_runs, remote_runs) = execute_both(local, remote).await;
    assert_eq!(local_runs.len(), 5);
    for (a, b) in local_runs.iter().zip(&remote_runs) {
        assert_eq!(a.iterations.len(), b.iterations.len());
        for (i, (x, y)) in a.iterations.iter().zip(&b.iterations).enumerate() {
            assert_eq!(x.t, y.t, "{}: iteration {i}", a.algorithm);
            assert_eq!(
                x.dataset_size, y.dataset_size,
                "{}: iteration {i}",
                a.algorithm
            );
            assert!(
                (x.regret - y.regret).abs() <= 1e-6 * x.regret.abs().max(1.0),
                "{}: iteration {i}: regret {} in-process, {} over HTTP",
                a.algorithm,
                x.regret,
                y.regret
            );
        }
    }
    // The server holds the sessions, with the true regret reported on every observation.
    let (status, list) = server.get("/v1/sessions?limit=10").await;
    assert_eq!(status, 200);
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 5);
    let id = sessions[0]["id"].as_str().unwrap();
    let (_, regret) = server.get(&format!("/v1/sessions/{id}/regret")).await;
    let points = regret["points"].as_array().unwrap();
    assert_eq!(points.len(), 20);
    assert!(points.iter().all(|p| p["estimated"] == false));
}

/// A trace of real software replayed (the compression trace, 70 evaluations of 10 s):
/// every run reaches a fraction of the per-moment optimum in (0, 1] at every query; the
/// tuning-once peer stops learning after its 600 s; and the HTTP mode, where the
/// session's int, log-scale and categorical settings travel as values, agrees with the
/// in-process one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_replays_in_process_and_over_http() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut local = options(dir.path());
    local.suite = "real".into();
    local.objectives = Some(vec!["trace-compression".into()]);
    local.algorithms = Some(vec!["bolt".into(), "random".into(), "tune-once".into()]);
    local.horizon = Some(700.0);
    local.hyperpriors = Hyperpriors::Robust;
    let mut remote = local.clone();
    remote.server = Some(server.base.clone());
    remote.algorithms = Some(vec!["bolt".into()]);
    let (local_runs, remote_runs) = execute_both(local, remote).await;
    assert_eq!(local_runs.len(), 3);
    for run in &local_runs {
        // Hand-outs at 10.05 k + 0.05 s up to 700 s.
        assert_eq!(run.iterations.len(), 70, "{}", run.algorithm);
        for i in &run.iterations {
            let achieved = i.achieved.expect("a trace's fraction of the optimum");
            assert!(
                achieved > 0.0 && achieved <= 1.0,
                "{}: {achieved}",
                run.algorithm
            );
        }
    }
    let tune_once = local_runs
        .iter()
        .find(|r| r.algorithm == "tune-once")
        .unwrap();
    let tuned: Vec<usize> = tune_once
        .iterations
        .iter()
        .filter(|i| i.t > 600.0)
        .map(|i| i.dataset_size)
        .collect();
    assert!(
        tuned.len() > 5 && tuned.iter().all(|&n| n == tuned[0]),
        "{tuned:?}"
    );
    let bolt = local_runs.iter().find(|r| r.algorithm == "bolt").unwrap();
    assert_eq!(remote_runs.len(), 1);
    for (x, y) in bolt.iterations.iter().zip(&remote_runs[0].iterations) {
        assert_eq!(x.t, y.t);
        assert!((x.regret - y.regret).abs() <= 1e-9 * x.regret.abs().max(1.0));
    }
}
