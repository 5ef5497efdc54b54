//! One benchmark run: a session driven against an objective on a clock.
//!
//! The loop (002 Section 5.1, on a simulated clock):
//! 1. at clock time s the client asks for a suggestion (`t = s`);
//! 2. the suggest computes for δ seconds (fit, acquisition): the suggestion is handed
//!    out at t_h = s + δ, and the objective is evaluated at t_h (noise-free value for the
//!    regret, and a noisy measurement of it for the observation: Gaussian noise, or a
//!    trace's repeat);
//! 3. the evaluation takes c seconds: the value is observed at s + δ + c, carrying its
//!    measurement time t_h; the observe call computes (removal) for δ' seconds;
//! 4. the next suggest starts at s' = s + δ + c + δ'.
//!
//! BOLT's response-time samples come from these intervals exactly as on a live server:
//! (dataset size at the previous suggest, s' − s). The run ends when a suggestion would
//! be handed out after the horizon.

use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::BenchError;
use super::objective::Objective;
use super::session::session_parameters;
use tvbo_core::domain::checked::CheckedConfig;
use tvbo_core::domain::config::TimeSource;
use tvbo_core::domain::input::ObservationInput;
use tvbo_core::domain::space::{Params, SearchSpace};
use tvbo_core::engine::{EngineError, LocalSession};

/// How time passes in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClockMode {
    /// Simulated: advanced by each call's compute time (measured, or this fixed number of
    /// seconds per iteration, which makes runs deterministic) and the objective's cost.
    Simulated { fixed_compute: Option<f64> },
    /// The wall clock: the objective's cost is slept, calls take the time they take.
    Wall,
}

/// A suggestion handed out by a driver.
pub struct Handed {
    /// Unit-cube point.
    pub x: Vec<f64>,
    /// Driver-specific handle of the suggestion (the HTTP suggestion id).
    pub id: Option<String>,
}

/// How the compute of a driver's calls is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeClock {
    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): what the call takes on a
    /// core of its own, whatever else the machine runs (other `--jobs`, a build). For
    /// policies run in-process, which compute on the calling thread only.
    ThreadCpu,
    /// The wall-clock time of the call: for a server, whose compute happens elsewhere and
    /// includes the transport and the store.
    Wall,
    /// What the driver reports ([`Driver::reported_compute`]): for a peer in a process of
    /// its own, which measures its own CPU time.
    Reported,
}

/// A running measurement of one call's compute.
enum Stopwatch {
    ThreadCpu(cpu_time::ThreadTime),
    Wall(Instant),
}

impl Stopwatch {
    fn start(clock: ComputeClock) -> Result<Stopwatch, BenchError> {
        Ok(match clock {
            ComputeClock::ThreadCpu => {
                Stopwatch::ThreadCpu(cpu_time::ThreadTime::try_now().map_err(BenchError::Clock)?)
            }
            ComputeClock::Wall | ComputeClock::Reported => Stopwatch::Wall(Instant::now()),
        })
    }

    fn seconds(&self) -> Result<f64, BenchError> {
        Ok(match self {
            Stopwatch::ThreadCpu(start) => start.try_elapsed().map_err(BenchError::Clock)?,
            Stopwatch::Wall(start) => start.elapsed(),
        }
        .as_secs_f64())
    }
}

/// Something that answers suggest and observe calls: the policies in-process, or a
/// server over HTTP.
pub trait Driver {
    /// How the compute of this driver's calls is measured.
    fn compute_clock(&self) -> ComputeClock;
    /// A suggestion for time `t` (the clock when the request is made).
    fn suggest(&mut self, t: f64) -> Result<Handed, BenchError>;
    /// Reports `value` of suggestion `handed`, measured at time `t`; `regret` is the true
    /// regret (a server records it).
    fn observe(
        &mut self,
        handed: &Handed,
        t: f64,
        value: f64,
        regret: f64,
    ) -> Result<(), BenchError>;
    /// The active dataset size (asked after each observe, outside its timing).
    fn dataset_size(&mut self) -> Result<usize, BenchError>;
    /// The compute of the last call as the driver measured it, for
    /// [`ComputeClock::Reported`].
    fn reported_compute(&self) -> Option<f64> {
        None
    }
}

/// The compute of the call just made: the driver's report where its clock is
/// [`ComputeClock::Reported`], else the stopwatch's.
fn compute_of(
    driver: &dyn Driver,
    clock: ComputeClock,
    call: &Stopwatch,
) -> Result<f64, BenchError> {
    match (clock, driver.reported_compute()) {
        (ComputeClock::Reported, Some(seconds)) => Ok(seconds),
        _ => call.seconds(),
    }
}

