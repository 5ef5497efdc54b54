//! The suites: named sets of objectives × algorithms with their default horizon and
//! replications; and the objectives a suite names ([`ObjectiveSpec`]), every one the
//! bench knows.

use std::path::PathBuf;
use std::sync::Arc;

use super::algorithms::{AlgorithmEntry, algorithm, session_algorithms};
use super::error::BenchError;
use super::experiments::SetupKind;
use super::mixed::Mixed;
use super::multimodal::{Multimodal, MultimodalKind};
use super::objective::{Objective, SyntheticObjective};
use super::prior_setup::PriorSetupObjective;
use super::reference;
use super::synthetic::SyntheticFunction;
use super::trace::{self, Replay, Scenario, Trace};
use super::tvgp::{self, TvGpKernel, TvGpSample};
use super::wells::{WELLS_DIMS, Wells};

/// The kinds of benchmark objective.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectiveKind {
    /// A synthetic function of 002 Appendix F; the last input is time.
    Synthetic(SyntheticFunction),
    /// A sample of the time-varying GP of 000 Section 5.1 (Eq. (4)) on a 50×50 grid.
    TvGp { kernel: TvGpKernel, epsilon: f64 },
    /// A prior-selection setup of 003 §5: f ~ GP_{p*} over 500 arms, with its priors.
    PriorSetup(SetupKind),
    /// The drifting polynomial with 2^d wells of [`super::wells`] (d = 3, 4 or 5).
    Wells(usize),
    /// Basins whose depths change over time, of [`super::multimodal`] (d = 4, 5 or 6).
    Multimodal(MultimodalKind),
    /// One categorical and two continuous settings, of [`super::mixed`].
    Mixed,
    /// A trace of real software replayed under its scenario, of [`super::trace`].
    Trace(TraceSource),
}

/// Where a replayed trace comes from.
#[derive(Clone, PartialEq)]
pub enum TraceSource {
    /// A committed one: an index of [`trace::BUILTIN`].
    Builtin(usize),
    /// A scenario file given as `trace:PATH`, read once, when it is named: its path, its
    /// text and its trace's. The runs replay these texts, and record their digest,
    /// whatever becomes of the files meanwhile.
    File {
        path: PathBuf,
        scenario: Arc<str>,
        trace: Arc<str>,
    },
}

/// The source and its digest, not the texts.
impl std::fmt::Debug for TraceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceSource::Builtin(k) => f.debug_tuple("Builtin").field(k).finish(),
            TraceSource::File { path, .. } => f
                .debug_struct("File")
                .field("path", path)
                .field("digest", &self.digest())
                .finish(),
        }
    }
}

impl TraceSource {
    /// The scenario file at `path` and its trace, read now (an error names the file).
    pub fn file(path: PathBuf) -> Result<Self, BenchError> {
        let (scenario, trace) = Scenario::read_texts(&path)?;
        Ok(TraceSource::File {
            path,
            scenario: scenario.into(),
            trace: trace.into(),
        })
    }

    /// The scenario's text and the trace's.
    fn texts(&self) -> (&str, &str) {
        match self {
            TraceSource::Builtin(k) => (trace::BUILTIN[*k].scenario, trace::BUILTIN[*k].trace),
            TraceSource::File {
                scenario, trace, ..
            } => (scenario, trace),
        }
    }

    /// The scenario, parsed and checked.
    pub fn scenario(&self) -> Result<Scenario, BenchError> {
        Scenario::parse(self.texts().0)
    }

    /// The digest of the scenario's and the trace's contents ([`trace::digest`]).
    pub fn digest(&self) -> String {
        let (scenario, trace) = self.texts();
        trace::digest(scenario, trace)
    }
}

/// A named objective of a suite; [`ObjectiveSpec::instantiate`] makes the function a run
/// optimises.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectiveSpec {
    pub name: String,
    /// Label in reports (002's Table 3 names for the synthetic functions).
    pub label: String,
    pub kind: ObjectiveKind,
}

impl ObjectiveSpec {
    pub fn synthetic(function: SyntheticFunction) -> Self {
        ObjectiveSpec {
            name: function.name().to_string(),
            label: function.label().to_string(),
            kind: ObjectiveKind::Synthetic(function),
        }
    }

    pub fn tv_gp(kernel: TvGpKernel, epsilon: f64) -> Self {
        ObjectiveSpec {
            name: format!("tvgp-{}-{epsilon}", kernel.name()),
            label: format!("TV-GP {} ε={epsilon}", kernel.label()),
            kind: ObjectiveKind::TvGp { kernel, epsilon },
        }
    }

