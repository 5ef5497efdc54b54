//! A replay scenario (docs/traces.md "Replay"): which trace, what its objective is (a
//! weighted sum of measured quantities or of their ratios), how long one evaluation takes,
//! and the schedule of conditions (and prices) that makes it drift. Scenarios are JSON
//! files beside their traces; the bench knows the committed ones by name
//! ([`BUILTIN`]) and reads any other from a path (`--objectives trace:PATH`).

use std::path::Path;

use serde::Deserialize;

use crate::error::BenchError;
use crate::seeds::name_hash;

/// Whether the objective is a cost (minimised) or a rate (maximised).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    Minimize,
    Maximize,
}

/// One term of the objective: `weight × quantity` (or `weight × quantity / per`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    pub quantity: String,
    #[serde(default)]
    pub per: Option<String>,
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

/// A phase of the schedule: the condition the system runs under for `seconds`, and the
/// objective's terms if they differ from the scenario's (a price that changes with load).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub condition: String,
    pub seconds: f64,
    #[serde(default)]
    pub objective: Option<Vec<Term>>,
}

/// A scenario as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The objective's name in the bench (`compression` is `trace-compression`).
    pub name: String,
    /// Label in reports.
    pub label: String,
    /// What the scenario stands for (JSON has no comments).
    #[serde(default)]
    pub description: String,
    /// The trace file, relative to the scenario's directory.
    pub trace: String,
    pub goal: Goal,
    /// The objective's terms, in every phase that does not give its own.
    pub objective: Vec<Term>,
    /// Seconds one evaluation takes on the simulated clock (the system measured for so
    /// long in production; the trace's measurements are its samples).
    pub evaluation_seconds: f64,
    /// The phases, repeated in order until the horizon.
    pub phases: Vec<Phase>,
    /// The last `ramp_seconds` of each phase blend linearly into the next (0: a step).
    #[serde(default)]
    pub ramp_seconds: f64,
}

/// A committed scenario: its file name and text, and its trace's text, built into the
/// binary so that the bench replays it from any directory.
pub struct BuiltinScenario {
    pub scenario: &'static str,
    pub trace: &'static str,
}

/// The scenarios of the committed traces.
pub const BUILTIN: &[BuiltinScenario] = &[
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/compression.scenario.json"),
        trace: include_str!("../../../../benchmarks/traces/compression.jsonl"),
    },
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/sqlite.scenario.json"),
        trace: include_str!("../../../../benchmarks/traces/sqlite.jsonl"),
    },
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/postgres.scenario.json"),
        trace: POSTGRES_TRACE,
    },
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/postgres-uneven.scenario.json"),
        trace: POSTGRES_TRACE,
    },
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/rocksdb.scenario.json"),
        trace: include_str!("../../../../benchmarks/traces/rocksdb.jsonl"),
    },
    BuiltinScenario {
        scenario: include_str!("../../../../benchmarks/traces/jvm-gc.scenario.json"),
        trace: include_str!("../../../../benchmarks/traces/jvm-gc.jsonl"),
    },
];

/// The PostgreSQL trace, which two scenarios replay (its day in equal and in uneven
/// phases).
const POSTGRES_TRACE: &str = include_str!("../../../../benchmarks/traces/postgres.jsonl");

/// The digest of a replay's files, recorded in each of its runs (`--resume` and
/// `--report-only` reuse a run only under the same digest): `fnv1a64:S:T`, S and T the
/// 64-bit FNV-1a hashes of the scenario's and the trace's bytes in 16 hex digits. Any edit
/// of either file changes it (a single changed byte always does).
pub fn digest(scenario: &str, trace: &str) -> String {
    format!(
        "fnv1a64:{:016x}:{:016x}",
        name_hash(scenario),
        name_hash(trace)
    )
}

impl Scenario {
    /// Reads a scenario from its text, checking its numbers.
    pub fn parse(text: &str) -> Result<Scenario, BenchError> {
        let scenario: Scenario = serde_json::from_str(text)
            .map_err(|e| BenchError::Objective(format!("scenario: {e}")))?;
        scenario.check()?;
        Ok(scenario)
    }

