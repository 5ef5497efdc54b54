//! The search space: named parameters and their map to and from the unit cube `[0,1]^d`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{InvalidInput, validate_text};

/// Parameter values by name.
pub type Params = BTreeMap<String, f64>;

/// Largest magnitude below which every integer is exact in f64 (2^53).
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// Writes parameter values as JSON numbers, an integral one without a fraction (`4`, not
/// `4.0`): the values of an int parameter are JSON integers in every answer, and a float
/// parameter's value that happens to be integral reads the same in JSON, which has one
/// number type. For `#[serde(serialize_with)]` on the answers' `params`.
pub fn serialize_params<S: serde::Serializer>(params: &Params, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(params.len()))?;
    for (name, &value) in params {
        if value.fract() == 0.0 && value.abs() < EXACT_INTEGERS {
            // Exact: |value| < 2^53 is an integer that i64 holds.
            #[allow(clippy::cast_possible_truncation)]
            map.serialize_entry(name, &(value as i64))?;
        } else {
            map.serialize_entry(name, &value)?;
        }
    }
    map.end()
}

/// A parameter's type: real-valued or integer (rounded on the way out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    #[default]
    Float,
    Int,
}

/// How a parameter maps onto `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    #[default]
    Linear,
    /// Logarithmic: needs low > 0.
    Log,
}

impl Scale {
    /// The name used in the API.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Linear => "linear",
            Scale::Log => "log",
        }
    }
}

/// One named parameter with its bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    /// 1 to 100 characters, no control characters; unique within the session.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: ParameterType,
    pub low: f64,
    pub high: f64,
    #[serde(default)]
    pub scale: Scale,
    /// A grid: the parameter takes only the values low + k·step, k = 0, 1, … up to high
    /// (as Optuna's `step`). Linear scale only; an integer for an int parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0)]
    pub step: Option<f64>,
    /// A context parameter: measured by the client, never chosen by the server. Every
    /// suggest gives its value (`fixed`), and every observation of a setting of the
    /// client's own names it (Ax's fixed features).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context: bool,
}

/// Relative tolerance of a value on a parameter's grid: `low + k·step` computed in f64
/// differs from the decimal a client sends (0.1 · 3 is 0.30000000000000004).
const GRID_TOLERANCE: f64 = 1e-9;

impl ParameterSpec {
    /// The nearest point of the parameter's grid to `value` in [low, high] (the grid's
    /// last point is the largest low + k·step ≤ high).
    fn nearest_on_grid(&self, step: f64, value: f64) -> f64 {
        let last = ((self.high - self.low) / step + GRID_TOLERANCE).floor();
        let k = ((value - self.low) / step).round().clamp(0.0, last);
        (self.low + k * step).min(self.high)
    }

    /// Whether `value` is on the parameter's grid, within [`GRID_TOLERANCE`] of a step.
    fn on_grid(&self, step: f64, value: f64) -> bool {
        let k = (value - self.low) / step;
        (k - k.round()).abs() <= GRID_TOLERANCE
    }

    /// `value` mapped into `[0, 1]`, rejecting (under the field `name`) a non-finite or
    /// out-of-bounds value, a fractional value of an integer and a value off the grid.
    fn unit_of(&self, value: f64, name: &str) -> Result<f64, InvalidInput> {
        if !value.is_finite() {
            return Err(InvalidInput::new(name, "must be a finite number"));
        }
        if value < self.low || value > self.high {
            return Err(InvalidInput::new(
                name,
                format!("{value} is outside [{}, {}]", self.low, self.high),
            ));
        }
        if self.kind == ParameterType::Int && value.fract() != 0.0 {
            return Err(InvalidInput::new(name, "must be an integer"));
        }
        if let Some(step) = self.step.filter(|&step| !self.on_grid(step, value)) {
            return Err(InvalidInput::new(
                name,
                format!("{value} is not {} + k·{step} for an integer k", self.low),
            ));
        }
        let unit = match self.scale {
            Scale::Linear => (value - self.low) / self.unit_span(),
            Scale::Log => (value.ln() - self.low.ln()) / self.unit_span(),
        };
        // Guaranteed by the span check of `SearchSpace::new`; kept as a guard so that
        // nothing non-finite is ever stored.
        if !(0.0..=1.0).contains(&unit) {
            return Err(InvalidInput::new(
                name,
                "does not map to a point of [0, 1] in double precision",
            ));
        }
        Ok(unit)
    }