    pub fn wells(dim: usize) -> Self {
        ObjectiveSpec {
            name: format!("wells{dim}"),
            label: format!("Wells ({})", dim + 1),
            kind: ObjectiveKind::Wells(dim),
        }
    }

    pub fn multimodal(kind: MultimodalKind) -> Self {
        ObjectiveSpec {
            name: kind.name().to_string(),
            label: kind.label().to_string(),
            kind: ObjectiveKind::Multimodal(kind),
        }
    }

    pub fn mixed() -> Self {
        ObjectiveSpec {
            name: "mixed-codec".to_string(),
            label: "Mixed (codec + 2)".to_string(),
            kind: ObjectiveKind::Mixed,
        }
    }

    /// A replayed trace, named `trace-NAME` by its scenario's name (a committed one's,
    /// or that of the scenario file given as `trace:PATH`).
    pub fn trace(source: TraceSource) -> Result<Self, BenchError> {
        let scenario = source.scenario()?;
        Ok(ObjectiveSpec {
            name: format!("trace-{}", scenario.name),
            label: scenario.label,
            kind: ObjectiveKind::Trace(source),
        })
    }

    /// The scenario of a replayed trace (its phases, for the report); `None` for the
    /// other objectives, or when the scenario can no longer be read.
    pub fn scenario(&self) -> Option<Scenario> {
        match &self.kind {
            ObjectiveKind::Trace(source) => match source.scenario() {
                Ok(scenario) => Some(scenario),
                Err(e) => {
                    tracing::warn!(objective = %self.name, error = %e, "the scenario is not readable");
                    None
                }
            },
            _ => None,
        }
    }

    /// The committed traces' objectives.
    pub fn builtin_traces() -> Vec<Self> {
        (0..trace::BUILTIN.len())
            .map(|k| Self::trace(TraceSource::Builtin(k)).expect("committed scenarios parse"))
            .collect()
    }

    pub fn prior_setup(kind: SetupKind) -> Self {
        ObjectiveSpec {
            name: format!("prior-{}", kind.name()),
            label: format!("003 {}", kind.name()),
            kind: ObjectiveKind::PriorSetup(kind),
        }
    }

    /// Whether each replication (seed) has its own function (a random sample), or all
    /// share one.
    pub fn depends_on_seed(&self) -> bool {
        !matches!(
            self.kind,
            ObjectiveKind::Synthetic(_)
                | ObjectiveKind::Wells(_)
                | ObjectiveKind::Multimodal(_)
                | ObjectiveKind::Mixed
                | ObjectiveKind::Trace(_)
        )
    }

    /// The digest of the objective's contents that a run records and `--resume` matches
    /// beside its name: a replayed trace's ([`TraceSource::digest`], so that an edited
    /// scenario or trace is not taken for the one the recorded runs replayed). `None` for
    /// the objectives defined in code, matched by name alone.
    pub fn digest(&self) -> Option<String> {
        match &self.kind {
            ObjectiveKind::Trace(source) => Some(source.digest()),
            _ => None,
        }
    }

    /// Whether the objective comes with candidate priors ([`Objective::priors`]).
    pub fn has_priors(&self) -> bool {
        matches!(self.kind, ObjectiveKind::PriorSetup(_))
    }

    /// The function of replication `seed` over `[0, horizon]` seconds.
    pub fn instantiate(&self, horizon: f64, seed: u64) -> Result<Arc<dyn Objective>, BenchError> {
        Ok(match &self.kind {
            ObjectiveKind::Synthetic(function) => {
                Arc::new(SyntheticObjective::new(*function, horizon))
            }
            ObjectiveKind::TvGp { kernel, epsilon } => {
                Arc::new(TvGpSample::new(*kernel, *epsilon, horizon, seed)?)
            }
            ObjectiveKind::PriorSetup(kind) => Arc::new(PriorSetupObjective::new(*kind, seed)?),
            ObjectiveKind::Wells(dim) => Arc::new(Wells::new(*dim, horizon)),
            ObjectiveKind::Multimodal(kind) => Arc::new(Multimodal::new(*kind, horizon)),
            ObjectiveKind::Mixed => Arc::new(Mixed::new(horizon)),
            ObjectiveKind::Trace(source) => {
                let (scenario, trace) = source.texts();
                let replay = Trace::parse(trace)
                    .and_then(|trace| Replay::new(Scenario::parse(scenario)?, trace));
                Arc::new(replay.map_err(|e| match e {
                    BenchError::Objective(m) => {
                        BenchError::Objective(format!("{}: {m}", self.name))
                    }
                    other => other,
                })?)
            }
        })
    }
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
    all.extend(WELLS_DIMS.into_iter().map(ObjectiveSpec::wells));
    all.extend(
        MultimodalKind::ALL
            .into_iter()
            .map(ObjectiveSpec::multimodal),
    );
    all.push(ObjectiveSpec::mixed());
    all.extend(ObjectiveSpec::builtin_traces());
    all
}