/// What happened in one iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// Time the suggestion was handed out and the objective evaluated.
    pub t: f64,
    /// The suggested setting in the session's parameters, as the API shows it (name →
    /// number, or a categorical parameter's choice by name; integers rounded). Empty in
    /// a run recorded before settings were (such a line reads with none, and none is
    /// written).
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub setting: Params,
    /// f(x, t) − min_x f(x, t), noise-free.
    pub regret: f64,
    /// The fraction of the per-moment optimum reached, for objectives in real units
    /// ([`Objective::achieved`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved: Option<f64>,
    /// Active dataset size after the observation.
    pub dataset_size: usize,
    /// Seconds of suggest plus observe compute charged to the clock.
    pub compute: f64,
}

/// Runs one session against `objective` until the horizon. `progress` gets the clock
/// time after each iteration.
pub fn run(
    driver: &mut dyn Driver,
    objective: &dyn Objective,
    horizon: f64,
    clock_mode: ClockMode,
    noise_seed: u64,
    mut progress: impl FnMut(f64),
) -> Result<Vec<Iteration>, BenchError> {
    let variance = objective.noise_variance();
    if !variance.is_finite() || variance < 0.0 {
        return Err(BenchError::Objective(format!("noise variance {variance}")));
    }
    let space = SearchSpace::new(session_parameters(objective))
        .map_err(|e| BenchError::Objective(format!("the session's parameters: {e}")))?;
    let mut noise_rng = ChaCha8Rng::seed_from_u64(noise_seed);
    let compute_clock = match clock_mode {
        ClockMode::Simulated { .. } => driver.compute_clock(),
        ClockMode::Wall => ComputeClock::Wall,
    };
    let started = Instant::now();
    let now = || started.elapsed().as_secs_f64();
    let mut clock = 0.0;
    let mut iterations = Vec::new();
    loop {
        let s = match clock_mode {
            ClockMode::Simulated { .. } => clock,
            ClockMode::Wall => now(),
        };
        if s >= horizon {
            break;
        }
        let call = Stopwatch::start(compute_clock)?;
        let handed = driver.suggest(s)?;
        let suggest_compute = compute_of(driver, compute_clock, &call)?;
        let (t_handed, charged) = match clock_mode {
            ClockMode::Simulated { fixed_compute } => {
                let d = fixed_compute.unwrap_or(suggest_compute);
                (s + d, d)
            }
            ClockMode::Wall => (now(), suggest_compute),
        };
        if t_handed > horizon {
            break;
        }
        let clean = objective.value(&handed.x, t_handed);
        // The query itself bounds the minimum: where the search missed a lower point
        // than x, min(search, f(x)) is the better estimate, and the regret is 0.
        let optimum = objective.optimum(t_handed);
        let regret = (clean - optimum).max(0.0);
        let achieved = objective.achieved(clean, optimum).map(|a| a.min(1.0));
        let measured = objective.measure(&handed.x, t_handed, clean, &mut noise_rng);
        if clock_mode == ClockMode::Wall {
            // The measurement arrives c seconds after the hand-out; the bench's own work
            // since then (the regret's minimum search) is not charged to the session.
            let wait = t_handed + objective.cost() - now();
            if wait > 0.0 {
                std::thread::sleep(std::time::Duration::from_secs_f64(wait));
            }
        }
        let call = Stopwatch::start(compute_clock)?;
        driver.observe(&handed, t_handed, measured, regret)?;
        let observe_compute = compute_of(driver, compute_clock, &call)?;
        let dataset_size = driver.dataset_size()?;
        clock = match clock_mode {
            ClockMode::Simulated { fixed_compute } => {
                // A fixed compute time stands for the whole iteration's compute.
                let d = if fixed_compute.is_some() {
                    0.0
                } else {
                    observe_compute
                };
                t_handed + objective.cost() + d
            }
            ClockMode::Wall => now(),
        };
        let compute = match clock_mode {
            ClockMode::Simulated {
                fixed_compute: Some(f),
            } => f,
            _ => charged + observe_compute,
        };
        iterations.push(Iteration {
            t: t_handed,
            setting: space.from_unit(&handed.x),
            regret,
            achieved,
            dataset_size,
            compute,
        });
        progress(clock.min(horizon));
    }
    Ok(iterations)
}

/// The session in-process, through the server's engine ([`LocalSession`]): the same
/// checks, policy, per-call RNG, lead time, response-time samples and removals as a
/// server's session, with one client that observes each suggestion before asking for the
/// next. Session time 0 is `InProcess::EPOCH`; a wall-clock session's calls arrive at
/// EPOCH + t, a client-time session's carry t.
pub struct InProcess {
    session: LocalSession,
    time: TimeSource,
}

impl InProcess {
    /// Creation time of every in-process session (any fixed instant would do).
    const EPOCH: DateTime<Utc> = DateTime::UNIX_EPOCH;

