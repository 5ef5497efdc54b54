//! The search space: named parameters and their map to and from the unit cube `[0,1]^d`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::domain::{InvalidInput, validate_text};

/// Parameter values by name.
pub type Params = BTreeMap<String, ParamValue>;

/// Largest magnitude below which every integer is exact in f64 (2^53).
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// A parameter's value: a number (float and int parameters) or one of a categorical
/// parameter's choices. In JSON a number or a string; a number is written without a
/// fraction when it is integral (`4`, not `4.0`), so that an int parameter's values are
/// JSON integers in every answer (and a float parameter's integral value reads the same:
/// JSON has one number type).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Number(f64),
    Choice(String),
}

impl ParamValue {
    /// The number, if it is one.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            ParamValue::Number(value) => Some(*value),
            ParamValue::Choice(_) => None,
        }
    }

    /// The choice, if it is one.
    pub fn as_choice(&self) -> Option<&str> {
        match self {
            ParamValue::Number(_) => None,
            ParamValue::Choice(choice) => Some(choice),
        }
    }
}

/// The unit coordinate of choice `k` of `choices`: the centre of its cell, (k + ½)/K.
pub fn choice_centre(k: usize, choices: usize) -> f64 {
    (k as f64 + 0.5) / choices as f64
}

/// The choice of `choices` whose cell of [0, 1] holds `u` (1 in the last).
pub fn choice_at(u: f64, choices: usize) -> usize {
    ((u * choices as f64) as usize).min(choices - 1)
}

/// Named numbers as [`Params`].
pub fn numbers<'a>(pairs: impl IntoIterator<Item = (&'a str, f64)>) -> Params {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_string(), ParamValue::Number(value)))
        .collect()
}

/// In the OpenAPI document: an integer (an int parameter's value), a number (a float
/// parameter's) or a string (a categorical parameter's choice), any of them. Written by
/// hand (`ComposeSchema` is what `#[derive(ToSchema)]` implements, and utoipa derives
/// `PartialSchema` from it) because the derive would make it `oneOf`, which an integer,
/// also a number, does not satisfy.
#[cfg(feature = "openapi")]
impl utoipa::__dev::ComposeSchema for ParamValue {
    fn compose(
        _: Vec<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>>,
    ) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            AnyOfBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type,
        };
        let kind = |kind: Type, format: Option<KnownFormat>, description: &str| {
            ObjectBuilder::new()
                .schema_type(kind)
                .format(format.map(SchemaFormat::KnownFormat))
                .description(Some(description))
        };
        AnyOfBuilder::new()
            .item(kind(
                Type::Integer,
                Some(KnownFormat::Int64),
                "an int parameter's value (any integral value is written so)",
            ))
            .item(kind(
                Type::Number,
                Some(KnownFormat::Double),
                "a float parameter's value",
            ))
            .item(kind(Type::String, None, "a categorical parameter's choice"))
            .description(Some(
                "A parameter's value: an integer for an int parameter, a number for a float \
                 one, one of its choices for a categorical one.",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ParamValue {}

impl From<f64> for ParamValue {
    fn from(value: f64) -> Self {
        ParamValue::Number(value)
    }
}

impl From<&str> for ParamValue {
    fn from(choice: &str) -> Self {
        ParamValue::Choice(choice.to_string())
    }
}

impl Serialize for ParamValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Number(value) if value.fract() == 0.0 && value.abs() < EXACT_INTEGERS => {
                // Exact: |value| < 2^53 is an integer that i64 holds.
                #[allow(clippy::cast_possible_truncation)]
                s.serialize_i64(*value as i64)
            }
            ParamValue::Number(value) => s.serialize_f64(*value),
            ParamValue::Choice(choice) => s.serialize_str(choice),
        }
    }
}

/// A parameter's type: real-valued, integer (rounded on the way out), or categorical
/// (one of its `choices`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    #[default]
    Float,
    Int,
    Categorical,
}

/// How a parameter maps onto `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// One named parameter: a number with its bounds, or a categorical one with its choices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    /// 1 to 100 characters, no control characters; unique within the session.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: ParameterType,
    /// Lower bound of a float or int parameter (required for them, absent for a
    /// categorical one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// Upper bound of a float or int parameter, greater than `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    #[serde(default)]
    pub scale: Scale,
    /// The values of a categorical parameter: 2 to 64 distinct strings of 1 to 100
    /// characters (required for it, absent for the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_items = 2, max_items = 64))]
    pub choices: Option<Vec<String>>,
    /// A grid: the parameter takes only the values low + k·step, k = 0, 1, … up to high
    /// (as Optuna's `step`). Linear scale only; an integer for an int parameter; at least
    /// 1024 ulp of max(|low|, |high|), so that the grid's points are distinct in double
    /// precision (any integer step of an int parameter within ±2^52).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
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