    /// The length of the bounds on the parameter's scale: high − low, or
    /// ln(high) − ln(low) on a log scale. The map to `[0, 1]` divides by it.
    fn unit_span(&self) -> f64 {
        match self.scale {
            Scale::Linear => self.high - self.low,
            Scale::Log => self.high.ln() - self.low.ln(),
        }
    }
}

/// An arm of a finite arm set as sent by a client.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    /// 1 to 100 characters, no control characters; unique (default `arm-<index>`).
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    #[schema(value_type = BTreeMap<String, f64>)]
    pub params: Params,
}

/// An arm, named (`arm-<index>` when the client gave no name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Arm {
    pub name: String,
    #[schema(value_type = BTreeMap<String, f64>)]
    pub params: Params,
}

impl Arm {
    /// Bytes of heap memory held: the name and the parameters (the map's entries counted
    /// as packed, plus one node header per map: its node layout is internal to std).
    pub fn heap_bytes(&self) -> usize {
        let entries: usize = self
            .params
            .keys()
            .map(|k| std::mem::size_of::<(String, f64)>() + k.capacity())
            .sum();
        self.name.capacity() + entries + 2 * std::mem::size_of::<usize>()
    }
}

/// Largest magnitude of a bound or an observed value: squares and differences of numbers
/// beyond it overflow f64.
pub const MAX_MAGNITUDE: f64 = 1e100;

/// Longest parameter or arm name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Maximum number of parameters of a session.
pub const MAX_DIMENSION: usize = 32;
/// Maximum number of arms of a session.
pub const MAX_ARMS: usize = 10_000;

/// Validated parameters, in the order the session declared them.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSpace {
    parameters: Vec<ParameterSpec>,
}

impl SearchSpace {
    /// Checks names (non-empty, unique), bounds (finite, low < high, low > 0 on a log
    /// scale, integral for integers), steps (positive, on a linear scale, at most the
    /// bounds' length, integral for integers) and the dimension (1..=32).
    pub fn new(parameters: Vec<ParameterSpec>) -> Result<Self, InvalidInput> {
        if parameters.is_empty() {
            return Err(InvalidInput::new(
                "parameters",
                "needs at least one parameter",
            ));
        }
        if parameters.len() > MAX_DIMENSION {
            return Err(InvalidInput::new(
                "parameters",
                format!("at most {MAX_DIMENSION} parameters are supported"),
            ));
        }
        let mut names = BTreeSet::new();
        for (i, p) in parameters.iter().enumerate() {
            let field = |f: &str| format!("parameters[{i}].{f}");
            validate_text(&field("name"), &p.name, 1, MAX_NAME_CHARS)?;
            if !names.insert(p.name.as_str()) {
                return Err(InvalidInput::new(
                    field("name"),
                    format!("duplicate parameter name {:?}", p.name),
                ));
            }
            if !(p.low.is_finite() && p.low.abs() <= MAX_MAGNITUDE) {
                return Err(InvalidInput::new(
                    field("low"),
                    format!("must be a finite number within ±{MAX_MAGNITUDE:e}"),
                ));
            }
            if !(p.high.is_finite() && p.high.abs() <= MAX_MAGNITUDE) || p.high <= p.low {
                return Err(InvalidInput::new(
                    field("high"),
                    format!("must be a finite number within ±{MAX_MAGNITUDE:e}, greater than low"),
                ));
            }
            if p.scale == Scale::Log && p.low <= 0.0 {
                return Err(InvalidInput::new(
                    field("low"),
                    "must be > 0 for a log-scaled parameter",
                ));
            }
            if p.kind == ParameterType::Int && (p.low.fract() != 0.0 || p.high.fract() != 0.0) {
                return Err(InvalidInput::new(
                    field("low"),
                    "bounds of an int parameter must be integers",
                ));
            }
            if let Some(step) = p.step {
                validate_step(p, step, &field("step"))?;
            }
            // The map to [0, 1] divides by this span: it must be finite and positive in
            // f64, which low < high alone does not give on a log scale (1e10 and
            // 1e10 + 2e-6 have the same logarithm).
            let span = p.unit_span();
            if !(span.is_finite() && span > 0.0) {
                return Err(InvalidInput::new(
                    field("high"),
                    format!(
                        "must be distinguishable from low on a {} scale: the map to [0, 1] \
                         needs {} > 0 in double precision",
                        p.scale.name(),
                        match p.scale {
                            Scale::Linear => "high − low",
                            Scale::Log => "ln(high) − ln(low)",
                        }
                    ),
                ));
            }
        }
        Ok(SearchSpace { parameters })
    }

