//! The command line of `tvbo bench` (the `tvbo-bench` binary, which `tvbo bench` runs):
//! [`Cli`], whose help lists every suite with its defaults ([`suites_help`]) and says how
//! to replay a system of one's own.

use clap::{Parser, ValueEnum};

use crate::algorithms::{ALGORITHMS, session_algorithms};
use crate::suites::{SUITES, suite};

/// tvbo bench: benchmarks of the service's algorithms, written as a report.
///
/// The papers' experiments and real software's traces replayed (yours too: below),
/// in-process or against a running server (docs/benchmarks.md).
#[derive(Debug, Parser)]
#[command(
    name = "tvbo bench",
    bin_name = "tvbo bench",
    version,
    after_help = suites_help()
)]
pub struct Cli {
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// Width of the help text's own lines (clap wraps none of it).
const HELP_WIDTH: usize = 90;

/// The text after the options in `--help`: every suite with its horizon, replications,
/// objectives and algorithms (from [`suite`], so the defaults listed are the ones that
/// run), the algorithms, and how to replay a scenario of one's own (`trace:PATH`).
pub fn suites_help() -> String {
    let every: Vec<&str> = session_algorithms().map(|a| a.name).collect();
    let mut text =
        String::from("Suites (--suite NAME; the options above change their defaults):\n");
    for (name, what) in SUITES {
        let suite = suite(name).expect("every suite of SUITES is one");
        let objectives: Vec<&str> = suite.objectives.iter().map(|o| o.name.as_str()).collect();
        let algorithms: Vec<&str> = suite.algorithms.iter().map(|a| a.name).collect();
        let objectives = if *name == "all" {
            format!("the {} above", objectives.len())
        } else {
            objectives.join(", ")
        };
        let algorithms = if algorithms == every {
            format!("the service's {}", algorithms.len())
        } else {
            algorithms.join(", ")
        };
        text.push_str(&format!(
            "  {name:<12}{} s horizon, {} replications\n",
            suite.horizon, suite.replications
        ));
        for line in [
            what.to_string(),
            format!("objectives: {objectives}"),
            format!("algorithms: {algorithms}"),
        ] {
            wrap(&mut text, &line, 14);
        }
    }
    let peers: Vec<&str> = ALGORITHMS
        .iter()
        .filter(|a| !a.is_session())
        .map(|a| a.name)
        .collect();
    text.push_str("\nAlgorithms (--algorithms NAME,...):\n");
    wrap(
        &mut text,
        &format!(
            "the service's: {}; the ones that select among priors (pe-gp-ucb, pe-gp-ts, \
             hp-gp-ts, map-gp-ts) run only on objectives with priors",
            every.join(", ")
        ),
        2,
    );
    wrap(
        &mut text,
        &format!(
            "the peers, what people use today, run only where named: {}",
            peers.join(", ")
        ),
        2,
    );
    text.push_str("\nA system of your own (docs/traces.md, \"Adding a system\" and \"Replay\"):\n");
    wrap(
        &mut text,
        "record a trace of it (its settings measured under each condition), write a \
         scenario beside it (NAME.scenario.json: its name, the trace file relative to it, \
         the goal, the objective's terms, an evaluation's seconds, the phases of \
         conditions), and replay it:",
        2,
    );
    text.push_str("    tvbo bench --suite real --objectives trace:path/to/NAME.scenario.json\n");
    wrap(
        &mut text,
        "It runs as trace-NAME with the suite's algorithms, horizon and replications. \
         --resume and --report-only reuse a recorded run only while the scenario and the \
         trace are the ones it replayed.",
        2,
    );
    text
}

/// Appends `line` to `text` in words, lines of at most [`HELP_WIDTH`] characters,
/// each indented by `indent` spaces.
fn wrap(text: &mut String, line: &str, indent: usize) {
    let mut width = 0;
    for word in line.split_whitespace() {
        let chars = word.chars().count();
        if width > 0 && width + 1 + chars > HELP_WIDTH {
            text.push('\n');
            width = 0;
        }
        if width == 0 {
            text.push_str(&" ".repeat(indent));
            width = indent;
        } else {
            text.push(' ');
            width += 1;
        }
        text.push_str(word);
        width += chars;
    }
    text.push('\n');
}

/// Where a benchmarked server session takes its time from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BenchTime {
    /// Client time: `t` from the bench's simulated clock on every call.
    #[default]
    Client,
    /// The server's wall clock; each run takes its horizon in real time.
    Wall,
}