/// The smallest step, in ulp of the bounds' magnitude: the rounding of `low + k·step`
/// (a few ulp) stays far below a step, so grid points are distinct and each reads back
/// as itself.
const GRID_MIN_STEP_ULPS: f64 = 1024.0;

/// Absolute slack of a value on a parameter's grid, in ulp of the bounds' magnitude: the
/// rounding of `low + k·step` computed in f64 and of the client's decimal.
const GRID_SLACK_ULPS: f64 = 4.0;

/// The gap from `x` (finite, ≥ 0) to the next double.
fn ulp(x: f64) -> f64 {
    x.next_up() - x
}

impl ParameterSpec {
    /// A float parameter on `[low, high]` (linear scale, no step).
    pub fn float(name: &str, low: f64, high: f64) -> ParameterSpec {
        ParameterSpec {
            name: name.to_string(),
            kind: ParameterType::Float,
            low: Some(low),
            high: Some(high),
            scale: Scale::Linear,
            choices: None,
            step: None,
            context: false,
        }
    }

    /// A categorical parameter with these choices.
    pub fn categorical(name: &str, choices: &[&str]) -> ParameterSpec {
        ParameterSpec {
            kind: ParameterType::Categorical,
            low: None,
            high: None,
            choices: Some(choices.iter().map(|c| c.to_string()).collect()),
            ..ParameterSpec::float(name, 0.0, 1.0)
        }
    }

    /// The bounds of a numeric parameter ((0, 1) for a categorical one, whose unit
    /// coordinate they do not describe); both present once the space is checked.
    fn bounds(&self) -> (f64, f64) {
        (self.low.unwrap_or(0.0), self.high.unwrap_or(1.0))
    }

    /// The choices of a categorical parameter (none for the others).
    pub fn choice_list(&self) -> &[String] {
        self.choices.as_deref().unwrap_or_default()
    }

    /// max(|low|, |high|).
    fn magnitude(&self) -> f64 {
        let (low, high) = self.bounds();
        low.abs().max(high.abs())
    }

    /// Whether the grid's arithmetic is exact: an int parameter within ±2^52, whose
    /// points low + k·step and their differences are integers below 2^53.
    fn exact_grid(&self) -> bool {
        self.kind == ParameterType::Int && self.magnitude() <= EXACT_INTEGERS / 2.0
    }

    /// The nearest point of the parameter's grid to `value` in [low, high] (the grid's
    /// last point is the largest low + k·step ≤ high).
    fn nearest_on_grid(&self, step: f64, value: f64) -> f64 {
        let (low, high) = self.bounds();
        let last = ((high - low) / step + GRID_TOLERANCE).floor();
        let k = ((value - low) / step).round().clamp(0.0, last);
        (low + k * step).min(high)
    }

    /// Whether `value` (in [low, high]) is on the parameter's grid: its nearest grid
    /// point itself on an exact grid, else within [`GRID_TOLERANCE`] of a step plus
    /// [`GRID_SLACK_ULPS`] ulp of the bounds' magnitude. A point `nearest_on_grid` gave
    /// is its own nearest point on a grid `validate_step` accepted.
    fn on_grid(&self, step: f64, value: f64) -> bool {
        let tolerance = if self.exact_grid() {
            0.0
        } else {
            GRID_TOLERANCE * step + GRID_SLACK_ULPS * ulp(self.magnitude())
        };
        (value - self.nearest_on_grid(step, value)).abs() <= tolerance
    }

