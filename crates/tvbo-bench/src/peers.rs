//! What people use today, driven in the same loop as a session (docs/real-systems.md):
//!
//! - [`TuneOnce`]: tune at the start (a session of another algorithm for its first
//!   seconds), then keep the best setting observed: what most teams do;
//! - [`Optuna`]: Optuna's samplers through ask/tell, in a Python process of their own
//!   (`benches/peers/optuna_peer.py`), run continuously or restarted every so many seconds.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use tvbo_core::domain::space::{ParameterSpec, Params, SearchSpace};

use super::error::BenchError;
use super::runner::{ComputeClock, Driver, Handed};

/// Tuning once: `tuner` answers until `seconds`, then the setting of the best value it
/// observed (a noisy value, as a team reads its tuning's best trial) is kept for good.
pub struct TuneOnce<'a> {
    tuner: Box<dyn Driver + 'a>,
    seconds: f64,
    /// The best observed value and its setting.
    best: Option<(f64, Vec<f64>)>,
    /// The tuner's dataset size, asked after each of its observations and kept after.
    tuned: usize,
    /// Whether the last observation went to the tuner.
    tuning: bool,
}

impl<'a> TuneOnce<'a> {
    pub fn new(tuner: Box<dyn Driver + 'a>, seconds: f64) -> Self {
        TuneOnce {
            tuner,
            seconds,
            best: None,
            tuned: 0,
            tuning: false,
        }
    }
}

impl Driver for TuneOnce<'_> {
    fn compute_clock(&self) -> ComputeClock {
        self.tuner.compute_clock()
    }

    fn suggest(&mut self, t: f64) -> Result<Handed, BenchError> {
        match &self.best {
            Some((_, x)) if t >= self.seconds => Ok(Handed {
                x: x.clone(),
                id: None,
            }),
            _ => self.tuner.suggest(t),
        }
    }

    fn observe(
        &mut self,
        handed: &Handed,
        t: f64,
        value: f64,
        regret: f64,
    ) -> Result<(), BenchError> {
        self.tuning = handed.id.is_some();
        if !self.tuning {
            return Ok(());
        }
        self.tuner.observe(handed, t, value, regret)?;
        if self.best.as_ref().is_none_or(|(best, _)| value < *best) {
            self.best = Some((value, handed.x.clone()));
        }
        Ok(())
    }

    /// The observations the tuning made (kept after it ends).
    fn dataset_size(&mut self) -> Result<usize, BenchError> {
        if self.tuning {
            self.tuned = self.tuner.dataset_size()?;
        }
        Ok(self.tuned)
    }
}

/// The Python program of [`Optuna`], built into the binary.
const OPTUNA_PEER: &str = include_str!("../../../benches/peers/optuna_peer.py");

/// The interpreter that runs Optuna: `TVBO_BENCH_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("TVBO_BENCH_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Optuna's sampler `sampler` (`tpe`, `gp`) over the session's parameters, in a child
/// process; its compute is the child's CPU time per request, as it reports it.
pub struct Optuna {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    space: SearchSpace,
    /// The CPU seconds of the last request, and the study's trials after it.
    compute: f64,
    trials: usize,
}

impl Optuna {
    /// Starts the peer with the create request's `parameters`, its sampler, the seed and
    /// the restart period (seconds of the clock; `None`: one study for the whole run).
    pub fn start(
        parameters: &Value,
        sampler: &str,
        seed: u64,
        restart_every: Option<f64>,
    ) -> Result<Optuna, BenchError> {
        let specs: Vec<ParameterSpec> = serde_json::from_value(parameters.clone())
            .map_err(|e| BenchError::Config(format!("parameters: {e}")))?;
        let space = SearchSpace::new(specs).map_err(|e| BenchError::Config(e.to_string()))?;
        let python = python();
        let mut child = Command::new(&python)
            .args(["-c", OPTUNA_PEER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::Policy(format!("starting {python} for Optuna: {e}")))?;
        let input = child.stdin.take().expect("piped stdin");
        let output = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut peer = Optuna {
            child,
            input,
            output,
            space,
            compute: 0.0,
            trials: 0,
        };
        let ready = peer.call(&json!({
            "parameters": parameters,
            "sampler": sampler,
            "seed": seed,
            "restart_every": restart_every,
        }))?;
        if ready["ready"] != json!(true) {
            return Err(BenchError::Policy(format!("Optuna did not start: {ready}")));
        }
        Ok(peer)
    }

    /// One request and its answer (an error names a peer that stopped: Optuna missing
    /// from the interpreter, or a sampler's failure, which it printed on stderr).
    fn call(&mut self, request: &Value) -> Result<Value, BenchError> {
        let stopped = |e: String| {
            BenchError::Policy(format!(
                "the Optuna peer ({}) stopped: {e}; is Optuna installed there? (TVBO_BENCH_PYTHON)",
                python()
            ))
        };
        writeln!(self.input, "{request}").map_err(|e| stopped(e.to_string()))?;
        self.input.flush().map_err(|e| stopped(e.to_string()))?;
        let mut line = String::new();
        let read = self
            .output
            .read_line(&mut line)
            .map_err(|e| stopped(e.to_string()))?;
        if read == 0 {
            return Err(stopped("no answer".into()));
        }
        let answer: Value = serde_json::from_str(&line).map_err(|e| stopped(e.to_string()))?;
        self.compute = answer["compute"].as_f64().unwrap_or(0.0);
        self.trials = answer["trials"].as_u64().unwrap_or(0) as usize;
        Ok(answer)
    }
}

impl Drop for Optuna {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver for Optuna {
    fn compute_clock(&self) -> ComputeClock {
        ComputeClock::Reported
    }

    fn reported_compute(&self) -> Option<f64> {
        Some(self.compute)
    }

    fn suggest(&mut self, t: f64) -> Result<Handed, BenchError> {
        let answer = self.call(&json!({"ask": t}))?;
        let params: Params = serde_json::from_value(answer["params"].clone())
            .map_err(|e| BenchError::Policy(format!("Optuna's params: {e}: {answer}")))?;
        let x = self
            .space
            .to_unit(&params, "params")
            .map_err(|e| BenchError::Policy(format!("Optuna's params: {e}")))?;
        Ok(Handed { x, id: None })
    }

    fn observe(
        &mut self,
        _handed: &Handed,
        _t: f64,
        value: f64,
        _regret: f64,
    ) -> Result<(), BenchError> {
        self.call(&json!({"tell": value}))?;
        Ok(())
    }

    /// The trials of the current study.
    fn dataset_size(&mut self) -> Result<usize, BenchError> {
        Ok(self.trials)
    }
}
