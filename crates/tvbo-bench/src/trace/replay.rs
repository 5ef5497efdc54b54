//! A trace replayed as a time-varying objective f(x, t) (docs/traces.md "Replay").
//!
//! - **Between measured settings** the value is the multilinear interpolation of the
//!   grid's values on each numeric setting's own scale (log for a log-scale one); a
//!   categorical setting takes its choice's values. Within a cell of the grid a
//!   multilinear function is extreme at a vertex, so the minimum over the whole space is
//!   the minimum over the measured settings: the per-moment optimum is exact.
//! - **Over time** the scenario's schedule picks the condition and the prices (its
//!   phases), blending the last `ramp_seconds` of a phase linearly into the next.
//! - **The noise** is the trace's own: an evaluation draws one of the repeats and
//!   interpolates that repeat's values, so its mean over draws is the noise-free value.
//!
//! Every objective of the bench is minimised: a rate to maximise (throughput) is replayed
//! negated, and [`Objective::achieved`] gives the fraction of the per-moment optimum a
//! value reaches either way.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use tvbo_core::domain::space::{ParamValue, ParameterSpec, ParameterType, Params};

use super::file::{Axis, Trace};
use super::scenario::{Goal, Scenario, Term};
use crate::error::BenchError;
use crate::objective::Objective;

/// A trace under a scenario, as an objective.
pub struct Replay {
    scenario: Scenario,
    trace: Trace,
    /// The scenario's sign: 1 for a cost, −1 for a rate (the bench minimises).
    sign: f64,
    /// `means[phase][point]`: the signed objective's mean over the repeats.
    means: Vec<Vec<f64>>,
    /// `samples[phase][repeat][point]`: the signed objective of each repeat.
    samples: Vec<Vec<Vec<f64>>>,
}

impl Replay {
    /// The replay of `trace` under `scenario`: every phase's objective computed at every
    /// measured point and repeat (an error names a missing quantity or condition, or a
    /// term that is not finite, e.g. a ratio over a quantity measured as 0).
    pub fn new(scenario: Scenario, trace: Trace) -> Result<Replay, BenchError> {
        let sign = match scenario.goal {
            Goal::Minimize => 1.0,
            Goal::Maximize => -1.0,
        };
        let mut means = Vec::new();
        let mut samples = Vec::new();
        for phase in 0..scenario.phases.len() {
            let condition = trace.condition(&scenario.phases[phase].condition)?;
            let terms = compile(&trace, scenario.terms(phase))?;
            let per_repeat: Vec<Vec<f64>> = (0..trace.repeats)
                .map(|r| {
                    trace.measurements[condition]
                        .iter()
                        .map(|point| sign * objective(&terms, &point[r]))
                        .collect()
                })
                .collect();
            if per_repeat.iter().flatten().any(|v| !v.is_finite()) {
                return Err(BenchError::Objective(format!(
                    "scenario {}: phase {phase}'s objective is not finite at every point",
                    scenario.name
                )));
            }
            means.push(
                (0..trace.points())
                    .map(|i| per_repeat.iter().map(|r| r[i]).sum::<f64>() / trace.repeats as f64)
                    .collect(),
            );
            samples.push(per_repeat);
        }
        Ok(Replay {
            scenario,
            trace,
            sign,
            means,
            samples,
        })
    }

    /// The grid points around the setting at unit point `x` and their weights (summing
    /// to 1): the multilinear interpolation's vertices.
    fn corners(&self, x: &[f64]) -> Vec<(usize, f64)> {
        let params: Params = self.trace.space.from_unit(x);
        let mut corners = vec![(0usize, 1.0f64)];
        for (spec, axis) in self.trace.space.parameters().iter().zip(&self.trace.axes) {
            let around = position(axis, &params[&spec.name]);
            corners = corners
                .iter()
                .flat_map(|&(index, weight)| {
                    around
                        .iter()
                        .map(move |&(k, w)| (index * axis.count() + k, weight * w))
                })
                .filter(|&(_, w)| w > 0.0)
                .collect();
        }
        corners
    }

    /// `table` (per phase, per point) interpolated at `x` and blended at time `t`.
    fn at(&self, x: &[f64], t: f64, table: impl Fn(usize, usize) -> f64) -> f64 {
        let (phase, next, blend) = self.scenario.phase_at(t);
        self.corners(x)
            .iter()
            .map(|&(i, w)| w * ((1.0 - blend) * table(phase, i) + blend * table(next, i)))
            .sum()
    }
}

/// A term with its quantities' indices.
struct CompiledTerm {
    quantity: usize,
    per: Option<usize>,
    weight: f64,
}

