//! `tvbo bench`: the papers' experiments, reproducible from one command (DESIGN.md §7).
//!
//! A suite is a list of objectives × algorithms × replications. Each run creates a session
//! configuration exactly as the server would ([`SessionConfig::from_request`] on the same
//! create request), drives it on a simulated clock ([`runner`]) with the policies
//! in-process or through a running server's HTTP API ([`http`]), and records the regret of
//! every query. [`report`] aggregates the runs into Markdown, CSV, JSON and SVG.
//!
//! Protocol (Bardou & Thiran, paper 002, Section 5.1): 15 uniform random warm-up queries
//! (the session default), a 600 s horizon, 10 replications, every algorithm on the same
//! seeds (same objective sample, same observation noise sequence, same policy seeds).

pub mod experiments;
pub mod http;
pub mod objective;
pub mod prior_setup;
pub mod reference;
pub mod report;
pub mod runner;
pub mod svg;
pub mod synthetic;
pub mod tvgp;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::policy::PolicyError;
use crate::session::config::{AlgorithmConfig, CreateSession, MAX_SEED, SessionConfig};
use experiments::SetupKind;
use objective::{Objective, ObjectiveKind, ObjectiveSpec};
use runner::{ClockMode, Driver, InProcess, Iteration};
use synthetic::SyntheticFunction;
use tvgp::TvGpKernel;

/// Failures of a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad options (unknown suite, objective or algorithm; invalid numbers).
    #[error("{0}")]
    Options(String),
    /// A session configuration the service rejects.
    #[error("session configuration: {0}")]
    Config(String),
    /// An objective that cannot be built.
    #[error("objective: {0}")]
    Objective(String),
    #[error("policy: {0}")]
    Policy(String),
    /// The server answered with an error or could not be reached.
    #[error("server: {0}")]
    Http(String),
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
    /// The thread's CPU clock could not be read.
    #[error("reading the thread's CPU clock: {0}")]
    Clock(std::io::Error),
}

impl From<PolicyError> for BenchError {
    fn from(e: PolicyError) -> Self {
        BenchError::Policy(e.to_string())
    }
}

/// An algorithm the bench can run: its API name and create-request object. Adding an
/// algorithm is one line here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlgorithmEntry {
    /// The `algorithm.name` of the API.
    pub name: &'static str,
    /// The `algorithm` object of the create request (the paper defaults: no options).
    pub request: &'static str,
    /// Whether the algorithm selects among given priors (003): it runs only on
    /// objectives that come with priors, which it receives in `algorithm.priors` (and
    /// the noise variance in `model.noise`).
    pub needs_priors: bool,
}

/// Every algorithm, in report order (002's Table 3 order, the floor, then 003's rules).
pub const ALGORITHMS: &[AlgorithmEntry] = &[
    AlgorithmEntry {
        name: "gp-ucb",
        request: r#"{"name":"gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "et-gp-ucb",
        request: r#"{"name":"et-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "r-gp-ucb",
        request: r#"{"name":"r-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "tv-gp-ucb",
        request: r#"{"name":"tv-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "w-dbo",
        request: r#"{"name":"w-dbo"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "bolt",
        request: r#"{"name":"bolt"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "random",
        request: r#"{"name":"random"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "pe-gp-ucb",
        request: r#"{"name":"pe-gp-ucb"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "pe-gp-ts",
        request: r#"{"name":"pe-gp-ts"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "hp-gp-ts",
        request: r#"{"name":"hp-gp-ts"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "map-gp-ts",
        request: r#"{"name":"map-gp-ts"}"#,
        needs_priors: true,
    },
];

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

/// A named set of objectives and algorithms with its default horizon and replications.
#[derive(Clone, Debug)]
pub struct Suite {
    pub name: String,
    pub objectives: Vec<ObjectiveSpec>,
    pub algorithms: Vec<&'static AlgorithmEntry>,
    pub horizon: f64,
    pub replications: usize,
}