    /// Number of parameters, d.
    pub fn dim(&self) -> usize {
        self.parameters.len()
    }

    /// The parameters in declaration order.
    pub fn parameters(&self) -> &[ParameterSpec] {
        &self.parameters
    }

    /// Maps named values into `[0,1]^d`, rejecting missing, unknown, non-finite, out-of-bounds
    /// values, non-integral values of integers and values off a parameter's grid. `field` prefixes the field names of errors.
    pub fn to_unit(&self, params: &Params, field: &str) -> Result<Vec<f64>, InvalidInput> {
        if let Some(unknown) = params
            .keys()
            .find(|k| !self.parameters.iter().any(|p| &p.name == *k))
        {
            return Err(InvalidInput::new(
                format!("{field}.{unknown}"),
                "is not a parameter of this session",
            ));
        }
        self.parameters
            .iter()
            .map(|p| {
                let name = format!("{field}.{}", p.name);
                let value = *params
                    .get(&p.name)
                    .ok_or_else(|| InvalidInput::new(name.clone(), "is missing"))?;
                p.unit_of(value, &name)
            })
            .collect()
    }

    /// The coordinates a suggest holds fixed (`fixed`, named values: Ax's fixed
    /// features), as (index, unit value) in parameter order. Every context parameter
    /// must be among them; an unknown name or a bad value is refused under
    /// `fixed.<name>`.
    pub fn fixed_coordinates(&self, fixed: &Params) -> Result<Vec<(usize, f64)>, InvalidInput> {
        if let Some(unknown) = fixed
            .keys()
            .find(|k| !self.parameters.iter().any(|p| &p.name == *k))
        {
            return Err(InvalidInput::new(
                format!("fixed.{unknown}"),
                "is not a parameter of this session",
            ));
        }
        let mut coordinates = Vec::with_capacity(fixed.len());
        for (i, p) in self.parameters.iter().enumerate() {
            let name = format!("fixed.{}", p.name);
            match fixed.get(&p.name) {
                Some(&value) => coordinates.push((i, p.unit_of(value, &name)?)),
                None if p.context => {
                    return Err(InvalidInput::new(
                        name,
                        "is a context parameter: every suggest gives its value",
                    ));
                }
                None => {}
            }
        }
        Ok(coordinates)
    }

    /// Whether the session has a context parameter.
    pub fn has_context(&self) -> bool {
        self.parameters.iter().any(|p| p.context)
    }