/// Options of `tvbo bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Suite: quick, paper, gp, priors, wdbo, multimodal, mixed, real or all (each with its
    /// defaults below).
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Only these objectives (comma-separated names, e.g. `hartmann3,powell,tvgp-se-0.01`,
    /// any the bench knows), or `trace:PATH`: a scenario file replayed (below).
    #[arg(long, value_delimiter = ',')]
    pub objectives: Option<Vec<String>>,
    /// Only these algorithms (comma-separated API names, e.g. `bolt,w-dbo`).
    #[arg(long, value_delimiter = ',')]
    pub algorithms: Option<Vec<String>>,
    /// Options of an algorithm instead of its defaults, as NAME=JSON with the fields of
    /// the API's `algorithm` object, e.g. `r-gp-ucb={"reset_every":60}` (repeatable).
    /// The runs record them, and `--resume` reuses only runs with the same options.
    #[arg(long, value_name = "NAME=JSON", value_parser = crate::parse_algorithm_options)]
    pub algorithm_options: Vec<(String, crate::AlgorithmOptions)>,
    /// Every session's `model.fit_start`: `fixed` (the papers' protocol) or `previous`.
    /// The runs record it, and `--resume` reuses only runs with the same one.
    #[arg(long, default_value = "fixed", value_parser = parse_fit_start)]
    pub fit_start: tvbo_core::domain::config::FitStart,
    /// Every session's `model.hyperpriors`: `none` (exact maximum likelihood, the papers'
    /// protocol), `robust` (MAP under weak priors) or `default` (the service's default,
    /// recorded as the mode it stands for). The runs record it, and `--resume` reuses only
    /// runs with the same one.
    #[arg(long, default_value = "none", value_parser = parse_hyperpriors)]
    pub hyperpriors: tvbo_core::domain::hyperpriors::Hyperpriors,
    /// Every session's `model.lengthscales`: `shared` (one spatial lengthscale for every
    /// parameter, the papers' isotropic kernel), `per_parameter` (one per parameter) or
    /// `default` (the service's default, recorded as the value it stands for). The runs
    /// record it, and `--resume` reuses only runs with the same one for the algorithms that
    /// fit tvbo's GP (the peers', random's and the prior rules' runs whatever it was).
    #[arg(long, default_value = "shared", value_parser = parse_lengthscales)]
    pub lengthscales: tvbo_core::domain::config::Lengthscales,
    /// Every session's `model.warping`: `none` (the values themselves, the papers'), `log`
    /// (their logarithms), `half_rank` (the lower half by rank) or `default` (the
    /// service's default, recorded as the value it stands for). Recorded and compared on `--resume` as `--lengthscales` is.
    #[arg(long, default_value = "none", value_parser = parse_warping)]
    pub warping: tvbo_core::domain::config::Warping,
    /// Every session's `model.level`: `none` (the papers' kernel), `drifting` (a level
    /// over time alone added to it) or `default` (the service's default, recorded as the
    /// value it stands for). Recorded and compared on `--resume` as `--lengthscales` is;
    /// an algorithm whose kernel ignores time keeps `none`.
    #[arg(long, default_value = "none", value_parser = parse_level)]
    pub level: tvbo_core::domain::config::Level,
    /// Replications per (objective, algorithm) (default: the suite's, below).
    #[arg(long)]
    pub replications: Option<usize>,
    /// Seconds of (simulated) time per run (default: the suite's, below).
    #[arg(long)]
    pub horizon: Option<f64>,
    /// Runs in parallel: at most the number of cores, with nothing else running, or the
    /// measured compute that drives the clock inflates.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Base seed; replication r of every algorithm uses the same seed derived from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Charge this many seconds of compute per iteration instead of the measured time
    /// (deterministic runs).
    #[arg(long)]
    pub fixed_compute: Option<f64>,
    /// Directory of the report files (created if missing).
    #[arg(long, default_value = "bench-results")]
    pub output: std::path::PathBuf,
    /// Drive a running server at this base URL (e.g. http://127.0.0.1:8080) over HTTP
    /// instead of running the policies in-process.
    #[arg(long)]
    pub server: Option<String>,
    /// With --server: the sessions' time source.
    #[arg(long, value_enum, default_value_t = BenchTime::Client)]
    pub server_time: BenchTime,
    /// With --server: the API key to send (`tvbo keys create`).
    #[arg(long, env = "TVBO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// No progress bars (they are only drawn on a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Reuse the runs recorded in OUTPUT/runs.jsonl by an earlier (interrupted) bench
    /// with the same options and the same contents of each replayed trace (its scenario
    /// and trace files), and run only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// With --resume: run these algorithms again (comma-separated names) even where
    /// their runs are recorded, dropping the recorded ones: after a change to tvbo's
    /// model, `--rerun bolt,w-dbo,gp-ucb` reruns tvbo's algorithms and reuses the peers'
    /// runs, which the change does not touch.
    #[arg(long, value_delimiter = ',', requires = "resume")]
    pub rerun: Vec<String>,
    /// Run nothing: write the report of the runs already recorded in OUTPUT/runs.jsonl
    /// for this suite and these options (an interim table of an unfinished suite).
    #[arg(long, conflicts_with = "resume")]
    pub report_only: bool,
}

