//! What `tvbo bench` takes: [`BenchOptions`], where a session's time comes from
//! ([`ServerTime`]), and the parser of `--algorithm-options`.

use std::path::PathBuf;

use serde_json::Value;

use super::algorithms::{AlgorithmOptions, algorithm};
use tvbo_core::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;

/// Whether a session's time comes from the bench's clock or the server's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerTime {
    /// `"time": {"source": "client"}` with `t` from the simulated clock on every call.
    #[default]
    Client,
    /// The server's wall clock; the bench sleeps through each evaluation's cost.
    Wall,
}

/// Everything `tvbo bench` takes.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub suite: String,
    /// Restrict the suite to these objectives (any known objective may be named).
    pub objectives: Option<Vec<String>>,
    /// Restrict the suite to these algorithms (any known algorithm may be named).
    pub algorithms: Option<Vec<String>>,
    /// Options merged into an algorithm's create request instead of its defaults, as
    /// (algorithm name, JSON object) in the order given; a later object's keys win.
    pub algorithm_options: Vec<(String, AlgorithmOptions)>,
    /// Every session's `model.fit_start` (default `fixed`, the papers' protocol).
    pub fit_start: FitStart,
    /// Every session's `model.hyperpriors` (default `none`, the papers' protocol: exact
    /// maximum likelihood).
    pub hyperpriors: Hyperpriors,
    /// Every session's `model.lengthscales` (default `shared`, the papers' protocol: one
    /// spatial lengthscale for every parameter).
    pub lengthscales: Lengthscales,
    /// Every session's `model.warping` (default `none`, the papers' protocol: the values
    /// themselves).
    pub warping: Warping,
    /// Every session's `model.level` (default `none`, the papers' kernel).
    pub level: Level,
    pub replications: Option<usize>,
    pub horizon: Option<f64>,
    /// Runs in parallel (threads).
    pub jobs: usize,
    /// Base seed: replication r uses seed splitmix(seed, r).
    pub seed: u64,
    /// Seconds of compute charged per iteration instead of the measured time.
    pub fixed_compute: Option<f64>,
    pub output: PathBuf,
    /// Base URL of a running server to drive over HTTP instead of in-process.
    pub server: Option<String>,
    pub server_time: ServerTime,
    /// The API key sent to `server` (`Authorization: Bearer`), if it needs one.
    pub api_key: Option<String>,
    /// Progress bars on standard error (only shown on a terminal).
    pub progress: bool,
    /// Keep the runs already recorded in `<output>/runs.jsonl` (same objective,
    /// algorithm, replication and seed) and run only the others.
    pub resume: bool,
    /// With `resume`: algorithms whose recorded runs are dropped and run again.
    pub rerun: Vec<String>,
    /// Run nothing: report the runs of the plan already recorded in
    /// `<output>/runs.jsonl`.
    pub report_only: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            suite: "quick".into(),
            objectives: None,
            algorithms: None,
            algorithm_options: Vec::new(),
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            replications: None,
            horizon: None,
            jobs: 1,
            seed: 0,
            fixed_compute: None,
            output: PathBuf::from("bench-results"),
            server: None,
            server_time: ServerTime::Client,
            api_key: None,
            progress: true,
            resume: false,
            rerun: Vec::new(),
            report_only: false,
        }
    }
}

/// Parses `NAME=JSON` (e.g. `r-gp-ucb={"reset_every":60}`) of `--algorithm-options`.
pub fn parse_algorithm_options(text: &str) -> Result<(String, AlgorithmOptions), String> {
    let (name, json) = text.split_once('=').ok_or_else(|| {
        format!("{text:?} is not NAME=JSON, e.g. r-gp-ucb={{\"reset_every\":60}}")
    })?;
    let name = name.trim();
    algorithm(name).map_err(|e| e.to_string())?;
    match serde_json::from_str(json) {
        Ok(Value::Object(options)) => Ok((name.to_string(), options)),
        Ok(_) => Err(format!("the options of {name} must be a JSON object")),
        Err(e) => Err(format!("the options of {name} are not JSON: {e}")),
    }
}