/// Every objective the bench knows.
pub fn all_objectives() -> Vec<ObjectiveSpec> {
    let mut all: Vec<ObjectiveSpec> = SyntheticFunction::ALL
        .into_iter()
        .map(ObjectiveSpec::synthetic)
        .collect();
    for kernel in TvGpKernel::ALL {
        for epsilon in tvgp::EPSILONS {
            all.push(ObjectiveSpec::tv_gp(kernel, epsilon));
        }
    }
    all.extend(SetupKind::ALL.into_iter().map(ObjectiveSpec::prior_setup));
    all
}

fn objectives_named(names: &[&str]) -> Result<Vec<ObjectiveSpec>, BenchError> {
    let all = all_objectives();
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|o| o.name == *name)
                .cloned()
                .ok_or_else(|| {
                    let known: Vec<String> = all.iter().map(|o| o.name.clone()).collect();
                    BenchError::Options(format!(
                        "unknown objective {name:?} (known: {})",
                        known.join(", ")
                    ))
                })
        })
        .collect()
}

/// The suites:
/// - `paper`: 002's eight synthetic functions × its six algorithms we implement, 600 s, 10
///   replications (002 Section 5.1, Table 3);
/// - `gp`: 000's time-varying GP samples (SE and Matérn-5/2, ε ∈ {0.001, 0.01, 0.03}) × every
///   algorithm, 600 s, 10 replications;
/// - `priors`: 003's three prior-selection setups × every algorithm, 500 s (about 003's
///   T = 500 queries), 10 replications;
/// - `quick`: Hartmann-3 (slow objective, c = 1 s), Eggholder (fast, c = 0.05 s), one GP
///   sample (an arm set) and 003's lengthscale setup (arms with priors) × every
///   algorithm, 60 s, 2 replications: covers every policy and every kind of search space
///   in minutes;
/// - `all`: every objective × every algorithm, 600 s, 10 replications.
pub fn suite(name: &str) -> Result<Suite, BenchError> {
    let every: Vec<&'static AlgorithmEntry> = ALGORITHMS.iter().collect();
    let paper: Vec<&'static AlgorithmEntry> = reference::TABLE_3_ALGORITHMS
        .iter()
        .map(|n| algorithm(n))
        .collect::<Result<_, _>>()?;
    let synthetic: Vec<ObjectiveSpec> = SyntheticFunction::ALL
        .into_iter()
        .map(ObjectiveSpec::synthetic)
        .collect();
    let gp: Vec<ObjectiveSpec> = all_objectives()
        .into_iter()
        .filter(|o| matches!(o.kind, ObjectiveKind::TvGp { .. }))
        .collect();
    let priors: Vec<ObjectiveSpec> = SetupKind::ALL
        .into_iter()
        .map(ObjectiveSpec::prior_setup)
        .collect();
    let (objectives, algorithms, horizon, replications) = match name {
        "paper" => (synthetic, paper, 600.0, 10),
        "gp" => (gp, every, 600.0, 10),
        "priors" => (priors, every, 500.0, 10),
        "quick" => (
            objectives_named(&[
                "hartmann3",
                "eggholder",
                "tvgp-se-0.01",
                "prior-lengthscale",
            ])?,
            every,
            60.0,
            2,
        ),
        "all" => (all_objectives(), every, 600.0, 10),
        other => {
            return Err(BenchError::Options(format!(
                "unknown suite {other:?} (known: paper, gp, priors, quick, all)"
            )));
        }
    };
    Ok(Suite {
        name: name.to_string(),
        objectives,
        algorithms,
        horizon,
        replications,
    })
}

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
    /// Progress bars on standard error (only shown on a terminal).
    pub progress: bool,
    /// Keep the runs already recorded in `<output>/runs.jsonl` (same objective,
    /// algorithm, replication and seed) and run only the others.
    pub resume: bool,
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
            replications: None,
            horizon: None,
            jobs: 1,
            seed: 0,
            fixed_compute: None,
            output: PathBuf::from("bench-results"),
            server: None,
            server_time: ServerTime::Client,
            progress: true,
            resume: false,
            report_only: false,
        }
    }
}

/// One (objective, algorithm, replication).
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub objective: usize,
    pub algorithm: &'static AlgorithmEntry,
    pub replication: usize,
    pub seed: u64,
}