impl BenchArgs {
    /// The library's options of these arguments.
    pub fn options(&self) -> crate::BenchOptions {
        crate::BenchOptions {
            suite: self.suite.clone(),
            objectives: self.objectives.clone(),
            algorithms: self.algorithms.clone(),
            algorithm_options: self.algorithm_options.clone(),
            fit_start: self.fit_start,
            hyperpriors: self.hyperpriors,
            lengthscales: self.lengthscales,
            warping: self.warping,
            level: self.level,
            replications: self.replications,
            horizon: self.horizon,
            jobs: self.jobs,
            seed: self.seed,
            fixed_compute: self.fixed_compute,
            output: self.output.clone(),
            server: self.server.clone(),
            server_time: match self.server_time {
                BenchTime::Client => crate::ServerTime::Client,
                BenchTime::Wall => crate::ServerTime::Wall,
            },
            api_key: self.api_key.clone(),
            progress: !self.no_progress,
            resume: self.resume,
            rerun: self.rerun.clone(),
            report_only: self.report_only,
        }
    }
}

/// `--fit-start`: a value of the API's `model.fit_start`.
fn parse_fit_start(text: &str) -> Result<tvbo_core::domain::config::FitStart, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a fit start: `fixed` or `previous`"))
}

/// `--hyperpriors`: a value of the API's `model.hyperpriors`, or `default` for the
/// service's default (resolved here, so that the runs record the mode itself).
fn parse_hyperpriors(text: &str) -> Result<tvbo_core::domain::hyperpriors::Hyperpriors, String> {
    if text == "default" {
        return Ok(tvbo_core::domain::hyperpriors::Hyperpriors::default());
    }
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a hyperprior mode: `none`, `robust` or `default`"))
}

/// `--lengthscales`: a value of the API's `model.lengthscales`, or `default` for the
/// service's default (resolved here, so that the runs record the value itself).
fn parse_lengthscales(text: &str) -> Result<tvbo_core::domain::config::Lengthscales, String> {
    if text == "default" {
        return Ok(tvbo_core::domain::config::Lengthscales::default());
    }
    serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|_| {
        format!("`{text}` is not a lengthscales mode: `shared`, `per_parameter` or `default`")
    })
}

