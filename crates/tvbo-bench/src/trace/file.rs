//! A trace file (docs/traces.md "Format"): a header naming the settings, the conditions
//! and the measured quantities, then one line per (setting, condition) with its repeated
//! measurements. [`Trace::parse`] reads one and checks that it is a complete grid: every
//! setting of the product of the parameters' values under every condition, each measured
//! the same number of times, every quantity a finite number.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use tvbo_core::domain::space::{ParameterSpec, ParameterType, Scale, SearchSpace};

use crate::error::{BenchError, name_parameters};

/// The values at which one setting was measured: a categorical one's choices, or a
/// numeric one's grid (increasing, from its `low` to its `high`).
#[derive(Clone, Debug, PartialEq)]
pub enum Axis {
    Choices(Vec<String>),
    /// The grid's values, and whether the parameter's scale is logarithmic (the replay
    /// interpolates on the parameter's own scale).
    Grid {
        values: Vec<f64>,
        log: bool,
    },
}

impl Axis {
    /// How many values the axis has.
    pub fn count(&self) -> usize {
        match self {
            Axis::Choices(choices) => choices.len(),
            Axis::Grid { values, .. } => values.len(),
        }
    }

    /// The index of `value` on this axis, if the trace measured it.
    fn index_of(&self, value: &Value) -> Option<usize> {
        match (self, value) {
            (Axis::Choices(choices), Value::String(s)) => choices.iter().position(|c| c == s),
            (Axis::Grid { values, .. }, Value::Number(n)) => {
                let n = n.as_f64()?;
                values
                    .iter()
                    .position(|v| (v - n).abs() <= 1e-9 * v.abs().max(1.0))
            }
            _ => None,
        }
    }
}

/// The header's lines as they are written.
#[derive(Deserialize)]
struct RawHeader {
    trace: String,
    version: u32,
    settings: Vec<Value>,
    conditions: RawConditions,
    measured: BTreeMap<String, String>,
    repeats: usize,
}

#[derive(Deserialize)]
struct RawConditions {
    name: String,
    choices: Vec<String>,
}

#[derive(Deserialize)]
struct RawPoint {
    setting: BTreeMap<String, Value>,
    condition: String,
    measurements: Vec<BTreeMap<String, f64>>,
}

/// A parsed trace: its search space, the grid's axes, the conditions, and every point's
/// measurements.
#[derive(Clone, Debug)]
pub struct Trace {
    pub name: String,
    /// The settings in the API's form (what a session over this system declares).
    pub space: SearchSpace,
    /// The measured values of each setting, in the space's order.
    pub axes: Vec<Axis>,
    /// The condition's name (`data`, `workload`) and its choices.
    pub condition_name: String,
    pub conditions: Vec<String>,
    /// The measured quantities, in the order of each measurement's values.
    pub quantities: Vec<String>,
    pub repeats: usize,
    /// `measurements[condition][point][repeat][quantity]`; a point's index is the
    /// mixed-radix number of its axis indices, the first setting the most significant.
    pub measurements: Vec<Vec<Vec<Vec<f64>>>>,
}

/// A failure to read a trace, naming the line.
fn invalid(line: usize, message: impl std::fmt::Display) -> BenchError {
    BenchError::Objective(format!("trace line {line}: {message}"))
}