fn compile(trace: &Trace, terms: &[Term]) -> Result<Vec<CompiledTerm>, BenchError> {
    terms
        .iter()
        .map(|t| {
            Ok(CompiledTerm {
                quantity: trace.quantity(&t.quantity)?,
                per: t.per.as_deref().map(|p| trace.quantity(p)).transpose()?,
                weight: t.weight,
            })
        })
        .collect()
}

/// Σ weight × quantity (/ per) of one measurement.
fn objective(terms: &[CompiledTerm], measurement: &[f64]) -> f64 {
    terms
        .iter()
        .map(|t| {
            let value = measurement[t.quantity];
            t.weight * t.per.map_or(value, |p| value / measurement[p])
        })
        .sum()
}

/// Where a value lies on its axis: its choice (weight 1), or the grid values around it
/// with the linear weights on the axis's scale.
fn position(axis: &Axis, value: &ParamValue) -> Vec<(usize, f64)> {
    match (axis, value) {
        (Axis::Choices(choices), ParamValue::Choice(c)) => {
            vec![(choices.iter().position(|x| x == c).unwrap_or(0), 1.0)]
        }
        (Axis::Grid { values, log }, ParamValue::Number(v)) => {
            if values.len() == 1 {
                return vec![(0, 1.0)];
            }
            let on_scale = |v: f64| if *log { v.ln() } else { v };
            let upper = values
                .partition_point(|g| g <= v)
                .clamp(1, values.len() - 1);
            let (a, b) = (on_scale(values[upper - 1]), on_scale(values[upper]));
            let w = ((on_scale(*v) - a) / (b - a)).clamp(0.0, 1.0);
            vec![(upper - 1, 1.0 - w), (upper, w)]
        }
        // The space's own values never mix kinds.
        _ => vec![(0, 1.0)],
    }
}

impl Objective for Replay {
    fn dim(&self) -> usize {
        self.trace.space.dim()
    }

    fn choices(&self, coordinate: usize) -> usize {
        let spec = &self.trace.space.parameters()[coordinate];
        if spec.kind == ParameterType::Categorical {
            spec.choice_list().len()
        } else {
            0
        }
    }

    fn parameters(&self) -> Option<Vec<ParameterSpec>> {
        Some(self.trace.space.parameters().to_vec())
    }

    /// The mean over points and phases of the variance between repeats.
    fn noise_variance(&self) -> f64 {
        let repeats = self.trace.repeats as f64;
        let mut total = 0.0;
        let mut count = 0.0;
        for (phase, means) in self.means.iter().enumerate() {
            for (i, mean) in means.iter().enumerate() {
                let squares: f64 = self.samples[phase]
                    .iter()
                    .map(|r| (r[i] - mean).powi(2))
                    .sum();
                total += squares / (repeats - 1.0).max(1.0);
                count += 1.0;
            }
        }
        total / count
    }

    fn cost(&self) -> f64 {
        self.scenario.evaluation_seconds
    }

    fn value(&self, x: &[f64], t: f64) -> f64 {
        self.at(x, t, |phase, i| self.means[phase][i])
    }

    /// One repeat, drawn uniformly, interpolated and blended as [`Objective::value`].
    fn measure(&self, x: &[f64], t: f64, _clean: f64, rng: &mut ChaCha8Rng) -> f64 {
        let repeat = rng.random_range(0..self.trace.repeats);
        self.at(x, t, |phase, i| self.samples[phase][repeat][i])
    }

    fn optimum(&self, t: f64) -> f64 {
        let (phase, next, blend) = self.scenario.phase_at(t);
        (0..self.trace.points())
            .map(|i| (1.0 - blend) * self.means[phase][i] + blend * self.means[next][i])
            .fold(f64::INFINITY, f64::min)
    }