    /// The text of the scenario file at `path` and that of its trace (the file its
    /// `trace` names, relative to the scenario's directory); the scenario is checked, and
    /// an error names the file.
    pub fn read_texts(path: &Path) -> Result<(String, String), BenchError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| BenchError::Objective(format!("{}: {e}", p.display())))
        };
        let text = read(path)?;
        let scenario = Scenario::parse(&text).map_err(|e| match e {
            BenchError::Objective(m) => BenchError::Objective(format!("{}: {m}", path.display())),
            other => other,
        })?;
        let trace_path = path
            .parent()
            .unwrap_or(Path::new("."))
            .join(&scenario.trace);
        let trace = read(&trace_path)?;
        Ok((text, trace))
    }

    fn check(&self) -> Result<(), BenchError> {
        let fail = |m: String| {
            Err(BenchError::Objective(format!(
                "scenario {}: {m}",
                self.name
            )))
        };
        if !(self.evaluation_seconds > 0.0 && self.evaluation_seconds.is_finite()) {
            return fail("evaluation_seconds must be positive".into());
        }
        if self.phases.is_empty() {
            return fail("no phases".into());
        }
        if let Some(p) = self
            .phases
            .iter()
            .find(|p| !(p.seconds > 0.0 && p.seconds.is_finite()))
        {
            return fail(format!("phase {:?}: seconds must be positive", p.condition));
        }
        let shortest = self
            .phases
            .iter()
            .map(|p| p.seconds)
            .fold(f64::INFINITY, f64::min);
        if !(0.0..=shortest).contains(&self.ramp_seconds) {
            return fail(format!(
                "ramp_seconds must be in [0, {shortest}] (the shortest phase)"
            ));
        }
        let terms = std::iter::once(&self.objective)
            .chain(self.phases.iter().filter_map(|p| p.objective.as_ref()));
        for terms in terms {
            if terms.is_empty() || terms.iter().any(|t| !t.weight.is_finite()) {
                return fail("an objective needs terms with finite weights".into());
            }
        }
        Ok(())
    }

    /// The terms of phase `phase`.
    pub fn terms(&self, phase: usize) -> &[Term] {
        self.phases[phase]
            .objective
            .as_deref()
            .unwrap_or(&self.objective)
    }

    /// The schedule at time `t`: the phase, the next one, and the weight of the next in
    /// the blend (0 outside the ramp, rising to 1 at the phase's end).
    pub fn phase_at(&self, t: f64) -> (usize, usize, f64) {
        let period: f64 = self.phases.iter().map(|p| p.seconds).sum();
        let mut local = t.max(0.0) % period;
        for (k, phase) in self.phases.iter().enumerate() {
            if local < phase.seconds || k + 1 == self.phases.len() {
                let next = (k + 1) % self.phases.len();
                let into_ramp = local - (phase.seconds - self.ramp_seconds);
                let blend = if self.ramp_seconds > 0.0 && into_ramp > 0.0 {
                    (into_ramp / self.ramp_seconds).min(1.0)
                } else {
                    0.0
                };
                return (k, next, blend);
            }
            local -= phase.seconds;
        }
        unreachable!("a scenario has phases")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(ramp: f64) -> Scenario {
        Scenario::parse(&format!(
            r#"{{"name": "s", "label": "S", "trace": "s.jsonl", "goal": "minimize",
                "objective": [{{"quantity": "cpu"}}], "evaluation_seconds": 1,
                "phases": [{{"condition": "a", "seconds": 100}},
                           {{"condition": "b", "seconds": 50, "objective": [{{"quantity": "cpu", "weight": 3}}]}}],
                "ramp_seconds": {ramp}}}"#
        ))
        .unwrap()
    }

    /// Phases follow each other and repeat; the ramp blends the last seconds of each.
    #[test]
    fn the_schedule_cycles_and_ramps() {
        let steps = scenario(0.0);
        assert_eq!(steps.phase_at(0.0), (0, 1, 0.0));
        assert_eq!(steps.phase_at(99.9), (0, 1, 0.0));
        assert_eq!(steps.phase_at(100.0), (1, 0, 0.0));
        assert_eq!(steps.phase_at(160.0), (0, 1, 0.0));
        let ramps = scenario(20.0);
        assert_eq!(ramps.phase_at(80.0), (0, 1, 0.0));
        assert_eq!(ramps.phase_at(90.0), (0, 1, 0.5));
        assert_eq!(ramps.phase_at(140.0), (1, 0, 0.5));
        assert_eq!(ramps.terms(1)[0].weight, 3.0);
        assert_eq!(ramps.terms(0)[0].weight, 1.0);
    }

    #[test]
    fn bad_scenarios_are_refused_with_the_reason() {
        let bad = |ramp: f64, seconds: f64| {
            Scenario::parse(&format!(
                r#"{{"name": "s", "label": "S", "trace": "s.jsonl", "goal": "maximize",
                    "objective": [{{"quantity": "ops", "per": "seconds"}}],
                    "evaluation_seconds": 1, "ramp_seconds": {ramp},
                    "phases": [{{"condition": "a", "seconds": {seconds}}}]}}"#
            ))
            .unwrap_err()
            .to_string()
        };
        assert!(bad(20.0, 10.0).contains("ramp_seconds"));
        assert!(bad(0.0, 0.0).contains("seconds must be positive"));
        for builtin in BUILTIN {
            Scenario::parse(builtin.scenario).unwrap();
        }
    }
}