    /// `value` mapped into `[0, 1]`, rejecting (under the field `name`) a value of the
    /// wrong kind, a non-finite or out-of-bounds number, a fractional value of an
    /// integer, a value off the grid and a choice not among a categorical parameter's.
    /// Choice k of K maps to the centre of its cell, (k + ½)/K.
    fn unit_of(&self, value: &ParamValue, name: &str) -> Result<f64, InvalidInput> {
        if self.kind == ParameterType::Categorical {
            let choices = self.choice_list();
            let choice = value.as_choice().ok_or_else(|| {
                InvalidInput::new(name, format!("must be one of {choices:?}, as a string"))
            })?;
            let k = choices.iter().position(|c| c == choice).ok_or_else(|| {
                InvalidInput::new(name, format!("{choice:?} is not one of {choices:?}"))
            })?;
            return Ok(choice_centre(k, choices.len()));
        }
        let value = value
            .as_number()
            .ok_or_else(|| InvalidInput::new(name, "must be a number"))?;
        let (low, high) = self.bounds();
        if !value.is_finite() {
            return Err(InvalidInput::new(name, "must be a finite number"));
        }
        if value < low || value > high {
            return Err(InvalidInput::new(
                name,
                format!("{value} is outside [{low}, {high}]"),
            ));
        }
        if self.kind == ParameterType::Int && value.fract() != 0.0 {
            return Err(InvalidInput::new(name, "must be an integer"));
        }
        if let Some(step) = self.step.filter(|&step| !self.on_grid(step, value)) {
            return Err(InvalidInput::new(
                name,
                format!("{value} is not {low} + k·{step} for an integer k"),
            ));
        }
        let unit = self.unit_of_number(value);
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

    /// The unit coordinate of a number in [low, high], unchecked.
    fn unit_of_number(&self, value: f64) -> f64 {
        let low = self.bounds().0;
        match self.scale {
            Scale::Linear => (value - low) / self.unit_span(),
            Scale::Log => (value.ln() - low.ln()) / self.unit_span(),
        }
    }

    /// The value at unit coordinate `u` (in [0, 1]): a number rounded for an integer and
    /// put on its grid, or the choice whose cell holds `u`.
    fn value_at(&self, u: f64) -> ParamValue {
        let (low, high) = self.bounds();
        let raw = match self.scale {
            Scale::Linear => low + u * self.unit_span(),
            Scale::Log => (low.ln() + u * self.unit_span()).exp(),
        };
        let value = match (self.step, self.kind) {
            (_, ParameterType::Categorical) => {
                let choices = self.choice_list();
                return ParamValue::Choice(choices[choice_at(u, choices.len())].clone());
            }
            (Some(step), _) => self.nearest_on_grid(step, raw),
            (None, ParameterType::Float) => raw.clamp(low, high),
            (None, ParameterType::Int) => raw.round().clamp(low, high),
        };
        ParamValue::Number(value)
    }

    /// The length of the bounds on the parameter's scale: high − low, or
    /// ln(high) − ln(low) on a log scale. The map to `[0, 1]` divides by it.
    fn unit_span(&self) -> f64 {
        let (low, high) = self.bounds();
        match self.scale {
            Scale::Linear => high - low,
            Scale::Log => high.ln() - low.ln(),
        }
    }
}

/// An arm of a finite arm set as sent by a client.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    /// 1 to 100 characters, no control characters; unique (default `arm-<index>`).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub name: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, ParamValue>))]
    pub params: Params,
}

