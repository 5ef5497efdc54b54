//! The search space: named parameters and their map to and from the unit cube [0,1]^d.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::session::InvalidInput;

/// Parameter values by name.
pub type Params = BTreeMap<String, f64>;

/// A parameter's type: real-valued or integer (rounded on the way out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    #[default]
    Float,
    Int,
}

/// How a parameter maps onto [0, 1].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    #[default]
    Linear,
    /// Logarithmic: needs low > 0.
    Log,
}

/// One named parameter with its bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: ParameterType,
    pub low: f64,
    pub high: f64,
    #[serde(default)]
    pub scale: Scale,
}

/// An arm of a finite arm set as sent by a client.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
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

/// Largest magnitude of a bound or an observed value: squares and differences of numbers
/// beyond it overflow f64.
pub const MAX_MAGNITUDE: f64 = 1e100;

/// Maximum number of parameters of a session.
pub const MAX_DIMENSION: usize = 32;
/// Maximum number of arms of a session.
pub const MAX_ARMS: usize = 10_000;

/// Validated parameters, in the order the session declared them.
#[derive(Clone, Debug)]
pub struct SearchSpace {
    parameters: Vec<ParameterSpec>,
}

impl SearchSpace {
    /// Checks names (non-empty, unique), bounds (finite, low < high, low > 0 on a log
    /// scale, integral for integers) and the dimension (1..=32).
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
            if p.name.is_empty() || p.name.len() > 100 {
                return Err(InvalidInput::new(
                    field("name"),
                    "must be 1 to 100 characters",
                ));
            }
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

    /// Maps named values into [0,1]^d, rejecting missing, unknown, non-finite, out-of-bounds
    /// and (for integers) non-integral values. `field` prefixes the field names of errors.
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
                if !value.is_finite() {
                    return Err(InvalidInput::new(name, "must be a finite number"));
                }
                if value < p.low || value > p.high {
                    return Err(InvalidInput::new(
                        name,
                        format!("{value} is outside [{}, {}]", p.low, p.high),
                    ));
                }
                if p.kind == ParameterType::Int && value.fract() != 0.0 {
                    return Err(InvalidInput::new(name, "must be an integer"));
                }
                Ok(match p.scale {
                    Scale::Linear => (value - p.low) / (p.high - p.low),
                    Scale::Log => (value.ln() - p.low.ln()) / (p.high.ln() - p.low.ln()),
                })
            })
            .collect()
    }

    /// Maps a point of [0,1]^d (clamped) to named values; integers are rounded.
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
                    Scale::Linear => p.low + u * (p.high - p.low),
                    Scale::Log => (p.low.ln() + u * (p.high.ln() - p.low.ln())).exp(),
                };
                let value = match p.kind {
                    ParameterType::Float => raw.clamp(p.low, p.high),
                    ParameterType::Int => raw.round().clamp(p.low, p.high),
                };
                (p.name.clone(), value)
            })
            .collect()
    }

    /// The unit-cube point a suggestion stands for once integers are rounded, so that the
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
                if name.is_empty() || !names.insert(name.clone()) {
                    return Err(InvalidInput::new(
                        format!("arms[{i}].name"),
                        "must be non-empty and unique",
                    ));
                }
                Ok(Arm {
                    name,
                    params: arm.params,
                })
            })
            .collect()
    }
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
            },
            ParameterSpec {
                name: "workers".into(),
                kind: ParameterType::Int,
                low: 1.0,
                high: 16.0,
                scale: Scale::Linear,
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
    fn from_unit_stays_in_bounds() {
        let s = space();
        for u in [-1.0, 0.0, 0.3, 1.0, 2.0, f64::NAN] {
            let p = s.from_unit(&[u, u]);
            assert!(p["lr"] >= 1e-4 && p["lr"] <= 1.0);
            assert!(p["workers"] >= 1.0 && p["workers"] <= 16.0);
        }
    }
}