    /// optimum / value for a cost, value / optimum for a rate (both negated here).
    fn achieved(&self, value: f64, optimum: f64) -> Option<f64> {
        let fraction = if self.sign > 0.0 {
            optimum / value
        } else {
            value / optimum
        };
        (fraction.is_finite() && fraction > 0.0).then_some(fraction)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;
    use tvbo_core::domain::space::SearchSpace;

    use super::*;
    use crate::trace::BUILTIN;

    /// The fake system's cost: known at every grid point, per condition and repeat.
    fn cost(mode: &str, level: f64, size: f64, condition: usize, repeat: usize) -> f64 {
        let m = if mode == "fast" { 1.0 } else { 2.0 };
        m * (level - 2.0 - condition as f64).powi(2) + size.ln() + 0.1 * repeat as f64
    }

    /// A trace of a fake system: a categorical mode, an int level measured at every
    /// integer of 1–4, a log-scale size measured at 1, 4 and 16; two conditions; 3 repeats.
    fn fake_trace() -> String {
        let mut lines = vec![json!({
            "trace": "fake", "version": 1,
            "settings": [
                {"name": "mode", "type": "categorical", "choices": ["fast", "small"]},
                {"name": "level", "type": "int", "low": 1, "high": 4},
                {"name": "size", "type": "float", "low": 1, "high": 16, "scale": "log",
                 "values": [1, 4, 16]}
            ],
            "conditions": {"name": "load", "choices": ["idle", "busy"]},
            "measured": {"cost": "the fake system's cost", "ops": "operations done",
                         "seconds": "how long they took"},
            "repeats": 3
        })];
        for (condition, name) in ["idle", "busy"].iter().enumerate() {
            for mode in ["fast", "small"] {
                for level in 1..=4 {
                    for size in [1.0, 4.0, 16.0] {
                        let measurements: Vec<_> = (0..3)
                            .map(|r| {
                                let c = cost(mode, f64::from(level), size, condition, r);
                                json!({"cost": c, "ops": 10.0, "seconds": 1.0 + c})
                            })
                            .collect();
                        lines.push(json!({
                            "setting": {"mode": mode, "level": level, "size": size},
                            "condition": name, "measurements": measurements,
                        }));
                    }
                }
            }
        }
        lines.iter().map(|l| l.to_string() + "\n").collect()
    }

    fn fake_replay(ramp: f64) -> Replay {
        let scenario = Scenario::parse(&format!(
            r#"{{"name": "fake", "label": "Fake", "trace": "fake.jsonl", "goal": "minimize",
                "objective": [{{"quantity": "cost"}}], "evaluation_seconds": 2,
                "ramp_seconds": {ramp},
                "phases": [{{"condition": "idle", "seconds": 100}}, {{"condition": "busy", "seconds": 100}}]}}"#
        ))
        .unwrap();
        Replay::new(scenario, Trace::parse(&fake_trace()).unwrap()).unwrap()
    }

    fn unit(replay: &Replay, mode: &str, level: f64, size: f64) -> Vec<f64> {
        let params: Params = [
            ("mode".to_string(), ParamValue::Choice(mode.into())),
            ("level".to_string(), ParamValue::Number(level)),
            ("size".to_string(), ParamValue::Number(size)),
        ]
        .into_iter()
        .collect();
        replay.trace.space.to_unit(&params, "params").unwrap()
    }

    /// The mean of the fake cost over its 3 repeats (+0.1 on average).
    fn mean_cost(mode: &str, level: f64, size: f64, condition: usize) -> f64 {
        (0..3)
            .map(|r| cost(mode, level, size, condition, r))
            .sum::<f64>()
            / 3.0
    }

    /// At measured settings the value is the mean of the repeats; between them, on the
    /// log scale of `size`, it is the linear interpolation, computed here axis by axis.
    #[test]
    fn values_interpolate_the_measurements_on_each_scale() {
        let replay = fake_replay(0.0);
        for (condition, t) in [(0, 10.0), (1, 150.0)] {
            for mode in ["fast", "small"] {
                for level in 1..=4 {
                    let level = f64::from(level);
                    for size in [1.0, 4.0, 16.0] {
                        let x = unit(&replay, mode, level, size);
                        let expected = mean_cost(mode, level, size, condition);
                        assert!((replay.value(&x, t) - expected).abs() < 1e-9);
                    }
                    for size in [2.0, 7.5, 11.0] {
                        let (a, b) = if size < 4.0 { (1.0, 4.0) } else { (4.0, 16.0) };
                        let w = (f64::ln(size) - f64::ln(a)) / (f64::ln(b) - f64::ln(a));
                        let expected = (1.0 - w) * mean_cost(mode, level, a, condition)
                            + w * mean_cost(mode, level, b, condition);
                        let x = unit(&replay, mode, level, size);
                        assert!((replay.value(&x, t) - expected).abs() < 1e-9, "{size}");
                    }
                }
            }
        }
    }

    /// The optimum at t is the least value over every measured setting (a brute force
    /// over the grid and 2000 random points, through the ramp between the phases), and it
    /// is reached.
    #[test]
    fn the_optimum_is_the_least_value_anywhere() {
        let replay = fake_replay(40.0);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for t in [0.0, 50.0, 70.0, 80.0, 99.0, 130.0, 190.0, 250.0] {
            let optimum = replay.optimum(t);
            let mut least = f64::INFINITY;
            for mode in ["fast", "small"] {
                for level in 1..=4 {
                    for size in [1.0, 4.0, 16.0] {
                        least = least
                            .min(replay.value(&unit(&replay, mode, f64::from(level), size), t));
                    }
                }
            }
            assert!((least - optimum).abs() < 1e-12, "t {t}");
            for _ in 0..2000 {
                let x: Vec<f64> = (0..3).map(|_| rng.random::<f64>()).collect();
                assert!(replay.value(&x, t) >= optimum - 1e-12);
            }
        }
        // Idle, the best level is 2; busy, 3; in the middle of the ramp the two blend.
        let idle = replay.value(&unit(&replay, "fast", 2.0, 1.0), 10.0);
        assert!((replay.optimum(10.0) - idle).abs() < 1e-12);
        let busy = replay.value(&unit(&replay, "fast", 3.0, 1.0), 110.0);
        assert!((replay.optimum(110.0) - busy).abs() < 1e-12);
        let x = unit(&replay, "fast", 2.0, 1.0);
        let midway = 0.5 * mean_cost("fast", 2.0, 1.0, 0) + 0.5 * mean_cost("fast", 2.0, 1.0, 1);
        assert!((replay.value(&x, 80.0) - midway).abs() < 1e-12);
        assert_eq!(replay.achieved(2.0 * idle, idle), Some(0.5));
    }

    /// A measurement is one of the repeats, each drawn about equally often, so the mean
    /// over draws is the noise-free value.
    #[test]
    fn measurements_draw_the_repeats() {
        let replay = fake_replay(0.0);
        let x = unit(&replay, "small", 3.0, 4.0);
        let clean = replay.value(&x, 5.0);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            let v = replay.measure(&x, 5.0, clean, &mut rng);
            let r = (0..3)
                .find(|&r| (v - cost("small", 3.0, 4.0, 0, r)).abs() < 1e-9)
                .expect("a repeat's value");
            counts[r] += 1;
        }
        assert!(
            counts.iter().all(|&n| (900..=1100).contains(&n)),
            "{counts:?}"
        );
        assert!((replay.noise_variance() - 0.01).abs() < 1e-12);
    }

    /// A maximised rate is replayed negated, and its achieved fraction is value/optimum.
    #[test]
    fn a_rate_is_maximised() {
        let scenario = Scenario::parse(
            r#"{"name": "fake", "label": "Fake", "trace": "fake.jsonl", "goal": "maximize",
                "objective": [{"quantity": "ops", "per": "seconds"}], "evaluation_seconds": 1,
                "phases": [{"condition": "idle", "seconds": 100}]}"#,
        )
        .unwrap();
        let replay = Replay::new(scenario, Trace::parse(&fake_trace()).unwrap()).unwrap();
        let x = unit(&replay, "fast", 4.0, 16.0);
        assert!(replay.value(&x, 0.0) < 0.0);
        let optimum = replay.optimum(0.0);
        let fraction = replay.achieved(replay.value(&x, 0.0), optimum).unwrap();
        assert!(fraction > 0.0 && fraction < 1.0);
    }

    /// Broken traces are refused with the line and the reason.
    #[test]
    fn incomplete_or_off_grid_traces_are_refused() {
        let text = fake_trace();
        let lines: Vec<&str> = text.lines().collect();
        let without_last = lines[..lines.len() - 1].join("\n");
        assert!(
            Trace::parse(&without_last)
                .unwrap_err()
                .to_string()
                .contains("1 of 48")
        );
        let twice = format!("{text}{}\n", lines[1]);
        assert!(
            Trace::parse(&twice)
                .unwrap_err()
                .to_string()
                .contains("measured twice")
        );
        let off_grid = text.replacen("\"size\":4.0", "\"size\":5.0", 1);
        assert!(
            Trace::parse(&off_grid)
                .unwrap_err()
                .to_string()
                .contains("not on its axis")
        );
    }

    /// Every committed scenario replays its trace: the session's parameters are the
    /// trace's settings, and a suggestion's value is finite.
    #[test]
    fn the_committed_traces_replay() {
        for builtin in BUILTIN {
            let scenario = Scenario::parse(builtin.scenario).unwrap();
            let trace = Trace::parse(builtin.trace).unwrap();
            let replay = Replay::new(scenario, trace).unwrap();
            let space = SearchSpace::new(replay.parameters().unwrap()).unwrap();
            assert_eq!(space.dim(), replay.dim());
            for t in [0.0, 3000.0, 7000.0] {
                let x = vec![0.5; replay.dim()];
                assert!(replay.value(&x, t).is_finite());
                assert!(replay.value(&x, t) >= replay.optimum(t));
            }
        }
    }
}