impl Trace {
    /// Reads a trace from its text (JSON Lines).
    pub fn parse(text: &str) -> Result<Trace, BenchError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or_else(|| invalid(1, "empty"))?;
        let header: RawHeader = serde_json::from_str(first).map_err(|e| invalid(1, e))?;
        if header.version != 1 {
            return Err(invalid(1, format!("version {} (known: 1)", header.version)));
        }
        if header.repeats == 0 || header.conditions.choices.is_empty() {
            return Err(invalid(1, "no repeats or no conditions"));
        }
        let (specs, axes) = settings(&header.settings)?;
        let names: Vec<String> = specs.iter().map(|p| p.name.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let space = SearchSpace::new(specs).map_err(|e| {
            invalid(
                1,
                format!("settings: {}", name_parameters(&e.to_string(), &names)),
            )
        })?;
        let quantities: Vec<String> = header.measured.keys().cloned().collect();
        let points: usize = axes.iter().map(Axis::count).product();
        let mut measurements = vec![vec![Vec::new(); points]; header.conditions.choices.len()];
        for (index, line) in lines {
            let line_number = index + 1;
            let raw: RawPoint = serde_json::from_str(line).map_err(|e| invalid(line_number, e))?;
            let condition = header
                .conditions
                .choices
                .iter()
                .position(|c| *c == raw.condition)
                .ok_or_else(|| invalid(line_number, format!("condition {:?}", raw.condition)))?;
            let point =
                point_index(&space, &axes, &raw.setting).map_err(|e| invalid(line_number, e))?;
            let slot = &mut measurements[condition][point];
            if !slot.is_empty() {
                return Err(invalid(line_number, "a point measured twice"));
            }
            if raw.measurements.len() != header.repeats {
                return Err(invalid(
                    line_number,
                    format!("{} repeats, not {}", raw.measurements.len(), header.repeats),
                ));
            }
            for measurement in &raw.measurements {
                let values: Option<Vec<f64>> = quantities
                    .iter()
                    .map(|q| measurement.get(q).copied().filter(|v| v.is_finite()))
                    .collect();
                slot.push(values.ok_or_else(|| {
                    invalid(
                        line_number,
                        "a measurement without every quantity as a finite number",
                    )
                })?);
            }
        }
        let missing = measurements
            .iter()
            .flatten()
            .filter(|m| m.is_empty())
            .count();
        if missing > 0 {
            return Err(BenchError::Objective(format!(
                "trace {}: {missing} of {} (setting, condition) points were not measured",
                header.trace,
                points * header.conditions.choices.len()
            )));
        }
        Ok(Trace {
            name: header.trace,
            space,
            axes,
            condition_name: header.conditions.name,
            conditions: header.conditions.choices,
            quantities,
            repeats: header.repeats,
            measurements,
        })
    }

    /// The number of grid points (settings) per condition.
    pub fn points(&self) -> usize {
        self.axes.iter().map(Axis::count).product()
    }

    /// The index of a quantity, or an error naming the known ones.
    pub fn quantity(&self, name: &str) -> Result<usize, BenchError> {
        self.index_in(&self.quantities, name, "quantity")
    }

    /// The index of a condition, or an error naming the known ones.
    pub fn condition(&self, name: &str) -> Result<usize, BenchError> {
        self.index_in(&self.conditions, name, &self.condition_name)
    }

    /// The index of `name` in `known`, or an error naming `what` and the known ones.
    fn index_in(&self, known: &[String], name: &str, what: &str) -> Result<usize, BenchError> {
        known.iter().position(|k| k == name).ok_or_else(|| {
            BenchError::Objective(format!(
                "trace {} has no {what} {name:?} (it has {})",
                self.name,
                known.join(", ")
            ))
        })
    }
}

/// The header's settings as parameter specifications (without `values`) and their axes.
/// An error names the setting (by its `name`, else its position).
fn settings(raw: &[Value]) -> Result<(Vec<ParameterSpec>, Vec<Axis>), BenchError> {
    let mut specs = Vec::new();
    let mut axes = Vec::new();
    for (i, setting) in raw.iter().enumerate() {
        let mut setting = setting.clone();
        let values = setting.as_object_mut().and_then(|o| o.remove("values"));
        let which = match setting.get("name").and_then(Value::as_str) {
            Some(name) => format!("setting {name}"),
            None => format!("setting {} of the header", i + 1),
        };
        let spec: ParameterSpec =
            serde_json::from_value(setting).map_err(|e| invalid(1, format!("{which}: {e}")))?;
        axes.push(axis(&spec, values)?);
        specs.push(spec);
    }
    Ok((specs, axes))
}