/// The outcome of one run (one line of `runs.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub objective: String,
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
    /// Random warm-up queries of the session (its `model.warmup`): the first iterations.
    pub warmup: usize,
    pub iterations: Vec<Iteration>,
    /// Real seconds the run took.
    pub wall_seconds: f64,
}

/// The plan of a benchmark: the suite after the options, and its runs in order.
#[derive(Clone, Debug)]
pub struct Plan {
    pub suite: Suite,
    /// The options given for some of the suite's algorithms (the others run with their
    /// defaults), checked against the service's validation.
    pub algorithm_options: BTreeMap<&'static str, AlgorithmOptions>,
    pub runs: Vec<RunSpec>,
}

impl Plan {
    /// The options of `algorithm` in this plan, if any were given.
    pub fn options_of(&self, algorithm: &str) -> Option<&AlgorithmOptions> {
        self.algorithm_options.get(algorithm)
    }
}

/// Options of an algorithm's create request (`algorithm.reset_every`, ...), as a JSON
/// object without `name`.
pub type AlgorithmOptions = serde_json::Map<String, Value>;

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
        let mut request = algorithm_request(entry, Some(options))?;
        let invalid = |e: String| BenchError::Options(format!("--algorithm-options {name}: {e}"));
        if entry.needs_priors {
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

/// The `algorithm` object of a create request: the entry's defaults with each of
/// `options` set.
fn algorithm_request(
    algorithm: &AlgorithmEntry,
    options: Option<&AlgorithmOptions>,
) -> Result<Value, BenchError> {
    let mut request: Value = serde_json::from_str(algorithm.request)
        .map_err(|e| BenchError::Config(format!("algorithm {}: {e}", algorithm.name)))?;
    if let (Value::Object(fields), Some(options)) = (&mut request, options) {
        fields.extend(options.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(request)
}

/// splitmix64 of `seed` and `stream`: independent seeds from one base seed.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        ^ stream
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of a name (FNV-1a), to give each objective its own noise stream.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Plan {
    /// The suite of `options.suite`, restricted or extended by the options.
    pub fn new(options: &BenchOptions) -> Result<Plan, BenchError> {
        let mut suite = suite(&options.suite)?;
        if let Some(names) = &options.objectives {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            suite.objectives = objectives_named(&names)?;
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
                    if algorithm.needs_priors && !spec.has_priors() {
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
            runs,
        })
    }
}

/// The create-session request of a run: the objective's parameters (x1…xd over its
/// [`Objective::parameter_range`]) or arms, the algorithm with its defaults and `options`
/// (and, for the algorithms that select among priors, the objective's priors and noise
/// variance), client time, the run's seed, minimisation.
pub fn session_request(
    objective: &dyn Objective,
    name: &str,
    algorithm: &AlgorithmEntry,
    options: Option<&AlgorithmOptions>,
    seed: u64,
    time: ServerTime,
) -> Result<Value, BenchError> {
    let parameter = |i: usize| format!("x{}", i + 1);
    let (low, high) = objective.parameter_range();
    let parameters: Vec<Value> = (0..objective.dim())
        .map(|i| json!({"name": parameter(i), "low": low, "high": high}))
        .collect();
    let mut algorithm_request = algorithm_request(algorithm, options)?;
    let source = match time {
        ServerTime::Client => "client",
        ServerTime::Wall => "wall",
    };
    let mut model = serde_json::Map::new();
    if algorithm.needs_priors {
        let priors = objective.priors().ok_or_else(|| {
            BenchError::Config(format!(
                "{} selects among priors, and this objective has none",
                algorithm.name
            ))
        })?;
        algorithm_request["priors"] =
            serde_json::to_value(priors).map_err(|e| BenchError::Config(e.to_string()))?;
        model.insert("noise".into(), json!(objective.noise_variance()));
    }
    let mut request = json!({
        "name": name,
        "goal": "minimize",
        "parameters": parameters,
        "algorithm": algorithm_request,
        "model": model,
        "time": {"source": source},
        "seed": seed,
    });
    if let Some(arms) = objective.arms() {
        let arms: Vec<Value> = arms
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let params: serde_json::Map<String, Value> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (parameter(i), json!(low + v * (high - low))))
                    .collect();
                json!({"name": format!("a{k}"), "params": params})
            })
            .collect();
        request["arms"] = Value::Array(arms);
    }
    Ok(request)
}