/// `--warping`: a value of the API's `model.warping`, or `default` for the service's
/// default (resolved here, so that the runs record the value itself).
fn parse_warping(text: &str) -> Result<tvbo_core::domain::config::Warping, String> {
    if text == "default" {
        return Ok(tvbo_core::domain::config::Warping::default());
    }
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a warping: `none`, `log`, `half_rank` or `default`"))
}

/// `--level`: a value of the API's `model.level`, or `default` for the service's
/// default (resolved here, so that the runs record the value itself).
fn parse_level(text: &str) -> Result<tvbo_core::domain::config::Level, String> {
    if text == "default" {
        return Ok(tvbo_core::domain::config::Level::default());
    }
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a level: `none`, `drifting` or `default`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvbo_core::domain::config::Lengthscales;
    use tvbo_core::domain::hyperpriors::Hyperpriors;

    fn bench_hyperpriors(args: &[&str]) -> Result<Hyperpriors, clap::Error> {
        let cli = Cli::try_parse_from(["tvbo-bench"].iter().chain(args))?;
        Ok(cli.bench.options().hyperpriors)
    }

    /// `tvbo bench --hyperpriors`: `none` unless given; `default` is the service's
    /// default, resolved at parse time.
    #[test]
    fn bench_hyperpriors_default_to_none_and_resolve_default() {
        assert_eq!(bench_hyperpriors(&[]).unwrap(), Hyperpriors::None);
        for (given, mode) in [
            ("none", Hyperpriors::None),
            ("robust", Hyperpriors::Robust),
            ("default", Hyperpriors::default()),
        ] {
            assert_eq!(bench_hyperpriors(&["--hyperpriors", given]).unwrap(), mode);
        }
        let e = bench_hyperpriors(&["--hyperpriors", "map"]).unwrap_err();
        assert!(
            e.to_string().contains("`none`, `robust` or `default`"),
            "{e}"
        );
    }

    fn bench_lengthscales(args: &[&str]) -> Result<Lengthscales, clap::Error> {
        let cli = Cli::try_parse_from(["tvbo-bench"].iter().chain(args))?;
        Ok(cli.bench.options().lengthscales)
    }

    /// `tvbo bench --lengthscales`: `shared` (the papers') unless given; `default` is the
    /// service's default, resolved at parse time.
    #[test]
    fn bench_lengthscales_default_to_shared_and_resolve_default() {
        assert_eq!(bench_lengthscales(&[]).unwrap(), Lengthscales::Shared);
        assert_eq!(
            crate::BenchOptions::default().lengthscales,
            Lengthscales::Shared
        );
        for (given, mode) in [
            ("shared", Lengthscales::Shared),
            ("per_parameter", Lengthscales::PerParameter),
            ("default", Lengthscales::default()),
        ] {
            assert_eq!(
                bench_lengthscales(&["--lengthscales", given]).unwrap(),
                mode
            );
        }
        assert_eq!(Lengthscales::default(), Lengthscales::Shared);
        let e = bench_lengthscales(&["--lengthscales", "isotropic"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("`shared`, `per_parameter` or `default`"),
            "{e}"
        );
    }

    /// `--help` calls the command `tvbo bench`, lists every suite with the horizon and
    /// replications it runs with, and says how to replay a scenario of one's own.
    #[test]
    fn the_help_lists_every_suite_with_its_defaults_and_the_own_trace() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("Usage: tvbo bench [OPTIONS]"), "{help}");
        for (name, _) in SUITES {
            let suite = suite(name).unwrap();
            let line = format!(
                "  {name:<12}{} s horizon, {} replications\n",
                suite.horizon, suite.replications
            );
            assert!(help.contains(&line), "{line:?} in {help}");
        }
        assert!(help.contains("  real        7200 s horizon, 5 replications\n"));
        assert!(help.contains("trace-compression, trace-sqlite, trace-postgres,"));
        assert!(help.contains("--objectives trace:path/to/NAME.scenario.json"));
        let after = &help[help.find("Suites (").unwrap()..];
        assert!(
            after.lines().all(|l| l.chars().count() <= HELP_WIDTH),
            "{after}"
        );
    }
}
