//! The command line of `tvbo-bench` (and of `tvbo bench`, which runs it).

use clap::{Parser, ValueEnum};

/// tvbo-bench: the papers' experiments (docs/benchmarks.md), in-process or against a
/// running server, written as a report.
#[derive(Debug, Parser)]
#[command(name = "tvbo-bench", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub bench: BenchArgs,
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

/// Options of `tvbo-bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Suite: `quick` (every policy in minutes), `paper` (002's Table 3), `gp` (000's
    /// time-varying GP samples), `priors` (003's prior-selection setups), `wdbo` (W-DBO on
    /// the wells objectives), `multimodal` (basins whose depths change), `mixed` (a
    /// categorical setting beside two continuous ones) or `all`.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Only these objectives (comma-separated names, e.g. `hartmann3,powell,tvgp-se-0.01`).
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
    /// Replications per (objective, algorithm) (suite default: 10; quick: 2).
    #[arg(long)]
    pub replications: Option<usize>,
    /// Seconds of (simulated) time per run (suite default: 600; quick: 60).
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
    /// with the same options, and run only the missing ones.
    #[arg(long)]
    pub resume: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
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
}