    /// Maps a point of `[0,1]^d` (clamped) to named values; integers are rounded, and a
    /// parameter with a step goes to the nearest point of its grid.
    pub fn from_unit(&self, unit: &[f64]) -> Params {
        self.parameters
            .iter()
            .zip(unit)
            .map(|(p, &u)| {
                let u = if u.is_finite() {
                    u.clamp(0.0, 1.0)
                } else {
                    0.5
                };
                let raw = match p.scale {
                    Scale::Linear => p.low + u * p.unit_span(),
                    Scale::Log => (p.low.ln() + u * p.unit_span()).exp(),
                };
                let value = match (p.step, p.kind) {
                    (Some(step), _) => p.nearest_on_grid(step, raw),
                    (None, ParameterType::Float) => raw.clamp(p.low, p.high),
                    (None, ParameterType::Int) => raw.round().clamp(p.low, p.high),
                };
                (p.name.clone(), value)
            })
            .collect()
    }

    /// The unit-cube point a suggestion stands for once integers are rounded (and values
    /// put on their grids), so that the
    /// model sees exactly what the client will evaluate.
    pub fn snap(&self, unit: &[f64]) -> Vec<f64> {
        self.to_unit(&self.from_unit(unit), "params")
            .expect("from_unit returns values inside the box")
    }

    /// Validates arms: at least one, at most [`MAX_ARMS`], each inside the box, names unique.
    pub fn validate_arms(&self, arms: Vec<ArmSpec>) -> Result<Vec<Arm>, InvalidInput> {
        if arms.is_empty() || arms.len() > MAX_ARMS {
            return Err(InvalidInput::new(
                "arms",
                format!("must hold 1 to {MAX_ARMS} arms"),
            ));
        }
        let mut names = BTreeSet::new();
        arms.into_iter()
            .enumerate()
            .map(|(i, arm)| {
                self.to_unit(&arm.params, &format!("arms[{i}].params"))?;
                let name = arm.name.unwrap_or_else(|| format!("arm-{i}"));
                let field = format!("arms[{i}].name");
                validate_text(&field, &name, 1, MAX_NAME_CHARS)?;
                if !names.insert(name.clone()) {
                    return Err(InvalidInput::new(field, "must be unique"));
                }
                Ok(Arm {
                    name,
                    params: arm.params,
                })
            })
            .collect()
    }
}