pub(super) fn objectives_named(names: &[&str]) -> Result<Vec<ObjectiveSpec>, BenchError> {
    let all = all_objectives();
    names
        .iter()
        .map(|name| {
            if let Some(path) = name.strip_prefix("trace:") {
                return ObjectiveSpec::trace(TraceSource::file(PathBuf::from(path))?);
            }
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

/// Every suite, in the order `--help` lists them, with what it is for.
pub const SUITES: &[(&str, &str)] = &[
    (
        "quick",
        "every policy and every kind of search space in minutes: a slow function and a fast \
         one, a TV-GP sample (arms), 003's lengthscale setup (arms with priors)",
    ),
    (
        "paper",
        "002's Table 3: its eight synthetic functions, the six of its algorithms the service \
         implements",
    ),
    (
        "gp",
        "000's time-varying GP samples (SE and Matérn-5/2, ε = 0.001, 0.01, 0.03)",
    ),
    ("priors", "003's prior-selection setups"),
    (
        "wdbo",
        "W-DBO's check on the drifting wells objectives (d = 3, 4, 5)",
    ),
    (
        "multimodal",
        "basins whose depths change: the deepest one, the optimum, moves during a run",
    ),
    (
        "mixed",
        "a categorical setting beside two continuous ones; the best choice changes during \
         the run",
    ),
    (
        "real",
        "the committed traces of real software replayed (docs/traces.md), against the \
         peers people use today (tuning once, Optuna)",
    ),
    ("all", "every objective of the suites above"),
];

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
/// - `wdbo`: the wells objectives (d = 3, 4, 5) × W-DBO, BOLT and random search, 150 s,
///   3 replications: W-DBO's fidelity check outside the paper suite;
/// - `multimodal`: the basins objectives (d = 4, 5, 6; the deepest basin changes during
///   the run) × BOLT, W-DBO, GP-UCB and random search, 150 s, 5 replications;
/// - `mixed`: the mixed objective (a categorical setting of three choices and two
///   continuous ones; the best choice changes during the run) × BOLT and random search,
///   150 s, 5 replications;
/// - `real`: the committed traces of real software replayed (docs/traces.md) × BOLT,
///   W-DBO, GP-UCB, random search and the peers (tuning once; Optuna's TPE and its GP
///   sampler, each run continuously and restarted every 30 minutes), 7200 s (two hours
///   of a drifting day), 5 replications;
/// - `all`: every objective × every algorithm, 600 s, 10 replications.
pub fn suite(name: &str) -> Result<Suite, BenchError> {
    let every: Vec<&'static AlgorithmEntry> = session_algorithms().collect();
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
        "wdbo" => (
            WELLS_DIMS.into_iter().map(ObjectiveSpec::wells).collect(),
            ["w-dbo", "bolt", "random"]
                .into_iter()
                .map(algorithm)
                .collect::<Result<_, _>>()?,
            150.0,
            3,
        ),
        "multimodal" => (
            MultimodalKind::ALL
                .into_iter()
                .map(ObjectiveSpec::multimodal)
                .collect(),
            ["bolt", "w-dbo", "gp-ucb", "random"]
                .into_iter()
                .map(algorithm)
                .collect::<Result<_, _>>()?,
            150.0,
            5,
        ),
        "mixed" => (
            vec![ObjectiveSpec::mixed()],
            ["bolt", "random"]
                .into_iter()
                .map(algorithm)
                .collect::<Result<_, _>>()?,
            150.0,
            5,
        ),
        "real" => (
            ObjectiveSpec::builtin_traces(),
            [
                "bolt",
                "w-dbo",
                "gp-ucb",
                "random",
                "tune-once",
                "optuna-tpe",
                "optuna-tpe-restart",
                "optuna-gp",
                "optuna-gp-restart",
            ]
            .into_iter()
            .map(algorithm)
            .collect::<Result<_, _>>()?,
            7200.0,
            5,
        ),
        "all" => (all_objectives(), every, 600.0, 10),
        other => {
            let known: Vec<&str> = SUITES.iter().map(|(name, _)| *name).collect();
            return Err(BenchError::Options(format!(
                "unknown suite {other:?} (known: {})",
                known.join(", ")
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