/// An arm, named (`arm-<index>` when the client gave no name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Arm {
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, ParamValue>))]
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
/// Most choices of a categorical parameter.
pub const MAX_CHOICES: usize = 64;

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
            if p.kind == ParameterType::Categorical {
                validate_categorical(p, &field)?;
                continue;
            }
            if p.choices.is_some() {
                return Err(InvalidInput::new(
                    field("choices"),
                    "only a categorical parameter (type categorical) has choices",
                ));
            }
            let low = p
                .low
                .ok_or_else(|| InvalidInput::new(field("low"), "is required"))?;
            let high = p
                .high
                .ok_or_else(|| InvalidInput::new(field("high"), "is required"))?;
            if !(low.is_finite() && low.abs() <= MAX_MAGNITUDE) {
                return Err(InvalidInput::new(
                    field("low"),
                    format!("must be a finite number within ±{MAX_MAGNITUDE:e}"),
                ));
            }
            if !(high.is_finite() && high.abs() <= MAX_MAGNITUDE) || high <= low {
                return Err(InvalidInput::new(
                    field("high"),
                    format!("must be a finite number within ±{MAX_MAGNITUDE:e}, greater than low"),
                ));
            }
            if p.scale == Scale::Log && low <= 0.0 {
                return Err(InvalidInput::new(
                    field("low"),
                    "must be > 0 for a log-scaled parameter",
                ));
            }
            if p.kind == ParameterType::Int && (low.fract() != 0.0 || high.fract() != 0.0) {
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

    /// `dim` float parameters `x0`, `x1`, … on [0, 1]: the unit cube itself.
    pub fn unit(dim: usize) -> SearchSpace {
        SearchSpace {
            parameters: (0..dim)
                .map(|i| ParameterSpec::float(&format!("x{i}"), 0.0, 1.0))
                .collect(),
        }
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
                let value = params
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
                Some(value) => coordinates.push((i, p.unit_of(value, &name)?)),
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

    /// The number of choices of each parameter in order: 0 for a float or int one (the
    /// model's categorical inputs, `gp::Categories`).
    pub fn choice_counts(&self) -> Vec<usize> {
        self.parameters
            .iter()
            .map(|p| p.choice_list().len())
            .collect()
    }

    /// The number of float and int parameters.
    pub fn continuous_dim(&self) -> usize {
        self.choice_counts().iter().filter(|&&k| k == 0).count()
    }

    /// Whether a parameter is categorical.
    pub fn has_categorical(&self) -> bool {
        self.continuous_dim() < self.dim()
    }

    /// Maps a point of `[0,1]^d` (clamped) to named values; integers are rounded, a
    /// parameter with a step goes to the nearest point of its grid, and a categorical
    /// one takes the choice whose cell holds its coordinate.
    pub fn from_unit(&self, unit: &[f64]) -> Params {
        self.parameters
            .iter()
            .zip(unit)
            .map(|(p, &u)| (p.name.clone(), p.value_at(in_unit(u))))
            .collect()
    }

    /// The unit-cube point a suggestion stands for once integers are rounded, values put
    /// on their grids and choices at their cells' centres, so that the model sees exactly
    /// what the client will evaluate: `to_unit` of `from_unit(unit)`, which accepts it,
    /// computed without its checks.
    pub fn snap(&self, unit: &[f64]) -> Vec<f64> {
        self.parameters
            .iter()
            .zip(unit)
            .map(|(p, &u)| {
                let u = in_unit(u);
                match p.value_at(u) {
                    ParamValue::Number(value) => p.unit_of_number(value).clamp(0.0, 1.0),
                    ParamValue::Choice(_) => {
                        let choices = p.choice_list().len();
                        choice_centre(choice_at(u, choices), choices)
                    }
                }
            })
            .collect()
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

/// `u` clamped into [0, 1]; the centre, ½, when it is not finite.
fn in_unit(u: f64) -> f64 {
    if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.5
    }
}

/// A categorical parameter: 2 to [`MAX_CHOICES`] distinct choices of 1 to 100 characters;
/// no bounds, log scale or step.
fn validate_categorical(
    p: &ParameterSpec,
    field: &dyn Fn(&str) -> String,
) -> Result<(), InvalidInput> {
    for (name, given) in [
        ("low", p.low.is_some()),
        ("high", p.high.is_some()),
        ("step", p.step.is_some()),
        ("scale", p.scale == Scale::Log),
    ] {
        if given {
            return Err(InvalidInput::new(
                field(name),
                "a categorical parameter has choices, not bounds, a scale or a step",
            ));
        }
    }
    let choices = p.choices.as_deref().ok_or_else(|| {
        InvalidInput::new(field("choices"), "is required for a categorical parameter")
    })?;
    if !(2..=MAX_CHOICES).contains(&choices.len()) {
        return Err(InvalidInput::new(
            field("choices"),
            format!("must hold 2 to {MAX_CHOICES} choices"),
        ));
    }
    let mut seen = BTreeSet::new();
    for (k, choice) in choices.iter().enumerate() {
        let name = field(&format!("choices[{k}]"));
        validate_text(&name, choice, 1, MAX_NAME_CHARS)?;
        if !seen.insert(choice) {
            return Err(InvalidInput::new(
                name,
                format!("duplicate choice {choice:?}"),
            ));
        }
    }
    Ok(())
}

/// A parameter's step: finite and positive, with at least two points on the grid
/// (step ≤ high − low), on a linear scale, an integer for an int parameter, and at
/// least [`GRID_MIN_STEP_ULPS`] ulp of the bounds' magnitude unless the grid is exact
/// (the points low + k·step must be distinct in f64, and read back as themselves).
fn validate_step(p: &ParameterSpec, step: f64, field: &str) -> Result<(), InvalidInput> {
    if !(step.is_finite() && step > 0.0) {
        return Err(InvalidInput::new(field, "must be a finite number > 0"));
    }
    let (low, high) = p.bounds();
    if step > high - low {
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
    let least = GRID_MIN_STEP_ULPS * ulp(p.magnitude());
    if step < least && !p.exact_grid() {
        return Err(InvalidInput::new(
            field,
            format!(
                "must be at least {least:e} ({GRID_MIN_STEP_ULPS} ulp of max(|low|, |high|)): \
                 the grid's points low + k·step must be distinct in double precision"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "space_tests.rs"]
mod tests;