/// A parameter's step: finite and positive, with at least two points on the grid
/// (step ≤ high − low), on a linear scale, and an integer for an int parameter.
fn validate_step(p: &ParameterSpec, step: f64, field: &str) -> Result<(), InvalidInput> {
    if !(step.is_finite() && step > 0.0) {
        return Err(InvalidInput::new(field, "must be a finite number > 0"));
    }
    if step > p.high - p.low {
        return Err(InvalidInput::new(
            field,
            "must be at most high − low (the grid needs two points)",
        ));
    }
    if p.scale == Scale::Log {
        return Err(InvalidInput::new(
            field,
            "is for linear scales only (a grid low + k·step is not logarithmic)",
        ));
    }
    if p.kind == ParameterType::Int && step.fract() != 0.0 {
        return Err(InvalidInput::new(
            field,
            "must be an integer for an int parameter",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> SearchSpace {
        SearchSpace::new(vec![
            ParameterSpec {
                name: "lr".into(),
                kind: ParameterType::Float,
                low: 1e-4,
                high: 1.0,
                scale: Scale::Log,
                step: None,
                context: false,
            },
            ParameterSpec {
                name: "workers".into(),
                kind: ParameterType::Int,
                low: 1.0,
                high: 16.0,
                scale: Scale::Linear,
                step: None,
                context: false,
            },
        ])
        .unwrap()
    }

    #[test]
    fn round_trip_through_the_unit_cube() {
        let s = space();
        let params: Params = [("lr".to_string(), 0.01), ("workers".to_string(), 4.0)].into();
        let unit = s.to_unit(&params, "params").unwrap();
        assert!((unit[0] - 0.5).abs() < 1e-12);
        assert!((unit[1] - 0.2).abs() < 1e-12);
        let back = s.from_unit(&unit);
        assert!((back["lr"] - 0.01).abs() < 1e-12);
        assert_eq!(back["workers"], 4.0);
    }

    #[test]
    fn bad_params_name_the_field() {
        let s = space();
        let missing: Params = [("lr".to_string(), 0.01)].into();
        assert_eq!(
            s.to_unit(&missing, "params").unwrap_err().field,
            "params.workers"
        );
        let extra: Params = [
            ("lr".to_string(), 0.01),
            ("workers".to_string(), 2.0),
            ("zzz".to_string(), 1.0),
        ]
        .into();
        assert_eq!(s.to_unit(&extra, "params").unwrap_err().field, "params.zzz");
        let outside: Params = [("lr".to_string(), 2.0), ("workers".to_string(), 2.0)].into();
        assert_eq!(
            s.to_unit(&outside, "params").unwrap_err().field,
            "params.lr"
        );
        let fractional: Params = [("lr".to_string(), 0.1), ("workers".to_string(), 2.5)].into();
        assert_eq!(
            s.to_unit(&fractional, "params").unwrap_err().field,
            "params.workers"
        );
    }

    #[test]
    fn bounds_must_span_a_positive_finite_length_on_their_scale() {
        let parameter = |low: f64, high: f64, scale: Scale| ParameterSpec {
            name: "x".into(),
            kind: ParameterType::Float,
            low,
            high,
            scale,
            step: None,
            context: false,
        };
        // Same logarithm in f64, though low < high.
        let err =
            SearchSpace::new(vec![parameter(1e10, 10000000000.000002, Scale::Log)]).unwrap_err();
        assert_eq!(err.field, "parameters[0].high");
        // Adjacent doubles are fine on a linear scale, and every value maps into [0, 1].
        let low = 1e10_f64;
        let high = f64::from_bits(low.to_bits() + 1);
        let s = SearchSpace::new(vec![parameter(low, high, Scale::Linear)]).unwrap();
        for v in [low, high] {
            let unit = s.to_unit(&[("x".to_string(), v)].into(), "params").unwrap();
            assert!((0.0..=1.0).contains(&unit[0]));
        }
        // A brute force over many tiny log ranges: accepted ranges map both bounds finitely.
        for k in 1..200u64 {
            let low = 1e10_f64;
            let high = f64::from_bits(low.to_bits() + k);
            if let Ok(s) = SearchSpace::new(vec![parameter(low, high, Scale::Log)]) {
                for v in [low, high] {
                    let unit = s.to_unit(&[("x".to_string(), v)].into(), "params").unwrap();
                    assert!(unit[0].is_finite() && (0.0..=1.0).contains(&unit[0]));
                }
                assert!(s.from_unit(&[0.5])["x"].is_finite());
            }
        }
    }

    #[test]
    fn from_unit_stays_in_bounds() {
        let s = space();
        for u in [-1.0, 0.0, 0.3, 1.0, 2.0, f64::NAN] {
            let p = s.from_unit(&[u, u]);
            assert!(p["lr"] >= 1e-4 && p["lr"] <= 1.0);
            assert!(p["workers"] >= 1.0 && p["workers"] <= 16.0);
        }
    }

    fn stepped(kind: ParameterType, low: f64, high: f64, step: f64) -> ParameterSpec {
        ParameterSpec {
            name: "x".into(),
            kind,
            low,
            high,
            scale: Scale::Linear,
            step: Some(step),
            context: false,
        }
    }

    /// A stepped parameter's suggestions are the grid point nearest the continuous
    /// proposal, checked against a search over every grid point; they read back through
    /// `to_unit`, and `snap` leaves them where they are.
    #[test]
    fn steps_put_values_on_the_nearest_grid_point() {
        for (kind, low, high, step) in [
            (ParameterType::Float, 0.0, 1.0, 0.1),
            (ParameterType::Float, -2.5, 7.0, 0.75),
            (ParameterType::Int, 0.0, 10.0, 4.0),
            (ParameterType::Int, -7.0, 20.0, 3.0),
        ] {
            let space = SearchSpace::new(vec![stepped(kind, low, high, step)]).unwrap();
            let grid: Vec<f64> = (0..)
                .map(|k| low + k as f64 * step)
                .take_while(|&g| g <= high + 1e-12)
                .collect();
            for i in 0..=200 {
                let u = i as f64 / 200.0;
                let raw = low + u * (high - low);
                let value = space.from_unit(&[u])["x"];
                let nearest = grid
                    .iter()
                    .copied()
                    .min_by(|a, b| (a - raw).abs().total_cmp(&(b - raw).abs()))
                    .unwrap();
                let tie = grid.iter().any(|&g| {
                    g != nearest && ((g - raw).abs() - (nearest - raw).abs()).abs() < 1e-9
                });
                if !tie {
                    assert!(
                        (value - nearest).abs() < 1e-9,
                        "{low}..{high} by {step}: {raw} -> {value}, not {nearest}"
                    );
                }
                assert!(value <= high && value >= low);
                let unit = space.to_unit(&space.from_unit(&[u]), "params").unwrap();
                assert_eq!(space.snap(&unit), unit);
                if kind == ParameterType::Int {
                    assert_eq!(value.fract(), 0.0);
                }
            }
        }
    }

    /// A value off the grid is a field error; a grid point computed in f64 or written as a
    /// decimal reads back.
    #[test]
    fn values_off_the_grid_are_refused() {
        let space = SearchSpace::new(vec![stepped(ParameterType::Int, 0.0, 10.0, 4.0)]).unwrap();
        let at = |x: f64| -> Params { [("x".to_string(), x)].into() };
        assert!(space.to_unit(&at(8.0), "params").is_ok());
        let err = space.to_unit(&at(6.0), "params").unwrap_err();
        assert_eq!(err.field, "params.x");
        let space = SearchSpace::new(vec![stepped(ParameterType::Float, 0.0, 1.0, 0.1)]).unwrap();
        assert!(space.to_unit(&at(0.3), "params").is_ok());
        assert!(space.to_unit(&at(0.1 * 3.0), "params").is_ok());
        assert_eq!(
            space.to_unit(&at(0.35), "params").unwrap_err().field,
            "params.x"
        );
    }

    /// Steps that are not positive, leave a single grid point, sit on a log scale or are
    /// fractional for an integer are refused, naming the field.
    #[test]
    fn bad_steps_name_the_field() {
        let bad = [
            stepped(ParameterType::Float, 0.0, 1.0, 0.0),
            stepped(ParameterType::Float, 0.0, 1.0, -0.1),
            stepped(ParameterType::Float, 0.0, 1.0, f64::NAN),
            stepped(ParameterType::Float, 0.0, 1.0, 1.5),
            stepped(ParameterType::Int, 0.0, 10.0, 2.5),
            ParameterSpec {
                scale: Scale::Log,
                ..stepped(ParameterType::Float, 1.0, 10.0, 1.0)
            },
        ];
        for p in bad {
            let err = SearchSpace::new(vec![p.clone()]).unwrap_err();
            assert_eq!(err.field, "parameters[0].step", "{p:?}");
        }
    }

    /// Integral values are written as JSON integers, others as they are, and both read
    /// back as the same f64.
    #[test]
    fn integral_values_are_written_as_integers() {
        #[derive(Serialize)]
        struct Answer<'a> {
            #[serde(serialize_with = "serialize_params")]
            params: &'a Params,
        }
        let params: Params = [
            ("a".to_string(), 4.0),
            ("b".to_string(), -0.0),
            ("c".to_string(), 0.25),
            ("d".to_string(), 1e300),
            ("e".to_string(), -9_007_199_254_740_991.0),
        ]
        .into();
        let json = serde_json::to_value(Answer { params: &params }).unwrap();
        assert!(json["params"]["a"].is_i64() && json["params"]["a"] == 4);
        assert!(json["params"]["b"].is_i64() && json["params"]["b"] == 0);
        assert!(json["params"]["c"].is_f64());
        assert!(json["params"]["d"].is_f64());
        assert!(json["params"]["e"].is_i64());
        let back: Params = serde_json::from_value(json["params"].clone()).unwrap();
        assert_eq!(back, params);
    }
}