/// The axis of one setting: its choices, its `values`, or every integer of an int one.
fn axis(spec: &ParameterSpec, values: Option<Value>) -> Result<Axis, BenchError> {
    let name = &spec.name;
    if spec.kind == ParameterType::Categorical {
        return Ok(Axis::Choices(spec.choice_list().to_vec()));
    }
    let (low, high) = match (spec.low, spec.high) {
        (Some(low), Some(high)) => (low, high),
        _ => return Err(invalid(1, format!("setting {name}: no low and high"))),
    };
    if spec.scale == Scale::Log && low <= 0.0 {
        return Err(invalid(
            1,
            format!(
                "setting {name}: a log scale needs low > 0, and it starts at {low} (a \
                 session refuses it: the logarithm of {low} is not finite). Declare it \
                 \"scale\": \"linear\"; or \"type\": \"categorical\" with its values as \
                 choices (strings in the points); or shift it: a setting of value + c > 0 \
                 (e.g. {name}_plus_1 measured at 1, 11, 101 for 0, 10, 100), which the \
                 recorder applies as value − c"
            ),
        ));
    }
    let values: Vec<f64> = match values {
        Some(values) => serde_json::from_value(values)
            .map_err(|e| invalid(1, format!("setting {name}: values: {e}")))?,
        None if spec.kind == ParameterType::Int && high - low <= 1000.0 => (0..=(high - low)
            as usize)
            .map(|k| low + k as f64)
            .collect(),
        None => {
            return Err(invalid(
                1,
                format!("setting {name}: a float needs its values"),
            ));
        }
    };
    let increasing = values.windows(2).all(|w| w[0] < w[1]);
    if !increasing || values.first() != Some(&low) || values.last() != Some(&high) {
        return Err(invalid(
            1,
            format!("setting {name}: values must increase from low to high"),
        ));
    }
    Ok(Axis::Grid {
        values,
        log: spec.scale == Scale::Log,
    })
}

/// The grid index of a point's setting (every parameter present, each on its axis).
fn point_index(
    space: &SearchSpace,
    axes: &[Axis],
    setting: &BTreeMap<String, Value>,
) -> Result<usize, String> {
    if setting.len() != axes.len() {
        return Err(format!("{} settings, not {}", setting.len(), axes.len()));
    }
    let mut index = 0;
    for (spec, axis) in space.parameters().iter().zip(axes) {
        let value = setting
            .get(&spec.name)
            .ok_or_else(|| format!("no value of {}", spec.name))?;
        let k = axis
            .index_of(value)
            .ok_or_else(|| format!("{} = {value} is not on its axis", spec.name))?;
        index = index * axis.count() + k;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The header of a trace of `settings` under one condition, measured once.
    fn header_only(settings: Value) -> String {
        json!({
            "trace": "t", "version": 1, "settings": settings,
            "conditions": {"name": "load", "choices": ["idle"]},
            "measured": {"cost": "a cost"}, "repeats": 1
        })
        .to_string()
    }

    /// A log-scale setting measured from 0 cannot be a session's parameter: the reader
    /// refuses it by name and says how to declare it instead.
    #[test]
    fn a_log_scale_from_zero_is_refused_with_the_ways_to_declare_it() {
        let e = Trace::parse(&header_only(json!([
            {"name": "mode", "type": "categorical", "choices": ["a", "b"]},
            {"name": "mmap_mib", "type": "int", "low": 0, "high": 100, "scale": "log",
             "values": [0, 10, 100]}
        ])))
        .unwrap_err()
        .to_string();
        for says in [
            "trace line 1: setting mmap_mib: a log scale needs low > 0",
            "\"scale\": \"linear\"",
            "\"type\": \"categorical\"",
            "shift it",
        ] {
            assert!(e.contains(says), "{says:?} in {e}");
        }
        // Declared linear, the same grid is a trace.
        let mut text = header_only(json!([
            {"name": "mmap_mib", "type": "int", "low": 0, "high": 100, "values": [0, 10, 100]}
        ]));
        for v in [0, 10, 100] {
            text.push('\n');
            text.push_str(
                &json!({"setting": {"mmap_mib": v}, "condition": "idle",
                        "measurements": [{"cost": 1.0}]})
                .to_string(),
            );
        }
        assert_eq!(Trace::parse(&text).unwrap().points(), 3);
    }

    /// The search space's own checks name the setting, not its index.
    #[test]
    fn settings_the_space_refuses_are_named() {
        let e = Trace::parse(&header_only(json!([
            {"name": "mode", "type": "categorical", "choices": ["a", "b"]},
            {"name": "level", "type": "int", "low": 1.5, "high": 4, "values": [1.5, 4]}
        ])))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("settings: parameter \"level\", low: bounds of an int parameter"),
            "{e}"
        );
        assert!(!e.contains("parameters["), "{e}");
        let e = Trace::parse(&header_only(json!([
            {"name": "mode", "type": "categorical", "choices": ["a", "b"]},
            {"name": "level", "type": "integer", "low": 1, "high": 4}
        ])))
        .unwrap_err()
        .to_string();
        assert!(e.contains("setting level: unknown variant"), "{e}");
    }
}