/// The session configuration the server would make of `request`.
pub fn session_config(request: &Value, seed: u64) -> Result<SessionConfig, BenchError> {
    let create: CreateSession =
        serde_json::from_value(request.clone()).map_err(|e| BenchError::Config(e.to_string()))?;
    SessionConfig::from_request(create, seed).map_err(|e| BenchError::Config(e.to_string()))
}

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
    )?;
    let config = session_config(&request, session_seed)?;
    let warmup = config.model.warmup as usize;
    let started = Instant::now();
    let simulated = ClockMode::Simulated {
        fixed_compute: options.fixed_compute,
    };
    let (mut driver, clock): (Box<dyn Driver + '_>, ClockMode) = match http {
        None => (Box::new(InProcess::new(config)?), simulated),
        Some(client) => (
            Box::new(http::HttpDriver::create(client, &request, time)?),
            match time {
                ServerTime::Client => simulated,
                ServerTime::Wall => ClockMode::Wall,
            },
        ),
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
        algorithm: run.algorithm.name.to_string(),
        replication: run.replication,
        seed: run.seed,
        horizon,
        fixed_compute: options.fixed_compute,
        algorithm_options: algorithm_options.cloned(),
        warmup,
        iterations,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
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
fn recorded_runs(path: &std::path::Path) -> Result<Vec<RunResult>, BenchError> {
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

/// The runs of `plan` recorded in the log at `path` (same objective, algorithm, algorithm
/// options, replication, seed, horizon and `fixed_compute`), in plan order; `None` where
/// a run is missing.
fn recorded_for_plan(
    plan: &Plan,
    fixed_compute: Option<f64>,
    path: &std::path::Path,
) -> Result<Vec<Option<RunResult>>, BenchError> {
    let recorded = recorded_runs(path)?;
    Ok(plan
        .runs
        .iter()
        .map(|run| {
            let name = &plan.suite.objectives[run.objective].name;
            recorded
                .iter()
                .find(|r| {
                    &r.objective == name
                        && r.algorithm == run.algorithm.name
                        && r.algorithm_options.as_ref() == plan.options_of(run.algorithm.name)
                        && r.replication == run.replication
                        && r.seed == run.seed
                        && r.horizon == plan.suite.horizon
                        && r.fixed_compute == fixed_compute
                })
                .cloned()
        })
        .collect())
}

/// Runs every run of the plan on `options.jobs` threads; results in plan order. Each
/// finished run is appended to `<output>/runs.jsonl`; with `options.resume` the runs
/// already there are reused instead of run again.
pub fn execute(plan: &Plan, options: &BenchOptions) -> Result<Vec<RunResult>, BenchError> {
    std::fs::create_dir_all(&options.output)?;
    let log_path = options.output.join(RUN_LOG);
    let done = if options.resume {
        recorded_for_plan(plan, options.fixed_compute, &log_path)?
    } else {
        vec![None; plan.runs.len()]
    };
    // The log is rewritten with the reused runs, so that it holds this plan's runs only.
    let mut log = std::fs::File::create(&log_path)?;
    for run in done.iter().flatten() {
        use std::io::Write as _;
        writeln!(
            log,
            "{}",
            serde_json::to_string(run).expect("runs serialise")
        )?;
    }
    let log = Mutex::new(log);
    let pending: VecDeque<usize> = (0..plan.runs.len())
        .filter(|&i| done[i].is_none())
        .collect();
    let show = options.progress && std::io::stderr().is_terminal();
    let bars = MultiProgress::with_draw_target(if show {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let total = bars.add(ProgressBar::new(plan.runs.len() as u64));
    total.set_position((plan.runs.len() - pending.len()) as u64);
    total.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} runs, {elapsed_precise}")
            .expect("template")
            .progress_chars("=> "),
    );
    total.set_prefix("bench");
    let run_style = ProgressStyle::with_template("{prefix:>12} [{bar:30}] {msg}")
        .expect("template")
        .progress_chars("=> ");
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
                    Some(base) => match http::Client::new(base) {
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
                            let line = serde_json::to_string(&result).expect("runs serialise");
                            let written = {
                                use std::io::Write as _;
                                let mut log = log.lock().expect("log lock");
                                writeln!(log, "{line}").and_then(|()| log.flush())
                            };
                            if let Err(e) = written {
                                failure
                                    .lock()
                                    .expect("failure lock")
                                    .get_or_insert(e.into());
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

    #[test]
    fn suites_cover_what_they_promise() {
        let quick = suite("quick").unwrap();
        for entry in ALGORITHMS {
            assert!(
                quick.algorithms.contains(&entry),
                "quick lacks {}",
                entry.name
            );
        }
        let kinds = |suite: &Suite| -> Vec<ObjectiveKind> {
            suite.objectives.iter().map(|o| o.kind).collect()
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
        for entry in ALGORITHMS {
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
        assert_eq!(suite("all").unwrap().objectives.len(), 17);
        assert!(suite("nope").is_err());
    }

    #[test]
    fn every_algorithm_makes_a_valid_session_for_every_kind_of_objective() {
        let box_objective = ObjectiveSpec::synthetic(SyntheticFunction::Hartmann3)
            .instantiate(600.0, 0)
            .unwrap();
        let arm_objective =
            tvgp::TvGpSample::with_grid(TvGpKernel::Matern52, 0.01, 5.0, 0, 4).unwrap();
        let prior_objective =
            prior_setup::PriorSetupObjective::with_arms(SetupKind::Hill, 0, 30).unwrap();
        for entry in ALGORITHMS {
            for objective in [
                box_objective.as_ref(),
                &arm_objective as &dyn Objective,
                &prior_objective,
            ] {
                let request = session_request(objective, "t", entry, None, 9, ServerTime::Client);
                if entry.needs_priors && objective.priors().is_none() {
                    assert!(request.is_err(), "{} without priors", entry.name);
                    continue;
                }
                let config = session_config(&request.unwrap(), 9).unwrap();
                assert_eq!(config.algorithm.name(), entry.name);
                assert_eq!(config.seed, 9);
                assert_eq!(config.arms.is_some(), objective.arms().is_some());
                if entry.needs_priors {
                    assert_eq!(config.algorithm.priors().map(<[_]>::len), Some(5));
                    assert_eq!(config.model.noise, Some(0.0625));
                    assert_eq!(config.model.warmup, 0, "003's rules start at once");
                } else {
                    assert_eq!(config.model.warmup, 15);
                    assert_eq!(config.model.noise, None);
                }
            }
        }
        // The arms are in the objective's own coordinates: 003's lie in [0, 20].
        let request = session_request(
            &prior_objective,
            "t",
            &ALGORITHMS[0],
            None,
            9,
            ServerTime::Client,
        )
        .unwrap();
        assert_eq!(request["parameters"][0]["high"], 20.0);
        assert_eq!(request["arms"][29]["params"]["x1"], 20.0);
    }

    #[test]
    fn the_run_log_counts_lines_of_another_format_but_not_a_partial_last_line() {
        let run = RunResult {
            objective: "hartmann3".into(),
            algorithm: "bolt".into(),
            replication: 0,
            seed: 7,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options: None,
            warmup: 15,
            iterations: vec![runner::Iteration {
                t: 1.0,
                regret: 0.5,
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
        )
        .unwrap();
        let config = session_config(&request, 9).unwrap();
        assert!(matches!(
            config.algorithm,
            AlgorithmConfig::RGpUcb {
                reset_every: 60,
                ..
            }
        ));
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
            algorithm: "r-gp-ucb".into(),
            replication: 0,
            seed: plan.runs[0].seed,
            horizon: 600.0,
            fixed_compute: None,
            algorithm_options,
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
}