    pub fn new(config: CheckedConfig) -> Result<Self, BenchError> {
        Ok(InProcess {
            time: config.time.source,
            session: LocalSession::new(config, Self::EPOCH),
        })
    }

    /// The session time to send and the instant the call arrives, at session time `t`.
    fn at(&self, t: f64) -> (Option<f64>, DateTime<Utc>) {
        match self.time {
            TimeSource::Client => (Some(t), Self::EPOCH),
            TimeSource::Wall => (
                None,
                Self::EPOCH + TimeDelta::microseconds((t * 1e6) as i64),
            ),
        }
    }
}

impl Driver for InProcess {
    fn compute_clock(&self) -> ComputeClock {
        ComputeClock::ThreadCpu
    }

    fn suggest(&mut self, t: f64) -> Result<Handed, BenchError> {
        let (t, now) = self.at(t);
        let handed = self.session.suggest(1, t, now).map_err(engine_error)?;
        let suggestion = handed
            .into_iter()
            .next()
            .ok_or_else(|| BenchError::Policy("the policy proposed nothing".into()))?;
        Ok(Handed {
            x: suggestion.unit,
            id: Some(suggestion.id.to_string()),
        })
    }

    fn observe(
        &mut self,
        handed: &Handed,
        t: f64,
        value: f64,
        _regret: f64,
    ) -> Result<(), BenchError> {
        let (t_sent, now) = self.at(t);
        let suggestion_id = handed
            .id
            .as_deref()
            .and_then(|id| Uuid::parse_str(id).ok())
            .ok_or_else(|| BenchError::Policy("a suggestion without its id".into()))?;
        let input = ObservationInput {
            suggestion_id: Some(suggestion_id),
            value: Some(value),
            measured_at: t_sent.is_none().then_some(now),
            t: t_sent,
            ..ObservationInput::default()
        };
        self.session
            .observe(&[(String::new(), input)], now)
            .map_err(engine_error)?;
        Ok(())
    }

    fn dataset_size(&mut self) -> Result<usize, BenchError> {
        Ok(self.session.history().active.len())
    }
}

/// A refused or failed engine step of a benchmark session.
fn engine_error(e: EngineError) -> BenchError {
    BenchError::Policy(e.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A driver that hands out the same point every time.
    struct Same(Vec<f64>);

    impl Driver for Same {
        fn compute_clock(&self) -> ComputeClock {
            ComputeClock::ThreadCpu
        }

        fn suggest(&mut self, _t: f64) -> Result<Handed, BenchError> {
            Ok(Handed {
                x: self.0.clone(),
                id: None,
            })
        }

        fn observe(&mut self, _: &Handed, _: f64, _: f64, _: f64) -> Result<(), BenchError> {
            Ok(())
        }

        fn dataset_size(&mut self) -> Result<usize, BenchError> {
            Ok(0)
        }
    }

    /// Every iteration records the setting it evaluated as the API shows it: the choice
    /// by name, numbers as numbers (an integral one as an integer). A line without one
    /// (an earlier version's) reads with none and writes none.
    #[test]
    fn each_iteration_records_its_setting() {
        let objective = crate::mixed::Mixed::new(10.0);
        let clock = ClockMode::Simulated {
            fixed_compute: Some(0.0),
        };
        let mut driver = Same(vec![0.5, 0.25, 1.0]);
        let iterations = run(&mut driver, &objective, 1.0, clock, 1, |_| {}).unwrap();
        assert!(!iterations.is_empty());
        let line = serde_json::to_value(&iterations[0]).unwrap();
        assert_eq!(line["setting"], json!({"x1": "c1", "x2": 0.25, "x3": 1}));
        let mut old = line.clone();
        old.as_object_mut().unwrap().remove("setting");
        let read: Iteration = serde_json::from_value(old.clone()).unwrap();
        assert!(read.setting.is_empty());
        assert_eq!(serde_json::to_value(&read).unwrap(), old);
    }

    /// The thread's CPU clock does not count time spent off the CPU (a sleep stands for
    /// another process holding the core); the wall clock does.
    #[test]
    fn thread_cpu_time_ignores_time_off_the_cpu() {
        let cpu = Stopwatch::start(ComputeClock::ThreadCpu).unwrap();
        let wall = Stopwatch::start(ComputeClock::Wall).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(60));
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 20 {
            std::hint::black_box(spin.elapsed());
        }
        let (cpu, wall) = (cpu.seconds().unwrap(), wall.seconds().unwrap());
        assert!(wall >= 0.08, "wall {wall}");
        assert!(cpu < 0.06, "cpu {cpu}: the sleep was counted");
        assert!(cpu > 0.0, "cpu {cpu}: the spin was not counted");
    }
}
